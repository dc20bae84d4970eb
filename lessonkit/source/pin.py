"""The pinned upstream tree: its record (pin.toml), its manifest, and the check of a tree against
them, file by file. :mod:`lessonkit.source.providers` provides the tree's bytes.

Every value of pin.toml and the manifest is checked by :mod:`lessonkit.config.files` before it is used.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from lessonkit.config import files as config
from lessonkit.errors import LessonError, Problem
from lessonkit.util.fs import atomic_write

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
