"""The pinned autograd tree: its record, its manifest and the providers of its bytes.

Providers are tried in order; the first that yields a tree wins, and every tree
is checked file by file against the manifest before anything reads it:

1. ``AUTOGRAD_SOURCE``: a local checkout named by the environment;
2. the build cache (``<cache>/pin/<commit>``), filled by a previous provider;
3. a git clone at the pinned commit, when ``LESSONKIT_GIT_REMOTE`` names a remote;
4. the sdist: ``LESSONKIT_SDIST`` (a local archive) or ``pip download`` from the
   package index; its sha256 is checked, then it is extracted safely.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .errors import LessonError, Problem

MANIFEST_IGNORED = {"PKG-INFO"}  # added by the sdist, not part of the source tree
IGNORED_DIRS = {".git"}


@dataclass(frozen=True)
class Pin:
    repo: str
    commit: str
    version: str
    sdist_filename: str
    sdist_sha256: str
    sdist_requirement: str
    sdist_root: str
    manifest: dict[str, str]  # posix path -> sha256
    source: Path  # where pin.toml lives

    @property
    def short(self) -> str:
        return self.commit[:7]

    @property
    def manifest_digest(self) -> str:
        h = hashlib.sha256()
        for path, digest in sorted(self.manifest.items()):
            h.update(f"{digest}  {path}\n".encode())
        return h.hexdigest()

    @property
    def toml_label(self) -> str:
        """How problems name pin.toml: relative to the project root."""
        return f"{self.source.parent.name}/{self.source.name}"

    @property
    def manifest_label(self) -> str:
        return f"{self.source.parent.name}/manifest.sha256"

    def toml_line(self, key: str) -> int | None:
        """The line of ``key = …`` in pin.toml, to locate a problem with that value."""
        try:
            text = self.source.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
        return next((n for n, line in enumerate(text.splitlines(), 1) if pattern.match(line)), None)

    def permalink(self, file: str, start: int, end: int) -> str:
        anchor = f"#L{start}" if start == end else f"#L{start}-L{end}"
        return f"{self.repo}/blob/{self.commit}/{file}{anchor}"


@dataclass(frozen=True)
class PinnedTree:
    root: Path
    provider: str  # human-readable: where the bytes came from (stable across cached builds)
    pin: Pin
    cached: bool = False  # taken from the build cache this time

    def read(self, rel: str) -> bytes:
        return (self.root / rel).read_bytes()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


DIGEST = re.compile(r"^[0-9a-f]{64}$")


def manifest_lines(path: Path) -> dict[str, int]:
    """path -> line number of its entry in the manifest file (to locate problems)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    return {line.split("  ", 1)[1]: n for n, line in enumerate(text.splitlines(), 1) if "  " in line}


def read_manifest(path: Path, label: str | None = None) -> dict[str, str]:
    label = label or str(path)
    manifest = {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LessonError(f"cannot read the manifest: {getattr(exc, 'strerror', None) or exc}", path=label,
                          hint="sourcemap/manifest.sha256 must exist (python -m lessonkit manifest TREE OUT writes it)"
                          ) from None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        digest, sep, rel = line.partition("  ")
        if not sep or not DIGEST.match(digest) or not rel.strip():
            raise LessonError(f"malformed manifest line: {line[:80]!r}", path=label, line=n,
                              hint="expected '<sha256>  <path>' (64 lowercase hex digits, two spaces, a path)")
        manifest[rel] = digest
    return manifest


def load_pin(sourcemap: Path) -> Pin:
    toml_path = sourcemap / "pin.toml"
    label = f"{sourcemap.name}/pin.toml"
    hint = "sourcemap/pin.toml names the pin (see README, 'The pinned source')"
    try:
        data = tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise LessonError(f"cannot read the pin: {getattr(exc, 'strerror', None) or exc}", path=label,
                          hint=hint) from None
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+), column \d+\)", str(exc))
        raise LessonError(f"the pin is not valid TOML: {str(exc).split(' (at ')[0]}", path=label,
                          line=int(m[1]) if m else None, hint=hint) from None
    try:
        up, sd = data["upstream"], data["sdist"]
        fields = dict(repo=up["repo"], commit=up["commit"], version=up["version"],
                      sdist_filename=sd["filename"], sdist_sha256=sd["sha256"],
                      sdist_requirement=sd["requirement"], sdist_root=sd["root"])
    except (KeyError, TypeError) as exc:
        raise LessonError(f"the pin lacks the key {exc}", path=label,
                          hint="it needs [upstream] repo, commit, version and [sdist] filename, sha256, "
                               "requirement, root") from None
    bad = [k for k, v in fields.items() if not isinstance(v, str) or not v.strip()]
    if bad:
        raise LessonError(f"the pin has no text value for `{bad[0]}`", path=label, hint=hint)
    manifest = read_manifest(sourcemap / "manifest.sha256", f"{sourcemap.name}/manifest.sha256")
    return Pin(**fields, manifest=manifest, source=toml_path)


