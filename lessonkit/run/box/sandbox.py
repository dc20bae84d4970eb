"""Experiments in a box: a jail, checked read-only copies, limits, and no survivors.

Every experiment runs in its own folder ``box-<n>`` inside its process's folder of boxes,
``lessonkit-exp-<owner>-…`` under the system's temporary directory::

    <box>/work                 the working directory, $HOME and $TMPDIR (in a jail: the script,
                               copied into the box's own bounded tmpfs at its start)
    <box>/pinned/              the checked pinned copy (in a jail: the common copy, mounted)
    <box>/project/experiments  the project files the script may read (its key names each), and the
    <box>/project/<folder>     other folders site.toml names ([repository] teaching)
    <box>/project/.lessonkit   lessonkit's record helper, lessonkit_record.py (on the PYTHONPATH)
    <box>/io/                  stdout, stderr, the record file (outside work/; in a jail the
                               record file alone is in the box), the launcher's channel

What the box is specified by, and keyed by, is a :class:`lessonkit.run.box.spec.BoxSpec`; the
jail it runs in (bubblewrap, lessonkit's own namespaces, or none) and what that jail shows are
in :mod:`lessonkit.run.box.jail`; the launcher is ``_boot.py``. With a jail the box folder is
``/lessonkit-box`` inside a read-only root that holds only the interpreter, the copies and the
box itself; the script runs as an unprivileged user under a PID-1 init whose end kills every
process of the box. Without one (no user namespaces: one warning per process) the box falls
back to the copies and a subreaper launcher. What builds that died left behind is swept by
:mod:`lessonkit.run.box.sweep`.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from lessonkit.errors import LessonError
from lessonkit.run.box import fastexit
from lessonkit.run.box import jail as jails
from lessonkit.run.box.spec import BoxSpec

# Moved to lessonkit/run/box/sweep.py; importable from here as before.
from lessonkit.run.box.sweep import CGROUP_FORMAT as CGROUP_FORMAT
from lessonkit.run.box.sweep import DIR_FORMAT as DIR_FORMAT
from lessonkit.run.box.sweep import MARK, PREFIX, _make_cgroup, _remove_cgroup, _rmtree, marked_processes, owner
from lessonkit.run.box.sweep import MARK_FORMAT as MARK_FORMAT
from lessonkit.run.box.sweep import PIDS_CGROUP as PIDS_CGROUP
from lessonkit.run.box.sweep import SWEEP_AGE as SWEEP_AGE
from lessonkit.run.box.sweep import _owner_alive as _owner_alive
from lessonkit.run.box.sweep import sweep_leftovers as sweep_leftovers
from lessonkit.util.fs import _start_time

# Not under "mkdocs": a warning that only costs time must not fail `mkdocs build --strict`.
log = logging.getLogger("lessonkit.run.box.sandbox")

GiB, MiB = 1 << 30, 1 << 20
DEFAULT_MEMORY = 2 * GiB  # address space of the script (RLIMIT_AS); `Memory:` changes it per block
MAX_MEMORY = 64 * GiB
MIN_MEMORY = 256 * MiB
NPROC = 512  # processes per box (RLIMIT_NPROC for non-root users, pids cgroup where writable)
BOOT = jails.BOOT
BOX_FAILED = 125
MEMORY = re.compile(r"^([0-9]{1,7}(?:\.[0-9]{1,6})?)\s*(M|MB|MiB|G|GB|GiB)$")  # bounded before float()


# ---------------------------------------------------------------- the `Memory:` field


def parse_memory(value: str) -> int:
    """``512M``, ``1.5 GiB``, ``3G`` → bytes (binary units); LessonError when not a size."""
    m = MEMORY.match(value.strip())
    if not m:
        raise LessonError(
            f"`Memory: {value}` is not a size",
            hint="for example `Memory: 3 GiB` or `Memory: 512 MiB`; "
            f"without it the limit is {DEFAULT_MEMORY // GiB} GiB",
        )
    n = int(float(m[1]) * (GiB if m[2].startswith("G") else MiB))
    if not MIN_MEMORY <= n <= MAX_MEMORY:
        raise LessonError(
            f"`Memory: {value}` is outside {MIN_MEMORY // MiB} MiB … {MAX_MEMORY // GiB} GiB",
            hint=f"without it the limit is {DEFAULT_MEMORY // GiB} GiB",
        )
    return n


def memory_of(block) -> int:
    """The memory limit of an experiment block (located error for a bad value)."""
    value = block.get("Memory")
    if value is None:
        return DEFAULT_MEMORY
    try:
        return parse_memory(value)
    except LessonError as exc:
        raise exc.at(block.path, block.line_of("Memory")) from None


def show_size(n: int) -> str:
    return f"{n / GiB:g} GiB" if n >= GiB else f"{n / MiB:g} MiB"


# ---------------------------------------------------------------- output

_VISIBLE = {i: chr(0x2400 + i) for i in range(32)}  # ␀ … ␟
_VISIBLE.update({0x7F: "\u2421"})  # ␡
_VISIBLE.update({i: f"\\x{i:02x}" for i in range(0x80, 0xA0)})  # C1 controls
_VISIBLE.update(
    {i: f"\\u{i:04x}" for i in (0x2028, 0x2029, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0xFEFF)}
)  # line separators, bidi
del _VISIBLE[0x0A], _VISIBLE[0x09]  # newline and tab stay as they are


def sanitise(data: bytes) -> str:
    """Output bytes as text that is safe to show: invalid UTF-8 as U+FFFD, control
    characters as visible pictures (NUL → ␀, ESC → ␛, BEL → ␇, CR → ␍), bidi and line
    separators as ``\\uXXXX``; newline and tab unchanged."""
    return data.decode("utf-8", "replace").translate(_VISIBLE)


# ---------------------------------------------------------------- the jail


def jail() -> jails.Jail:
    """The jail of this process's boxes (probed once, see :func:`lessonkit.run.box.jail.selected`)."""
    return jails.selected()


