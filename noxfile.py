"""Sessions for the Autograd lesson site. `nox -l` lists them."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nox

ROOT = Path(__file__).parent
PYTHON = False  # use the interpreter nox runs on (3.11+)
BUILD_REQS = ["-r", "requirements.txt"]
TEST_REQS = ["-r", "requirements-test.txt"]
ENV = {"NO_MKDOCS_2_WARNING": "1", "SOURCE_DATE_EPOCH": "1764460800", "PYTHONHASHSEED": "0"}

nox.options.sessions = ["build", "verify"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True


def _install(session: nox.Session, reqs: list[str]) -> None:
    session.install(*reqs)
    session.install("--no-deps", "-e", ".")


@nox.session(venv_backend="venv")
def build(session: nox.Session) -> None:
    """Build the site into site/ (mkdocs build --strict), running the experiments."""
    _install(session, BUILD_REQS)
    session.run("mkdocs", "build", "--strict", *session.posargs, env=ENV)


@nox.session(venv_backend="venv")
def verify(session: nox.Session) -> None:
    """Verify the pin, every excerpt and the excerpt map; `-- --update-map` rewrites the map."""
    _install(session, BUILD_REQS)
    session.run("python", "-m", "lessonkit", "verify", *session.posargs, env=ENV)


@nox.session(venv_backend="venv")
def tests(session: nox.Session) -> None:
    """Run the test suite (unit, build, Mini autograd and browser tests)."""
    _install(session, TEST_REQS)
    session.run("python", "-m", "pytest", *session.posargs, env=ENV)


@nox.session(venv_backend="venv", default=False)
def serve(session: nox.Session) -> None:
    """Live preview on http://127.0.0.1:8000 (re-renders edited pages)."""
    _install(session, BUILD_REQS)
    session.run("mkdocs", "serve", *session.posargs, env=ENV)
