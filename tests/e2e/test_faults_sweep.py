"""The sweepers remove only what is provably a dead build's own.

``sandbox.sweep_leftovers`` (box folders in the temporary directory, pids cgroups, marked
processes) and ``store.sweep`` (half-written ``.tmp-…`` cache files) must leave alone
everything that is not exactly their format, owned by a live process, made in another PID
namespace, not ours, recently touched, or a link. Each case here failed before: the old
sweeper removed every ``lessonkit-exp-*`` whose tag did not parse as a live owner, which
removed the live folders of other builds and made their experiments fail.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from support import TmpSite

from lessonkit.run import runner as execute
from lessonkit.run.box import sandbox
from lessonkit.run.runner import Job, Runner
from lessonkit.source.pin import load_pin
from lessonkit.util import fs as fsutil
from lessonkit.util import store

NS = fsutil.pid_namespace()
pytestmark = pytest.mark.skipif(NS is None, reason="/proc does not show this PID namespace")


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _old(path: Path, seconds: float = sandbox.SWEEP_AGE + 5) -> Path:
    then = time.time() - seconds
    os.utime(path, (then, then), follow_symlinks=False)
    return path


@pytest.fixture
def tmp(tmp_path, monkeypatch):
    base = tmp_path / "tmp"
    base.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    return base


def test_box_folders_only_exact_format_dead_owner_and_old_are_removed(tmp, tmp_path):
    dead = _dead_pid()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live_tag = fsutil.owner_tag(live.pid)
        names = {
            "dead-old": f"{sandbox.PREFIX}{dead}.1-ns{NS}-1-abcdefgh",  # the only one to go
            "dead-young": f"{sandbox.PREFIX}{dead}.2-ns{NS}-1-abcdefgh",  # touched less than SWEEP_AGE ago
            "live-owner": f"{sandbox.PREFIX}{live_tag}-3-abcdefgh",
            "us": f"{sandbox.PREFIX}{sandbox.owner()}-4-abcdefgh",
            "reused-pid": f"{sandbox.PREFIX}{live.pid}.{fsutil._start_time(live.pid)}-ns{NS}-5-abcdefgh",
            "other-namespace": f"{sandbox.PREFIX}{dead}.1-ns{int(NS) + 1}-1-abcdefgh",
            "round-1-format": f"{sandbox.PREFIX}{dead}.1-1-abcdefgh",
            "other-tool": f"{sandbox.PREFIX}cache",
            "no-owner": f"{sandbox.PREFIX}{dead}-1-abcdefgh",
            "longer-suffix": f"{sandbox.PREFIX}{dead}.1-ns{NS}-1-abcdefghi",
        }
        for key, name in names.items():
            d = tmp / name
            (d / "io").mkdir(parents=True)
            (d / "io" / "stdout").write_text("running")
            if key != "dead-young":
                for p in (d / "io", d):
                    _old(p)
        outside = tmp_path / "outside"
        (outside / "io").mkdir(parents=True)
        link = tmp / f"{sandbox.PREFIX}{dead}.3-ns{NS}-1-abcdefgh"
        link.symlink_to(outside, target_is_directory=True)
        _old(link)
        removed = sandbox.sweep_leftovers()
        assert removed == [str(tmp / names["dead-old"])]
        assert sorted(os.listdir(tmp)) == sorted([n for k, n in names.items() if k != "dead-old"] + [link.name])
        assert (outside / "io").is_dir()  # never followed
    finally:
        live.kill()
        live.wait()


def test_marked_processes_only_exact_format_and_dead_owner_are_killed(monkeypatch):
    dead = _dead_pid()
    marks = {
        "dead-owner": f"{dead}.1-ns{NS}-1",  # the only one to die
        "live-owner": f"{sandbox.owner()}-1",
        "other-namespace": f"{dead}.1-ns{int(NS) + 1}-1",
        "round-1-format": f"{dead}.1-1",
        "garbage": "x",
    }
    procs = {
        k: subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env={**os.environ, sandbox.MARK: m})
        for k, m in marks.items()
    }
    killed = []  # what our sweeper kills (a round-1 sweeper elsewhere on the machine may kill more)
    real_kill = os.kill

    def kill(pid, sig):
        if sig == signal.SIGKILL:
            killed.append(pid)
        return real_kill(pid, sig)

    monkeypatch.setattr(os, "kill", kill)
    try:
        time.sleep(0.2)
        sandbox.sweep_leftovers()
        assert {k for k, p in procs.items() if p.pid in killed} == {"dead-owner"}
    finally:
        for p in procs.values():
            p.kill()
            p.wait()


def test_killing_box_1_does_not_kill_box_10():
    """Box.kill matched marks by prefix: ``…-1`` also matched ``…-10``."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(60)"],
            env={**os.environ, sandbox.MARK: f"{sandbox.owner()}-{n}"},
        )
        for n in (1, 10)
    ]
    try:
        time.sleep(0.2)
        assert sandbox.marked_processes(f"{sandbox.owner()}-1", exact=True) == [procs[0].pid]
        sandbox.Box(Path("/nonexistent"), f"{sandbox.owner()}-1").kill()
        time.sleep(0.2)
        assert procs[0].poll() is not None and procs[1].poll() is None
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_store_sweep_removes_only_dead_owners_temporary_files(tmp_path):
    cache = tmp_path / "cache"
    dead = _dead_pid()
    names = {
        "render": [
            f".tmp-{dead}.1-ns{NS}-abcdefgh",
            f".tmp-{fsutil.owner_tag()}-abcdefgh",
            f".tmp-{dead}.1-ns{int(NS) + 1}-abcdefgh",
            f".tmp-{dead}-abcdefgh",
            "entry",
        ],
        "symbols": [f".tmp-{dead}.9-ns{NS}-a_c0e9gh"],
        "experiments": [f".tmp-{dead}.1-ns{NS}-abcdefgh"],
    }
    for kind, files in names.items():
        (cache / kind).mkdir(parents=True)
        for n in files:
            (cache / kind / n).write_text("partial")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / f".tmp-{dead}.1-ns{NS}-abcdefgh").write_text("not ours")
    (cache / "links").symlink_to(outside)
    removed = store.sweep(cache)
    assert sorted(removed) == sorted(
        [
            f"render/.tmp-{dead}.1-ns{NS}-abcdefgh",
            f"symbols/.tmp-{dead}.9-ns{NS}-a_c0e9gh",
            f"experiments/.tmp-{dead}.1-ns{NS}-abcdefgh",
        ]
    )
    assert sorted(os.listdir(cache / "render")) == sorted(names["render"][1:])
    assert (outside / f".tmp-{dead}.1-ns{NS}-abcdefgh").exists()
    assert store.sweep(cache) == []  # once per cache and process


