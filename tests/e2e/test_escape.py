"""An experiment is hostile: it runs as root's build (CI builds as root) and tries to reach the host.

Each test runs one script through the build's own ``Runner`` in each jail this machine gives
(bubblewrap, lessonkit's own namespaces; a jail that does not work here is skipped with the
reason its probe gave) and asserts what it got, and that the host did not change:

* it cannot read ``/etc/shadow``, a 0600 file in a 0700 folder of a temporary root-owned
  folder, ``/root`` (beyond the folders of an interpreter installed there), a host process's
  environment;
* it cannot write ``/etc/passwd``, ``/usr/local/bin``, a root-owned file, ``/proc/sys/kernel/
  core_pattern``, ``/proc/1/oom_score_adj``, a pids cgroup's ``cgroup.procs``;
* it cannot connect to a root-only unix socket (by path or abstract) nor to TCP on 127.0.0.1
  of the host, nor signal a host process; it sees its own PID namespace, no capabilities,
  ``no_new_privs``, and cannot make a user namespace;
* in a jail ``$LESSONKIT_RECORD`` cannot be replaced; without one a FIFO, a link or a folder
  there fails at once, with the located line;
* it holds no key of the build's session keyring and every key syscall fails; it holds no
  descriptor but 0, 1 and 2; what it prints never passes for a launcher failure, which comes
  on the launcher's own channel;
* its working folder is bounded (one located line when full), and a bytecode file planted for
  the box's own paths is never read;
* what it wrote to ``/dev/shm`` and ``/tmp`` is gone after the run;
* a box of a second build running at the same time, under the same temporary folder, can be
  neither found nor written.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest
from support import ROOT, TmpSite

from lessonkit.run import runner as execute
from lessonkit.run.box import jail as jails
from lessonkit.run.box import sandbox
from lessonkit.run.runner import Job, Runner
from lessonkit.source.pin import load_pin

P, AT = "docs/p.md", 3


def _jail(kind: str) -> jails.Jail:
    why = jails.probe(kind)
    if why:
        pytest.skip(f"the {kind} jail does not work here: {why}")
    return jails.Jail(kind, jails._version(kind))


@pytest.fixture(params=["bwrap", "namespaces"])
def jail(request) -> jails.Jail:
    return _jail(request.param)


@pytest.fixture(scope="module")
def project(tmp_path_factory, pinned_root):
    base = tmp_path_factory.mktemp("escape")
    site = TmpSite(base / "proj", pinned_root)
    site.page("p.md", "# t\n")
    return site, load_pin(site.root / "sourcemap")


def _runner(project, jail, cache: Path | None = None) -> Runner:
    site, pin = project
    return Runner(
        site.pinned_root,
        pin.version,
        pin.manifest_digest,
        site.root / "experiments",
        cache or site.cache,
        env_prefix="AUTOGRAD",
        jail=jail,
        **execute.pin_args(pin, site.root),
    )


def _run(project, jail, script: str, timeout: int = 60, cache: Path | None = None):
    job = Job(f"p_L{AT}.py", textwrap.dedent(script).encode(), timeout, f"{P}:{AT}")
    return job, _runner(project, jail, cache).run(job)


# ---------------------------------------------------------------- the host's secrets and files

# Every attempt opens for writing without writing (or makes a new file and removes it again): a
# test run outside a jail, by mistake, changes nothing of the machine. It refuses to run then anyway.
HOSTILE = r"""
import ctypes, errno, json, os, signal, socket

if os.getuid() != 1000 or not os.path.isdir("/lessonkit-box"):
    raise SystemExit("not in a jail: refusing to attack the host")
out = {}


def attempt(name, fn):
    try:
        got = fn()
        out[name] = "ESCAPED" if got is None else f"ESCAPED {str(got)[:200]}"
    except OSError as exc:
        out[name] = errno.errorcode.get(exc.errno, str(exc.errno))


def write(path):
    os.close(os.open(path, os.O_WRONLY | os.O_APPEND))


def create(path):
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    os.unlink(path)


def connect(family, address):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect(address)
    s.sendall(b"escaped")
    s.close()


