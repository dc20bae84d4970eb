"""The sdist read straight from a package index's simple API (lessonkit.source.fetch.index_download),
against a local index served on loopback: JSON and HTML pages, relative links, a wrong hash, a
missing file, and the provider's fallback to ``pip download``."""

from __future__ import annotations

import dataclasses
import hashlib
import http.server
import json
import os
import threading
from pathlib import Path

import pytest

from lessonkit.source import fetch
from lessonkit.source import pin as pinning
from lessonkit.errors import LessonError
from support import ROOT

ARCHIVE = b"\x1f\x8b not really a release archive, only bytes with a known digest" * 50
SHA = hashlib.sha256(ARCHIVE).hexdigest()
NAME = "demo_pkg-1.0.tar.gz"


class Index(http.server.BaseHTTPRequestHandler):
    """/json/…: PEP 691 pages; /html/…: PEP 503 pages; /files/…: the archive; /bad/…: other bytes."""

    requests: list[tuple[str, str]] = []

    def do_GET(self):
        type(self).requests.append((self.path, self.headers.get("Accept", "")))
        if self.path == "/json/demo-pkg/":
            files = [
                {"filename": "other-0.1.tar.gz", "url": "../../files/x"},
                {"filename": NAME, "url": "../../files/a"},
            ]
            self._send("application/vnd.pypi.simple.v1+json", json.dumps({"files": files}).encode())
        elif self.path == "/html/demo-pkg/":
            page = f'<html><body><a href="/files/a#sha256={SHA}">{NAME}</a><br><a href="/x">y.tar.gz</a></body></html>'
            self._send("text/html", page.encode())
        elif self.path == "/bad/demo-pkg/":
            self._send("text/html", f'<a href="/files/b">{NAME}</a>'.encode())
        elif self.path == "/garbage/demo-pkg/":
            self._send("application/vnd.pypi.simple.v1+json", b"[1, 2")
        elif self.path == "/files/a":
            self._send("application/octet-stream", ARCHIVE)
        elif self.path == "/files/b":
            self._send("application/octet-stream", ARCHIVE[:-1] + b"!")
        else:
            self.send_error(404)

    def _send(self, kind: str, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def index():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Index)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def env(url: str) -> dict[str, str]:
    return {"PIP_INDEX_URL": url, "PIP_CONFIG_FILE": os.devnull, "HOME": "/nonexistent"}


@pytest.mark.parametrize("flavour", ["json", "html"])
def test_reads_the_file_the_simple_page_lists(index, tmp_path, flavour):
    Index.requests.clear()
    got = fetch.index_download("Demo_Pkg", NAME, SHA, tmp_path, environ=env(f"{index}/{flavour}"))
    assert got == tmp_path / NAME
    assert got.read_bytes() == ARCHIVE
    assert sorted(p.name for p in tmp_path.iterdir()) == [NAME]
    page, accept = Index.requests[0]
    assert page == f"/{flavour}/demo-pkg/"  # the normalized project name (PEP 503)
    assert accept.startswith("application/vnd.pypi.simple.v1+json")
    assert [r[0] for r in Index.requests[1:]] == ["/files/a"]  # the link's fragment is not sent


def test_a_wrong_digest_leaves_nothing_behind(index, tmp_path):
    with pytest.raises(LessonError) as err:
        fetch.index_download("demo-pkg", NAME, SHA, tmp_path, environ=env(f"{index}/bad"))
    assert err.value.code == fetch.DOWNLOAD_FAILED
    served = hashlib.sha256(ARCHIVE[:-1] + b"!").hexdigest()
    assert err.value.problem.message == f"{index}/files/b has sha256 {served[:16]}…"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "where, message",
    [
        ("json", "{index}/json/demo-pkg/ lists no demo_pkg-2.0.tar.gz"),
        ("missing", "{index}/missing/demo-pkg/: HTTP Error 404: Not Found"),
        ("garbage", "{index}/garbage/demo-pkg/: Expecting ',' delimiter: line 1 column 6 (char 5)"),
    ],
)
def test_what_the_index_lacks_is_a_download_failure(index, tmp_path, where, message):
    name = "demo_pkg-2.0.tar.gz" if where == "json" else NAME
    with pytest.raises(LessonError) as err:
        fetch.index_download("demo-pkg", name, SHA, tmp_path, environ=env(f"{index}/{where}"))
    assert err.value.code == fetch.DOWNLOAD_FAILED
    assert err.value.problem.message == message.format(index=index)
    assert list(tmp_path.iterdir()) == []