def namespaces_available() -> bool:
    """Whether boxes run in a jail here (bubblewrap or the own launcher)."""
    return jails.selected().isolated


# ---------------------------------------------------------------- the box


@dataclass
class Box:
    """One experiment's folder and process (see the module docstring for the layout)."""

    dir: Path
    mark: str
    root: Path | None = None  # the process's folder of boxes that holds it (see Boxes.open)
    cgroup: Path | None = None
    proc: subprocess.Popen | None = None
    killed: bool = False

    @property
    def work(self) -> Path:
        return self.dir / "work"

    @property
    def pinned(self) -> Path:
        return self.dir / "pinned"

    @property
    def project(self) -> Path:
        return self.dir / "project"

    @property
    def bytecode(self) -> Path:
        """The common copy's: the checked bytecode of ``pinned/`` (CheckedTree.write_bytecode)."""
        return self.dir / "bytecode"

    @property
    def io(self) -> Path:
        return self.dir / "io"

    @property
    def record(self) -> Path:
        return self.io / "record.json"

    def kill(self) -> None:
        """Kill the launcher's group; the box's init (or the script) dies with it."""
        self.killed = True
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        for pid in marked_processes(self.mark, exact=True):  # without namespaces: what escaped the group
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


class Boxes:
    """Every box of this process, so that a signal or a failed build can end them all."""

    def __init__(self):
        self._lock = threading.RLock()  # a signal handler in the main thread may take it again
        self._live: dict[str, Box] = {}
        self._n = 0
        self._root: Path | None = None
        self.cancelled = False

    def open(self, ids: tuple[int, int] | None = None) -> Box:
        """A new box: a folder inside this process's folder of boxes, which is made with the first
        live box and removed with the last. ``ids``: who owns the box's record file (the
        jail's user of a root build). A jailed box sees nothing of that folder but itself."""
        with self._lock:  # a folder exists only once kill_all can see it
            if self.cancelled:
                raise Cancelled()
            self._n += 1
            mark = f"{owner()}-{self._n}"
            if self._root is None or not self._root.is_dir():
                self._root = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{mark}-"))
            folder = self._root / f"box-{self._n}"
            folder.mkdir()
            box = self._live[mark] = Box(folder, mark, self._root)
        for sub in ("work", "io", "project"):
            (box.dir / sub).mkdir()
        jails.make_record(box.dir, ids)  # the box's user in a jail of a root build: host nobody
        box.cgroup = _make_cgroup(mark, NPROC)
        return box

    def close(self, box: Box) -> None:
        box.kill()
        if box.cgroup is not None:
            _remove_cgroup(box.cgroup)
        _rmtree(box.dir)
        with self._lock:
            self._live.pop(box.mark, None)
            root = None if self._live else self._root
            if root is not None:
                self._root = None
        if root is not None:
            _rmtree(root)

    def kill_all(self, wait: float = 0.5) -> None:
        """Cancel what has not started, kill what runs and remove every box folder."""
        import multiprocessing

        with self._lock:
            self.cancelled = True
            live = list(self._live.values())
        for box in live:
            box.kill()
        for helper in multiprocessing.active_children():  # e.g. the build's prewarm process
            helper.kill()
        deadline = time.monotonic() + wait
        for box in live:  # the worker threads reap the launchers; wait for them to be gone
            while (
                box.proc is not None
                and time.monotonic() < deadline
                and _start_time(box.proc.pid) is not None
                and not _zombie(box.proc.pid)
            ):
                time.sleep(0.005)
            if box.cgroup is not None:
                _remove_cgroup(box.cgroup)
            _rmtree(box.dir)
        self.remove_folder()

    def reset(self) -> None:
        with self._lock:
            self.cancelled = False

    def remove_folder(self) -> None:
        """Remove this process's folder of boxes with whatever it holds (after kill_all; at the
        process's exit, should a batch of experiments never have been collected)."""
        with self._lock:
            root, self._root = self._root, None
        if root is not None:
            _rmtree(root)


