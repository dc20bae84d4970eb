"""The launcher of one boxed experiment (run as ``python -I -S _boot.py CONFIG``).

Standalone on purpose: only the standard library, no lessonkit import, so it starts
fast and is single-threaded when it calls ``unshare``. See ``lessonkit.run.box.sandbox``
for what the box guarantees; this file only carries it out:

1. die with the runner (``PR_SET_PDEATHSIG``) and join the box's pids cgroup if given;
2. with namespaces: a new user, mount, PID and network namespace; the project,
   the cache and ``$HOME`` read-only, the project's folders hidden behind empty
   read-only mounts, the folder of boxes covered except for this box, the copies it
   reads (the build's common copy) mounted read-only in the box; then a PID-1 ``init`` whose
   exit kills every process left in the namespace, ``setsid`` daemons included;
   without namespaces: this launcher is a child subreaper and kills every
   descendant it finds once the script has ended;
3. the script itself runs with resource limits (address space, file size, no
   core dumps) and its parent-death signal set.

The exit status of the script is the exit status of the launcher (a script killed
by signal N kills the launcher with N), so the runner's ``wait4`` sees the script.
Launcher failures exit with code 125 after one ``lessonkit-box:`` line on stderr.
"""

import ctypes
import json
import os
import resource
import signal
import sys

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x20000, 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC = 1, 2, 4, 8, 32, 4096, 16384
MS_NOATIME, MS_NODIRATIME, MS_PRIVATE, MS_RELATIME = 1024, 2048, 1 << 18, 1 << 21
PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36
BOX_FAILED = 125
BOX_ID = 1000  # the script's uid and gid inside the box when the build runs as root
PR_SET_NO_NEW_PRIVS = 38

libc = ctypes.CDLL(None, use_errno=True)


def fail(what: str) -> None:
    os.write(2, f"lessonkit-box: {what}\n".encode())
    os._exit(BOX_FAILED)


def check(rc: int, what: str) -> None:
    if rc != 0:
        fail(f"{what}: {os.strerror(ctypes.get_errno())}")


def die_with_parent() -> None:
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def mount(src, target, fstype, flags, data=None) -> int:
    enc = lambda s: s.encode() if isinstance(s, str) else s  # noqa: E731
    return libc.mount(enc(src), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data))


def kept_flags(path: str) -> int:
    """Flags a remount inside a user namespace must keep (they are locked)."""
    f = os.statvfs(path).f_flag
    out = f & (MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME)
    return out | (MS_RELATIME if f & 4096 else 0)


def read_only(path: str, source: str | None = None) -> None:
    """Make ``path`` read-only: itself, or ``source`` (a held folder, see ``hold``) mounted there."""
    check(mount(source or path, path, None, MS_BIND | MS_REC), f"bind {path}")
    check(mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | kept_flags(path)), f"read-only {path}")


def hold(path: str) -> int:
    """A handle on a folder as it is now, for a bind mount after its place is covered."""
    try:
        return os.open(path, os.O_PATH | os.O_DIRECTORY)
    except OSError as exc:
        fail(f"open {path}: {exc.strerror}")


def hide(path: str) -> None:
    if os.path.islink(path):
        return  # a mount would follow the link; the target is covered by its own entry
    if os.path.isdir(path):
        check(mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k,mode=0555"), f"hide {path}")
    elif os.path.exists(path):
        check(mount("/dev/null", path, None, MS_BIND), f"hide {path}")
        mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | kept_flags(path))


