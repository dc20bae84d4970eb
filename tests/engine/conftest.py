"""The engine layer: lessonkit stage by stage against a tiny pinned package (tinypin.py), with
no autograd, no NumPy, no browser and no jail. The guard below fails a test that imports autograd
or NumPy into the test process, and a collection of this layer alone that did."""

from __future__ import annotations

import sys

import pytest
from tinypin import TinyProject, pack

FORBIDDEN = ("autograd", "numpy")


def _loaded() -> set[str]:
    return {name for name in FORBIDDEN if name in sys.modules}


def pytest_collection_finish(session):
    """Run alone (``pytest tests/engine``), collecting the layer imported neither package."""
    engine = [item for item in session.items if "/tests/engine/" in item.path.as_posix()]
    if engine and len(engine) == len(session.items) and _loaded():
        raise pytest.UsageError(
            f"the engine layer imported {', '.join(sorted(_loaded()))} while its tests were collected — "
            "tests/engine runs without autograd and NumPy: move the test to tests/series or tests/e2e"
        )


@pytest.fixture(autouse=True)
def no_autograd_or_numpy(request):
    before = _loaded()
    yield
    new = _loaded() - before
    if new:
        pytest.fail(
            f"{request.node.nodeid} imported {', '.join(sorted(new))} — the engine layer runs without "
            "autograd and NumPy: use the tiny pin (tinypin.py), or move the test to tests/series or tests/e2e",
            pytrace=False,
        )


@pytest.fixture(scope="session")
def tiny_sdist(tmp_path_factory):
    """The tiny package's release archive and its sha256, packed once per session."""
    return pack(tmp_path_factory.mktemp("tiny-sdist"))


@pytest.fixture
def tiny(tmp_path, tiny_sdist, monkeypatch) -> TinyProject:
    """A throwaway series pinned to the tiny archive, its environment applied to this process."""
    archive, sha256 = tiny_sdist
    t = TinyProject(tmp_path / "proj", archive, sha256)
    t.apply_env(monkeypatch)
    return t
