"""The environment a build reads: ``LESSONKIT_CACHE``, ``LESSONKIT_SOURCE`` (and a pin's legacy
name), ``LESSONKIT_SDIST``, ``LESSONKIT_GIT_REMOTE``, ``LESSONKIT_SANDBOX``, ``LESSONKIT_PDF``,
``SITE_URL``, ``LESSONKIT_REPO_URL`` and ``SOURCE_DATE_EPOCH``, each checked before anything acts
on it; a mistake is one line naming the variable. (Split from :mod:`lessonkit.config.files`, which
still exports these names.)"""

from __future__ import annotations

import os
import re
from pathlib import Path

from lessonkit.config.files import CONTROL, REMOTE_URL, SCP_LIKE, SOURCE_ENV, show
from lessonkit.errors import LessonError


def env(name: str) -> str | None:
    """An environment variable's value; set-but-empty (or only spaces) counts as unset."""
    value = os.environ.get(name)
    if value is None or not value.strip():
        return None
    if control := CONTROL.search(value):
        raise LessonError(
            f"contains the control character U+{ord(control[0]):04X}",
            path=name,
            hint="set it to one line of text, or unset it",
        )
    return value


def cache_dir(root: Path) -> Path:
    """The build cache: ``$LESSONKIT_CACHE`` (absolute) or ``root/.cache``; either way its real
    location must be outside the project's own files (a hidden folder in the project is fine)."""
    root = Path(os.path.realpath(root))
    value = env("LESSONKIT_CACHE")
    if value is None:
        name, value = ".cache", str(root / ".cache")
        hint = "remove the link .cache, or set LESSONKIT_CACHE to a folder outside the project"
        shown = ".cache"
    else:
        name, shown = "LESSONKIT_CACHE", value
        value = os.path.expanduser(value)  # ~ as a YAML or .env file leaves it
        hint = "give an absolute path to a folder outside the project (or unset it to use .cache)"
        if not os.path.isabs(value):
            raise LessonError(f"{show(value)} is a relative path", path=name, hint=hint)
    real = Path(os.path.realpath(value))
    if real == root or real in root.parents:
        raise LessonError(
            f"{shown} is the project folder or contains it: the cache would be written among the project's files",
            path=name,
            hint=hint,
        )
    if root in real.parents:
        first = real.relative_to(root).parts[0]
        if first == ".git" or not first.startswith("."):  # the project's own files, or its history
            raise LessonError(
                f"{shown} is inside the project's own files ({first}/)",
                path=name,
                hint=hint + "; inside the project only a hidden folder such as .cache may hold it",
            )
    if real.exists() and not real.is_dir():
        raise LessonError(f"{shown} exists and is not a folder", path=name, hint=hint)
    return real


def source_dir(legacy: str | None = None) -> tuple[str, Path] | None:
    """``(variable, folder)`` of a local checkout of the pinned tree, from ``LESSONKIT_SOURCE``
    or the legacy variable pin.toml names in ``[provider] source_env``; None when neither is set."""
    names = [SOURCE_ENV] + ([legacy] if legacy and legacy != SOURCE_ENV else [])
    for name in names:
        value = env(name)
        if value is None:
            continue
        p = Path(value).expanduser()
        if not p.is_dir():
            raise LessonError(
                f"{value} is not a folder", path=name, hint="point it at a checkout of the pinned tree, or unset it"
            )
        return name, p.resolve()
    return None


def sdist_path() -> Path | None:
    """``LESSONKIT_SDIST``: a regular file (never opened here: a FIFO, a device or a folder is one
    line at once), or None when unset. Checked with the configuration (``verify.check_config``),
    whether or not the pinned tree is cached."""
    value = env("LESSONKIT_SDIST")
    if value is None:
        return None
    p = Path(value).expanduser()
    if not p.is_file():
        what = "is a folder" if p.is_dir() else "is not a regular file" if p.exists() else "does not exist"
        raise LessonError(
            f"{value} {what}",
            path="LESSONKIT_SDIST",
            hint="name the release archive file (see pin.toml [sdist] filename), or unset it",
        )
    return p.resolve()


