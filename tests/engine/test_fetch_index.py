"""Release archives are data until their sha256 is checked: read as bytes from a package index's
simple API (lessonkit.source.fetch), hashed as they arrive, never built. Served here by a local
index on loopback (JSON and HTML pages) and by ``file://`` indexes made in the test, with a good
sdist, a hostile one whose build would write a marker file, and a listing without hashes."""

from __future__ import annotations

import dataclasses
import hashlib
import http.server
import json
import os
import subprocess
import sys
import tarfile
import threading
import zipfile
from pathlib import Path

import pytest
from support import ROOT

from lessonkit.errors import LessonError
from lessonkit.repin.acquire import _sdist_target, fetch_sdist
from lessonkit.source import fetch, providers
from lessonkit.source import pin as pinning

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
                {"filename": "other-0.1.tar.gz", "url": "../../files/x", "hashes": {}},
                {"filename": NAME, "url": "../../files/a", "hashes": {"sha256": SHA}},
            ]
            self._send("application/vnd.pypi.simple.v1+json", json.dumps({"files": files}).encode())
        elif self.path == "/html/demo-pkg/":
            page = f'<html><body><a href="/files/a#sha256={SHA}">{NAME}</a><br><a href="/x">y.tar.gz</a></body></html>'
            self._send("text/html", page.encode())
        elif self.path == "/bad/demo-pkg/":
            self._send("text/html", f'<a href="/files/b">{NAME}</a>'.encode())
        elif self.path == "/local/demo-pkg/":
            self._send("text/html", f'<a href="file:///etc/passwd">{NAME}</a>'.encode())
        elif self.path == "/moved/demo-pkg/":
            self._send("text/html", f'<a href="/files/elsewhere">{NAME}</a>'.encode())
        elif self.path == "/files/elsewhere":  # the same server under another host name
            port = self.server.server_address[1]
            self.send_response(302)
            self.send_header("Location", f"http://localhost:{port}/files/a")
            self.send_header("Content-Length", "0")
            self.end_headers()
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


@pytest.mark.parametrize("flavour", ["json", "html"])
def test_the_listing_gives_each_file_its_sha256(index, flavour):
    page, listed = fetch.index_listing("demo-pkg", environ=env(f"{index}/{flavour}"))
    assert page == f"{index}/{flavour}/demo-pkg/"
    entry = next(e for e in listed if e.filename == NAME)
    assert entry == fetch.Listed(NAME, f"{index}/files/a", SHA, page)
    assert next(e for e in listed if e.filename != NAME).sha256 is None


def test_a_wrong_digest_leaves_nothing_behind(index, tmp_path):
    with pytest.raises(LessonError) as err:
        fetch.index_download("demo-pkg", NAME, SHA, tmp_path, environ=env(f"{index}/bad"))
    assert err.value.code == fetch.HASH_MISMATCH
    served = hashlib.sha256(ARCHIVE[:-1] + b"!").hexdigest()
    assert err.value.problem.message == f"{index}/files/b has sha256 {served[:16]}…"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "where, message",
    [
        ("json", "{index}/json/demo-pkg/ lists no demo_pkg-2.0.tar.gz"),
        ("missing", "{index}/missing/demo-pkg/: HTTP Error 404: Not Found"),
        ("garbage", "{index}/garbage/demo-pkg/: Expecting ',' delimiter: line 1 column 6 (char 5)"),
        ("local", "file:///etc/passwd is a local file named by a remote index"),
    ],
)
def test_what_the_index_lacks_is_a_download_failure(index, tmp_path, where, message):
    name = "demo_pkg-2.0.tar.gz" if where == "json" else NAME
    with pytest.raises(LessonError) as err:
        fetch.index_download("demo-pkg", name, SHA, tmp_path, environ=env(f"{index}/{where}"))
    assert err.value.code == fetch.DOWNLOAD_FAILED
    assert err.value.problem.message == message.format(index=index)
    assert list(tmp_path.iterdir()) == []


