"""Catalogue of bad inputs: each gives one located line, exit status and an untouched project.

Every case builds a throwaway project (``TmpSite``), feeds it one kind of bad input
and asserts the same contract:

* the command exits non-zero;
* there is exactly one message line per problem, ``path:line: what is wrong — hint``,
  at the ``path:line`` the problem concerns (no line where none exists, e.g. an archive);
* no traceback;
* the exact exit status (1 for problems, 2 for a bad command line);
* nothing in the project changed (every file but ``.cache`` and ``site``: docs/,
  experiments/, sourcemap/, a file at the root — so a hostile path-forming value such
  as ``commit = "../.."`` in pin.toml that removed anything fails the case);
* no partial entry in the cache: no ``.tmp-*`` file, an empty staging folder, and
  no cache entry for an experiment that failed.

Configuration cases cover every field of pin.toml, the manifest's lines, the
excerpt map's shape, roles.toml, the environment variables and verify's own arguments.
Annotation, path, pin and configuration cases run ``python -m lessonkit verify`` in-process (the
same ``main()`` as the command line; a few also as a real subprocess); experiment
cases run ``mkdocs build``, because they are about the build. Inputs that must not
fail the build (megabytes of output, HTML in the output, stdin, files written, a
child process) share one build. Recovery cases (corrupted caches) and two
concurrent builds come last.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest
from support import COMMIT, ROOT, TmpSite, block

from lessonkit.cli.main import main as lessonkit_main
from lessonkit.errors import LessonError
from lessonkit.run.runner import Job, Runner
from lessonkit.source.fetch import safe_extract
from lessonkit.source.pin import check_tree, load_pin, manifest_lines, write_manifest
from lessonkit.source.providers import provide

# path[:line]: message — hint   (the path never contains ": ")
LINE = re.compile(r"^(?P<path>[^\s:][^:]*?)(?::(?P<line>\d+))?: (?P<msg>.+?) — (?P<hint>\S.*)$")
SDIST_ROOT = "autograd-1.9.1"
MANIFEST = "sourcemap/manifest.sha256"
PIN_TOML = "sourcemap/pin.toml"


# ---------------------------------------------------------------- the contract


@dataclass(frozen=True)
class Expect:
    """One problem line: at ``path:line`` (``line=None``: no line), message containing ``text``."""

    path: str
    line: int | None
    text: str
    hint: str = ""  # a part of the hint, when the hint is the point of the case


@dataclass
class Ctx:
    site: TmpSite
    tmp: Path  # scratch space outside the project
    env: dict[str, str | None] = field(default_factory=dict)  # overrides; None removes
    mode: str = "cli"  # cli (in-process main), subprocess (python -m lessonkit), build, shared-build (mkdocs)
    page_name: str = "p.md"  # the case's page (cases that share one build each have their own)
    failed_pages: list[str] = field(default_factory=list)  # pages whose experiments must not be cached
    after: Callable[[], None] = lambda: None  # extra checks once the command has run
    args: list[str] = field(default_factory=lambda: ["verify", "--no-map"])  # the cli/subprocess command
    code: int = 1  # the exact exit status expected

    @property
    def path(self) -> str:
        return f"docs/{self.page_name}"

    def page(self, text: str) -> Path:
        return self.site.page(self.page_name, text)

    def raw_page(self, data: bytes) -> Path:
        p = self.site.root / "docs" / self.page_name
        p.write_bytes(data)
        return p


@dataclass
class Outcome:
    code: int
    output: str  # everything printed
    problems: list[str]  # the lines that report problems


SNAPSHOT_SKIP = {".cache", "site"}  # what a build may write: the default cache and the site


def snapshot(root: Path) -> dict[str, str]:
    """Every file, link and folder of the project (docs/, experiments/, sourcemap/, …) but
    the build's own output, as (sha256 | link target | "dir")."""
    out = {}
    for top in sorted(root.iterdir()):
        if top.name in SNAPSHOT_SKIP and not top.is_symlink():
            continue
        for p in [top, *sorted(top.rglob("*"))] if top.is_dir() and not top.is_symlink() else [top]:
            key = p.relative_to(root).as_posix()
            if p.is_symlink():
                out[key] = "link:" + os.readlink(p)
            elif p.is_file():
                out[key] = hashlib.sha256(p.read_bytes()).hexdigest()
            else:
                out[key] = "dir"
    return out


def env_for(ctx: Ctx) -> dict[str, str]:
    env = dict(ctx.site.env)
    for k, v in ctx.env.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def cache_dir(ctx: Ctx) -> Path:
    """The cache the case's command uses (the default when LESSONKIT_CACHE is one it must refuse)."""
    value = env_for(ctx).get("LESSONKIT_CACHE")
    root = ctx.site.root.resolve()
    if not value or not os.path.isabs(value) or Path(value).resolve() in (root, *root.parents):
        return ctx.site.root / ".cache"
    return Path(value)


def use_env(wanted: dict[str, str], monkeypatch) -> None:
    """Make os.environ exactly ``wanted`` for this test (the in-process twin of env=)."""
    for k in set(os.environ) - set(wanted):
        monkeypatch.delenv(k)
    for k, v in wanted.items():
        if os.environ.get(k) != v:
            monkeypatch.setenv(k, v)


def run_cli_inprocess(ctx: Ctx, monkeypatch) -> Outcome:
    use_env(env_for(ctx), monkeypatch)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = lessonkit_main(["--root", str(ctx.site.root), *ctx.args])
        except SystemExit as exc:  # argparse
            code = exc.code if isinstance(exc.code, int) else 2
        except BaseException:  # what the command line would show as a traceback
            traceback.print_exc()
            code = 99
    stderr = err.getvalue()
    lines = [l for l in stderr.splitlines() if l.strip() and not l.startswith("verify: ")]
    return Outcome(code, out.getvalue() + stderr, lines)


