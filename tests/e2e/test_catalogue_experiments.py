"""Catalogue of hostile and unlucky experiments: each runs in a box and ends in one exact outcome.

Every case is one script run by the build's own ``Runner`` against a small project
(``TmpSite``) whose pinned tree is a private copy, and asserts:

* the exact outcome: the exact ``docs/p.md:3: message — hint`` line for a failure
  (``execute.failure`` located at the block, as the build prints it), or the exact
  sanitised stdout for a pass;
* the exit code the script ended with;
* an untouched project: nothing under ``docs/``, ``experiments/``, ``sourcemap/``,
  the cache (apart from the new entry of a passing run), the pinned tree or ``$HOME``
  changed; no failed run is cached; no temporary folder and no process of the box
  is left.

Escape cases need a jail (``lessonkit.run.box.jail``); where none works they are skipped with
that reason (the fallback's limits are in docs/dev/reliability.md). In a jail the project, the
cache, the pinned tree and ``$HOME`` are not in the box at all (ENOENT), the box's own copies
are read-only (EROFS); tests/e2e/test_escape.py attacks the host itself.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import TmpSite

from lessonkit.run import jobs as run_jobs
from lessonkit.run import runner as execute
from lessonkit.run.box import jail as jails
from lessonkit.run.box import sandbox
from lessonkit.run.runner import Job, Runner
from lessonkit.source.pin import load_pin
from lessonkit.util import seal

P = "docs/p.md"
AT = 3  # the block's fence line
HOME_PROBE = Path.home() / "lessonkit-escape-probe"
RUN = f"run it by hand: lessonkit run {P}:{AT}"


@dataclass(frozen=True)
class Case:
    script: str
    code: int  # the exit code the script ends with (-N: killed by signal N)
    stdout: str | None = None  # exact, for a pass
    error: str | None = None  # exact message line for a failure ("{P}" and "{AT}" filled in)
    timeout: int = 30
    memory: int = sandbox.DEFAULT_MEMORY
    needs: str = ""  # "ns": needs the namespaces of the box; "cgroup": the pids cgroup
    stderr: str | None = None
    record: object = "absent"  # the expected record, when the case is about it


def fail(msg: str, hint: str = RUN) -> str:
    return f"{P}:{AT}: experiment {P}:{AT} {msg} — {hint}"


# Paths the escape cases aim at; filled in from the fixture's project.
TARGETS = {
    "docs": "docs/p.md",
    "experiments": "experiments/_provenance.py",
    "sourcemap": "sourcemap/pin.toml",
    "cache": ".cache/experiments/planted.json",
}

ESCAPE = """
import os, sys
target = {target!r}
try:
    {action}
    print("escaped")
except OSError as exc:
    print("blocked", {{2: "absent", 13: "read-only", 30: "read-only"}}.get(exc.errno, exc.errno))
"""


def escape(action: str, target: str, why: str = "absent") -> Case:
    """``absent``: ENOENT, not in the box (the host's folders are not in a jail's root);
    ``read-only``: EROFS, or EACCES where the file is not the box user's (a root build's)."""
    return Case(ESCAPE.format(action=action, target=target), 0, stdout=f"blocked {why}\n", needs="ns")


CASES: dict[str, Case] = {}

# $HOME is in the box only where the interpreter lives below it (a pyenv in /root): read-only there
HOME_IN_BOX = any(p == str(Path.home()) or p.startswith(f"{Path.home()}/") for p in jails._interpreter())

# -- escape attempts: the project, the cache, the pinned tree and $HOME are not in the box
for what in TARGETS:
    CASES[f"write-{what}"] = escape("open(os.path.join(os.environ['LK_ROOT'], target), 'w').write('x')", TARGETS[what])
    CASES[f"delete-{what}"] = escape("os.remove(os.path.join(os.environ['LK_ROOT'], target))", TARGETS[what])
CASES["write-pinned"] = escape(
    "open(os.path.join(os.environ['LK_PINNED'], target), 'a').write('x')", "autograd/__init__.py"
)
CASES["truncate-pinned"] = escape("os.truncate(os.path.join(os.environ['LK_PINNED'], target), 0)", "autograd/core.py")
CASES["write-home"] = escape("open(target, 'w').write('x')", str(HOME_PROBE), "read-only" if HOME_IN_BOX else "absent")
CASES["mkdir-in-project"] = escape("os.mkdir(os.path.join(os.environ['LK_ROOT'], target))", "docs/new")
CASES["rename-experiment"] = escape(
    "os.rename(os.path.join(os.environ['LK_ROOT'], target), os.path.join(os.environ['LK_ROOT'], 'x.py'))",
    "experiments/_provenance.py",
)
CASES["symlink-into-docs"] = escape(
    "os.symlink('/etc/passwd', os.path.join(os.environ['LK_ROOT'], target))", "docs/evil.md"
)
CASES["chmod-project"] = escape("os.chmod(os.path.join(os.environ['LK_ROOT'], target), 0o777)", "sourcemap")
CASES["write-own-pinned-copy"] = escape(
    "open(os.path.join(os.environ['AUTOGRAD_PINNED_ROOT'], target), 'a')", "autograd/core.py", "read-only"
)
CASES["write-own-experiments-copy"] = escape(
    "open(os.path.join(os.environ['PYTHONPATH'].split(':')[1], target), 'a')", "_provenance.py", "read-only"
)
CASES["write-the-jail-root"] = escape("open(target, 'w')", "/planted", "read-only")
CASES["write-usr"] = escape("open(target, 'w')", "/usr/local/bin/planted", "read-only")
# A box sees nothing of the host's temporary folder: not its process's folder of boxes, not the
# common copy its pinned/ is mounted from (box.tree.CheckedTree.common_copy), not another box;
# its own folder holds exactly what the runner put there.
CASES["other-boxes-are-hidden"] = Case(
    """
