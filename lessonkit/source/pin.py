"""The pinned upstream tree: its record, its manifest and the providers of its bytes.

Providers are tried in order; the first that yields a tree wins, and every tree
is checked file by file against the manifest before anything reads it:

1. ``LESSONKIT_SOURCE`` (or the legacy variable named by ``[provider] source_env``
   in pin.toml): a local checkout named by the environment;
2. the build cache (``<cache>/pin/<commit>``), filled by a previous provider;
3. a git clone at the pinned commit, when ``LESSONKIT_GIT_REMOTE`` names a remote;
4. the sdist: ``LESSONKIT_SDIST`` (a local archive), else the cached download, else the
   bytes read from the package index's simple API (:mod:`lessonkit.source.fetch`); its sha256
   is checked before anything opens it, then it is extracted safely (never built).

Every value of pin.toml, the manifest and the environment is checked by
:mod:`lessonkit.config.files` before it is used, and every write or removal in the cache
goes through :mod:`lessonkit.util.fs` (strictly inside the cache, never through a link).
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from lessonkit.config import environment
from lessonkit.config import files as config
from lessonkit.errors import LessonError, Problem
from lessonkit.source.fetch import DOWNLOAD_FAILED as DOWNLOAD_FAILED
from lessonkit.source.fetch import HASH_MISMATCH, TIMED_OUT, extract_sdist, git_checkout, index_download
from lessonkit.source.fetch import safe_extract as safe_extract
from lessonkit.util.fs import NotOwned, atomic_write, clean_stale, owned_path, remove_owned, staging_dir
from lessonkit.util.store import Store

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
    source_env: str | None = None  # legacy variable naming a local checkout ([provider] source_env)
    # False: pin.toml names no commit (a release archive records none); `commit` is then the first 40
    # hex digits of the archive's sha256, the tree's id, and there are no links to the upstream repository
    commit_known: bool = True

    @property
    def name(self) -> str:
        """The upstream project's name, as its requirement spells it."""
        return self.sdist_requirement.partition("==")[0]

    @property
    def short(self) -> str:
        return self.commit[:7]

    @property
    def manifest_digest(self) -> str:
        return manifest_digest(self.manifest)

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
        return next((n for (_, k), n in config.toml_key_lines(text).items() if k == key), None)

    def permalink(self, file: str, start: int, end: int) -> str | None:
        """The lines on the upstream repository at the pinned commit (None: no commit is known)."""
        if not self.commit_known:
            return None
        anchor = f"#L{start}" if start == end else f"#L{start}-L{end}"
        return f"{self.repo}/blob/{self.commit}/{file}{anchor}"


@dataclass(frozen=True)
class PinnedTree:
    root: Path
    provider: str  # human-readable: where the bytes came from (stable across cached builds)
    pin: Pin
    cached: bool = False  # taken from the build cache this time
    # the pin's [sdist] sha256 was compared with the archive's own in this build, or with the one
    # recorded when this cached tree was extracted from it (False: no archive at hand, see check_sdist)
    sdist_checked: bool = False

    def read(self, rel: str) -> bytes:
        return (self.root / rel).read_bytes()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


DIGEST = re.compile(r"^[0-9a-f]{64}$")


def manifest_digest(manifest: dict[str, str]) -> str:
    """One sha256 for a whole tree: of its manifest's sorted ``digest  path`` lines."""
    h = hashlib.sha256()
    for path, digest in sorted(manifest.items()):
        h.update(f"{digest}  {path}\n".encode())
    return h.hexdigest()


def tree_manifest(root: Path) -> dict[str, str]:
    """sha256 of every file of a tree, as :func:`write_manifest` records it."""
    return {rel: sha256_file(p) for rel, p in sorted(tree_files(root).items()) if rel not in MANIFEST_IGNORED}


def manifest_lines(path: Path) -> dict[str, int]:
    """path -> line number of its entry in the manifest file (to locate problems)."""
    try:
        return config.read_manifest(path, str(path))[1]
    except LessonError:
        return {}


def read_manifest(path: Path, label: str | None = None) -> dict[str, str]:
    """The manifest, every line checked (see :func:`lessonkit.config.files.read_manifest`)."""
    return config.read_manifest(path, label or str(path))[0]


