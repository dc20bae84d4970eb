"""The release ``lessonkit init`` pins: its archive from the package index (or a local one), checked
against the sha256 the index lists and extracted without building or running anything, and what
its metadata says (its name as the archive spells it, the repository, the licence, what it needs
at run time)."""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass
from email.parser import HeaderParser
from importlib import metadata
from pathlib import Path

from lessonkit.config import files as config
from lessonkit.errors import LessonError
from lessonkit.source import fetch

normalise = fetch.normalise_name


@dataclass(frozen=True)
class Release:
    name: str  # as the requirement spells it
    version: str
    archive: Path
    sha256: str
    root: str  # the archive's top folder
    tree: Path  # extracted, PKG-INFO removed
    repo: str
    licence: str | None = None  # as the release's metadata states it (None: it states none)
    requires: tuple[str, ...] = ()  # the distributions it needs at run time (Requires-Dist without a marker)


def _from_index(name: str, version: str, dest: Path) -> Path:
    """The release archive of ``name==version`` from the package index: its sha256 taken from the
    index's listing and checked on the bytes as they arrive, before anything opens them."""
    try:
        listed = fetch.find_sdist(name, version)
    except LessonError as exc:
        raise LessonError(
            f"cannot find the release archive of {name}=={version} on the package index: {exc.problem.message}",
            path="--package",
            hint="is it a released version with a source archive (sdist)? offline? give one with --sdist PATH",
        ) from None
    if listed.sha256 is None:
        raise LessonError(
            f"{listed.page} lists {listed.filename} without its sha256, so its bytes cannot be checked",
            path="--package",
            hint="use an index that publishes hashes (PEP 503 #sha256= or PEP 691 hashes; PyPI does), "
            "or check the archive yourself and give it with --sdist PATH",
        )
    dest.mkdir(parents=True, exist_ok=True)
    try:
        return fetch.download_checked(listed, listed.sha256, dest)
    except LessonError as exc:
        if exc.code == fetch.HASH_MISMATCH:
            raise LessonError(
                f"{exc.problem.message}, the index lists {listed.sha256[:16]}… for {listed.filename}: "
                "the archive was not opened, unpacked or built",
                path="--package",
                hint="the index or the connection to it served other bytes; check PIP_INDEX_URL and pip.conf",
            ) from None
        raise LessonError(
            f"cannot download {listed.filename} from the package index: {exc.problem.message}",
            path="--package",
            hint="offline? give the release archive with --sdist PATH",
        ) from None


def acquire_release(name: str, version: str, work: Path, sdist: Path | None, repo: str | None) -> Release:
    if sdist is None:
        archive = _from_index(name, version, work / "dl")
    else:
        archive = sdist
        if not archive.is_file():
            raise LessonError(f"{archive} is not a file", path="--sdist", hint="give the path of a .tar.gz sdist")
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    try:
        root = fetch.archive_root(archive)
        info = fetch.read_member(archive, f"{root}/PKG-INFO") if root else None
        meta = HeaderParser().parsestr(info.decode("utf-8", "replace")) if info is not None else None
    except LessonError as exc:
        raise LessonError(
            f"cannot read {archive.name}: {exc.problem.message}", path="--sdist", hint="is it a .tar.gz or .zip sdist?"
        ) from None
    if not root or not root.lower().startswith((name.lower() + "-", normalise(name) + "-")):
        raise LessonError(
            f"{archive.name} does not hold a {name}-{version}/ folder", path="--package", hint="not a release archive"
        )
    tree = fetch.extract_sdist(archive, work, root)
    requires = _requires(meta, tree)
    return Release(name, version, archive, digest, root, tree, repo or _repo(meta, name), _licence(meta), requires)


def _requires(meta, tree: Path) -> tuple[str, ...]:
    """The distributions the release needs at run time, whatever the environment: its metadata's
    ``Requires-Dist`` (else ``[project] dependencies`` of its pyproject.toml) without a marker (an
    extra's, or one for some Pythons or platforms; what the package then imports unconditionally
    is checked by :func:`lessonkit.cli.layout.missing_imports`)."""
    values = list(meta.get_all("Requires-Dist") or []) if meta is not None else []
    if not values:
        try:
            with (tree / "pyproject.toml").open("rb") as f:
                deps = tomllib.load(f).get("project", {}).get("dependencies", [])
            values = [d for d in deps if isinstance(d, str)] if isinstance(deps, list) else []
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError, AttributeError):
            values = []
    names = []
    for value in values:
        requirement, _, marker = value.partition(";")
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
        if m and not marker.strip():
            names.append(m[1])
    return tuple(dict.fromkeys(names))


def not_installed(names: tuple[str, ...]) -> list[str]:
    """The distributions of ``names`` this environment lacks."""
    missing = []
    for name in names:
        try:
            metadata.distribution(name)
        except (metadata.PackageNotFoundError, ValueError):
            missing.append(name)
    return missing


def _licence(meta) -> str | None:
    """The licence the release's metadata states: ``License-Expression`` (an SPDX expression), else
    a one-line ``License``, else the last part of a ``License ::`` classifier; None: it states none."""
    if meta is None:
        return None
    expression = (meta.get("License-Expression") or "").strip()
    if expression:
        return expression
    text = (meta.get("License") or "").strip()
    if text and "\n" not in text and len(text) <= 80 and text.upper() != "UNKNOWN":
        return text
    for value in meta.get_all("Classifier") or []:
        parts = [part.strip() for part in value.split("::")]
        if parts[0] == "License" and len(parts) > 1 and parts[-1] not in ("OSI Approved", "Other/Proprietary License"):
            return parts[-1]
    return None


def _repo(meta, name: str) -> str:
    """The source repository the release's metadata names (Project-URL, Home-page), else its index page."""
    urls = []
    if meta is not None:
        for value in meta.get_all("Project-URL") or []:
            label, _, url = value.partition(",")
            urls.append((label.strip().lower(), url.strip()))
        if meta.get("Home-page"):
            urls.append(("homepage", meta["Home-page"].strip()))
    for preferred in ("source", "repository", "source code", "code", "homepage", "home"):
        for label, url in urls:
            if label == preferred and config.REPO.fullmatch(url.rstrip("/")):
                return url.rstrip("/")
    for _, url in urls:
        if re.match(r"https://(github\.com|gitlab\.com|codeberg\.org)/", url) and config.REPO.fullmatch(
            url.rstrip("/")
        ):
            return url.rstrip("/")
    return f"https://pypi.org/project/{normalise(name).replace('_', '-')}"
