"""The pinned tree every experiment's box holds, read once and checked against the manifest.

:class:`CheckedTree` keeps the checked copy in memory and writes it into a box: into every box
without a jail, or once into the *common copy* that every jailed box mounts read-only at
``pinned/`` (see ``lessonkit.run.box.sandbox``). It names the files for the boxes' keys (by the
manifest's sha256, without reading them), re-checks the tree on disk and turns what changed into
located problems at the manifest's lines. The project's own files are the runner's (by box)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from pathlib import Path

from lessonkit.run.box import sandbox
from lessonkit.errors import Problem
from lessonkit.util.fs import signature
from lessonkit.run.jobs import _shared_files
from lessonkit.config.site import pinned_match


class CheckedTree:
    """The pinned files a box holds, checked (``manifest``: posix path → sha256; without it the
    tree as found). ``box_pinned`` (``site.toml [experiments] pinned``) limits which pinned files are copied;
    the others are watched by their stat."""

    def __init__(
        self,
        pinned_root: Path,
        manifest: dict[str, str] | None,
        box_pinned: tuple[str, ...],
        manifest_label: str,
        manifest_lines: dict[str, int] | None,
    ):
        self.pinned_root = Path(pinned_root)
        self._manifest = manifest
        self._box_pinned = box_pinned
        self._label = manifest_label
        self._lines = manifest_lines or {}
        self._lock = threading.RLock()
        self._tree: dict[str, bytes] | None = None
        self._digests: dict[str, str] = {}
        self._others: dict[str, tuple[int, int, int]] = {}  # pinned files not in the boxes: their stat
        self._layout: tuple[list[str], list[tuple[str, bytes]]] | None = None
        self._box_files: tuple[tuple[str, str], ...] | None = None
        self.tampered: list[str] = []  # pinned files that changed while experiments ran
        self._common: sandbox.Box | None = None  # see common_copy
        self._leases = 0

    def in_box(self, rel: str) -> bool:
        return not self._box_pinned or any(pinned_match(entry, rel) for entry in self._box_pinned)

    def files(self) -> dict[str, bytes]:
        """The pinned files the boxes hold, read and checked once."""
        with self._lock:
            if self._tree is None:
                tree, digests = {}, {}
                names = (
                    sorted(self._manifest)
                    if self._manifest is not None
                    else [rel for rel, _ in _shared_files((self.pinned_root,))]
                )
                for rel in names:
                    rel_in_tree = rel.split("/", 1)[1] if self._manifest is None else rel
                    if not self.in_box(rel_in_tree):  # not copied: watched by its stat (recheck)
                        self._others[rel_in_tree] = signature((self.pinned_root / rel_in_tree).lstat())
                        continue
                    data = (self.pinned_root / rel_in_tree).read_bytes()
                    digest = hashlib.sha256(data).hexdigest()
                    if self._manifest is not None and digest != self._manifest[rel]:
                        self.tampered.append(rel)
                    tree[rel_in_tree], digests[rel_in_tree] = data, digest
                self._tree, self._digests = tree, digests
            return self._tree

    def box_files(self) -> tuple[tuple[str, str], ...]:
        """``(pinned/<path>, sha256)`` of every file a box holds, for its key: the manifest's
        digests (the bytes are read, and checked against them, when a box is first filled)."""
        with self._lock:
            if self._box_files is None:
                if self._manifest is not None:
                    named = {rel: d for rel, d in self._manifest.items() if self.in_box(rel)}
                else:
                    self.files()
                    named = dict(self._digests)
                self._box_files = tuple(sorted((f"pinned/{rel}", d) for rel, d in named.items()))
            return self._box_files

    def layout(self) -> tuple[list[str], list[tuple[str, bytes]]]:
        """The pinned copy relative to the box folder: the folders to make (each after its parent)
        and the files."""
        with self._lock:
            if self._layout is None:
                files = [(f"pinned/{rel}", data) for rel, data in self.files().items()]
                dirs = {"pinned"}
                for rel, _ in files:
                    parts = rel.split("/")[:-1]
                    dirs.update("/".join(parts[:n]) for n in range(2, len(parts) + 1))
                self._layout = (sorted(dirs, key=lambda d: (d.count("/"), d)), files)
            return self._layout

    def write_into(self, box: sandbox.Box) -> None:
        """Write the pinned copy into ``box``. Folders are made one level at a time (never
        ``parents=True``): once a cancel has removed the box, writing fails instead of
        re-creating it."""
        dirs, files = self.layout()
        base = str(box.dir)
        for d in dirs:
            if sandbox.BOXES.cancelled:
                raise sandbox.Cancelled()
            with contextlib.suppress(FileExistsError):
                os.mkdir(os.path.join(base, d))
        for rel, data in files:
            if sandbox.BOXES.cancelled:
                raise sandbox.Cancelled()
            with open(os.path.join(base, rel), "xb") as f:  # a new file in a new folder, never followed
                f.write(data)

    # -- the common copy: with namespaces, every box mounts one read-only copy

    def lease(self) -> None:
        """Someone will run boxes (a batch, or one run): keep the common copy until released."""
        with self._lock:
            self._leases += 1

    def release(self) -> None:
        with self._lock:
            self._leases -= 1
            common = self._common if self._leases <= 0 else None
            if common is not None:
                self._common, self._leases = None, 0
        if common is not None:
            sandbox.BOXES.close(common)

    def common_copy(self) -> sandbox.Box:
        """The layout, written once into a box folder of its own while leases are held; each box
        mounts it read-only instead of receiving its own copy. Removed with the last lease."""
        with self._lock:
            if self._common is None or not self._common.dir.is_dir():
                box = sandbox.BOXES.open()
                try:
                    self.write_into(box)
                except BaseException:
                    sandbox.BOXES.close(box)
                    raise
                self._common = box
            return self._common

    # -- the tree on disk

    def recheck(self) -> list[str]:
        """Pinned files that differ from the checked copy now (cheap: sizes, then sha256; files
        that no box holds: size, mtime and inode)."""
        tree = self.files()
        changed = []
        for rel, digest in self._digests.items():
            p = self.pinned_root / rel
            try:
                if (
                    p.is_symlink()
                    or p.stat().st_size != len(tree[rel])
                    or hashlib.sha256(p.read_bytes()).hexdigest() != digest
                ):
                    changed.append(rel)
            except OSError:
                changed.append(rel)
        for rel, seen in self._others.items():
            p = self.pinned_root / rel
            try:
                if p.is_symlink() or signature(p.lstat()) != seen:
                    changed.append(rel)
            except OSError:
                changed.append(rel)
        with self._lock:
            for rel in changed:
                if rel not in self.tampered:
                    self.tampered.append(rel)
        return changed

    def problems(self) -> list[Problem]:
        """One located problem per pinned file found changed so far."""
        return [
            Problem(
                f"the pinned tree changed while experiments ran: {rel}",
                self._label,
                self._lines.get(rel),
                "an experiment wrote into it; nothing computed from it was cached — "
                "find the script that writes there, then rebuild",
            )
            for rel in sorted(self.tampered)
        ]
