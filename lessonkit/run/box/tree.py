"""The pinned tree every experiment's box holds, read once and checked against the manifest.

:class:`CheckedTree` keeps the checked copy in memory and writes it into a box: into every box
without a jail, or once into the *common copy* that every jailed box mounts read-only at
``pinned/`` (see ``lessonkit.run.box.sandbox``). It names the files for the boxes' keys (by the
manifest's sha256, without reading them), re-checks the tree on disk and turns what changed into
located problems at the manifest's lines. The project's own files are the runner's (by box)."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import marshal
import os
import subprocess
import sys
import threading
from pathlib import Path

from lessonkit.config.site import pinned_match
from lessonkit.errors import Problem
from lessonkit.run.box import sandbox
from lessonkit.util.fs import signature

SKIPPED = {"__pycache__", ".pytest_cache", ".git"}  # folders never copied into a box

# The bytecode of pinned modules, by (sha256 of the source, its path in a jail); None where
# compiling failed or warned (the box then compiles that module itself, and says what it says).
_BYTECODE: dict[tuple[str, str], bytes | None] = {}
_BYTECODE_LIMIT = 4096  # entries; emptied when full (a repin or a test suite meets many trees)


# Compiles what it reads on stdin (a marshalled list of (path, source)) and writes a marshalled
# list of the code objects (None where compiling failed or gave a warning, under -W error).
_COMPILER = """import marshal, sys
out = []
for path, data in marshal.load(sys.stdin.buffer):
    try:
        out.append(marshal.dumps(compile(data, path, "exec", dont_inherit=True, optimize=0)))
    except (SyntaxError, ValueError, Warning):
        out.append(None)
sys.stdout.buffer.write(marshal.dumps(out))
"""


def checked_bytecode(sources: list[tuple[str, str, bytes]]) -> dict[tuple[str, str], bytes | None]:
    """Checked-hash ``.pyc`` files (PEP 552) of ``sources``, ``(sha256, path, source)`` each, by
    ``(sha256, path)``: the interpreter that imports one hashes the source again and compiles that
    instead where the two differ. None for a module whose compiling fails or warns (its box then
    compiles it itself and shows what that says, as without bytecode). Compiled by this
    interpreter in a process of its own (``-W error``: the warning filters of a build's threads
    are left alone), at optimisation level 0 (the boxes' scripts run without ``-O``); memoised
    for the process, so that each serve rebuild does not compile the tree again."""
    wanted = [(d, p, data) for d, p, data in sources if (d, p) not in _BYTECODE]
    if wanted:
        codes: list[bytes | None] = [None] * len(wanted)  # no bytecode: each box compiles what it imports
        try:
            run = subprocess.run(
                [sys.executable, "-I", "-S", "-B", "-W", "error", "-c", _COMPILER],
                input=marshal.dumps([(p, data) for _, p, data in wanted]),
                capture_output=True,
                check=False,
                timeout=120,
            )
            if run.returncode == 0:
                codes = marshal.loads(run.stdout)
        except (OSError, subprocess.TimeoutExpired, ValueError, EOFError, TypeError):
            pass
        if len(_BYTECODE) + len(wanted) > _BYTECODE_LIMIT:
            _BYTECODE.clear()
        for (digest, path, data), code in zip(wanted, codes, strict=True):
            _BYTECODE[(digest, path)] = (
                None
                if code is None
                else importlib.util.MAGIC_NUMBER
                + (0b11).to_bytes(4, "little")  # hash-based, check the source
                + importlib.util.source_hash(data)
                + code
            )
    return {(d, p): _BYTECODE.get((d, p)) for d, p, _ in sources}


def _write_tree(base: str, dirs, files) -> None:
    """Make ``dirs`` (relative, parents first) under ``base``, then write ``files`` ((relative
    path, bytes)) as new files. Folders are made one level at a time (never ``parents=True``):
    once a cancel has removed the box, writing fails instead of re-creating it."""
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
                    else [rel for rel, _ in shared_files((self.pinned_root,))]
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
        """Write the pinned copy into ``box`` (see :func:`_write_tree`)."""
        _write_tree(str(box.dir), *self.layout())

    def write_bytecode(self, box: sandbox.Box, in_jail: str) -> None:
        """The checked-hash bytecode of the copy's modules, into ``box.bytecode``, laid out as
        in a bytecode folder (``PYTHONPYCACHEPREFIX``) for the copy's path in a jail,
        ``in_jail`` (``/lessonkit-box/pinned``): the boxes mount it there, read-only. Made by this
        process from the checked bytes, never read from a folder on disk; a box's interpreter
        checks each file against the source it imports (see :func:`checked_bytecode`)."""
        suffix = f".{sys.implementation.cache_tag}.pyc"
        os.mkdir(box.bytecode)
        modules = [
            (self._digests[rel], f"{in_jail}/{rel}", data) for rel, data in self.files().items() if rel.endswith(".py")
        ]
        compiled = checked_bytecode(modules)
        dirs: dict[str, None] = {}  # in order, parents first
        files: list[tuple[str, bytes]] = []
        for digest, path, _ in modules:
            pyc = compiled[(digest, path)]
            if pyc is None:
                continue
            rel = path[len(in_jail) + 1 :]
            parts = rel.split("/")
            for n in range(1, len(parts)):
                dirs.setdefault("/".join(parts[:n]))
            files.append((rel[: -len(".py")] + suffix, pyc))
        _write_tree(str(box.bytecode), list(dirs), files)

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
                    self.write_bytecode(box, f"{sandbox.jails.BOX}/pinned")
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


def shared_files(dirs: tuple[Path, ...]) -> list[tuple[str, Path]]:
    """Every file of the shared folders (relative name, path), as copied into each box."""
    out = []
    for top in dirs:
        for d, subdirs, files in os.walk(top):
            subdirs[:] = sorted(s for s in subdirs if s not in SKIPPED)
            for name in sorted(files):
                p = Path(d) / name
                if p.is_file() and not p.is_symlink() and not name.endswith((".pyc", ".pyo")):
                    out.append((f"{top.name}/{p.relative_to(top).as_posix()}", p))
    return out
