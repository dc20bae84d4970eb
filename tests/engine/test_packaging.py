"""What pyproject.toml declares against the locks the project builds and tests with."""

from __future__ import annotations

import re
import tomllib

from support import ROOT


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", re.split(r"[=<>!~\[ ;]", requirement.strip(), maxsplit=1)[0]).lower()


def _pins(lock: str) -> dict[str, str]:
    out = {}
    for line in (ROOT / lock).read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            name, _, version = line.partition("==")
            assert version, f"{lock}: {line!r} is not pinned with =="
            out[_name(name)] = version
    return out


def test_every_runtime_dependency_and_extra_is_pinned_in_the_build_lock():
    """`nox -s build` installs requirements.txt and then the project with --no-deps: a
    dependency that pyproject.toml declares but the lock lacks would be missing there."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = project["dependencies"] + [r for extra in project["optional-dependencies"].values() for r in extra]
    pins = _pins("requirements.txt")
    assert sorted(_name(r) for r in declared if _name(r) not in pins) == []
    assert {_name(r) for r in declared} >= {"mkdocs", "mkdocs-material", "pymdown-extensions", "jieba"}


def test_the_test_lock_is_the_build_lock_and_more():
    """`nox -s tests` installs requirements-test.txt into the build's environment: it takes the
    build lock whole (`-r requirements.txt`) and pins none of its packages again."""
    lines = [l.strip() for l in (ROOT / "requirements-test.txt").read_text(encoding="utf-8").splitlines()]
    assert "-r requirements.txt" in lines
    assert sorted(set(_pins("requirements-test.txt")) & set(_pins("requirements.txt"))) == []
