"""The browser's Python is taken only from the bytes sourcemap/pyodide.toml pins: a tarball with
other bytes ends the build with one located line, only the locked files are taken out of it, and
a broken lock is one line at its key."""

from __future__ import annotations

import base64
import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from lessonkit.errors import LessonError
from lessonkit.source import pyodide

FILES = ["pyodide.mjs", "pyodide.asm.wasm"]


def tarball(members: dict[str, bytes], link: str | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(f"package/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if link:
            info = tarfile.TarInfo(f"package/{link}")
            info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
            tar.addfile(info)
    return buf.getvalue()


def write_lock(root: Path, data: bytes, files=FILES, **override) -> None:
    fields = {
        "version": '"314.0.8"',
        "tarball": '"https://registry.example.invalid/pyodide/-/pyodide-314.0.8.tgz"',
        "sha512": '"sha512-' + base64.b64encode(hashlib.sha512(data).digest()).decode() + '"',
        "sha256": '"' + hashlib.sha256(data).hexdigest() + '"',
        "files": "[" + ", ".join(f'"{f}"' for f in files) + "]",
        **override,
    }
    (root / "sourcemap").mkdir(parents=True, exist_ok=True)
    (root / pyodide.LOCK).write_text("# pinned\n" + "".join(f"{k} = {v}\n" for k, v in fields.items()))


class Served:
    """What the registry answers: ``urlopen`` of the module replaced, the requests counted."""

    def __init__(self, monkeypatch, body: bytes):
        self.urls: list[str] = []

        def urlopen(req, timeout=None):
            self.urls.append(req.full_url)
            return io.BytesIO(body)

        monkeypatch.setattr(pyodide.urllib.request, "urlopen", urlopen)


def test_the_locked_files_are_taken_once_and_nothing_else(tmp_path, monkeypatch):
    data = tarball({"pyodide.mjs": b"export {}", "pyodide.asm.wasm": b"\0asm", "console.html": b"<html>"})
    write_lock(tmp_path, data)
    served = Served(monkeypatch, data)
    lock = pyodide.read_lock(tmp_path)
    folder = pyodide.provide(lock, tmp_path / ".cache")
    assert sorted(p.name for p in folder.iterdir()) == ["files.json", "pyodide.asm.wasm", "pyodide.mjs"]
    assert (folder / "pyodide.mjs").read_bytes() == b"export {}"
    assert pyodide.download_bytes(folder, lock) == len(b"export {}") + len(b"\0asm")
    assert pyodide.provide(lock, tmp_path / ".cache") == folder and len(served.urls) == 1  # cached
    pyodide.check(lock, folder)
    (folder / "pyodide.mjs").write_bytes(b"export {evil}")
    with pytest.raises(LessonError) as exc:
        pyodide.check(lock, folder)
    assert str(exc.value).startswith("sourcemap/pyodide.toml:5: the cached pyodide.mjs of pyodide 314.0.8 changed")


@pytest.mark.parametrize("which", ["sha256", "sha512"])
def test_other_bytes_end_the_build_with_one_line_at_the_digest(tmp_path, monkeypatch, which):
    data = tarball({"pyodide.mjs": b"export {}", "pyodide.asm.wasm": b"\0asm"})
    other = tarball({"pyodide.mjs": b"export {x}", "pyodide.asm.wasm": b"\0asm"})
    write_lock(tmp_path, data)
    lock = pyodide.read_lock(tmp_path)
    if which == "sha512":  # the sha256 agrees with the bytes served, the sha512 does not
        write_lock(tmp_path, other, sha512='"' + lock.sha512 + '"')
        lock = pyodide.read_lock(tmp_path)
    Served(monkeypatch, other)
    with pytest.raises(LessonError) as exc:
        pyodide.provide(lock, tmp_path / ".cache")
    line = {"sha256": 5, "sha512": 4}[which]
    message = str(exc.value)
    assert message.count("\n") == 0
    assert message.startswith(f"sourcemap/pyodide.toml:{line}: the downloaded tarball has ")
    assert message.endswith("— the registry served other bytes; do not build with them")
    assert not (tmp_path / ".cache" / "pyodide" / lock.sha256).exists()


def test_a_link_or_a_missing_file_in_the_tarball_is_refused(tmp_path, monkeypatch):
    data = tarball({"pyodide.mjs": b"export {}"}, link="pyodide.asm.wasm")
    write_lock(tmp_path, data)
    Served(monkeypatch, data)
    with pytest.raises(LessonError) as exc:
        pyodide.provide(pyodide.read_lock(tmp_path), tmp_path / ".cache")
    assert str(exc.value) == "sourcemap/pyodide.toml:6: package/pyodide.asm.wasm of the tarball is not a regular file"
    data = tarball({"pyodide.mjs": b"export {}"})
    write_lock(tmp_path, data)
    Served(monkeypatch, data)
    with pytest.raises(LessonError) as exc:
        pyodide.provide(pyodide.read_lock(tmp_path), tmp_path / ".cache")
    assert str(exc.value) == (
        "sourcemap/pyodide.toml:6: pyodide 314.0.8 has no pyodide.asm.wasm — list only files of the package "
        "(`tar tzf` the tarball)"
    )


@pytest.mark.parametrize(
    "override, expected",
    [
        ({"version": '"latest"'}, "sourcemap/pyodide.toml:2: `version` is 'latest', not an exact version"),
        ({"tarball": '"http://registry.npmjs.org/x.tgz"'}, "sourcemap/pyodide.toml:3: `tarball` is not an https URL"),
        ({"sha256": '"abc"'}, "sourcemap/pyodide.toml:5: `sha256` is not 64 lower-case hex digits"),
        ({"files": '["../x"]'}, "sourcemap/pyodide.toml:6: `files` must list files of the runtime"),
        (
            {"files": '["pyodide.mjs", "page.xhtml"]'},
            "sourcemap/pyodide.toml:6: `files` must list files of the runtime",
        ),
        (
            {"tarball": '"https://registry.npmjs.org/evil/-/evil-314.0.8.tgz"'},
            "sourcemap/pyodide.toml:3: `tarball` is not the npm package pyodide 314.0.8",
        ),
        (
            {"tarball": '"https://registry.npmmirror.com/pyodide/-/pyodide-314.0.7.tgz"'},
            "sourcemap/pyodide.toml:3: `tarball` is not the npm package pyodide 314.0.8",
        ),
        ({"extra": "1"}, "sourcemap/pyodide.toml:7: unknown key `extra`"),
    ],
)
def test_a_broken_lock_is_one_line_at_its_key(tmp_path, override, expected):
    write_lock(tmp_path, b"x", **override)
    with pytest.raises(LessonError) as exc:
        pyodide.read_lock(tmp_path)
    assert str(exc.value).startswith(expected) and "\n" not in str(exc.value)


def test_the_series_lock_names_the_files_the_browser_loads():
    lock = pyodide.read_lock(Path(__file__).resolve().parents[2])
    assert lock is not None and lock.version == "314.0.8"
    assert set(lock.files) == {
        "pyodide.mjs",
        "pyodide.js",  # the classic loader, for the offline edition's classic worker
        "pyodide.asm.mjs",
        "pyodide.asm.wasm",
        "python_stdlib.zip",
        "pyodide-lock.json",
    }
