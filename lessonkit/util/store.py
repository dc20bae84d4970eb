"""The one cache discipline: content-keyed entries that are checked on every read.

Keys are SHA-256 digests of every input (callers include the versions of the tools
that produced the value, and :func:`digest` adds a digest of lessonkit's own source,
so changing the code that makes an entry changes its key). Two layers:

* memory, shared by every ``Store`` of the process, so ``mkdocs serve`` rebuilds
  (which start lessonkit from an empty state) reuse what the last build made;
* disk, one file per entry under ``<cache>/<kind>/<key>``.

Every disk entry is written atomically (temporary file + rename) and starts with a
header line ``lk-store-2 <sha256> <seal>``: a digest of its kind, key and value, and an
HMAC of the same under the cache's secret key (:mod:`lessonkit.util.seal`). A read checks
both: an entry that fails the digest (truncated, flipped byte, empty, a folder in its
place, another entry's content, not UTF-8) is removed, logged at debug level and made
again, so a damaged cache never changes the output; an entry whose digest is right but
whose seal is not was rewritten by something that knows the format but not the key: it
is removed and made again too, with one warning per cache folder. A cache that cannot be
written (read-only, full, a file where a folder should be) only costs time: one
warning per cache folder, and the build goes on from memory.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Callable

from lessonkit.util import seal
from lessonkit.util.fs import atomic_write, clean_stale, owned_path, read_regular, remove_owned

FORMAT = "lk-store-2"  # the entry file format (header line); keys are covered by code_version()
# Kinds whose entries keep the unsealed format of lessonkit before the seal, ``lk-store-1 <sha256>``:
# their keys do not hold code_version(), so every lessonkit version sharing a cache reads the same
# entry, and one that found the other's format damaged would remove what it describes. Only the
# pinned tree's provider record: the tree itself is checked against the manifest on every use, and
# the record only names where its bytes came from.
UNSEALED = {"pin": "lk-store-1"}
# What this process read from or wrote to a cache, by (the cache folder, kind, key): a cache's own
# entries only (a pin record, a site record is a fact about one cache, not a pure function of its key).
_MEMORY: dict[tuple[str, str, str], str] = {}
_MEMORY_LIMIT = 20_000
KIND = re.compile(r"^[a-z][a-z0-9-]{0,39}$")
KEY = re.compile(r"^[0-9A-Za-z][0-9A-Za-z._-]{0,199}$")
PACKAGE = Path(__file__).resolve().parents[1]  # lessonkit/

log = logging.getLogger("lessonkit.cache")
_WARNED: set[str] = set()
_CHECKED: dict[str, bool] = {}  # cache folder -> it is the cache's own (checked once per process)


@lru_cache(maxsize=1)
def code_version() -> str:
    """sha256 of the source of the lessonkit package (every file but bytecode): part of
    every key, so a change to the code that produces an entry can never serve an old one."""
    h = hashlib.sha256(FORMAT.encode())
    for p in sorted(PACKAGE.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo"):
            h.update(p.relative_to(PACKAGE).as_posix().encode() + b"\0")
            h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def digest(*parts: str | bytes) -> str:
    h = hashlib.sha256(code_version().encode())
    for part in parts:
        data = part.encode("utf-8", "surrogatepass") if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def _entry_digest(kind: str, key: str, value: bytes) -> str:
    h = hashlib.sha256(f"{FORMAT}\0{kind}\0{key}\0".encode())
    h.update(value)
    return h.hexdigest()


def _entry_seal(cache: Path | None, kind: str, key: str, value: bytes) -> str:
    return seal.seal(cache, FORMAT.encode(), kind.encode(), key.encode(), value)


def _unsealed_digest(fmt: str, kind: str, key: str, value: bytes) -> str:
    h = hashlib.sha256(f"{fmt}\0{kind}\0{key}\0".encode())
    h.update(value)
    return h.hexdigest()


def encode_entry(kind: str, key: str, value: str, cache: Path | None = None) -> bytes:
    """An entry file: the header (digest and the seal under ``cache``'s key), then the value."""
    data = value.encode("utf-8", "surrogatepass")
    if kind in UNSEALED:
        return f"{UNSEALED[kind]} {_unsealed_digest(UNSEALED[kind], kind, key, data)}\n".encode() + data
    return f"{FORMAT} {_entry_digest(kind, key, data)} {_entry_seal(cache, kind, key, data)}\n".encode() + data


def read_entry(kind: str, key: str, raw: bytes, cache: Path | None = None) -> tuple[str | None, str]:
    """(value, "") for an entry file that is exactly what was written for this key and sealed
    under ``cache``'s key; (None, "damaged") when its digest fails, (None, "unsealed") when only
    its seal does (rewritten by something without the key)."""
    head, sep, data = raw.partition(b"\n")
    if kind in UNSEALED:
        fmt = UNSEALED[kind]
        if not sep or head != f"{fmt} {_unsealed_digest(fmt, kind, key, data)}".encode():
            return None, "damaged"
        try:
            return data.decode("utf-8", "surrogatepass"), ""
        except UnicodeDecodeError:
            return None, "damaged"
    parts = head.split(b" ")
    if not sep or len(parts) != 3 or parts[:2] != [FORMAT.encode(), _entry_digest(kind, key, data).encode()]:
        return None, "damaged"
    try:
        value = data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return None, "damaged"
    if not seal.sealed(cache, parts[2].decode("ascii", "replace"), FORMAT.encode(), kind.encode(), key.encode(), data):
        return None, "unsealed"
    return value, ""


def decode_entry(kind: str, key: str, raw: bytes, cache: Path | None = None) -> str | None:
    """The value of an entry file, or None when it is not exactly what was written for this key
    (and sealed under ``cache``'s key)."""
    return read_entry(kind, key, raw, cache)[0]


def warn_once(where: str, message: str) -> None:
    """One warning per cache folder and process (a read-only cache is not an error)."""
    if where in _WARNED:
        return
    _WARNED.add(where)
    if not logging.getLogger().handlers and not log.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("WARNING -  %(message)s"))
        log.addHandler(handler)
        log.propagate = False
    log.warning(message)


