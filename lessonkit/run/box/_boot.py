"""The launcher of one boxed experiment (run as ``python -I -S _boot.py CONFIG``).

Standalone on purpose (the standard library only: it starts fast, single-threaded when it
forks and unshares); what it carries out is said in ``lessonkit.run.box.jail``. The launcher
(on the host) dies with the runner (``PR_SET_PDEATHSIG``), joins the box's pids cgroup, then:

* ``namespaces`` (this file's own jail): a child unshares user, mount, PID, network, IPC, UTS
  and cgroup namespaces and holds a handle on every folder the box shows; the launcher, still
  on the host, writes the child's uid and gid maps (the box's user 1000 is host ``nobody``
  when the build runs as root, else the builder) and forbids new user namespaces in the box;
  the child's first child is the box's PID 1: it builds the box's root on a tmpfs from the
  mount plan (read-only binds, a fresh ``/proc``, a minimal ``/dev``, private ``/tmp`` and
  ``/dev/shm``), ``pivot_root``\\ s into it and detaches the host's tree, then runs ``init``;
* ``bwrap``: bubblewrap builds the same plan (``--userns-block-fd``: the launcher writes the
  same maps while bubblewrap waits) and runs this file as the box's PID 1 (``--init``);
* ``copy``: no namespaces; this launcher is a child subreaper and kills every descendant it
  finds once the script has ended.

``init`` starts the script as user 1000 with no capabilities, ``no_new_privs``, resource
limits (address space, file size, processes, no core dumps) and its parent-death signal set,
in a new anonymous session keyring, under a seccomp filter that refuses the key syscalls
(``add_key``, ``request_key``, ``keyctl``) and ``memfd_create``/``memfd_secret`` (memory that
``RLIMIT_AS`` does not count), with no descriptor but 0, 1 and 2; in a jail its
working folder is a tmpfs of bounded size, filled from the host's copy first. ``init`` reaps
orphans, reports the script's status on a pipe and exits, which makes the kernel kill every
process left in the box, ``setsid`` daemons included.

The exit status of the script is the exit status of the launcher (a script killed by signal
N kills the launcher with N), so the runner's ``wait4`` sees the script. The launcher's own
stderr is the runner's *channel*, which no process of the box can write: the script's stderr
is another descriptor (``stderr`` in the configuration), made its fd 2 only just before
``execve``. A launcher failure is one ``lessonkit-box:`` line on the channel (bubblewrap's
own messages go there too), and exit code 125; what the script writes, exit code 125 included,
is the script's.
"""

import binascii
import ctypes
import marshal
import os
import resource
import signal
import stat
import sys

CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC = 0x20000, 0x02000000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
UNSHARE = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC = 1, 2, 4, 8, 32, 4096, 16384
MS_NOATIME, MS_NODIRATIME, MS_PRIVATE, MS_RELATIME = 1024, 2048, 1 << 18, 1 << 21
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 4, 36, 38
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
BOX_FAILED = 125
BOX_ID = 1000  # the script's uid and gid inside a jail
HOST_BOX_ID = 65534  # ... and on the host, when the build runs as root (nobody, nogroup)
HOST_NS_ROOT = 65533  # this jail's namespace root (its own setup) on the host, for a root build
PROC_COVERS = ("sys", "sysrq-trigger", "irq", "bus")  # read-only in the box's /proc, as bubblewrap does
KEYCTL_JOIN_SESSION_KEYRING = 1
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
# The key syscalls (add_key, request_key, keyctl) of each ABI a process of this machine may use,
# by AUDIT_ARCH value; "x32": also refuse x86-64's x32 ABI (syscall numbers with bit 30 set).
KEY_SYSCALLS = {
    "x86_64": ((0xC000003E, (248, 249, 250), True), (0x40000003, (286, 287, 288), False)),
    "aarch64": ((0xC00000B7, (217, 218, 219), False), (0x40000028, (309, 310, 311), False)),
    "riscv64": ((0xC00000F3, (217, 218, 219), False),),
    "ppc64le": ((0xC0000015, (269, 270, 271), False),),
    "s390x": ((0x80000016, (278, 279, 280), False),),
}
# memfd_create and memfd_secret of each ABI above, by AUDIT_ARCH value: refused too. A memfd's pages
# belong to no process's address space, so RLIMIT_AS (`Memory:`) does not count them and a box could
# hold any amount of memory in them; no experiment's library here needs one (NumPy, OpenBLAS, the pinned package and
# the standard library never call it), and /tmp and /dev/shm are tmpfs mounts of bounded size.
MEMFD_SYSCALLS = {
    0xC000003E: (319, 447),  # x86-64
    0x40000003: (356, 447),  # i386
    0xC00000B7: (279, 447),  # AArch64
    0x40000028: (385, 447),  # ARM (EABI)
    0xC00000F3: (279, 447),  # RISC-V 64
    0xC0000015: (360, 447),  # POWER little-endian
    0x80000016: (350, 447),  # s390x
}

