"""Getting a source tree from outside: the sdist from the package index (read straight from the
index's simple API, or through ``pip download``), a commit from a git remote, and the safe
extraction of a release archive (nothing may leave the tree). Re-exported by
:mod:`lessonkit.source.pin`, whose providers use them."""

from __future__ import annotations

import configparser
import hashlib
import importlib.util
import json
import os
import re
import ssl
import subprocess
import sys
import tarfile
import urllib.parse
import urllib.request
import zlib
from collections.abc import Mapping
from html.parser import HTMLParser
from pathlib import Path, PurePosixPath

from lessonkit.errors import LessonError
from lessonkit.util.fs import remove_owned, staging_dir

DOWNLOAD_FAILED = "download-failed"  # LessonError.code of pip_download / git_checkout failures
TIMED_OUT = "timed-out"


# ---------------------------------------------------------------- extraction


def safe_extract(archive: Path, dest: Path, root_name: str) -> Path:
    """Extract ``archive`` into ``dest``, refusing anything that could leave the tree."""
    try:
        tf = tarfile.open(archive, "r:*")
    except tarfile.ReadError:
        raise LessonError(
            f"cannot open archive {archive.name}: not a tar archive (plain, gzip, bz2 or xz)",
            hint="the archive is damaged; delete it and fetch it again",
        ) from None
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        raise LessonError(
            f"cannot open archive {archive.name}: {_first_line(exc)}",
            hint="the archive is damaged; delete it and fetch it again",
        ) from None
    with tf:
        try:
            members = tf.getmembers()
        except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
            raise LessonError(
                f"archive {archive.name} is truncated or corrupt: {_first_line(exc)}",
                hint="delete it and fetch it again",
            ) from None
        if not any(PurePosixPath(m.name).parts[:1] == (root_name,) for m in members):
            raise LessonError(
                f"archive {archive.name} has no {root_name}/ directory", hint="this is not the pinned release archive"
            )
        for m in members:
            name = m.name
            parts = PurePosixPath(name).parts
            if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
                raise LessonError(f"archive entry has an absolute path: {name}", hint="refusing to extract")
            if ".." in parts or "\\" in name:
                raise LessonError(f"archive entry escapes the tree: {name}", hint="refusing to extract")
            if m.issym() or m.islnk():
                raise LessonError(
                    f"archive entry is a link: {name} -> {m.linkname}",
                    hint="the pinned sdist has no links; refusing to extract",
                )
            if not (m.isfile() or m.isdir()):
                raise LessonError(f"archive entry is not a file or directory: {name}", hint="refusing to extract")
            if parts and parts[0] != root_name:
                raise LessonError(f"archive entry outside {root_name}/: {name}", hint="refusing to extract")
        try:
            tf.extractall(dest, members=members, filter="data")
        except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
            raise LessonError(
                f"archive {archive.name} is truncated or corrupt: {_first_line(exc)}",
                hint="delete it and fetch it again",
            ) from None
    return dest / root_name


def _first_line(exc: BaseException) -> str:
    lines = [l.strip() for l in str(exc).splitlines() if l.strip()]
    return lines[0].rstrip(":") if lines else type(exc).__name__


def _pip() -> list[str]:
    """pip of this interpreter, else of the Python its environment was made from: uv makes
    environments without pip, and the README's first command installed nox with that pip."""
    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip"]
    base = Path(sys.base_prefix) / ("python.exe" if os.name == "nt" else "bin/python3")
    return [str(base) if base.is_file() else sys.executable, "-m", "pip"]


def pip_download(requirement: str, dest: Path, timeout: int = 300) -> list[Path]:
    """The sdist of ``requirement`` from the package index, downloaded into the empty folder
    ``dest``: the files pip wrote there. Raises a :class:`LessonError` whose code is
    :data:`DOWNLOAD_FAILED` (the message is pip's last line) or :data:`TIMED_OUT`."""
    # --no-binary for this project only: with :all: pip also builds the sdist's build backend
    # from source to read its metadata (minutes on an empty cache instead of seconds)
    project = re.split(r"[=<>!~\[ ;]", requirement, maxsplit=1)[0]
    cmd = [
        *_pip(),
        "download",
        "--quiet",
        "--no-deps",
        "--no-binary",
        project,
        "-d",
        str(dest),
        requirement,
    ]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise LessonError("timed out", code=TIMED_OUT) from None
    got = sorted(p for p in dest.iterdir() if p.is_file() and not p.is_symlink())
    if r.returncode != 0 or not got:
        raise LessonError((r.stderr.strip().splitlines() or ["no output"])[-1], code=DOWNLOAD_FAILED)
    return got


