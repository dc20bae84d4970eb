"""Make mini_autograd importable for the tests without installing it."""

import sys
from pathlib import Path

MINI_DIR = Path(__file__).resolve().parent.parent
if str(MINI_DIR) not in sys.path:
    sys.path.insert(0, str(MINI_DIR))