_SWEPT: set[str] = set()


def sweep(cache: Path) -> list[str]:
    """Once per cache and process: remove the half-written ``.tmp-<owner>-…`` files that killed
    builds left in every kind's folder (exact owner format, owner provably dead; see
    :func:`fsutil.clean_stale`). Folders that are links are left alone."""
    key = str(cache)
    if key in _SWEPT:
        return []
    _SWEPT.add(key)
    removed = []
    try:
        kinds = sorted(e.name for e in os.scandir(cache) if e.is_dir(follow_symlinks=False) and KIND.fullmatch(e.name))
    except OSError:
        return []
    for kind in kinds:
        removed += [f"{kind}/{n}" for n in clean_stale(cache / kind, prefix=".tmp-")]
    return removed


class Store:
    """Entries of one ``kind`` under ``<cache>/<kind>`` (no disk layer when ``cache`` is None)."""

    def __init__(self, cache: Path | None, kind: str):
        if not KIND.fullmatch(kind):
            raise ValueError(f"bad store kind {kind!r}")
        self.kind = kind
        self.cache = cache
        self.dir = cache / kind if cache is not None else None
        self._memory = str(cache) if cache is not None else ""  # this cache's part of the memory layer
        self.hits = 0
        self.misses = 0
        self.dropped = 0
        self.unsealed = 0  # entries dropped because their seal did not match (see lessonkit.util.seal)

    def _path(self, key: str) -> Path | None:
        """``<cache>/<kind>/<key>``; None when the folder is not the cache's own (a link) or the
        key is not a plain name. An entry that is itself a link is dropped by get and replaced by put."""
        if self.dir is None or self.cache is None or not KEY.fullmatch(key):
            return None
        where = str(self.dir)
        if where not in _CHECKED:
            try:
                owned_path(self.cache, self.kind)
            except Exception:  # a link in place of the folder: no disk layer
                _CHECKED[where] = False
            else:
                _CHECKED[where] = True
                sweep(self.cache)
        return self.dir / key if _CHECKED[where] else None

    def get(self, key: str) -> str | None:
        value = _MEMORY.get((self._memory, self.kind, key))
        if value is not None:
            return value
        path = self._path(key)
        if path is None:
            return None
        try:
            raw = read_regular(path)  # never through a link, never a FIFO, device or folder
        except FileNotFoundError:
            return None
        except OSError:  # a folder in its place, unreadable: drop it
            raw = None
        value, why = read_entry(self.kind, key, raw, self.cache) if raw is not None else (None, "damaged")
        if value is None:
            if why == "unsealed":
                self.unsealed += 1
                warn_once(
                    f"{self.dir}:seal",
                    f"lessonkit: an entry in {self.dir} has a right digest but not this cache's seal (it was "
                    "rewritten outside lessonkit); such entries are made again, not used",
                )
            self.drop(key)
            return None
        self._remember(key, value)
        return value

    def drop(self, key: str) -> None:
        """Remove a damaged entry (it will be made again)."""
        self.dropped += 1
        _MEMORY.pop((self._memory, self.kind, key), None)
        log.debug("lessonkit: dropped a damaged cache entry %s/%s", self.kind, key)
        if self.cache is None:  # no disk layer: nothing on disk to remove
            return
        try:
            remove_owned(self.cache, self.kind, key)
        except Exception as exc:  # cannot remove: the next put replaces it, or the cache is read-only
            warn_once(
                str(self.dir),
                f"lessonkit: cannot remove a damaged cache entry in {self.dir} ({exc}); the build continues without it",
            )

    def holds(self, key: str) -> bool:
        """Whether an entry for ``key`` is there (without reading it; :meth:`get` still checks it)."""
        if (self._memory, self.kind, key) in _MEMORY:
            return True
        path = self._path(key)
        return path is not None and path.is_file() and not path.is_symlink()

    def put(self, key: str, value: str) -> None:
        self._remember(key, value)
        if self.dir is None or self.cache is None:  # no disk layer (both are None together)
            return
        path = self._path(key)
        if path is None:
            warn_once(
                str(self.dir),
                f"lessonkit: cache folder {self.dir} is not usable (a link, or an invalid key); "
                "the build continues without storing",
            )
            return
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            if path.is_dir() and not path.is_symlink():
                remove_owned(self.cache, self.kind, key)
            atomic_write(
                path, encode_entry(self.kind, key, value, self.cache)
            )  # replaces a link, never writes through it
        except OSError as exc:
            warn_once(
                str(self.dir),
                f"lessonkit: cannot write the cache {self.dir} ({exc.strerror or exc}); "
                "the build continues without storing (it only costs time)",
            )

    def get_or_make(self, key: str, make: Callable[[], str]) -> str:
        value = self.get(key)
        if value is None:
            self.misses += 1
            value = make()
            self.put(key, value)
        else:
            self.hits += 1
        return value

    def _remember(self, key: str, value: str) -> None:
        if len(_MEMORY) >= _MEMORY_LIMIT:
            _MEMORY.clear()
        _MEMORY[(self._memory, self.kind, key)] = value


def forget_memory() -> None:
    """Empty the in-memory layer (tests; a serve rebuild keeps it)."""
    _MEMORY.clear()
