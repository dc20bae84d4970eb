"""Repin: what every excerpt and experiment would become under another autograd.

``python -m lessonkit repin TARGET`` (``nox -s repin -- TARGET``). TARGET is

* a released version on the package index (``1.9.0``): its sdist is fetched with
  ``pip download`` like the pin's, its sha256 is recorded and shown, and it is
  extracted with :func:`lessonkit.pin.safe_extract`;
* a full 40-digit commit, fetched from ``LESSONKIT_GIT_REMOTE`` like the pin's
  git provider;
* a local checkout (a directory).

Every block of every page is resolved against the pin with the build's code path
(:meth:`Project.resolve`) and against the target with the same
:func:`~lessonkit.resolve.excerpt_of` / :func:`~lessonkit.resolve.based_on`, and
classified as **unchanged** (same text, same lines), **moved** (same text, other
lines), **changed** (still resolves, text differs; with a diff) or **missing**
(file or symbol gone; with the closest candidates). Every experiment runs against
both trees (the target's outputs are cached apart, under ``<cache>/repin``) and
their outputs are compared. The report goes to stdout and to an HTML page.

The exit status is 0 only when nothing beyond "moved" happened and every
experiment prints what it prints at the pin. With ``--apply`` (allowed only then)
the pin, its manifest, the ``Lines:``/``Commit:`` headers of the pages and the
excerpt map are rewritten in one step, verified, and rolled back on any problem.
"""

from __future__ import annotations

import ast
import contextlib
import difflib
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import config, execute, verify
from . import pin as pinmod
from .errors import LessonError
from .fsutil import atomic_write, remove_owned
from .parse import Block, BrokenBlock
from .pin import Pin, PinnedTree, safe_extract, sha256_file, write_manifest
from .project import Project
from .pyindex import SELECTOR, SourceFile
from .resolve import Excerpt, Tree, based_on, excerpt_of

WHERE = "repin"  # the location operator errors are reported at
VERSION = re.compile(r"^\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?$")
FULL_SHA = re.compile(r"^[0-9a-fA-F]{40}$")
SHORT_SHA = re.compile(r"^[0-9a-fA-F]{7,39}$")
HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")
ANNOUNCE = re.compile(r"^\[autograd [^\]\n]*· pinned tree\]$", re.M)
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")

SOURCE_OK = ("unchanged", "moved")
ORDER = {"error": 0, "missing": 1, "changed": 2, "fails": 3, "differs": 4, "moved": 5, "unchanged": 6}


def _err(message: str, hint: str | None = None) -> LessonError:
    return LessonError(message, path=WHERE, hint=hint)


# ---------------------------------------------------------------- the target tree

@dataclass
class Target:
    kind: str  # "sdist", "git" or "path"
    spec: str  # TARGET as given
    root: Path  # the tree (the folder that holds autograd/)
    version: str | None
    commit: str | None  # full id, only when known
    commit_note: str  # where the commit comes from, or why it is unknown
    origin: str  # where the bytes came from (shown, and recorded in the build cache)
    manifest: dict[str, str]
    sdist: dict[str, str] | None = None  # filename, sha256, requirement, root

    @property
    def digest(self) -> str:
        return _digest(self.manifest)

    @property
    def label(self) -> str:
        c = f" ({self.commit[:7]})" if self.commit else ""
        return f"autograd {self.version or '?'}{c}"


def _digest(manifest: dict[str, str]) -> str:
    # the same digest as Pin.manifest_digest, for a tree that has no Pin yet
    return Pin("", "", "", "", "", "", "", manifest, Path()).manifest_digest


def tree_manifest(root: Path) -> dict[str, str]:
    """sha256 of every file of a tree, as ``write_manifest`` records it."""
    return {rel: sha256_file(p) for rel, p in sorted(pinmod._tree_files(root).items())
            if rel not in pinmod.MANIFEST_IGNORED}


def tree_version(root: Path) -> str | None:
    """The version a checkout declares in ``pyproject.toml`` (or ``setup.py``), if any."""
    try:
        v = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8")).get("project", {}).get("version")
        if isinstance(v, str) and v.strip():
            return v.strip()
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        pass
    try:
        m = re.search(r"""version\s*=\s*['"]([^'"]+)['"]""", (root / "setup.py").read_text(encoding="utf-8"))
        return m[1] if m else None
    except (OSError, UnicodeDecodeError):
        return None


def _staging(cache: Path) -> Path:
    d = cache / "repin" / ".staging"
    d.mkdir(parents=True, exist_ok=True)
    return d


def fetch_sdist(version: str, cache: Path) -> tuple[Path, str]:
    """``autograd==version`` from the package index, cached under ``<cache>/repin/sdist``.

    Returns the archive and its sha256. A cached archive is reused only while its
    bytes still have the sha256 recorded when it was downloaded."""
    store = cache / "repin" / "sdist"
    archive = store / f"autograd-{version}.tar.gz"
    side = archive.with_name(archive.name + ".sha256")
    if archive.is_file() and side.is_file():
        digest = sha256_file(archive)
        if side.read_text(encoding="utf-8").strip() == digest:
            return archive, digest
        archive.unlink(missing_ok=True)  # damaged since it was fetched: fetch again
    tmp = Path(tempfile.mkdtemp(prefix="dl-", dir=_staging(cache)))
    try:
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", "autograd",
               f"autograd=={version}", "-d", str(tmp)]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise _err(f"downloading autograd=={version} timed out",
                       hint="offline? give a local checkout path as TARGET instead") from None
        got = sorted(tmp.iterdir())
        if r.returncode != 0 or not got:
            last = (r.stderr.strip().splitlines() or ["no output"])[-1]
            raise _err(f"cannot download the sdist of autograd=={version} from the package index: {last}",
                       hint="is it a released version? offline? give a local checkout path as TARGET instead")
        if len(got) != 1 or not re.fullmatch(r"autograd-[\w.+!-]+\.tar\.gz", got[0].name):
            raise _err(f"the package index gave {', '.join(p.name for p in got)} for autograd=={version}, "
                       "not one autograd-X.tar.gz", hint="only .tar.gz release archives can be repinned to")
        digest = sha256_file(got[0])
        store.mkdir(parents=True, exist_ok=True)
        final = store / got[0].name  # the index may spell the version differently (1.8 → 1.8.0)
        os.replace(got[0], final)
        final.with_name(final.name + ".sha256").write_text(digest + "\n", encoding="utf-8")
        if final != archive:  # remember the spelling asked for, too
            shutil.copyfile(final, archive)
            side.write_text(digest + "\n", encoding="utf-8")
        return final, digest
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _sdist_target(spec: str, cache: Path, work: Path) -> Target:
    archive, digest = fetch_sdist(spec, cache)
    version = _archive_version(archive)
    root_name = f"autograd-{version}"
    tree = safe_extract(archive, work, root_name)
    if not tree.is_dir():
        raise _err(f"{archive.name} has no {root_name}/ folder", hint="this is not an autograd release archive")
    (tree / "PKG-INFO").unlink(missing_ok=True)  # added by the sdist, not part of the tree (as for the pin)
    sdist = {"filename": f"{root_name}.tar.gz", "sha256": digest, "requirement": f"autograd=={version}",
             "root": root_name}
    return Target("sdist", spec, tree, version, None, "", f"sdist {root_name}.tar.gz from the Python package index",
                  tree_manifest(tree), sdist)