def test_a_box_removed_from_outside_mid_run_is_a_located_error(tmp_path, pinned_root):
    s = TmpSite(tmp_path / "proj", pinned_root)
    pin = load_pin(s.root / "sourcemap")
    runner = Runner(
        pinned_root, pin.version, pin.manifest_digest, s.root / "experiments", s.cache, **execute.pin_args(pin, s.root)
    )
    script = b"import time\ntime.sleep(2)\nopen('out.txt', 'w').write('x')\nprint('done')\n"
    job = Job("late.py", script, 30, "docs/p.md:3")
    before = set(Path(tempfile.gettempdir()).glob(f"{sandbox.PREFIX}{sandbox.owner()}-*/*"))
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("r", runner.run(job)))
    t.start()
    deadline = time.monotonic() + 30
    boxes = []
    while time.monotonic() < deadline and not boxes:
        boxes = [
            b
            for b in Path(tempfile.gettempdir()).glob(f"{sandbox.PREFIX}{sandbox.owner()}-*/*")  # the boxes
            if b not in before and (b / "work" / "late.py").exists()
        ]
        time.sleep(0.02)
    assert boxes, "the box never appeared"
    time.sleep(0.5)
    sandbox._rmtree(boxes[0])  # a /tmp cleaner, or another build's sweeper of an older lessonkit
    t.join(60)
    result = out["r"]
    assert result.problem.startswith("vanished: ")
    err = execute.failure(result, job, 30).at("docs/p.md", 3)
    assert str(err.problem) == (
        "docs/p.md:3: experiment docs/p.md:3 lost its temporary folder (removed while it ran); "
        "its output is not used — another program removed or filled it (a /tmp cleaner, "
        "a full disk); build again"
    )
    assert not (s.cache / "experiments").exists() or not list((s.cache / "experiments").glob("*.json"))
    assert not boxes[0].exists()


def test_a_process_that_ends_with_a_box_open_leaves_no_folder_of_boxes():
    """A batch of experiments never collected (a caller that forgot, an exception between start
    and results): the process's folder of boxes goes when the process ends."""
    code = "from lessonkit.run.box import sandbox\nbox = sandbox.BOXES.open()\nprint(box.root)\n"
    project = Path(__file__).resolve().parents[2]
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=project, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    root = Path(r.stdout.strip())
    assert root.name.startswith(sandbox.PREFIX) and root.parent == Path(tempfile.gettempdir())
    assert not root.exists()