def test_credentials_of_the_index_url_are_sent_as_basic_auth_and_never_shown(index, tmp_path):
    Index.requests.clear()
    seen: list[str | None] = []
    real = Index.do_GET

    def record(self):
        seen.append(self.headers.get("Authorization"))
        real(self)

    Index.do_GET = record  # type: ignore[method-assign]
    try:
        user_index = index.replace("http://", "http://me:s%40cret@") + "/html"
        page, listed = fetch.index_listing("demo-pkg", environ=env(user_index))
        fetch.download_checked(next(e for e in listed if e.filename == NAME), SHA, tmp_path, environ=env(user_index))
    finally:
        Index.do_GET = real  # type: ignore[method-assign]
    assert seen == ["Basic bWU6c0BjcmV0"] * 2  # base64 of me:s@cret, to the index's own host only
    assert page == f"{index}/html/demo-pkg/"
    seen.clear()
    (tmp_path / "moved").mkdir()
    Index.do_GET = record  # type: ignore[method-assign]
    try:  # a redirect to another host does not take the credentials along
        moved = index.replace("http://", "http://me:s%40cret@") + "/moved"
        _, listed = fetch.index_listing("demo-pkg", environ=env(moved))
        got = fetch.download_checked(listed[0], SHA, tmp_path / "moved", environ=env(moved))
    finally:
        Index.do_GET = real  # type: ignore[method-assign]
    assert got.read_bytes() == ARCHIVE
    assert seen == ["Basic bWU6c0BjcmV0", "Basic bWU6c0BjcmV0", None]


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


# ---------------------------------------------------------------- file:// indexes made here

MARKER_NAME = "built-by-the-archive"
GOOD_FILES = {
    "PKG-INFO": "Metadata-Version: 2.1\nName: srcpkg\nVersion: 0.1\n",
    "srcpkg.egg-info/top_level.txt": "srcpkg\n",
    "srcpkg/__init__.py": 'def area(w, h):\n    """The area of a w by h rectangle."""\n    return w * h\n',
}


def hostile_files(marker: Path) -> dict[str, str]:
    """The same package, with a setup.py and an in-tree build backend that write ``marker`` when
    anything (pip, uv, a PEP 517 frontend) runs them to prepare metadata or build."""
    write = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
    return {
        **GOOD_FILES,
        "setup.py": write + "from setuptools import setup\nsetup(name='srcpkg', version='0.1')\n",
        "backend.py": write + "def prepare_metadata_for_build_wheel(d, c=None):\n    raise SystemExit(1)\n",
        "pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n',
    }


def make_sdist(folder: Path, files: dict[str, str], fmt: str = "tar.gz", root: str = "srcpkg-0.1") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    archive = folder / f"{root}.{fmt}"
    if fmt == "zip":
        with zipfile.ZipFile(archive, "w") as zf:
            for rel, text in files.items():
                zf.writestr(f"{root}/{rel}", text)
        return archive
    staged = folder / "staged" / root
    for rel, text in files.items():
        (staged / rel).parent.mkdir(parents=True, exist_ok=True)
        (staged / rel).write_text(text, encoding="utf-8")
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(staged, arcname=root)
    return archive


def file_index(where: Path, project: str, archives: list[Path], listed_sha: dict[str, str | None]) -> str:
    """A PEP 503 index under ``where``: ``simple/<project>/index.html`` linking each archive (under
    ``files/``) with the sha256 given for its name (None: no fragment); its file:// URL."""
    (where / "files").mkdir(parents=True, exist_ok=True)
    links = []
    for archive in archives:
        (where / "files" / archive.name).write_bytes(archive.read_bytes())
        sha = listed_sha.get(archive.name)
        links.append(f'<a href="../../files/{archive.name}{"#sha256=" + sha if sha else ""}">{archive.name}</a>')
    page = where / "simple" / project
    page.mkdir(parents=True, exist_ok=True)
    (page / "index.html").write_text("<!DOCTYPE html><html><body>" + "<br>".join(links) + "</body></html>")
    return (where / "simple").as_uri()


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_file_index_lists_and_serves_like_a_remote_one(tmp_path):
    good = make_sdist(tmp_path / "dist", GOOD_FILES)
    url = file_index(tmp_path / "index", "srcpkg", [good], {good.name: sha(good)})
    listed = fetch.find_sdist("SrcPkg", "0.1.0", environ=env(url))  # names and versions as PEP 503/440 compare them
    assert listed == fetch.Listed(
        good.name, (tmp_path / "index/files" / good.name).as_uri(), sha(good), url + "/srcpkg/"
    )
    (tmp_path / "out").mkdir()
    got = fetch.download_checked(listed, sha(good), tmp_path / "out", environ=env(url))
    assert got == tmp_path / "out" / good.name and got.read_bytes() == good.read_bytes()