attempt("read /etc/shadow", lambda: open("/etc/shadow").read())
attempt("read the 0600 secret", lambda: open(SECRET).read())
attempt("list the builder's ~/.ssh", lambda: os.listdir(os.path.join(HOME_DIR, ".ssh")))
attempt("read the builder's ~/.npmrc", lambda: open(os.path.join(HOME_DIR, ".npmrc")).read())
attempt("read the host process's environ", lambda: open(f"/proc/{HOST_PID}/environ", "rb").read())
attempt("write /etc/passwd", lambda: write("/etc/passwd"))
attempt("write /usr/bin/env", lambda: write("/usr/bin/env"))
attempt("write in /usr/local/bin", lambda: create("/usr/local/bin/lessonkit-escape"))
attempt("write the root-owned file", lambda: write(ROOT_OWNED))
attempt("write in /var/spool", lambda: create("/var/spool/lessonkit-escape"))
attempt("write in /dev", lambda: create("/dev/lessonkit-escape"))
attempt("write core_pattern", lambda: write("/proc/sys/kernel/core_pattern"))
attempt("write /proc/1/oom_score_adj", lambda: write("/proc/1/oom_score_adj"))
attempt("write /dev/kmsg", lambda: write("/dev/kmsg"))
attempt("leave the pids cgroup", lambda: write("/sys/fs/cgroup/pids/cgroup.procs"))
attempt("connect to the unix socket", lambda: connect(socket.AF_UNIX, UNIX))
attempt("connect to the abstract socket", lambda: connect(socket.AF_UNIX, ABSTRACT))
attempt("connect to TCP on 127.0.0.1", lambda: connect(socket.AF_INET, ("127.0.0.1", PORT)))
attempt("signal the host process", lambda: os.kill(HOST_PID, signal.SIGTERM))
libc = ctypes.CDLL(None, use_errno=True)
out["make a user namespace"] = errno.errorcode[ctypes.get_errno()] if libc.unshare(0x10000000) else "ESCAPED"
try:
    out["list /root"] = sorted(os.listdir("/root"))
except OSError as exc:
    out["list /root"] = errno.errorcode[exc.errno]
status = dict(line.split(":\t", 1) for line in open("/proc/self/status").read().splitlines() if ":\t" in line)
out["ids"] = [os.getuid(), os.getgid(), os.getgroups()]
out["capabilities"] = [status[k].strip() for k in ("CapInh", "CapPrm", "CapEff", "CapAmb", "NoNewPrivs")]
out["pid 1"] = "boot.py" in open("/proc/1/cmdline", "rb").read().decode("utf-8", "replace")
out["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
out["root"] = sorted(os.listdir("/"))
out["dev"] = sorted(os.listdir("/dev"))
print(json.dumps(out, sort_keys=True))
"""

ABSENT, READ_ONLY = {"ENOENT"}, {"EROFS", "EACCES"}
EXPECTED = {
    "read /etc/shadow": ABSENT,  # the jail's /etc holds stubs only
    "read the 0600 secret": ABSENT,
    "list the builder's ~/.ssh": ABSENT,
    "read the builder's ~/.npmrc": ABSENT,
    "read the host process's environ": ABSENT,  # another PID namespace
    "write /etc/passwd": READ_ONLY,
    "write /usr/bin/env": READ_ONLY,
    "write in /usr/local/bin": READ_ONLY,
    "write the root-owned file": ABSENT,
    "write in /var/spool": ABSENT,
    "write core_pattern": READ_ONLY,
    "write /proc/1/oom_score_adj": {"EACCES"},  # the box's own init, not dumpable
    "write in /dev": {"EROFS"},  # filled, then read-only
    "write /dev/kmsg": ABSENT,  # not in the minimal /dev
    "leave the pids cgroup": ABSENT,  # no /sys
    "connect to the unix socket": ABSENT,
    "connect to the abstract socket": {"ECONNREFUSED"},  # another network namespace
    "connect to TCP on 127.0.0.1": {"ECONNREFUSED"},  # the box's own loopback
    "signal the host process": {"ESRCH"},
    "make a user namespace": {"ENOSPC", "EPERM", "EUSERS"},
}


@pytest.fixture
def host(tmp_path):
    """Root-only things on the host: a secret, a root-owned file, a unix socket (by path and
    abstract), a TCP server on 127.0.0.1, a process; and what connected to the servers."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    secret = private / "secret"
    secret.write_text("host secret\n")
    secret.chmod(0o600)
    owned = tmp_path / "root-owned.txt"
    owned.write_text("untouched\n")
    owned.chmod(0o644)
    servers, connected = [], []
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(str(private / "server.sock"))
    os.chmod(private / "server.sock", 0o600)
    abstract = socket.socket(socket.AF_UNIX)
    abstract_name = f"\0lessonkit-escape-{os.getpid()}"
    abstract.bind(abstract_name)
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    for s in (unix, abstract, tcp):
        s.listen(4)
        s.settimeout(0.2)
        servers.append(s)
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            for s in servers:
                try:
                    conn, _ = s.accept()
                    connected.append(conn.recv(64))
                    conn.close()
                except OSError:
                    pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], env={"LESSONKIT_HOST": "1"})
    yield {
        "SECRET": str(secret),
        "ROOT_OWNED": str(owned),
        "UNIX": str(private / "server.sock"),
        "ABSTRACT": abstract_name,
        "PORT": tcp.getsockname()[1],
        "HOST_PID": sleeper.pid,
        "connected": connected,
        "sleeper": sleeper,
        "owned": owned,
    }
    stop.set()
    t.join(5)
    sleeper.kill()
    sleeper.wait()
    for s in servers:
        s.close()


