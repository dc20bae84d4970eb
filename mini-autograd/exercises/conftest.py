"""pytest setup of the Mini exercises: which engine the checks of a stage import.

`test_stage_N.py` checks one stage. Its fixture `mini` is the engine under test:

* by default the reader's `stage_N.py` in this folder;
* `MINI_EXERCISE_TARGET=reference`: Mini itself (`mini-autograd/mini_autograd.py`), the
  reference solution that every check must accept;
* `MINI_EXERCISE_TARGET=/some/folder`: `stage_N.py` in that folder (your own copies).

The checks run only when asked for: `python -m pytest mini-autograd/exercises/test_stage_1.py`
(or this folder, or with MINI_EXERCISE_TARGET set). A plain `python -m pytest mini-autograd`
skips them, because the files as shipped are unfinished on purpose.
"""

import importlib
import importlib.util
import os
import re
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
MINI_DIR = HERE.parent
for folder in (HERE, MINI_DIR):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

TARGET = os.environ.get("MINI_EXERCISE_TARGET", "").strip()
_loaded = {}


def _asked_for(config) -> bool:
    """True when the command line names this folder or a file in it, or a target is set."""
    if TARGET:
        return True
    for arg in config.args:
        path = Path(arg.split("::")[0]).resolve()
        if path == HERE or HERE in path.parents:
            return True
    return False


def pytest_ignore_collect(collection_path, config):
    if re.fullmatch(r"test_stage_\d+\.py", collection_path.name) and not _asked_for(config):
        return True
    return None


def engine_path(stage: int) -> Path:
    """The file the checks of `stage` import."""
    if TARGET == "reference":
        return MINI_DIR / "mini_autograd.py"
    folder = Path(TARGET) if TARGET else HERE
    return folder / f"stage_{stage}.py"


def load(stage: int):
    """The engine under test for `stage` (imported once per run)."""
    if stage not in _loaded:
        if TARGET == "reference":
            _loaded[stage] = importlib.import_module("mini_autograd")
        else:
            path = engine_path(stage)
            if not path.is_file():
                raise FileNotFoundError(f"no {path} (MINI_EXERCISE_TARGET={TARGET!r})")
            spec = importlib.util.spec_from_file_location(f"stage_{stage}", path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
            _loaded[stage] = module
    return _loaded[stage]


@pytest.fixture
def mini(request):
    """The engine under test: the stage number comes from the test file's name."""
    stage = int(re.fullmatch(r"test_stage_(\d+)", request.module.__name__.rpartition(".")[2]).group(1))
    return load(stage)


def pytest_report_header(config):
    where = "Mini itself (mini_autograd.py)" if TARGET == "reference" else f"stage_N.py in {Path(TARGET or HERE)}"
    return f"Mini exercises: checking {where}"