def test_sdists_are_found_under_their_normalised_names_and_as_zip(tmp_path):
    """PEP 625 spells ``more-itertools`` 10.5.0 as ``more_itertools-10.5.0.tar.gz``; older sdists
    are ``.zip``; wheels and other versions are never taken; ``.tar.gz`` wins over ``.zip``."""
    files = ["more_itertools-10.5.0-py3-none-any.whl", "more_itertools-10.4.0.tar.gz", "more_itertools-10.5.0.zip"]
    index = tmp_path / "simple" / "more-itertools"
    index.mkdir(parents=True)
    links = "".join(f'<a href="/f/{n}#sha256={"a" * 64}">{n}</a>' for n in files)
    (index / "index.html").write_text(links)
    url = (tmp_path / "simple").as_uri()
    assert fetch.find_sdist("more-itertools", "10.5.0", environ=env(url)).filename == "more_itertools-10.5.0.zip"
    (index / "index.html").write_text(links + '<a href="/f/x">more_itertools-10.5.0.tar.gz</a>')
    got = fetch.find_sdist("more.itertools", "10.5", environ=env(url))
    assert (got.filename, got.sha256) == ("more_itertools-10.5.0.tar.gz", None)
    with pytest.raises(LessonError) as err:
        fetch.find_sdist("more-itertools", "10.3.0", environ=env(url))
    assert (
        err.value.problem.message == f"{url}/more-itertools/ lists no release archive (sdist) of more-itertools==10.3.0"
    )


def test_a_zip_sdist_is_extracted_with_the_same_rules(tmp_path):
    good = make_sdist(tmp_path / "dist", GOOD_FILES, fmt="zip")
    tree = fetch.extract_sdist(good, tmp_path / "area", "srcpkg-0.1")
    assert sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*") if p.is_file()) == [
        "srcpkg.egg-info/top_level.txt",
        "srcpkg/__init__.py",
    ]
    escaping = tmp_path / "evil" / "srcpkg-0.1.zip"
    escaping.parent.mkdir()
    with zipfile.ZipFile(escaping, "w") as zf:
        zf.writestr("srcpkg-0.1/ok.py", "")
        zf.writestr("srcpkg-0.1/../../outside.py", "")
    with pytest.raises(LessonError) as err:
        fetch.extract_sdist(escaping, tmp_path / "area2", "srcpkg-0.1")
    assert err.value.problem.message == "archive entry escapes the tree: srcpkg-0.1/../../outside.py"
    assert not (tmp_path / "outside.py").exists() and not (tmp_path / "area2" / "outside.py").exists()


def demo_pin(filename: str, digest: str) -> pinning.Pin:
    real = pinning.load_pin(ROOT / "sourcemap")
    return dataclasses.replace(real, sdist_filename=filename, sdist_sha256=digest, sdist_requirement="srcpkg==0.1")


def test_the_pin_provider_never_opens_an_archive_whose_hash_differs(tmp_path, monkeypatch):
    marker = tmp_path / MARKER_NAME
    good = make_sdist(tmp_path / "good", GOOD_FILES)
    hostile = make_sdist(tmp_path / "hostile", hostile_files(marker))
    url = file_index(tmp_path / "index", "srcpkg", [hostile], {hostile.name: sha(hostile)})  # it lists its own hash
    for k, v in env(url).items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("LESSONKIT_SDIST", raising=False)
    pin = demo_pin(good.name, sha(good))
    with pytest.raises(LessonError) as err:
        providers._fetch_sdist(pin, tmp_path / "cache")
    line = pin.toml_line("sha256")
    assert str(err.value) == (
        f"sourcemap/pin.toml:{line}: {(tmp_path / 'index/files' / hostile.name).as_uri()} has sha256 "
        f"{sha(hostile)[:16]}…, the pin expects {sha(good)[:16]}…: the archive was not opened, unpacked or built — "
        "this is not the pinned release archive: check the index pip is configured with (PIP_INDEX_URL, "
        f"pip.conf), or set LESSONKIT_SDIST=/path/to/{good.name}"
    )
    assert not marker.exists()
    assert sorted(p.name for p in (tmp_path / "cache" / "pin").iterdir()) == [".staging"]
    assert list((tmp_path / "cache" / "pin" / ".staging").iterdir()) == []
    # the good archive, served the same way, is fetched into the cache
    file_index(tmp_path / "index", "srcpkg", [good], {})
    archive, origin = providers._fetch_sdist(pin, tmp_path / "cache")
    assert archive == tmp_path / "cache" / "pin" / good.name and archive.read_bytes() == good.read_bytes()
    assert origin == f"sdist {good.name} from the Python package index"