libc = ctypes.CDLL(None, use_errno=True)


def encode(cfg: dict) -> str:
    """A configuration as one argument: marshal's bytes in base64, as ``jail.encode_config`` makes
    the launcher's (both modules are built into the interpreter: the launcher and the box's init
    need not import json, and with it ``re``, about 12 ms each)."""
    return binascii.b2a_base64(marshal.dumps(cfg), newline=False).decode("ascii")


def decode(arg: str) -> dict:
    """The configuration :func:`encode` made (the runner's, or this launcher's for the init)."""
    try:
        cfg = marshal.loads(binascii.a2b_base64(arg))
    except (ValueError, EOFError, TypeError, binascii.Error):
        cfg = None
    if not isinstance(cfg, dict):
        fail("the box's configuration cannot be read")
    return cfg


def fail(what: str) -> None:
    """Say why the box failed on the channel (this process's stderr) and leave with 125."""
    try:
        os.write(2, f"lessonkit-box: {what}\n".encode())
    finally:
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


def read_exactly(fd: int) -> bytes:
    """Everything until the other end closes."""
    out = b""
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            return out
        out += chunk


# ---------------------------------------------------------------- the host side of a jail


def write_maps(pid: int, ns_root: int) -> None:
    """The box's ids: 1000 inside; on the host ``nobody`` (root builds, which may map any id; the
    namespace's root, used only by the jail's own setup, is ``ns_root``) or the builder (the one
    mapping an unprivileged process may write: its own ids)."""
    steps = []
    if os.geteuid() == 0:
        uid_map = gid_map = f"0 {ns_root} 1\n{BOX_ID} {HOST_BOX_ID} 1\n"
    else:
        steps.append(("setgroups", "deny"))
        uid_map, gid_map = f"{BOX_ID} {os.geteuid()} 1\n", f"{BOX_ID} {os.getegid()} 1\n"
    for name, text in (*steps, ("uid_map", uid_map), ("gid_map", gid_map)):
        try:
            with open(f"/proc/{pid}/{name}", "w") as fh:
                fh.write(text)
        except OSError as exc:
            fail(f"write the box's {name}: {exc.strerror}")


def no_user_namespaces(pid: int) -> None:
    """Set ``user.max_user_namespaces`` of the box's user namespace to 0, from a child that joins
    it (the launcher owns it, so it has every capability there): the script, without
    capabilities, can neither create a namespace of its own nor raise the limit again."""
    child = os.fork()
    if child == 0:
        try:
            fd = os.open(f"/proc/{pid}/ns/user", os.O_RDONLY)
            if libc.setns(fd, CLONE_NEWUSER) != 0:
                os._exit(2)
            with open("/proc/sys/user/max_user_namespaces", "w") as fh:
                fh.write("0")
            os._exit(0)
        except BaseException:  # noqa: BLE001 - the parent reports it
            os._exit(3)
    _, status = os.waitpid(child, 0)
    if status != 0:
        fail(f"cannot forbid user namespaces in the box (status {status})")