def _archive_version(archive: Path) -> str:
    """The version inside an archive's root folder (``autograd-1.8.0/…``)."""
    import tarfile
    try:
        with tarfile.open(archive, "r:*") as tf:
            first = next((m.name for m in tf), "")
    except (tarfile.TarError, OSError) as exc:
        raise _err(f"cannot open archive {archive.name}: {exc}",
                   hint=f"delete {archive} and run again to fetch it anew") from None
    head = first.split("/", 1)[0]
    if not head.startswith("autograd-"):
        raise _err(f"{archive.name} does not hold an autograd-X/ folder",
                   hint="this is not an autograd release archive")
    return head[len("autograd-"):]


def _git_target(spec: str, cache: Path) -> Target:
    commit = spec.lower()
    remote = config.git_remote()  # checked: a URL or a folder, never an option
    if not remote:
        raise _err(f"`{spec}` is a commit id, but LESSONKIT_GIT_REMOTE is not set",
                   hint="set LESSONKIT_GIT_REMOTE=<url or path of an autograd repository>, "
                        "or give a released version or a local checkout path")
    final = cache / "repin" / "git" / commit
    marker = final.parent / f"{commit}.json"
    if final.is_dir() and marker.is_file():
        try:
            info = json.loads(marker.read_text(encoding="utf-8"))
            manifest = tree_manifest(final)
            if info.get("digest") == _digest(manifest):
                return Target("git", spec, final, tree_version(final), commit, "the fetched commit", info["origin"],
                              manifest)
        except (ValueError, KeyError, OSError):
            pass
    remove_owned(cache, "repin", "git", commit)  # strictly inside the cache (commit: 40 hex digits)
    work = Path(tempfile.mkdtemp(prefix="clone-", dir=_staging(cache)))
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    try:
        for cmd in (["git", "init", "-q", str(work)],
                    ["git", "-C", str(work), "fetch", "-q", "--depth", "1", remote, commit],
                    ["git", "-C", str(work), "-c", "advice.detachedHead=false", "checkout", "-q", "FETCH_HEAD"],
                    ["git", "-C", str(work), "rev-parse", "HEAD"]):
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env,
                                   stdin=subprocess.DEVNULL)
            except (subprocess.TimeoutExpired, OSError) as exc:
                raise _err(f"git could not fetch {commit[:7]} from {remote}: {exc}",
                           hint="check LESSONKIT_GIT_REMOTE, or give a released version") from None
            if r.returncode != 0:
                raise _err(f"git could not fetch {commit[:7]} from {remote}: "
                           f"{(r.stderr.strip().splitlines() or ['?'])[-1]}",
                           hint="check the commit id and LESSONKIT_GIT_REMOTE")
        if r.stdout.strip() != commit:
            raise _err(f"git checked out {r.stdout.strip()[:12]}, not {commit[:12]}", hint="check the commit id")
        shutil.rmtree(work / ".git")
        final.parent.mkdir(parents=True, exist_ok=True)
        os.replace(work, final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    origin = f"git clone of {remote} at {commit[:7]}"
    manifest = tree_manifest(final)
    marker.write_text(json.dumps({"origin": origin, "digest": _digest(manifest)}) + "\n", encoding="utf-8")
    return Target("git", spec, final, tree_version(final), commit, "the fetched commit", origin, manifest)


def _path_target(spec: str) -> Target:
    root = Path(spec).expanduser()
    if not root.is_dir():
        raise _err(f"`{spec}` is not a directory", hint="give a released version (1.9.0), a 40-digit commit "
                                                         "or the path of a local autograd checkout")
    root = root.resolve()
    return Target("path", spec, root, tree_version(root), None, "", f"local checkout {root}", tree_manifest(root))


def classify_target(spec: str) -> str:
    s = spec.strip()
    if not s:
        raise _err("no TARGET given", hint="for example: nox -s repin -- 1.9.0")
    if "/" in s or os.sep in s or s.startswith(("~", ".")):
        return "path"
    if FULL_SHA.match(s):
        return "git"
    if VERSION.match(s):
        return "sdist"
    if SHORT_SHA.match(s):
        raise _err(f"`{s}` looks like an abbreviated commit id",
                   hint="give the full 40-digit id (git fetches commits by their full id)")
    if Path(s).is_dir():
        return "path"
    raise _err(f"`{s}` is neither a released version, a 40-digit commit nor a directory",
               hint="for example: 1.9.0, f53a21734fdfae636f448744d9097d8d35a643a0 or ../autograd")


@contextlib.contextmanager
def acquire(spec: str, cache: Path, pin: Pin, commit: str | None = None):
    """Yield the target tree of ``spec``; temporary extractions are removed afterwards."""
    kind = classify_target(spec)
    if commit is not None and not FULL_SHA.match(commit.strip()):
        raise _err(f"`--commit {commit}` is not a full 40-digit commit id",
                   hint="permalinks and the pin name the full id")
    commit = commit.strip().lower() if commit else None
    work = Path(tempfile.mkdtemp(prefix="target-", dir=_staging(cache)))
    try:
        if kind == "sdist":
            target = _sdist_target(spec.strip(), cache, work)
        elif kind == "git":
            target = _git_target(spec.strip(), cache)
        else:
            target = _path_target(spec)
        if not (target.root / "autograd" / "__init__.py").is_file():
            raise _err(f"{target.origin} has no autograd/__init__.py",
                       hint="TARGET must be an autograd source tree")
        if target.commit and commit and commit != target.commit:
            raise _err(f"`--commit {commit[:12]}` contradicts the fetched commit {target.commit[:12]}",
                       hint="leave out --commit for a commit target")
        if not target.commit:
            if commit:
                target.commit = commit
                target.commit_note = "given with --commit; not checked against the tree"
            elif target.manifest == pin.manifest:
                target.commit = pin.commit
                target.commit_note = "the tree is byte-identical to the current pin's"
            else:
                target.commit_note = ("an sdist does not record its commit; --commit records one" if kind == "sdist"
                                      else "a local checkout; --commit records one")
        yield target
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------- classification

@dataclass
class Item:
    page: str
    line: int
    kind: str  # "real-source", "based-on", "experiment" or "page"
    label: str  # FILE::SYMBOL, or the experiment's script
    status: str  # unchanged | moved | changed | missing | error (blocks); unchanged | differs | fails | error
    detail: str = ""
    old: tuple[int, int] | None = None
    new: tuple[int, int] | None = None
    diff: list[str] = field(default_factory=list)
    candidates: list[str] = field(default_factory=list)
    block: Block | None = None

    @property
    def attention(self) -> bool:
        return self.status not in SOURCE_OK

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


@dataclass
class RepinReport:
    pin: Pin
    target: Target
    items: list[Item]
    titles: dict[str, str]  # page -> its title
    prose: list[tuple[str, int, str]]  # page, line, text naming the old version or commit
    files: dict[str, list[str]]  # "changed", "only-pin", "only-target": tree paths
    seconds: float = 0.0

    def counts(self, kinds: tuple[str, ...]) -> Counter:
        return Counter(i.status for i in self.items if i.kind in kinds)

    @property
    def attention(self) -> list[Item]:
        return [i for i in self.items if i.attention]

    @property
    def exit_code(self) -> int:
        return 1 if self.attention else 0


def _udiff(a: tuple[str, ...] | list[str], b: tuple[str, ...] | list[str], a_start: int, b_start: int,
           a_name: str, b_name: str, context: int = 3) -> list[str]:
    """A unified diff whose hunk headers carry the real line numbers of both files."""
    out = []
    for line in difflib.unified_diff(list(a), list(b), a_name, b_name, lineterm="", n=context):
        m = HUNK.match(line)
        if m:
            line = (f"@@ -{int(m[1]) + a_start - 1}{m[2] or ''} +{int(m[3]) + b_start - 1}{m[4] or ''} @@"
                    + line[m.end():])
        out.append(line)
    return out


def _norm_symbol(symbol: str) -> str:
    m = SELECTOR.match(symbol.strip())
    if not m:
        return symbol.strip()
    try:
        return f"{m['func']}({ast.unparse(ast.parse(m['arg'], mode='eval').body)})"
    except SyntaxError:
        return symbol.strip()


class Index:
    """Every definition of every Python file of the target, built on first use."""

    def __init__(self, tree: Tree, manifest: dict[str, str]):
        self.tree = tree
        self.manifest = manifest
        self._defs: dict[str, list[str]] | None = None

    def where(self, symbol: str, but: str | None = None) -> list[str]:
        if self._defs is None:
            self._defs = {}
            for rel in sorted(self.manifest):
                if not rel.endswith(".py"):
                    continue
                try:
                    for d in self.tree.file(rel).definitions:
                        self._defs.setdefault(d.name, []).append(f"{rel} L{d.start}-{d.end}")
                except LessonError:
                    continue
        return [w for w in self._defs.get(_norm_symbol(symbol), []) if not (but and w.startswith(but + " "))]


def _missing_file(item: Item, file: str, symbol: str | None, index: Index) -> Item:
    base = file.rsplit("/", 1)[-1]
    names = sorted(index.manifest)
    cands = [f"{r} (same file name)" for r in names if r.rsplit("/", 1)[-1] == base and r != file]
    cands += [f"{r} (similar path)" for r in difflib.get_close_matches(file, names, n=3, cutoff=0.6)
              if not any(c.startswith(r + " ") for c in cands)]
    if symbol:
        cands += [f"`{symbol}` is defined at {w}" for w in index.where(symbol)]
    return replace(item, status="missing", detail=f"no file `{file}` in the target", candidates=cands[:8])


def _missing_symbol(item: Item, sf: SourceFile, symbol: str, exc: LessonError, index: Index) -> Item:
    want = _norm_symbol(symbol)
    m = SELECTOR.match(want)
    try:
        defs = sf.definitions
    except LessonError:  # not parseable Python in the target
        defs = []
    if m:
        pool = [d for d in defs if d.kind == "call" and d.name.split("(", 1)[0] == m["func"]]
    else:
        pool = [d for d in defs if d.kind != "call"]
    names = sorted({d.name for d in pool})
    cands = [f"`{symbol}` is defined at {w}" for w in index.where(symbol, but=sf.rel)]
    for c in difflib.get_close_matches(want, names, n=4, cutoff=0.6):
        d = next(d for d in pool if d.name == c)
        cands.append(f"`{c}` at {sf.rel} L{d.start}-{d.end} (similar name)")
    if exc.problem.message.startswith("no "):
        return replace(item, status="missing", detail=f"no symbol `{symbol}` in {sf.rel} of the target",
                       candidates=cands[:8])
    # defined several times, or a selector that became ambiguous: it exists, but not as one definition
    return replace(item, status="changed", detail=f"{exc.problem.message} — {exc.problem.hint or ''}".rstrip(" —"),
                   candidates=cands[:8])


def _closest_window(old: Excerpt, sf: SourceFile) -> tuple[float, int]:
    n = len(old.lines)
    want = "\n".join(l.strip() for l in old.lines)
    best, at = 0.0, 0
    for k in range(0, max(1, len(sf.lines) - n + 1)):
        window = "\n".join(l.strip() for l in sf.lines[k:k + n])
        sm = difflib.SequenceMatcher(None, want, window, autojunk=False)
        if sm.real_quick_ratio() <= best or sm.quick_ratio() <= best:
            continue
        r = sm.ratio()
        if r > best:
            best, at = r, k
    return best, at


def _unresolved(item: Item, project: Project, ttree: Tree, index: Index, old: Excerpt, file: str,
                symbol: str | None, exc: LessonError, vs: str) -> Item:
    try:
        sf = ttree.file(file)
    except LessonError:
        return _missing_file(item, file, symbol, index)
    if symbol:
        try:
            d = sf.find(symbol)
        except LessonError as e:
            return _missing_symbol(item, sf, symbol, e, index)
        pin_sf = project.pinned.file(file)
        pd = pin_sf.find(symbol)
        diff = _udiff(pin_sf.lines[pd.start - 1:pd.end], sf.lines[d.start - 1:d.end], pd.start, d.start,
                      f"{file} ({symbol}, L{pd.start}-{pd.end}) {vs[0]}",
                      f"{file} ({symbol}, L{d.start}-{d.end}) {vs[1]}")
        detail = (f"the quoted lines L{old.start}-{old.end} no longer occur verbatim in `{symbol}` "
                  f"(now L{d.start}-{d.end}): {exc.problem.hint or exc.problem.message}")
        return replace(item, status="changed", detail=detail, new=(d.start, d.end), diff=diff)
    ratio, k = _closest_window(old, sf)
    n = len(old.lines)
    closest = f"{sf.rel} L{k + 1}-{k + n} ({ratio:.0%} alike)"
    if ratio >= 0.6:
        diff = _udiff(old.lines, [l for l in sf.lines[k:k + n]], old.start, k + 1,
                      f"{file} L{old.start}-{old.end} {vs[0]}", f"{file} L{k + 1}-{k + n} {vs[1]}")
        return replace(item, status="changed", detail=f"the quoted lines no longer occur in {file}; closest: {closest}",
                       new=(k + 1, k + n), diff=diff, candidates=[closest])
    cands = [closest] + [f"{r} (same lines)" for r in _files_with_body(old, index)]
    return replace(item, status="missing", detail=f"the quoted lines no longer occur in {file}", candidates=cands)


def _files_with_body(old: Excerpt, index: Index) -> list[str]:
    first = next((l.strip() for l in old.lines if l.strip()), None)
    out = []
    if not first:
        return out
    for rel in sorted(index.manifest):
        if rel == old.file or not rel.endswith((".py", ".md", ".txt")):
            continue
        try:
            text = (index.tree.root / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if first in text and all(l.strip() in text for l in old.lines):
            out.append(rel)
    return out[:4]


def _source_item(project: Project, ttree: Tree, index: Index, block: Block, based: bool, vs) -> Item:
    if based:
        file, symbol = (s.strip() for s in block.get("Based-on").split("::", 1))
        kind, line = "based-on", block.line_of("Based-on")
    else:
        file, symbol = block.get("File"), block.get("Symbol")
        kind, line = "real-source", block.line
    label = f"{file}::{symbol}" if symbol else f"{file} (quoted lines)"
    item = Item(block.path, line, kind, label, "error", block=block)
    try:
        old = based_on(project.pinned, block) if based else project.resolve(block).excerpt
    except LessonError as exc:
        hint = f" — {exc.problem.hint}" if exc.problem.hint else ""
        return replace(item, detail=f"does not resolve at the pin: {exc.problem.message}{hint}")
    item = replace(item, old=(old.start, old.end))
    try:
        new = based_on(ttree, block) if based else excerpt_of(ttree, block)
    except LessonError as exc:
        return _unresolved(item, project, ttree, index, old, file, symbol, exc, vs)
    item = replace(item, new=(new.start, new.end))
    if new.lines == old.lines:
        if (new.start, new.end) == (old.start, old.end):
            return replace(item, status="unchanged")
        loc = " (a `Lines:` locator to rewrite)" if (not based and block.get("Lines")) else ""
        return replace(item, status="moved", detail=f"L{old.start}-{old.end} → L{new.start}-{new.end}{loc}")
    diff = _udiff(old.lines, new.lines, old.start, new.start, f"{file} L{old.start}-{old.end} {vs[0]}",
                  f"{file} L{new.start}-{new.end} {vs[1]}")
    changed = sum(1 for l in diff if l[:1] in "+-" and not l.startswith(("+++", "---")))
    return replace(item, status="changed", diff=diff,
                   detail=f"L{old.start}-{old.end} → L{new.start}-{new.end}, {changed} line(s) differ")


def _normalise_output(text: str) -> str:
    return ANNOUNCE.sub("[autograd … · pinned tree]", text)


def _experiment_items(project: Project, target: Target, exps: list[tuple[Block, execute.Job]], vs) -> list[Item]:
    if not exps:
        return []
    jobs = [j for _, j in exps]
    at_pin = project.runner.run_all(jobs)
    runner = execute.Runner(target.root, target.version or "unknown", target.digest, project.experiments,
                            project.cache / "repin", extra_paths=(project.root / "mini-autograd",))
    at_target = runner.run_all(jobs)
    out = []
    for block, job in exps:
        a, b = at_pin[project.runner.key(job)], at_target[runner.key(job)]
        item = Item(block.path, block.line, "experiment", job.label, "unchanged", block=block)
        if not a.ok:
            out.append(replace(item, status="error", detail="fails at the pin: " +
                               execute.failure(a, job, job.timeout).problem.message))
            continue
        if not b.ok:
            tail = execute.failure(b, job, job.timeout).problem.message
            out.append(replace(item, status="fails", detail=f"fails against the target: {tail}",
                               diff=_udiff(a.stdout.splitlines(), (b.stdout + b.stderr).splitlines(), 1, 1,
                                           f"stdout {vs[0]}", f"stdout + stderr {vs[1]}")))
            continue
        sa, sb = _normalise_output(a.stdout), _normalise_output(b.stdout)
        if sa == sb and a.truncated == b.truncated:
            out.append(item)
            continue
        diff = _udiff(sa.splitlines(), sb.splitlines(), 1, 1, f"stdout {vs[0]}", f"stdout {vs[1]}")
        n = sum(1 for l in diff if l[:1] in "+-" and not l.startswith(("+++", "---")))
        out.append(replace(item, status="differs", detail=f"its output differs ({n} line(s))", diff=diff))
    return out


def _title(text: str, fallback: str) -> str:
    """The page's first level-1 heading outside code fences."""
    fence = None
    for line in text.split("\n"):
        m = FENCE.match(line)
        if fence:
            if m and m[1][0] == fence[0] and len(m[1]) >= len(fence) and not line.strip()[len(m[1]):]:
                fence = None
            continue
        if m:
            fence = m[1]
            continue
        if line.startswith("# "):
            return re.sub(r"\s*\{[^}]*\}\s*$", "", line[2:]).strip()
    return fallback


def _prose(project: Project, path: Path, text: str, parsed, pin: Pin, target: Target) -> list[tuple[str, int, str]]:
    pats = []
    if target.version != pin.version:
        pats.append(re.compile(r"(?<![\w.])" + re.escape(pin.version) + r"(?![\w]|\.\d)"))
    if target.commit != pin.commit:
        pats.append(re.compile(r"(?<![0-9a-fA-F])" + re.escape(pin.commit[:7]) + r"[0-9a-fA-F]*"))
    if not pats:
        return []
    inside = set()
    for it in parsed.items:
        inside.update(range(it.start, it.end + 1))
    out = []
    for k, line in enumerate(text.split("\n")):
        if k not in inside and any(p.search(line) for p in pats):
            out.append((project.rel(path), k + 1, line.strip()))
    return out


def _tree_files_diff(pin: Pin, target: Target) -> dict[str, list[str]]:
    a, b = pin.manifest, target.manifest
    return {"changed": sorted(r for r in a if r in b and a[r] != b[r]),
            "only-pin": sorted(set(a) - set(b)), "only-target": sorted(set(b) - set(a))}


def build_report(project: Project, target: Target, pages: list[Path] | None = None) -> RepinReport:
    """Resolve every block of every page against the pin and the target; run the experiments on both."""
    t0 = time.perf_counter()
    pin = project.pin
    project.tree  # the pin first: a bad pinned tree is one clear error
    ttree = Tree(target.root, "target", allowed=None, label=f"the target {target.label} tree")
    index = Index(ttree, target.manifest)
    vs = (f"(pin, autograd {pin.version})", f"(target, {target.label})")
    items: list[Item] = []
    titles: dict[str, str] = {}
    prose: list[tuple[str, int, str]] = []
    exps: list[tuple[Block, execute.Job]] = []
    parsed_pages = []
    for path in pages or project.pages():
        rel = project.rel(path)
        try:
            text = project.read_page(path)
        except LessonError as exc:
            items.append(Item(rel, exc.problem.line or 1, "page", rel, "error", detail=exc.problem.message))
            titles[rel] = rel
            continue
        titles[rel] = _title(text, rel)
        parsed = project.parse(path, text)
        parsed_pages.append(parsed)
        prose += _prose(project, path, text, parsed, pin, target)
        for it in parsed.items:
            if isinstance(it, BrokenBlock):
                p = it.error.problem
                items.append(Item(rel, p.line or 1, "page", "annotation block", "error",
                                  detail=f"does not parse at the pin: {p.message}"))
        for block in parsed.blocks:
            for role in project.kinds.of(block).repin(block):  # the kind says what to compare
                if role in ("source", "based-on"):
                    items.append(_source_item(project, ttree, index, block, role == "based-on", vs))
                elif role == "experiment":
                    try:
                        exps.append((block, project.resolve(block).job))
                    except LessonError as exc:
                        items.append(Item(rel, block.line, "experiment", block.get("File") or f"{rel}:{block.line}",
                                          "error", detail=f"does not resolve at the pin: {exc.problem.message}",
                                          block=block))
                else:
                    raise LessonError(f"block kind `{block.kind}` asks repin for role `{role}`", path=rel,
                                      line=block.line, hint="a kind's repin() returns roles from "
                                      "lessonkit.kinds.REPIN_ROLES")
    items += _experiment_items(project, target, exps, vs)
    from . import repin_prose  # inline references, snapshots, figures and recorded values
    items += repin_prose.items(project, ttree, target, parsed_pages, vs)
    items.sort(key=lambda i: (i.page, i.line, i.kind))
    return RepinReport(pin, target, items, titles, prose, _tree_files_diff(pin, target),
                  time.perf_counter() - t0)


# ---------------------------------------------------------------- text and HTML

def _counts_text(c: Counter, order: tuple[str, ...]) -> str:
    parts = [f"{c[s]} {s}" for s in order if c[s]]
    return ", ".join(parts) or "none"


SRC_ORDER = ("unchanged", "moved", "changed", "missing", "error")
EXP_ORDER = ("unchanged", "differs", "fails", "error")


def summary_lines(report: RepinReport, diffs: bool = False) -> list[str]:
    pin, t = report.pin, report.target
    out = [f"repin: autograd {pin.version} ({pin.short}) → {t.label}, from {t.origin}"]
    if t.sdist:
        out.append(f"  sdist {t.sdist['filename']}  sha256 {t.sdist['sha256']}")
    out.append(f"  commit: {t.commit or 'unknown'} ({t.commit_note})")
    f = report.files
    out.append(f"  tree: {len(t.manifest)} files; against the pin {len(f['changed'])} differ, "
               f"{len(f['only-pin'])} only in the pin, {len(f['only-target'])} only in the target")
    out.append(f"real source: {_counts_text(report.counts(('real-source',)), SRC_ORDER)}")
    out.append(f"based-on:    {_counts_text(report.counts(('based-on',)), SRC_ORDER)}")
    out.append(f"experiments: {_counts_text(report.counts(('experiment',)), EXP_ORDER)}")
    out.append(f"prose refs:  {_counts_text(report.counts(('prose-ref',)), SRC_ORDER)}")
    out.append(f"recorded:    {_counts_text(report.counts(('snapshot', 'figure', 'value')), EXP_ORDER)}")
    page_errors = report.counts(("page",))
    if page_errors:
        out.append(f"pages:       {page_errors['error']} error(s) at the pin")
    out.append("")
    by_page: dict[str, list[Item]] = {}
    for i in report.items:
        by_page.setdefault(i.page, []).append(i)
    for page in report.titles:
        its = by_page.get(page, [])
        todo = [i for i in its if i.attention]
        moved = [i for i in its if i.status == "moved"]
        same = sum(1 for i in its if i.status == "unchanged")
        head = f"{page}  《{report.titles[page]}》"
        if not todo and not moved:
            out.append(f"{head} — nothing to revisit ({same} unchanged)")
            continue
        verdict = f"revisit {len(todo)}" if todo else "nothing to revisit"
        out.append(f"{head} — {verdict}; {same} unchanged, {len(moved)} moved")
        for i in sorted(todo + moved, key=lambda i: (ORDER[i.status], i.line)):
            out.append(f"  :{i.line:<5} {i.status:<9} {i.kind:<11} {i.label}"
                       + (f" — {i.detail}" if i.detail else ""))
            for c in i.candidates:
                out.append(f"{'':9}candidate: {c}")
            if diffs and i.diff:
                out += [f"{'':9}{l}" for l in i.diff]
    if report.prose:
        out.append("")
        out.append(f"prose naming autograd {pin.version} or {pin.short} (revisit by hand if you repin):")
        for page, line, text in report.prose:
            out.append(f"  {page}:{line}: {text[:100]}")
    out.append("")
    a = report.attention
    if a:
        blocks = sum(1 for i in a if i.kind in ("real-source", "based-on", "page", "prose-ref", "snapshot", "figure",
                                                 "value"))
        exps = sum(1 for i in a if i.kind == "experiment")
        out.append(f"repin: {blocks} block(s) and {exps} experiment(s) need attention "
                   f"(in {len({i.page for i in a})} page(s)); {report.seconds:.1f} s")
    else:
        moved = sum(1 for i in report.items if i.status == "moved")
        out.append(f"repin: nothing beyond moves ({moved} moved); every experiment prints the same; "
                   f"{report.seconds:.1f} s")
    return out


CSS = """
body{font:14px/1.5 system-ui,sans-serif;margin:2em auto;max-width:72em;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:.2em .6em;text-align:left;
vertical-align:top}td{max-width:40em}code,pre{font:12px/1.4 ui-monospace,monospace}
pre{background:#f7f7f7;padding:.6em;overflow:auto;max-width:68em;margin:0}
.s{font-weight:600;padding:0 .4em;border-radius:3px}.unchanged{color:#2a6}.moved{color:#268}
.changed,.differs{color:#b60}.missing,.fails,.error{color:#c22}
.add{color:#070}.del{color:#a00}.hunk{color:#66a}.ok{color:#2a6}.bad{color:#c22}
"""


def _diff_html(lines: list[str]) -> str:
    out = []
    for l in lines:
        cls = "hunk" if l.startswith("@@") else "add" if l.startswith("+") else "del" if l.startswith("-") else ""
        e = html.escape(l)
        out.append(f'<span class="{cls}">{e}</span>' if cls else e)
    return "<pre>" + "\n".join(out) + "</pre>"


def render_html(report: RepinReport) -> str:
    pin, t = report.pin, report.target
    e = html.escape
    h = ['<!doctype html><html lang="en"><head><meta charset="utf-8">',
         f"<title>repin: autograd {e(pin.version)} → {e(t.label)}</title><style>{CSS}</style></head><body>",
         f"<h1>Repin report: autograd {e(pin.version)} ({e(pin.short)}) → {e(t.label)}</h1>"]
    verdict = ('<p class="bad"><b>Needs attention:</b> ' + str(len(report.attention)) + " item(s).</p>"
               if report.attention else '<p class="ok"><b>Nothing beyond moves.</b></p>')
    h.append(verdict)
    rows = [("target", t.spec), ("bytes from", t.origin), ("version", t.version or "unknown"),
            ("commit", f"{t.commit or 'unknown'} ({t.commit_note})")]
    if t.sdist:
        rows += [("sdist", t.sdist["filename"]), ("sdist sha256", t.sdist["sha256"])]
    f = report.files
    rows.append(("tree", f"{len(t.manifest)} files; {len(f['changed'])} differ from the pin, "
                         f"{len(f['only-pin'])} only in the pin, {len(f['only-target'])} only in the target"))
    h.append("<table>" + "".join(f"<tr><th>{e(k)}</th><td><code>{e(v)}</code></td></tr>" for k, v in rows) + "</table>")
    h.append("<table>")
    for kind, order in (("real-source", SRC_ORDER), ("based-on", SRC_ORDER), ("experiment", EXP_ORDER)):
        c = report.counts((kind,))
        cells = " · ".join(f'<span class="s {s}">{c[s]} {s}</span>' for s in order if c[s]) or "none"
        h.append(f"<tr><th>{kind}</th><td>{cells}</td></tr>")
    h.append("</table>")
    if any(f.values()):
        h.append("<details><summary>files of the tree that differ</summary><pre>" + e("\n".join(
            [f"M {r}" for r in f["changed"]] + [f"- {r}" for r in f["only-pin"]] +
            [f"+ {r}" for r in f["only-target"]])) + "</pre></details>")
    h.append("<h2>Per lesson</h2><table><tr><th>page</th><th>lesson</th><th>revisit</th><th>moved</th>"
             "<th>unchanged</th></tr>")
    by_page: dict[str, list[Item]] = {}
    for i in report.items:
        by_page.setdefault(i.page, []).append(i)
    for page, title in report.titles.items():
        its = by_page.get(page, [])
        n = sum(1 for i in its if i.attention)
        anchor = re.sub(r"[^\w-]", "-", page)
        h.append(f'<tr><td><a href="#{anchor}"><code>{e(page)}</code></a></td><td>{e(title)}</td>'
                 f'<td class="{"bad" if n else "ok"}">{n}</td><td>{sum(1 for i in its if i.status == "moved")}</td>'
                 f'<td>{sum(1 for i in its if i.status == "unchanged")}</td></tr>')
    h.append("</table>")
    for page, title in report.titles.items():
        its = by_page.get(page, [])
        anchor = re.sub(r"[^\w-]", "-", page)
        h.append(f'<h2 id="{anchor}">{e(title)} <small><code>{e(page)}</code></small></h2>')
        if not its:
            h.append("<p>No annotation blocks.</p>")
            continue
        h.append("<table><tr><th>line</th><th>status</th><th>kind</th><th>what</th><th>pin</th><th>target</th>"
                 "<th>detail</th></tr>")
        for i in sorted(its, key=lambda i: (ORDER[i.status], i.line)):
            rng = lambda r: f"L{r[0]}-{r[1]}" if r else ""  # noqa: E731
            extra = "".join(f"<br>candidate: <code>{e(c)}</code>" for c in i.candidates)
            h.append(f'<tr><td>{i.line}</td><td><span class="s {i.status}">{i.status}</span></td><td>{i.kind}</td>'
                     f"<td><code>{e(i.label)}</code></td><td>{rng(i.old)}</td><td>{rng(i.new)}</td>"
                     f"<td>{e(i.detail)}{extra}</td></tr>")
            if i.diff:
                h.append(f'<tr><td></td><td colspan="6"><details{" open" if i.attention else ""}>'
                         f"<summary>diff</summary>{_diff_html(i.diff)}</details></td></tr>")
        h.append("</table>")
    if report.prose:
        h.append(f"<h2>Prose naming autograd {e(pin.version)} or {e(pin.short)}</h2><ul>")
        h += [f"<li><code>{e(p)}:{n}</code> {e(text)}</li>" for p, n, text in report.prose]
        h.append("</ul>")
    h.append("</body></html>")
    return "\n".join(h) + "\n"


# ---------------------------------------------------------------- apply

def _q(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def pin_text(old_text: str, pin: Pin, target: Target) -> str:
    """The new ``pin.toml``: the old leading comment, then the target's record."""
    head = []
    for line in old_text.splitlines():
        if line.startswith("[") or (line.strip() and not line.startswith("#")):
            break
        head.append(line)
    out = head + ["[upstream]", f"repo = {_q(pin.repo)}", f"# commit: {target.commit_note}",
                  f"commit = {_q(target.commit)}"]
    if target.kind == "sdist":
        out.append(f"version = {_q(target.version)}")
    else:
        out += [f"# version: as the tree's pyproject.toml declares it ({target.origin})",
                f"version = {_q(target.version)}"]
    out += ["", "[sdist]"]
    if target.sdist:
        out += ["# The release archive on the Python package index; the default provider.",
                *(f"{k} = {_q(target.sdist[k])}" for k in ("filename", "sha256", "requirement", "root"))]
    else:
        out += ["# No release archive is known to hold this tree (it was pinned from "
                f"{'a local checkout' if target.kind == 'path' else 'a git commit'}),",
                "# so no archive matches sha256 \"none\": provide the tree with AUTOGRAD_SOURCE,",
                "# LESSONKIT_GIT_REMOTE or the build cache.",
                f"filename = {_q(f'autograd-{target.version}.tar.gz')}", 'sha256 = "none"',
                f"requirement = {_q(f'autograd=={target.version}')}",
                f"root = {_q(f'autograd-{target.version}')}"]
    return "\n".join(out) + "\n"


HEADER_LINE = r"^(?P<pre>[ \t]*{key}[ \t]*:[ \t]*)(?P<value>\S+)(?P<post>[ \t]*)$"


def _set_header(lines: list[str], n: int, key: str, old: str, new: str, where: str) -> None:
    m = re.match(HEADER_LINE.format(key=key), lines[n - 1])
    if not m or m["value"] != old:
        raise _err(f"{where}:{n}: expected `{key}: {old}` there; the page changed while repinning",
                   hint="run the repin again")
    lines[n - 1] = m["pre"] + new + m["post"]


def page_edits(project: Project, report: RepinReport, commit: str) -> dict[Path, str]:
    """New text of every page whose `Lines:` locators or `Commit:` headers name the old pin."""
    edits: dict[str, list[str]] = {}
    for i in report.items:
        b = i.block
        if i.kind != "real-source" or b is None:
            continue
        lines = edits.get(b.path)
        if lines is None:
            lines = edits[b.path] = project.read_page(project.root / b.path).split("\n")
        c = b.get("Commit")
        if c and not commit.lower().startswith(c.lower()):
            _set_header(lines, b.line_of("Commit"), "Commit", c, commit[:max(7, len(c))], b.path)
        if i.status == "moved" and b.get("Lines"):
            _set_header(lines, b.line_of("Lines"), "Lines", b.get("Lines"), f"{i.new[0]}-{i.new[1]}", b.path)
    out = {}
    for rel, lines in edits.items():
        path = project.root / rel
        text = "\n".join(lines)
        if text != project.read_page(path):
            out[path] = text
    return out


def _write(path: Path, data: bytes) -> None:
    atomic_write(path, data, durable=True)  # a killed --apply leaves the old or the new file, never half


def _install_target(project: Project, new_pin: Pin, target: Target) -> PinnedTree:
    """Put a copy of the target tree in the build cache under the new commit (checked by the manifest)."""
    cached = pinmod._from_cache(new_pin, project.cache)
    if cached is not None:
        return cached
    staged = Path(tempfile.mkdtemp(prefix="repin-", dir=pinmod._staging(project.cache)))
    staged.rmdir()
    try:
        shutil.copytree(target.root, staged, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        return pinmod._install(new_pin, project.cache, staged, target.origin)
    finally:
        shutil.rmtree(staged, ignore_errors=True)


def apply(project: Project, report: RepinReport, say=print) -> list[str]:
    """Rewrite pin, manifest, page headers and excerpt map in one step; roll back on any problem."""
    target = report.target
    if report.attention:
        c = Counter(i.status for i in report.attention)
        raise _err("--apply refused: " + ", ".join(f"{n} {s}" for s, n in sorted(c.items())) +
                   " — only a target where every excerpt is unchanged or moved and every experiment "
                   "prints the same can be applied", hint="revisit the pages listed above first")
    if not target.commit:
        raise _err(f"--apply needs the commit of {target.label}: the pin, its permalinks and every "
                   f"`Commit:` header name it, and it is {target.commit_note}",
                   hint="give --commit <the full 40-digit id this tree was released or checked out at>")
    if not target.version:
        raise _err(f"--apply needs the version of {target.origin}, and its pyproject.toml declares none",
                   hint="repin to a released version, or to a checkout that declares its version")
    old = project.pin
    sdist = target.sdist or {"filename": f"autograd-{target.version}.tar.gz", "sha256": "none",
                             "requirement": f"autograd=={target.version}", "root": f"autograd-{target.version}"}
    new_pin = Pin(repo=old.repo, commit=target.commit, version=target.version, sdist_filename=sdist["filename"],
                  sdist_sha256=sdist["sha256"], sdist_requirement=sdist["requirement"], sdist_root=sdist["root"],
                  manifest=dict(target.manifest), source=old.source)
    pages = page_edits(project, report, target.commit)
    installed = _install_target(project, new_pin, target)
    sm = project.sourcemap
    toml_path, manifest_path, map_path = sm / "pin.toml", sm / "manifest.sha256", sm / verify.MAP_NAME
    touched = [toml_path, manifest_path, map_path, sm / "prose-refs.json", *pages]
    backup = {p: (p.read_bytes() if p.exists() else None) for p in touched}
    try:
        _write(toml_path, pin_text(toml_path.read_text(encoding="utf-8"), old, target).encode())
        fd, tmp = tempfile.mkstemp(dir=sm, prefix=".manifest-")
        os.close(fd)
        write_manifest(installed.root, Path(tmp))
        os.replace(tmp, manifest_path)
        for path, text in pages.items():
            _write(path, text.encode("utf-8"))
        fresh = Project(project.root, cache=project.cache)
        if fresh.pin.manifest != target.manifest or fresh.pin.commit != target.commit:
            raise _err("the rewritten pin does not read back as written", hint="nothing was changed")
        fresh.__dict__["tree"] = PinnedTree(installed.root, installed.provider, fresh.pin)
        checked = verify.check(fresh)
        if checked.problems:
            raise _err(f"after the rewrite verify finds {len(checked.problems)} problem(s), so nothing was "
                       f"changed; the first: {checked.problems[0]}", hint="repin reports no such problem: "
                                                                         "please report this as a lessonkit bug")
        verify.write_map(fresh, checked)
        from .living import write_ref_map  # prose references: same content, new numbers
        write_ref_map(fresh, checked)
        stale = verify.stale_map(fresh, checked)
        if stale:
            raise _err(f"the rewritten excerpt map is stale: {stale[0]}", hint="nothing was changed")
    except BaseException:
        for p, data in backup.items():
            if data is None:
                p.unlink(missing_ok=True)
            else:
                _write(p, data)
        raise
    written = [project.rel(p) for p in (toml_path, manifest_path, *pages, map_path)]
    moved = sum(1 for i in report.items if i.kind == "real-source" and i.status == "moved" and i.block.get("Lines"))
    say(f"applied: pinned to {target.label} ({target.commit}); rewrote {', '.join(written)} "
        f"({moved} `Lines:` locator(s), `Commit:` headers → {target.commit[:7]})")
    say(f"applied: the tree is in the build cache ({project.rel(installed.root)}, from {target.origin})")
    if not target.sdist:
        say("note: no release archive holds this tree; a fresh machine needs AUTOGRAD_SOURCE or "
            "LESSONKIT_GIT_REMOTE to build")
    if os.environ.get("AUTOGRAD_SOURCE"):
        say("note: AUTOGRAD_SOURCE names the old tree; unset it (the build cache has the new one) or point it "
            "at the new tree")
    if report.prose:
        say(f"note: {len(report.prose)} line(s) of prose still name autograd {old.version} or {old.short} "
            "(listed above); revise them by hand")
    return written


# ---------------------------------------------------------------- command line

def main(args) -> int:
    """``python -m lessonkit repin TARGET [--commit ID] [--html PATH] [--diffs] [--apply]``."""
    project = Project(Path(args.root))
    try:
        with acquire(args.target, project.cache, project.pin, args.commit) as target:
            report = build_report(project, target)
            for line in summary_lines(report, diffs=args.diffs):
                print(line)
            out = Path(args.html) if args.html else project.root / "site-repin" / "index.html"
            try:
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_text(render_html(report), encoding="utf-8")
            except OSError as exc:
                raise _err(f"cannot write the HTML report {out}: {exc.strerror}", hint="give another --html path")
            print(f"HTML report: {project.rel(out)}")
            if args.apply:
                apply(project, report)
                return 0
            return report.exit_code
    except LessonError as exc:
        raise exc.at(WHERE, None) from None
