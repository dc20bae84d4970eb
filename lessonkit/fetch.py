"""Getting a source tree from outside: the sdist from the package index (``pip download``), a
commit from a git remote, and the safe extraction of a release archive (nothing may leave the
tree). Re-exported by :mod:`lessonkit.pin`, whose providers use them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
import zlib
from pathlib import Path, PurePosixPath

from .errors import LessonError
from .fsutil import remove_owned, staging_dir

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


def pip_download(requirement: str, dest: Path, timeout: int = 300) -> list[Path]:
    """The sdist of ``requirement`` from the package index, downloaded into the empty folder
    ``dest``: the files pip wrote there. Raises a :class:`LessonError` whose code is
    :data:`DOWNLOAD_FAILED` (the message is pip's last line) or :data:`TIMED_OUT`."""
    # --no-binary for this project only: with :all: pip also builds the sdist's build backend
    # from source to read its metadata (minutes on an empty cache instead of seconds)
    project = re.split(r"[=<>!~\[ ;]", requirement, maxsplit=1)[0]
    cmd = [
        sys.executable,
        "-m",
        "pip",
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
