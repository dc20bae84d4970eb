"""The jail of a box: which one this machine gives, and what a box shows inside it.

Three kinds, tried in this order unless ``LESSONKIT_SANDBOX`` names one:

* ``bwrap``: bubblewrap (``bwrap`` on ``PATH``, e.g. Debian's ``bubblewrap``) builds the box;
* ``namespaces``: lessonkit's own launcher (``_boot.py``: ``unshare``, ``pivot_root``) builds
  the same box;
* ``copy``: no jail (user namespaces do not work here): the script runs on private copies as
  the build's own user. One warning says so, and the acceptance page records it.

Both jails give the script the same view (:func:`plan`): a read-only root holding ``/usr`` (the
C library and what the dynamic loader finds), the interpreter's own folders (``sys.prefix``,
``sys.base_prefix``, the bytecode folder of the nox environment), stub ``/etc/passwd``,
``/etc/group``, ``/etc/hosts`` and ``/etc/nsswitch.conf``, the loader's cache, a minimal ``/dev``
(``null``, ``zero``, ``full``, ``random``, ``urandom``, ``fd``), a fresh ``/proc`` of its own PID
namespace (``/proc/sys`` read-only), private tmpfs ``/tmp`` and ``/dev/shm``; no ``/sys``, no
``/home``, no ``/root`` beyond the folders of an interpreter installed there, no host socket.
Only the parts of the bytecode folder (``PYTHONPYCACHEPREFIX``) for ``/usr`` and the interpreter's
folders are shown; for the box's own paths only the checked-hash bytecode of ``pinned/`` that the
runner compiled from the checked copy (nothing of the folder on disk). Its own folder is :data:`BOX`: ``work/`` (the
working folder, ``$HOME``, ``$TMPDIR``: a tmpfs of :data:`WORK_SIZE`, filled with the script by
the launcher), ``io/record.json`` (the record file: the one file on the host it may write),
``pinned/`` and ``project/`` (read-only: the checked copies). The
user is 1000 with no capabilities, on the host ``nobody`` when the build runs as root and the
builder's own uid otherwise (the one id an unprivileged process may map), in new user, mount,
PID, network (loopback only), IPC, UTS and cgroup namespaces, and it cannot make a user
namespace of its own. Everything the box wrote outside its folder is in memory of its mount
namespace and goes with it.
"""

from __future__ import annotations

import binascii
import logging
import marshal
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from lessonkit.errors import LessonError

log = logging.getLogger("lessonkit.run.box.sandbox")  # not under "mkdocs": see sandbox.log

BOOT = Path(__file__).with_name("_boot.py")
BOX = "/lessonkit-box"  # the box's folder, as the script sees it in a jail
BOOT_IN_JAIL = "/run/lessonkit/boot.py"  # bubblewrap runs the launcher's init from here
SEED_IN_JAIL = "/run/lessonkit/work"  # the host's working folder (the script), copied into work/
HOSTNAME = "lessonkit"
BOX_ID, HOST_BOX_ID = 1000, 65534  # the script's uid inside; on the host for a root build (_boot.py)
TMP_SIZE = SHM_SIZE = 64 << 20  # the private /tmp and /dev/shm (memory of the box, gone with it)
WORK_SIZE = 128 << 20  # the box's working folder, $HOME and $TMPDIR: a tmpfs too
DEVICES = ("null", "zero", "full", "random", "urandom")
ETC = {
    "passwd": f"root:x:0:0:root:/:/usr/sbin/nologin\nbox:x:{BOX_ID}:{BOX_ID}:lessonkit box:{BOX}/work:"
    "/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
    "group": f"root:x:0:\nbox:x:{BOX_ID}:\nnogroup:x:65534:\n",
    "hosts": "127.0.0.1 localhost\n::1 localhost\n",
    "nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files\n",
}
KINDS = ("bwrap", "namespaces", "copy")


