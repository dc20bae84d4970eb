"""The Python that runs in a reader's browser (``exercise`` blocks): the npm package ``pyodide``,
pinned in ``sourcemap/pyodide.toml`` by version and by the SHA-512 and SHA-256 of its tarball.

The tarball is fetched once into the build cache (``.cache/pyodide/<sha256>/``), checked against
both digests before anything is read from it, and only the files the lock names are taken out of
it (never the whole archive). The site gets copies of them under ``assets/pyodide/`` when a page
uses them; they are not part of the repository (about 13 MB).

``sourcemap/pyodide.toml``::

    version = "314.0.8"
    tarball = "https://registry.npmjs.org/pyodide/-/pyodide-314.0.8.tgz"
    sha512 = "sha512-…"      # npm's `integrity` of that version (`npm view pyodide@VERSION dist`)
    sha256 = "…"             # of the same bytes
    files = ["pyodide.mjs", "pyodide.js", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip",
             "pyodide-lock.json"]
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import tarfile
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from lessonkit.config.files import read_toml
from lessonkit.errors import LessonError
from lessonkit.util.fs import atomic_write, staging_dir

LOCK = "sourcemap/pyodide.toml"
SITE_DIR = "assets/pyodide"  # where the site serves the files
MAX_TARBALL = 64 * 1024 * 1024
HINT = "write version, tarball, sha512, sha256 and files as `npm view pyodide@VERSION dist` gives them"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


@dataclass(frozen=True)
class Lock:
    version: str
    tarball: str
    sha512: str  # npm's integrity string: "sha512-" and the base64 digest
    sha256: str
    files: tuple[str, ...]
    lines: dict[str, int]

    def line(self, key: str) -> int | None:
        return self.lines.get(key)


# The files of the pyodide package a page may load: the loader (``pyodide.mjs`` for the site's
# module worker, the package's classic build ``pyodide.js`` for the offline edition's classic worker,
# :mod:`lessonkit.site.offline_runtime`), the interpreter, the standard library and the package
# list. Nothing else of the tarball reaches the site.
RUNTIME_FILES = frozenset(
    {
        "pyodide.mjs",
        "pyodide.js",
        "pyodide.asm.mjs",
        "pyodide.asm.js",
        "pyodide.asm.wasm",
        "python_stdlib.zip",
        "pyodide-lock.json",
    }
)


def read_lock(root: Path) -> Lock | None:
    """The project's lock, or None when it has none (then no page may use the runtime)."""
    path = root / LOCK
    if not path.is_file():
        return None
    data, lines = read_toml(path, LOCK, HINT)
    at = {key: line for (section, key), line in lines.items() if section == ""}

    def bad(key: str, what: str) -> LessonError:
        return LessonError(what, path=LOCK, line=at.get(key), hint=HINT)

    for key in ("version", "tarball", "sha512", "sha256", "files"):
        if key not in data:
            raise bad(key, f"`{key}` is missing")
    unknown = sorted(set(data) - {"version", "tarball", "sha512", "sha256", "files"})
    if unknown:
        raise bad(unknown[0], f"unknown key `{unknown[0]}`")
    version, tarball, sha512, sha256, files = (data[k] for k in ("version", "tarball", "sha512", "sha256", "files"))
    if not isinstance(version, str) or not re.fullmatch(r"\d+\.\d+\.\d+", version):
        raise bad("version", f"`version` is {version!r}, not an exact version such as 314.0.8")
    if not isinstance(tarball, str) or urllib.parse.urlsplit(tarball).scheme != "https":
        raise bad("tarball", "`tarball` is not an https URL")
    if isinstance(version, str) and not urllib.parse.urlsplit(tarball).path.endswith(
        f"/pyodide/-/pyodide-{version}.tgz"
    ):
        raise bad(
            "tarball",
            f"`tarball` is not the npm package pyodide {version} (a registry's …/pyodide/-/pyodide-{version}.tgz): "
            "the files it names run in the reader's browser",
        )
    if not isinstance(sha512, str) or not re.fullmatch(r"sha512-[A-Za-z0-9+/]{86}==", sha512):
        raise bad("sha512", "`sha512` is not an npm integrity string (sha512- and 88 base64 characters)")
    if not isinstance(sha256, str) or not re.fullmatch(r"[0-9a-f]{64}", sha256):
        raise bad("sha256", "`sha256` is not 64 lower-case hex digits")
    if (
        not isinstance(files, list)
        or not files
        or not all(isinstance(f, str) and NAME.fullmatch(f) and ".." not in f for f in files)
        or len(set(files)) != len(files)
        or "pyodide.mjs" not in files
        or not set(files) <= RUNTIME_FILES
    ):
        raise bad(
            "files",
            f"`files` must list files of the runtime ({', '.join(sorted(RUNTIME_FILES))}), pyodide.mjs among them",
        )
    return Lock(version, tarball, sha512, sha256, tuple(files), at)


