"""Boxes of builds that are gone: how a box is named for its owner, which live processes carry
a box's mark, and the sweeper that removes what a build killed with ``kill -9`` left behind
(folders, pids cgroups, processes). Re-exported by :mod:`lessonkit.run.box.sandbox`."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import stat
import tempfile
import time
from pathlib import Path

from lessonkit.util.fs import OWNER, _start_time, owner_dead, owner_tag

PREFIX = "lessonkit-exp-"
MARK = "LESSONKIT_BOX"  # environment variable naming the box; finds survivors after a crash
PIDS_CGROUP = Path("/sys/fs/cgroup/pids")


# ---------------------------------------------------------------- owners, survivors, leftovers
#
# A box is named for its owner: ``<pid>.<start time>-ns<pid namespace>`` of the build process.
# The sweeper removes only what carries exactly this format, belongs to our uid, was made in
# our PID namespace by a process that is provably gone, and has not changed for SWEEP_AGE
# seconds. Anything else (older formats, other tools, builds in other namespaces) is left alone.

SWEEP_AGE = 60.0  # seconds a dead build's leftover must be untouched before it is removed
_TAG = OWNER
MARK_FORMAT = re.compile(rf"^{_TAG}-([1-9][0-9]{{0,9}})$")
DIR_FORMAT = re.compile(rf"^{re.escape(PREFIX)}{_TAG}-([1-9][0-9]{{0,9}})-[a-z0-9_]{{8}}$")
CGROUP_FORMAT = re.compile(rf"^lessonkit-{_TAG}-([1-9][0-9]{{0,9}})$")


def owner() -> str:
    """This process, as boxes name it (pid, start time, PID namespace: a reused pid is not us)."""
    return owner_tag()


_owner_dead = owner_dead


def _owner_alive(tag: str) -> bool:
    """Kept for callers of round 1: True unless ``tag`` is our exact format with a dead owner."""
    m = re.fullmatch(_TAG, tag)
    return not (m and _owner_dead(*m.groups()))


def _uid_of_process(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def marked_processes(prefix: str = "", exact: bool = False) -> list[int]:
    """Live processes whose environment carries ``LESSONKIT_BOX=<prefix>…`` (``exact``: that value)."""
    needle = f"\0{MARK}={prefix}".encode() + (b"\0" if exact else b"")
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as fh:
                env = b"\0" + fh.read() + b"\0"
        except OSError:
            continue
        if needle in env and _start_time(int(entry.name)) is not None:
            out.append(int(entry.name))
    return out


def _untouched_for(path: Path, seconds: float) -> bool:
    now = time.time()
    for p in (path, path / "io", path / "work"):
        try:
            if now - os.lstat(p).st_mtime < seconds:
                return False
        except FileNotFoundError:
            continue
        except OSError:
            return False
    return True


def _dead_owners_dirs(base: Path, fmt, uid: int, old_enough) -> list[Path]:
    """Folders in ``base`` (never through a link) whose exact-format name names a provably dead
    owner, of our uid, and that ``old_enough(path, stat)`` lets go."""
    try:
        entries = list(os.scandir(base))
    except OSError:
        return []
    out = []
    for e in entries:
        m = fmt.fullmatch(e.name)
        if not m:
            continue
        try:
            st = os.lstat(e.path)
        except OSError:
            continue
        path = Path(e.path)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == uid and _owner_dead(*m.groups()[:3]) and old_enough(path, st):
            out.append(path)
    return out


def sweep_leftovers(age: float | None = None) -> list[str]:
    """Remove what boxes of builds that died (kill -9) left: folders, cgroups, processes.
    Only exact-format names of our uid (processes: or the jailed box user of a root build) whose
    owner is provably dead (see ``_owner_dead``);
    folders and cgroups also untouched for ``age`` seconds (default SWEEP_AGE). Returns what went."""
    age = SWEEP_AGE if age is None else age
    removed = []
    uid = os.getuid()
    for path in _dead_owners_dirs(Path(tempfile.gettempdir()), DIR_FORMAT, uid, lambda p, st: _untouched_for(p, age)):
        _rmtree(path)
        removed.append(str(path))
    if PIDS_CGROUP.is_dir() and not PIDS_CGROUP.is_symlink():
        for path in _dead_owners_dirs(PIDS_CGROUP, CGROUP_FORMAT, uid, lambda p, st: time.time() - st.st_mtime >= age):
            _remove_cgroup(path)
            removed.append(str(path))
    for pid in marked_processes():
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes()
            value = env.split(f"{MARK}=".encode(), 1)[1].split(b"\0", 1)[0].decode("ascii")
        except (OSError, IndexError, UnicodeDecodeError):
            continue
        m = MARK_FORMAT.fullmatch(value)
        # a jailed box of a root build runs as host nobody (box.jail.HOST_BOX_ID)
        ours = (uid, 65534) if uid == 0 else (uid,)
        if m and _uid_of_process(pid) in ours and _owner_dead(*m.groups()[:3]):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
            removed.append(f"pid {pid}")
    return removed


def _rmtree(path: Path) -> None:
    """Remove a box folder; never follows a link (a link is removed, not what it points to)."""
    for _ in range(20):
        try:
            if stat.S_ISLNK(os.lstat(path).st_mode):
                os.unlink(path)
                return
        except FileNotFoundError:
            return
        except OSError:
            pass
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.lexists(path):
            return
        with contextlib.suppress(OSError):  # a read-only folder left by the experiment
            for d, dirs, _files in os.walk(path):  # does not descend into links
                for name in dirs:
                    p = os.path.join(d, name)
                    if not os.path.islink(p):
                        os.chmod(p, 0o700)
            os.chmod(path, 0o700)
        time.sleep(0.01)


def _make_cgroup(mark: str, nproc: int) -> Path | None:
    """A pids cgroup for one box, where the cgroup folder is writable (None elsewhere)."""
    from lessonkit.config.environment import sandbox_mode

    if sandbox_mode() == "copy" or not os.access(PIDS_CGROUP, os.W_OK):
        return None
    d = PIDS_CGROUP / f"lessonkit-{mark}"
    try:
        d.mkdir()
        (d / "pids.max").write_text(str(nproc))
        return d
    except OSError:
        with contextlib.suppress(OSError):
            d.rmdir()
        return None


def _remove_cgroup(d: Path) -> None:
    for _ in range(50):
        try:
            for pid in (d / "cgroup.procs").read_text().split():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(int(pid), signal.SIGKILL)
            d.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)
