"""Fault injection on processes: signals at random points of cold builds.

A small project whose experiments run for a while (and start ``setsid`` children) is
built cold and sent SIGTERM, SIGINT or SIGKILL after a seeded random delay. Each case
asserts: the build ends (within 2 s of SIGTERM/SIGINT), nothing under ``docs/``,
``experiments/`` or ``sourcemap/`` changed, no process of the build's boxes is left,
no box folder is left (after SIGKILL: the next build removes them), no partial cache
entry, and the next build writes a site byte-identical to a clean build's. One case
does the same on the real site. Another proves that an experiment that tampers with
the pinned tree (possible only without namespaces) fails the build and is not cached.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from support import ROOT, TmpSite, block

from lessonkit.run.box import sandbox
from lessonkit.util import fs as fsutil

SLOW = """\
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
time.sleep({seconds})
print("done {n}")
"""


def _snapshot(root: Path) -> dict[str, str]:
    out = {}
    for top in ("docs", "experiments", "sourcemap"):
        for p in sorted((root / top).rglob("*")):
            if p.is_file():
                out[p.relative_to(root).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _site_bytes(site_dir: Path) -> dict[str, str]:
    return {
        p.relative_to(site_dir).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(site_dir.rglob("*"))
        if p.is_file()
    }


def _make(base: Path, pinned_root: Path, seconds: float = 1.0) -> TmpSite:
    s = TmpSite(base, pinned_root)
    s.env["SOURCE_DATE_EPOCH"] = "1764460800"
    for n in range(4):
        s.page(
            f"e{n}.md",
            "# e\n\n"
            + block("experiment", f"Purpose: {n}", "Timeout: 30", body=SLOW.format(seconds=seconds + 0.25 * n, n=n)),
        )
    return s


def _ours(pid: int) -> list[int]:
    return sandbox.marked_processes(f"{pid}.")


def _boxes(pid: int) -> list[Path]:
    return list(Path(tempfile.gettempdir()).glob(f"{sandbox.PREFIX}{pid}.*"))


def _assert_no_partial_cache(cache: Path, killed: bool = False) -> None:
    """No half-written file; right after a SIGKILL (``killed``), only ``.tmp-<owner>-…`` files of
    the killed build's own, now dead, processes may remain: the next build removes them all."""
    deadline = time.monotonic() + 3  # a helper (prewarm, scanner) killed with the build may be still dying
    while True:
        left = list(cache.rglob(".tmp-*"))
        if killed:
            left = [p for p in left if not _dead_owner(p.name)]
        if not left or not killed or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert not left, f"a partial cache entry is left: {left}"
    for entry in (cache / "experiments").glob("*.json") if (cache / "experiments").exists() else []:
        data = json.loads(entry.read_text(encoding="utf-8"))
        assert data["exit_code"] == 0 and data["key"] == entry.stem and not data["problem"]


def _dead_owner(name: str) -> bool:
    m = fsutil.OWNED_NAME.fullmatch(name)
    return bool(m) and fsutil.owner_dead(*m.groups())


def _age(paths: list[Path], seconds: float = sandbox.SWEEP_AGE + 5) -> None:
    """Make leftovers look untouched for ``seconds`` (the sweeper leaves younger ones alone)."""
    then = time.time() - seconds
    for d in paths:
        for p in (d, d / "io", d / "work"):
            if p.exists():
                os.utime(p, (then, then))


@pytest.fixture(scope="module")
def clean_site(tmp_path_factory, pinned_root) -> dict[str, str]:
    s = _make(tmp_path_factory.mktemp("clean") / "proj", pinned_root)
    r = s.build()
    assert r.returncode == 0, r.stderr[-3000:]
    return _site_bytes(s.root / "site")


def _start(s: TmpSite) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "mkdocs", "build", "--strict"],
        cwd=s.root,
        env=s.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _wait_running(s: TmpSite, proc: subprocess.Popen, limit: float = 60) -> None:
    """Until the build has started its first box (a cold build with experiments in flight)."""
    t0 = time.monotonic()
    while not _boxes(proc.pid) and proc.poll() is None and time.monotonic() - t0 < limit:
        time.sleep(0.02)