PYPI_SIMPLE = "https://pypi.org/simple/"
MAX_ARCHIVE = 256 * 1024 * 1024  # bytes; a release archive larger than this is not the pinned one


def pip_index_url(environ: Mapping[str, str] | None = None) -> str:
    """The index pip would use: ``PIP_INDEX_URL``, else ``index-url`` of pip's configuration
    files (``[global]``, overridden by ``[download]``; global < user < site < ``PIP_CONFIG_FILE``),
    else PyPI. Extra indexes and find-links are left to :func:`pip_download`, the fallback."""
    environ = os.environ if environ is None else environ
    if environ.get("PIP_INDEX_URL", "").strip():
        return environ["PIP_INDEX_URL"].split()[0]
    files: list[Path] = []
    conf_file = environ.get("PIP_CONFIG_FILE", "")
    if conf_file != os.devnull:
        xdg_dirs = environ.get("XDG_CONFIG_DIRS", "/etc/xdg").split(os.pathsep)
        files += [Path(d) / "pip" / "pip.conf" for d in reversed(xdg_dirs) if d] + [Path("/etc/pip.conf")]
        home = Path(environ.get("HOME", "~")).expanduser()
        xdg_home = Path(environ.get("XDG_CONFIG_HOME") or home / ".config")
        files += [home / ".pip" / "pip.conf", xdg_home / "pip" / "pip.conf", Path(sys.prefix) / "pip.conf"]
        if conf_file:
            files.append(Path(conf_file))
    url = PYPI_SIMPLE
    for f in files:
        parser = configparser.RawConfigParser()
        try:
            parser.read(f, encoding="utf-8")
        except (configparser.Error, OSError, UnicodeDecodeError):
            continue  # pip reports its own configuration; this is only a shortcut
        for section in ("global", "download"):
            value = parser.get(section, "index-url", fallback="").strip()
            if value:
                url = value.split()[0]
    return url


class _Links(HTMLParser):
    """The ``<a href>`` targets of a PEP 503 simple page, by their text (the file name)."""

    def __init__(self):
        super().__init__()
        self.links: dict[str, str] = {}
        self._href: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self._href, self._text = dict(attrs).get("href"), []

    def handle_data(self, data):
        if self._href is not None:
            self._text.append(data)

    def handle_endtag(self, tag):
        if tag == "a" and self._href is not None:
            self.links.setdefault("".join(self._text).strip(), self._href)
            self._href = None


def _ssl_context(environ) -> ssl.SSLContext:
    cafile = environ.get("PIP_CERT") or None
    return ssl.create_default_context(cafile=cafile if cafile and os.path.isfile(cafile) else None)


