"""The engine layer's guard (tests/engine/conftest.py) fails a test that imports NumPy or autograd,
and a collection of the layer that did: run on a copy of the guard in a pytest of its own."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _layer(tmp_path: Path, test: str) -> subprocess.CompletedProcess:
    layer = tmp_path / "tests" / "engine"  # the guard recognises its layer by this path
    layer.mkdir(parents=True)
    for name in ("conftest.py", "tinypin.py"):
        shutil.copy(HERE / name, layer / name)
    (layer / "test_one.py").write_text(test, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path), str(layer)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_test_that_imports_numpy_fails_with_one_line_saying_where_it_belongs(tmp_path):
    r = _layer(tmp_path, "import json\n\n\ndef test_plain():\n    json.dumps(1)\n\n\ndef test_x():\n    import numpy\n")
    assert r.returncode == 1, r.stdout
    assert (
        "tests/engine/test_one.py::test_x imported numpy — the engine layer runs without autograd and NumPy: "
        "use the tiny pin (tinypin.py), or move the test to tests/series or tests/e2e"
    ) in r.stdout
    assert r.stdout.splitlines()[-1].startswith("2 passed, 1 error")  # test_x passes, then fails at teardown


def test_a_module_that_imports_numpy_stops_the_layers_collection(tmp_path):
    r = _layer(tmp_path, "import numpy\n\n\ndef test_x():\n    pass\n")
    assert r.returncode == 4, r.stdout + r.stderr  # a usage error: nothing ran
    assert (
        "ERROR: the engine layer imported numpy while its tests were collected — tests/engine runs without "
        "autograd and NumPy: move the test to tests/series or tests/e2e"
    ) in r.stderr
