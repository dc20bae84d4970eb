"""The serve's watcher (lessonkit.integrations.mkdocs.watch): a saved page is served rebuilt,
reading a page starts no rebuild, and where the system cannot watch a folder every folder is
watched by polling instead."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from support import TmpSite
from watchdog.events import FileSystemEventHandler
from watchdog.observers.polling import PollingObserver

from lessonkit.integrations.mkdocs.watch import Watcher


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.read().decode("utf-8", "replace")
    except OSError:
        return None


def _wait(predicate, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_an_edit_is_served_and_reading_the_pages_starts_no_rebuild(tmp_path, pinned_root):
    s = TmpSite(tmp_path / "proj", pinned_root)
    page = s.page("a.md", "# 甲\n\n第一版。\n")
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "lessonkit", "serve", "-a", f"127.0.0.1:{port}"],
        cwd=s.root,
        env=s.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(l.decode() for l in proc.stderr), daemon=True)
    reader.start()
    url = f"http://127.0.0.1:{port}/a/"
    try:
        assert _wait(lambda: "第一版" in (_get(url) or ""), 120), "".join(lines)[-3000:]
        assert _wait(lambda: any("Watching paths for changes" in l for l in lines), 10)
        # the build read every watched page and script; reading them again changes nothing either
        page.read_text(encoding="utf-8")
        for p in s.root.joinpath("experiments").iterdir():
            p.read_bytes()
        time.sleep(1.5)
        assert not [l for l in lines if "lessonkit serve:" in l and "full build" not in l], "".join(lines)
        page.write_text("# 甲\n\n第二版。\n", encoding="utf-8")
        assert _wait(lambda: "第二版" in (_get(url) or ""), 30), "".join(lines)[-3000:]
        assert [l for l in lines if "lessonkit serve: rebuilt 1 page(s)" in l], "".join(lines)
        assert not [l for l in lines if "by polling" in l]  # the system's notifications, here
    finally:
        proc.terminate()
        proc.wait(timeout=30)


class _Refusing(PollingObserver):
    """A native observer that has reached the system's limit after its first watch."""

    def schedule(self, handler, path, recursive=False, **kwargs):
        if self._watches:
            raise OSError(28, "inotify watch limit reached")
        return super().schedule(handler, path, recursive=recursive, **kwargs)


def test_a_folder_the_system_cannot_watch_moves_every_watch_to_polling(tmp_path, caplog):
    polling = PollingObserver(timeout=0.05)
    watcher = Watcher(polling)
    native = watcher.active = _Refusing(timeout=0.05)
    seen: list[str] = []

    class Handler(FileSystemEventHandler):
        def on_any_event(self, event):
            seen.append(f"{event.event_type} {Path(event.src_path).name}")

    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    (first / "a.md").write_text("x")
    with caplog.at_level("INFO", logger="mkdocs.lessonkit.integrations.mkdocs.watch"):
        watcher.schedule(Handler(), str(first), recursive=True)
        watcher.schedule(Handler(), str(second), recursive=True)
    assert watcher.active is polling and not native._watches
    assert [w[2] for w in watcher.watches] == [str(first), str(second)]
    assert [r.getMessage() for r in caplog.records] == [
        f"lessonkit serve: the system cannot watch {second}: inotify watch limit reached; watching every "
        "folder by polling"
    ]
    watcher.start()
    try:
        time.sleep(0.2)
        (first / "a.md").read_text()  # read: no change
        (second / "b.md").write_text("y")
        (first / "a.md").write_text("z")
        assert _wait(lambda: {"created b.md", "modified a.md"} <= set(seen), 10), seen
    finally:
        watcher.stop()
        watcher.join(5)
    assert all(e.split()[0] in ("created", "modified", "deleted", "moved", "closed") for e in seen), seen


def _serve(s: TmpSite, addr: str) -> tuple[subprocess.Popen, list[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "lessonkit", "serve", "-a", addr],
        cwd=s.root,
        env=s.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(l.decode() for l in proc.stderr), daemon=True).start()
    return proc, lines


def test_a_yaml_mistake_in_mkdocs_yml_is_one_located_line_and_the_last_site_is_served(tmp_path, pinned_root):
    s = TmpSite(tmp_path / "proj", pinned_root)
    s.page("a.md", "# 甲\n\n第一版。\n")
    port = _free_port()
    proc, lines = _serve(s, f"127.0.0.1:{port}")
    url = f"http://127.0.0.1:{port}/a/"
    config = s.root / "mkdocs.yml"
    good = config.read_text(encoding="utf-8")
    try:
        assert _wait(lambda: "第一版" in (_get(url) or ""), 120), "".join(lines)[-3000:]
        assert _wait(lambda: any("Watching paths for changes" in l for l in lines), 10)
        seen = len(lines)
        config.write_text(good.replace("site_name: t\n", "site_name: t\ntheme: [unclosed\n", 1), encoding="utf-8")
        assert _wait(lambda: any("mkdocs.yml:" in l for l in lines[seen:]), 60), "".join(lines[seen:])
        time.sleep(1)
        new = "".join(lines[seen:])
        assert "Traceback" not in new, new
        located = [l.rstrip("\n") for l in lines[seen:] if "mkdocs.yml:" in l]
        assert located == [
            "ERROR   -  mkdocs.yml:3: while parsing a flow sequence, expected ',' or ']', but got ':' — fix it and "
            "save again; the preview keeps serving the last good site"
        ], new
        assert "第一版" in (_get(url) or "")  # served at once, not held until the file is fixed
        seen = len(lines)
        config.write_text(good.replace("site_name: t\n", "site_name: 修好了\n", 1), encoding="utf-8")
        assert _wait(lambda: "修好了" in (_get(url) or ""), 60), "".join(lines[seen:])
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_serving_on_every_interface_warns_that_other_machines_can_reach_it(tmp_path, pinned_root):
    s = TmpSite(tmp_path / "proj", pinned_root)
    s.page("a.md", "# 甲\n\n第一版。\n")
    port = _free_port()
    proc, lines = _serve(s, f"0.0.0.0:{port}")
    try:
        assert _wait(lambda: "第一版" in (_get(f"http://127.0.0.1:{port}/a/") or ""), 120), "".join(lines)[-3000:]
        warned = [l.rstrip("\n") for l in lines if "other machines" in l]
        assert warned == [
            f"WARNING -  lessonkit serve: dev_addr 0.0.0.0:{port} listens on every network interface: other machines "
            f"can reach this preview — use 127.0.0.1:{port} to keep it on this machine"
        ], "".join(lines)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