def write_manifest(tree: Path, out: Path) -> int:
    lines = [f"{sha256_file(p)}  {rel}" for rel, p in sorted(_tree_files(tree).items())
             if rel not in MANIFEST_IGNORED]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(lines)


def _tree_files(root: Path) -> dict[str, Path]:
    files = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_DIRS)
        for name in filenames:
            p = Path(dirpath) / name
            files[p.relative_to(root).as_posix()] = p
    return files


def check_file(root: Path, rel: str, pin: Pin, present: dict[str, Path] | None = None) -> str | None:
    """What is wrong with the manifest file ``rel`` of the tree at ``root``, or None.

    ``present`` is the tree's file list (:func:`_tree_files`, which does not descend
    into linked directories, so only the file itself can be a link)."""
    p = root / rel
    try:
        if rel not in (present if present is not None else {rel: p} if p.exists() or p.is_symlink() else {}):
            return "missing"
        if p.is_symlink():
            return "not a regular file inside the tree (link)"
        if not p.is_file():
            return "not a regular file"
        if sha256_file(p) != pin.manifest[rel]:
            return "content differs from the manifest"
    except OSError as exc:
        return f"unreadable ({exc.strerror})"
    return None


SHOWN_PROBLEMS = 12  # manifest problems listed one per line; the rest are counted


def check_tree(root: Path, pin: Pin, where: str | None = None) -> None:
    """Every manifest file present, regular, inside the tree and with its sha256; no extras.

    Raises one :class:`LessonError` with one problem per file, located at the file's
    line in the manifest (``sourcemap/manifest.sha256:N``)."""
    present = _tree_files(root)
    found = [(what, rel) for rel in sorted(pin.manifest) if (what := check_file(root, rel, pin, present))]
    extras = sorted(set(present) - set(pin.manifest) - MANIFEST_IGNORED)
    found += [("not in the manifest", rel) for rel in extras]
    if not found:
        return
    where = where or f"pinned tree at {root}"
    hint = ("the excerpts would not be verbatim; supply the pinned autograd "
            f"{pin.version} bytes (see README, 'The pinned source')")
    lines = manifest_lines(pin.source.parent / "manifest.sha256")
    problems = [Problem(f"{what}: {rel} ({where})", pin.manifest_label, lines.get(rel), hint)
                for what, rel in found[:SHOWN_PROBLEMS]]
    if len(found) > SHOWN_PROBLEMS:
        problems.append(Problem(f"… and {len(found) - SHOWN_PROBLEMS} more differences from the manifest ({where})",
                                pin.manifest_label, None, hint))
    raise LessonError.collect(problems)


# ---------------------------------------------------------------- extraction

