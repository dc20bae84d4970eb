"""Fixtures for every layer of tests/ (defined in support.py so that test modules can import helpers).

The layers (docs/dev/testing.md): ``engine/`` (lessonkit against a tiny pinned package, in
seconds), ``series/`` (this course: its pin, pages, experiments and built site) and ``e2e/``
(throwaway sites built whole, the browser, serve, faults, the jail, the examples). Each layer's
folder is on ``sys.path``, so that a test module may import a helper module of another layer.
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for _layer in ("engine", "series", "e2e"):
    if str(HERE / _layer) not in sys.path:
        sys.path.append(str(HERE / _layer))

from support import browser, built_site, pinned_root, real_project, server, site, warm_seed  # noqa: E402, F401