def test_a_hostile_experiment_reaches_nothing_of_the_host(project, jail, host):
    passwd, env_bin = Path("/etc/passwd").read_bytes(), Path("/usr/bin/env").read_bytes()
    script = "".join(f"{k} = {host[k]!r}\n" for k in ("SECRET", "ROOT_OWNED", "UNIX", "ABSTRACT", "PORT", "HOST_PID"))
    script += f"HOME_DIR = {str(Path.home())!r}\n"  # the build user's home folder on the host
    job, result = _run(project, jail, script + HOSTILE)
    assert result.ok, (result.problem, result.stderr[-2000:])
    got = json.loads(result.stdout)
    for name, allowed in EXPECTED.items():
        assert got[name] in allowed, f"{name}: {got[name]}"
    assert got["ids"] == [1000, 1000, []]
    assert got["capabilities"] == ["0000000000000000"] * 4 + ["1"]
    assert got["pid 1"] is True and len(got["pids"]) <= 4, got["pids"]  # init, the script (and its ps)
    # /root shows at most the first folder of an interpreter installed below it (a pyenv)
    below_root = {p.split("/")[2] for p in jails._interpreter() if p.startswith("/root/")}
    assert got["list /root"] == (sorted(below_root) if below_root else "ENOENT")
    assert not {"home", "sys", "var", "srv", "mnt", "media", "boot", "opt"} & set(got["root"]) - {
        p.split("/")[1] for p in jails._interpreter()
    }, got["root"]
    assert got["dev"] == sorted(["fd", "full", "null", "random", "shm", "stderr", "stdin", "stdout", "urandom", "zero"])
    # and the host did not change
    assert Path("/etc/passwd").read_bytes() == passwd and Path("/usr/bin/env").read_bytes() == env_bin
    assert host["owned"].read_text() == "untouched\n"
    assert not Path("/usr/local/bin/lessonkit-escape").exists()
    assert host["sleeper"].poll() is None, "the host process was signalled"
    time.sleep(0.5)
    assert host["connected"] == [], "a host server accepted a connection from the box"


PROC_MOUNTS = r"""
import errno, json, os
mounts = {}
for line in open("/proc/self/mountinfo"):
    fields = line.split()
    mounts[fields[4]] = fields[5].split(",")
out = {p: ("ro" in mounts[p]) if p in mounts else "no mount" if os.path.exists(p) else "absent" for p in
       ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus")}
for path in ("/proc/sys/kernel/core_pattern", "/proc/sys/kernel/ns_last_pid"):
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_APPEND))
        out[path] = "ESCAPED"
    except OSError as exc:
        out[path] = errno.errorcode[exc.errno]
print(json.dumps(out, sort_keys=True))
"""


def test_proc_sys_and_its_siblings_are_read_only_mounts_in_either_jail(project, jail):
    job, result = _run(project, jail, PROC_MOUNTS)
    assert result.ok, (result.problem, result.stderr[-2000:])
    got = json.loads(result.stdout)
    assert got["/proc/sys"] is True, got  # a read-only mount, as mountinfo shows it
    for path in ("/proc/sysrq-trigger", "/proc/irq", "/proc/bus"):  # the same where the kernel has them
        assert got[path] in (True, "absent"), (path, got[path])
    for path in ("/proc/sys/kernel/core_pattern", "/proc/sys/kernel/ns_last_pid"):
        assert got[path] in {"EROFS", "EACCES"}, (path, got[path])


# ---------------------------------------------------------------- the record file


