"""Getting a source tree from outside: the sdist from the package index (its bytes read from the
index's simple API and hashed before anything opens them; no pip, uv or build backend ever runs
on them), a commit from a git remote, and the safe extraction of a tar or zip release archive
(nothing may leave the tree). The providers of the pinned tree
(:mod:`lessonkit.source.providers`) use them."""

from __future__ import annotations

import base64
import configparser
import hashlib
import json
import os
import re
import ssl
import stat
import subprocess
import sys
import tarfile
import urllib.parse
import urllib.request
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path, PurePosixPath

from lessonkit.errors import LessonError
from lessonkit.util.fs import remove_owned, staging_dir

DOWNLOAD_FAILED = "download-failed"  # LessonError.code of index and git_checkout failures
TIMED_OUT = "timed-out"


# ---------------------------------------------------------------- extraction


def _damaged(archive: Path, exc: BaseException, truncated: bool = False) -> LessonError:
    if truncated:
        return LessonError(
            f"archive {archive.name} is truncated or corrupt: {_first_line(exc)}", hint="delete it and fetch it again"
        )
    return LessonError(
        f"cannot open archive {archive.name}: {_first_line(exc)}",
        hint="the archive is damaged; delete it and fetch it again",
    )


_ARCHIVE_ERRORS = (
    tarfile.TarError,
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    OSError,
    EOFError,
    zlib.error,
    ValueError,
)


def _is_zip(archive: Path) -> bool:
    return archive.name.lower().endswith(".zip")


