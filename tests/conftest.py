"""Fixtures for every layer of tests/ (defined in support.py so that test modules can import helpers).

The layers (docs/dev/testing.md): ``engine/`` (lessonkit against a tiny pinned package, in
seconds), ``series/`` (this course: its pin, pages, experiments and built site) and ``e2e/``
(throwaway sites built whole, the browser, serve, faults, the jail, the examples). Each layer's
folder is on ``sys.path``, so that a test module may import a helper module of another layer.
"""

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
LAYERS = ("engine", "series", "e2e")
for _layer in LAYERS:
    if str(HERE / _layer) not in sys.path:
        sys.path.append(str(HERE / _layer))

from support import browser, built_site, pinned_root, real_project, server, site, warm_seed  # noqa: E402, F401


def pytest_sessionstart(session):
    """A test module directly in tests/ would not run (testpaths names the layers): say where it goes."""
    stray = sorted(p.name for p in HERE.glob("test_*.py"))
    if stray:
        raise pytest.UsageError(
            f"tests/{stray[0]}:1: a test module outside the layers ({len(stray)} in tests/) — move it to "
            "tests/engine, tests/series or tests/e2e (docs/dev/testing.md says which)"
        )