RECORD = """
import errno, os
r = os.environ["LESSONKIT_RECORD"]
out = []
for name, act in (("mkfifo", lambda: os.mkfifo(r)), ("symlink", lambda: os.symlink("/etc/passwd", r)),
                  ("remove", lambda: os.remove(r)), ("rename", lambda: os.rename(r, r + ".x")),
                  ("mkdir", lambda: os.mkdir(r)), ("create beside it", lambda: open(r + ".x", "w")),
                  ("hard link to it", lambda: os.link(r, "mine"))):
    try:
        act()
        out.append(name + " ESCAPED")
    except OSError as exc:
        out.append(name + " " + errno.errorcode[exc.errno])
open(r, "w").write('{"a": 1}')
print(", ".join(out))
"""


def test_in_a_jail_the_record_file_cannot_be_replaced(project, jail):
    """The record is the one file of the box's host folder it may write (a bind mount of it):
    no FIFO, link or folder can take its place, nothing can be created beside it."""
    job, result = _run(project, jail, RECORD)
    assert (result.ok, result.record) == (True, {"a": 1}), (result.problem, result.stderr[-1500:])
    assert result.stdout == (
        "mkfifo EEXIST, symlink EEXIST, remove EROFS, rename EROFS, mkdir EEXIST, create beside it EROFS, "
        "hard link to it EXDEV\n"
    )


@pytest.mark.parametrize(
    "what,make",
    [
        ("a FIFO", "os.remove(os.environ['LESSONKIT_RECORD'])\nos.mkfifo(os.environ['LESSONKIT_RECORD'])"),
        (
            "a symbolic link",
            "os.remove(os.environ['LESSONKIT_RECORD'])\nos.symlink(EXCERPTS, os.environ['LESSONKIT_RECORD'])",
        ),
        ("a folder", "os.remove(os.environ['LESSONKIT_RECORD'])\nos.mkdir(os.environ['LESSONKIT_RECORD'])"),
    ],
)
def test_a_record_that_is_not_a_regular_file_fails_at_once_without_a_jail(project, what, make):
    """Without a jail the script may replace the record file: the host side opens it without
    following a link, without blocking, and only as a regular file."""
    site, _ = project
    excerpts = site.root / "sourcemap" / "excerpts.json"
    excerpts.write_text('{"not": "a record"}')  # what a link would make the runner read
    t0 = time.monotonic()
    job, result = _run(
        project,
        jails.Jail("copy", "", "test"),
        f"import os\nEXCERPTS = {str(excerpts)!r}\n{make}\nprint('made')\n",
        timeout=30,
    )
    assert time.monotonic() - t0 < 10, "the runner waited on the record"
    assert (result.ok, result.record, result.stdout) == (False, None, "made\n")
    assert str(execute.failure(result, job, job.timeout).at(P, AT)) == (
        f"{P}:{AT}: experiment {P}:{AT} wrote a bad record to $LESSONKIT_RECORD: {what}, not a regular file "
        "— write one JSON object of at most 4 MiB, or nothing"
    )


# ---------------------------------------------------------------- keyrings, descriptors, the channel

KEYS = """
import ctypes, errno, json, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
L = ctypes.c_long
out = {}


def call(name, *args):
    r = libc.syscall(*args)
    out[name] = errno.errorcode.get(ctypes.get_errno(), "?") if r < 0 else f"ESCAPED {r}"
    return r


buf = ctypes.create_string_buffer(256)
call("session keyring", L(250), L(0), L(-3), L(0))  # KEYCTL_GET_KEYRING_ID of @s
n = call("read the host key", L(250), L(11), L(HOST_KEY), buf, L(256))  # KEYCTL_READ
if n > 0:
    out["read the host key"] += " " + buf.raw[:n].decode()
call("read the host keyring", L(250), L(11), L(HOST_KEYRING), buf, L(256))
call("update the host key", L(250), L(2), L(HOST_KEY), b"WRITTEN_BY_BOX", L(14))  # KEYCTL_UPDATE
call("add to the host keyring", L(248), b"user", b"box", b"WRITTEN_BY_BOX", L(14), L(HOST_KEYRING))
call("add to the session keyring", L(248), b"user", b"box", b"WRITTEN_BY_BOX", L(14), L(-3))
call("request a key", L(249), b"user", b"lessonkit-escape", None, L(0))
out["/proc/keys names the host key"] = "lessonkit-escape" in open("/proc/keys").read()
print(json.dumps(out, sort_keys=True))
"""

