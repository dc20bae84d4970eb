"""The theme's templates, compiled once: a Jinja2 bytecode cache for MkDocs' theme environment.

MkDocs compiles every template of the theme (Material: ``main.html``, ``base.html`` and some
fifty partials) again in every build and every ``serve`` rebuild, about 0.3 s on one core at
the end of the build. The compiled templates are kept like Python's own bytecode: with it
when the process keeps bytecode apart (``sys.pycache_prefix``; the nox sessions set it to the
shared environment's folder), else in the project's cache. They are code of installed
packages, not content, so a cold build (empty ``LESSONKIT_CACHE``) uses them like ``.pyc``
files.

An entry is the SHA-256 of its payload, then Jinja2's own bytecode (which carries Jinja2's
and Python's versions and a checksum of the template's source): an entry that is damaged,
stale or unreadable is compiled again and replaced; a cache that cannot be written only
costs time.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import jinja2

from lessonkit.util.fs import atomic_write, read_regular

FOLDER = "lessonkit-templates"


def folder(project_cache: Path) -> Path:
    """Where a build keeps the compiled templates (see the module docstring)."""
    prefix = getattr(sys, "pycache_prefix", None)
    return Path(prefix) / FOLDER if prefix else Path(project_cache) / "templates"


class TemplateCache(jinja2.BytecodeCache):
    def __init__(self, directory: Path):
        self.directory = Path(directory)

    def _path(self, bucket: jinja2.bccache.Bucket) -> Path:
        return self.directory / f"{bucket.key}.jinja"

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            data = read_regular(self._path(bucket))  # never through a link, never waiting on a FIFO
        except OSError:
            return
        digest, payload = data[:32], data[32:]
        if hashlib.sha256(payload).digest() != digest:
            return
        try:
            bucket.bytecode_from_string(payload)
        except Exception:  # noqa: BLE001 - Jinja2 reads a pickle, then marshal data: compile again
            bucket.reset()

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            payload = bucket.bytecode_to_string()
            self.directory.mkdir(parents=True, exist_ok=True)
            atomic_write(self._path(bucket), hashlib.sha256(payload).digest() + payload)
        except (OSError, TypeError, ValueError):
            pass


def use(env: jinja2.Environment, project_cache: Path) -> None:
    """Give the theme environment ``env`` the cache, unless it has one."""
    if env.bytecode_cache is None:
        env.bytecode_cache = TemplateCache(folder(project_cache))