def git_remote() -> str | None:
    value = env("LESSONKIT_GIT_REMOTE")
    if value is None:
        return None
    hint = "give an https://, ssh://, git:// or file:// URL, user@host:path, or an existing local repository"
    if value.startswith("-"):
        raise LessonError(
            f"{show(value)} starts with `-` (git would read it as an option)", path="LESSONKIT_GIT_REMOTE", hint=hint
        )
    if "::" in value.split("/")[0]:
        raise LessonError(f"{show(value)} uses a git remote helper transport", path="LESSONKIT_GIT_REMOTE", hint=hint)
    if REMOTE_URL.fullmatch(value) or SCP_LIKE.fullmatch(value) or Path(value).expanduser().is_dir():
        return value
    raise LessonError(f"{show(value)} is neither a URL nor an existing folder", path="LESSONKIT_GIT_REMOTE", hint=hint)


def display_text(value: str, limit: int = 300) -> str:
    """Text from a file or the environment, safe to show in a page: one line, no control or
    markup characters (each replaced by ``?``)."""
    return re.sub(r"[\x00-\x1f\x7f-\x9f\u2028\u2029<>&\"'`]", "?", value)[:limit]


# ---------------------------------------------------------------- environment of a build

SANDBOX_MODES = ("copy", "namespaces", "bwrap")
WEB_URL = re.compile(r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~%!$&()*+,;=:@/-]*)?$")


def sandbox_mode() -> str:
    """``LESSONKIT_SANDBOX``: unset (the first jail that works: bubblewrap, then lessonkit's own
    namespaces; else none), ``bwrap``, ``namespaces`` (that jail, or an error) or ``copy`` (none)."""
    value = env("LESSONKIT_SANDBOX")
    if value is None:
        return ""
    if value not in SANDBOX_MODES:
        raise LessonError(
            f"{show(value)} is not a sandbox mode",
            path="LESSONKIT_SANDBOX",
            hint="set it to `bwrap`, `namespaces` or `copy`, or unset it",
        )
    return value


def course_pdf() -> bool:
    """``LESSONKIT_PDF``: whether a build prints the course PDF (``1``/``yes``/``true``; ``0``,
    ``no``, ``false`` or unset: not)."""
    value = env("LESSONKIT_PDF")
    if value is None or value.strip().lower() in ("0", "no", "false"):
        return False
    if value.strip().lower() in ("1", "yes", "true"):
        return True
    raise LessonError(
        f"{show(value)} is not 1 or 0",
        path="LESSONKIT_PDF",
        hint="LESSONKIT_PDF=1 makes the build print the course PDF; unset it otherwise",
    )


def site_urls() -> dict[str, str]:
    """``SITE_URL`` and ``LESSONKIT_REPO_URL`` (read by mkdocs.yml): an http(s) address each, or unset.
    They end up in links of every page, so nothing that could leave the attribute is accepted."""
    out = {}
    for name in ("SITE_URL", "LESSONKIT_REPO_URL"):
        value = env(name)
        if value is None:
            continue
        if not WEB_URL.fullmatch(value) or len(value) > 2000:
            raise LessonError(
                f"{show(value)} is not an http(s) address",
                path=name,
                hint="for example https://example.org/lessons/, or unset it",
            )
        out[name] = value
    return out


# The bundle is a zip file: its dates run from 1980-01-01 to 2107-12-31 (a 7-bit year after 1980).
ZIP_FIRST, ZIP_LAST = 315532800, 4354819199


def source_date_epoch() -> int | None:
    """``SOURCE_DATE_EPOCH`` (reproducible builds: the date of the site's files and the bundle's
    entries): whole seconds since 1970, at most 2107-12-31, or unset. An earlier date than 1980
    is kept by MkDocs and given to the bundle as 1980-01-01, the first date a zip file holds."""
    value = env("SOURCE_DATE_EPOCH")
    if value is None:
        return None
    hint = f"give whole seconds since 1970 (for example 1764460800) up to {ZIP_LAST} (2107-12-31), or unset it"
    text = value.strip()
    if not re.fullmatch(r"[0-9]{1,20}", text):
        what = "a negative number" if re.fullmatch(r"-[0-9]+", text) else "not a whole number of seconds"
        raise LessonError(f"{show(value)} is {what}", path="SOURCE_DATE_EPOCH", hint=hint)
    n = int(text)
    if n > ZIP_LAST:
        raise LessonError(
            f"{text} is after 2107, the last date a zip file can hold", path="SOURCE_DATE_EPOCH", hint=hint
        )
    return n