def _members(archive: Path) -> list[tuple[str, str, str]]:
    """(name, kind, link target) of every entry of a tar or zip release archive, in order; kind is
    ``file``, ``dir``, ``link`` or ``other``."""
    if _is_zip(archive):
        try:
            with zipfile.ZipFile(archive) as zf:
                infos = zf.infolist()
        except _ARCHIVE_ERRORS as exc:
            raise _damaged(archive, exc) from None
        out = []
        for info in infos:
            mode = info.external_attr >> 16
            kind = "link" if stat.S_ISLNK(mode) else "dir" if info.is_dir() else "file"
            if stat.S_IFMT(mode) and not (stat.S_ISLNK(mode) or stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                kind = "other"
            out.append((info.filename.rstrip("/") if info.is_dir() else info.filename, kind, ""))
        return out
    try:
        tf = tarfile.open(archive, "r:*")
    except tarfile.ReadError:
        raise LessonError(
            f"cannot open archive {archive.name}: not a tar archive (plain, gzip, bz2 or xz) or a zip archive",
            hint="the archive is damaged; delete it and fetch it again",
        ) from None
    except _ARCHIVE_ERRORS as exc:
        raise _damaged(archive, exc) from None
    with tf:
        try:
            members = tf.getmembers()
        except _ARCHIVE_ERRORS as exc:
            raise _damaged(archive, exc, truncated=True) from None
    return [
        (
            m.name,
            "link" if m.issym() or m.islnk() else "file" if m.isfile() else "dir" if m.isdir() else "other",
            m.linkname,
        )
        for m in members
    ]


def archive_root(archive: Path) -> str:
    """The top folder of a release archive's first entry (``name-1.2.3``); "" for an empty archive."""
    members = _members(archive)
    return PurePosixPath(members[0][0]).parts[0] if members and PurePosixPath(members[0][0]).parts else ""


def read_member(archive: Path, name: str, limit: int = 1 << 20) -> bytes | None:
    """The first ``limit`` bytes of the file ``name`` of a tar or zip archive; None when it has none."""
    try:
        if _is_zip(archive):
            with zipfile.ZipFile(archive) as zf:
                try:
                    with zf.open(name) as f:
                        return f.read(limit)
                except KeyError:
                    return None
        with tarfile.open(archive, "r:*") as tf:
            try:
                got = tf.extractfile(name)
            except KeyError:
                return None
            return got.read(limit) if got is not None else None
    except _ARCHIVE_ERRORS as exc:
        raise _damaged(archive, exc) from None


def safe_extract(archive: Path, dest: Path, root_name: str) -> Path:
    """Extract the tar or zip ``archive`` into ``dest``, refusing anything that could leave the tree."""
    members = _members(archive)
    if not any(PurePosixPath(name).parts[:1] == (root_name,) for name, _, _ in members):
        raise LessonError(
            f"archive {archive.name} has no {root_name}/ directory", hint="this is not the pinned release archive"
        )
    for name, kind, link in members:
        parts = PurePosixPath(name).parts
        if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
            raise LessonError(f"archive entry has an absolute path: {name}", hint="refusing to extract")
        if ".." in parts or "\\" in name:
            raise LessonError(f"archive entry escapes the tree: {name}", hint="refusing to extract")
        if kind == "link":
            raise LessonError(
                f"archive entry is a link: {name}" + (f" -> {link}" if link else ""),
                hint="the pinned sdist has no links; refusing to extract",
            )
        if kind == "other":
            raise LessonError(f"archive entry is not a file or directory: {name}", hint="refusing to extract")
        if parts and parts[0] != root_name:
            raise LessonError(f"archive entry outside {root_name}/: {name}", hint="refusing to extract")
    try:
        if _is_zip(archive):
            with zipfile.ZipFile(archive) as zf:
                for info in zf.infolist():
                    target = dest.joinpath(*PurePosixPath(info.filename).parts)
                    if info.is_dir():
                        target.mkdir(parents=True, exist_ok=True)
                        continue
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with zf.open(info) as src, open(target, "xb") as out:
                        while chunk := src.read(1 << 20):
                            out.write(chunk)
        else:
            with tarfile.open(archive, "r:*") as tf:
                tf.extractall(dest, filter="data")
    except FileExistsError as exc:
        raise LessonError(f"archive {archive.name} holds {exc.filename} twice", hint="refusing to extract") from None
    except _ARCHIVE_ERRORS as exc:
        raise _damaged(archive, exc, truncated=True) from None
    return dest / root_name


def _first_line(exc: BaseException) -> str:
    lines = [l.strip() for l in str(exc).splitlines() if l.strip()]
    return lines[0].rstrip(":") if lines else type(exc).__name__


# ---------------------------------------------------------------- the package index
#
# A release archive is data until its sha256 is checked: it is read as bytes from the index's
# simple API and hashed as it arrives; nothing opens, unpacks or builds it before the digest
# matches. No pip, uv or build backend ever runs on it (``pip download`` imports the archive's
# build backend to prepare metadata, before any hash could be compared).

PYPI_SIMPLE = "https://pypi.org/simple/"
MAX_ARCHIVE = 256 * 1024 * 1024  # bytes; a release archive larger than this is not the pinned one
MAX_PAGE = 32 * 1024 * 1024  # bytes of one simple page
HASH_MISMATCH = "hash-mismatch"  # LessonError.code: the bytes are not the ones expected (nothing kept)
SDIST_EXTS = (".tar.gz", ".zip")  # the sdist formats of PEP 625 (.tar.gz) and before it (.zip)
_PLAIN_FILE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+!~-]{0,254}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def pip_index_url(environ: Mapping[str, str] | None = None) -> str:
    """The index pip would use: ``PIP_INDEX_URL``, else ``index-url`` of pip's configuration
    files (``[global]``, overridden by ``[download]``; global < user < site < ``PIP_CONFIG_FILE``),
    else PyPI."""
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
            continue  # a file pip could not read either; the next one still counts
        for section in ("global", "download"):
            value = parser.get(section, "index-url", fallback="").strip()
            if value:
                url = value.split()[0]
    return url


@dataclass(frozen=True)
class Listed:
    """One file of a project's simple page."""

    filename: str
    url: str  # absolute, without its fragment, without credentials
    sha256: str | None  # as the index lists it (None: it lists none)
    page: str  # the simple page that lists it (without credentials)


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


