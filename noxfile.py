"""Sessions for the Autograd lesson site. `nox -l` lists them.

The default sessions share one environment, `.nox/lessonkit`: the lock is installed into it
once (with uv when it is installed next to nox, as the README's command does, else with pip),
and `tests` adds only the test lock on top. A session with `venv_backend="none"` runs in it.
"""

from __future__ import annotations

import ast
import atexit
import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nox
from nox.virtualenv import PassthroughEnv

ROOT = Path(__file__).parent
PYTHON = False  # use the interpreter nox runs on (3.11+)
SHARED = ROOT / ".nox" / "lessonkit"  # the one environment of every venv_backend="none" session
# Bytecode of every module our sessions import (site-packages, the standard library, lessonkit) goes
# into this folder of the environment, never into the checkout or the pinned tree, even where the
# machine sets PYTHONDONTWRITEBYTECODE. Experiments read it (read-only, `-B`) in their boxes.
PYCACHE = SHARED / "pycache"
BUILD_REQS = ["-r", "requirements.txt"]
# jieba is published as an sdist only, so the installer builds its wheel: 38 MB, nearly all of it
# dictionaries, which setuptools would deflate only for the installer to inflate them again at once
# (about 1.2 s of CPU on the first command's busiest stretch). Stored, the installed files are the same.
UV_BUILD = ["--config-settings-package", "jieba:--build-option=--compression=stored"]
TEST_REQS = ["-r", "requirements-test.txt"]
ENV = {
    "NO_MKDOCS_2_WARNING": "1",
    "SOURCE_DATE_EPOCH": "1764460800",
    "PYTHONHASHSEED": "0",
    "PYTHONPYCACHEPREFIX": str(PYCACHE),
    "PYTHONDONTWRITEBYTECODE": "",  # empty is "not set": write bytecode (into PYCACHE)
}