def _init(series: Path, index_url: str, tmp_path: Path) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("LESSONKIT_", "AUTOGRAD_", "PIP_"))}
    environ.update(env(index_url), LESSONKIT_CACHE=str(tmp_path / "cache"), NO_MKDOCS_2_WARNING="1")
    return subprocess.run(
        [sys.executable, "-m", "lessonkit", "init", str(series), "--package", "srcpkg==0.1", "--lang", "en"],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_series_from_a_file_index_verifies_and_a_hostile_archive_there_is_never_built(tmp_path):
    """init takes the archive and its sha256 from a file:// index; a cold verify of the new series
    reads it from there again; once the index serves a hostile archive under the same name, verify
    fails with one located line and nothing of the archive ran (its marker is never written)."""
    marker = tmp_path / MARKER_NAME
    good = make_sdist(tmp_path / "good", GOOD_FILES)
    url = file_index(tmp_path / "index", "srcpkg", [good], {good.name: sha(good)})
    series = tmp_path / "series"
    made = _init(series, url, tmp_path)
    assert made.returncode == 0, made.stderr
    pin_toml = (series / "sourcemap" / "pin.toml").read_text(encoding="utf-8")
    assert f'filename = "{good.name}"\nsha256 = "{sha(good)}"\n' in pin_toml

    environ = {k: v for k, v in os.environ.items() if not k.startswith(("LESSONKIT_", "AUTOGRAD_", "PIP_"))}
    environ.update(env(url), LESSONKIT_CACHE=str(tmp_path / "cold-cache"), NO_MKDOCS_2_WARNING="1")

    def verify() -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "lessonkit", "verify"], cwd=series, env=environ, capture_output=True, text=True
        )

    checked = verify()
    assert checked.returncode == 0, checked.stderr
    assert (tmp_path / "cold-cache" / "pin" / good.name).read_bytes() == good.read_bytes()

    hostile = make_sdist(tmp_path / "hostile", hostile_files(marker))
    file_index(tmp_path / "index", "srcpkg", [hostile], {hostile.name: sha(hostile)})
    environ["LESSONKIT_CACHE"] = str(tmp_path / "cold-cache-2")
    refused = verify()
    assert refused.returncode == 1
    lines = [line for line in refused.stderr.splitlines() if line.strip()]
    line = next(n for n, text in enumerate(pin_toml.splitlines(), 1) if text.startswith("sha256 = "))
    assert len(lines) == 1, refused.stderr
    assert lines[0].startswith(
        f"sourcemap/pin.toml:{line}: {(tmp_path / 'index/files' / good.name).as_uri()} "
        f"has sha256 {sha(hostile)[:16]}…, "
        f"the pin expects {sha(good)[:16]}…: the archive was not opened, unpacked or built — "
    ), lines[0]
    assert not marker.exists()


