"""A content-keyed text cache: derived HTML that only depends on its inputs.

Keys are SHA-256 digests of every input (callers include the versions of the
tools that produced the value), so an entry can never be stale: a changed input
is a different key. Two layers:

* memory, shared by every ``Store`` of the process, so ``mkdocs serve`` rebuilds
  (which start lessonkit from an empty state) reuse what the last build made;
* disk, under ``<cache>/<kind>/``, written atomically, so warm builds reuse it.

A damaged disk entry (not UTF-8) is ignored and rewritten. Values are never
trusted for anything but display: verification always runs on the pinned tree.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Callable

FORMAT = "1"  # bump when lessonkit changes the HTML it stores
_MEMORY: dict[tuple[str, str], str] = {}
_MEMORY_LIMIT = 20_000


def digest(*parts: str | bytes) -> str:
    h = hashlib.sha256(FORMAT.encode())
    for part in parts:
        data = part.encode("utf-8", "surrogatepass") if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


class Store:
    def __init__(self, cache: Path | None, kind: str):
        self.kind = kind
        self.dir = cache / kind if cache is not None else None
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> str | None:
        value = _MEMORY.get((self.kind, key))
        if value is None and self.dir is not None:
            try:
                value = (self.dir / key).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return None
            self._remember(key, value)
        return value

    def put(self, key: str, value: str) -> None:
        self._remember(key, value)
        if self.dir is None:
            return
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".tmp-")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    fh.write(value)
                os.replace(tmp, self.dir / key)  # atomic: readers see all or nothing
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError:
            pass  # a read-only or full cache only costs time, never correctness

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
        _MEMORY[(self.kind, key)] = value