nox.options.sessions = ["build", "verify"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True


def _uv() -> str | None:
    """The uv next to nox (`pip install uv==0.13.9`, as the README does) or on PATH; None: use pip."""
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        return shutil.which("uv")


def _lock_digest(reqs: list[str]) -> str:
    files = ["requirements.txt", "requirements-test.txt", "pyproject.toml"]
    return hashlib.sha256(b"".join((ROOT / f).read_bytes() for f in files) + repr(reqs).encode()).hexdigest()


def _shared_env(session: nox.Session) -> Path:
    """Create the shared environment once; put its bin first on PATH for this nox run."""
    bin_dir = SHARED / ("Scripts" if os.name == "nt" else "bin")
    if not (SHARED / "pyvenv.cfg").exists():
        uv = _uv()
        if uv:  # no pip in it; none is needed: the sdist's bytes are read from the index directly
            session.run(uv, "venv", "--quiet", "--python", sys.executable, str(SHARED), external=True)
        else:
            session.run(sys.executable, "-m", "venv", str(SHARED), external=True)
    if not os.environ.get("PATH", "").startswith(str(bin_dir) + os.pathsep):
        os.environ["PATH"] = str(bin_dir) + os.pathsep + os.environ.get("PATH", "")
        os.environ["VIRTUAL_ENV"] = str(SHARED)
    return bin_dir


# Runs lessonkit.cli.prefill from the checkout before the project is installed: the checkout is put
# last on sys.path, so that only `lessonkit` (nothing the environment has) is found there.
RUN_PREFILL = """import runpy, sys
sys.path.append(sys.argv.pop(1))
runpy.run_module("lessonkit.cli.prefill", run_name="__main__", alter_sys=True)
"""


def _prefill(python: str, imports: list[str]) -> subprocess.Popen:
    """Fill the build cache while the lock installs: the pinned tree (on a new machine, the sdist
    download) and the pages' check at once; then, once the noxfile writes a line on its stdin (the
    experiments' own dependencies are installed), the bytecode of what the experiments import and
    every experiment's result (`lessonkit/cli/prefill.py`, standard library only; its results are
    ordinary cache entries, which the build checks like any other). `-I`: only the environment's
    modules and lessonkit from the checkout; `-X pycache_prefix` because `-I` ignores PYTHON*
    variables.
    """
    return subprocess.Popen(
        [python, "-I", "-X", f"pycache_prefix={PYCACHE}", "-c", RUN_PREFILL, str(ROOT), "--wait", str(ROOT), *imports],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _tell(fill: subprocess.Popen, line: str, last: bool = False) -> None:
    """A line to the prefill (see lessonkit/cli/prefill.py; it may have ended meanwhile)."""
    if fill.stdin is None:
        return
    try:
        fill.stdin.write(line + "\n")
        fill.stdin.flush()
        if last:
            fill.stdin.close()
    except (BrokenPipeError, OSError):
        pass
    if last:
        fill.stdin = None  # communicate() later has nothing to write


def _first_requirements(imports: list[str]) -> list[str]:
    """The lines of requirements.txt that the experiments import (NumPy here): installed first, so
    that the prefill can run the experiments while the rest of the lock installs."""
    wanted = {re.sub(r"[-_.]+", "-", n).lower() for n in imports if n not in sys.stdlib_module_names}
    out = []
    for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        name = re.split(r"[=<>!~\[ ;]", line, maxsplit=1)[0]
        if name and re.sub(r"[-_.]+", "-", name).lower() in wanted:
            out.append(line)
    return out


def _experiment_imports() -> list[str]:
    """The top-level modules the experiment scripts import, without the scripts' own helpers."""
    scripts = sorted((ROOT / "experiments").glob("*.py"))
    local = {p.stem for p in scripts}
    names: set[str] = set()
    for script in scripts:
        try:
            tree = ast.parse(script.read_bytes())
        except (SyntaxError, ValueError, OSError):
            continue  # the build reports the script, located
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return sorted(n for n in names - local if n.isidentifier())


# Imports jieba (Material's Chinese search segmenter) once, quietly, so that its bytecode is in
# PYCACHE: its source has invalid escape sequences, whose DeprecationWarnings MkDocs would otherwise
# print on the first build of a new environment as INFO lines with file paths. Importing compiles
# exactly what the build imports (`jieba` and `jieba.finalseg`, about half a second); compiling the
# whole package would add `jieba.posseg` and `jieba.analyse`, which nothing here imports (3.5 s more).
QUIET_COMPILE = """import warnings
warnings.simplefilter("ignore")
try:
    import jieba
except ImportError:
    pass
"""

# Builds jieba's prefix dictionary into the build cache (lessonkit.integrations.mkdocs.jiebacache), in
# the background while the build starts: Material's search plugin would otherwise build it on the
# build's one busy core (about a second) before the first page.
JIEBA_DICTIONARY = """import warnings
warnings.simplefilter("ignore")
from pathlib import Path
from lessonkit.config.environment import cache_dir
from lessonkit.integrations.mkdocs import jiebacache
jiebacache.prepare(cache_dir(Path.cwd()))
"""

# Imports each module named on the command line; a module that is not installed is skipped.
WARM_IMPORTS = """import importlib, sys
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except Exception:
        pass
"""


# What `mkdocs build` imports first for this site (MkDocs, the extensions and plugins mkdocs.yml
# names, Pygments, Jinja2, lessonkit's build). On a new environment nothing is compiled yet: the
# build's first second or two on its one core is compiling them. Imported in the background while
# jieba is imported and the prefill ends, most of their bytecode is in PYCACHE when the build starts
# (what is not yet, the build compiles itself). Not Material's search plugin: it imports jieba,
# which QUIET_COMPILE imports (quietly).
BUILD_IMPORTS = [
    "mkdocs.__main__",
    "mkdocs.commands.build",
    "mkdocs_autorefs",
    "mkdocstrings",
    "mkdocstrings_handlers.python",
    "markdown.extensions.toc",
    "pymdownx.details",
    "pymdownx.highlight",
    "pymdownx.inlinehilite",
    "pymdownx.superfences",
    "pymdownx.snippets",
    "pygments.lexers.python",
    "pygments.formatters.html",
    "latex2mathml.converter",
    "lessonkit.integrations.mkdocs.hooks",
]


def _warm_imports(python: str, names: list[str]) -> None:
    """Import ``names`` in the background into PYCACHE (see BUILD_IMPORTS); nox waits for it before
    it exits. A module that is missing or fails is skipped: the build reports what matters."""
    _background(python, WARM_IMPORTS, *names)


def _background(python: str, code: str, *args: str) -> None:
    """Run ``code`` in the environment's Python beside what comes next; nox waits for it before it
    exits. Its failure is not reported: the build does the same work itself and says what matters."""
    proc = subprocess.Popen(
        [python, "-I", "-X", f"pycache_prefix={PYCACHE}", "-c", code, *args],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    atexit.register(proc.wait)


def _warm_stamp(names: list[str]) -> Path:
    """Marks that the bytecode of ``names`` (the experiments' imports) is in PYCACHE."""
    return SHARED / f".warm-{hashlib.sha256(repr(names).encode()).hexdigest()[:12]}"


def _warm_bytecode(python: str) -> None:
    """Write the bytecode of what the experiments import (NumPy and the standard library modules
    it needs) into PYCACHE once. Experiments run with `-B` in a read-only box and cannot write it
    themselves: without this, every one of them compiles NumPy from source again.

    It runs in the background (about a second on one core) while the build starts on the other;
    an experiment that starts before it is done compiles what it needs itself. `-I`: only the
    environment's own modules are importable (not the checkout), so nothing of the project runs
    here; `-X pycache_prefix` because `-I` ignores PYTHON* variables.
    """
    names = _experiment_imports()
    stamp = _warm_stamp(names)
    if not names or stamp.exists():
        return
    proc = subprocess.Popen(
        [python, "-I", "-X", f"pycache_prefix={PYCACHE}", "-c", WARM_IMPORTS, *names],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def done() -> None:
        if proc.wait() == 0:
            stamp.touch()

    atexit.register(done)  # nox waits for it before exiting; nothing is left running


def _install(session: nox.Session, reqs: list[str]) -> None:
    """Install pinned requirements once per environment; later runs skip the installer when nothing changed.

    Sessions with venv_backend="none" use the shared environment, others their own nox venv.
    """
    if isinstance(session.virtualenv, PassthroughEnv):
        bin_dir = _shared_env(session)
        location = SHARED
    else:
        location = Path(session.virtualenv.location)
    lock = _lock_digest(reqs)
    stamp = location / f".installed-{hashlib.sha256(repr(reqs).encode()).hexdigest()[:12]}"
    if stamp.exists() and stamp.read_text() == lock:
        if location == SHARED:
            _warm_bytecode(str(bin_dir / "python"))  # new imports in the experiments
        return
    if location != SHARED:
        session.install(*reqs)
        session.install("--no-deps", "-e", ".")
    else:
        python = str(bin_dir / "python")
        uv = _uv()

        def install(*args: str) -> None:
            if uv:
                session.run(uv, "pip", "install", "--quiet", "--python", python, *UV_BUILD, *args, external=True)
            else:
                session.run(python, "-m", "pip", "install", "--quiet", *args, external=True)

        imports = _experiment_imports()
        first = _first_requirements(imports)
        fill = _prefill(python, imports)  # the tree and the pages' check while the installs start
        try:
            if first:
                install(*first)
            _tell(fill, "installed")  # the experiments can run now
            # The lock, and the project itself editable in the same call (its dependencies are all
            # in the lock, so it adds none): its entry points (the `lessonkit` MkDocs plugin, the
            # `lessonkit` command) are registered, and lessonkit/ is imported from the checkout.
            install(*reqs, "-e", ".")
        except BaseException:  # the install failed or was interrupted: nothing may run on without us
            fill.terminate()  # SIGTERM: its runner ends its boxes (see lessonkit.run.box.sandbox)
            fill.wait()
            raise
        _warm_imports(python, BUILD_IMPORTS)  # on the other core, beside jieba's import
        session.run(python, "-I", "-X", f"pycache_prefix={PYCACHE}", "-c", QUIET_COMPILE, external=True, silent=True)
        _background(python, JIEBA_DICTIONARY)  # jieba's bytecode is written: its import says nothing now
        # The build starts next and runs, beside its pages, the experiments the prefill has not
        # started: it starts no more, and ends with the ones it is running.
        _tell(fill, "finish", last=True)
        _, err = fill.communicate()
        if fill.returncode:  # the build reports it again, located; say here that the prefill did not help
            session.log(f"prefill of the build cache failed (the build does the work): {err.strip()[-500:]}")
            _warm_bytecode(python)
        elif imports:  # the prefill imported them (what the lock has of them was installed first)
            _warm_stamp(imports).touch()
    stamp.write_text(lock)


# The site folders `build` wrote in this nox run: `verify` then checks what ships (`--site`), also
# one written elsewhere (`-d DIR`). Without it, `lessonkit verify` checks site/ itself when a build
# of this project by this lessonkit recorded it, and its summary line says when it did not.
BUILT: list[str] = []


def _site_dir(posargs: list[str]) -> str:
    """The folder `mkdocs build` writes: `-d DIR`/`--site-dir DIR` among the arguments, else site/."""
    for n, arg in enumerate(posargs):
        if arg in ("-d", "--site-dir") and n + 1 < len(posargs):
            return posargs[n + 1]
        if arg.startswith("--site-dir="):
            return arg.split("=", 1)[1]
    return "site"


@nox.session(venv_backend="none")
def build(session: nox.Session) -> None:
    """Build the site into site/ (mkdocs build --strict), running the experiments."""
    _install(session, BUILD_REQS)
    session.run("mkdocs", "build", "--strict", *session.posargs, env=ENV)
    BUILT.append(_site_dir(session.posargs))


@nox.session(venv_backend="none")
def verify(session: nox.Session) -> None:
    """Verify the pin, every excerpt and the excerpt map; `-- --update-map` rewrites the map. Also
    every file of the built site/ (`--site`) when a build of this checkout recorded it (the summary
    line says when not); after `build` in the same run, the folder that build wrote."""
    _install(session, BUILD_REQS)
    # The whole site: also prove that verify catches a one-character change (same process), and
    # that every experiment gives the same output and record when run again.
    extra = [] if session.posargs else ["--mutate", "--rerun"]
    if BUILT and not session.posargs and (ROOT / BUILT[-1]).is_dir():
        extra += ["--site", BUILT[-1]]
    session.run("python", "-m", "lessonkit", "verify", *extra, *session.posargs, env=ENV)


@nox.session(venv_backend="none", default=False)
def experiment(session: nox.Session) -> None:
    """Run one experiment as the build does: `nox -s experiment -- experiments/x.py`."""
    if not session.posargs:
        session.error("usage: nox -s experiment -- experiments/NAME.py | docs/PAGE.md[:LINE]")
    _install(session, BUILD_REQS)
    session.run("python", "-m", "lessonkit", "run", *session.posargs, env=ENV)


@nox.session(venv_backend="none")
def tests(session: nox.Session) -> None:
    """Run the test suite (unit, build, Mini autograd and browser tests)."""
    _install(session, TEST_REQS)
    session.run("python", "-m", "pytest", *session.posargs, env=ENV)


@nox.session(venv_backend="none", default=False)
def new(session: nox.Session) -> None:
    """Scaffold a lesson: `nox -s new -- NN "标题" [slug]`."""
    if not session.posargs:
        session.error('usage: nox -s new -- NN "标题" [slug]')
    _install(session, BUILD_REQS)
    session.run("python", "-m", "lessonkit", "new", *session.posargs, env=ENV)


@nox.session(venv_backend="none", default=False)
def serve(session: nox.Session) -> None:
    """Live preview on http://127.0.0.1:8000: rebuilds only what an edit affects (docs/dev/incremental.md)."""
    _install(session, BUILD_REQS)
    session.run("python", "-m", "lessonkit", "serve", *session.posargs, env=ENV)


@nox.session(venv_backend="none", default=False)
def repin(session: nox.Session) -> None:
    """What every excerpt and experiment becomes under another autograd: `nox -s repin -- 1.9.0 [--apply]`."""
    if not session.posargs:
        session.error(
            "usage: nox -s repin -- TARGET [--commit ID] [--html PATH] [--diffs] [--apply]  "
            "(TARGET: a released version, a full commit id with LESSONKIT_GIT_REMOTE, or a checkout path)"
        )
    _install(session, BUILD_REQS)
    session.run("python", "-m", "lessonkit", "repin", *session.posargs, env=ENV)


@nox.session(venv_backend="none", default=False)
def bench(session: nox.Session) -> None:
    """Build benchmark: lessonkit vs a plain site, cold cache, verify, serve, 10x lessons, markdown-exec."""
    # Playwright (the test lock's pins) drives Chromium for the home page's first-paint report.
    browser = ["playwright==1.65.2", "greenlet==3.5.6"]
    _install(session, [*BUILD_REQS, "markdown-exec==1.12.6", "pyinstrument==5.1.3", *browser])
    session.run("python", "tools/bench.py", *session.posargs, env=ENV)


@nox.session(venv_backend="none", default=False)
def pdf(session: nox.Session) -> None:
    """The whole course as one PDF: build the site with LESSONKIT_PDF=1, which prints its pages
    with Chromium into site/downloads/autograd-course.pdf (and links it from the home page)."""
    _install(session, [*BUILD_REQS, "playwright==1.65.2", "greenlet==3.5.6", "pypdf==7.1.0"])
    session.run("mkdocs", "build", "--strict", *session.posargs, env={**ENV, "LESSONKIT_PDF": "1"})


@nox.session(venv_backend="venv")
def lint(session: nox.Session) -> None:
    """Lint: ruff (rules and format, pyproject.toml), lessonkit's import layers (import-linter, and
    tools/layers.py: the doc's layer table, no cycle between folders), the size of its modules
    (tools/modsize.py: none over 500 lines) and its types (mypy)."""
    session.install("-r", "requirements-lint.txt")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    # lessonkit's layers (pyproject.toml [tool.importlinter]): no import points upwards, no cycle
    session.run("lint-imports", env={"PYTHONPATH": str(ROOT)})
    # architecture.md's layer table is the contract's, and no two folders import each other
    session.run("python", "tools/layers.py", "--check")
    session.run("python", "tools/modsize.py")  # no module of lessonkit/ over 500 lines
    session.run("mypy")  # files and strictness: pyproject.toml [tool.mypy]


@nox.session(venv_backend="none", default=False)
def canary(session: nox.Session) -> None:
    """Build the lessons with Zensical (`lessonkit build --engine zensical`, pinned in the test lock)
    in a copy of the project, then `lessonkit verify --site` on what it wrote; see tools/canary.py."""
    _install(session, TEST_REQS)
    session.run("python", "tools/canary.py", *session.posargs, env=ENV)