def run_cli_subprocess(ctx: Ctx) -> Outcome:
    r = subprocess.run(
        [sys.executable, "-m", "lessonkit", *ctx.args],
        cwd=ctx.site.root,
        env=env_for(ctx),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    lines = [l for l in r.stderr.splitlines() if l.strip() and not l.startswith("verify: ")]
    return Outcome(r.returncode, r.stdout + r.stderr, lines)


ERROR = re.compile(r"^(?:ERROR|CRITICAL)\s+-\s+(?P<text>.*)$")


def run_build(ctx: Ctx, *args: str) -> Outcome:
    r = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", *args],
        cwd=ctx.site.root,
        env=env_for(ctx),
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    problems = [m["text"] for l in r.stderr.splitlines() if (m := ERROR.match(l))]
    return Outcome(r.returncode, r.stdout + r.stderr, problems)


def assert_clean_cache(cache: Path) -> None:
    """No partial entries: no .tmp-* file, nothing left in staging, every entry a valid success."""
    if not cache.exists():
        return
    leftovers = [p for p in cache.rglob(".tmp-*")]
    assert not leftovers, f"partial cache entries left: {leftovers}"
    staging = cache / "pin" / ".staging"
    assert (cache / "pin").is_symlink() or not staging.exists() or not any(staging.iterdir()), (
        f"staging not empty: {list(staging.iterdir())}"
    )
    for entry in (cache / "experiments").glob("*.json") if (cache / "experiments").exists() else []:
        data = json.loads(entry.read_text(encoding="utf-8"))  # valid JSON
        assert data["exit_code"] == 0 and not data["timed_out"], f"cache entry for a failed experiment: {entry}"
        assert data["key"] == entry.stem


def experiment_keys(ctx: Ctx, page: Path) -> list[str]:
    """The cache keys of a page's experiments, computed in-process like the build does."""
    project = ctx.site.project()
    keys = []
    for b in project.parse(page).blocks:
        if b.kind == "experiment":
            keys.append(project.runner.key(project.resolve(b).job))
    return keys


def assert_contract(
    outcome: Outcome, expected: list[Expect], before: dict, ctx: Ctx, n_problems: int | None = None
) -> None:
    """``n_problems``: all problems of the run, when several cases share it (default: ours)."""
    shown = "\n".join(outcome.problems) + "\n---\n" + outcome.output[-3000:]
    n_problems = len(expected) if n_problems is None else n_problems
    assert outcome.code == ctx.code, f"exit code {outcome.code}, expected {ctx.code}\n{shown}"
    assert "Traceback" not in outcome.output, shown
    parsed = []
    for line in outcome.problems:
        m = LINE.match(line)
        assert m, f"not a `path:line: what — hint` line: {line!r}\n{shown}"
        parsed.append(m)
    assert len(parsed) == n_problems, f"expected {n_problems} problem line(s), got {len(parsed)}\n{shown}"
    for e in expected:
        hits = [
            m
            for m in parsed
            if m["path"] == e.path
            and m["line"] == (str(e.line) if e.line else None)
            and e.text in m["msg"]
            and e.hint in m["hint"]
        ]
        assert len(hits) == 1, f"no single line for {e}\n{shown}"
    assert snapshot(ctx.site.root) == before, "the project changed"
    assert_clean_cache(cache_dir(ctx))


# ---------------------------------------------------------------- helpers to make inputs


def fence(kind: str, *header: str, body: str | None = None) -> str:
    return "# t\n\n" + block(kind, *header, body=body)


def rs(*header: str, body: str | None = None) -> str:
    return fence("real-source", *header, body=body)


def copy_pinned(ctx: Ctx) -> Path:
    copy = ctx.tmp / "tree"
    shutil.copytree(ctx.site.pinned_root, copy, symlinks=True)
    ctx.env["AUTOGRAD_SOURCE"] = str(copy)
    return copy


def local_tree(ctx: Ctx, files: dict[str, bytes]) -> Path:
    """A small pinned tree of our own, with a manifest for it in the project."""
    root = ctx.tmp / "local"
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    write_manifest(root, ctx.site.root / MANIFEST)
    ctx.env["AUTOGRAD_SOURCE"] = str(root)
    site_toml = ctx.site.root / SITE  # the real series' [experiments] names autograd/: not in this tree
    site_toml.write_text(re.sub(r"^pinned = .*\n", "", site_toml.read_text(encoding="utf-8"), flags=re.M))
    return root


def manifest_line(ctx: Ctx, rel: str) -> int:
    return manifest_lines(ctx.site.root / MANIFEST)[rel]


def pin_line(ctx: Ctx, key: str) -> int:
    toml = (ctx.site.root / PIN_TOML).read_text().splitlines()
    return next(n for n, line in enumerate(toml, 1) if line.startswith(key + " ="))


def make_tar(path: Path, members: list[tuple]) -> Path:
    """A .tar.gz of members (name, kind, payload), kind file|dir|sym|lnk|fifo|chr."""
    with tarfile.open(path, "w:gz", compresslevel=1) as tf:
        for name, kind, payload in members:
            info = tarfile.TarInfo(name)
            info.mtime = 1700000000
            if kind == "file":
                data = payload if isinstance(payload, bytes) else payload.encode()
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
                continue
            info.type = {
                "dir": tarfile.DIRTYPE,
                "sym": tarfile.SYMTYPE,
                "lnk": tarfile.LNKTYPE,
                "fifo": tarfile.FIFOTYPE,
                "chr": tarfile.CHRTYPE,
            }[kind]
            if kind in ("sym", "lnk"):
                info.linkname = payload
            tf.addfile(info)
    return path


def use_sdist(ctx: Ctx, archive: Path, match_pin: bool = True) -> None:
    """Provide the pin from ``archive`` only: no checkout, an empty cache, no network."""
    ctx.env.update(
        {"AUTOGRAD_SOURCE": None, "LESSONKIT_SDIST": str(archive), "LESSONKIT_CACHE": str(ctx.tmp / "cache")}
    )
    if match_pin:
        digest = hashlib.sha256(archive.read_bytes()).hexdigest()
        toml = ctx.site.root / PIN_TOML
        toml.write_text(re.sub(r'(?m)^sha256 = ".*"$', f'sha256 = "{digest}"', toml.read_text()))


def hostile(ctx: Ctx, *members: tuple) -> Path:
    archive = make_tar(
        ctx.tmp / "hostile.tar.gz", [(SDIST_ROOT, "dir", None), (f"{SDIST_ROOT}/setup.py", "file", "x = 1\n"), *members]
    )
    use_sdist(ctx, archive)
    return archive


@pytest.fixture(scope="session")
def pinned_sdist(tmp_path_factory, pinned_root) -> Path:
    """An sdist-shaped archive of the pinned tree (its sha256 differs from the real one)."""
    out = tmp_path_factory.mktemp("sdist") / "autograd-1.9.1.tar.gz"
    with tarfile.open(out, "w:gz", compresslevel=1) as tf:
        tf.add(pinned_root, arcname=SDIST_ROOT)
    return out


# ---------------------------------------------------------------- the cases

Case = Callable[[Ctx], list[Expect]]
CASES: dict[str, tuple[str, Case]] = {}


def case(name: str, mode: str = "cli"):
    def deco(fn: Case) -> Case:
        assert name not in CASES
        CASES[name] = (mode, fn)
        return fn

    return deco


P = "docs/p.md"  # every page below: line 1 "# t", line 3 the fence, headers from line 4

# -- annotations


@case("unknown-key")
def _(ctx):
    ctx.page(rs("Fiel: autograd/core.py", "Symbol: backward_pass", "Commit: f53a217"))
    return [Expect(P, 4, "unknown key `Fiel` in a real-source block", "did you mean `File`?")]


@case("duplicate-key")
def _(ctx):
    ctx.page(rs("File: autograd/core.py", "Symbol: backward_pass", "Symbol: grad", "Commit: f53a217"))
    return [Expect(P, 6, "duplicate key `Symbol` (first given on line 5)", "keep only one")]


@case("missing-required-key", mode="subprocess")
def _(ctx):
    ctx.page(rs("Symbol: backward_pass", "Commit: f53a217"))
    return [Expect(P, 3, "real-source block without `File`", "add a `File: …` header line")]


@case("empty-value")
def _(ctx):
    ctx.page(rs("File: autograd/core.py", "Symbol:", "Commit: f53a217"))
    return [Expect(P, 5, "empty value for `Symbol`")]


@case("header-not-key-value")
def _(ctx):
    ctx.page(rs("File autograd/core.py", "Commit: f53a217"))
    return [Expect(P, 4, "expected a `Key: value` header line, got 'File autograd/core.py'")]


@case("control-character-in-value")
def _(ctx):
    ctx.page(rs("File: autograd/core.py", "Symbol: backward\x0b_pass", "Commit: f53a217"))
    return [Expect(P, 5, "control or line-separator character U+000B in the value of `Symbol`")]


@case("misspelt-symbol")
def _(ctx):
    ctx.page(rs("File: autograd/core.py", "Symbol: backwards_pass", "Commit: f53a217"))
    return [Expect(P, 5, "no symbol `backwards_pass` in autograd/core.py", "did you mean `backward_pass` (L25)")]


@case("look-alike-letter-in-a-file-name")
def _(ctx):
    ctx.page(rs("File: autograd/differential_\u043eperators.py", "Symbol: grad", "Commit: f53a217"))
    return [
        Expect(
            P,
            4,
            "no file `autograd/differential_\\u043eperators.py` in the pinned autograd 1.9.1 tree",
            "autograd/differential_operators.py",
        )
    ]


def test_a_problem_line_marks_letters_that_look_like_ascii_ones():
    from lessonkit.errors import Problem

    line = str(
        Problem(
            "no symbol `gr\u0430d` in x.py (\uff47rad, \U0001d420rad, \u03bfk)", "docs/p.md", 3, "did you mean `grad`?"
        )
    )
    assert line == (
        "docs/p.md:3: no symbol `gr\\u0430d` in x.py (\\uff47rad, \\U0001d420rad, \\u03bfk) — did you mean `grad`?"
    )
    kept = "docs/p.md:3: 第一版（草稿）的 `f(x)` — 改为 café ∂f/∂x"
    assert str(Problem("第一版（草稿）的 `f(x)`", "docs/p.md", 3, "改为 café ∂f/∂x")) == kept


@case("misspelt-member")
def _(ctx):
    ctx.page(rs("File: autograd/core.py", "Symbol: VJPNode.__int__", "Commit: f53a217"))
    return [Expect(P, 5, "no symbol `VJPNode.__int__`", "`VJPNode.__init__` (L38)")]


@case("misspelt-call-selector")
def _(ctx):
    ctx.page(rs("File: autograd/numpy/numpy_vjps.py", "Symbol: defvjp(anp.multiplyy)", "Commit: f53a217"))
    return [Expect(P, 5, "no top-level call `defvjp(anp.multiplyy)`", "defvjp(anp.multiply) (L79)")]


@case("ambiguous-call-selector")
def _(ctx):
    local_tree(ctx, {"pkg/m.py": b"defvjp(f, a)\nx = 1\ndefvjp(f, b)\ndefvjp(g, c)\n"})
    ctx.page(rs("File: pkg/m.py", "Symbol: defvjp(f)", f"Commit: {COMMIT[:7]}"))
    return [Expect(P, 5, "call selector `defvjp(f)` is ambiguous: 2 calls in pkg/m.py", "L1, L3")]


@case("symbol-defined-twice")
def _(ctx):
    local_tree(ctx, {"pkg/m.py": b"def f():\n    pass\n\n\ndef f():\n    return 1\n"})
    ctx.page(rs("File: pkg/m.py", "Symbol: f", f"Commit: {COMMIT[:7]}"))
    return [
        Expect(P, 5, "symbol `f` is defined 2 times in pkg/m.py", "candidates: 1. L1-2, 2. L5-6; pick one with `Which")
    ]


@case("symbol-in-file-with-nul-byte")
def _(ctx):
    local_tree(ctx, {"pkg/m.py": b"x = 1\n\x00\n"})
    ctx.page(rs("File: pkg/m.py", "Symbol: x", f"Commit: {COMMIT[:7]}"))
    return [Expect(P, 5, "pkg/m.py is not parseable Python", "Symbol works only in Python files")]


@case("symbol-in-non-python-file")
def _(ctx):
    ctx.page(rs("File: README.md", "Symbol: grad", "Commit: f53a217"))
    return [Expect(P, 5, "README.md is not parseable Python")]


@case("excerpt-of-binary-file")
def _(ctx):
    ctx.page(rs("File: examples/gmm.png", "Commit: f53a217", body="PNG"))
    return [Expect(P, 4, "examples/gmm.png is not valid UTF-8", "only text files can be excerpted")]


@case("excerpt-of-empty-file")
def _(ctx):
    ctx.page(rs("File: examples/__init__.py", "Symbol: x", "Commit: f53a217"))
    return [Expect(P, 4, "`examples/__init__.py` is empty: there is nothing to excerpt")]


@case("commit-not-the-pin")
def _(ctx):
    ctx.page(rs("File: autograd/core.py", "Symbol: backward_pass", "Commit: 1234567"))
    return [Expect(P, 6, "`Commit: 1234567` is not the pinned commit", f"pinned to f53a217 ({COMMIT})")]


@case("commit-not-an-id")
def _(ctx):
    ctx.page(rs("File: autograd/core.py", "Symbol: backward_pass", "Commit: master"))
    return [Expect(P, 6, "`Commit: master` is not a commit id")]


@case("wrong-lines")
def _(ctx):
    ctx.page(rs("File: autograd/core.py", "Symbol: backward_pass", "Commit: f53a217", "Lines: 24-32"))
    return [
        Expect(
            P,
            7,
            "`Lines: 24-32`: line 24 is outside `backward_pass` in autograd/core.py",
            "`backward_pass` in autograd/core.py is L25-32; `Symbol-lines` counts from the symbol's first line",
        )
    ]


# -- real-source selectors: every new field's bad values, located at the field (or the run)

BP = ("File: autograd/core.py", "Symbol: backward_pass")  # L25-32; line 4 and 5 of the page


@case("lines-alone-past-the-end")
def _(ctx):
    ctx.page(rs("File: autograd/core.py", "Lines: 410-420"))
    return [Expect(P, 5, "`Lines: 410-420` runs past the end of autograd/core.py (416 lines)")]


@case("lines-alone-selecting-only-blank-lines")
def _(ctx):
    ctx.page(rs("File: autograd/core.py", "Lines: 3-3"))
    return [Expect(P, 5, "`Lines: 3-3`: L3 has only blank lines", "select lines with code")]


@case("patterns-select-only-blank-lines")
def _(ctx):
    ctx.page(
        rs(
            "File: autograd/core.py",
            "Start-after: from .util import",
            "End-before: # -------------------- reverse mode",
        )
    )
    return [Expect(P, 3, "the excerpt has only blank lines", "select lines with code")]


@case("pattern-matches-no-line")
def _(ctx):
    ctx.page(rs(*BP, "Start-after: no such text"))
    return [
        Expect(
            P,
            6,
            "`Start-after: no such text` matches no line of autograd/core.py (backward_pass, L25-32)",
            "the closest line is L",
        )
    ]


@case("pattern-matches-several-lines")
def _(ctx):
    ctx.page(rs(*BP, "End-at: outgrads"))
    return [
        Expect(
            P,
            6,
            "`End-at: outgrads` matches 3 lines of autograd/core.py (backward_pass, L25-32) (L26, L28, L31)",
            "make the pattern longer",
        )
    ]


@case("pattern-in-the-file-matches-several-lines")
def _(ctx):
    ctx.page(rs("File: autograd/core.py", "Start-at: def backward_pass", "End-before: return"))
    return [Expect(P, 6, "`End-before: return` matches", "make the pattern longer")]


@case("patterns-leave-no-lines")
def _(ctx):
    ctx.page(rs(*BP, "Start-at: return outgrad[0]", "End-before: for node in"))
    return [
        Expect(
            P,
            7,
            "no lines are left between `Start-at` (L32) and `End-before` (L27)",
            "the start pattern must come before",
        )
    ]


@case("start-after-and-start-at")
def _(ctx):
    ctx.page(rs(*BP, "Start-after: for node", "Start-at: outgrad ="))
    return [Expect(P, 7, "both `Start-after` and `Start-at`", "give one of them")]


@case("end-before-and-end-at")
def _(ctx):
    ctx.page(rs(*BP, "End-at: ingrads =", "End-before: return"))
    return [Expect(P, 7, "both `End-before` and `End-at`", "give one of them")]


@case("patterns-and-a-body")
def _(ctx):
    ctx.page(rs(*BP, "Start-at: for node", body="outgrad = outgrads.pop(node)"))
    return [Expect(P, 6, "`Start-at` and a body both select the lines", "use the body, or the patterns")]


@case("emphasize-not-a-list")
def _(ctx):
    ctx.page(rs(*BP, "Emphasize: 27, 30-a"))
    return [Expect(P, 6, "`Emphasize: 27, 30-a` is not a list of lines such as `3, 5-7`", "file line numbers")]


@case("emphasize-backwards-range")
def _(ctx):
    ctx.page(rs(*BP, "Emphasize: 31-27"))
    return [Expect(P, 6, "`Emphasize: 31-27` is not a list of lines")]


@case("emphasize-outside-the-excerpt")
def _(ctx):
    ctx.page(rs(*BP, "Emphasize: 9"))
    return [Expect(P, 6, "`Emphasize: 9`: line 9 is not shown (the excerpt shows L25-32)")]


@case("emphasize-outside-lines")
def _(ctx):
    ctx.page(rs(*BP, "Lines: 25-32", "Emphasize: 28, 40"))
    return [Expect(P, 7, "`Emphasize: 28, 40`: line 40 is outside `Lines: 25-32`")]


@case("emphasize-an-elided-line")
def _(ctx):
    body = "def backward_pass(g, end_node):\n...\n    return outgrad[0]"
    ctx.page(rs(*BP, "Emphasize: 25, 28", body=body))
    return [Expect(P, 6, "line 28 is not shown (the excerpt shows L25, L32)")]


@case("docstring-bad-value")
def _(ctx):
    ctx.page(rs(*BP, "Docstring: drop"))
    return [Expect(P, 6, "`Docstring: drop` is not `hide` or `show`")]


@case("docstring-hide-with-a-body")
def _(ctx):
    ctx.page(rs(*BP, "Docstring: hide", body="outgrad = outgrads.pop(node)"))
    return [Expect(P, 6, "`Docstring: hide` needs a whole symbol", "quote the lines without the docstring")]


@case("docstring-hide-without-a-docstring")
def _(ctx):
    ctx.page(rs(*BP, "Docstring: hide"))
    return [Expect(P, 6, "`backward_pass` has no docstring to hide", "remove `Docstring: hide`")]


@case("docstring-hide-of-an-assignment")
def _(ctx):
    ctx.page(rs("File: autograd/core.py", "Symbol: primitive_vjps", "Docstring: hide"))
    return [Expect(P, 6, "`Docstring: hide` works on a def or class; `primitive_vjps` is neither")]


@case("docstring-sharing-a-line")
def _(ctx):
    local_tree(ctx, {"pkg/m.py": b'def f():\n    "doc"; x = 1\n    return x\n'})
    ctx.page(rs("File: pkg/m.py", "Symbol: f", "Docstring: hide"))
    return [Expect(P, 6, "the docstring of `f` shares a line with other code")]


@case("dedent-bad-value")
def _(ctx):
    ctx.page(rs(*BP, "Dedent: lots"))
    return [Expect(P, 6, "`Dedent: lots` is not `auto`, `none` or a number of spaces from 0 to 40")]


@case("dedent-more-than-the-indentation")
def _(ctx):
    ctx.page(rs("File: autograd/core.py", "Symbol: VJPNode.__init__", "Dedent: 8"))
    return [Expect(P, 6, "`Dedent: 8` but L38 is indented by only 4 space(s)", "at most `Dedent: 4`")]


@case("elision-leaves-out-nothing")
def _(ctx):
    body = "for node in toposort(end_node):\n...\n    outgrad = outgrads.pop(node)"
    ctx.page(rs(*BP, body=body))
    return [Expect(P, 8, "the elision line leaves out no lines: L27 and L28 are adjacent", "remove the `...` line")]


@case("elision-at-the-end-of-the-symbol")
def _(ctx):
    body = "    for parent, ingrad in zip(node.parents, ingrads):\n        outgrads[parent] = add_outgrads("
    body += "outgrads.get(parent), ingrad)\nreturn outgrad[0]\n…"
    ctx.page(rs(*BP, body=body))
    return [Expect(P, 10, "the elision line leaves out no lines: the last run is where `backward_pass` ends")]


@case("elision-runs-out-of-order")
def _(ctx):
    body = "outgrad = outgrads.pop(node)\n...\noutgrads = {end_node: (g, False)}"
    ctx.page(rs(*BP, body=body))
    return [Expect(P, 9, "this run of the body does not follow the previous one in the source", "it is at L26")]


@case("elision-run-not-verbatim")
def _(ctx):
    body = "def backward_pass(g, end_node):\n...\n    return outgrads[0]"
    ctx.page(rs(*BP, body=body))
    return [Expect(P, 9, "body is not verbatim: 'return outgrads[0]' does not match the source", "line 32 reads")]


@case("elision-run-occurs-twice")
def _(ctx):
    local_tree(ctx, {"pkg/m.py": b"def f():\n    x = 1\n    y = 2\n    x = 1\n    return x\n"})
    ctx.page(rs("File: pkg/m.py", "Symbol: f", body="def f():\n...\n    x = 1"))
    return [
        Expect(P, 9, "this run of the body occurs 2 times in pkg/m.py (f, L1-5) after the previous run", "at L2, L4")
    ]


@case("elision-only")
def _(ctx):
    ctx.page(rs(*BP, body="..."))
    return [Expect(P, 7, "the body has nothing but elision lines", "quote the lines to show")]


@case("elision-twice-in-a-row")
def _(ctx):
    ctx.page(rs(*BP, body="def backward_pass(g, end_node):\n...\n…\n    return outgrad[0]"))
    return [Expect(P, 9, "two elision lines in a row")]


@case("elision-at-the-start-without-a-symbol")
def _(ctx):
    ctx.page(rs("File: autograd/core.py", body="...\nreturn outgrad[0]"))
    return [Expect(P, 6, "an elision line at the start or end of the body needs a `Symbol`")]


@case("member-suggested-for-its-own-name")
def _(ctx):
    local_tree(ctx, {"pkg/m.py": b"class peekable:\n    def peek(self):\n        return 1\n"})
    ctx.page(rs("File: pkg/m.py", "Symbol: peek"))
    return [Expect(P, 5, "no symbol `peek` in pkg/m.py", "`peekable.peek` (L2)?")]


@case("session-on-a-script-experiment")
def _(ctx):
    ctx.site.script("x.py", "print(1)\n")
    ctx.page(fence("experiment", "File: experiments/x.py", "Purpose: p", "Session: s"))
    return [Expect(P, 6, "`Session` is for inline experiments")]


@case("session-bad-name")
def _(ctx):
    ctx.page(fence("experiment", "Purpose: p", "Session: two words", body="print(1)"))
    return [Expect(P, 5, "`Session: two words` is not a session name", "e.g. `Session: tape`")]


@case("session-limit-on-a-later-block")
def _(ctx):
    one = block("experiment", "Purpose: a", "Session: s", body="x = 1")
    two = block("experiment", "Purpose: b", "Session: s", "Timeout: 5", "Memory: 1 GiB", body="print(x)")
    ctx.page("# t\n\n" + one + "\n" + two)
    return [
        Expect(P, 13, "`Timeout` on a later block of session `s`", "give it on the session's first block (line 3)"),
        Expect(P, 14, "`Memory` on a later block of session `s`", "it limits the whole session"),
    ]


@case("session-block-fails", mode="build")
def _(ctx):
    ctx.failed_pages.append(ctx.page_name)
    one = block("experiment", "Purpose: a", "Session: s", body="x = 1\nprint(x)\nraise ValueError('nope')")
    two = block("experiment", "Purpose: b", "Session: s", body="print(x)")
    ctx.page("# t\n\n" + one + "\n" + two)
    return [
        Expect(P, 3, "experiment docs/p.md:3 failed with exit code 1 at docs/p.md:9: ", "lessonkit run docs/p.md:3"),
        Expect(P, 12, "experiment docs/p.md:12 did not run: its session stopped at the block at docs/p.md:3"),
    ]


@case("lines-not-a-range")
def _(ctx):
    ctx.page(rs("File: autograd/core.py", "Symbol: backward_pass", "Commit: f53a217", "Lines: 32-25"))
    return [Expect(P, 7, "`Lines: 32-25` is not a range `a-b` with 1 ≤ a ≤ b")]


@case("body-not-verbatim")
def _(ctx):
    ctx.page(
        rs(
            "File: autograd/core.py",
            "Symbol: backward_pass",
            "Commit: f53a217",
            body="""
        for node in toposort(end_node):
            outgrad = outgrads.pop(nodes)
    """,
        )
    )
    return [
        Expect(
            P,
            9,
            "body is not verbatim: 'outgrad = outgrads.pop(nodes)'",
            "autograd/core.py (backward_pass, L25-32) line 28 reads 'outgrad = outgrads.pop(node)'",
        )
    ]


@case("body-occurs-twice")
def _(ctx):
    ctx.page(rs("File: autograd/core.py", "Commit: f53a217", body='argnums = kwargs.get("argnums", count())'))
    return [Expect(P, 7, "body occurs 2 times in autograd/core.py", "quote more lines or name a Symbol")]


@case("body-spans-outside-symbol")
def _(ctx):
    ctx.page(
        rs(
            "File: autograd/core.py",
            "Symbol: backward_pass",
            "Commit: f53a217",
            body="    return outgrad[0]\n\n\nclass VJPNode(Node):",
        )
    )
    return [Expect(P, 8, "body is not inside `backward_pass`", "it is at autograd/core.py L32-35")]


@case("tab-in-body")
def _(ctx):
    ctx.page(
        rs(
            "File: autograd/core.py",
            "Symbol: backward_pass",
            "Commit: f53a217",
            body="for node in toposort(end_node):\n\toutgrad = outgrads.pop(node)",
        )
    )
    return [Expect(P, 9, "tab character in an annotation block", "indent with spaces")]


@case("empty-teaching-body")
def _(ctx):
    ctx.page(fence("teaching-simplification", "Title: 简化版"))
    return [Expect(P, 3, "empty teaching-simplification block", "write the teaching code as the body")]


@case("teaching-symbol-without-file")
def _(ctx):
    ctx.page(fence("teaching-simplification", "Symbol: Value", body="x = 1"))
    return [Expect(P, 4, "`Symbol` needs `File` in a teaching-simplification block")]


@case("unresolvable-based-on")
def _(ctx):
    ctx.page(fence("teaching-simplification", "Based-on: autograd/core.py::backwards_pass", body="x = 1"))
    return [Expect(P, 4, "no symbol `backwards_pass` in autograd/core.py", "`backward_pass` (L25)")]


@case("based-on-not-file-symbol")
def _(ctx):
    ctx.page(fence("teaching-simplification", "Based-on: autograd/core.py", body="x = 1"))
    return [Expect(P, 4, "`Based-on: autograd/core.py` is not `FILE::SYMBOL`")]


@case("unknown-block-kind-near-known")
def _(ctx):
    ctx.page(fence("real_source", "File: autograd/core.py", "Symbol: backward_pass", "Commit: f53a217"))
    return [Expect(P, 3, "unknown block kind `real_source`", "did you mean `real-source`?")]


@case("unclosed-fence")
def _(ctx):
    ctx.page("# t\n\n```real-source\nFile: autograd/core.py\nSymbol: backward_pass\nCommit: f53a217\n\ntext\n")
    return [Expect(P, 3, "unclosed real-source block: no closing ```", "add a line ``` after the block")]


@case("crlf-file")
def _(ctx):
    ctx.raw_page(
        rs("File: autograd/core.py", "Symbol: backward_pass", "Commit: f53a217")
        .replace("# t\n\n", "# t\n\n")
        .replace("```real-source\n", "```real-source\r\n")
        .encode()
    )
    return [Expect(P, 3, "file has CR (Windows) line endings", "save it with LF line endings")]


@case("bom-file")
def _(ctx):
    ctx.raw_page(b"\xef\xbb\xbf" + rs("File: autograd/core.py", "Symbol: backward_pass", "Commit: f53a217").encode())
    return [Expect(P, 1, "file starts with a UTF-8 byte-order mark", "save it as UTF-8 without BOM")]


@case("non-utf8-file")
def _(ctx):
    ctx.raw_page("# t\n\n正文\n".encode() + b"caf\xe9\n")
    return [Expect(P, 4, "file is not valid UTF-8 (byte 0xe9)", "save it as UTF-8")]


# -- experiments, statically (no build needed)


@case("experiment-timeout-not-a-number")
def _(ctx):
    ctx.page(fence("experiment", "Purpose: p", "Timeout: ²", body="print(1)"))
    return [Expect(P, 5, "`Timeout: \\xb2` is not a whole number of seconds from 1 to 600")]


@case("experiment-file-and-body")
def _(ctx):
    ctx.page(fence("experiment", "File: experiments/_provenance.py", "Purpose: p", body="print(1)"))
    return [Expect(P, 3, "experiment block with both `File` and a body")]


@case("experiment-script-missing")
def _(ctx):
    ctx.site.script("simple_grad.py", "print(1)\n")
    ctx.page(fence("experiment", "File: experiments/simple_grd.py", "Purpose: p"))
    return [
        Expect(
            P,
            4,
            "no file `experiments/simple_grd.py` in this repository's experiments",
            "did you mean `experiments/simple_grad.py`",
        )
    ]


@case("experiment-not-python")
def _(ctx):
    ctx.page(fence("experiment", "File: experiments/notes.txt", "Purpose: p"))
    return [Expect(P, 4, "`experiments/notes.txt` is not a Python script")]


# -- paths


@case("path-dotdot")
def _(ctx):
    ctx.page(rs("File: ../autograd/core.py", "Symbol: grad", "Commit: f53a217"))
    return [Expect(P, 4, "`../autograd/core.py` has a `..` segment", "paths may not leave the tree")]


@case("path-dotdot-inside")
def _(ctx):
    ctx.page(rs("File: autograd/../autograd/core.py", "Symbol: grad", "Commit: f53a217"))
    return [Expect(P, 4, "has a `..` segment")]


@case("path-absolute")
def _(ctx):
    ctx.page(rs("File: /etc/passwd", "Symbol: root", "Commit: f53a217"))
    return [Expect(P, 4, "`/etc/passwd` is an absolute path")]


@case("path-drive-letter")
def _(ctx):
    ctx.page(rs("File: C:/autograd/core.py", "Symbol: grad", "Commit: f53a217"))
    return [Expect(P, 4, "`C:/autograd/core.py` is an absolute path")]


@case("path-backslashes")
def _(ctx):
    ctx.page(rs("File: autograd\\core.py", "Symbol: grad", "Commit: f53a217"))
    return [Expect(P, 4, "`autograd\\core.py` contains a backslash", "use forward slashes")]


@case("path-url")
def _(ctx):
    ctx.page(
        rs("File: https://github.com/HIPS/autograd/blob/master/autograd/core.py", "Symbol: grad", "Commit: f53a217")
    )
    return [Expect(P, 4, "is a URL, not a path in the tree")]


@case("path-empty-segment")
def _(ctx):
    ctx.page(rs("File: autograd//core.py", "Symbol: grad", "Commit: f53a217"))
    return [Expect(P, 4, "`autograd//core.py` has an empty or `.` segment")]


@case("path-to-directory")
def _(ctx):
    ctx.page(rs("File: autograd/numpy", "Symbol: grad", "Commit: f53a217"))
    return [Expect(P, 4, "`autograd/numpy` is a directory in the pinned autograd 1.9.1 tree", "name a file inside it")]


@case("path-too-long")
def _(ctx):
    ctx.page(rs("File: autograd/" + "x" * 300 + ".py", "Symbol: grad", "Commit: f53a217"))
    return [Expect(P, 4, "cannot read `autograd/xxx", "check the path")]


@case("path-link-in-pinned-tree")
def _(ctx):
    tree = copy_pinned(ctx)
    outside = ctx.tmp / "outside.py"
    shutil.copy(tree / "autograd/util.py", outside)  # same bytes: only the link gives it away
    (tree / "autograd/util.py").unlink()
    (tree / "autograd/util.py").symlink_to(outside)
    ctx.page(rs("File: autograd/util.py", "Symbol: subvals", "Commit: f53a217"))
    return [
        Expect(
            MANIFEST,
            manifest_line(ctx, "autograd/util.py"),
            "not a regular file inside the tree (link): autograd/util.py (AUTOGRAD_SOURCE=",
        )
    ]


@case("path-link-in-repository")
def _(ctx):
    outside = ctx.tmp / "secret.py"
    outside.write_text("class Value:\n    pass\n")
    (ctx.site.root / "mini-autograd").mkdir()
    (ctx.site.root / "mini-autograd" / "engine.py").symlink_to(outside)
    ctx.page(fence("teaching-simplification", "File: mini-autograd/engine.py", "Symbol: Value"))
    return [  # refused before any page is read, at the link itself (the boxes and the bundle copy the folder)
        Expect(
            "mini-autograd/engine.py",
            None,
            "is a link that leads outside the project",
            "replace the link with the file itself",
        )
    ]


@case("path-link-as-experiment")
def _(ctx):
    outside = ctx.tmp / "evil.py"
    outside.write_text("print('outside')\n")
    (ctx.site.root / "experiments" / "evil.py").symlink_to(outside)
    ctx.page(fence("experiment", "File: experiments/evil.py", "Purpose: p"))
    return [Expect("experiments/evil.py", None, "is a link that leads outside the project", "replace the link")]


# -- the pin


@case("pin-tree-file-differs")
def _(ctx):
    tree = copy_pinned(ctx)
    core = tree / "autograd/core.py"
    core.write_text(core.read_text().replace("outgrads.pop(node)", "outgrads.pop(node) "))
    ctx.page(rs("File: autograd/core.py", "Symbol: backward_pass", "Commit: f53a217"))
    return [
        Expect(
            MANIFEST,
            manifest_line(ctx, "autograd/core.py"),
            "content differs from the manifest: autograd/core.py",
            "the excerpts would not be verbatim",
        )
    ]


@case("pin-tree-file-missing")
def _(ctx):
    tree = copy_pinned(ctx)
    (tree / "autograd/util.py").unlink()
    ctx.page("# t\n")
    return [Expect(MANIFEST, manifest_line(ctx, "autograd/util.py"), "missing: autograd/util.py")]


@case("pin-tree-extra-file")
def _(ctx):
    tree = copy_pinned(ctx)
    (tree / "autograd/evil.py").write_text("x = 1\n")
    ctx.page("# t\n")
    return [Expect(MANIFEST, None, "not in the manifest: autograd/evil.py")]


@case("pin-source-not-a-directory")
def _(ctx):
    ctx.env["AUTOGRAD_SOURCE"] = str(ctx.tmp / "nowhere")
    ctx.page("# t\n")
    return [Expect("AUTOGRAD_SOURCE", None, f"{ctx.tmp / 'nowhere'} is not a folder", "point it at a checkout")]


@case("pin-archive-wrong-sha256")
def _(ctx):
    archive = make_tar(ctx.tmp / "autograd-1.9.1.tar.gz", [(SDIST_ROOT, "dir", None)])
    use_sdist(ctx, archive, match_pin=False)
    ctx.page("# t\n")
    return [Expect(PIN_TOML, pin_line(ctx, "sha256"), "has sha256", "this is not the pinned release archive")]


@case("pin-archive-missing")
def _(ctx):
    use_sdist(ctx, ctx.tmp / "nope.tar.gz", match_pin=False)
    ctx.page("# t\n")
    return [Expect("LESSONKIT_SDIST", None, f"{ctx.tmp / 'nope.tar.gz'} does not exist", "name the release archive")]


@case("pin-archive-truncated")
def _(ctx):
    full = make_tar(
        ctx.tmp / "full.tar.gz",
        [(SDIST_ROOT, "dir", None)] + [(f"{SDIST_ROOT}/f{i}.py", "file", os.urandom(3000).hex()) for i in range(20)],
    )
    archive = ctx.tmp / "autograd-1.9.1.tar.gz"
    archive.write_bytes(full.read_bytes()[: full.stat().st_size // 2])
    use_sdist(ctx, archive)
    ctx.page("# t\n")
    return [Expect(str(archive), None, "is truncated or corrupt", "delete it and fetch it again")]


@case("pin-archive-not-an-archive")
def _(ctx):
    archive = ctx.tmp / "autograd-1.9.1.tar.gz"
    archive.write_bytes(b"<html>rate limited</html>\n")
    use_sdist(ctx, archive)
    ctx.page("# t\n")
    return [Expect(str(archive), None, "cannot open archive autograd-1.9.1.tar.gz: not a tar archive")]


@case("pin-archive-entry-dotdot")
def _(ctx):
    archive = hostile(ctx, (f"{SDIST_ROOT}/../evil.py", "file", "x = 1\n"))
    ctx.page("# t\n")
    return [
        Expect(str(archive), None, f"archive entry escapes the tree: {SDIST_ROOT}/../evil.py", "refusing to extract")
    ]


@case("pin-archive-entry-absolute")
def _(ctx):
    archive = hostile(ctx, ("/tmp/evil.py", "file", "x = 1\n"))
    ctx.page("# t\n")
    return [Expect(str(archive), None, "archive entry has an absolute path: /tmp/evil.py")]


@case("pin-archive-entry-symlink")
def _(ctx):
    archive = hostile(ctx, (f"{SDIST_ROOT}/autograd", "sym", "/etc"))
    ctx.page("# t\n")
    return [Expect(str(archive), None, f"archive entry is a link: {SDIST_ROOT}/autograd -> /etc")]


@case("pin-archive-entry-hardlink")
def _(ctx):
    archive = hostile(ctx, (f"{SDIST_ROOT}/passwd", "lnk", "/etc/passwd"))
    ctx.page("# t\n")
    return [Expect(str(archive), None, f"archive entry is a link: {SDIST_ROOT}/passwd -> /etc/passwd")]


@case("pin-archive-entry-device")
def _(ctx):
    archive = hostile(ctx, (f"{SDIST_ROOT}/fifo", "fifo", None))
    ctx.page("# t\n")
    return [Expect(str(archive), None, f"archive entry is not a file or directory: {SDIST_ROOT}/fifo")]


@case("pin-archive-entry-outside-root")
def _(ctx):
    archive = hostile(ctx, ("other/x.py", "file", "x = 1\n"))
    ctx.page("# t\n")
    return [Expect(str(archive), None, f"archive entry outside {SDIST_ROOT}/: other/x.py")]


@case("pin-archive-without-root")
def _(ctx):
    archive = make_tar(ctx.tmp / "autograd-1.9.1.tar.gz", [])
    use_sdist(ctx, archive)
    ctx.page("# t\n")
    return [Expect(str(archive), None, f"has no {SDIST_ROOT}/ directory")]


@case("pin-archive-content-differs")
def _(ctx):
    tree = ctx.tmp / SDIST_ROOT
    shutil.copytree(ctx.site.pinned_root, tree)
    (tree / "autograd/core.py").write_text("# not the pinned file\n")
    archive = ctx.tmp / "autograd-1.9.1.tar.gz"
    with tarfile.open(archive, "w:gz", compresslevel=1) as tf:
        tf.add(tree, arcname=SDIST_ROOT)
    use_sdist(ctx, archive)
    ctx.page("# t\n")
    return [
        Expect(
            MANIFEST,
            manifest_line(ctx, "autograd/core.py"),
            "content differs from the manifest: autograd/core.py (tree from local archive LESSONKIT_SDIST",
        )
    ]


@case("pin-offline-without-archive", mode="subprocess")
def _(ctx):
    # no checkout, no cached archive, a package index that does not answer
    ctx.env.update(
        {
            "AUTOGRAD_SOURCE": None,
            "LESSONKIT_SDIST": None,
            "LESSONKIT_CACHE": str(ctx.tmp / "cache"),
            "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
            "PIP_EXTRA_INDEX_URL": None,
            "PIP_FIND_LINKS": None,
            "PIP_RETRIES": "0",
            "PIP_TIMEOUT": "2",
            "PIP_CONFIG_FILE": os.devnull,
            "PIP_NO_CACHE_DIR": "1",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        }
    )
    ctx.page("# t\n")
    return [
        Expect(
            PIN_TOML,
            pin_line(ctx, "requirement"),
            "cannot download autograd-1.9.1.tar.gz from the package index",
            "offline? set LESSONKIT_SDIST=/path/to/autograd-1.9.1.tar.gz or AUTOGRAD_SOURCE=/path/to/checkout",
        )
    ]


@case("pin-toml-invalid")
def _(ctx):
    toml = ctx.site.root / PIN_TOML
    toml.write_text(toml.read_text().replace('requirement = "autograd==1.9.1"', "requirement = autograd==1.9.1"))
    ctx.page("# t\n")
    return [Expect(PIN_TOML, pin_line(ctx, "requirement"), "not valid TOML")]


@case("pin-manifest-malformed")
def _(ctx):
    manifest = ctx.site.root / MANIFEST
    lines = manifest.read_text().splitlines()
    lines[4] = "not-a-digest autograd/x.py"
    manifest.write_text("\n".join(lines) + "\n")
    ctx.page("# t\n")
    return [Expect(MANIFEST, 5, "malformed manifest line: 'not-a-digest autograd/x.py'")]


# -- experiments in the build


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie waiting for a reaper is not alive
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _cmd_alive(needle: str) -> bool:
    """A live process whose command line holds ``needle`` (an experiment's child runs in the
    box's PID namespace, so the pid it reports is not a pid of this namespace)."""
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and d.name != str(os.getpid()):
            try:
                if needle.encode() in (d / "cmdline").read_bytes() and _pid_alive(int(d.name)):
                    return True
            except OSError:
                pass
    return False


# These share one `mkdocs build` (one page each): all their problems are reported in
# the same run, which must print exactly one line per problem of every page.


@case("experiment-raises", mode="shared-build")
def _(ctx):
    ctx.page(fence("experiment", "Purpose: 失败", body="print('before')\nraise ValueError('the claim is wrong')"))
    ctx.failed_pages.append(ctx.page_name)
    # the page line that raised (an inline script compiles under the page's name at its lines)
    return [Expect(ctx.path, 3, f"experiment {ctx.path}:3 failed with exit code 1 at {ctx.path}:7: ", "run it by hand")]


@case("experiment-exit-code", mode="shared-build")
def _(ctx):
    ctx.page(fence("experiment", "Purpose: 退出码", body="import sys\nprint('partial output')\nsys.exit(3)"))
    ctx.failed_pages.append(ctx.page_name)
    return [Expect(ctx.path, 3, f"experiment {ctx.path}:3 failed with exit code 3: no stderr")]


@case("experiment-killed-by-signal", mode="shared-build")
def _(ctx):
    ctx.page(fence("experiment", "Purpose: 信号", body="import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"))
    ctx.failed_pages.append(ctx.page_name)
    return [Expect(ctx.path, 3, "failed with exit code -9")]


@case("experiment-hangs-with-a-child", mode="shared-build")
def _(ctx):
    # The box sees nothing of the host (its jail): the child leaves its pid in the box's own folder,
    # and its command line carries a marker that the host looks for afterwards. The script waits for
    # the child's file before it hangs, so only a started child ends in the timeout expected here
    # (a child that fails to start ends the script with an error instead).
    marker = f"lessonkit-hung-child-{ctx.tmp.name}"
    ctx.page(
        fence(
            "experiment",
            "Purpose: 超时",
            "Timeout: 2",
            body=f"""
        import os, subprocess, sys, time
        child = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(300)"
        proc = subprocess.Popen([sys.executable, "-c", child, {marker!r}])
        while not os.path.exists({marker!r}):
            if proc.poll() is not None:
                sys.exit("the child did not start")
            time.sleep(0.05)
        while True:
            time.sleep(0.1)
    """,
        )
    )
    ctx.failed_pages.append(ctx.page_name)

    def after():
        assert not _cmd_alive(marker), "the child outlived the timeout"

    ctx.after = after
    return [
        Expect(
            ctx.path,
            3,
            f"experiment {ctx.path}:3 did not finish within 2 s and was stopped",
            "raise `Timeout:` for this block",
        )
    ]


@case("build-misspelt-symbol", mode="shared-build")
def _(ctx):
    ctx.page(rs("File: autograd/core.py", "Symbol: backwards_pass", "Commit: f53a217"))
    return [Expect(ctx.path, 5, "no symbol `backwards_pass` in autograd/core.py", "did you mean `backward_pass` (L25)")]


@case("build-body-not-verbatim", mode="shared-build")
def _(ctx):
    ctx.page(rs("File: autograd/core.py", "Symbol: backward_pass", "Commit: f53a217", body="return outgrads[0]"))
    return [Expect(ctx.path, 8, "body is not verbatim: 'return outgrads[0]'", "line 32 reads 'return outgrad[0]'")]


# These need a build of their own.


@case("experiment-script-fails", mode="build")
def _(ctx):
    ctx.site.script("three.py", "import sys\nprint('partial output')\nsys.exit(3)\n")
    ctx.page(fence("experiment", "File: experiments/three.py", "Purpose: 退出码"))
    ctx.failed_pages.append(ctx.page_name)
    return [Expect(P, 3, "experiment experiments/three.py failed with exit code 3")]


@case("build-non-utf8-file", mode="build")
def _(ctx):
    ctx.raw_page("# t\n\n正文\n".encode() + b"caf\xe9\n")
    return [Expect(P, 4, "file is not valid UTF-8 (byte 0xe9)", "save it as UTF-8")]


@case("build-pin-tree-differs", mode="build")
def _(ctx):
    tree = copy_pinned(ctx)
    (tree / "autograd/core.py").write_text("# tampered\n")
    ctx.page("# t\n")
    return [
        Expect(MANIFEST, manifest_line(ctx, "autograd/core.py"), "content differs from the manifest: autograd/core.py")
    ]


# ---------------------------------------------------------------- configuration
# Every value of pin.toml, the manifest, the excerpt map and the environment is checked
# before anything acts on it. The project snapshot covers every file of the project, so
# a hostile path-forming value that deleted or overwrote anything would fail the case.

ROOT_SENTINEL = "keep-me.txt"  # a file at the project root that no hostile value may touch


def set_pin(ctx: Ctx, key: str, literal: str) -> int:
    """Replace the value of ``key`` in the project's pin.toml by a TOML literal; its line."""
    toml = ctx.site.root / PIN_TOML
    text, n = re.subn(rf"(?m)^{re.escape(key)} = .*$", lambda m: f"{key} = {literal}", toml.read_text())
    assert n == 1, key
    toml.write_text(text)
    (ctx.site.root / ROOT_SENTINEL).write_text("the project root\n")
    return pin_line(ctx, key)


PIN_VALUES = {  # name: (key, TOML literal, text of the message)
    "commit-dotdot-dotdot": ("commit", '"../.."', "`commit = '../..'` is not the full commit id"),
    "commit-dotdot": ("commit", '".."', "`commit = '..'` is not the full commit id"),
    "commit-abbreviated": ("commit", '"f53a217"', "`commit = 'f53a217'` is not the full commit id"),
    "commit-uppercase": ("commit", '"F53A21734FDFAE636F448744D9097D8D35A643A0"', "is not the full commit id"),
    "commit-with-suffix": ("commit", '"f53a21734fdfae636f448744d9097d8d35a643a0/.."', "is not the full commit id"),
    "commit-absolute": ("commit", '"/etc"', "`commit = '/etc'` is not the full commit id"),
    "commit-empty": ("commit", '""', "`commit = ''` is not the full commit id"),
    "commit-newline": ("commit", '"f53a21734fdfae636f448744d9097d8d35a643a0\\n"', "is not the full commit id"),
    "commit-integer": ("commit", "42", "`commit` must be a string, got an integer"),
    "commit-array": ("commit", '["f53a217"]', "`commit` must be a string, got an array"),
    "commit-huge": ("commit", '"' + "a" * 100_000 + '"', "`commit = 'aaaaaaaa"),
    "version-path": ("version", '"../1.9.1"', "`version = '../1.9.1'` is not a release version"),
    "version-shell": ("version", '"1.9.1; rm -rf /"', "is not a release version"),
    "version-float": ("version", "1.9", "`version` must be a string, got a number"),
    "version-empty": ("version", '""', "is not a release version"),
    "filename-dotdot": ("filename", '"../../etc/passwd"', "is not a plain archive file name"),
    "filename-absolute": ("filename", '"/tmp/autograd-1.9.1.tar.gz"', "is not a plain archive file name"),
    "filename-subfolder": ("filename", '"sub/autograd-1.9.1.tar.gz"', "is not a plain archive file name"),
    "filename-not-an-archive": ("filename", '"autograd-1.9.1-py3-none-any.whl"', "is not a plain archive file name"),
    "filename-dots": ("filename", '".."', "is not a plain archive file name"),
    "sha256-short": ("sha256", '"abc"', "`sha256 = 'abc'` is not 64 lowercase hex digits"),
    "sha256-uppercase": ("sha256", '"' + "A" * 64 + '"', "is not 64 lowercase hex digits"),
    "sha256-boolean": ("sha256", "true", "`sha256` must be a string, got a boolean"),
    "requirement-option": ("requirement", '"--index-url=http://evil.example/simple"', "is not a pinned requirement"),
    "requirement-unpinned": ("requirement", '"autograd"', "is not a pinned requirement"),
    "requirement-range": ("requirement", '"autograd>=1.9.1"', "is not a pinned requirement"),
    "requirement-other-version": ("requirement", '"autograd==1.9.0"', "pins another version than `version = '1.9.1'`"),
    "root-dotdot": ("root", '"../autograd-1.9.1"', "`root = '../autograd-1.9.1'` is not the plain name"),
    "root-slash": ("root", '"/"', "is not the plain name"),
    "root-dot": ("root", '"."', "is not the plain name"),
    "root-nested": ("root", '"a/b"', "is not the plain name"),
    "repo-javascript": ("repo", '"javascript:alert(1)"', "is not a web address"),
    "repo-markup": ("repo", '"https://github.com/HIPS/autograd\\"><script>x</script>"', "is not a web address"),
    "repo-ftp": ("repo", '"ftp://example.org/autograd"', "is not a web address"),
    "source-env-lowercase": ("source_env", '"autograd_source"', "is not an environment variable name"),
    "source-env-spaces": ("source_env", '"A B"', "is not an environment variable name"),
}


def _pin_value_case(key: str, literal: str, text: str) -> Case:
    def setup(ctx: Ctx) -> list[Expect]:
        line = set_pin(ctx, key, literal)
        ctx.page("# t\n")
        return [Expect(PIN_TOML, line, text)]

    return setup


for _name, (_key, _literal, _text) in PIN_VALUES.items():
    case(f"pin-value-{_name}")(_pin_value_case(_key, _literal, _text))


@case("pin-dotdot-commit-as-subprocess", mode="subprocess")
def _(ctx):
    line = set_pin(ctx, "commit", '"../.."')
    ctx.page("# t\n")
    return [Expect(PIN_TOML, line, "`commit = '../..'` is not the full commit id", "check the value")]


@case("pin-missing-key")
def _(ctx):
    toml = ctx.site.root / PIN_TOML
    toml.write_text(re.sub(r"(?m)^version = .*\n", "", toml.read_text()))
    ctx.page("# t\n")
    return [Expect(PIN_TOML, 5, "the pin lacks `version` in [upstream]", "add version = \"…\"")]


@case("pin-unknown-key")
def _(ctx):
    line = set_pin(ctx, "version", '"1.9.1"\ncomit = "f53a217"') + 1
    ctx.page("# t\n")
    return [Expect(PIN_TOML, line, "unknown key `comit` in [upstream]", "known keys: commit, repo, version")]


@case("pin-unknown-section")
def _(ctx):
    toml = ctx.site.root / PIN_TOML
    toml.write_text(toml.read_text() + "\n[extra]\nx = 1\n")
    line = len(toml.read_text().splitlines()) - 1
    ctx.page("# t\n")
    return [Expect(PIN_TOML, line, "unknown section [extra]", "[upstream], [sdist] and [provider]")]


@case("pin-section-not-a-table")
def _(ctx):
    toml = ctx.site.root / PIN_TOML
    text = toml.read_text()
    head, _, rest = text.partition("[upstream]")
    toml.write_text('sdist = "x"\n' + head + "[upstream]" + rest.split("[sdist]")[0])
    ctx.page("# t\n")
    return [Expect(PIN_TOML, 1, "`sdist` must be a table [sdist], got a string")]


@case("pin-bom")
def _(ctx):
    toml = ctx.site.root / PIN_TOML
    toml.write_bytes(b"\xef\xbb\xbf" + toml.read_bytes())
    ctx.page("# t\n")
    return [Expect(PIN_TOML, 1, "file starts with a UTF-8 byte-order mark", "save it as UTF-8 without BOM")]


@case("pin-nul-byte")
def _(ctx):
    toml = ctx.site.root / PIN_TOML
    toml.write_bytes(toml.read_bytes().replace(b'version = "1.9.1"', b'version = "1.9.1\x00"'))
    ctx.page("# t\n")
    return [Expect(PIN_TOML, pin_line(ctx, "version"), "file contains a NUL byte")]


@case("pin-not-utf8")
def _(ctx):
    toml = ctx.site.root / PIN_TOML
    toml.write_bytes(toml.read_bytes().replace(b"# The one", b"# The \xe9 one"))
    ctx.page("# t\n")
    return [Expect(PIN_TOML, 1, "file is not valid UTF-8 (byte 0xe9)", "save it as UTF-8")]


@case("pin-missing-file")
def _(ctx):
    (ctx.site.root / PIN_TOML).unlink()
    ctx.page("# t\n")
    return [Expect(PIN_TOML, None, "does not exist", "sourcemap/pin.toml names the pin")]


@case("pin-is-a-directory")
def _(ctx):
    (ctx.site.root / PIN_TOML).unlink()
    (ctx.site.root / PIN_TOML).mkdir()
    ctx.page("# t\n")
    return [Expect(PIN_TOML, None, "is a directory, not a file")]


@case("pin-too-large")
def _(ctx):
    toml = ctx.site.root / PIN_TOML
    toml.write_text(toml.read_text() + "#" * (2 << 20) + "\n")
    ctx.page("# t\n")
    return [Expect(PIN_TOML, None, "more than the 1048576 a configuration file may have")]


def set_manifest_line(ctx: Ctx, n: int, text: str) -> None:
    manifest = ctx.site.root / MANIFEST
    lines = manifest.read_text().splitlines()
    lines[n - 1] = text
    manifest.write_text("\n".join(lines) + "\n")


MANIFEST_CASES = {  # name: (line text, message text)
    "uppercase-digest": (
        "D476B9608694D6EB458FBE4F684955F5E8D39BFB1568EA37B5AE464F2EF64A3E  a.py",
        "malformed manifest line",
    ),
    "one-space": ("d476b9608694d6eb458fbe4f684955f5e8d39bfb1568ea37b5ae464f2ef64a3e a.py", "malformed manifest line"),
    "absolute-path": (
        "d476b9608694d6eb458fbe4f684955f5e8d39bfb1568ea37b5ae464f2ef64a3e  /etc/passwd",
        "manifest path '/etc/passwd' is an absolute path",
    ),
    "dotdot-path": (
        "d476b9608694d6eb458fbe4f684955f5e8d39bfb1568ea37b5ae464f2ef64a3e  ../../x.py",
        "manifest path '../../x.py' has an empty, `.` or `..` segment",
    ),
    "empty-segment": (
        "d476b9608694d6eb458fbe4f684955f5e8d39bfb1568ea37b5ae464f2ef64a3e  a//b.py",
        "has an empty, `.` or `..` segment",
    ),
    "backslash": ("d476b9608694d6eb458fbe4f684955f5e8d39bfb1568ea37b5ae464f2ef64a3e  a\\b.py", "contains a backslash"),
    "control-character": (
        "d476b9608694d6eb458fbe4f684955f5e8d39bfb1568ea37b5ae464f2ef64a3e  a\tb.py",
        "contains the control character U+0009",
    ),
    "inside-git": ("d476b9608694d6eb458fbe4f684955f5e8d39bfb1568ea37b5ae464f2ef64a3e  .git/config", "is inside .git"),
    "drive-letter": (
        "d476b9608694d6eb458fbe4f684955f5e8d39bfb1568ea37b5ae464f2ef64a3e  C:/x.py",
        "is an absolute path",
    ),
}


def _manifest_case(line_text: str, text: str) -> Case:
    def setup(ctx: Ctx) -> list[Expect]:
        set_manifest_line(ctx, 3, line_text)
        ctx.page("# t\n")
        return [Expect(MANIFEST, 3, text)]

    return setup


for _name, (_line, _text) in MANIFEST_CASES.items():
    case(f"manifest-{_name}")(_manifest_case(_line, _text))


@case("manifest-duplicate-entry")
def _(ctx):
    lines = (ctx.site.root / MANIFEST).read_text().splitlines()
    set_manifest_line(ctx, 3, lines[1])
    return [
        Expect(
            MANIFEST,
            3,
            f"duplicate manifest entry for {lines[1].split('  ')[1]} (first on line 2)",
            "keep one line per file",
        )
    ]


@case("manifest-file-and-folder")
def _(ctx):
    set_manifest_line(ctx, 3, "d476b9608694d6eb458fbe4f684955f5e8d39bfb1568ea37b5ae464f2ef64a3e  .github")
    return [Expect(MANIFEST, 3, ".github is listed as a file and as a folder (of .github/dependabot.yml)")]


@case("manifest-crlf")
def _(ctx):
    manifest = ctx.site.root / MANIFEST
    manifest.write_bytes(manifest.read_bytes().replace(b"\n", b"\r\n"))
    return [Expect(MANIFEST, 1, "file has CR (Windows) line endings", "save it with LF line endings")]


@case("manifest-bom")
def _(ctx):
    manifest = ctx.site.root / MANIFEST
    manifest.write_bytes(b"\xef\xbb\xbf" + manifest.read_bytes())
    return [Expect(MANIFEST, 1, "file starts with a UTF-8 byte-order mark")]


@case("manifest-empty")
def _(ctx):
    (ctx.site.root / MANIFEST).write_text("# nothing\n")
    return [Expect(MANIFEST, None, "the manifest lists no files")]


@case("manifest-missing")
def _(ctx):
    (ctx.site.root / MANIFEST).unlink()
    return [
        Expect(
            MANIFEST,
            None,
            "does not exist",
            "restore it from version control (`git checkout -- sourcemap/manifest.sha256`): the pinned bytes "
            "are checked against it; `lessonkit init` and `lessonkit repin --apply` write it",
        )
    ]


@case("manifest-many-bad-lines")
def _(ctx):
    manifest = ctx.site.root / MANIFEST
    lines = manifest.read_text().splitlines()
    manifest.write_text("\n".join(["junk"] * 20 + lines) + "\n")
    return [Expect(MANIFEST, n, "malformed manifest line: 'junk'") for n in range(1, 13)] + [
        Expect(MANIFEST, None, "… and 8 more problems in the manifest")
    ]


# -- the excerpt map (verify without --no-map)


def write_map(ctx: Ctx, text: str | bytes) -> None:
    ctx.args = ["verify"]
    ctx.page("# t\n")
    p = ctx.site.root / "sourcemap" / "excerpts.json"
    p.write_bytes(text if isinstance(text, bytes) else text.encode())


MAP = "sourcemap/excerpts.json"
MAP_HEAD = f'{{"pin": "{COMMIT}", "version": "1.9.1", "manifest": "x", '


def _entry(**kw) -> str:
    e = {
        "page": "docs/p.md",
        "block": 0,
        "kind": "real-source",
        "file": "autograd/core.py",
        "symbol": "grad",
        "lines": [1, 2],
        "sha256": "0" * 64,
        **kw,
    }
    return json.dumps(e)


MAP_CASES = {  # name: (file text, line, message text)
    "top-level-array": ("[1, 2]\n", 1, "the excerpt map must be a JSON object, got an array"),
    "pin-not-text": (
        '{"pin": 1, "version": "1.9.1", "manifest": "x", "excerpts": []}\n',
        None,
        "the excerpt map's `pin` must be a string, got an integer",
    ),
    "excerpts-not-array": (MAP_HEAD + '"excerpts": {}}\n', None, "`excerpts` must be an array, got a table"),
    "entry-not-object": (MAP_HEAD + '"excerpts": [\n 1\n]}\n', None, "excerpt map entry 1 is an integer"),
    "entry-block-text": (
        MAP_HEAD + '"excerpts": [\n' + _entry(block="1") + "\n]}\n",
        2,
        "excerpt map entry 1 has no valid `block` (a string)",
    ),
    "entry-block-boolean": (
        MAP_HEAD + '"excerpts": [\n' + _entry(block=True) + "\n]}\n",
        2,
        "has no valid `block` (a boolean)",
    ),
    "entry-lines-reversed": (
        MAP_HEAD + '"excerpts": [\n' + _entry(lines=[5, 1]) + "\n]}\n",
        2,
        "has an invalid `block` or `lines`",
    ),
    "entry-missing-key": (MAP_HEAD + '"excerpts": [\n{"page": "docs/p.md"}\n]}\n', 2, "has no valid `block` (missing)"),
    "entry-repeated": (
        MAP_HEAD + '"excerpts": [\n' + _entry() + ",\n" + _entry() + "\n]}\n",
        3,
        "excerpt map entry 2 repeats block 0 of 'docs/p.md' (first on line 2)",
    ),
    "nested-too-deeply": ("[" * 100_000 + "]" * 100_000, None, "not valid JSON (nested too deeply)"),
    "huge-number": (
        MAP_HEAD + '"excerpts": [\n' + _entry().replace('"block": 0', '"block": ' + "9" * 5000) + "\n]}\n",
        None,
        "the excerpt map is not valid JSON (Exceeds the limit",
    ),
    "not-json": ("{\n \"pin\": \n", 3, "the excerpt map is not valid JSON (Expecting value)"),
    "bom": (b"\xef\xbb\xbf{}", 1, "file starts with a UTF-8 byte-order mark"),
    "not-utf8": (b'{"pin": "\xff"}', 1, "file is not valid UTF-8 (byte 0xff)"),
}


def _map_case(text, line, message) -> Case:
    def setup(ctx: Ctx) -> list[Expect]:
        write_map(ctx, text)
        return [Expect(MAP, line, message)]

    return setup


for _name, (_text, _line, _msg) in MAP_CASES.items():
    case(f"excerpt-map-{_name}")(_map_case(_text, _line, _msg))


# -- the environment


def _env_case(
    env: dict[str, str],
    var: str,
    message: Callable[[Ctx], str],
    hint: str = "",
    prepare: Callable[[Ctx], None] = lambda ctx: None,
) -> Case:
    def setup(ctx: Ctx) -> list[Expect]:
        (ctx.site.root / ROOT_SENTINEL).write_text("the project root\n")
        prepare(ctx)
        for k, v in env.items():
            ctx.env[k] = v.format(root=ctx.site.root, tmp=ctx.tmp)
        ctx.page("# t\n")
        return [Expect(var, None, message(ctx), hint)]

    return setup


CACHE_HINT = "give an absolute path to a folder outside the project"
ENV_CASES = {
    "cache-relative": (
        {"LESSONKIT_CACHE": "cache"},
        "LESSONKIT_CACHE",
        lambda c: "'cache' is a relative path",
        CACHE_HINT,
    ),
    "cache-dot": ({"LESSONKIT_CACHE": "."}, "LESSONKIT_CACHE", lambda c: "'.' is a relative path", CACHE_HINT),
    "cache-project-root": (
        {"LESSONKIT_CACHE": "{root}"},
        "LESSONKIT_CACHE",
        lambda c: f"{c.site.root} is the project folder or contains it",
        CACHE_HINT,
    ),
    "cache-parent-of-root": (
        {"LESSONKIT_CACHE": "{root}/.."},
        "LESSONKIT_CACHE",
        lambda c: "is the project folder or contains it",
        CACHE_HINT,
    ),
    "cache-filesystem-root": (
        {"LESSONKIT_CACHE": "/"},
        "LESSONKIT_CACHE",
        lambda c: "/ is the project folder or contains it",
        CACHE_HINT,
    ),
    "cache-in-docs": (
        {"LESSONKIT_CACHE": "{root}/docs/cache"},
        "LESSONKIT_CACHE",
        lambda c: "is inside the project's own files (docs/)",
        "only a hidden folder such as .cache",
    ),
    "cache-in-sourcemap": (
        {"LESSONKIT_CACHE": "{root}/sourcemap"},
        "LESSONKIT_CACHE",
        lambda c: "is inside the project's own files (sourcemap/)",
    ),
    "cache-in-experiments": (
        {"LESSONKIT_CACHE": "{root}/experiments/x"},
        "LESSONKIT_CACHE",
        lambda c: "is inside the project's own files (experiments/)",
    ),
    "cache-in-git": (
        {"LESSONKIT_CACHE": "{root}/.git/cache"},
        "LESSONKIT_CACHE",
        lambda c: "is inside the project's own files (.git/)",
    ),
    "cache-is-a-file": (
        {"LESSONKIT_CACHE": "{tmp}/file"},
        "LESSONKIT_CACHE",
        lambda c: "exists and is not a folder",
        CACHE_HINT,
        lambda c: (c.tmp / "file").write_text("x"),
    ),
    "cache-link-to-project": (
        {"LESSONKIT_CACHE": "{tmp}/link"},
        "LESSONKIT_CACHE",
        lambda c: "is the project folder or contains it",
        CACHE_HINT,
        lambda c: (c.tmp / "link").symlink_to(c.site.root),
    ),
    "cache-control-character": (
        {"LESSONKIT_CACHE": "/tmp/a\tb"},
        "LESSONKIT_CACHE",
        lambda c: "contains the control character U+0009",
    ),
    "sdist-is-a-fifo": (
        {"AUTOGRAD_SOURCE": "", "LESSONKIT_SDIST": "{tmp}/fifo", "LESSONKIT_CACHE": "{tmp}/cache"},
        "LESSONKIT_SDIST",
        lambda c: "fifo is not a regular file",
        "name the release archive file",
        lambda c: os.mkfifo(c.tmp / "fifo"),
    ),
    "source-missing": (
        {"LESSONKIT_SOURCE": "{tmp}/nowhere"},
        "LESSONKIT_SOURCE",
        lambda c: f"{c.tmp}/nowhere is not a folder",
        "point it at a checkout",
    ),
    "source-is-a-file": (
        {"LESSONKIT_SOURCE": "{tmp}/file"},
        "LESSONKIT_SOURCE",
        lambda c: "is not a folder",
        "",
        lambda c: (c.tmp / "file").write_text("x"),
    ),
    "legacy-source-is-a-file": (
        {"AUTOGRAD_SOURCE": "{tmp}/file"},
        "AUTOGRAD_SOURCE",
        lambda c: "is not a folder",
        "",
        lambda c: (c.tmp / "file").write_text("x"),
    ),
    "sdist-is-a-folder": (
        {"AUTOGRAD_SOURCE": "", "LESSONKIT_SDIST": "{tmp}", "LESSONKIT_CACHE": "{tmp}/cache"},
        "LESSONKIT_SDIST",
        lambda c: f"{c.tmp} is a folder",
        "name the release archive file",
    ),
    "git-remote-option": (
        {
            "AUTOGRAD_SOURCE": "",
            "LESSONKIT_GIT_REMOTE": "--upload-pack=touch {tmp}/pwned",
            "LESSONKIT_CACHE": "{tmp}/cache",
        },
        "LESSONKIT_GIT_REMOTE",
        lambda c: "starts with `-` (git would read it as an option)",
    ),
    "git-remote-helper": (
        {
            "AUTOGRAD_SOURCE": "",
            "LESSONKIT_GIT_REMOTE": "ext::sh -c touch% {tmp}/pwned",
            "LESSONKIT_CACHE": "{tmp}/cache",
        },
        "LESSONKIT_GIT_REMOTE",
        lambda c: "uses a git remote helper transport",
    ),
    "sandbox-unknown-mode": (
        {"LESSONKIT_SANDBOX": "off"},
        "LESSONKIT_SANDBOX",
        lambda c: "'off' is not a sandbox mode",
        "set it to `bwrap`, `namespaces` or `copy`",
    ),
    "sandbox-wrong-case": (
        {"LESSONKIT_SANDBOX": "Copy"},
        "LESSONKIT_SANDBOX",
        lambda c: "'Copy' is not a sandbox mode",
    ),
    "sandbox-control-character": (
        {"LESSONKIT_SANDBOX": "copy\x1b"},
        "LESSONKIT_SANDBOX",
        lambda c: "contains the control character U+001B",
    ),
    "git-remote-not-a-url": (
        {"AUTOGRAD_SOURCE": "", "LESSONKIT_GIT_REMOTE": "no such remote", "LESSONKIT_CACHE": "{tmp}/cache"},
        "LESSONKIT_GIT_REMOTE",
        lambda c: "'no such remote' is neither a URL nor an existing folder",
    ),
}


def _cached_tree(make: Callable[[Ctx], None] = lambda ctx: None) -> Callable[[Ctx], None]:
    """The pinned tree already in the case's cache (as the real build left it, without its archive),
    then ``make``: a set LESSONKIT_SDIST is checked all the same."""

    def prepare(ctx: Ctx) -> None:
        from lessonkit.project import Project

        shutil.copytree(
            Project(ROOT).cache / "pin", ctx.tmp / "cache" / "pin", ignore=shutil.ignore_patterns("*.tar.gz", ".tmp-*")
        )
        make(ctx)

    return prepare


CACHED = {"AUTOGRAD_SOURCE": "", "LESSONKIT_CACHE": "{tmp}/cache"}
SDIST_HINT = "name the release archive file"
ENV_CASES |= {
    "sdist-is-a-device-with-the-tree-cached": (
        {**CACHED, "LESSONKIT_SDIST": "/dev/zero"},
        "LESSONKIT_SDIST",
        lambda c: "/dev/zero is not a regular file",
        SDIST_HINT,
        _cached_tree(),
    ),
    "sdist-is-a-fifo-with-the-tree-cached": (
        {**CACHED, "LESSONKIT_SDIST": "{tmp}/fifo"},
        "LESSONKIT_SDIST",
        lambda c: f"{c.tmp}/fifo is not a regular file",
        SDIST_HINT,
        _cached_tree(lambda c: os.mkfifo(c.tmp / "fifo")),
    ),
    "sdist-is-a-folder-with-the-tree-cached": (
        {**CACHED, "LESSONKIT_SDIST": "{tmp}"},
        "LESSONKIT_SDIST",
        lambda c: f"{c.tmp} is a folder",
        SDIST_HINT,
        _cached_tree(),
    ),
    "sdist-missing-with-the-tree-cached": (
        {**CACHED, "LESSONKIT_SDIST": "{tmp}/nope.tar.gz"},
        "LESSONKIT_SDIST",
        lambda c: f"{c.tmp}/nope.tar.gz does not exist",
        SDIST_HINT,
        _cached_tree(),
    ),
}
for _name, _spec in ENV_CASES.items():
    case(f"env-{_name}")(_env_case(*_spec))


@case("env-cache-in-docs-as-subprocess", mode="subprocess")
def _(ctx):
    ctx.env["LESSONKIT_CACHE"] = str(ctx.site.root / "docs")
    ctx.page("# t\n")
    return [Expect("LESSONKIT_CACHE", None, "is inside the project's own files (docs/)")]


@case("env-cache-in-docs-in-the-build", mode="build")
def _(ctx):
    ctx.env["LESSONKIT_CACHE"] = str(ctx.site.root / "docs" / "c")
    ctx.page("# t\n")
    return [Expect("LESSONKIT_CACHE", None, "is inside the project's own files (docs/)")]


@case("source-with-bytecode-caches")
def _(ctx):
    tree = copy_pinned(ctx)
    for folder in ("autograd", "autograd/numpy", "autograd/scipy"):
        (tree / folder / "__pycache__").mkdir()
        for name in ("a", "b", "c", "d", "e"):
            (tree / folder / "__pycache__" / f"{name}.cpython-311.pyc").write_bytes(b"\0")
    ctx.page("# t\n")
    return [Expect(MANIFEST, None, "15 Python bytecode file(s) not in the manifest", "delete them: find ")]


@case("cache-pin-folder-is-a-link")
def _(ctx):
    cache = ctx.tmp / "cache"
    (cache / "pin").parent.mkdir(parents=True)
    elsewhere = ctx.tmp / "elsewhere"
    (elsewhere / ".staging" / "x-1-abc").mkdir(parents=True)
    (cache / "pin").symlink_to(elsewhere)
    ctx.env.update({"LESSONKIT_CACHE": str(cache)})
    ctx.page("# t\n")
    ctx.after = lambda: (elsewhere / ".staging" / "x-1-abc").is_dir() or pytest.fail("removed through a link")
    return [Expect("LESSONKIT_CACHE", None, "refusing to follow a symlink inside", "remove the link")]


# -- verify's own arguments


@case("verify-page-outside-docs")
def _(ctx):
    (ctx.site.root / "notes.md").write_text("# n\n")
    ctx.args = ["verify", "--no-map", str(ctx.site.root / "notes.md")]
    ctx.code = 2
    return [
        Expect(
            str(ctx.site.root / "notes.md"), None, "not a page under docs/", "give paths of Markdown files under docs/"
        )
    ]


@case("verify-missing-page")
def _(ctx):
    ctx.args = ["verify", "--no-map", str(ctx.site.root / "docs" / "nope.md")]
    ctx.code = 2
    return [Expect(str(ctx.site.root / "docs" / "nope.md"), None, "no such page")]


@case("verify-project-without-pages")
def _(ctx):
    (ctx.site.root / "docs" / "index.md").unlink()
    return [Expect("docs", None, "no Markdown pages under docs/", "add lessons under docs/")]


@case("roles-wrong-type", mode="build")
def _(ctx):
    (ctx.site.root / "sourcemap" / "roles.toml").write_text('[roles]\n"autograd/core.py" = 3\n')
    ctx.page("# t\n")
    return [Expect("sourcemap/roles.toml", 2, "the role of autograd/core.py must be a string, got an integer")]


@case("path-link-inside-repository")
def _(ctx):
    (ctx.site.root / "mini-autograd").mkdir()
    (ctx.site.root / "mini-autograd" / "engine.py").write_text("class Value:\n    pass\n")
    (ctx.site.root / "mini-autograd" / "alias.py").symlink_to("engine.py")
    ctx.page(fence("teaching-simplification", "File: mini-autograd/alias.py", "Symbol: Value"))
    return [
        Expect(
            "mini-autograd/alias.py",
            None,
            "is a link to `mini-autograd/engine.py`",
            "replace it with a copy of the file: mini-autograd/ goes into the boxes and the bundle as files",
        )
    ]


def _default_cache_link(target: Callable[[Ctx], Path], text: str) -> Case:
    def setup(ctx: Ctx) -> list[Expect]:
        ctx.env["LESSONKIT_CACHE"] = None  # the default: <project>/.cache
        (ctx.site.root / ".cache").symlink_to(target(ctx))
        (ctx.site.root / ROOT_SENTINEL).write_text("the project root\n")
        ctx.page("# t\n")
        return [Expect(".cache", None, text, "remove the link .cache")]

    return setup


case("default-cache-links-to-the-project")(
    _default_cache_link(lambda c: c.site.root, ".cache is the project folder or contains it")
)
case("default-cache-links-to-docs")(
    _default_cache_link(lambda c: c.site.root / "docs", ".cache is inside the project's own files (docs/)")
)
case("default-cache-links-above-the-project")(
    _default_cache_link(lambda c: c.site.root.parent, ".cache is the project folder or contains it")
)


@case("manifest-command-without-a-tree")
def _(ctx):
    ctx.args = ["manifest", str(ctx.tmp / "nowhere"), str(ctx.tmp / "out.sha256")]
    ctx.code = 2
    ctx.after = lambda: (ctx.tmp / "out.sha256").exists() and pytest.fail("wrote an empty manifest")
    return [Expect(str(ctx.tmp / "nowhere"), None, "not a folder with files", "give the folder of the tree")]


# -- sourcemap/kinds.toml names modules to import: every shape, name and module failure is located
KINDS = "sourcemap/kinds.toml"
KINDS_CASES = {  # name: (kinds.toml text, module source or None, line, message text)
    "not-toml": ("modules = [\n", None, 2, "not valid TOML"),
    "modules-text": ('modules = "k"\n', None, 1, "`modules` is a string, not an array of module names"),
    "unknown-key": ('modules = []\nplugins = ["x"]\n', None, 2, "unknown key `plugins`"),
    "no-modules": ("\n", None, 1, "no `modules` key"),
    "number-in-modules": ("modules = [1]\n", None, 1, "`modules` holds an integer 1, not a module name"),
    "path-as-name": ('modules = [\n  "../../etc/passwd",\n]\n', None, 2, "'../../etc/passwd' is not a module name"),
    "empty-name": ('modules = [""]\n', None, 1, "'' is not a module name"),
    "stdlib-module": (
        'modules = ["antigravity"]\n',
        None,
        1,
        "cannot import kind module `antigravity`: ModuleNotFoundError: no `antigravity.py` or "
        "`antigravity/` in the project root",
    ),
    "engine-module": (
        'modules = ["lessonkit.build"]\n',
        None,
        1,  # the test project has no lessonkit/ of its own
        "cannot import kind module `lessonkit.build`: ModuleNotFoundError: no `lessonkit.py`",
    ),
    "listed-twice": ('modules = ["{m}", "{m}"]\n', "KIND = None\n", 1, "module `{m}` is listed twice"),
    "module-raises": (
        'modules = ["{m}"]\n',
        "raise RuntimeError('boom')\n",
        1,
        "cannot import kind module `{m}`: RuntimeError: boom",
    ),
    "module-exits": (
        'modules = ["{m}"]\n',
        "import sys\nsys.exit(3)\n",
        1,
        "cannot import kind module `{m}`: SystemExit: 3",
    ),
    "module-syntax-error": ('modules = ["{m}"]\n', "def (:\n", 1, "cannot import kind module `{m}`: SyntaxError"),
    "module-recursion": (
        'modules = ["{m}"]\n',
        "def f(): return f()\nf()\n",
        1,
        "cannot import kind module `{m}`: RecursionError",
    ),
    "kinds-not-a-list": (
        'modules = ["{m}"]\n',
        "KINDS = 5\n",
        1,
        "`KINDS` of module `{m}` is an integer, not a list of kinds",
    ),
    "kind-not-an-instance": (
        'modules = ["{m}"]\n',
        "KIND = 'note'\n",
        1,
        "module `{m}` lists 'note', which is not a Kind or InlineKind instance",
    ),
    "kind-is-the-class": (
        'modules = ["{m}"]\n',
        "from lessonkit.kinds import Kind\nclass K(Kind):\n    name = 'k'\nKIND = K\n",
        1,
        "which is not a Kind or InlineKind instance",
    ),
    "no-kind": ('modules = ["{m}"]\n', "X = 1\n", 1, "module `{m}` defines neither KIND nor KINDS"),
    "not-utf8": (b'modules = ["\xff"]\n', None, 1, "file is not valid UTF-8 (byte 0xff)"),
}


def _kinds_case(name, toml, module, line, message) -> Case:
    def setup(ctx: Ctx) -> list[Expect]:
        m = "lk_kinds_" + name.replace("-", "_")  # one module name per case: imports are cached in-process
        data = toml.replace(b"{m}", m.encode()) if isinstance(toml, bytes) else toml.replace("{m}", m).encode()
        (ctx.site.root / KINDS).write_bytes(data)
        if module is not None:
            (ctx.site.root / f"{m}.py").write_text(module, encoding="utf-8")
        ctx.page("# t\n")
        return [Expect(KINDS, line, message.replace("{m}", m))]

    return setup


for _name, _spec in KINDS_CASES.items():
    case(f"kinds-toml-{_name}")(_kinds_case(_name, *_spec))


# -- sourcemap/attachments.toml: the same module list as kinds.toml, and each attachment checked
ATTACHMENTS = "sourcemap/attachments.toml"
_ATT = "from lessonkit import Attachment\nclass A(Attachment):\n    name, uri = {name!r}, {uri!r}\n"
_ATT_READS = _ATT + "    reads = ({reads!r},)\n"
ATTACHMENT_CASES = {  # name: (attachments.toml text, module source or None, line, message text)
    "not-toml": ("modules = [\n", None, 2, "not valid TOML"),
    "unknown-key": ('modules = []\npages = ["x"]\n', None, 2, "unknown key `pages`"),
    "path-as-name": ('modules = [\n  "../x",\n]\n', None, 2, "'../x' is not a module name"),
    "stdlib-module": (
        'modules = ["antigravity"]\n',
        None,
        1,
        "cannot import attachment module `antigravity`: ModuleNotFoundError: no `antigravity.py`",
    ),
    "module-raises": (
        '\nmodules = ["{m}"]\n',
        "raise RuntimeError('boom')\n",
        2,
        "cannot import attachment module `{m}`: RuntimeError: boom",
    ),
    "none-defined": ('modules = ["{m}"]\n', "X = 1\n", 1, "module `{m}` defines neither ATTACHMENT nor ATTACHMENTS"),
    "not-a-list": ('modules = ["{m}"]\n', "ATTACHMENTS = 5\n", 1, "`ATTACHMENTS` of module `{m}` is an integer"),
    "the-class": (
        'modules = ["{m}"]\n',
        _ATT.format(name="a", uri="attachments/a.md") + "ATTACHMENT = A\n",
        1,
        "which is not an Attachment instance",
    ),
    "bad-name": (
        'modules = ["{m}"]\n',
        _ATT.format(name="Call Sequence", uri="attachments/a.md") + "ATTACHMENT = A()\n",
        1,
        "module `{m}` lists an attachment named 'Call Sequence', not lowercase words joined by `-`",
    ),
    "uri-not-md": (
        'modules = ["{m}"]\n',
        _ATT.format(name="a", uri="attachments/a.html") + "ATTACHMENT = A()\n",
        1,
        "attachment `a` (module `{m}`) writes 'attachments/a.html', which does not end in `.md`",
    ),
    "uri-outside": (
        'modules = ["{m}"]\n',
        _ATT.format(name="a", uri="../a.md") + "ATTACHMENT = A()\n",
        1,
        "writes '../a.md', which has an empty, `.` or `..` segment",
    ),
    "uri-of-the-engine": (
        'modules = ["{m}"]\n',
        _ATT.format(name="a", uri="attachments/acceptance.md") + "ATTACHMENT = A()\n",
        1,
        "writes 'attachments/acceptance.md', which is a page lessonkit writes itself",
    ),
    "uri-of-docs": (
        'modules = ["{m}"]\n',
        _ATT.format(name="a", uri="index.md") + "ATTACHMENT = A()\n",
        1,
        "attachment `a` (module `{m}`) writes index.md, which docs/ holds as a page of its own",
    ),
    "same-name-twice": (
        'modules = ["{m}"]\n',
        _ATT.format(name="a", uri="attachments/a.md") + "ATTACHMENTS = [A(), A()]\n",
        1,
        "two attachments are named `a`",
    ),
    "reads-missing": (
        'modules = ["{m}"]\n',
        _ATT_READS.format(name="a", uri="attachments/a.md", reads="experiments/gone.py") + "ATTACHMENT = A()\n",
        1,
        "attachment `a` (module `{m}`) reads 'experiments/gone.py', which does not exist",
    ),
    "reads-a-folder": (
        'modules = ["{m}"]\n',
        _ATT_READS.format(name="a", uri="attachments/a.md", reads="docs") + "ATTACHMENT = A()\n",
        1,
        "reads 'docs', which is a folder, not a file",
    ),
    "reads-outside": (
        'modules = ["{m}"]\n',
        _ATT_READS.format(name="a", uri="attachments/a.md", reads="/etc/passwd") + "ATTACHMENT = A()\n",
        1,
        "reads '/etc/passwd', which is an absolute path",
    ),
    "diagram-source-missing": (
        'modules = ["{m}"]\n',
        "from lessonkit import Diagram\nclass D(Diagram):\n    name, uri = 'd', 'attachments/d.md'\n"
        "ATTACHMENT = D('experiments/calls.py')\n",
        1,
        "attachment `d` (module `{m}`) reads 'experiments/calls.py', which does not exist",
    ),
}


def _attachments_case(name, toml, module, line, message) -> Case:
    def setup(ctx: Ctx) -> list[Expect]:
        m = "lk_att_" + name.replace("-", "_")  # one module name per case: imports are cached in-process
        (ctx.site.root / ATTACHMENTS).write_text(toml.replace("{m}", m), encoding="utf-8")
        if module is not None:
            (ctx.site.root / f"{m}.py").write_text(module, encoding="utf-8")
        ctx.page("# t\n")
        return [Expect(ATTACHMENTS, line, message.replace("{m}", m))]

    return setup


for _name, _spec in ATTACHMENT_CASES.items():
    case(f"attachments-toml-{_name}")(_attachments_case(_name, *_spec))


# -- sourcemap/site.toml: every field typed, every path plain and inside the project
SITE = "sourcemap/site.toml"
SITE_CASES = {  # name: (site.toml text, line, message text)
    "not-toml": ("[upstream\n", 1, "not valid TOML"),
    "table-is-a-value": ("upstream = 1\n", 1, "`upstream` is an integer, not a table"),
    "name-number": ("[upstream]\nname = 5\n", 2, "`name` in `[upstream]` is an integer, not a string"),
    "name-path": ('[upstream]\nname = "../x"\n', 2, "`name` in `[upstream]` is not a plain name"),
    "name-empty": ('[upstream]\nname = " "\n', 2, "`name` in `[upstream]` is empty"),
    "label-bell": (
        '[upstream]\nlabel = "a\\u0007b"\n',
        2,
        "`label` in `[upstream]` contains the control character U+0007",
    ),
    "label-huge": ('[upstream]\nlabel = "' + "x" * 1000 + '"\n', 2, "is longer than 300 characters"),
    "package-absolute": ('[upstream]\npackage = "/etc/"\n', 2, "`package` in `[upstream]` is an absolute path"),
    "package-no-slash": ('[upstream]\npackage = "autograd"\n', 2, "`package` in `[upstream]` does not end in `/`"),
    "code-text": (
        '[repository]\ncode = "experiments"\n',
        2,
        "`code` in `[repository]` is a string, not an array of folders",
    ),
    "code-parent": (
        '[repository]\ncode = ["experiments", ".."]\n',
        2,
        "`code` in `[repository]` item '..' has an empty, `.` or `..` segment",
    ),
    "code-root": ('[repository]\ncode = ["/"]\n', 2, "item '/' is an absolute path"),
    "teaching-number": ("[repository]\nteaching = [1]\n", 2, "`teaching` in `[repository]` is an integer"),
    "code-link-out": ('[repository]\ncode = ["outside"]\n', 2, "item 'outside' leads outside the project (a link)"),
    "code-is-a-file": ('[repository]\ncode = ["mkdocs.yml"]\n', 2, "item 'mkdocs.yml' is a file, not a folder"),
    "bundle-absolute": ('[bundle]\npath = "/tmp/x.zip"\n', 2, "`path` in `[bundle]` is an absolute path"),
    "bundle-not-zip": ('[bundle]\npath = "downloads/x.tar"\n', 2, "`path` in `[bundle]` does not end in .zip"),
    "bundle-into-git": ('[bundle]\npath = ".git/x.zip"\n', 2, "is inside .git"),
    "diagrams-moved": ('[diagrams]\ncalls = "experiments/x.py"\n', 1, "unknown table `[diagrams]`"),
    "attachments-moved": ('\n[attachments]\nreadme = "README.md"\n', 2, "unknown table `[attachments]`"),
    "box-pinned-text": (
        '[experiments]\npinned = "autograd/"\n',
        2,
        "`pinned` in `[experiments]` is a string, not an array of paths",
    ),
    "box-pinned-empty": ("[experiments]\npinned = []\n", 2, "`pinned` in `[experiments]` is empty (leave it out"),
    "box-pinned-parent": ('[experiments]\npinned = ["../x"]\n', 2, "item '../x' has an empty, `.` or `..` segment"),
    "box-pinned-number": ("[experiments]\npinned = [3]\n", 2, "has an item that is an integer, not a string"),
    "pages-api-missing": ('[pages]\napi = "apii.md"\n', 2, "`api` in `[pages]` is not a page of docs/"),
    "pages-api-not-markdown": ('[pages]\napi = "index.html"\n', 2, "`api` in `[pages]` is not a Markdown page"),
    "pages-lessons-parent": ('[pages]\nlessons = "../x/"\n', 2, "`lessons` in `[pages]` has an empty, `.` or `..`"),
    "pages-lessons-file": ('[pages]\nlessons = "index.md"\n', 2, "`lessons` in `[pages]` is a file of docs/, not"),
    "pages-bundle-text-string": (
        '[pages]\nbundle-text = "index.md"\n',
        2,
        "`bundle-text` in `[pages]` is a string, not an array of pages",
    ),
    "pages-bundle-text-missing": (
        '[pages]\n\nbundle-text = ["index.md", "tour.md"]\n',
        3,
        "`bundle-text` in `[pages]` item 'tour.md' is not a page of docs/",
    ),
    "pages-authors-missing": (
        '[pages]\nauthors = ["guide.md"]\n',
        2,
        "`authors` in `[pages]` item 'guide.md' is not a page of docs/",
    ),
    "pages-unknown-key": ('[pages]\nlesson = "x/"\n', 2, "unknown key `lesson` in `[pages]`"),
    "versions-not-installed": (
        '[experiments]\n\nversions = ["NumPy=numpy", "Nope=no-such-distribution"]\n',
        3,
        "`versions` in `[experiments]` item 'Nope=no-such-distribution' names `no-such-distribution`, which is "
        "not an installed distribution",
    ),
    "versions-a-standard-module": (
        '[experiments]\nversions = ["os"]\n',
        2,
        "`versions` in `[experiments]` item 'os' names `os`, a module of the standard library, not an installed "
        "distribution (Python's own version is always shown)",
    ),
    "box-pinned-nothing": (
        '[experiments]\n\npinned = ["autograd/", "autgrad/*.py"]\n',
        3,
        "`pinned` in `[experiments]` names `autgrad/*.py`, which matches no file of the pinned tree",
    ),
}


def _site_case(text, line, message) -> Case:
    def setup(ctx: Ctx) -> list[Expect]:
        outside = ctx.tmp / "outside-target"
        outside.mkdir()
        (outside / "passwd").write_text("secret\n")
        (ctx.site.root / "outside").symlink_to(outside, target_is_directory=True)
        (ctx.site.root / SITE).write_text(text, encoding="utf-8")
        ctx.page("# t\n")
        return [Expect(SITE, line, message)]

    return setup


for _name, (_text, _line, _msg) in SITE_CASES.items():
    case(f"site-toml-{_name}")(_site_case(_text, _line, _msg))


# -- SITE_URL and LESSONKIT_REPO_URL go into links of every page (mkdocs.yml reads them)
URL_CASES = {  # name: (variable, value, message text)
    "repo-url-breaks-the-attribute": (
        "LESSONKIT_REPO_URL",
        'https://x.org/"><script>alert(1)</script>',
        "is not an http(s) address",
    ),
    "repo-url-javascript": (
        "LESSONKIT_REPO_URL",
        "javascript:alert(1)",
        "'javascript:alert(1)' is not an http(s) address",
    ),
    "repo-url-relative": ("LESSONKIT_REPO_URL", "../x", "'../x' is not an http(s) address"),
    "site-url-javascript": ("SITE_URL", "javascript:alert(1)//", "is not an http(s) address"),
    "site-url-space": ("SITE_URL", "https://x.org/a b/", "'https://x.org/a b/' is not an http(s) address"),
    "site-url-newline": ("SITE_URL", "https://x.org/\nx", "contains the control character U+000A"),
}


def _url_case(var, value, message) -> Case:
    def setup(ctx: Ctx) -> list[Expect]:
        ctx.env[var] = value
        ctx.page("# t\n")
        return [Expect(var, None, message, "or unset it")]

    return setup


for _name, (_var, _value, _msg) in URL_CASES.items():
    case(f"env-{_name}", mode="build")(_url_case(_var, _value, _msg))


@case("env-good-urls-build", mode="build")
def _(ctx):
    ctx.env.update({"SITE_URL": "https://example.org/lessons/", "LESSONKIT_REPO_URL": "https://example.org/repo"})
    ctx.page("# t\n")
    ctx.code = 0  # well-formed addresses build (the test project's mkdocs.yml does not read them)
    return []


# -- docs/ entries MkDocs would follow somewhere it must not (checked before MkDocs walks docs/)
OUT_HINT = "replace the link with the file itself"
DOCS_CASES = {  # name: (make(ctx) -> None, entry, message text, part of the hint)
    "page-links-outside": (
        lambda c: (c.site.root / "docs" / "evil.md").symlink_to(c.tmp / "secret.md"),
        "docs/evil.md",
        "is a link that leads outside the project",
        OUT_HINT,
    ),
    "page-links-to-a-device": (
        lambda c: (c.site.root / "docs" / "z.md").symlink_to("/dev/zero"),
        "docs/z.md",
        "is a link that leads outside the project ('/dev/zero')",
        OUT_HINT,
    ),
    "folder-links-outside": (
        lambda c: (c.site.root / "docs" / "d").symlink_to(c.tmp),
        "docs/d",
        "is a link that leads outside the project",
        OUT_HINT,
    ),
    "folder-link-loop": (
        lambda c: (c.site.root / "docs" / "loop").symlink_to(c.site.root / "docs"),
        "docs/loop",
        "is a link to a folder (MkDocs would walk into it, maybe in a loop)",
        "link single pages",
    ),
    "page-links-to-itself": (
        lambda c: (c.site.root / "docs" / "self.md").symlink_to("self.md"),
        "docs/self.md",
        "is a link loop",
        "remove the link",
    ),
    "page-link-dangling": (
        lambda c: (c.site.root / "docs" / "gone.md").symlink_to("nowhere.md"),
        "docs/gone.md",
        "is a link to nothing ('nowhere.md')",
        "remove the link",
    ),
    "fifo-page": (
        lambda c: os.mkfifo(c.site.root / "docs" / "fifo.md"),
        "docs/fifo.md",
        "is not a regular file (a FIFO, socket or device)",
        "remove it from docs/",
    ),
}


def _docs_case(make, entry, message, hint) -> Case:
    def setup(ctx: Ctx) -> list[Expect]:
        (ctx.tmp / "secret.md").write_text("# secret\n\nTOP SECRET\n")
        ctx.page("# t\n")
        make(ctx)
        return [Expect(entry, None, message, hint)]

    return setup


for _name, _spec in DOCS_CASES.items():
    case(f"docs-{_name}")(_docs_case(*_spec))
    if _name in ("page-links-outside", "folder-link-loop", "fifo-page"):  # and the build stops before MkDocs reads it
        case(f"docs-{_name}-in-the-build", mode="build")(_docs_case(*_spec))


# -- commands with bad arguments: a located line, exit 2, nothing written
@case("render-a-page-outside-docs")
def _(ctx):
    ctx.args, ctx.code = ["render", "/etc/passwd"], 2
    return [Expect("/etc/passwd", None, "not a page under docs/", "give the path of a Markdown file under docs/")]


@case("render-a-missing-page")
def _(ctx):
    ctx.args, ctx.code = ["render", str(ctx.site.root / "docs" / "nope.md")], 2
    return [Expect(str(ctx.site.root / "docs" / "nope.md"), None, "no such page")]


@case("render-a-folder")
def _(ctx):
    ctx.args, ctx.code = ["render", str(ctx.site.root / "docs")], 2
    return [Expect(str(ctx.site.root / "docs"), None, "no such page")]


def _manifest_over(target: Callable[[Ctx], Path], message: str) -> Case:
    def setup(ctx: Ctx) -> list[Expect]:
        ctx.page("# t\n")
        (ctx.tmp / "tree").mkdir()
        (ctx.tmp / "tree" / "f.py").write_text("x = 1\n")
        out = str(target(ctx))
        ctx.args, ctx.code = ["manifest", str(ctx.tmp / "tree"), out], 2
        return [Expect(out, None, message, "write it to sourcemap/manifest.sha256 or outside the project")]

    return setup


case("manifest-over-a-page")(
    _manifest_over(
        lambda c: c.site.root / "docs" / "p.md", "is inside the project's own files (docs/); not overwritten"
    )
)
case("manifest-over-the-pin")(
    _manifest_over(lambda c: c.site.root / "sourcemap" / "pin.toml", "is inside the project's own files (sourcemap/)")
)
case("manifest-over-a-file-that-is-not-one")(
    _manifest_over(
        lambda c: (c.tmp / "notes.txt").write_text("my notes\n") and c.tmp / "notes.txt", "exists and is not a manifest"
    )
)
case("manifest-into-a-folder")(_manifest_over(lambda c: c.tmp, "is a folder"))


@case("new-lesson-number-in-arabic-indic-digits")
def _(ctx):
    ctx.args = ["new", "١٥", "t"]  # str.isdigit and \d accept these; a lesson number is two ASCII digits
    return [Expect("NUMBER", None, "lesson number `١٥` is not two digits")]  # the argument, by its name in the usage


KNOWN_GAPS: dict[str, str] = {}  # cases that are allowed to fail, with the reason; none today


@pytest.fixture(scope="module")
def shared_build(tmp_path_factory, pinned_root):
    """One `mkdocs build` of one site holding a page per shared-build case."""
    base = tmp_path_factory.mktemp("shared")
    site = TmpSite(base / "proj", pinned_root)
    cases = {}
    for name, (mode, setup) in CASES.items():
        if mode == "shared-build":
            (base / name).mkdir()
            ctx = Ctx(site, base / name, mode=mode, page_name=f"{name}.md")
            cases[name] = (ctx, setup(ctx))
            assert not ctx.env, "a shared build has one environment"
    before = snapshot(site.root)
    outcome = run_build(next(iter(cases.values()))[0])
    return {
        "cases": cases,
        "before": before,
        "outcome": outcome,
        "n_problems": sum(len(expected) for _, expected in cases.values()),
    }


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input(name, site, tmp_path, monkeypatch, request):
    if name in KNOWN_GAPS:
        request.applymarker(pytest.mark.xfail(reason=KNOWN_GAPS[name], strict=False))
    mode, setup = CASES[name]
    if mode == "shared-build":
        shared = request.getfixturevalue("shared_build")
        ctx, expected = shared["cases"][name]
        assert_contract(shared["outcome"], expected, shared["before"], ctx, shared["n_problems"])
        check_after(ctx, monkeypatch)
        return
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    ctx = Ctx(site, scratch, mode=mode)
    expected = setup(ctx)
    before = snapshot(site.root)
    if mode == "cli":
        outcome = run_cli_inprocess(ctx, monkeypatch)
        if outcome.code != 99:  # the summary line counts the problems of the pages
            m = re.search(r"; (\d+) problem\(s\) in", outcome.output)
            assert m is None or int(m[1]) == len(expected), outcome.output
    elif mode == "subprocess":
        outcome = run_cli_subprocess(ctx)
    else:
        outcome = run_build(ctx)
    assert_contract(outcome, expected, before, ctx)
    check_after(ctx, monkeypatch)


def check_after(ctx: Ctx, monkeypatch) -> None:
    ctx.after()
    if ctx.failed_pages:
        use_env(env_for(ctx), monkeypatch)
        cache = cache_dir(ctx) / "experiments"
        for page in ctx.failed_pages:
            for key in experiment_keys(ctx, ctx.site.root / "docs" / page):
                assert not (cache / f"{key}.json").exists(), "a failed experiment was cached"


def test_catalogue_is_large_enough():
    assert len(CASES) >= 120


# ---------------------------------------------------------------- inputs the build must survive

BENIGN = {
    "megabytes": "import sys\nfor i in range(100_000):\n    sys.stdout.write(f'line {i:06d} ' + 'x' * 40 + '\\n')\n",
    "html": "print('<script>alert(1)</script> & <b>bold</b>')\n",
    "stdin": "import sys\ndata = sys.stdin.read()\nprint('stdin:', repr(data))\n",
    "writes": (
        "import os, pathlib\npathlib.Path('written-by-experiment.txt').write_text('x')\n"
        "pathlib.Path(os.path.expanduser('~/home-file.txt')).write_text('x')\n"
        "print('cwd', os.getcwd())\n"
    ),
    "child": None,  # filled in by the fixture (needs the pid file's path)
}


@pytest.fixture(scope="module")
def benign_build(tmp_path_factory, pinned_root):
    base = tmp_path_factory.mktemp("benign")
    s = TmpSite(base / "proj", pinned_root)
    pidfile = f"lessonkit-benign-child-{base.name}.pid"  # in the box's own folder; also a marker
    scripts = dict(BENIGN)
    scripts["child"] = (
        "import subprocess, sys, time, os\n"
        f"pid = {pidfile!r}\n"
        "subprocess.Popen([sys.executable, '-c', 'import os, time, sys; "
        "open(sys.argv[1], \"w\").write(str(os.getpid())); time.sleep(300)', pid])\n"
        "while not os.path.exists(pid) or not open(pid).read():\n"
        "    time.sleep(0.05)\n"
        "print('child started')\n"
    )
    for name, body in scripts.items():
        s.page(f"{name}.md", fence("experiment", f"Purpose: {name}", "Timeout: 30", body=body))
    before = snapshot(s.root)
    t0 = time.perf_counter()
    r = s.build()
    return {"site": s, "result": r, "before": before, "pidfile": pidfile, "seconds": time.perf_counter() - t0}


def _page_html(b, name: str) -> str:
    return (b["site"].root / "site" / name / "index.html").read_text(encoding="utf-8")


def _output_block(html: str) -> str:
    m = re.search(r'<pre class="lk-output"><code>(.*?)</code></pre>', html, re.S)
    assert m, "no output block on the page"
    return m[1]


@pytest.mark.parametrize("name", list(BENIGN))
def test_build_survives(benign_build, name):
    b = benign_build
    r = b["result"]
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Traceback" not in r.stdout + r.stderr
    assert snapshot(b["site"].root) == b["before"]
    assert_clean_cache(b["site"].cache)
    html = _page_html(b, name)
    out = _output_block(html)
    if name == "megabytes":
        assert len(out.encode()) <= 70 * 1024, "the output is not capped"
        assert "line 000000" in out and "line 099999" not in out
        assert 'class="lk-truncated"' in html and "输出过长" in html  # a visible notice
    elif name == "html":
        assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;" in out
        assert "<script>alert(1)" not in html
    elif name == "stdin":
        assert "stdin: &#x27;&#x27;" in out or "stdin: ''" in out  # EOF at once, no hang
    elif name == "writes":
        assert "cwd &lt;tmp&gt;" in out or "cwd <tmp>" in out  # a temporary working directory
        assert not list(b["site"].root.rglob("written-by-experiment.txt"))  # the project is not touched
        assert not list(b["site"].root.rglob("home-file.txt"))  # HOME is the temporary folder too
        assert not (ROOT / "written-by-experiment.txt").exists() and not (ROOT / "home-file.txt").exists()
        assert not (Path.home() / "home-file.txt").exists()
    elif name == "child":
        assert "child started" in out  # printed once the child had written its pid
        assert not _cmd_alive(b["pidfile"]), "a child of the experiment outlived it"


# ---------------------------------------------------------------- corrupted caches are detected and rebuilt

CORRUPTIONS = {
    "truncated-json": lambda text: text[: len(text) // 2],
    "empty-file": lambda text: "",
    "not-an-object": lambda text: "[1, 2, 3]",
    "wrong-types": lambda text: json.dumps({**json.loads(text), "stdout": 42}),
    "other-key": lambda text: json.dumps({**json.loads(text), "key": "0" * 64}),
    "failed-result": lambda text: json.dumps({**json.loads(text), "exit_code": 1}),
    "binary-garbage": lambda text: "\x00\x01garbage",
    "edited-output": lambda text: json.dumps({**json.loads(text), "stdout": "41\n"}),  # valid shape, wrong value
    "no-check": lambda text: json.dumps({k: v for k, v in json.loads(text).items() if k != "check"}),
}


@pytest.mark.parametrize("kind", list(CORRUPTIONS))
def test_corrupted_experiment_cache_entry_is_rebuilt(tmp_path, pinned_root, kind):
    cache = tmp_path / "cache"
    support = tmp_path / "experiments"
    support.mkdir()
    job = Job("ok.py", b"print(6 * 7)\n", 30, "experiments/ok.py")
    first = Runner(pinned_root, "1.9.1", "digest", support, cache)
    assert first.run(job).stdout == "42\n"
    entry = cache / "experiments" / f"{first.key(job)}.json"
    entry.write_text(CORRUPTIONS[kind](entry.read_text()), encoding="utf-8")
    again = Runner(pinned_root, "1.9.1", "digest", support, cache)
    result = again.run(job)
    assert not result.cached and again.stats == {"ran": 1, "cached": 0}, "the corrupted entry was used"
    assert result.stdout == "42\n"
    assert json.loads(entry.read_text())["stdout"] == "42\n"  # rebuilt, valid
    assert_clean_cache(cache)
    third = Runner(pinned_root, "1.9.1", "digest", support, cache)
    assert third.run(job).cached


def test_modified_pinned_cache_tree_is_detected_and_reprovided(tmp_path, pinned_sdist, real_project, monkeypatch):
    pin = dataclasses.replace(real_project.pin, sdist_sha256=hashlib.sha256(pinned_sdist.read_bytes()).hexdigest())
    cache = tmp_path / "cache"
    monkeypatch.delenv("AUTOGRAD_SOURCE", raising=False)
    monkeypatch.delenv("LESSONKIT_GIT_REMOTE", raising=False)
    monkeypatch.setenv("LESSONKIT_SDIST", str(pinned_sdist))
    first = provide(pin, cache)
    assert first.provider.startswith("local archive LESSONKIT_SDIST") and not first.cached
    assert provide(pin, cache).cached
    core = first.root / "autograd" / "core.py"
    good = core.read_bytes()
    core.write_bytes(good.replace(b"outgrads.pop(node)", b"outgrads.pop(nodes)"))
    again = provide(pin, cache)
    assert not again.cached, "the modified cache tree was used"
    assert again.provider.startswith("local archive LESSONKIT_SDIST")
    assert (again.root / "autograd" / "core.py").read_bytes() == good
    check_tree(again.root, pin)
    assert_clean_cache(cache)
    # a file added to the cached tree is a modification too
    (again.root / "autograd" / "extra.py").write_text("x = 1\n")
    assert not provide(pin, cache).cached
    assert not (again.root / "autograd" / "extra.py").exists()


def test_hostile_archive_is_refused_before_anything_is_written(tmp_path):
    """safe_extract checks every entry before extracting any: nothing lands outside or inside."""
    archive = make_tar(
        tmp_path / "a.tar.gz",
        [
            (SDIST_ROOT, "dir", None),
            (f"{SDIST_ROOT}/ok.py", "file", "x\n"),
            (f"{SDIST_ROOT}/../../escape.py", "file", "x\n"),
        ],
    )
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(LessonError, match="escapes the tree"):
        safe_extract(archive, dest, SDIST_ROOT)
    assert list(dest.iterdir()) == [] and not (tmp_path / "escape.py").exists()


# ---------------------------------------------------------------- two builds at once


def test_two_concurrent_builds_share_the_cache(tmp_path, pinned_root, pinned_sdist):
    s = TmpSite(tmp_path / "proj", pinned_root)
    toml = s.root / PIN_TOML
    digest = hashlib.sha256(pinned_sdist.read_bytes()).hexdigest()
    toml.write_text(re.sub(r'(?m)^sha256 = ".*"$', f'sha256 = "{digest}"', toml.read_text()))
    env = {k: v for k, v in s.env.items() if k != "AUTOGRAD_SOURCE"}
    env["LESSONKIT_SDIST"] = str(pinned_sdist)  # both builds extract and install the pin into one cache
    for i in range(3):
        s.page(f"e{i}.md", fence("experiment", f"Purpose: {i}", body=f"print('experiment {i}', 'y' * 5000)"))
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / f"out{n}")],
            cwd=s.root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        for n in (1, 2)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err[-3000:]
        assert "Traceback" not in out + err
    for n in (1, 2):
        for i in range(3):
            html = (tmp_path / f"out{n}" / f"e{i}" / "index.html").read_text(encoding="utf-8")
            assert f"experiment {i} " + "y" * 5000 in html
    assert_clean_cache(s.cache)
    entries = list((s.cache / "experiments").glob("*.json"))
    assert len(entries) >= 3
    check_tree(s.cache / "pin" / COMMIT, load_pin(s.root / "sourcemap"))


# ---------------------------------------------------------------- verify's power: the mutation check

MUTATION_PAGE = (
    "# m\n\n"
    + block("real-source", "File: autograd/core.py", "Symbol: backward_pass", "Commit: f53a217")
    + "\n"
    + block(
        "real-source",
        "File: autograd/core.py",
        "Symbol: backward_pass",
        "Commit: f53a217",
        body="for parent, ingrad in zip(node.parents, ingrads):\n"
        "    outgrads[parent] = add_outgrads(outgrads.get(parent), ingrad)",
    )
    + "\n"
    + block("real-source", "File: autograd/core.py", "Commit: f53a217", body="outgrads = {end_node: (g, False)}")
    + "\n"
    + block("real-source", "File: autograd/numpy/numpy_vjps.py", "Symbol: defvjp(anp.exp)", "Commit: f53a217")
    + "\n"
    + block("real-source", "File: autograd/tracer.py", "Symbol: Box.__init__", "Commit: f53a217")
    + "\n"
    + block("teaching-simplification", "Based-on: autograd/core.py::backward_pass", body="x = 1")
)


@pytest.fixture
def mapped_site(site, monkeypatch):
    """A project with a few real-source blocks of every form and an up-to-date excerpt map."""
    from lessonkit.checks import verify

    monkeypatch.setenv("AUTOGRAD_SOURCE", str(site.pinned_root))
    monkeypatch.setenv("LESSONKIT_CACHE", str(site.cache))
    site.page("m.md", MUTATION_PAGE)
    project = site.project()
    report = verify.check(project)
    assert report.problems == []
    verify.write_map(project, report)
    return site


def run_main(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = lessonkit_main(list(argv))
    return code, out.getvalue() + err.getvalue()


def test_mutate_catches_every_mutation(mapped_site):
    code, output = run_main("--root", str(mapped_site.root), "mutate")
    assert code == 0, output
    assert re.match(r"^mutations: 5/5 caught \(100%\) in [\d.]+ s$", output.strip()), output


def test_mutate_reports_a_mutation_that_is_not_caught(mapped_site, monkeypatch):
    from lessonkit.checks import mutation

    real_swap = mutation._swap
    # a "mutation" of one region that changes nothing: neither defence can notice it
    monkeypatch.setattr(mutation, "_swap", lambda ch: ch if ch == "s" else real_swap(ch))
    code, output = run_main("--root", str(mapped_site.root), "mutate")
    assert code == 1
    lines = output.strip().splitlines()
    assert re.match(r"^mutations: [0-4]/5 caught \(\d+%\) in [\d.]+ s$", lines[-1]), output
    for line in lines[:-1]:
        m = LINE.match(line)
        assert m and m["path"] == "docs/m.md" and m["line"] and "mutation not caught" in m["msg"], line
    assert lines[:-1], output


def test_mutate_refuses_a_stale_map(mapped_site):
    page = mapped_site.root / "docs" / "m.md"
    page.write_text(page.read_text().replace("Symbol: Box.__init__", "Symbol: Box.__bool__"))
    code, output = run_main("--root", str(mapped_site.root), "mutate")
    assert code == 1
    assert "docs/m.md:" in output and "is stale" in output and "mutations: 4/4 caught" in output
    assert "Traceback" not in output


def test_mutate_the_real_excerpt_map(real_project):
    """Every cited region of the lessons: one changed character is always caught."""
    from lessonkit.checks import mutation

    report = mutation.run(real_project)
    if report.problems:
        pytest.skip(f"the excerpt map is being edited: {report.problems[0]}")
    missed = [str(o.problem()) for o in report.outcomes if not o.caught]
    assert not missed, "\n".join(missed)
    assert report.outcomes and report.summary().endswith("caught (100%)")


def test_experiment_flooding_its_output_is_stopped_at_the_file_limit(tmp_path, pinned_root, monkeypatch):
    """A script printing in a loop cannot fill the disk before its timeout: writes past the
    limit fail, the experiment fails with one clear line, and nothing is cached."""
    from lessonkit.run import jobs as run_jobs
    from lessonkit.run import runner as execute

    monkeypatch.setattr(run_jobs, "FILE_LIMIT", 1 << 20)  # 1 MB instead of 256 MB, to keep the test fast
    support = tmp_path / "experiments"
    support.mkdir()
    runner = Runner(pinned_root, "1.9.1", "digest", support, tmp_path / "cache")
    job = Job("flood.py", b"while True:\n    print('x' * 1000)\n", 60, "docs/f.md:3")
    t0 = time.perf_counter()
    result = runner.run(job)
    assert time.perf_counter() - t0 < 30, "the flood ran into the timeout instead of the file limit"
    assert not result.ok and not result.timed_out
    assert result.truncated > 0 and len(result.stdout.encode()) <= run_jobs.OUTPUT_CAP
    err = execute.failure(result, job, 60).at("docs/f.md", 3)
    line = str(err)
    assert "\n" not in line and LINE.match(line) and "File too large" in line, line
    assert_clean_cache(tmp_path / "cache")
    assert not (tmp_path / "cache" / "experiments").exists() or not any((tmp_path / "cache" / "experiments").iterdir())
