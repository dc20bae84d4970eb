"""The providers of the pinned tree's bytes, and :func:`provide`, which tries them.

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

The public provider API (also used by :mod:`lessonkit.repin` to acquire another tree):
:func:`staging` (a private folder per process in an owned cache area), :func:`cached_tree` and
:func:`install_tree`; :func:`lessonkit.source.fetch.git_checkout` and
:func:`~lessonkit.source.fetch.extract_sdist` fetch and unpack.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from lessonkit.config import environment
from lessonkit.config import files as config
from lessonkit.errors import LessonError
from lessonkit.source.fetch import HASH_MISMATCH, TIMED_OUT, extract_sdist, git_checkout, index_download
from lessonkit.source.pin import Pin, PinnedTree, check_tree, load_pin, sha256_file
from lessonkit.util.fs import NotOwned, clean_stale, owned_path, remove_owned, staging_dir
from lessonkit.util.store import Store

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


if __name__ == "__main__":  # python -S -m lessonkit.source.providers ROOT: provide the pinned tree, nothing else
    try:
        prefetch(Path(sys.argv[1] if len(sys.argv) > 1 else "."))
    except LessonError as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