def enter_namespaces(cfg: dict) -> None:
    uid, gid = os.getuid(), os.getgid()
    # Inside, the script is never uid 0: execve then drops every capability, so it can
    # neither unmount nor remount what this launcher made read-only.
    inner_uid, inner_gid = uid or BOX_ID, gid or BOX_ID
    check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET), "unshare")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{inner_uid} {uid} 1"), ("gid_map", f"{inner_gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as fh:
            fh.write(text)
    check(mount("none", "/", None, MS_REC | MS_PRIVATE), "make mounts private")
    box, root = cfg.get("box_dir"), cfg.get("box_root")
    # Held before anything is covered: the box and the copies it mounts, as they are now.
    held = {path: hold(path) for path in [box] if box and root}
    for source, _ in cfg["box_read_only"]:
        held[source] = hold(source)
    via = {path: f"/proc/self/fd/{fd}" for path, fd in held.items()}
    for path in cfg["read_only"]:
        if os.path.isdir(path):
            read_only(path)
    for path in cfg["hide"]:
        hide(path)
    if box and root:  # the folder of boxes shows this box alone (other boxes and the common copy
        # are covered), and the box stays writable even inside a read-only path
        check(mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=4k,mode=0755"), f"cover {root}")
        try:
            os.mkdir(box)
        except OSError as exc:
            fail(f"mkdir {box}: {exc.strerror}")
        check(mount(via[box], box, None, MS_BIND | MS_REC), f"bind {box}")
        check(mount(None, root, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV), f"read-only {root}")
    for source, path in cfg["box_read_only"]:  # the common copy
        read_only(path, via[source])
    for fd in held.values():
        os.close(fd)


def limit(cfg: dict) -> None:
    for name, value in (("RLIMIT_AS", cfg["memory"]), ("RLIMIT_FSIZE", cfg["fsize"]), ("RLIMIT_CORE", 0)):
        res = getattr(resource, name)
        hard = resource.getrlimit(res)[1]
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(res, (value, value))
    if os.getuid() != 0 and cfg.get("nproc"):  # root is exempt from RLIMIT_NPROC
        resource.setrlimit(resource.RLIMIT_NPROC, (cfg["nproc"], cfg["nproc"]))


def start_script(cfg: dict) -> int:
    pid = os.fork()
    if pid == 0:
        try:
            die_with_parent()
            libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
            limit(cfg)
            os.chdir(cfg["cwd"])
            os.execve(cfg["argv"][0], cfg["argv"], cfg["env"])
        except BaseException as exc:  # noqa: BLE001 - reported as a box failure
            os.write(2, f"lessonkit-box: cannot start the script: {exc}\n".encode())
        os._exit(BOX_FAILED)
    return pid


def children(pid: int) -> list[int]:
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as fh:
                out += [int(x) for x in fh.read().split()]
    except OSError:
        pass
    return out


def kill_descendants() -> None:
    """Kill and reap everything below this (subreaper) process, setsid daemons included."""
    me = os.getpid()
    for _ in range(200):
        todo, seen = children(me), set()
        while todo:
            p = todo.pop()
            if p in seen:
                continue
            seen.add(p)
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
            todo += children(p)
        reaped = False
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if not pid:
                break
            reaped = True
        if not seen and not reaped:
            os.sched_yield()


def init(cfg: dict, report_fd: int) -> None:
    """PID 1 of the box: run the script, reap orphans, report the script's status, exit
    (which makes the kernel kill whatever is left in the namespace)."""
    die_with_parent()
    script = start_script(cfg)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            status = 0
            break
        if pid == script:
            break
    os.write(report_fd, str(status).encode())
    os._exit(0)


def mirror(status: int) -> None:
    """Leave with the script's status: its exit code, or its death by a signal."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)  # a signal this process cannot die of
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else BOX_FAILED)


def main() -> None:
    die_with_parent()
    cfg = json.loads(sys.argv[1])
    if os.getppid() != cfg["parent"]:
        os._exit(BOX_FAILED)  # the runner is already gone
    if cfg.get("cgroup"):
        try:
            with open(os.path.join(cfg["cgroup"], "cgroup.procs"), "w") as fh:
                fh.write(str(os.getpid()))
        except OSError:
            pass  # best effort: the pids limit is an extra, not a promise
    if cfg["namespaces"]:
        enter_namespaces(cfg)
        read_fd, write_fd = os.pipe()
        pid = os.fork()  # the first child of the new PID namespace: its init
        if pid == 0:
            os.close(read_fd)
            init(cfg, write_fd)
        os.close(write_fd)
        os.waitpid(pid, 0)
        data = os.read(read_fd, 64)
        if not data:
            fail("the box's init ended without a status")
        mirror(int(data))
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    script = start_script(cfg)
    _, status = os.waitpid(script, 0)
    kill_descendants()
    mirror(status)


if __name__ == "__main__":
    main()