def start_namespaces(cfg: dict, report_fd: int) -> int:
    """This file's own jail: see the module docstring. Returns the pid of the child to wait for."""
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(ready_r)
        os.close(go_w)
        die_with_parent()
        check(libc.unshare(UNSHARE), "unshare")
        os.write(ready_w, b"u")
        os.close(ready_w)
        if os.read(go_r, 1) != b"g":
            os._exit(BOX_FAILED)  # the launcher failed (and said why)
        os.close(go_r)
        # Handles on what the box shows, opened in the new mount namespace while this process is
        # still the builder (a root build's pyenv may live in /root) and the box's user is mapped
        # (its folders): the mounts use them.
        held = {}
        for op in cfg["plan"]:
            if op[0] in ("ro", "rw", "dev") and op[1] not in held:
                try:
                    held[op[1]] = os.open(op[1], os.O_PATH | os.O_CLOEXEC)
                except OSError as exc:
                    fail(f"open {op[1]}: {exc.strerror}")
        if cfg["root_build"]:  # (inside, before this, the host's root shows as nobody)
            os.setresgid(0, 0, 0)  # the namespace's root (HOST_NS_ROOT on the host), not host root
            os.setresuid(0, 0, 0)
        init_pid = os.fork()  # the first process of the new PID namespace
        if init_pid == 0:
            build_root(cfg, held)
            init(cfg, report_fd)
        for fd in held.values():
            os.close(fd)
        os.close(report_fd)
        _, status = os.waitpid(init_pid, 0)
        os._exit(0 if status == 0 else BOX_FAILED)
    os.close(ready_w)
    os.close(go_r)
    if os.read(ready_r, 1) != b"u":
        os.waitpid(pid, 0)
        fail("the box's namespaces could not be made")
    write_maps(pid, HOST_NS_ROOT)
    no_user_namespaces(pid)
    os.write(go_w, b"g")
    os.close(go_w)
    os.close(ready_r)
    return pid


def bwrap_args(cfg: dict) -> tuple[list[str], list[int]]:
    """The mount plan as bubblewrap's options, and the descriptors they read (file contents)."""
    args, fds, known = [], [], {"/"}
    for op in cfg["plan"]:
        kind = op[0]
        dest = op[1] if kind in ("tmpfs", "dir", "file", "proc", "remount-ro") else op[2]
        # bubblewrap 0.8 makes missing parents of a bind mode 0700 (its options' default perms are
        # 0): the box's user could not reach what is bound there. Every parent is made 0755 first.
        parts = dest.strip("/").split("/")[:-1]
        for n in range(1, len(parts) + 1):
            parent = "/" + "/".join(parts[:n])
            if parent not in known:
                args += ["--perms", "0755", "--dir", parent]
                known.add(parent)
        if kind in ("tmpfs", "dir", "proc") or (kind in ("ro", "rw") and os.path.isdir(op[1])):
            known.add(dest)
        if kind == "tmpfs":
            args += ["--perms", f"{op[2]:04o}", "--size", str(op[3]), "--tmpfs", op[1]]
        elif kind == "dir":
            args += ["--perms", f"{op[2]:04o}", "--dir", op[1]]
        elif kind in ("ro", "rw", "dev"):
            args += [{"ro": "--ro-bind", "rw": "--bind", "dev": "--dev-bind"}[kind], op[1], op[2]]
        elif kind == "symlink":
            args += ["--symlink", op[1], op[2]]
        elif kind == "file":
            r, w = os.pipe()
            os.write(w, op[2].encode())  # a few hundred bytes: fits the pipe
            os.close(w)
            fds.append(r)
            args += ["--perms", "0444", "--ro-bind-data", str(r), op[1]]
        elif kind == "proc":
            # bubblewrap covers these read-only itself only where it can write them while it sets
            # up (it skips one it cannot: on some hosts /proc/sys), so each is bound read-only here.
            # The host's /proc/sys shows the same tree: a sysctl's value is that of the namespaces
            # of the process that reads it, not of the /proc it is read through.
            args += ["--proc", op[1]]
            for sub in PROC_COVERS:
                args += ["--ro-bind-try", f"/proc/{sub}", f"{op[1]}/{sub}"]
        elif kind == "remount-ro":
            args += ["--remount-ro", op[1]]
        else:
            fail(f"unknown mount plan step {kind!r}")
    return args + ["--remount-ro", "/"], fds


