"""Filesystem writes the tool is allowed to make: only strictly inside a directory it owns.

Every removal or overwrite of lessonkit goes through these helpers:

* :func:`owned_path` joins plain names onto an owned root and refuses anything that is
  not strictly inside it (``..``, absolute parts, separators, a symlink anywhere on the
  way, the root itself);
* :func:`remove_owned` removes such a path (a link is removed, never followed);
* :func:`atomic_write` writes a file by write-to-temporary + rename, so a reader (or a
  build killed half-way) never sees a partial file;
* :func:`clean_stale` drops leftovers of killed runs from a staging folder;
* :func:`read_regular` reads a file of the cache only when it is a regular file (never through a
  link, never waiting on a FIFO or a device).
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

from lessonkit.errors import LessonError

NAME = re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9_.+-]{0,199}$")  # a plain file name, no separator, not . or ..
STALE_SECONDS = 24 * 3600  # an unnamed staging leftover older than this is removed


class NotOwned(LessonError):
    """A path the tool would write or remove is not strictly inside a directory it owns."""


class NotRegular(OSError):
    """What :func:`read_regular` found is not a regular file (a FIFO, a device, a folder, a socket)."""


def read_regular(path: Path | str, limit: int | None = None) -> bytes:
    """The bytes of ``path`` when it is a regular file (of at most ``limit`` bytes). Opened without
    following a link (``O_NOFOLLOW``: a link is ``OSError``) and without blocking (``O_NONBLOCK``:
    a FIFO opens at once), then ``fstat``-ed: anything but a regular file raises :class:`NotRegular`
    before a byte is read. A missing file raises ``FileNotFoundError``."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(errno.EINVAL, "not a regular file", str(path))
        if limit is not None and st.st_size > limit:
            raise NotRegular(errno.EFBIG, f"larger than {limit} bytes", str(path))
        chunks = []
        size = 0
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            size += len(chunk)
            if limit is not None and size > limit:
                raise NotRegular(errno.EFBIG, f"larger than {limit} bytes", str(path))
        return b"".join(chunks)
    finally:
        os.close(fd)


def plain_name(name: object) -> bool:
    """``name`` is one plain file name: letters, digits, ``_ . + -``, and not ``.`` or ``..``."""
    return isinstance(name, str) and NAME.fullmatch(name) is not None and name not in (".", "..")


def owned_path(root: Path, *parts: str) -> Path:
    """``root/parts…``, refusing anything that is not strictly inside ``root``.

    Each part must be a plain name (see :func:`plain_name`); no existing component
    below ``root`` may be a symlink; the real path must be below the real root."""
    if not parts:
        raise NotOwned(
            f"refusing to touch the owned directory itself: {root}", hint="this is a lessonkit bug; please report it"
        )
    for part in parts:
        if not plain_name(part):
            raise NotOwned(
                f"refusing a path outside {root}: part {str(part)[:80]!r} is not a plain file name",
                hint="only names of letters, digits and _ . + - are used inside the cache",
            )
    real_root = Path(os.path.realpath(root))
    path = Path(root)
    for part in parts:
        path = path / part
        if path.is_symlink():
            raise NotOwned(
                f"refusing to follow a symlink inside {root}: {path}",
                hint="remove the link; lessonkit never writes through links",
            )
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


Signature = tuple[int, int, int]  # (size, mtime in ns, inode): a file seen unchanged since


def signature(st: os.stat_result) -> Signature:
    """What says a file is the one seen before (``lstat``/``stat`` result), short of reading it."""
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def atomic_write(path: Path, data: bytes, *, durable: bool = False) -> None:
    """Replace ``path`` with ``data`` in one step: readers see the old or the new file.

    ``durable``: fsync before the rename (for files under version control)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".tmp-{owner_tag()}-")
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
    """A new private folder in the owned ``root``, named for this process (:func:`owner_tag`) so
    that :func:`clean_stale` can tell leftovers of dead processes from live ones."""
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{owner_tag()}-", dir=root))


# ---------------------------------------------------------------- owners of leftovers
#
# A temporary name carries its owner: ``<pid>.<start time>-ns<PID namespace>`` (``<pid>.<start>``
# first, so that the sweepers of older versions, which read only that, still see a live owner). A leftover is
# removed only when its name has exactly this format and its owner is provably gone as seen
# from this PID namespace (same namespace; the pid absent, or running another process).

OWNER = r"([1-9][0-9]{0,9})\.([0-9]{1,20})-ns([1-9][0-9]{0,19})"
OWNED_NAME = re.compile(rf"^\.?[a-z]+-{OWNER}-[a-z0-9_]{{8}}$")  # mkdtemp/mkstemp add 8 characters


def _start_time(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


_NS: list = []


def pid_namespace() -> str | None:
    """The inode of our PID namespace, if /proc shows this namespace (else None: nothing is provable)."""
    if not _NS or _NS[0][0] != os.getpid():  # a forked child asks again
        try:
            ns = str(os.stat("/proc/self/ns/pid").st_ino) if os.readlink("/proc/self") == str(os.getpid()) else None
        except OSError:
            ns = None
        _NS[:] = [(os.getpid(), ns)]
    return _NS[0][1]


_TAGS: dict[int, str] = {}


def owner_tag(pid: int | None = None) -> str:
    """``<pid>.<start time>-ns<PID namespace>`` of a process (default: this one)."""
    pid = os.getpid() if pid is None else pid
    if pid not in _TAGS:
        _TAGS[pid] = f"{pid}.{_start_time(pid) or 0}-ns{pid_namespace() or 0}"
    return _TAGS[pid]


def owner_dead(pid: str, start: str, ns: str) -> bool:
    """The owner named by a tag is provably gone: our PID namespace, and its pid absent or
    running another process (another start time). Anything unsure counts as alive."""
    ours = pid_namespace()
    if ours is None or ns != ours or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass
    except (OverflowError, OSError):
        return False
    now = _start_time(int(pid))
    return now is not None and now != start


def clean_stale(root: Path, now: float | None = None, prefix: str = "") -> list[str]:
    """Remove leftovers of killed runs in the folder ``root`` (only names starting with ``prefix``):
    entries whose name has the exact owner format (:data:`OWNED_NAME`) and whose owner is provably
    dead, and unrecognised entries older than a day. Links are removed, never followed. Returns the names."""
    if not root.is_dir() or root.is_symlink():
        return []
    now = time.time() if now is None else now
    removed = []
    try:
        names = sorted(e for e in os.listdir(root) if e.startswith(prefix))
    except OSError:
        return []
    for entry in names:
        m = OWNED_NAME.match(entry)
        try:
            if m:
                stale = owner_dead(*m.groups())
            else:
                stale = now - (root / entry).lstat().st_mtime > STALE_SECONDS
            if stale and plain_name(entry) and remove_owned(root, entry):
                removed.append(entry)
        except OSError:
            continue  # another build removed it meanwhile, or it cannot be removed: harmless
    return removed
