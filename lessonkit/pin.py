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
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .errors import LessonError

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

    def permalink(self, file: str, start: int, end: int) -> str:
        anchor = f"#L{start}" if start == end else f"#L{start}-L{end}"
        return f"{self.repo}/blob/{self.commit}/{file}{anchor}"


@dataclass(frozen=True)
class PinnedTree:
    root: Path
    provider: str  # human-readable: which provider produced the bytes
    pin: Pin

    def read(self, rel: str) -> bytes:
        return (self.root / rel).read_bytes()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


def read_manifest(path: Path) -> dict[str, str]:
    manifest = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        try:
            digest, rel = line.split("  ", 1)
        except ValueError:
            raise LessonError(f"malformed manifest line: {line!r}", path=str(path), line=n,
                              hint="expected '<sha256>  <path>'") from None
        manifest[rel] = digest
    return manifest


def load_pin(sourcemap: Path) -> Pin:
    toml_path = sourcemap / "pin.toml"
    try:
        data = tomllib.loads(toml_path.read_text(encoding="utf-8"))
        up, sd = data["upstream"], data["sdist"]
        return Pin(repo=up["repo"], commit=up["commit"], version=up["version"],
                   sdist_filename=sd["filename"], sdist_sha256=sd["sha256"],
                   sdist_requirement=sd["requirement"], sdist_root=sd["root"],
                   manifest=read_manifest(sourcemap / "manifest.sha256"), source=toml_path)
    except (OSError, KeyError, tomllib.TOMLDecodeError) as exc:
        raise LessonError(f"cannot read the pin: {exc}", path=str(toml_path),
                          hint="sourcemap/pin.toml and sourcemap/manifest.sha256 must exist") from None


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


def check_tree(root: Path, pin: Pin) -> None:
    """Every manifest file present, regular, inside the tree and with its sha256; no extras."""
    problems = []
    real_root = root.resolve()
    present = _tree_files(root)
    for rel, digest in sorted(pin.manifest.items()):
        p = root / rel
        if rel not in present:
            problems.append(f"missing: {rel}")
        elif p.is_symlink() or real_root not in p.resolve().parents:
            problems.append(f"not a regular file inside the tree (link): {rel}")
        elif not p.is_file():
            problems.append(f"not a regular file: {rel}")
        elif sha256_file(p) != digest:
            problems.append(f"content differs from the manifest: {rel}")
    extras = sorted(set(present) - set(pin.manifest) - MANIFEST_IGNORED)
    problems += [f"not in the manifest: {rel}" for rel in extras]
    if problems:
        shown = "; ".join(problems[:8]) + (f"; … {len(problems) - 8} more" if len(problems) > 8 else "")
        raise LessonError(f"pinned tree at {root} does not match sourcemap/manifest.sha256: {shown}",
                          path=str(pin.source.parent / "manifest.sha256"),
                          hint="the excerpts would not be verbatim; supply the pinned autograd "
                               f"{pin.version} bytes (see README, 'The pinned source')")


# ---------------------------------------------------------------- extraction

def safe_extract(archive: Path, dest: Path, root_name: str) -> Path:
    """Extract ``archive`` into ``dest``, refusing anything that could leave the tree."""
    try:
        tf = tarfile.open(archive, "r:*")
    except (tarfile.TarError, OSError) as exc:
        raise LessonError(f"cannot open archive {archive.name}: {exc}",
                          hint="the archive is damaged; delete it and fetch it again") from None
    with tf:
        try:
            members = tf.getmembers()
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise LessonError(f"archive {archive.name} is truncated or corrupt: {exc}",
                              hint="delete it and fetch it again") from None
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
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise LessonError(f"archive {archive.name} is truncated or corrupt: {exc}",
                              hint="delete it and fetch it again") from None
    return dest / root_name


# ---------------------------------------------------------------- providers

def _from_env(pin: Pin, cache: Path) -> PinnedTree | None:
    src = os.environ.get("AUTOGRAD_SOURCE")
    if not src:
        return None
    root = Path(src)
    if not root.is_dir():
        raise LessonError(f"AUTOGRAD_SOURCE={src} is not a directory",
                          hint="point it at a checkout of the pinned autograd, or unset it")
    check_tree(root, pin)
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
    return PinnedTree(root.resolve(), f"build cache (first fetched from: {origin})", pin)


def _install(pin: Pin, cache: Path, staged: Path, origin: str) -> PinnedTree:
    check_tree(staged, pin)
    final = _cache_dir(pin, cache)
    final.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.replace(staged, final)
    except OSError:
        if not final.is_dir():  # another build won the race with an identical tree
            raise
        shutil.rmtree(staged, ignore_errors=True)
    (final.parent / f"{pin.commit}.provider").write_text(origin + "\n", encoding="utf-8")
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
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
               pin.sdist_requirement, "-d", str(tmp)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        got = tmp / pin.sdist_filename
        if r.returncode != 0 or not got.exists():
            last = (r.stderr.strip().splitlines() or ["no output"])[-1]
            raise LessonError(f"cannot download {pin.sdist_filename} from the package index: {last}",
                              hint="offline? set LESSONKIT_SDIST=/path/to/" + pin.sdist_filename +
                                   " or AUTOGRAD_SOURCE=/path/to/checkout")
        archive.parent.mkdir(parents=True, exist_ok=True)
        os.replace(got, archive)
    except subprocess.TimeoutExpired:
        raise LessonError(f"downloading {pin.sdist_filename} timed out",
                          hint="set LESSONKIT_SDIST=/path/to/" + pin.sdist_filename) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return archive, f"sdist {pin.sdist_filename} from the Python package index"


def _from_sdist(pin: Pin, cache: Path) -> PinnedTree:
    archive, origin = _fetch_sdist(pin, cache)
    if not archive.is_file():
        raise LessonError(f"archive not found: {archive}", hint="check LESSONKIT_SDIST")
    digest = sha256_file(archive)
    if digest != pin.sdist_sha256:
        if archive.parent == cache / "pin":
            archive.unlink(missing_ok=True)
        raise LessonError(f"{archive.name} has sha256 {digest[:16]}…, the pin expects {pin.sdist_sha256[:16]}…",
                          path=str(pin.source),
                          hint="this is not the pinned release archive; fetch it again from the package index")
    work = Path(tempfile.mkdtemp(prefix="x-", dir=_staging(cache)))
    try:
        tree = safe_extract(archive, work, pin.sdist_root)
        (tree / "PKG-INFO").unlink(missing_ok=True)
        staged = Path(tempfile.mkdtemp(prefix="tree-", dir=_staging(cache)))
        staged.rmdir()
        os.replace(tree, staged)
        return _install(pin, cache, staged, origin)
    finally:
        shutil.rmtree(work, ignore_errors=True)


PROVIDERS = (_from_env, _from_cache, _from_git)


def provide(pin: Pin, cache: Path) -> PinnedTree:
    for provider in PROVIDERS:
        tree = provider(pin, cache)
        if tree is not None:
            return tree
    return _from_sdist(pin, cache)
