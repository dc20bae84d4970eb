"""What repin's classifiers share: one row of the report (:class:`Item`) and the diff with real
line numbers. Standing below :mod:`lessonkit.repin.classify`, :mod:`~lessonkit.repin.prose` and
:mod:`~lessonkit.repin.runs`, so that none of them imports another for these."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from lessonkit.pipeline.blocks import Block

HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")

SOURCE_OK = ("unchanged", "moved")
ORDER = {"error": 0, "missing": 1, "changed": 2, "fails": 3, "differs": 4, "moved": 5, "unchanged": 6}


@dataclass
class Item:
    page: str
    line: int
    kind: str  # "real-source", "based-on", "experiment" or "page"
    label: str  # FILE::SYMBOL, or the experiment's script
    status: str  # unchanged | moved | changed | missing | error (blocks); unchanged | differs | fails | error
    detail: str = ""
    old: tuple[int, int] | None = None
    new: tuple[int, int] | None = None
    diff: list[str] = field(default_factory=list)
    candidates: list[str] = field(default_factory=list)
    block: Block | None = None
    emphasize: str | None = None  # a moved excerpt's `Emphasize:` at the target (what --apply writes)

    @property
    def attention(self) -> bool:
        return self.status not in SOURCE_OK

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def _udiff(
    a: tuple[str, ...] | list[str],
    b: tuple[str, ...] | list[str],
    a_start: int,
    b_start: int,
    a_name: str,
    b_name: str,
    context: int = 3,
) -> list[str]:
    """A unified diff whose hunk headers carry the real line numbers of both files."""
    out = []
    for line in difflib.unified_diff(list(a), list(b), a_name, b_name, lineterm="", n=context):
        m = HUNK.match(line)
        if m:
            line = (
                f"@@ -{int(m[1]) + a_start - 1}{m[2] or ''} +{int(m[3]) + b_start - 1}{m[4] or ''} @@" + line[m.end() :]
            )
        out.append(line)
    return out
