"""Sessions for the Autograd lesson site. `nox -l` lists them."""

from __future__ import annotations

import hashlib
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
    """Install the pinned requirements once per venv; later runs skip pip when nothing changed."""
    lock = hashlib.sha256(b"".join((ROOT / f).read_bytes() for f in
                                   ("requirements.txt", "requirements-test.txt", "pyproject.toml"))).hexdigest()
    stamp = Path(session.virtualenv.location) / f".installed-{reqs[-1]}"
    if stamp.exists() and stamp.read_text() == lock:
        return
    session.install(*reqs)
    session.install("--no-deps", "-e", ".")
    stamp.write_text(lock)


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
    if not session.posargs:  # the whole site: also prove that verify catches a one-character change
        session.run("python", "-m", "lessonkit", "mutate", env=ENV)


@nox.session(venv_backend="venv", default=False)
def experiment(session: nox.Session) -> None:
    """Run one experiment as the build does: `nox -s experiment -- experiments/x.py`."""
    if not session.posargs:
        session.error("usage: nox -s experiment -- experiments/NAME.py | docs/PAGE.md[:LINE]")
    _install(session, BUILD_REQS)
    session.run("python", "-m", "lessonkit", "run", *session.posargs, env=ENV)


@nox.session(venv_backend="venv")
def tests(session: nox.Session) -> None:
    """Run the test suite (unit, build, Mini autograd and browser tests)."""
    _install(session, TEST_REQS)
    session.run("python", "-m", "pytest", *session.posargs, env=ENV)


@nox.session(venv_backend="venv", default=False)
def new(session: nox.Session) -> None:
    """Scaffold a lesson: `nox -s new -- NN "标题" [slug]`."""
    if not session.posargs:
        session.error('usage: nox -s new -- NN "标题" [slug]')
    _install(session, BUILD_REQS)
    session.run("python", "-m", "lessonkit", "new", *session.posargs, env=ENV)


@nox.session(venv_backend="venv", default=False)
def serve(session: nox.Session) -> None:
    """Live preview on http://127.0.0.1:8000 (re-renders edited pages)."""
    _install(session, BUILD_REQS)
    session.run("mkdocs", "serve", *session.posargs, env=ENV)


@nox.session(venv_backend="venv", default=False)
def repin(session: nox.Session) -> None:
    """What every excerpt and experiment becomes under another autograd: `nox -s repin -- 1.9.0 [--apply]`."""
    if not session.posargs:
        session.error("usage: nox -s repin -- TARGET [--commit ID] [--html PATH] [--diffs] [--apply]  "
                      "(TARGET: a released version, a full commit id with LESSONKIT_GIT_REMOTE, or a checkout path)")
    _install(session, BUILD_REQS)
    session.run("python", "-m", "lessonkit", "repin", *session.posargs, env=ENV)


@nox.session(venv_backend="venv", default=False)
def bench(session: nox.Session) -> None:
    """Build benchmark: lessonkit vs a plain site, cold cache, verify, serve, 10x lessons, markdown-exec."""
    _install(session, [*BUILD_REQS, "markdown-exec==1.12.6", "pyinstrument==5.1.3"])
    session.run("python", "tools/bench.py", *session.posargs, env=ENV)


@nox.session(venv_backend="venv")
def lint(session: nox.Session) -> None:
    """Lint and format check with ruff (rules and the not-yet-formatted files: pyproject.toml)."""
    session.install("-r", "requirements-lint.txt")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


ZENSICAL = "zensical==0.0.73"  # later versions need zensical-ui, which the package index here does not serve


@nox.session(venv_backend="venv", default=False)
def canary(session: nox.Session) -> None:
    """Build the lessons with Zensical (pinned) and report what renders there; see README."""
    _install(session, BUILD_REQS)
    session.install(ZENSICAL)
    session.run("python", "tools/canary.py", *session.posargs, env=ENV)