def _download(lock: Lock, dest: Path, timeout: float = 60) -> Path:
    target = dest / "pyodide.tgz"
    h256, h512, size = hashlib.sha256(), hashlib.sha512(), 0
    try:
        req = urllib.request.Request(lock.tarball, headers={"User-Agent": "lessonkit"})
        with urllib.request.urlopen(req, timeout=timeout) as resp, open(target, "xb") as out:
            while chunk := resp.read(1 << 20):
                size += len(chunk)
                if size > MAX_TARBALL:
                    raise LessonError(
                        f"{lock.tarball} is larger than {MAX_TARBALL} bytes", path=LOCK, line=lock.line("tarball")
                    )
                h256.update(chunk)
                h512.update(chunk)
                out.write(chunk)
    except TimeoutError:
        raise LessonError(
            f"{lock.tarball}: timed out",
            path=LOCK,
            line=lock.line("tarball"),
            hint="check the network, or put the package in the build cache",
        ) from None
    except OSError as exc:  # URLError is an OSError
        reason = str(getattr(exc, "reason", exc)).split("\n")[0]
        raise LessonError(
            f"{lock.tarball}: {reason}", path=LOCK, line=lock.line("tarball"), hint="check the network and the URL"
        ) from None
    got512 = "sha512-" + base64.b64encode(h512.digest()).decode()
    if h256.hexdigest() != lock.sha256:
        raise LessonError(
            f"the downloaded tarball has sha256 {h256.hexdigest()}, not the locked one",
            path=LOCK,
            line=lock.line("sha256"),
            hint="the registry served other bytes; do not build with them",
        )
    if got512 != lock.sha512:
        raise LessonError(
            f"the downloaded tarball has {got512[:30]}…, not the locked sha512",
            path=LOCK,
            line=lock.line("sha512"),
            hint="the registry served other bytes; do not build with them",
        )
    return target


def _extract(lock: Lock, archive: Path, dest: Path) -> dict[str, dict]:
    """The locked files out of ``package/`` of the archive (regular files only), with their digests."""
    wanted = {f"package/{name}": name for name in lock.files}
    out: dict[str, dict] = {}
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar:
            name = wanted.get(member.name)
            if name is None:
                continue
            if not member.isreg():
                raise LessonError(
                    f"{member.name} of the tarball is not a regular file", path=LOCK, line=lock.line("files")
                )
            src = tar.extractfile(member)
            assert src is not None  # a regular file
            data = src.read()
            (dest / name).write_bytes(data)
            out[name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    missing = [n for n in lock.files if n not in out]
    if missing:
        raise LessonError(
            f"pyodide {lock.version} has no {missing[0]}",
            path=LOCK,
            line=lock.line("files"),
            hint="list only files of the package (`tar tzf` the tarball)",
        )
    return out


def provide(lock: Lock, cache: Path) -> Path:
    """The folder of the locked files in the build cache, fetched and checked on first use."""
    folder = cache / "pyodide" / lock.sha256
    record = folder / "files.json"
    if record.is_file():
        try:
            files = json.loads(record.read_text(encoding="utf-8"))
            if sorted(files) == sorted(lock.files) and all(
                (folder / n).is_file() and (folder / n).stat().st_size == files[n]["size"] for n in lock.files
            ):
                return folder
        except (OSError, ValueError, KeyError, TypeError):
            pass
    root = cache / "pyodide"
    work = staging_dir(root, "fetch-")
    try:
        archive = _download(lock, work)
        files_dir = work / "files"
        files_dir.mkdir()
        files = _extract(lock, archive, files_dir)
        atomic_write(files_dir / "files.json", json.dumps(files, sort_keys=True, indent=1).encode())
        if folder.exists():
            shutil.rmtree(folder)
        files_dir.rename(folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return folder


def check(lock: Lock, folder: Path) -> None:
    """Each file of the cached folder against the digest recorded when it left the checked tarball."""
    files = json.loads((folder / "files.json").read_text(encoding="utf-8"))
    for name in lock.files:
        if hashlib.sha256((folder / name).read_bytes()).hexdigest() != files[name]["sha256"]:
            raise LessonError(
                f"the cached {name} of pyodide {lock.version} changed since it was taken from the tarball",
                path=LOCK,
                line=lock.line("sha256"),
                hint=f"delete {folder} and build again",
            )


def download_bytes(folder: Path, lock: Lock) -> int:
    """What a reader's browser fetches on the first run: the sizes of the files, as they are."""
    return sum((folder / name).stat().st_size for name in lock.files)