def safe_extract(archive: Path, dest: Path, root_name: str) -> Path:
    """Extract ``archive`` into ``dest``, refusing anything that could leave the tree."""
    try:
        tf = tarfile.open(archive, "r:*")
    except tarfile.ReadError:
        raise LessonError(f"cannot open archive {archive.name}: not a tar archive (plain, gzip, bz2 or xz)",
                          hint="the archive is damaged; delete it and fetch it again") from None
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        raise LessonError(f"cannot open archive {archive.name}: {_first_line(exc)}",
                          hint="the archive is damaged; delete it and fetch it again") from None
    with tf:
        try:
            members = tf.getmembers()
        except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
            raise LessonError(f"archive {archive.name} is truncated or corrupt: {_first_line(exc)}",
                              hint="delete it and fetch it again") from None
        if not any(PurePosixPath(m.name).parts[:1] == (root_name,) for m in members):
            raise LessonError(f"archive {archive.name} has no {root_name}/ directory",
                              hint="this is not the pinned release archive")
        for m in members:
            name = m.name
            parts = PurePosixPath(name).parts
            if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
                raise LessonError(f"archive entry has an absolute path: {name}", hint="refusing to extract")
            if ".." in parts or "\\" in name:
                raise LessonError(f"archive entry escapes the tree: {name}", hint="refusing to extract")
            if m.issym() or m.islnk():
                raise LessonError(f"archive entry is a link: {name} -> {m.linkname}",
                                  hint="the pinned sdist has no links; refusing to extract")
            if not (m.isfile() or m.isdir()):
                raise LessonError(f"archive entry is not a file or directory: {name}",
                                  hint="refusing to extract")
            if parts and parts[0] != root_name:
                raise LessonError(f"archive entry outside {root_name}/: {name}", hint="refusing to extract")
        try:
            tf.extractall(dest, members=members, filter="data")
        except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
            raise LessonError(f"archive {archive.name} is truncated or corrupt: {_first_line(exc)}",
                              hint="delete it and fetch it again") from None
    return dest / root_name


def _first_line(exc: BaseException) -> str:
    lines = [l.strip() for l in str(exc).splitlines() if l.strip()]
    return lines[0].rstrip(":") if lines else type(exc).__name__


# ---------------------------------------------------------------- providers

def _from_env(pin: Pin, cache: Path) -> PinnedTree | None:
    src = os.environ.get("AUTOGRAD_SOURCE")
    if not src:
        return None
    root = Path(src)
    if not root.is_dir():
        raise LessonError(f"AUTOGRAD_SOURCE={src} is not a directory", path=src,
                          hint="point it at a checkout of the pinned autograd, or unset it")
    check_tree(root, pin, f"AUTOGRAD_SOURCE={src}")
    return PinnedTree(root.resolve(), "local checkout (AUTOGRAD_SOURCE)", pin)


def _cache_dir(pin: Pin, cache: Path) -> Path:
    return cache / "pin" / pin.commit


def _from_cache(pin: Pin, cache: Path) -> PinnedTree | None:
    root = _cache_dir(pin, cache)
    marker = root.parent / f"{pin.commit}.provider"
    if not root.is_dir():
        return None
    try:
        check_tree(root, pin)
    except LessonError:
        shutil.rmtree(root, ignore_errors=True)  # corrupted cache entry: rebuild it
        return None
    origin = marker.read_text(encoding="utf-8").strip() if marker.exists() else "unknown"
    return PinnedTree(root.resolve(), origin, pin, cached=True)


def _install(pin: Pin, cache: Path, staged: Path, origin: str) -> PinnedTree:
    check_tree(staged, pin, f"tree from {origin}")
    final = _cache_dir(pin, cache)
    final.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.replace(staged, final)
    except OSError:
        if not final.is_dir():  # another build won the race with an identical tree
            raise
        shutil.rmtree(staged, ignore_errors=True)
    marker = final.parent / f"{pin.commit}.provider"
    fd, tmp = tempfile.mkstemp(dir=final.parent, prefix=".tmp-provider-")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:  # atomic: a concurrent build never reads half of it
        fh.write(origin + "\n")
    os.replace(tmp, marker)
    return PinnedTree(final.resolve(), origin, pin)