class Cancelled(Exception):
    """The build was cancelled before this experiment started."""


BOXES = Boxes()
atexit.register(BOXES.remove_folder)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return True


def launch(box: Box, spec: BoxSpec, stdout, stderr, channel, pinned: Path) -> subprocess.Popen:
    """Start the launcher of ``box`` as ``spec`` says (its jail, script, environment, limits);
    ``pinned`` is the checked copy to show at ``pinned/``. The box's files are already written.
    ``stdout`` and ``stderr`` are the script's; ``channel`` is the launcher's own stderr, where
    it says why a box failed, and which nothing in the box can write (see ``_boot.py``)."""
    jail = jails.Jail(*spec.jail)
    root = jail.root or str(box.dir)
    cfg = jails.launcher_config(
        jail,
        box.dir,
        pinned,
        argv=list(spec.argv),
        env={**spec.environment(root), MARK: box.mark},
        cwd=spec.cwd.replace("{box}", root),
        memory=spec.memory,
        fsize=spec.fsize,
        nproc=spec.nproc,
        cgroup=str(box.cgroup) if box.cgroup else None,
        stderr=stderr.fileno(),
    )
    with BOXES._lock:  # started before a cancel (and so killed by it), or not at all
        if BOXES.cancelled:
            raise Cancelled()
        box.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", str(BOOT), jails.encode_config(cfg)],
            cwd=box.dir,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), MARK: box.mark},
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=channel,
            pass_fds=(stderr.fileno(),),
            start_new_session=True,
        )
    return box.proc


