"""Filesystem writes the tool is allowed to make: only strictly inside a directory it owns.

Every removal or overwrite of lessonkit goes through these helpers:

* :func:`owned_path` joins plain names onto an owned root and refuses anything that is
  not strictly inside it (``..``, absolute parts, separators, a symlink anywhere on the
  way, the root itself);
* :func:`remove_owned` removes such a path (a link is removed, never followed);
* :func:`atomic_write` writes a file by write-to-temporary + rename, so a reader (or a
  build killed half-way) never sees a partial file;
* :func:`clean_stale` drops leftovers of killed runs from a staging folder.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import tempfile
import time
from pathlib import Path

from .errors import LessonError

NAME = re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9_.+-]{0,199}$")  # a plain file name, no separator, not . or ..
STALE_SECONDS = 24 * 3600  # an unnamed staging leftover older than this is removed


class NotOwned(LessonError):
    """A path the tool would write or remove is not strictly inside a directory it owns."""


def plain_name(name: object) -> bool:
    """``name`` is one plain file name: letters, digits, ``_ . + -``, and not ``.`` or ``..``."""
    return isinstance(name, str) and NAME.fullmatch(name) is not None and name not in (".", "..")


def owned_path(root: Path, *parts: str) -> Path:
    """``root/parts…``, refusing anything that is not strictly inside ``root``.

    Each part must be a plain name (see :func:`plain_name`); no existing component
    below ``root`` may be a symlink; the real path must be below the real root."""
    if not parts:
        raise NotOwned(f"refusing to touch the owned directory itself: {root}",
                       hint="this is a lessonkit bug; please report it")
    for part in parts:
        if not plain_name(part):
            raise NotOwned(f"refusing a path outside {root}: part {str(part)[:80]!r} is not a plain file name",
                           hint="only names of letters, digits and _ . + - are used inside the cache")
    real_root = Path(os.path.realpath(root))
    path = Path(root)
    for part in parts:
        path = path / part
        if path.is_symlink():
            raise NotOwned(f"refusing to follow a symlink inside {root}: {path}",
                           hint="remove the link; lessonkit never writes through links")
    real = Path(os.path.realpath(path))
    if real == real_root or real_root not in real.parents:
        raise NotOwned(f"refusing a path outside {root}: {path}", hint="this is a lessonkit bug; please report it")
    return path


def remove_owned(root: Path, *parts: str) -> bool:
    """Remove ``root/parts…`` (file, link or folder) if it is owned; True if something was removed.

    A link is removed itself, never followed. Errors other than "already gone" propagate."""
    path = Path(root).joinpath(*parts)
    if path.is_symlink():  # the link itself is inside root: removing it touches nothing outside
        if not all(plain_name(p) for p in parts):
            raise NotOwned(f"refusing a path outside {root}: {path}", hint="this is a lessonkit bug")
        path.unlink()
        return True
    path = owned_path(root, *parts)
    try:
        st = path.lstat()
    except FileNotFoundError:
        return False
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path)
    else:
        path.unlink()
    return True


def atomic_write(path: Path, data: bytes, *, durable: bool = False) -> None:
    """Replace ``path`` with ``data`` in one step: readers see the old or the new file.

    ``durable``: fsync before the rename (for files under version control)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".tmp-{os.getpid()}-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        if path.is_dir() and not path.is_symlink():
            raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def staging_dir(root: Path, prefix: str) -> Path:
    """A new private folder in the owned ``root``, named with this process id so that
    :func:`clean_stale` can tell leftovers of dead processes from live ones."""
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=root))


_PID = re.compile(r"^\.?[a-z]+-(\d+)-")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale(root: Path, now: float | None = None, prefix: str = "") -> list[str]:
    """Remove leftovers of killed runs in the folder ``root`` (only names starting with ``prefix``):
    entries named for a process that no longer runs, and unrecognised entries older than a day.
    Returns the names."""
    if not root.is_dir() or root.is_symlink():
        return []
    now = time.time() if now is None else now
    removed = []
    for entry in sorted(e for e in os.listdir(root) if e.startswith(prefix)):
        m = _PID.match(entry)
        try:
            if m:
                stale = int(m[1]) != os.getpid() and not _alive(int(m[1]))
            else:
                stale = now - (root / entry).lstat().st_mtime > STALE_SECONDS
            if stale and plain_name(entry) and remove_owned(root, entry):
                removed.append(entry)
        except OSError:
            continue  # another build removed it meanwhile, or it cannot be removed: harmless
    return removed