def start_bwrap(cfg: dict, report_fd: int) -> int:
    """Bubblewrap builds the plan and runs this file as the box's PID 1 (``--init``)."""
    info_r, info_w = os.pipe()
    block_r, block_w = os.pipe()
    plan, data_fds = bwrap_args(cfg)
    inner = {k: cfg[k] for k in ("memory", "fsize", "nproc", "cwd", "env", "argv", "root_build", "stderr", "seed")}
    inner["report"] = report_fd
    argv = [
        cfg["bwrap"],
        *("--unshare-user", "--userns-block-fd", str(block_r), "--info-fd", str(info_w)),
        *("--unshare-pid", "--as-pid-1", "--unshare-net", "--unshare-ipc", "--unshare-uts"),
        *("--unshare-cgroup-try", "--hostname", cfg["hostname"], "--die-with-parent"),
        # the init needs to become user 1000 only where it starts as the namespace's root
        *("--cap-drop", "ALL", *(("--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID") if cfg["root_build"] else ())),
        *plan,
        *("--chdir", "/", "--", cfg["python"], "-I", "-S", "-B", cfg["boot"], "--init", encode(inner)),
    ]
    keep = {info_w, block_r, report_fd, *data_fds} | ({cfg["stderr"]} if cfg.get("stderr") is not None else set())
    pid = os.fork()
    if pid == 0:
        try:
            for fd in keep:
                os.set_inheritable(fd, True)
            os.execve(argv[0], argv, {"PATH": "/usr/bin:/bin"})
        except OSError as exc:
            os.write(2, f"lessonkit-box: cannot run bubblewrap: {exc.strerror}\n".encode())
        os._exit(BOX_FAILED)
    for fd in (info_w, block_r, *data_fds):
        os.close(fd)
    info = read_exactly(info_r)
    os.close(info_r)
    try:
        child = child_pid(info)
    except ValueError:
        _, status = os.waitpid(pid, 0)
        fail(f"bubblewrap did not start the box (status {status})")
    write_maps(child, 0)  # bubblewrap's own setup must be a mapped user; the script never is root
    no_user_namespaces(child)
    os.write(block_w, b"g")
    os.close(block_w)
    return pid


def child_pid(info: bytes) -> int:
    """The ``"child-pid"`` of bubblewrap's ``--info-fd`` JSON object (``{"child-pid": 123, …}``),
    read without ``json``; ValueError when it holds none."""
    at = info.find(b'"child-pid"')
    if at < 0:
        raise ValueError("no child-pid")
    rest = info[at + len(b'"child-pid"') :].lstrip()
    if not rest.startswith(b":"):
        raise ValueError("no child-pid")
    rest = rest[1:].lstrip()
    digits = rest[: len(rest) - len(rest.lstrip(b"0123456789"))]
    if not digits or int(digits) <= 0:
        raise ValueError("no child-pid")
    return int(digits)


# ---------------------------------------------------------------- inside: the box's root


def _parents(path: str) -> None:
    parent = os.path.dirname(path)
    if parent and not os.path.isdir(parent):
        os.makedirs(parent, 0o755, exist_ok=True)