import glob, os
own = os.path.dirname(os.environ["AUTOGRAD_PINNED_ROOT"])
print(own, sorted(os.listdir(own)))
print(glob.glob(os.path.join(os.environ["LK_TMP"], "lessonkit-exp-*")))
""",
    0,
    stdout="<box> ['io', 'pinned', 'project', 'work']\n[]\n",
    needs="ns",
)
CASES["write-via-proc-root"] = escape(
    "open('/proc/self/root' + os.environ['LK_ROOT'] + '/' + target, 'w')", "docs/p.md"
)
CASES["project-is-not-in-the-box"] = Case(
    "import os\nprint(os.path.exists(os.environ['LK_ROOT']), os.path.exists(os.environ['LK_ROOT'] + '/.cache'))\n",
    0,
    stdout="False False\n",
    needs="ns",
)
CASES["unmount-the-view"] = Case(
    "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    "print(libc.umount2(os.environ['AUTOGRAD_PINNED_ROOT'].encode(), 2), ctypes.get_errno())\n",
    0,
    stdout="-1 1\n",
    needs="ns",
)
CASES["remount-read-write"] = Case(
    "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    "print(libc.mount(None, os.environ['AUTOGRAD_PINNED_ROOT'].encode(), None, 32 | 4096, None), "
    "ctypes.get_errno())\n",
    0,
    stdout="-1 1\n",
    needs="ns",
)
CASES["no-network"] = Case(
    "import socket\ns = socket.socket()\ns.settimeout(5)\ntry:\n    s.connect(('10.255.255.1', 80))\n"
    "    print('connected')\nexcept OSError as exc:\n    print('no network', exc.errno)\n",
    0,
    stdout="no network 101\n",
    needs="ns",
)
CASES["not-root-inside"] = Case("import os\nprint(os.getuid() != 0)\n", 0, stdout="True\n", needs="ns")

# -- processes: nothing outlives the experiment, nothing reaches the build
CASES["setsid-daemon"] = Case(
    "import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'], "
    "start_new_session=True)\nprint('daemon started')\n",
    0,
    stdout="daemon started\n",
)
CASES["double-fork-daemon"] = Case(
    "import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        time.sleep(300)\n"
    "    os._exit(0)\nos.wait()\nprint('daemonised')\n",
    0,
    stdout="daemonised\n",
)
CASES["fork-tree-within-limits"] = Case(
    "import os, time\nfor _ in range(5):\n    if os.fork() == 0:\n        time.sleep(300)\n        os._exit(0)\n"
    "print('forked')\n",
    0,
    stdout="forked\n",
)
CASES["fork-bomb-hits-the-limit"] = Case(
    "import os, time\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        time.sleep(0.2)\n",
    -9,
    error=fail("did not finish within 3 s and was stopped", "make it faster, or raise `Timeout:` for this block"),
    timeout=3,
    needs="cgroup",
)
CASES["kill-the-parent"] = Case(  # the box's init: not the script's to signal (root builds), or immune
    "import os, signal\ntry:\n    os.kill(os.getppid(), signal.SIGKILL)\nexcept OSError:\n    pass\n"
    "print('still here')\n",
    0,
    stdout="still here\n",
    needs="ns",
)
CASES["kill-everything"] = Case(
    "import os, signal\ntry:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError:\n    pass\nprint('still here')\n",
    0,
    stdout="still here\n",
    needs="ns",
)
CASES["cannot-see-the-build"] = Case(
    "import os\nprint(os.getppid() == 1, len([p for p in os.listdir('/proc') if p.isdigit()]) > 0)\n",
    0,
    stdout="True True\n",
    needs="ns",
)
CASES["timeout"] = Case(
    "import time\nprint('started', flush=True)\ntime.sleep(60)\n",
    -9,
    error=fail("did not finish within 2 s and was stopped", "make it faster, or raise `Timeout:` for this block"),
    timeout=2,
)
CASES["timeout-child-ignores-term"] = Case(
    "import signal, subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', 'import signal, time; "
    "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)'], start_new_session=True)\ntime.sleep(60)\n",
    -9,
    error=fail("did not finish within 2 s and was stopped", "make it faster, or raise `Timeout:` for this block"),
    timeout=2,
)

# -- exit codes and signals
CASES["exit-0"] = Case("import sys\nprint('fine')\nsys.exit(0)\n", 0, stdout="fine\n")
CASES["exit-3"] = Case(
    "import sys\nprint('partial')\nsys.exit(3)\n", 3, error=fail("failed with exit code 3: no stderr")
)
CASES["exit-255"] = Case("import sys\nsys.exit(255)\n", 255, error=fail("failed with exit code 255: no stderr"))
CASES["exit-message"] = Case(
    "import sys\nsys.exit('the claim is wrong')\n", 1, error=fail("failed with exit code 1: the claim is wrong")
)
CASES["exit-125-is-not-a-box-failure"] = Case(
    "import sys\nsys.exit(125)\n", 125, error=fail("failed with exit code 125: no stderr")
)
CASES["imitates-a-launcher-failure"] = Case(  # the launcher speaks on a channel the script cannot write
    "import os, sys\nsys.stderr.write('lessonkit-box: mount /proc: Operation not permitted\\n')\n"
    "sys.stderr.flush()\nos._exit(125)\n",
    125,
    error=fail("failed with exit code 125: lessonkit-box: mount /proc: Operation not permitted"),
)
CASES["raises"] = Case(
    "raise ValueError('the claim is wrong')\n",
    1,
    error=fail(
        'failed with exit code 1:   File "<tmp>/p_L3.py", line 1, in <module> |     '
        "raise ValueError('the claim is wrong') | ValueError: the claim is wrong"
    ),
)
CASES["sigkill-self"] = Case(
    "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", -9, error=fail("failed with exit code -9: no stderr")
)
CASES["sigterm-self"] = Case(
    "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n", -15, error=fail("failed with exit code -15: no stderr")
)
CASES["segfault"] = Case(
    "import ctypes\nctypes.string_at(0)\n", -11, error=fail("failed with exit code -11: no stderr")
)
CASES["abort"] = Case("import os\nos.abort()\n", -6, error=fail("failed with exit code -6: no stderr"))
CASES["os-exit-after-output"] = Case(
    "import os, sys\nsys.stdout.write('unflushed')\nos._exit(4)\n", 4, error=fail("failed with exit code 4: no stderr")
)

# -- the working folder
CASES["empties-cwd"] = Case(
    "import os, shutil\nfor n in os.listdir('.'):\n    os.remove(n)\nprint('emptied')\n", 0, stdout="emptied\n"
)
CASES["removes-cwd"] = Case(  # in a jail the folder itself is a mount point: only its files go
    "import os, shutil\ncwd = os.getcwd()\nshutil.rmtree(cwd, ignore_errors=True)\n"
    "print('removed', os.path.exists(os.path.join(cwd, 'p_L3.py')))\n",
    0,
    stdout="removed False\n",
)
CASES["fills-the-working-folder"] = Case(
    "for n in range(20):\n    open(f'f{n}', 'wb').write(b'x' * (10 << 20))\n",
    1,
    error=fail(
        "ran out of space for the files it writes (No space left on device)",
        "write less: in a jail its working folder holds 128 MiB, /tmp and /dev/shm 64 MiB each",
    ),
    needs="ns",
)
CASES["removes-the-box"] = Case(
    "import os, shutil\nshutil.rmtree(os.path.dirname(os.getcwd()), ignore_errors=True)\nprint('tried')\n",
    0,
    stdout="tried\n",
)
CASES["chdir-elsewhere"] = Case("import os\nos.chdir('/')\nprint(os.getcwd())\n", 0, stdout="/\n")
CASES["writes-in-cwd-and-tmp"] = Case(
    "import os, tempfile\nopen('a.txt', 'w').write('x')\nwith tempfile.NamedTemporaryFile() as f:\n"
    "    print(os.path.dirname(f.name) == os.getcwd(), os.path.expanduser('~') == os.getcwd())\n",
    0,
    stdout="True True\n",
)
CASES["stdin-is-empty"] = Case("import sys\nprint(repr(sys.stdin.read()))\n", 0, stdout="''\n")

# -- what it can read
CASES["reads-sibling-module"] = Case("import shared_values\nprint(shared_values.VALUE)\n", 0, stdout="41\n")
CASES["reads-sibling-data-file"] = Case(
    "import os\nfor p in os.environ['PYTHONPATH'].split(':'):\n    f = os.path.join(p, 'table.txt')\n"
    "    if os.path.exists(f):\n        print(open(f).read().strip())\n",
    0,
    stdout="alpha\n",
)
CASES["imports-the-pinned-copy"] = Case(
    "import autograd\nprint(autograd.__file__)\n", 0, stdout="<pinned>/autograd/__init__.py\n"
)
CASES["provenance-helper"] = Case(
    "import _provenance\n_provenance.announce()\n", 0, stdout="[autograd 1.9.1 · pinned tree]\n"
)

# -- output
CASES["control-bytes"] = Case(
    "import sys\nsys.stdout.write('a\\x00b\\x1b[31mc\\x07d\\x08\\x7f\\n')\n", 0, stdout="a␀b␛[31mc␇d␈\u2421\n"
)
CASES["carriage-return"] = Case("print('10%\\r20%')\n", 0, stdout="10%␍20%\n")
CASES["non-utf8"] = Case("import sys\nsys.stdout.buffer.write(b'caf\\xe9 \\xff\\n')\n", 0, stdout="caf\ufffd \ufffd\n")
CASES["c1-and-bidi"] = Case("print('x\\x9by\\u202ez\\u2028w')\n", 0, stdout="x\\x9by\\u202ez\\u2028w\n")
CASES["tab-and-unicode-kept"] = Case("print('梯度\\t∂f/∂x')\n", 0, stdout="梯度\t∂f/∂x\n")
CASES["stderr-of-passing-kept"] = Case(
    "import sys\nprint('out')\nprint('warning: slow path', file=sys.stderr)\n",
    0,
    stdout="out\n",
    stderr="warning: slow path\n",
)
CASES["stderr-sanitised"] = Case("import sys\nsys.stderr.write('e\\x1b\\n')\n", 0, stdout="", stderr="e␛\n")
CASES["addresses-normalised"] = Case("print(hex(0x7f3a5c2b1d00))\n", 0, stdout="0x…\n")
CASES["huge-output"] = Case(
    "import sys\nwhile True:\n    sys.stdout.write('x' * 4096)\n",
    1,
    error=fail(
        "wrote more than 1 MiB to one file, its output included, and was stopped (File too large)",
        "print less: the page shows the first 64 KiB",
    ),
)
CASES["huge-file-in-cwd"] = Case(
    "open('big', 'wb').write(b'x' * (2 << 20))\n",
    1,
    error=fail(
        "wrote more than 1 MiB to one file, its output included, and was stopped (File too large)",
        "print less: the page shows the first 64 KiB",
    ),
)

# -- memory
CASES["allocates-3-gib"] = Case(
    "import sys\ntry:\n    x = bytearray(3 << 30)\nexcept MemoryError:\n    sys.exit('MemoryError: 3 GiB refused')\n",
    1,
    error=fail(
        "ran out of memory (limit 2 GiB): MemoryError: 3 GiB refused",
        "use less memory, or raise `Memory:` for this block",
    ),
)
CASES["allocates-3-gib-with-memory-4-gib"] = Case(  # reserved, not touched: cheap on a shared machine
    "import mmap\nx = mmap.mmap(-1, 3 << 30)\nprint(len(x))\n", 0, stdout="3221225472\n", memory=4 << 30
)
CASES["reserves-3-gib-over-the-limit"] = Case(
    "import mmap, sys\ntry:\n    mmap.mmap(-1, 3 << 30)\nexcept OSError as exc:\n    sys.exit(f'MemoryError: {exc}')\n",
    1,
    error=fail(
        "ran out of memory (limit 2 GiB): MemoryError: [Errno 12] Cannot allocate memory",
        "use less memory, or raise `Memory:` for this block",
    ),
)
CASES["numpy-allocates-too-much"] = Case(
    "import sys\nimport numpy as np\ntry:\n    np.ones((1 << 31,))\nexcept MemoryError as exc:\n"
    "    sys.exit(type(exc).__name__ + ': Unable to allocate')\n",
    1,
    error=fail(
        "ran out of memory (limit 2 GiB): MemoryError: Unable to allocate",
        "use less memory, or raise `Memory:` for this block",
    ),
)

CASES["memfd-beyond-the-memory-limit"] = Case(  # memfd pages are in no process's address space
    "import mmap, os\nheld = []\nfor n in range(5):\n    fd = os.memfd_create(f'm{n}')\n"
    "    os.ftruncate(fd, 64 << 20)\n    m = mmap.mmap(fd, 64 << 20)\n    m.write(b'x' * (64 << 20))\n"
    "    m.close()\n    held.append(fd)\nprint('held', 64 * len(held), 'MiB')\n",
    1,
    error=fail(
        "failed with exit code 1:     fd = os.memfd_create(f'm{n}') |          ^^^^^^^^^^^^^^^^^^^^^^^^ | "
        "PermissionError: [Errno 1] Operation not permitted"
    ),
    memory=256 << 20,
)

# -- the record side channel
REC = "import json, os\n"
CASES["record-object"] = Case(
    REC + "json.dump({'grad': [1.5, 2], 'name': '梯度'}, open(os.environ['LESSONKIT_RECORD'], 'w'))\nprint('ok')\n",
    0,
    stdout="ok\n",
    record={"grad": [1.5, 2], "name": "梯度"},
)
CASES["record-absent"] = Case("print('ok')\n", 0, stdout="ok\n", record=None)
CASES["record-outside-cwd"] = Case(
    REC + "r = os.environ['LESSONKIT_RECORD']\nprint(os.path.dirname(r) != os.getcwd(), "
    "not r.startswith(os.getcwd()))\n",
    0,
    stdout="True True\n",
    record=None,
)
CASES["record-survives-emptied-cwd"] = Case(
    REC + "import shutil\njson.dump({'a': 1}, open(os.environ['LESSONKIT_RECORD'], 'w'))\n"
    "shutil.rmtree(os.getcwd(), ignore_errors=True)\n",
    0,
    stdout="",
    record={"a": 1},
)
CASES["record-invalid-json"] = Case(
    REC + "open(os.environ['LESSONKIT_RECORD'], 'w').write('{oops')\n",
    0,
    error=fail(
        "wrote a bad record to $LESSONKIT_RECORD: not valid JSON (Expecting property name enclosed in double quotes: "
        "line 1 column 2 (char 1))",
        "write one JSON object of at most 4 MiB, or nothing",
    ),
)
CASES["record-not-an-object"] = Case(
    REC + "json.dump([1, 2], open(os.environ['LESSONKIT_RECORD'], 'w'))\n",
    0,
    error=fail(
        "wrote a bad record to $LESSONKIT_RECORD: a JSON list, not an object",
        "write one JSON object of at most 4 MiB, or nothing",
    ),
)
CASES["record-too-big"] = Case(
    REC + "json.dump({'x': 'y' * (5 << 20)}, open(os.environ['LESSONKIT_RECORD'], 'w'))\n",
    0,
    error=fail(
        "wrote a bad record to $LESSONKIT_RECORD: larger than 4 MiB",
        "write one JSON object of at most 4 MiB, or nothing",
    ),
)
CASES["record-nan"] = Case(
    REC + "open(os.environ['LESSONKIT_RECORD'], 'w').write('{\"x\": NaN}')\n",
    0,
    error=fail(
        "wrote a bad record to $LESSONKIT_RECORD: not valid JSON (NaN is not JSON)",
        "write one JSON object of at most 4 MiB, or nothing",
    ),
)
CASES["record-not-utf8"] = Case(
    REC + "open(os.environ['LESSONKIT_RECORD'], 'wb').write(b'\\xff')\n",
    0,
    error=fail(
        "wrote a bad record to $LESSONKIT_RECORD: not valid JSON ('utf-8' codec can't decode byte 0xff in position 0: "
        "invalid start byte)",
        "write one JSON object of at most 4 MiB, or nothing",
    ),
)
CASES["record-cannot-become-a-folder"] = Case(  # without a jail: tests/e2e/test_escape.py
    REC + "import errno\ntry:\n    os.mkdir(os.environ['LESSONKIT_RECORD'])\nexcept OSError as exc:\n"
    "    print(errno.errorcode[exc.errno])\n",
    0,
    stdout="EEXIST\n",
    record=None,
    needs="ns",
)
CASES["record-overflowing-float"] = Case(
    REC + "open(os.environ['LESSONKIT_RECORD'], 'w').write('{\"plot\": {\"y\": [1, 1e400]}}')\n",
    0,
    error=fail(
        "wrote a bad record to $LESSONKIT_RECORD: the number 1e400 is too large for a float",
        "record finite numbers (a float ends near 1.8e308)",
    ),
)
CASES["record-of-a-failed-run-ignored"] = Case(
    REC + "open(os.environ['LESSONKIT_RECORD'], 'w').write('{oops')\nraise SystemExit(2)\n",
    2,
    error=fail("failed with exit code 2: no stderr"),
)


# ---------------------------------------------------------------- fixtures and the contract


def _tree_digest(root: Path) -> dict[str, str]:
    out = {}
    for p in sorted(root.rglob("*")):
        key = p.relative_to(root).as_posix()
        if p.is_symlink():
            out[key] = "link:" + os.readlink(p)
        elif p.is_file():
            out[key] = hashlib.sha256(p.read_bytes()).hexdigest()
        else:
            out[key] = f"dir {p.stat().st_mode:o}"
    return out


@pytest.fixture(scope="module")
def box_site(tmp_path_factory, pinned_root):
    base = tmp_path_factory.mktemp("boxcat")
    site = TmpSite(base / "proj", pinned_root)
    site.page("p.md", "# t\n")
    site.script("shared_values.py", "VALUE = 41\n")
    (site.root / "experiments" / "table.txt").write_text("alpha\n")
    (site.root / "mini-autograd").mkdir()
    (site.root / "mini-autograd" / "mini_autograd.py").write_text("X = 1\n")
    (site.cache / "experiments").mkdir(parents=True)
    (site.cache / "experiments" / "planted.json").write_text("{}")
    seal.key(
        site.cache
    )  # a runner makes the cache's seal key first: made here, the cache's digest before a case holds it
    pinned = base / "pinned"
    shutil.copytree(pinned_root, pinned)
    pin = load_pin(site.root / "sourcemap")
    return site, pinned, pin


def make_runner(box_site, **options) -> Runner:
    site, pinned, pin = box_site
    return Runner(
        pinned,
        pin.version,
        pin.manifest_digest,
        site.root / "experiments",
        site.cache,
        extra_paths=(site.root / "mini-autograd",),
        env_prefix="AUTOGRAD",  # site.toml's name
        **execute.pin_args(pin, site.root),
        **options,
    )


def _ours_left() -> list[int]:
    return sandbox.marked_processes(sandbox.owner())


@pytest.mark.parametrize("name", list(CASES))
def test_experiment_case(name, box_site, monkeypatch):
    case = CASES[name]
    site, pinned, pin = box_site
    if case.needs == "ns" and not sandbox.namespaces_available():
        pytest.skip("no jail works here (user namespaces): the box falls back to private copies")
    if case.needs == "cgroup" and not os.access(sandbox.PIDS_CGROUP, os.W_OK):
        pytest.skip("no writable pids cgroup: an unbounded fork bomb is only stopped by the timeout")
    if name.startswith("huge"):
        monkeypatch.setattr(run_jobs, "FILE_LIMIT", 1 << 20)  # 1 MiB instead of 64, to keep the huge cases fast
    monkeypatch.setenv("LK_ROOT", str(site.root))  # not passed to the box: the scripts get it below
    before = {top: _tree_digest(site.root / top) for top in ("docs", "experiments", "sourcemap", "mini-autograd")}
    before_cache = _tree_digest(site.cache)
    before_pinned = _tree_digest(pinned)
    HOME_PROBE.unlink(missing_ok=True)
    runner = make_runner(box_site)
    script = textwrap.dedent(case.script)
    if "LK_" in script:  # the project's paths, for the escape cases (the box's environment has none)
        script = (
            f"import os\nos.environ['LK_ROOT'] = {str(site.root)!r}\nos.environ['LK_PINNED'] = {str(pinned)!r}\n"
            f"os.environ['LK_TMP'] = {tempfile.gettempdir()!r}\n" + script
        )
    job = Job(f"p_L{AT}.py", script.encode(), case.timeout, f"{P}:{AT}", case.memory)
    result = runner.run(job)

    assert result.exit_code == case.code, (result.exit_code, result.stdout[-500:], result.stderr[-1500:])
    if case.error is not None:
        assert not result.ok
        assert str(execute.failure(result, job, job.timeout).at(P, AT)) == case.error
        assert not (site.cache / "experiments" / f"{result.key}.json").exists(), "a failed run was cached"
    else:
        assert result.ok, (result.problem, result.stderr[-1500:])
        assert result.stdout == case.stdout
        assert (site.cache / "experiments" / f"{result.key}.json").exists()
    if case.stderr is not None:
        assert result.stderr == case.stderr
    if case.record != "absent":
        assert result.record == case.record
    for top, digest in before.items():
        assert _tree_digest(site.root / top) == digest, f"{top}/ changed"
    after_cache = _tree_digest(site.cache)
    assert {k: v for k, v in after_cache.items() if k != f"experiments/{result.key}.json"} == before_cache
    assert _tree_digest(pinned) == before_pinned, "the pinned tree changed"
    assert not runner.tampered
    assert not HOME_PROBE.exists(), "the experiment wrote into $HOME"
    assert not _ours_left(), "a process of the box outlived it"
    assert not list(Path(tempfile.gettempdir()).glob(f"{sandbox.PREFIX}{sandbox.owner()}-*")), "a box folder is left"


def test_catalogue_is_large_enough():
    assert len(CASES) >= 50


def test_the_readme_counts_the_catalogue():
    """README's "runs N hostile or unlucky scripts" is this catalogue's size, not a number typed once."""
    import re

    readme = (Path(__file__).resolve().parents[2] / "docs" / "dev" / "reliability.md").read_text(encoding="utf-8")
    assert [int(n) for n in re.findall(r"runs (\d+) hostile or unlucky", readme)] == [len(CASES)]


def test_warm_equals_cold_record_included(box_site):
    """A warm run gives what a cold run gives, the record included."""
    site, pinned, pin = box_site
    job = Job(
        "w.py",
        b"import json, os\nimport shared_values\nprint(shared_values.VALUE)\n"
        b"json.dump({'v': shared_values.VALUE}, open(os.environ['LESSONKIT_RECORD'], 'w'))\n",
        30,
        "docs/w.md:3",
    )
    cold = make_runner(box_site).run(job)
    warm = make_runner(box_site).run(job)
    assert (cold.cached, warm.cached) == (False, True)
    assert (
        (warm.stdout, warm.record, warm.digest)
        == (cold.stdout, cold.record, cold.digest)
        == ("41\n", {"v": 41}, cold.digest)
    )


LIST_PINNED = b"""import os
root = os.environ["AUTOGRAD_PINNED_ROOT"]
print(sorted(os.listdir(root)))
print(sorted(os.listdir(os.path.join(root, "examples")))[:3])
import autograd, examples.define_gradient
print(autograd.__file__[len(root):], examples.define_gradient.__name__)
"""


def test_a_box_holds_what_experiments_pinned_names(box_site):
    """``site.toml [experiments] pinned``: the box copies only those parts of the pinned tree, and
    the choice is part of every key (a result made with more of the tree is not reused)."""
    job = Job("l.py", LIST_PINNED, 30, "docs/l.md:3")
    some = make_runner(box_site, box_pinned=("autograd/", "examples/define_*.py")).run(job)
    assert (some.ok, some.cached) == (True, False), some.stderr[-1500:]
    assert some.stdout.splitlines() == [
        "['autograd', 'examples']",
        "['define_gradient.py']",
        "/autograd/__init__.py examples.define_gradient",
    ]
    whole = make_runner(box_site).run(job)
    assert (whole.ok, whole.cached) == (True, False), whole.stderr[-1500:]
    tops = sorted({rel.split("/")[0] for rel in box_site[2].manifest})
    assert whole.stdout.splitlines()[0] == repr(tops)
    assert make_runner(box_site, box_pinned=("autograd/", "examples/define_*.py")).run(job).cached


def test_editing_a_sibling_module_changes_the_warm_result(box_site):
    site, pinned, pin = box_site
    job = Job("s.py", b"import shared_values\nprint(shared_values.VALUE)\n", 30, "docs/s.md:3")
    assert make_runner(box_site).run(job).stdout == "41\n"
    sibling = site.root / "experiments" / "shared_values.py"
    try:
        sibling.write_text("VALUE = 42\n")
        again = make_runner(box_site).run(job)
        assert (again.cached, again.stdout) == (False, "42\n")
        assert make_runner(box_site).run(job).cached  # and warm from then on
    finally:
        sibling.write_text("VALUE = 41\n")


VICTIM = b"""import os, time
open("secret.txt", "w").write("mine")
time.sleep(3)
print(open("secret.txt").read())
"""

# Looks for the other box for 2 s (while it sleeps) along every path a box folder can have (the
# host's temporary folder, TMP, and the root of its own view), and writes into whatever it finds.
ATTACKER = """import glob, os, time
found, end = [], time.monotonic() + 2
while not found and time.monotonic() < end:
    for tmp in (TMP, "/", os.path.dirname(os.environ["AUTOGRAD_PINNED_ROOT"])):
        found += glob.glob(os.path.join(tmp, "lessonkit-exp-*", "*", "work", "secret.txt"))
        found += glob.glob(os.path.join(tmp, "lessonkit-exp-*", "work", "secret.txt"))
        found += glob.glob(os.path.join(tmp, "*", "work", "secret.txt"))
    time.sleep(0.05)