def index_download(
    project: str, filename: str, sha256: str, dest: Path, timeout: float = 30, environ: Mapping[str, str] | None = None
) -> Path:
    """``filename`` of ``project`` read straight from the package index's simple API (PEP 691
    JSON or PEP 503 HTML) into the folder ``dest``, and checked against ``sha256`` as it is
    written. No build backend is installed and no metadata built, which ``pip download`` does.
    Raises a :class:`LessonError` with code :data:`DOWNLOAD_FAILED` or :data:`TIMED_OUT`; the
    caller then falls back to :func:`pip_download` (extra indexes, find-links, credentials)."""
    environ = os.environ if environ is None else environ
    name = re.sub(r"[-_.]+", "-", project).lower()
    page = urllib.parse.urljoin(pip_index_url(environ).rstrip("/") + "/", name + "/")
    if urllib.parse.urlsplit(page).scheme not in ("http", "https"):
        raise LessonError(f"index {page} is not http(s)", code=DOWNLOAD_FAILED)
    context = _ssl_context(environ)
    accept = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"
    target = dest / filename
    try:
        req = urllib.request.Request(page, headers={"Accept": accept, "User-Agent": "lessonkit"})
        with urllib.request.urlopen(req, timeout=timeout, context=context) as resp:
            kind = resp.headers.get_content_type()
            body = resp.read(32 * 1024 * 1024)
            base = resp.geturl()
        if kind.endswith("json"):
            files = {f.get("filename"): f.get("url") for f in json.loads(body).get("files", [])}
        else:
            parser = _Links()
            parser.feed(body.decode("utf-8", "replace"))
            files = parser.links
        href = files.get(filename)
        if not isinstance(href, str):
            raise LessonError(f"{page} lists no {filename}", code=DOWNLOAD_FAILED)
        url = urllib.parse.urljoin(base, href).split("#", 1)[0]
        if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
            raise LessonError(f"{filename} is not served over http(s)", code=DOWNLOAD_FAILED)
        h, size = hashlib.sha256(), 0
        req = urllib.request.Request(url, headers={"User-Agent": "lessonkit"})
        with urllib.request.urlopen(req, timeout=timeout, context=context) as resp, open(target, "xb") as out:
            while chunk := resp.read(1 << 20):
                size += len(chunk)
                if size > MAX_ARCHIVE:
                    raise LessonError(f"{filename} is larger than {MAX_ARCHIVE} bytes", code=DOWNLOAD_FAILED)
                h.update(chunk)
                out.write(chunk)
        if h.hexdigest() != sha256:
            raise LessonError(f"{url} has sha256 {h.hexdigest()[:16]}…", code=DOWNLOAD_FAILED)
        return target
    except LessonError:
        target.unlink(missing_ok=True)
        raise
    except TimeoutError:
        target.unlink(missing_ok=True)
        raise LessonError("timed out", code=TIMED_OUT) from None
    except (OSError, ValueError, AttributeError, TypeError, UnicodeError) as exc:  # URLError is an OSError
        target.unlink(missing_ok=True)
        raise LessonError(f"{page}: {_first_line(exc)}", code=DOWNLOAD_FAILED) from None


def git_checkout(remote: str, commit: str, work: Path, timeout: int = 120) -> None:
    """The tree of the full ``commit`` from ``remote``, checked out into ``work`` without ``.git``.
    Raises a :class:`LessonError` whose code is :data:`DOWNLOAD_FAILED` (the message is git's
    last line) or :data:`TIMED_OUT`."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ALLOW_PROTOCOL": "https:http:ssh:git:file"}
    for cmd in (
        ["git", "init", "-q", str(work)],
        ["git", "-C", str(work), "fetch", "-q", "--depth", "1", "--", remote, commit],
        ["git", "-C", str(work), "-c", "advice.detachedHead=false", "checkout", "-q", "FETCH_HEAD"],
        ["git", "-C", str(work), "rev-parse", "HEAD"],
    ):
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise LessonError("timed out", code=TIMED_OUT) from None
        except OSError as exc:
            raise LessonError(str(exc.strerror or exc), code=DOWNLOAD_FAILED) from None
        if r.returncode != 0:
            raise LessonError((r.stderr.strip().splitlines() or ["?"])[-1], code=DOWNLOAD_FAILED)
    if r.stdout.strip().lower() != commit.lower():
        raise LessonError(f"checked out {r.stdout.strip()[:12]}, not {commit[:12]}", code=DOWNLOAD_FAILED)
    remove_owned(work, ".git")


def extract_sdist(archive: Path, staging_area: Path, root_name: str) -> Path:
    """The tree of a release archive, safely extracted into a new private folder of
    ``staging_area`` (without the sdist's ``PKG-INFO``, which is not part of the source)."""
    work = staging_dir(staging_area, "x-")
    try:
        tree = safe_extract(archive, work, root_name)
    except BaseException:
        remove_owned(staging_area, work.name)
        raise
    (tree / "PKG-INFO").unlink(missing_ok=True)
    return tree