# A process of its own with a new session keyring holding one key (nothing of the machine's
# keyrings is touched), which runs KEYS in a box and then reads its key and keyring back.
KEY_HOST = """
import ctypes, json, sys
from pathlib import Path
sys.path.insert(0, {tests!r})
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
L = ctypes.c_long
keyring = libc.syscall(L(250), L(1), b"lessonkit-escape-test")  # KEYCTL_JOIN_SESSION_KEYRING (new)
key = libc.syscall(L(248), b"user", b"lessonkit-escape", b"HOST_KEYRING_SECRET", L(19), L(-3))
assert keyring > 0 and key > 0, ctypes.get_errno()
from lessonkit.run import runner as execute
from lessonkit.run.box import jail as jails
from lessonkit.run.runner import Job, Runner
from lessonkit.source.pin import load_pin
root = Path({root!r})
pin = load_pin(root / "sourcemap")
runner = Runner(Path({pinned!r}), pin.version, pin.manifest_digest, root / "experiments", Path({cache!r}),
                env_prefix="AUTOGRAD", jail=jails.Jail({kind!r}, {version!r}), **execute.pin_args(pin, root))
script = f"HOST_KEY = {{key}}\\nHOST_KEYRING = {{keyring}}\\n" + {script!r}
r = runner.run(Job("keys.py", script.encode(), 60, "docs/k.md:3"))
payload, ids = ctypes.create_string_buffer(256), ctypes.create_string_buffer(256)
n = libc.syscall(L(250), L(11), L(key), payload, L(256))  # KEYCTL_READ: the key's payload
m = libc.syscall(L(250), L(11), L(keyring), ids, L(256))  # ... the keyring's key ids, 4 bytes each
print(json.dumps([r.ok, r.stdout, r.stderr[-1000:], payload.raw[:n].decode() if n > 0 else n, m // 4]))
"""


