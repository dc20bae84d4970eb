"""Report which micrograd an experiment imported (the build sets MICROGRAD_PINNED_ROOT)."""

import os
import sys
from pathlib import Path

import micrograd


def announce():
    here = Path(micrograd.__file__).resolve()
    root = os.environ.get("MICROGRAD_PINNED_ROOT")
    if root:
        if Path(root).resolve() not in here.parents:
            sys.exit(f"micrograd was imported from {here}, not from the pinned tree {root}")
        print(f"[micrograd {os.environ.get('MICROGRAD_PINNED_VERSION', '?')} · pinned tree]")
    else:
        print("[micrograd · installed copy]")