@pytest.mark.parametrize("case", ["mismatch", "no-hash"])
def test_init_refuses_an_archive_it_cannot_check_in_one_line(tmp_path, case):
    marker = tmp_path / MARKER_NAME
    good = make_sdist(tmp_path / "good", GOOD_FILES)
    hostile = make_sdist(tmp_path / "hostile", hostile_files(marker))
    listed = {hostile.name: sha(good)} if case == "mismatch" else {}  # the listing names the good one's hash
    url = file_index(tmp_path / "index", "srcpkg", [hostile], listed)
    series = tmp_path / "series"
    made = _init(series, url, tmp_path)
    assert made.returncode == 1
    lines = [line for line in made.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, made.stderr
    served = (tmp_path / "index/files" / hostile.name).as_uri()
    expected = {
        "mismatch": f"--package: {served} has sha256 {sha(hostile)[:16]}…, the index lists {sha(good)[:16]}… for "
        f"{hostile.name}: the archive was not opened, unpacked or built — the index or the connection to it "
        "served other bytes; check PIP_INDEX_URL and pip.conf",
        "no-hash": f"--package: {url}/srcpkg/ lists {hostile.name} without its sha256, so its bytes cannot be "
        "checked — use an index that publishes hashes (PEP 503 #sha256= or PEP 691 hashes; PyPI does), or check "
        "the archive yourself and give it with --sdist PATH",
    }
    assert lines[0] == expected[case]
    assert not marker.exists() and not series.exists()


def test_repin_takes_the_hash_from_the_listing_and_checks_the_bytes(tmp_path, monkeypatch):
    marker = tmp_path / MARKER_NAME
    good = make_sdist(tmp_path / "good", GOOD_FILES, fmt="zip")
    url = file_index(tmp_path / "index", "srcpkg", [good], {good.name: sha(good)})
    for k, v in env(url).items():
        monkeypatch.setenv(k, v)
    archive, digest = fetch_sdist("0.1", tmp_path / "cache", "srcpkg")
    assert (archive.name, digest) == ("srcpkg-0.1.zip", sha(good))
    assert archive.read_bytes() == good.read_bytes()
    target = _sdist_target("0.1", tmp_path / "cache", "srcpkg")
    assert target.sdist == {
        "filename": "srcpkg-0.1.zip",
        "sha256": sha(good),
        "requirement": "srcpkg==0.1",
        "root": "srcpkg-0.1",
    }
    assert (target.root / "srcpkg" / "__init__.py").read_text() == GOOD_FILES["srcpkg/__init__.py"]

    hostile = make_sdist(tmp_path / "hostile", hostile_files(marker))
    file_index(tmp_path / "index2", "srcpkg", [hostile], {hostile.name: sha(good)})
    monkeypatch.setenv("PIP_INDEX_URL", (tmp_path / "index2" / "simple").as_uri())
    with pytest.raises(LessonError) as err:
        fetch_sdist("0.1", tmp_path / "other-cache", "srcpkg")
    served = (tmp_path / "index2/files" / hostile.name).as_uri()
    assert str(err.value) == (
        f"repin: {served} has sha256 {sha(hostile)[:16]}…, the index lists {sha(good)[:16]}… for {hostile.name}: "
        "the archive was not opened, unpacked or built — the index or the connection to it served other bytes; "
        "check PIP_INDEX_URL and pip.conf"
    )
    assert not marker.exists()
    assert not (tmp_path / "other-cache" / "repin" / "sdist").exists()
    file_index(tmp_path / "index2", "srcpkg", [hostile], {})
    with pytest.raises(LessonError) as err:
        fetch_sdist("0.1", tmp_path / "other-cache", "srcpkg")
    assert str(err.value).startswith(
        f"repin: {(tmp_path / 'index2/simple').as_uri()}/srcpkg/ lists {hostile.name} without its sha256"
    )
    assert not marker.exists()


def test_a_file_index_entry_that_is_no_regular_file_is_refused(tmp_path):
    """A FIFO where the archive should be would block a reader forever."""
    url = file_index(tmp_path / "index", "srcpkg", [], {})
    page = tmp_path / "index" / "simple" / "srcpkg" / "index.html"
    page.write_text(f'<a href="../../files/srcpkg-0.1.tar.gz#sha256={"a" * 64}">srcpkg-0.1.tar.gz</a>')
    os.mkfifo(tmp_path / "index" / "files" / "srcpkg-0.1.tar.gz")
    listed = fetch.find_sdist("srcpkg", "0.1", environ=env(url))
    with pytest.raises(LessonError) as err:
        fetch.download_checked(listed, "a" * 64, tmp_path, environ=env(url))
    assert err.value.problem.message == f"{listed.url} is not a regular file"
    assert err.value.code == fetch.DOWNLOAD_FAILED