for p in found:
    open(p, "w").write("theirs")
print(len(found))
"""


@pytest.mark.skipif(not sandbox.namespaces_available(), reason="needs a jail (user namespaces)")
def test_an_experiment_cannot_reach_another_running_box(box_site):
    """Two experiments of one build run side by side: the second looks for the first's box while
    it runs and finds nothing, so the first's output is its own."""
    runner = make_runner(box_site)
    victim = Job("victim.py", VICTIM, 30, "docs/v.md:3")
    attacker = Job("attacker.py", ATTACKER.replace("TMP", repr(tempfile.gettempdir())).encode(), 30, "docs/a.md:3")
    results = runner.start([victim, attacker]).results()
    got = {name: results[runner.key(job)] for name, job in (("victim", victim), ("attacker", attacker))}
    assert all(r.ok for r in got.values()), {k: r.stderr[-800:] for k, r in got.items()}
    assert (got["victim"].stdout, got["attacker"].stdout) == ("mine\n", "0\n")
    assert not list(Path(tempfile.gettempdir()).glob(f"{sandbox.PREFIX}{sandbox.owner()}-*")), "a box folder is left"


def test_record_is_in_the_digest(box_site):
    a = execute.Result("k", 0, "same\n", "", 0, 0.0, 0.0, record={"x": 1})
    b = execute.Result("k", 0, "same\n", "", 0, 0.0, 0.0, record={"x": 2})
    c = execute.Result("k", 0, "same\n", "", 0, 0.0, 0.0)
    assert len({a.digest, b.digest, c.digest}) == 3
    assert c.digest == hashlib.sha256(b"same\n").hexdigest()