@dataclass(frozen=True)
class Jail:
    """The jail boxes run in: ``kind`` (one of :data:`KINDS`), the tool's ``version`` (bubblewrap's;
    empty for the others), and for ``copy`` ``why`` no jail works here."""

    kind: str
    version: str = ""
    why: str = ""

    @property
    def isolated(self) -> bool:
        return self.kind != "copy"

    @property
    def root(self) -> str | None:
        """The box's folder as the script sees it (None: its real path, without a jail)."""
        return BOX if self.isolated else None

    def describe(self) -> str:
        """One English line for logs and the engine's acceptance page."""
        who = "host user nobody" if os.geteuid() == 0 else "the builder's own user"
        if self.kind == "copy":
            return f"none: experiments ran on private copies as the build's own user, without isolation ({self.why})"
        tool = f"bubblewrap {self.version}" if self.kind == "bwrap" else "lessonkit's own launcher (pivot_root)"
        return (
            f"{tool}: new user, mount, PID, network, IPC, UTS and cgroup namespaces; the script runs "
            f"as user {BOX_ID} ({who}) without capabilities in a read-only root holding only the "
            "interpreter, the checked copies and its own folder"
        )


# ---------------------------------------------------------------- what a box shows


def _inside(p: str, q: str) -> bool:
    return p == q or p.startswith(q.rstrip("/") + "/")


def _interpreter() -> list[str]:
    """The interpreter's own folders (a venv, the Python it was made from), outside ``/usr``;
    each once, the outermost of nested ones."""
    found = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    found.append(os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))))
    venv = os.path.dirname(os.path.dirname(os.path.abspath(sys.executable)))
    if os.path.isfile(os.path.join(venv, "pyvenv.cfg")):  # the script's python is a venv's (even under -S)
        found.append(venv)
    out: list[str] = []
    for p in sorted({os.path.abspath(p) for p in found}, key=len):
        if p != "/" and os.path.isdir(p) and not any(_inside(p, q) for q in ["/usr", *out]):
            out.append(p)
    return out


def bytecode_prefix() -> str | None:
    """The bytecode folder boxes read (``sys.pycache_prefix``, the nox environment's), or None: none
    is given to a box where it is not an absolute folder, or holds the interpreter's own folders."""
    prefix = sys.pycache_prefix
    if not prefix or not os.path.isabs(prefix) or not os.path.isdir(prefix):
        return None
    prefix = os.path.abspath(prefix)
    if any(_inside(q, prefix) for q in ["/usr", *_interpreter()]):
        return None
    return prefix


def _bytecode(prefix: str | None, pinned_bytecode: Path | None = None) -> list[list]:
    """The bytecode folder as a box sees it: an empty read-only tmpfs holding, read-only, only the
    bytecode of ``/usr`` and of the interpreter's folders (the standard library, site-packages),
    and at ``<prefix>/lessonkit-box/pinned`` the checked-hash bytecode that the runner compiled
    from the checked pinned copy (``pinned_bytecode``, the common copy's; see
    ``CheckedTree.write_bytecode``). Nothing else of it is in the box: not the bytecode of
    lessonkit, of hooks, of the project, and nothing of the folder on disk for the box's own
    paths, so a planted ``<prefix>/lessonkit-box/…`` file is never read."""
    if prefix is None:
        return []
    steps: list[list] = [["tmpfs", prefix, 0o755, 1 << 16]]
    for p in ["/usr", *_interpreter()]:
        mirror = prefix + p
        if os.path.isdir(mirror) and not os.path.islink(mirror):
            steps.append(["ro", mirror, mirror])
    if pinned_bytecode is not None and pinned_bytecode.is_dir() and not pinned_bytecode.is_symlink():
        steps.append(["ro", str(pinned_bytecode), f"{prefix}{BOX}/pinned"])
    return steps + [["remount-ro", prefix]]


