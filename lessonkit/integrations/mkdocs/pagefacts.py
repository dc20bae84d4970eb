"""Facts about a page for the theme's templates: the date it last changed, and the pin.

The date must not make two builds of the same checkout differ, so it never comes from the
clock or from file times: a page's date is that of the last commit touching its file
(``git log``); a generated page, or a page git does not know, takes the last commit touching
any input of the site (the docs, the series' templates, ``sourcemap/`` and the code folders);
without git (an unpacked archive) it is the day of ``SOURCE_DATE_EPOCH`` (UTC), and without
that there is no date.
"""

from __future__ import annotations

import datetime
import re
import subprocess
from pathlib import Path

from lessonkit.config import environment

DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
GIT_TIMEOUT = 60  # seconds for the one `git log` of a build


def git_dates(root: Path, folders: list[str]) -> tuple[dict[str, str], str | None]:
    """``({path relative to root: date of its last commit}, date of the last commit of all)``
    from one ``git log`` over ``folders``; ``({}, None)`` where git or the history is missing."""
    try:
        r = subprocess.run(
            ["git", "log", "--format=%x00%cs", "--name-only", "--relative", "--no-renames", "--", *folders],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return {}, None
    if r.returncode != 0:
        return {}, None
    dates: dict[str, str] = {}
    newest = None
    for commit in r.stdout.split("\0")[1:]:
        head, _, names = commit.partition("\n")
        date = head.strip()
        if not DATE.match(date):
            continue
        newest = newest or date  # git log lists the newest commit first
        for name in names.splitlines():
            if name:
                dates.setdefault(name, date)
    return dates, newest


def epoch_date() -> str | None:
    """The day of ``SOURCE_DATE_EPOCH`` (UTC), or None when it is unset (a value that is not a
    date is a located error, as in :func:`~lessonkit.config.environment.source_date_epoch`)."""
    value = environment.source_date_epoch()
    if value is None:
        return None
    return datetime.datetime.fromtimestamp(value, datetime.timezone.utc).date().isoformat()


class PageDates:
    """The last-changed date of every page of one build (one ``git log``, on first use)."""

    def __init__(self, root: Path, folders: list[str]):
        self.root, self.folders = root, folders
        self._dates: dict[str, str] | None = None
        self._newest: str | None = None

    def of(self, abs_src_path: str | None) -> str | None:
        if self._dates is None:
            self._dates, self._newest = git_dates(self.root, self.folders)
            self._newest = self._newest or epoch_date()
        if abs_src_path:
            try:
                rel = Path(abs_src_path).resolve().relative_to(self.root).as_posix()
            except ValueError:
                rel = None
            if rel in self._dates:
                return self._dates[rel]
        return self._newest