def test_only_http_indexes_are_read_directly(tmp_path):
    with pytest.raises(LessonError) as err:
        fetch.index_download("demo-pkg", NAME, SHA, tmp_path, environ=env(f"file://{tmp_path}/simple"))
    assert err.value.problem.message == f"index file://{tmp_path}/simple/demo-pkg/ is not http(s)"


def test_the_index_url_is_the_one_pip_would_use(tmp_path):
    home = tmp_path / "home"
    (home / ".config" / "pip").mkdir(parents=True)
    (home / ".config" / "pip" / "pip.conf").write_text("[global]\nindex-url = https://user.example/simple\n")
    base = {"HOME": str(home), "XDG_CONFIG_DIRS": str(tmp_path / "none")}
    assert fetch.pip_index_url({**base, "PIP_CONFIG_FILE": os.devnull}) == fetch.PYPI_SIMPLE
    assert fetch.pip_index_url(base) == "https://user.example/simple"
    own = tmp_path / "own.conf"
    own.write_text("[global]\nindex-url = https://g.example/simple\n[download]\nindex-url = https://d.example/s\n")
    assert fetch.pip_index_url({**base, "PIP_CONFIG_FILE": str(own)}) == "https://d.example/s"
    assert fetch.pip_index_url({**base, "PIP_INDEX_URL": "https://env.example/simple "}) == "https://env.example/simple"
    own.write_bytes(b"[global\n\xff")
    assert fetch.pip_index_url({**base, "PIP_CONFIG_FILE": str(own)}) == "https://user.example/simple"


def demo_pin() -> pinning.Pin:
    real = pinning.load_pin(ROOT / "sourcemap")
    return dataclasses.replace(real, sdist_filename=NAME, sdist_sha256=SHA, sdist_requirement="demo-pkg==1.0")


def test_the_provider_reads_the_index_and_pip_is_not_run(index, tmp_path, monkeypatch):
    for k, v in env(f"{index}/html").items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("LESSONKIT_SDIST", raising=False)
    monkeypatch.setattr(pinning, "pip_download", lambda *a: pytest.fail("pip download ran"))
    archive, origin = pinning._fetch_sdist(demo_pin(), tmp_path)
    assert archive == tmp_path / "pin" / NAME
    assert archive.read_bytes() == ARCHIVE
    assert origin == f"sdist {NAME} from the Python package index"


def test_the_provider_falls_back_to_pip(index, tmp_path, monkeypatch):
    for k, v in env(f"{index}/bad").items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("LESSONKIT_SDIST", raising=False)
    calls = []

    def pip_download(requirement: str, dest: Path) -> list[Path]:
        calls.append((requirement, sorted(dest.iterdir())))  # an empty folder, as pip expects
        (dest / NAME).write_bytes(ARCHIVE)
        return [dest / NAME]

    monkeypatch.setattr(pinning, "pip_download", pip_download)
    archive, _ = pinning._fetch_sdist(demo_pin(), tmp_path)
    assert calls == [("demo-pkg==1.0", [])]
    assert archive.read_bytes() == ARCHIVE


def test_pip_comes_from_the_base_python_where_the_environment_has_none(monkeypatch):
    """uv makes the shared environment without pip; ``pip download`` (the fallback) then runs
    with the pip of the Python the environment was made from."""
    import importlib.util
    import subprocess
    import sys

    # whichever it picks here (the nox environment has no pip, a developer's venv has) runs
    r = subprocess.run([*fetch._pip(), "--version"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("pip "), r.stderr
    with monkeypatch.context() as m:
        m.setattr(importlib.util, "find_spec", lambda name: object())  # an environment with pip
        assert fetch._pip() == [sys.executable, "-m", "pip"]
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)  # one without
    assert fetch._pip() == [str(Path(sys.base_prefix) / "bin" / "python3"), "-m", "pip"]