def plan(box_dir: Path, pinned: Path) -> list[list]:
    """The steps that build a box's root (executed by ``_boot.py`` or given to bubblewrap), in
    order: read-only binds (``ro``), the record file (``rw``), device nodes (``dev``), tmpfs,
    folders, links, small files, ``/proc`` and a tmpfs made read-only once filled
    (``remount-ro``; ``/`` is, at the end). ``pinned`` is the checked copy to show at
    ``pinned/`` (the common copy, or the box's own).

    Of the box's folder on the host only the record file ``io/record.json`` is writable in the
    box (it cannot be replaced: it is a mount point); ``work/`` is a tmpfs of :data:`WORK_SIZE`
    that the launcher fills from the host's ``work/`` (shown read-only at :data:`SEED_IN_JAIL`),
    so that a box writes at most that much memory and 64 MiB per file to the host's disk."""
    steps: list[list] = [["ro", "/usr", "/usr"]]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):  # usr-merged: links into /usr
        p = f"/{name}"
        if os.path.islink(p):
            steps.append(["symlink", os.readlink(p), p])
        elif os.path.isdir(p):
            steps.append(["ro", p, p])
    steps += [["tmpfs", "/tmp", 0o1777, TMP_SIZE], ["tmpfs", "/dev", 0o755, 1 << 16]]
    steps += [["dev", f"/dev/{d}", f"/dev/{d}"] for d in DEVICES if os.path.exists(f"/dev/{d}")]
    steps += [["symlink", "/proc/self/fd", "/dev/fd"]]
    steps += [["symlink", f"/proc/self/fd/{n}", f"/dev/{name}"] for n, name in enumerate(("stdin", "stdout", "stderr"))]
    steps += [["tmpfs", "/dev/shm", 0o1777, SHM_SIZE], ["remount-ro", "/dev"], ["proc", "/proc"]]
    steps += [["file", f"/etc/{name}", text] for name, text in ETC.items()]
    for p in ("/etc/ld.so.cache", "/etc/alternatives"):  # how the loader finds /usr's libraries
        if os.path.exists(p):
            steps.append(["ro", p, p])
    steps += [["ro", p, p] for p in _interpreter()]
    steps += _bytecode(bytecode_prefix(), pinned.parent / "bytecode")  # the common copy's (sandbox.Box)
    steps += [["ro", str(BOOT), BOOT_IN_JAIL], ["ro", str(box_dir / "work"), SEED_IN_JAIL]]
    steps += [["ro", str(pinned), f"{BOX}/pinned"], ["ro", str(box_dir / "project"), f"{BOX}/project"]]
    steps += [
        ["tmpfs", f"{BOX}/work", 0o1777, WORK_SIZE],
        ["rw", str(box_dir / "io" / "record.json"), f"{BOX}/io/record.json"],
    ]
    return steps


def encode_config(cfg: dict) -> str:
    """The launcher's one argument (``_boot.py`` decodes it): ``cfg`` as marshal's bytes in base64."""
    return binascii.b2a_base64(marshal.dumps(cfg), newline=False).decode("ascii")


def launcher_config(
    jail: Jail,
    box_dir: Path,
    pinned: Path,
    *,
    argv: list[str],
    env: dict[str, str],
    cwd: str,
    memory: int,
    fsize: int,
    nproc: int,
    cgroup: str | None = None,
    stderr: int | None = None,
) -> dict:
    """What ``_boot.py`` reads (one JSON argument). ``stderr``: the descriptor (passed to the
    launcher) that becomes the script's stderr; the launcher's own is the runner's channel."""
    cfg = {
        "parent": os.getpid(),
        "jail": jail.kind,
        "cgroup": cgroup,
        "memory": memory,
        "fsize": fsize,
        "nproc": nproc,
        "cwd": cwd,
        "env": env,
        "argv": argv,
        "stderr": stderr,
        "seed": None,
    }
    if jail.isolated:
        cfg.update(plan=plan(box_dir, pinned), hostname=HOSTNAME, python=sys.executable, boot=BOOT_IN_JAIL)
        cfg["bwrap"] = shutil.which("bwrap") or "bwrap"
        cfg["seed"] = [SEED_IN_JAIL, f"{BOX}/work"]
    return cfg