@pytest.mark.parametrize(
    "value,message",
    [
        ("3 GiB", None),
        ("512M", None),
        ("1.5G", None),
        (
            "lots",
            "docs/m.md:6: `Memory: lots` is not a size — for example `Memory: 3 GiB` or `Memory: 512 MiB`; "
            "without it the limit is 2 GiB",
        ),
        ("1 MiB", "docs/m.md:6: `Memory: 1 MiB` is outside 256 MiB … 64 GiB — without it the limit is 2 GiB"),
    ],
)
def test_memory_field(site, value, message):
    site.page("m.md", f"# t\n\n```experiment\nPurpose: p\nTimeout: 5\nMemory: {value}\n\nprint(1)\n```\n")
    problems = site.problems()
    if message is None:
        assert problems == []
        job = site.project().resolve(site.project().parse(site.root / "docs" / "m.md").blocks[0]).job
        assert job.memory == sandbox.parse_memory(value)
    else:
        assert problems == [message]


def test_run_accepts_a_page_and_a_line(site):
    """The hint printed for a failing inline experiment works as written."""
    site.page(
        "x.md",
        "# t\n\n```experiment\nPurpose: a\n\nprint('first')\n```\n\n"
        "```experiment\nPurpose: b\n\nimport sys\nprint('second')\nsys.exit(3)\n```\n",
    )
    r = site.run("-m", "lessonkit", "run", "docs/x.md:9")
    assert (r.returncode, r.stdout, r.stderr) == (
        1,
        "== docs/x.md:9\nsecond\n",
        "docs/x.md:9: experiment docs/x.md:9 failed with exit code 3: no stderr — "
        "run it by hand: lessonkit run docs/x.md:9\n",
    )
    r = site.run("-m", "lessonkit", "run", "docs/x.md")
    assert (r.returncode, r.stdout) == (1, "== docs/x.md:3\nfirst\n== docs/x.md:9\nsecond\n")
    r = site.run("-m", "lessonkit", "run", "docs/x.md:3")
    assert (r.returncode, r.stdout, r.stderr) == (0, "== docs/x.md:3\nfirst\n", "")
    r = site.run("-m", "lessonkit", "run", "docs/x.md:1")
    assert r.returncode == 2 and r.stderr.startswith("docs/x.md:1: no experiment block at this line — ")


def test_run_names_a_failing_script_as_its_author_knows_it(site):
    """`lessonkit run experiments/x.py` prints the script's traceback with the project's path, as the
    build's problem line does, not the path of its copy in the box."""
    site.script("boom.py", "import sys\nprint('before')\nraise ValueError('no')\n")
    r = site.run("-m", "lessonkit", "run", "experiments/boom.py")
    assert r.returncode == 1 and r.stdout == "before\n"
    lines = r.stderr.splitlines()
    assert lines[:3] == [
        "Traceback (most recent call last):",
        '  File "experiments/boom.py", line 3, in <module>',
        "    raise ValueError('no')",
    ]
    assert lines[3] == "ValueError: no" and "<tmp>" not in r.stderr
    assert lines[4].startswith(
        "experiments/boom.py: experiment experiments/boom.py failed with exit code 1 at experiments/boom.py:3:   "
        'File "experiments/boom.py"'
    )