def box_failure(said: bytes) -> str:
    """What the launcher said on its channel, as a runner's problem ("" : nothing, the box worked):
    its first ``lessonkit-box:`` line and the last other line (bubblewrap's, a traceback's)."""
    lines = [line.strip() for line in sanitise(said).split("\n") if line.strip()]
    ours = [line.removeprefix("lessonkit-box:").strip() for line in lines if line.startswith("lessonkit-box:")]
    other = [line for line in lines if not line.startswith("lessonkit-box:")]
    return ("box: " + ": ".join([*ours[:1], *other[-1:]]))[:400] if lines else ""


def reap(proc: subprocess.Popen, timeout: float, box: Box):
    """Wait for the box's launcher, killing the box at the timeout: (exit code, rusage, timed out).

    Woken by the launcher's pidfd as soon as it exits (no polling delay per experiment); where
    pidfds are missing (Linux < 5.3), by polling that backs off to 50 ms."""
    deadline = time.monotonic() + timeout
    timed_out = False
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        pidfd = None
    try:
        delay = 0.002
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                box.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            if pidfd is not None:
                select.select([pidfd], [], [], left)  # readable once the launcher has exited
            else:
                time.sleep(min(delay, left))
                delay = min(delay * 2, 0.05)
    finally:
        if pidfd is not None:
            os.close(pidfd)
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here; Popen must not wait again
    return proc.returncode, usage, timed_out


# ---------------------------------------------------------------- signals


@contextlib.contextmanager
def cancel_on_signals(on_cancel=None):
    """While inside: SIGINT or SIGTERM cancels queued experiments, kills running ones with
    their descendants and removes their folders, then acts as it would have without us
    (KeyboardInterrupt for SIGINT, the default death for SIGTERM). Only in the main thread.

    The handler runs between two bytecodes of the main thread, which may hold any lock at
    that moment: it takes none but the boxes' re-entrant lock, and ``on_cancel`` must not either."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

    def handler(signum, frame):
        for s, h in old.items():
            signal.signal(s, h)
        if on_cancel is not None:
            on_cancel()
        BOXES.kill_all()
        prev = old[signum]
        if callable(prev):
            fastexit.skip_teardown()  # SIGINT: unwind as usual, then end without the heap's teardown
            prev(signum, frame)
        elif prev == signal.SIG_DFL:
            os.kill(os.getpid(), signum)
            time.sleep(1)  # the signal is delivered before this returns

    for s in old:
        signal.signal(s, handler)
    try:
        yield
    finally:
        for s, h in old.items():
            if signal.getsignal(s) is handler:
                signal.signal(s, h)


def die_with_parent() -> None:
    """Ask the kernel to kill this process when its parent ends (Linux; a no-op elsewhere).
    In a multiprocessing child whose parent has already ended, end now."""
    import multiprocessing

    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    parent = multiprocessing.parent_process()
    if parent is not None and os.getppid() != parent.pid:
        os._exit(1)


def helper_process() -> None:
    """In a helper process of the build (prewarm, link scanner): die with the build, and
    leave Ctrl-C, which the terminal sends to every process of the group, to the build,
    which ends its helpers itself (no second traceback from here)."""
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def start_piped_helper(method: str, target, args: tuple, name: str):
    """Start ``target(*args, conn)`` in a helper process (``multiprocessing`` start ``method``) that
    sends its result on ``conn``: (process, our reading end), or None when no process can be
    spared (see :func:`start_helper`; the caller then does the work itself)."""
    import multiprocessing
    import typing

    ctx: typing.Any = multiprocessing.get_context(method)  # a start method's context (BaseContext has no Process)
    ours, theirs = ctx.Pipe(duplex=False)  # (the reading end, the writing end)
    proc = ctx.Process(target=target, args=(*args, theirs), daemon=True, name=name)
    started = start_helper(proc)
    theirs.close()
    if not started:
        ours.close()
        return None
    return proc, ours


def start_helper(proc) -> bool:
    """Start a helper (a ``multiprocessing`` process) with SIGINT and SIGTERM blocked meanwhile,
    so that a signal finds either a started child, which the build then ends, or none.
    False: no process to spare (the build does the helper's work itself)."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        proc.start()
    except OSError:
        return False
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    return True