SIGNALS = [("TERM", signal.SIGTERM), ("INT", signal.SIGINT), ("KILL", signal.SIGKILL)]
POINTS = [random.Random(seed).uniform(0.0, 2.0) for seed in (1, 2)]


@pytest.mark.parametrize("point", POINTS, ids=[f"{p:.2f}s" for p in POINTS])
@pytest.mark.parametrize("name,signum", SIGNALS, ids=[n for n, _ in SIGNALS])
def test_signal_during_a_cold_build(tmp_path, pinned_root, clean_site, name, signum, point):
    s = _make(tmp_path / "proj", pinned_root)
    before = _snapshot(s.root)
    proc = _start(s)
    _wait_running(s, proc)
    time.sleep(point)  # a random point while experiments run (or after, for the late points)
    sent = time.monotonic()
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=30)
    took = time.monotonic() - sent
    if signum != signal.SIGKILL:
        assert took < 2.0, f"the build took {took:.2f} s to stop after SIG{name}"
        assert b"Traceback" not in err, err.decode()[-2000:]
    deadline = time.monotonic() + 3
    while _ours(proc.pid) and time.monotonic() < deadline:  # SIGKILL: the parent-death chain needs a moment
        time.sleep(0.02)
    assert not _ours(proc.pid), "a process of the build's experiments is left"
    assert _snapshot(s.root) == before, "docs/, experiments/ or sourcemap/ changed"
    _assert_no_partial_cache(s.cache, killed=True)
    if signum != signal.SIGKILL:
        assert not _boxes(proc.pid), "a box folder is left"
    _age(_boxes(proc.pid))  # the next build, a minute later
    r = s.build()  # the next build: cleans what a SIGKILL left, and writes the clean site
    assert r.returncode == 0, r.stderr[-3000:]
    assert not _boxes(proc.pid), "the next build did not remove the folders the killed one left"
    assert _site_bytes(s.root / "site") == clean_site
    _assert_no_partial_cache(s.cache)  # strict: the next build removed every dead owner's .tmp file


