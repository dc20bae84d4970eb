"""One box, completely specified: :class:`BoxSpec` is what the runner hands the launcher and
what the experiment's cache key is the digest of. Nothing reaches a box but through it:

* ``files``: every file the box holds besides the system (the checked pinned copy, the project
  files it may read, its script), by path in the box and sha256; the runner writes them from
  bytes stored under that sha256, so a box never holds what its key does not name;
* ``argv``, ``env`` (``{box}`` stands for the box's folder as the script sees it) and ``cwd``;
* ``jail``: the kind and tool version (a box without a jail sees, and may print, other things);
* the limits (``timeout``, ``memory``, ``fsize``, ``nproc``) and ``output``, the sizes the runner
  keeps of stdout, stderr and the record;
* ``pin``: version, commit, sdist sha256, manifest digest and which parts of the tree a box holds;
* ``tools``: the interpreter (path and version) and the project's ``[experiments] versions``;
* ``engine``: the digest of the code that runs the box and turns what it printed into the
  result (launcher, sanitising, normalising, the record's reading)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, fields
from functools import cached_property, lru_cache
from pathlib import Path

KEY_SCHEMA = "lessonkit-box-1"
PACKAGE = Path(__file__).resolve().parents[2]  # lessonkit/
ENGINE = (
    "run/box/_boot.py",
    "run/box/jail.py",
    "run/box/sandbox.py",
    "run/box/spec.py",
    "run/box/tree.py",
    "run/boxrun.py",
    "run/jobs.py",
    "run/outcomes.py",
    "run/runner.py",
)


@dataclass(frozen=True)
class BoxSpec:
    jail: tuple[str, str]  # kind, version
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    cwd: str
    files: tuple[tuple[str, str], ...]  # (path in the box folder, sha256), sorted
    timeout: int
    memory: int
    fsize: int
    nproc: int
    output: tuple[int, int, int]  # stdout shown, stderr kept, record read (bytes)
    pin: tuple[str, ...]
    tools: tuple[tuple[str, str], ...]
    engine: str

    @cached_property
    def key(self) -> str:
        """The sha256 of every field, in one canonical JSON form."""
        doc = {"schema": KEY_SCHEMA, **{f.name: getattr(self, f.name) for f in fields(self)}}
        return hashlib.sha256(json.dumps(doc, sort_keys=True, ensure_ascii=True).encode()).hexdigest()

    def environment(self, root: str) -> dict[str, str]:
        """The script's environment, with its box folder at ``root``."""
        return {name: value.replace("{box}", root) for name, value in self.env}


def engine_digest(paths: tuple[Path, ...]) -> str:
    """One sha256 over the bytes of ``paths`` (in order, each with its name)."""
    h = hashlib.sha256()
    for p in paths:
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


@lru_cache(maxsize=1)
def engine() -> str:
    """The digest of :data:`ENGINE`, lessonkit's code that runs a box and shapes its result."""
    return engine_digest(tuple(PACKAGE / rel for rel in ENGINE))