def _from_git(pin: Pin, cache: Path) -> PinnedTree | None:
    remote = os.environ.get("LESSONKIT_GIT_REMOTE")
    if not remote:
        return None
    work = Path(tempfile.mkdtemp(prefix="clone-", dir=_staging(cache)))
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    try:
        for cmd in (["git", "init", "-q", str(work)],
                    ["git", "-C", str(work), "fetch", "-q", "--depth", "1", remote, pin.commit],
                    ["git", "-C", str(work), "-c", "advice.detachedHead=false", "checkout", "-q", "FETCH_HEAD"]):
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
            if r.returncode != 0:
                raise LessonError(f"git could not provide commit {pin.short} from {remote}: "
                                  f"{(r.stderr.strip().splitlines() or ['?'])[-1]}",
                                  hint="unset LESSONKIT_GIT_REMOTE to use the sdist from the package index")
        shutil.rmtree(work / ".git")
        return _install(pin, cache, work, f"git clone of {remote} at {pin.short}")
    except subprocess.TimeoutExpired:
        raise LessonError(f"git fetch from {remote} timed out",
                          hint="unset LESSONKIT_GIT_REMOTE to use the sdist") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _staging(cache: Path) -> Path:
    d = cache / "pin" / ".staging"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _fetch_sdist(pin: Pin, cache: Path) -> tuple[Path, str]:
    local = os.environ.get("LESSONKIT_SDIST")
    if local:
        return Path(local), f"local archive LESSONKIT_SDIST ({Path(local).name})"
    archive = cache / "pin" / pin.sdist_filename
    if archive.exists() and sha256_file(archive) == pin.sdist_sha256:
        return archive, f"sdist {pin.sdist_filename} from the Python package index"
    tmp = Path(tempfile.mkdtemp(prefix="dl-", dir=_staging(cache)))
    try:
        # --no-binary for this project only: with :all: pip also builds the sdist's build backend
        # from source to read its metadata (minutes on an empty cache instead of seconds)
        project = re.split(r"[=<>!~\[ ;]", pin.sdist_requirement, maxsplit=1)[0]
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", project,
               pin.sdist_requirement, "-d", str(tmp)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        got = tmp / pin.sdist_filename
        if r.returncode != 0 or not got.exists():
            last = (r.stderr.strip().splitlines() or ["no output"])[-1]
            raise LessonError(f"cannot download {pin.sdist_filename} from the package index: {last}",
                              path=pin.toml_label, line=pin.toml_line("requirement"),
                              hint="offline? set LESSONKIT_SDIST=/path/to/" + pin.sdist_filename +
                                   " or AUTOGRAD_SOURCE=/path/to/checkout")
        archive.parent.mkdir(parents=True, exist_ok=True)
        os.replace(got, archive)
    except subprocess.TimeoutExpired:
        raise LessonError(f"downloading {pin.sdist_filename} timed out",
                          path=pin.toml_label, line=pin.toml_line("requirement"),
                          hint="set LESSONKIT_SDIST=/path/to/" + pin.sdist_filename) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return archive, f"sdist {pin.sdist_filename} from the Python package index"


def _from_sdist(pin: Pin, cache: Path) -> PinnedTree:
    archive, origin = _fetch_sdist(pin, cache)
    if not archive.is_file():
        raise LessonError(f"archive not found: {archive}", path=str(archive),
                          hint="LESSONKIT_SDIST must name the file " + pin.sdist_filename)
    digest = sha256_file(archive)
    if digest != pin.sdist_sha256:
        if archive.parent == cache / "pin":
            archive.unlink(missing_ok=True)
        raise LessonError(f"{archive} has sha256 {digest[:16]}…, the pin expects {pin.sdist_sha256[:16]}…",
                          path=pin.toml_label, line=pin.toml_line("sha256"),
                          hint="this is not the pinned release archive; fetch it again from the package index")
    work = Path(tempfile.mkdtemp(prefix="x-", dir=_staging(cache)))
    staged = None
    try:
        try:
            tree = safe_extract(archive, work, pin.sdist_root)
        except LessonError as exc:
            raise exc.at(str(archive), None) from None
        (tree / "PKG-INFO").unlink(missing_ok=True)
        staged = Path(tempfile.mkdtemp(prefix="tree-", dir=_staging(cache)))
        staged.rmdir()
        os.replace(tree, staged)
        return _install(pin, cache, staged, origin)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if staged is not None:  # left only when the install failed: no partial entry in the cache
            shutil.rmtree(staged, ignore_errors=True)


PROVIDERS = (_from_env, _from_cache, _from_git)


def provide(pin: Pin, cache: Path) -> PinnedTree:
    try:
        for provider in PROVIDERS:
            tree = provider(pin, cache)
            if tree is not None:
                return tree
        return _from_sdist(pin, cache)
    except LessonError as exc:
        raise exc.at(pin.toml_label, None) from None  # every problem names a file