def load_pin(sourcemap: Path) -> Pin:
    toml_path = sourcemap / "pin.toml"
    fields = config.load_pin_fields(toml_path, f"{sourcemap.name}/pin.toml")
    source_env = fields.pop("source_env", None)
    commit = fields.get("commit")
    if commit is None and fields["sha256"] == "none":
        raise LessonError(
            "[upstream] commit is missing, and [sdist] sha256 is \"none\": nothing identifies the pinned tree",
            path=f"{sourcemap.name}/pin.toml",
            hint="add `commit = \"<40 hex digits>\"` under [upstream], or pin a release archive's sha256",
        )
    manifest = read_manifest(sourcemap / "manifest.sha256", f"{sourcemap.name}/manifest.sha256")
    return Pin(
        repo=fields["repo"],
        commit=commit or fields["sha256"][:40],
        commit_known=commit is not None,
        version=fields["version"],
        sdist_filename=fields["filename"],
        sdist_sha256=fields["sha256"],
        sdist_requirement=fields["requirement"],
        sdist_root=fields["root"],
        manifest=manifest,
        source=toml_path,
        source_env=source_env,
    )


def write_manifest(tree: Path, out: Path) -> int:
    lines = [f"{digest}  {rel}" for rel, digest in tree_manifest(tree).items()]
    atomic_write(out, ("\n".join(lines) + "\n").encode("utf-8"), durable=True)
    return len(lines)


def tree_files(root: Path) -> dict[str, Path]:
    files = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_DIRS)
        for name in filenames:
            p = Path(dirpath) / name
            files[p.relative_to(root).as_posix()] = p
    return files


