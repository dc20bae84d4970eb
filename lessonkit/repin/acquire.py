"""Acquire the target tree of a repin with the pin's own providers (:mod:`lessonkit.source.providers`).

TARGET is a released version (its sdist from the package index, cached under
``<cache>/repin/sdist`` with its sha256), a full 40-digit commit (fetched from
``LESSONKIT_GIT_REMOTE``, cached under ``<cache>/repin/git``) or a local checkout.
Every temporary folder is a pid-named private folder of ``<cache>/repin/.staging``;
every write in the cache is atomic and strictly inside it (:mod:`lessonkit.util.fs`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from lessonkit.config import environment
from lessonkit.errors import LessonError
from lessonkit.source import fetch, providers
from lessonkit.source.pin import Pin, manifest_digest, sha256_file, tree_manifest
from lessonkit.util.fs import atomic_write, owned_path, remove_owned, staging_dir

WHERE = "repin"  # the location operator errors are reported at
AREA = "repin"  # the cache area of repin: <cache>/repin
VERSION = re.compile(r"^\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?$")
FULL_SHA = re.compile(r"^[0-9a-fA-F]{40}$")
SHORT_SHA = re.compile(r"^[0-9a-fA-F]{7,39}$")


def err(message: str, hint: str | None = None) -> LessonError:
    return LessonError(message, path=WHERE, hint=hint)


@dataclass
class Target:
    kind: str  # "sdist", "git" or "path"
    spec: str  # TARGET as given
    root: Path  # the tree (the folder that holds the pinned package)
    version: str | None
    commit: str | None  # full id, only when known
    commit_note: str  # where the commit comes from, or why it is unknown
    origin: str  # where the bytes came from (shown, and recorded in the build cache)
    manifest: dict[str, str]
    sdist: dict[str, str] | None = None  # filename, sha256, requirement, root
    name: str = ""  # the upstream project's name, as the pin's requirement spells it

    @property
    def digest(self) -> str:
        return manifest_digest(self.manifest)

    @property
    def label(self) -> str:
        c = f" ({self.commit[:7]})" if self.commit else ""
        return f"{self.name} {self.version or '?'}{c}"


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


def fetch_sdist(version: str, cache: Path, name: str) -> tuple[Path, str]:
    """``name==version`` from the package index, cached under ``<cache>/repin/sdist``.

    The archive is found on the index's simple page, whose listing gives its sha256 (PEP 503
    ``#sha256=`` or PEP 691 ``hashes``); its bytes are checked against that digest as they arrive,
    before anything opens them, and nothing of it is ever built. Returns the archive and its
    sha256. A cached archive is reused only while its bytes still have the sha256 recorded
    (atomically, beside it) when it was downloaded."""
    store = owned_path(cache, AREA, "sdist")
    for ext in fetch.SDIST_EXTS:
        archive = owned_path(cache, AREA, "sdist", f"{name}-{version}{ext}")
        side = archive.with_name(archive.name + ".sha256")
        if archive.is_file() and side.is_file():
            digest = sha256_file(archive)
            if side.read_text(encoding="utf-8").strip() == digest:
                return archive, digest
            remove_owned(store, archive.name)  # damaged since it was fetched: fetch again
    try:
        listed = fetch.find_sdist(name, version)
    except LessonError as exc:
        if exc.code == fetch.TIMED_OUT:
            raise err(
                f"reading the package index for {name}=={version} timed out",
                hint="offline? give a local checkout path as TARGET instead",
            ) from None
        raise err(
            f"cannot find the sdist of {name}=={version} on the package index: {exc.problem.message}",
            hint="is it a released version? offline? give a local checkout path as TARGET instead",
        ) from None
    if listed.sha256 is None:
        raise err(
            f"{listed.page} lists {listed.filename} without its sha256, so its bytes cannot be checked",
            hint="use an index that publishes hashes (PEP 503 #sha256= or PEP 691 hashes; PyPI does), "
            "or give a local checkout path as TARGET",
        )
    area = providers.staging(cache, AREA)
    tmp = staging_dir(area, "dl-")
    try:
        try:
            got = fetch.download_checked(listed, listed.sha256, tmp)
        except LessonError as exc:
            if exc.code == fetch.HASH_MISMATCH:
                raise err(
                    f"{exc.problem.message}, the index lists {listed.sha256[:16]}… for {listed.filename}: "
                    "the archive was not opened, unpacked or built",
                    hint="the index or the connection to it served other bytes; check PIP_INDEX_URL and pip.conf",
                ) from None
            if exc.code == fetch.TIMED_OUT:
                raise err(
                    f"downloading {listed.filename} timed out",
                    hint="offline? give a local checkout path as TARGET instead",
                ) from None
            raise err(
                f"cannot download {listed.filename} from the package index: {exc.problem.message}",
                hint="offline? give a local checkout path as TARGET instead",
            ) from None
        digest = listed.sha256
        ext = next(e for e in fetch.SDIST_EXTS if listed.filename.lower().endswith(e))
        store.mkdir(parents=True, exist_ok=True)
        final = owned_path(cache, AREA, "sdist", listed.filename)  # the index may spell the version differently
        asked = owned_path(cache, AREA, "sdist", f"{name}-{version}{ext}")
        for path in {final, asked}:  # remember the spelling asked for, too (1.8 → 1.8.0)
            atomic_write(path, got.read_bytes())
            atomic_write(path.with_name(path.name + ".sha256"), (digest + "\n").encode())
        return final, digest
    finally:
        remove_owned(area, tmp.name)


def _archive_root(archive: Path, name: str) -> str:
    """The root folder of a release archive (``name-1.8.0``)."""
    try:
        head = fetch.archive_root(archive)
    except LessonError as exc:
        raise err(exc.problem.message, hint=f"delete {archive} and run again to fetch it anew") from None
    if not head.lower().startswith((f"{name.lower()}-", fetch.normalise_name(name) + "-")):
        raise err(f"{archive.name} does not hold a {name}-X/ folder", hint=f"this is not a {name} release archive")
    return head


def _ext(archive: Path) -> str:
    return next((e for e in fetch.SDIST_EXTS if archive.name.lower().endswith(e)), ".tar.gz")


def _sdist_target(spec: str, cache: Path, name: str) -> Target:
    archive, digest = fetch_sdist(spec, cache, name)
    root_name = _archive_root(archive, name)
    version = root_name.rsplit("-", 1)[1]
    tree = fetch.extract_sdist(archive, providers.staging(cache, AREA), root_name)
    sdist = {
        "filename": archive.name if archive.name.startswith(root_name + ".") else root_name + _ext(archive),
        "sha256": digest,
        "requirement": f"{name}=={version}",
        "root": root_name,
    }
    return Target(
        "sdist",
        spec,
        tree,
        version,
        None,
        "",
        f"sdist {sdist['filename']} from the Python package index",
        tree_manifest(tree),
        sdist,
        name=name,
    )


def _git_target(spec: str, cache: Path, name: str) -> Target:
    commit = spec.lower()
    remote = environment.git_remote()  # checked: a URL or a folder, never an option
    if not remote:
        raise err(
            f"`{spec}` is a commit id, but LESSONKIT_GIT_REMOTE is not set",
            hint=f"set LESSONKIT_GIT_REMOTE=<url or path of a {name} repository>, "
            "or give a released version or a local checkout path",
        )
    final = owned_path(cache, AREA, "git", commit)
    marker = owned_path(cache, AREA, "git", f"{commit}.json")
    if final.is_dir() and marker.is_file():
        try:
            info = json.loads(marker.read_text(encoding="utf-8"))
            manifest = tree_manifest(final)
            if info.get("digest") == manifest_digest(manifest):
                return Target(
                    "git",
                    spec,
                    final,
                    tree_version(final),
                    commit,
                    "the fetched commit",
                    info["origin"],
                    manifest,
                    name=name,
                )
        except (ValueError, KeyError, OSError):
            pass
    remove_owned(cache, AREA, "git", commit)  # strictly inside the cache (commit: 40 hex digits)
    area = providers.staging(cache, AREA)
    work = staging_dir(area, "clone-")
    try:
        try:
            fetch.git_checkout(remote, commit, work)
        except LessonError as exc:
            raise err(
                f"git could not fetch {commit[:7]} from {remote}: {exc.problem.message}",
                hint="check the commit id and LESSONKIT_GIT_REMOTE, or give a released version",
            ) from None
        final.parent.mkdir(parents=True, exist_ok=True)
        os.replace(work, final)
    finally:
        remove_owned(area, work.name)
    origin = f"git clone of {remote} at {commit[:7]}"
    manifest = tree_manifest(final)
    record = {"origin": origin, "digest": manifest_digest(manifest)}
    atomic_write(marker, (json.dumps(record) + "\n").encode())
    return Target("git", spec, final, tree_version(final), commit, "the fetched commit", origin, manifest, name=name)


def _path_target(spec: str, name: str) -> Target:
    root = Path(spec).expanduser()
    if not root.is_dir():
        raise err(
            f"`{spec}` is not a directory",
            hint=f"give a released version (1.9.0), a 40-digit commit or the path of a local {name} checkout",
        )
    root = root.resolve()
    return Target(
        "path",
        spec,
        root,
        tree_version(root),
        None,
        "",
        f"local checkout {root}",
        tree_manifest(root),
        name=name,
    )


def classify_target(spec: str) -> str:
    s = spec.strip()
    if not s:
        raise err("no TARGET given", hint="for example: lessonkit repin 1.9.0")
    if "/" in s or os.sep in s or s.startswith(("~", ".")):
        return "path"
    if FULL_SHA.match(s):
        return "git"
    if VERSION.match(s):
        return "sdist"
    if SHORT_SHA.match(s):
        raise err(
            f"`{s}` looks like an abbreviated commit id",
            hint="give the full 40-digit id (git fetches commits by their full id)",
        )
    if Path(s).is_dir():
        return "path"
    raise err(
        f"`{s}` is neither a released version, a 40-digit commit nor a directory",
        hint="for example: 1.9.0, f53a21734fdfae636f448744d9097d8d35a643a0 or ../checkout",
    )


def packages(manifest: dict[str, str]) -> list[str]:
    """The top-level packages of a tree (``x/__init__.py`` in its manifest)."""
    return sorted(p.split("/", 1)[0] for p in manifest if p.count("/") == 1 and p.endswith("/__init__.py"))


@contextlib.contextmanager
def acquire(spec: str, cache: Path, pin: Pin, commit: str | None = None):
    """Yield the target tree of ``spec``; temporary extractions are removed afterwards."""
    kind = classify_target(spec)
    if commit is not None and not FULL_SHA.match(commit.strip()):
        raise err(
            f"`--commit {commit}` is not a full 40-digit commit id", hint="permalinks and the pin name the full id"
        )
    commit = commit.strip().lower() if commit else None
    target = None
    try:
        if kind == "sdist":
            target = _sdist_target(spec.strip(), cache, pin.name)
        elif kind == "git":
            target = _git_target(spec.strip(), cache, pin.name)
        else:
            target = _path_target(spec, pin.name)
        for package in packages(pin.manifest):
            if not (target.root / package / "__init__.py").is_file():
                raise err(
                    f"{target.origin} has no {package}/__init__.py", hint=f"TARGET must be a {pin.name} source tree"
                )
        if target.commit and commit and commit != target.commit:
            raise err(
                f"`--commit {commit[:12]}` contradicts the fetched commit {target.commit[:12]}",
                hint="leave out --commit for a commit target",
            )
        if not target.commit:
            if commit:
                target.commit = commit
                target.commit_note = "given with --commit; not checked against the tree"
            elif target.manifest == pin.manifest and pin.commit_known:
                target.commit = pin.commit
                target.commit_note = "the tree is byte-identical to the current pin's"
            else:
                target.commit_note = (
                    "an sdist does not record its commit; --commit records one (else --apply pins the "
                    "archive's sha256 alone)"
                    if kind == "sdist"
                    else "a local checkout; --commit records one"
                )
        yield target
    finally:
        if target is not None and target.kind == "sdist":  # the extraction: <staging>/x-<pid>-…/<root>
            remove_owned(target.root.parent.parent, target.root.parent.name)