def build_root(cfg: dict, held: dict) -> None:
    """PID 1 of this jail: the plan on a tmpfs at /tmp (of this mount namespace only), then
    ``pivot_root`` into it; the host's tree is detached, nothing of it stays reachable."""
    os.umask(0o022)
    die_with_parent()
    check(mount(None, "/", None, MS_REC | MS_PRIVATE), "make mounts private")
    root = "/tmp"
    check(mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755"), "root tmpfs")
    for op in cfg["plan"]:
        kind, dest = op[0], None
        if kind in ("ro", "rw", "dev"):
            src, dest = f"/proc/self/fd/{held[op[1]]}", root + op[2]
            _parents(dest)
            if stat.S_ISDIR(os.fstat(held[op[1]]).st_mode):
                os.makedirs(dest, 0o755, exist_ok=True)
            elif not os.path.exists(dest):
                os.close(os.open(dest, os.O_CREAT | os.O_WRONLY, 0o644))
            check(mount(src, dest, None, MS_BIND | MS_REC), f"bind {op[2]}")
            if kind == "ro":
                flags = MS_BIND | MS_REMOUNT | MS_RDONLY | kept_flags(dest)
                check(mount(None, dest, None, flags), f"read-only {op[2]}")
        elif kind == "tmpfs":
            dest = root + op[1]
            os.makedirs(dest, 0o755, exist_ok=True)
            data = f"size={op[3]},mode={op[2]:04o}"
            check(mount("tmpfs", dest, "tmpfs", MS_NOSUID | MS_NODEV, data), f"tmpfs {op[1]}")
        elif kind == "dir":
            os.makedirs(root + op[1], op[2], exist_ok=True)
        elif kind == "symlink":
            _parents(root + op[2])
            os.symlink(op[1], root + op[2])
        elif kind == "file":
            _parents(root + op[1])
            with open(root + op[1], "w", encoding="utf-8") as fh:
                fh.write(op[2])
            os.chmod(root + op[1], 0o444)
        elif kind == "remount-ro":
            dest = root + op[1]
            check(mount(None, dest, None, MS_REMOUNT | MS_BIND | MS_RDONLY | kept_flags(dest)), f"read-only {op[1]}")
        elif kind == "proc":  # must be this PID namespace's own, while the host's /proc is visible
            dest = root + op[1]
            os.makedirs(dest, 0o555, exist_ok=True)
            check(mount("proc", dest, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC), "mount /proc")
            for sub in PROC_COVERS:
                p = f"{dest}/{sub}"
                if os.path.exists(p):
                    check(mount(p, p, None, MS_BIND | MS_REC), f"bind /proc/{sub}")
                    check(mount(None, p, None, MS_BIND | MS_REMOUNT | MS_RDONLY | kept_flags(p)), f"read-only {p}")
        else:
            fail(f"unknown mount plan step {kind!r}")
    for fd in held.values():
        os.close(fd)
    os.chdir(root)
    check(libc.pivot_root(b".", b"."), "pivot_root")
    check(libc.umount2(b".", MNT_DETACH), "detach the host's tree")
    os.chdir("/")
    check(mount(None, "/", None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV), "read-only /")
    name = cfg["hostname"].encode()
    check(libc.sethostname(name, len(name)), "sethostname")
    loopback_up()


def loopback_up() -> None:
    """The box's network namespace has only a loopback interface, down: bring it up (as
    bubblewrap does), so that 127.0.0.1 inside the box is the box's own."""
    import fcntl
    import socket
    import struct

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = struct.pack("16sh", b"lo", 0)
        flags = struct.unpack("16sh", fcntl.ioctl(s.fileno(), 0x8913, req))[1]  # SIOCGIFFLAGS
        fcntl.ioctl(s.fileno(), 0x8914, struct.pack("16sh", b"lo", flags | 1))  # SIOCSIFFLAGS, IFF_UP


# ---------------------------------------------------------------- inside: init and the script


def limit(cfg: dict) -> None:
    for name, value in (("RLIMIT_AS", cfg["memory"]), ("RLIMIT_FSIZE", cfg["fsize"]), ("RLIMIT_CORE", 0)):
        res = getattr(resource, name)
        hard = resource.getrlimit(res)[1]
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(res, (value, value))
    if cfg.get("nproc"):  # root (the copy fallback of a root build) is exempt from RLIMIT_NPROC
        resource.setrlimit(resource.RLIMIT_NPROC, (cfg["nproc"], cfg["nproc"]))


def become_box_user(cfg: dict) -> None:
    """User and group 1000, no supplementary groups, no capability in any set (leaving the
    namespace's root drops them; the ambient and inheritable ones bubblewrap may pass on are
    cleared too), and ``no_new_privs`` keeps set-user-ID files from giving any back."""
    if cfg.get("root_build"):
        os.setgroups([])
    os.setresgid(BOX_ID, BOX_ID, BOX_ID)
    os.setresuid(BOX_ID, BOX_ID, BOX_ID)
    check(libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clear ambient capabilities")
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    check(libc.capset(header, (ctypes.c_uint32 * 6)()), "drop capabilities")  # effective, permitted, inheritable


def syscall(nr: int, *args) -> int:
    libc.syscall.restype = ctypes.c_long
    return libc.syscall(ctypes.c_long(nr), *(ctypes.c_long(a) if isinstance(a, int) else a for a in args))


def close_keyrings(jailed: bool) -> None:
    """Leave the build's session keyring for a new, empty, anonymous one (the script possesses no
    key of the build, and what it adds goes with it), then refuse every key syscall. A jail
    fails on a machine whose syscall numbers this file does not know; without a jail (no
    promises, see jail.py) the script then keeps the build's keyring."""
    abis = KEY_SYSCALLS.get(os.uname().machine)
    if abis is None:
        if jailed:
            fail(f"no list of the key syscalls for this machine ({os.uname().machine}): keyrings cannot be closed")
        return
    if syscall(abis[0][1][2], KEYCTL_JOIN_SESSION_KEYRING, None) < 0:
        fail(f"join a new session keyring: {os.strerror(ctypes.get_errno())}")
    refuse_key_syscalls(abis)


def seccomp_program(abis: tuple) -> bytes:
    """A classic BPF program for ``seccomp``: the key syscalls, ``memfd_create`` and ``memfd_secret``
    (and x86-64's x32 ABI) fail with EPERM, every other syscall of this machine's ABIs is allowed,
    any other ABI fails."""
    LD, JEQ, JGE, RET = 0x20, 0x15, 0x35, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_JMP|JGE|K, BPF_RET|K
    ALLOW, DENY = 0x7FFF0000, 0x00050000 | 1  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EPERM
    code: list = [(LD, 0, 0, 4)]  # the ABI (seccomp_data.arch)
    for arch, numbers, x32 in abis:
        block: list[tuple[int, int | str, int, int]] = [(LD, 0, 0, 0)]  # the syscall number
        if x32:
            block.append((JGE, "deny", 0, 0x40000000))
        block += [(JEQ, "deny", 0, n) for n in (*numbers, *MEMFD_SYSCALLS.get(arch, ()))]
        block.append((RET, 0, 0, ALLOW))
        code.append((JEQ, 0, len(block), arch))
        code += block
    code.append((RET, 0, 0, DENY))  # an ABI this machine does not use for its programs
    deny = len(code) - 1
    out = b""
    for n, (op, jt, jf, k) in enumerate(code):
        jt = deny - n - 1 if jt == "deny" else jt
        out += op.to_bytes(2, "little") + bytes([jt, jf]) + k.to_bytes(4, "little")
    return out


def refuse_key_syscalls(abis: tuple) -> None:
    prog = seccomp_program(abis)
    buf = ctypes.create_string_buffer(prog, len(prog))

    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = Fprog(len(prog) // 8, ctypes.cast(buf, ctypes.c_void_p))
    check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "seccomp filter")


def fill_work(cfg: dict) -> None:
    """Copy the host's working folder (the script), shown read-only at ``seed[0]``, into the box's
    own tmpfs ``seed[1]``, as the box's user: the files are the script's, in memory of the box."""
    src, dest = cfg["seed"]
    for name in sorted(os.listdir(src)):
        fd = os.open(os.path.join(src, name), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            data = read_exactly(fd)
        finally:
            os.close(fd)
        out = os.open(os.path.join(dest, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(out, view) :]
        finally:
            os.close(out)


def only_std_fds(keep: int) -> None:
    """Close every descriptor but 0, 1, 2 and ``keep`` (non-inheritable: closed by ``execve``)."""
    try:
        fds = [int(n) for n in os.listdir("/proc/self/fd")]
    except OSError:
        fds = list(range(3, os.sysconf("SC_OPEN_MAX")))
    for fd in fds:
        if fd > 2 and fd != keep:
            try:
                os.close(fd)
            except OSError:
                pass


def start_script(cfg: dict, jailed: bool) -> int:
    pid = os.fork()
    if pid == 0:
        channel = 2
        try:
            die_with_parent()
            limit(cfg)
            if jailed:
                become_box_user(cfg)
            libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
            if jailed and cfg.get("seed"):
                fill_work(cfg)
            os.chdir(cfg["cwd"])
            close_keyrings(jailed)
            if cfg.get("stderr") is not None:  # the channel stays this process's until execve
                channel = os.dup(2)  # non-inheritable
                os.dup2(cfg["stderr"], 2)
            only_std_fds(channel)
            os.execve(cfg["argv"][0], cfg["argv"], cfg["env"])
        except BaseException as exc:  # noqa: BLE001 - reported as a box failure
            try:
                os.write(channel, f"lessonkit-box: cannot start the script: {exc}\n".encode())
            finally:
                os._exit(BOX_FAILED)
        os._exit(BOX_FAILED)
    return pid


def init(cfg: dict, report_fd: int) -> None:
    """PID 1 of the box: run the script, reap orphans, report the script's status, exit
    (which makes the kernel kill whatever is left in the namespace). Not dumpable, so the
    script can neither trace it nor write its /proc entries."""
    die_with_parent()
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    script = start_script(cfg, jailed=True)
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


# ---------------------------------------------------------------- the copy fallback


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
    if sys.argv[1] == "--init":  # inside bubblewrap: this process is the box's PID 1
        cfg = decode(sys.argv[2])
        init(cfg, cfg["report"])
    cfg = decode(sys.argv[1])
    if os.getppid() != cfg["parent"]:
        os._exit(BOX_FAILED)  # the runner is already gone
    if cfg.get("cgroup"):
        try:
            with open(os.path.join(cfg["cgroup"], "cgroup.procs"), "w") as fh:
                fh.write(str(os.getpid()))
        except OSError:
            pass  # best effort: the pids limit is an extra, not a promise
    if cfg["jail"] == "copy":
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        script = start_script(cfg, jailed=False)
        _, status = os.waitpid(script, 0)
        kill_descendants()
        mirror(status)
    cfg["root_build"] = os.geteuid() == 0
    if cfg["root_build"]:
        os.setgroups([])  # nothing of root's groups reaches the box
    report_r, report_w = os.pipe()
    start = start_bwrap if cfg["jail"] == "bwrap" else start_namespaces
    child = start(cfg, report_w)
    os.close(report_w)
    _, status = os.waitpid(child, 0)
    data = read_exactly(report_r)
    if not data:
        fail(f"the box's init ended without a status ({cfg['jail']}, status {status})")
    if not data.isdigit() or len(data) > 10:
        fail(f"the box's init reported no status but {data[:40]!r}")
    mirror(int(data))


if __name__ == "__main__":
    main()