def _split_credentials(url: str) -> tuple[str, str | None]:
    """``url`` without ``user:password@`` and the Basic authorization for its host (or None)."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    token = f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}".encode()
    return urllib.parse.urlunsplit(parts._replace(netloc=host)), "Basic " + base64.b64encode(token).decode()


def _plain(url: str) -> str:
    return _split_credentials(url)[0]


class _Reader:
    """Reads URLs of one index: http(s) with its credentials (sent to the index's host only), and
    ``file:`` (a folder stands for its ``index.html``, as pip reads a local index) only when the
    index itself is a ``file:`` URL."""

    def __init__(self, index: str, timeout: float, environ: Mapping[str, str]):
        self.index, self.auth = _split_credentials(index)
        self.scheme = urllib.parse.urlsplit(self.index).scheme
        if self.scheme not in ("http", "https", "file"):
            raise LessonError(f"index {self.index} is not an http(s) or file URL", code=DOWNLOAD_FAILED)
        self.host = urllib.parse.urlsplit(self.index).netloc
        self.timeout = timeout
        self.context = _ssl_context(environ)

    def open(self, url: str, accept: str | None = None):
        """(a binary stream, its content type, its final URL)."""
        parts = urllib.parse.urlsplit(url)
        if parts.scheme == "file":
            if self.scheme != "file":
                raise LessonError(f"{url} is a local file named by a remote index", code=DOWNLOAD_FAILED)
            path = Path(urllib.request.url2pathname(parts.path))
            if path.is_dir():
                path = path / "index.html"
            if not path.is_file():  # a FIFO or device would block or never end
                raise LessonError(f"{url} is not a regular file", code=DOWNLOAD_FAILED)
            kind = "text/html" if path.suffix in (".html", ".htm") else "application/octet-stream"
            return open(path, "rb"), kind, url
        if parts.scheme not in ("http", "https"):
            raise LessonError(f"{url} is not an http(s) URL", code=DOWNLOAD_FAILED)
        headers = {"User-Agent": "lessonkit"}
        if accept:
            headers["Accept"] = accept
        request = urllib.request.Request(url, headers=headers)
        if self.auth and parts.netloc == self.host:  # not repeated to wherever a redirect leads
            request.add_unredirected_header("Authorization", self.auth)
        resp = urllib.request.urlopen(request, timeout=self.timeout, context=self.context)
        return resp, resp.headers.get_content_type(), resp.geturl()


def _failure(what: str, exc: BaseException) -> LessonError:
    if isinstance(exc, LessonError):
        return exc
    if isinstance(exc, TimeoutError) or isinstance(getattr(exc, "reason", None), TimeoutError):
        return LessonError("timed out", code=TIMED_OUT)  # also urllib's URLError(timeout) of a connect
    return LessonError(f"{what}: {_first_line(exc)}", code=DOWNLOAD_FAILED)


def index_listing(
    project: str, timeout: float = 30, environ: Mapping[str, str] | None = None
) -> tuple[str, list[Listed]]:
    """The simple page of ``project`` on the index pip is configured with (:func:`pip_index_url`),
    read as PEP 691 JSON or PEP 503 HTML: (the page's URL, the files it lists). Raises a
    :class:`LessonError` with code :data:`DOWNLOAD_FAILED` or :data:`TIMED_OUT`."""
    environ = os.environ if environ is None else environ
    name = re.sub(r"[-_.]+", "-", project).lower()
    index = pip_index_url(environ)
    page = urllib.parse.urljoin(index.rstrip("/") + "/", name + "/")
    shown = _plain(page)
    accept = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"
    try:
        reader = _Reader(page, timeout, environ)
        stream, kind, base = reader.open(reader.index, accept)
        with stream:
            body = stream.read(MAX_PAGE + 1)
        if len(body) > MAX_PAGE:
            raise LessonError(f"{shown} is larger than {MAX_PAGE} bytes", code=DOWNLOAD_FAILED)
        listed: list[Listed] = []
        if kind.endswith("json"):
            for f in json.loads(body).get("files", []):
                hashes = f.get("hashes") if isinstance(f.get("hashes"), dict) else {}
                if isinstance(f.get("filename"), str) and isinstance(f.get("url"), str):
                    listed.append(
                        _listed(f["filename"], urllib.parse.urljoin(base, f["url"]), hashes.get("sha256"), shown)
                    )
        else:
            parser = _Links()
            parser.feed(body.decode("utf-8", "replace"))
            parser.close()
            for filename, href in parser.links.items():
                url = urllib.parse.urljoin(base, href)
                fragment = urllib.parse.parse_qs(urllib.parse.urlsplit(url).fragment)
                listed.append(_listed(filename, url, (fragment.get("sha256") or [None])[0], shown))
        return shown, listed
    except (LessonError, OSError, ValueError, AttributeError, TypeError, UnicodeError) as exc:  # URLError: OSError
        raise _failure(shown, exc) from None


def _listed(filename: str, url: str, sha256: object, page: str) -> Listed:
    digest = sha256.lower() if isinstance(sha256, str) and _SHA256.fullmatch(sha256.lower()) else None
    return Listed(filename, _plain(url.split("#", 1)[0]), digest, page)


def _version_key(version: str) -> str:
    """A version as PEP 440 compares release numbers: ``1.8`` == ``1.8.0`` == ``01.8``."""
    v = version.strip().lower().removeprefix("v")
    m = re.match(r"(\d+(?:\.\d+)*)(.*)", v)
    if not m:
        return v
    release = [str(int(part)) for part in m[1].split(".")]
    while len(release) > 1 and release[-1] == "0":
        release.pop()
    return ".".join(release) + m[2]


def normalise_name(name: str) -> str:
    """A distribution name as sdist file names spell it (PEP 625): ``more-itertools`` → ``more_itertools``."""
    return re.sub(r"[-_.]+", "_", name).lower()


def find_sdist(project: str, version: str, timeout: float = 30, environ: Mapping[str, str] | None = None) -> Listed:
    """The release archive (sdist) of ``project==version`` on the index's simple page:
    ``name-version.tar.gz`` (the name as written or normalised, PEP 625), else ``.zip``."""
    page, listed = index_listing(project, timeout, environ)
    found: dict[str, Listed] = {}
    for entry in listed:
        ext = next((e for e in SDIST_EXTS if entry.filename.lower().endswith(e)), None)
        if ext is None:
            continue
        stem, _, ver = entry.filename[: -len(ext)].rpartition("-")
        if normalise_name(stem) == normalise_name(project) and _version_key(ver) == _version_key(version):
            found.setdefault(ext, entry)
    for ext in SDIST_EXTS:
        if ext in found:
            return found[ext]
    raise LessonError(f"{page} lists no release archive (sdist) of {project}=={version}", code=DOWNLOAD_FAILED)


def download_checked(
    listed: Listed, sha256: str, dest: Path, timeout: float = 30, environ: Mapping[str, str] | None = None
) -> Path:
    """The bytes of ``listed`` written to ``dest/<filename>`` while they are hashed; kept only when
    their sha256 is ``sha256`` (else nothing is left and the code is :data:`HASH_MISMATCH`). The
    archive is never opened here. Other failures: :data:`DOWNLOAD_FAILED`, :data:`TIMED_OUT`."""
    environ = os.environ if environ is None else environ
    if not _PLAIN_FILE.fullmatch(listed.filename):
        raise LessonError(f"{listed.page} lists a file named {listed.filename!r}", code=DOWNLOAD_FAILED)
    target = dest / listed.filename
    try:
        reader = _Reader(pip_index_url(environ), timeout, environ)
        h, size = hashlib.sha256(), 0
        stream, _, _ = reader.open(listed.url)
        with stream, open(target, "xb") as out:
            while chunk := stream.read(1 << 20):
                size += len(chunk)
                if size > MAX_ARCHIVE:
                    raise LessonError(f"{listed.url} is larger than {MAX_ARCHIVE} bytes", code=DOWNLOAD_FAILED)
                h.update(chunk)
                out.write(chunk)
        if h.hexdigest() != sha256:
            raise LessonError(f"{listed.url} has sha256 {h.hexdigest()[:16]}…", code=HASH_MISMATCH)
        return target
    except BaseException as exc:
        target.unlink(missing_ok=True)
        if isinstance(exc, (LessonError, OSError, ValueError, AttributeError, TypeError, UnicodeError)):
            raise _failure(listed.url, exc) from None
        raise


def index_download(
    project: str, filename: str, sha256: str, dest: Path, timeout: float = 30, environ: Mapping[str, str] | None = None
) -> Path:
    """``filename`` of ``project`` read from the index's simple API into the folder ``dest`` and
    checked against ``sha256`` as it is written (:func:`download_checked`)."""
    page, listed = index_listing(project, timeout, environ)
    entry = next((e for e in listed if e.filename == filename), None)
    entry = entry or next((e for e in listed if e.filename.lower() == filename.lower()), None)
    if entry is None:
        raise LessonError(f"{page} lists no {filename}", code=DOWNLOAD_FAILED)
    return download_checked(Listed(filename, entry.url, entry.sha256, page), sha256, dest, timeout, environ)


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