def test_a_box_holds_no_key_of_the_build(project, jail, tmp_path):
    """The script gets a new, empty session keyring and every key syscall fails: it can neither
    read the build's keys (by its session keyring or by id) nor change or add one."""
    site, _ = project
    code = KEY_HOST.format(
        tests=str(Path(__file__).resolve().parents[1]),  # tests/: support.py
        root=str(site.root),
        pinned=str(site.pinned_root),
        cache=str(tmp_path / "cache"),
        kind=jail.kind,
        version=jail.version,
        script=KEYS,
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    ok, stdout, stderr, payload, keys = json.loads(r.stdout.strip().splitlines()[-1])
    assert ok, stderr
    got = json.loads(stdout)
    assert got == {
        "session keyring": "EPERM",
        "read the host key": "EPERM",
        "read the host keyring": "EPERM",
        "update the host key": "EPERM",
        "add to the host keyring": "EPERM",
        "add to the session keyring": "EPERM",
        "request a key": "EPERM",
        "/proc/keys names the host key": False,
    }
    assert (payload, keys) == ("HOST_KEYRING_SECRET", 1), "the box changed the build's keyring"


FDS = """
import errno, os
fds = sorted(int(n) for n in os.listdir("/proc/self/fd"))
print(fds[:3], len(fds))  # 0, 1, 2 and the listing's own
for fd in range(3, 64):
    try:
        os.write(fd, b"x")
        print("wrote to", fd)
    except OSError as exc:
        assert exc.errno == errno.EBADF, (fd, exc)
print("no other descriptor")
"""


def test_the_script_has_no_descriptor_but_0_1_2(project, jail):
    """Nothing of the launcher (its status pipe, bubblewrap's descriptors) reaches the script:
    writing to any other descriptor number fails, and the box's result is the script's."""
    job, result = _run(project, jail, FDS)
    assert (result.ok, result.stdout) == (True, "[0, 1, 2] 4\nno other descriptor\n"), result.stderr[-1500:]


def test_a_launcher_failure_comes_on_its_own_channel(project, jail, monkeypatch):
    """A box that cannot be built is reported as such, from what the launcher said on its channel
    (not from the script's stderr: see the catalogue's imitates-a-launcher-failure)."""
    plan = jails.plan
    missing = "/nonexistent-lessonkit-escape"
    monkeypatch.setattr(jails, "plan", lambda box_dir, pinned: [*plan(box_dir, pinned), ["ro", missing, "/x"]])
    job, result = _run(project, jail, "print('ran')\n")
    assert (result.ok, result.stdout, result.exit_code) == (False, "", 125)
    said = {
        "bwrap": "the box's init ended without a status (bwrap, status 256): "
        f"bwrap: Can't find source path {missing}: No such file or directory",
        "namespaces": f"open {missing}: No such file or directory",
    }[jail.kind]
    assert str(execute.failure(result, job, job.timeout).at(P, AT)) == (
        f"{P}:{AT}: experiment {P}:{AT} could not be started in its box: {said} — the jail failed, not the "
        "script: see docs/dev/reliability.md (LESSONKIT_SANDBOX chooses the jail)"
    )


# ---------------------------------------------------------------- what the box may write, and read

DISK = """
import errno, os
st = os.statvfs(".")
print("work/ holds MiB:", st.f_blocks * st.f_frsize >> 20)
for path in ("/lessonkit-box/planted", "/lessonkit-box/io/planted"):
    try:
        open(path, "w")
        print(path, "ESCAPED")
    except OSError as exc:
        print(path, errno.errorcode[exc.errno])
n = 0
while n < 20:  # 20 files of 10 MiB, 200 MiB: more than the working folder holds
    with open(f"f{n}", "wb") as f:
        for _ in range(10):
            f.write(b"\\0" * (1 << 20))
    n += 1
print("wrote", n * 10, "MiB")
"""


def test_the_working_folder_is_bounded(project, jail):
    """work/ is a tmpfs of WORK_SIZE; the box's folder on the host takes nothing but the record
    file. Filling it is one line that says so."""
    job, result = _run(project, jail, DISK)
    assert result.exit_code == 1 and result.stdout == (
        f"work/ holds MiB: {jails.WORK_SIZE >> 20}\n<box>/planted EROFS\n<box>/io/planted EROFS\n"
    ), (result.stdout, result.stderr[-1500:])
    assert str(execute.failure(result, job, job.timeout).at(P, AT)) == (
        f"{P}:{AT}: experiment {P}:{AT} ran out of space for the files it writes (No space left on device) — "
        "write less: in a jail its working folder holds 128 MiB, /tmp and /dev/shm 64 MiB each"
    )


PLANTED = """
import importlib.util, os, sys
import autograd, _provenance
print(getattr(autograd, "PLANTED", "pinned"), getattr(_provenance, "PLANTED", "project"))
prefix = os.environ["PYTHONPYCACHEPREFIX"]
print(
    os.path.exists(prefix + "/lessonkit-box/project"), os.path.exists(prefix + CHECKOUT), os.path.isdir(prefix + BASE)
)
with open(autograd.__file__, "rb") as f:
    source = f.read()
with open(importlib.util.cache_from_source(autograd.__file__), "rb") as f:
    pyc = f.read()
# the runner's own: checked-hash (flags 3), of this very source
magic, flags, digest = pyc[:4], int.from_bytes(pyc[4:8], "little"), pyc[8:16]
print(magic == importlib.util.MAGIC_NUMBER, flags, digest == importlib.util.source_hash(source))
"""


def test_a_planted_bytecode_file_is_never_read(project, jail, tmp_path, monkeypatch):
    """The bytecode folder a box is given holds only the bytecode of the interpreter's folders
    and, for the pinned copy, the checked-hash bytecode the runner compiled from the checked
    bytes: an unchecked-hash .pyc planted for the pinned copy or a project file (at the fixed
    ``<prefix>/lessonkit-box/…``) is not in the box, nor is lessonkit's own bytecode."""
    import py_compile

    prefix = tmp_path / "pycache"
    checkout = str(Path(__file__).resolve().parents[2] / "lessonkit")
    (prefix / sys.base_prefix.lstrip("/")).mkdir(parents=True)  # the interpreter's: shown
    (prefix / checkout.lstrip("/")).mkdir(parents=True)  # lessonkit's: not shown
    for where in (f"{jails.BOX}/pinned/autograd/__init__", f"{jails.BOX}/project/experiments/_provenance"):
        src = tmp_path / "planted.py"
        src.write_text("PLANTED = 'planted'\n")
        pyc = prefix / f"{where.lstrip('/')}.{sys.implementation.cache_tag}.pyc"
        pyc.parent.mkdir(parents=True, exist_ok=True)
        py_compile.compile(
            str(src),
            cfile=str(pyc),
            dfile=where + ".py",
            invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
        )
    monkeypatch.setattr(sys, "pycache_prefix", str(prefix))
    script = f"CHECKOUT = {checkout!r}\nBASE = {sys.base_prefix!r}\n" + PLANTED
    job, result = _run(project, jail, script)
    assert (result.ok, result.stdout) == (True, "pinned project\nFalse False True\nTrue 3 True\n"), result.stderr[
        -1500:
    ]


# ---------------------------------------------------------------- what the box wrote

SHM = """
import os
before = (sorted(os.listdir("/dev/shm")), sorted(os.listdir("/tmp")))
for d in ("/dev/shm", "/tmp"):
    with open(os.path.join(d, "lessonkit-escape-" + TAG), "wb") as fh:
        fh.write(b"x" * (8 << 20))
print(before)
"""


def _mount_points_in_tmp() -> list[str]:
    """What a box's own /tmp shows besides its files: the first folder below /tmp of each host path
    the box is given at the same place (the interpreter's environment, the checkout, the bytecode
    folder), when that path lies under /tmp (a checkout cloned into a temporary folder)."""
    names = set()
    for p in (sys.prefix, sys.base_prefix, str(ROOT), os.environ.get("PYTHONPYCACHEPREFIX") or ""):
        real = Path(os.path.realpath(p)) if p else None
        if real is not None and real.is_relative_to("/tmp") and real != Path("/tmp"):
            names.add(real.relative_to("/tmp").parts[0])
    return sorted(names)


def test_what_the_box_wrote_to_dev_shm_and_tmp_is_gone(project, jail):
    tag = hashlib.sha256(os.urandom(8)).hexdigest()[:12]
    script = f"TAG = {tag!r}\n" + SHM
    empty = ([], _mount_points_in_tmp())
    for n in range(2):  # the second run starts with an empty /dev/shm and /tmp as well
        _, result = _run(project, jail, script.replace("print(before)", f"print(before, {n})"))
        assert (result.ok, result.stdout) == (True, f"{empty} {n}\n"), result.stderr[-1500:]
        assert not list(Path("/dev/shm").glob(f"lessonkit-escape-{tag}")), "/dev/shm kept the box's file"
        assert not list(Path(tempfile.gettempdir()).glob(f"lessonkit-escape-{tag}"))
        assert not list(Path("/tmp").glob(f"lessonkit-escape-{tag}"))


# ---------------------------------------------------------------- a second build at the same time

VICTIM = """
import hashlib, os, time
open("secret.txt", "w").write("mine")
time.sleep(SLEEP)
pinned = os.path.join(os.environ["AUTOGRAD_PINNED_ROOT"], "autograd", "__init__.py")
print(open("secret.txt").read(), hashlib.sha256(open(pinned, "rb").read()).hexdigest())
"""

SECOND_BUILD = """
import json, sys
from pathlib import Path
sys.path.insert(0, {tests!r})
from lessonkit.run import runner as execute
from lessonkit.run.box import jail as jails
from lessonkit.run.runner import Job, Runner
from lessonkit.source.pin import load_pin
root, cache = Path({root!r}), Path({cache!r})
pin = load_pin(root / "sourcemap")
runner = Runner(Path({pinned!r}), pin.version, pin.manifest_digest, root / "experiments", cache,
                env_prefix="AUTOGRAD", jail=jails.Jail({kind!r}, {version!r}), **execute.pin_args(pin, root))
r = runner.run(Job("victim.py", {victim!r}.encode(), 60, "docs/v.md:3"))
print(json.dumps([r.ok, r.stdout, r.stderr[-1000:]]))
"""

# Looks for the other build's boxes for 4 s (while its victim sleeps) everywhere a box can be
# found from inside, and appends to whatever it finds: its common copy of the pinned tree, its
# working folder.
ATTACKER = """
import glob, os, time
found, end = set(), time.monotonic() + 4
while not found and time.monotonic() < end:
    for top in (TMP, "/tmp", "/", "/lessonkit-box/.."):
        for pattern in ("lessonkit-exp-*/box-*/pinned/autograd/__init__.py", "lessonkit-exp-*/*/work/secret.txt",
                        "lessonkit-exp-*/*/work/victim.py", "*/pinned/autograd/__init__.py", "*/work/secret.txt"):
            found.update(p for p in glob.glob(os.path.join(top, pattern)) if not p.startswith("/lessonkit-box/"))
    time.sleep(0.05)
for p in found:
    try:
        open(p, "a").write("theirs")
    except OSError:
        pass
print(len(found))
"""


def test_a_box_of_a_concurrent_build_can_be_neither_found_nor_written(project, jail, tmp_path, pinned_root):
    site, pin = project
    tests = str(Path(__file__).resolve().parents[1])  # tests/: support.py
    code = SECOND_BUILD.format(
        tests=tests,
        root=str(site.root),
        cache=str(tmp_path / "second-cache"),
        pinned=str(site.pinned_root),
        kind=jail.kind,
        version=jail.version,
        victim=VICTIM.replace("SLEEP", "5"),
    )
    second = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=Path(__file__).resolve().parents[2],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        boxes = []  # the second build's box, as the host sees it: it is running
        while not boxes and time.monotonic() < deadline and second.poll() is None:
            boxes = list(Path(tempfile.gettempdir()).glob(f"{sandbox.PREFIX}{second.pid}.*/box-*/work/victim.py"))
            time.sleep(0.05)
        assert boxes, "the second build's box never appeared"
        _, attack = _run(project, jail, f"TMP = {tempfile.gettempdir()!r}\n" + ATTACKER, cache=tmp_path / "first")
        out, err = second.communicate(timeout=60)
    finally:
        second.kill()
    assert (attack.ok, attack.stdout) == (True, "0\n"), attack.stderr[-1500:]
    ok, stdout, stderr = json.loads(out.strip().splitlines()[-1])
    digest = pin.manifest["autograd/__init__.py"]
    assert (ok, stdout) == (True, f"mine {digest}\n"), (stderr, err[-1500:])


# ---------------------------------------------------------------- the build says which jail it used


@pytest.mark.parametrize("mode", ["", "copy"])
def test_the_build_states_its_jail_and_warns_once_without_one(tmp_path, pinned_root, mode):
    from support import block

    s = TmpSite(tmp_path / "proj", pinned_root)
    s.page("a.md", "# a\n\n" + block("experiment", "Purpose: a", body="print(1)") + "\n")
    s.page("b.md", "# b\n\n" + block("experiment", "Purpose: b", body="print(2)") + "\n")
    s.env["LESSONKIT_SANDBOX"] = mode
    r = s.build()
    assert r.returncode == 0, r.stderr[-3000:]
    page = (s.root / "site" / "attachments" / "acceptance" / "index.html").read_text(encoding="utf-8")
    warning = (
        "lessonkit: experiments run without a jail (LESSONKIT_SANDBOX=copy): on private copies, as the "
        "build's own user, able to read and write what that user can — see docs/dev/reliability.md"
    )
    warnings = [line for line in r.stderr.splitlines() if "without a jail" in line]
    jail = jails.Jail("copy", "", "LESSONKIT_SANDBOX=copy") if mode else sandbox.jail()
    assert len(warnings) == (0 if jail.isolated else 1)  # one line per build process, never silent
    if mode:
        assert warnings == [warning]
    assert f"<strong>Jail:</strong> {jail.describe()}." in page, page[-3000:]


def test_a_jail_asked_for_that_does_not_work_is_a_build_error(tmp_path, pinned_root):
    """CI asks for bubblewrap (`.ci/run`, the workflow: LESSONKIT_SANDBOX=bwrap): where it is
    missing the build fails with one line, instead of running without a jail after a warning."""
    from support import block

    s = TmpSite(tmp_path / "proj", pinned_root)
    s.page("a.md", "# a\n\n" + block("experiment", "Purpose: a", body="print(1)") + "\n")
    empty = tmp_path / "bin"
    empty.mkdir()
    s.env.update(LESSONKIT_SANDBOX="bwrap", PATH=f"{os.path.dirname(sys.executable)}:{empty}")
    r = s.build()
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert [line for line in r.stderr.splitlines() if "LESSONKIT_SANDBOX" in line] == [
        "ERROR   -  LESSONKIT_SANDBOX: is `bwrap` but that jail does not work here: bwrap: bwrap is not installed — "
        "install bubblewrap (Debian's `bubblewrap`), or unset LESSONKIT_SANDBOX to use whichever jail works, "
        "or set it to `copy`"
    ]
    assert "without a jail" not in r.stderr  # no fallback


def test_ci_installs_and_requires_the_jail():
    """The CI entry point and the workflow install bubblewrap and ask for it."""
    root = Path(__file__).resolve().parents[2]
    run = (root / ".ci" / "run").read_text(encoding="utf-8")
    workflow = (root / ".github" / "workflows" / "site.yml").read_text(encoding="utf-8")
    assert "bubblewrap" in run and 'export LESSONKIT_SANDBOX="${LESSONKIT_SANDBOX:-bwrap}"' in run
    assert "apt-get install -y chromium fonts-noto-cjk bubblewrap" in workflow
    assert "LESSONKIT_SANDBOX: bwrap" in workflow
    assert "kernel.apparmor_restrict_unprivileged_userns=0" in workflow  # Ubuntu 24.04's runners