def test_sigterm_during_a_cold_build_of_the_real_site(tmp_path):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "LESSONKIT_CACHE": str(tmp_path / "cache")}
    before = _snapshot(ROOT)
    proc = subprocess.Popen(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    t0 = time.monotonic()
    while not _boxes(proc.pid) and proc.poll() is None and time.monotonic() - t0 < 300:
        time.sleep(0.05)
    time.sleep(1.0)
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    assert time.monotonic() - sent < 2.0
    assert proc.returncode == -signal.SIGTERM
    assert not _ours(proc.pid) and not _boxes(proc.pid)
    assert _snapshot(ROOT) == before
    _assert_no_partial_cache(tmp_path / "cache", killed=True)


@pytest.mark.parametrize("target", ["autograd/__init__.py", "README.md"])  # in the boxes / not copied
def test_tampering_with_the_pinned_tree_fails_the_build_without_namespaces(tmp_path, pinned_root, target):
    """Without namespaces an experiment can write into the pinned tree: the build says so,
    located at the manifest, and caches nothing computed after it. README.md is not in any box
    (site.toml's `[experiments] pinned`): its size and time are watched instead of its bytes."""
    import shutil

    tree = tmp_path / "tree"
    shutil.copytree(pinned_root, tree)
    s = TmpSite(tmp_path / "proj", tree)
    s.env["LESSONKIT_SANDBOX"] = "copy"
    s.page(
        "a.md",
        "# a\n\n"
        + block(
            "experiment",
            "Purpose: a",
            body=f"""
        open({str(tree / target)!r}, "a").write("\\nTAMPERED = 1\\n")
        print("wrote")
    """,
        ),
    )
    r = s.build()
    assert r.returncode != 0
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    lines = [l for l in r.stderr.splitlines() if l.startswith("ERROR")]
    from lessonkit.source.pin import manifest_lines

    n = manifest_lines(s.root / "sourcemap" / "manifest.sha256")[target]
    assert (
        f"ERROR   -  sourcemap/manifest.sha256:{n}: the pinned tree changed while experiments ran: "
        f"{target} — an experiment wrote into it; nothing computed from it was cached — "
        "find the script that writes there, then rebuild" in lines
    ), r.stderr[-3000:]
    assert any("docs/a.md:3: experiment docs/a.md:3 ran while the pinned tree changed" in l for l in lines)
    assert not list((s.cache / "experiments").glob("*.json")) if (s.cache / "experiments").exists() else True


@pytest.mark.parametrize("name,signum", SIGNALS[:2], ids=[n for n, _ in SIGNALS[:2]])
def test_a_signal_to_the_prefill_leaves_no_box_process_or_partial_entry(tmp_path, pinned_root, name, signum):
    """`lessonkit.cli.prefill` (what the noxfile runs while the lock installs; it ends it with SIGTERM
    when the install fails, and a terminal's Ctrl-C reaches it too) runs the build's experiments
    through the build's runner: a signal ends it within 2 s, with no box, process or partial
    cache entry left, and no traceback."""
    # experiments of 5 s and more: on a loaded machine the signal still comes while they run
    s = _make(tmp_path / "proj", pinned_root, seconds=5.0)
    before = _snapshot(s.root)
    proc = subprocess.Popen(
        [sys.executable, "-I", "-m", "lessonkit.cli.prefill", str(s.root)],
        cwd=s.root,
        env=s.env,  # -I: lessonkit comes from the environment's .pth, like in the noxfile
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _wait_running(s, proc)
    assert _boxes(proc.pid), "the prefill started no experiment"
    time.sleep(0.3)
    sent = time.monotonic()
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=30)
    assert time.monotonic() - sent < 2.0
    assert b"Traceback" not in err, err.decode()[-2000:]
    assert proc.returncode == (130 if signum == signal.SIGINT else -signal.SIGTERM)
    deadline = time.monotonic() + 3
    while _ours(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _ours(proc.pid) and not _boxes(proc.pid)
    assert _snapshot(s.root) == before
    _assert_no_partial_cache(s.cache, killed=True)


def test_sigterm_to_lessonkit_serve_removes_its_temporary_site(tmp_path, pinned_root):
    """`lessonkit serve` builds into a temporary folder: SIGTERM (what a process manager sends)
    ends it as SIGTERM ends a process, and the folder is gone with it (as after Ctrl-C)."""
    import socket

    s = TmpSite(tmp_path / "proj", pinned_root)
    s.page("a.md", "# t\n")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    with socket.socket() as sock:  # a free port
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "lessonkit", "serve", "-a", f"127.0.0.1:{port}"],
        cwd=s.root,
        env={**s.env, "TMPDIR": str(tmp)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        t0 = time.monotonic()
        while proc.poll() is None and time.monotonic() - t0 < 120:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        served = list(tmp.glob("lessonkit_serve_*"))
        assert proc.poll() is None and len(served) == 1 and (served[0] / "a" / "index.html").is_file()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == -signal.SIGTERM, err.decode()[-2000:]
    assert b"Traceback" not in err, err.decode()[-2000:]
    assert not list(tmp.glob("lessonkit_serve_*")), "the temporary site is left"


def test_a_cancelled_process_ends_with_its_status_and_handlers_but_without_the_teardown(tmp_path):
    """After a SIGINT cancel (``fastexit.skip_teardown``), the status given to sys.exit and the atexit
    handlers registered later are kept; the interpreter's teardown of the heap (an object's
    ``__del__`` at exit) is skipped: it cost seconds of a loaded machine."""
    code = (
        "import atexit, sys\n"
        "from lessonkit.run.box import fastexit\n"
        "atexit.register(lambda: print('handler', flush=True))\n"
        "class Heap:\n"
        "    def __del__(self):\n"
        "        print('teardown', flush=True)\n"
        "keep = Heap()\n"
        "{skip}"
        "sys.exit(3)\n"
    )
    for skip, printed in (("", "handler\nteardown\n"), ("fastexit.skip_teardown()\n", "handler\n")):
        r = subprocess.run(
            [sys.executable, "-c", code.format(skip=skip)], capture_output=True, text=True, timeout=60, cwd=ROOT
        )
        assert (r.returncode, r.stdout, r.stderr) == (3, printed, "")