def check_file(root: Path, rel: str, pin: Pin, present: dict[str, Path] | None = None) -> str | None:
    """What is wrong with the manifest file ``rel`` of the tree at ``root``, or None.

    ``present`` is the tree's file list (:func:`tree_files`, which does not descend
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


BYTECODE = re.compile(r"(^|/)__pycache__/|\.py[co]$")


def check_tree(root: Path, pin: Pin, where: str | None = None) -> None:
    """Every manifest file present, regular, inside the tree and with its sha256; no extras.

    Raises one :class:`LessonError` with one problem per file, located at the file's
    line in the manifest (``sourcemap/manifest.sha256:N``). Python bytecode caches
    (``__pycache__``), which running Python on a checkout writes, are one line with
    the command that removes them."""
    present = tree_files(root)
    found = [(what, rel) for rel in sorted(pin.manifest) if (what := check_file(root, rel, pin, present))]
    extras = sorted(set(present) - set(pin.manifest) - MANIFEST_IGNORED)
    bytecode = [rel for rel in extras if BYTECODE.search(rel)]
    found += [("not in the manifest", rel) for rel in extras if rel not in bytecode]
    if not found and not bytecode:
        return
    where = where or f"pinned tree at {root}"
    hint = (
        "the excerpts would not be verbatim; supply the pinned "
        f"{pin.name} {pin.version} bytes (see the engine guide, 'The pin')"
    )
    lines = manifest_lines(pin.source.parent / "manifest.sha256")
    problems = [
        Problem(f"{what}: {rel} ({where})", pin.manifest_label, lines.get(rel), hint)
        for what, rel in found[:SHOWN_PROBLEMS]
    ]
    if len(found) > SHOWN_PROBLEMS:
        problems.append(
            Problem(
                f"… and {len(found) - SHOWN_PROBLEMS} more differences from the manifest ({where})",
                pin.manifest_label,
                None,
                hint,
            )
        )
    if bytecode:
        problems.append(
            Problem(
                f"{len(bytecode)} Python bytecode file(s) not in the manifest, e.g. {bytecode[0]} ({where})",
                pin.manifest_label,
                None,
                f"delete them: find {root} -name __pycache__ -prune -exec rm -rf {{}} + "
                "(set PYTHONDONTWRITEBYTECODE=1 to keep the checkout clean)",
            )
        )
    raise LessonError.collect(problems)


# ---------------------------------------------------------------- providers
#
# The public provider API (also used by ``lessonkit.repin`` to acquire another tree):
# :func:`staging` (a private folder per process in an owned cache area), :func:`git_checkout`,
# :func:`extract_sdist` (these two in :mod:`lessonkit.source.fetch`, re-exported
# here with :func:`safe_extract`), :func:`cached_tree` and :func:`install_tree`.

MARKERS = "pin"  # store kind of the provider markers (<cache>/pin/<commit>.provider)


def staging(cache: Path, area: str = "pin") -> Path:
    """``<cache>/<area>/.staging``, where running processes keep private folders named by
    their process id (:func:`lessonkit.util.fs.staging_dir`); leftovers of killed runs are removed."""
    d = owned_path(cache, area, ".staging")
    if d.is_dir():
        clean_stale(d)
    d.mkdir(parents=True, exist_ok=True)
    return d


def _from_env(pin: Pin, cache: Path) -> PinnedTree | None:
    found = environment.source_dir(pin.source_env)
    if found is None:
        return None
    name, root = found
    check_tree(root, pin, f"{name}={root}")
    return PinnedTree(root, f"local checkout ({name})", pin, sdist_checked=check_sdist(pin, cache))


def _sdist_key(pin: Pin) -> str:
    return f"{pin.commit}.sdist"


def _sdist_mismatch(pin: Pin, digest: str, what: str) -> LessonError:
    return LessonError(
        f"[sdist] sha256 {pin.sdist_sha256[:16]}… is not the sha256 of {what} ({digest[:16]}…)",
        path=pin.toml_label,
        line=pin.toml_line("sha256"),
        hint="give the release archive's own sha256 (the one its package index lists); the build publishes this value",
    )


def check_sdist(pin: Pin, cache: Path, recorded: str | None = None) -> bool:
    """Compare pin.toml's ``[sdist] sha256`` with the archive's own, which the build publishes:
    with ``recorded`` (what a cached tree's marker says its archive had), else with the archive at
    hand (``LESSONKIT_SDIST``, or the one in the cache). A mismatch is a located error; True when
    compared, False when no archive is at hand (or the pin names none)."""
    if pin.sdist_sha256 == "none":
        return False
    if recorded is not None:
        if recorded != pin.sdist_sha256:
            raise _sdist_mismatch(pin, recorded, "the archive the cached tree was extracted from")
        return True
    local = environment.sdist_path()
    archive = local if local is not None else cache / "pin" / pin.sdist_filename
    if archive.is_symlink() and local is None or not archive.is_file():
        return False
    digest = sha256_file(archive)
    if digest != pin.sdist_sha256:
        raise _sdist_mismatch(pin, digest, str(archive) if local is not None else f"the cached {pin.sdist_filename}")
    return True


def _cache_dir(pin: Pin, cache: Path) -> Path:
    return owned_path(cache, "pin", pin.commit)


def _marker_key(pin: Pin) -> str:
    return f"{pin.commit}.provider"


def cached_tree(pin: Pin, cache: Path) -> PinnedTree | None:
    """The pinned tree from the build cache, checked against the manifest; None when absent or
    damaged (a damaged entry is removed)."""
    root = _cache_dir(pin, cache)
    if not root.is_dir():
        return None
    origin = Store(cache, MARKERS).get(_marker_key(pin))
    try:
        if origin is None or origin != environment.display_text(origin) or not origin.strip():
            raise LessonError("the provider record of the cached tree is missing or damaged")
        check_tree(root, pin)
    except LessonError:
        remove_owned(cache, "pin", pin.commit)  # damaged cache entry: provide it again
        return None
    # The tree is right (the manifest says so); the sha256 the pin publishes is checked too.
    checked = check_sdist(pin, cache, Store(cache, MARKERS).get(_sdist_key(pin)))
    return PinnedTree(root.resolve(), origin, pin, cached=True, sdist_checked=checked)


def install_tree(pin: Pin, cache: Path, staged: Path, origin: str, archive_sha256: str | None = None) -> PinnedTree:
    """Move the staged tree (checked against the pin's manifest) into the build cache;
    ``archive_sha256``: the checked sha256 of the archive it was extracted from (recorded)."""
    check_tree(staged, pin, f"tree from {origin}")
    final = _cache_dir(pin, cache)
    origin = environment.display_text(origin)
    try:
        os.replace(staged, final)
    except OSError:
        if not final.is_dir():  # another build won the race with an identical tree
            raise
        remove_owned(staged.parent, staged.name)
    Store(cache, MARKERS).put(_marker_key(pin), origin)  # atomic, with a digest: checked on every use
    if archive_sha256 is not None:
        Store(cache, MARKERS).put(_sdist_key(pin), archive_sha256)
        return PinnedTree(final.resolve(), origin, pin, sdist_checked=True)
    return PinnedTree(final.resolve(), origin, pin, sdist_checked=check_sdist(pin, cache))


def _from_git(pin: Pin, cache: Path) -> PinnedTree | None:
    remote = environment.git_remote()
    if remote is None:
        return None
    area = staging(cache)
    work = staging_dir(area, "clone-")
    try:
        try:
            git_checkout(remote, pin.commit, work)
        except LessonError as exc:
            if exc.code == TIMED_OUT:
                raise LessonError(
                    f"git fetch from {remote} timed out", hint="unset LESSONKIT_GIT_REMOTE to use the sdist"
                ) from None
            raise LessonError(
                f"git could not provide commit {pin.short} from {remote}: {exc.problem.message}",
                hint="unset LESSONKIT_GIT_REMOTE to use the sdist from the package index",
            ) from None
        return install_tree(pin, cache, work, f"git clone of {remote} at {pin.short}")
    finally:
        remove_owned(area, work.name)


def _fetch_sdist(pin: Pin, cache: Path) -> tuple[Path, str]:
    local = environment.sdist_path()
    if local is not None:
        return local, f"local archive LESSONKIT_SDIST ({environment.display_text(local.name, 100)})"
    archive = owned_path(cache, "pin", pin.sdist_filename)
    if archive.is_file() and sha256_file(archive) == pin.sdist_sha256:
        return archive, f"sdist {pin.sdist_filename} from the Python package index"
    area = staging(cache)
    tmp = staging_dir(area, "dl-")
    offline = (
        "offline? set LESSONKIT_SDIST=/path/to/"
        + pin.sdist_filename
        + f" or {pin.source_env or config.SOURCE_ENV}=/path/to/checkout"
    )
    try:
        try:  # bytes only, hashed as they arrive: nothing of the archive runs or is opened before
            got = index_download(pin.name, pin.sdist_filename, pin.sdist_sha256, tmp)
        except LessonError as exc:
            if exc.code == HASH_MISMATCH:
                raise LessonError(
                    f"{exc.problem.message}, the pin expects {pin.sdist_sha256[:16]}…: "
                    "the archive was not opened, unpacked or built",
                    path=pin.toml_label,
                    line=pin.toml_line("sha256"),
                    hint="this is not the pinned release archive: check the index pip is configured with "
                    "(PIP_INDEX_URL, pip.conf), or set LESSONKIT_SDIST=/path/to/" + pin.sdist_filename,
                ) from None
            if exc.code == TIMED_OUT:
                raise LessonError(
                    f"downloading {pin.sdist_filename} timed out",
                    path=pin.toml_label,
                    line=pin.toml_line("requirement"),
                    hint="set LESSONKIT_SDIST=/path/to/" + pin.sdist_filename,
                ) from None
            raise LessonError(
                f"cannot download {pin.sdist_filename} from the package index: {exc.problem.message}",
                path=pin.toml_label,
                line=pin.toml_line("requirement"),
                hint=offline,
            ) from None
        os.replace(got, archive)
    finally:
        remove_owned(area, tmp.name)
    return archive, f"sdist {pin.sdist_filename} from the Python package index"


def _from_sdist(pin: Pin, cache: Path) -> PinnedTree:
    archive, origin = _fetch_sdist(pin, cache)
    digest = sha256_file(archive)
    if digest != pin.sdist_sha256:
        if archive.parent == cache / "pin":
            remove_owned(cache, "pin", archive.name)
        raise LessonError(
            f"{archive} has sha256 {digest[:16]}…, the pin expects {pin.sdist_sha256[:16]}…",
            path=pin.toml_label,
            line=pin.toml_line("sha256"),
            hint="this is not the pinned release archive; fetch it again from the package index",
        )
    area = staging(cache)
    tree = staged = None
    try:
        try:
            tree = extract_sdist(archive, area, pin.sdist_root)
        except LessonError as exc:
            raise exc.at(str(archive), None) from None
        staged = staging_dir(area, "tree-")
        staged.rmdir()
        os.replace(tree, staged)
        return install_tree(pin, cache, staged, origin, archive_sha256=digest)
    finally:
        for d in (tree, staged):  # left only when the install failed: no partial entry in the cache
            if d is not None:
                remove_owned(area, d.relative_to(area).parts[0])


PROVIDERS = (_from_env, cached_tree, _from_git)


def provide(pin: Pin, cache: Path) -> PinnedTree:
    try:
        if (cache / "pin" / ".staging").is_dir():
            clean_stale(owned_path(cache, "pin", ".staging"))  # leftovers of killed runs
        for provider in PROVIDERS:
            tree = provider(pin, cache)
            if tree is not None:
                return tree
        return _from_sdist(pin, cache)
    except NotOwned as exc:
        where = "LESSONKIT_CACHE" if environment.env("LESSONKIT_CACHE") else str(cache)
        raise LessonError(exc.problem.message, path=where, hint=exc.problem.hint) from None
    except LessonError as exc:
        raise exc.at(pin.toml_label, None) from None  # every problem names a file
    except OSError as exc:
        raise LessonError(
            f"cannot provide the pinned tree in the cache {cache}: {exc.strerror or exc}",
            path="LESSONKIT_CACHE" if environment.env("LESSONKIT_CACHE") else pin.toml_label,
            hint="the pinned tree needs a writable cache once (or set LESSONKIT_SOURCE to a checkout)",
        ) from None


def prefetch(root: Path) -> PinnedTree:
    """Provide the pinned tree of the project at ``root`` into its build cache. Standard library
    only (this module's imports): it runs before anything else is installed (``lessonkit.cli.prefill``,
    which ``noxfile.py`` starts while the lock installs, provides the tree the same way)."""
    root = Path(root)
    return provide(load_pin(root / "sourcemap"), environment.cache_dir(root))


if __name__ == "__main__":  # python -S -m lessonkit.source.pin ROOT: provide the pinned tree, nothing else
    try:
        prefetch(Path(sys.argv[1] if len(sys.argv) > 1 else "."))
    except LessonError as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