def make_record(box_dir: Path, ids: tuple[int, int] | None) -> None:
    """The empty record file the box may write (in a jail the one writable file of its folder on
    the host; empty afterwards: no record), owned by the box's user (``ids``; None: the builder)."""
    fd = os.open(box_dir / "io" / "record.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        if ids is not None:
            os.fchown(fd, *ids)
    finally:
        os.close(fd)


def box_owner(jail: Jail) -> tuple[int, int] | None:
    """Who must own a box's writable folders on the host (None: the builder, as they are made)."""
    return (HOST_BOX_ID, HOST_BOX_ID) if jail.isolated and os.geteuid() == 0 else None


# ---------------------------------------------------------------- which jail works here

PROBE = "import os, sys\nsys.exit(0 if os.getuid() == 1000 and os.listdir('/lessonkit-box/work') == [] else 3)\n"


def probe(kind: str) -> str:
    """Run ``python -c PROBE`` in a box of this kind: "" when it works, else why not."""
    if kind == "bwrap" and shutil.which("bwrap") is None:
        return "bwrap is not installed"
    from lessonkit.run.box.sweep import PREFIX

    jail = Jail(kind)
    d = Path(tempfile.mkdtemp(prefix=f"{PREFIX}probe-"))
    try:
        for sub in ("work", "io", "pinned", "project"):
            (d / sub).mkdir()
        make_record(d, box_owner(jail))
        cfg = launcher_config(
            jail,
            d,
            d / "pinned",
            argv=[sys.executable, "-I", "-S", "-c", PROBE],
            env={"PATH": "/usr/bin:/bin"},
            cwd=f"{BOX}/work",
            memory=1 << 30,
            fsize=1 << 20,
            nproc=64,
        )
        r = subprocess.run(
            [sys.executable, "-I", "-S", str(BOOT), encode_config(cfg)],
            capture_output=True,  # stderr: the launcher's channel (the probe's own stderr is the same)
            timeout=30,
            stdin=subprocess.DEVNULL,
            process_group=0,  # like the boxes: a Ctrl-C at the terminal is the build's, not the probe's
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    if r.returncode == 0:
        return ""
    lines = r.stderr.decode("utf-8", "replace").strip().splitlines()
    return (lines[-1] if lines else f"exit code {r.returncode}").removeprefix("lessonkit-box: ")


def _version(kind: str) -> str:
    if kind != "bwrap":
        return ""
    try:
        out = subprocess.run(["bwrap", "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.strip().removeprefix("bubblewrap ") or "unknown"


@lru_cache(maxsize=1)
def selected() -> Jail:
    """The jail of this process's boxes, probed once: ``LESSONKIT_SANDBOX`` (``bwrap``,
    ``namespaces``: that one or a located error; ``copy``: none), else the first of bubblewrap
    and the own launcher that works here, else none with one warning."""
    from lessonkit.config.environment import sandbox_mode

    mode = sandbox_mode()
    order = {"": ("bwrap", "namespaces"), "copy": ()}.get(mode, (mode,))
    reasons = []
    for kind in order:
        why = probe(kind)
        if not why:
            return Jail(kind, _version(kind))
        reasons.append(f"{kind}: {why}")
    if mode:
        if mode != "copy":  # asked for (CI does: .ci/run): a missing jail is an error, not a warning
            install = (
                "install bubblewrap (Debian's `bubblewrap`), or " if mode == "bwrap" and "installed" in why else ""
            )
            raise LessonError(
                f"is `{mode}` but that jail does not work here: {'; '.join(reasons)}",
                path="LESSONKIT_SANDBOX",
                hint=f"{install}unset LESSONKIT_SANDBOX to use whichever jail works, or set it to `copy`",
            )
        reasons = ["LESSONKIT_SANDBOX=copy"]
    jail = Jail("copy", "", "; ".join(reasons))
    log.warning(
        "lessonkit: experiments run without a jail (%s): on private copies, as the build's own user, "
        "able to read and write what that user can — see docs/dev/reliability.md",
        jail.why,
    )
    return jail
