"""What a parsed page is made of: its annotation blocks (header fields, body, page session), the
blocks that could not be parsed, the inline references of its prose, and the rule every path a
block names in the pinned tree or the project follows."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lessonkit.errors import LessonError, Problem

LINES = re.compile(r"^([0-9]{1,9})-([0-9]{1,9})$")  # bounded: int() of thousands of digits raises


# `[[name: argument]]` in prose; `name` must be an inline kind of the registry.
# A `]` may appear inside a double-quoted string of the argument (`"outgrads[parent]"`),
# where `\"` is a quote.
INLINE = re.compile(r'\[\[(?P<name>[a-z][a-z0-9-]*):[ \t]*(?P<arg>(?:[^\]\n"]|"(?:[^"\\\n]|\\.)*")*?)[ \t]*\]\]')


@dataclass(frozen=True)
class InlineRef:
    """One ``[[name: argument]]`` found in prose."""

    kind: str
    argument: str
    path: str | None  # None: a reference in a snapshot cell, rendered with its table
    line: int | None  # 1-based line in the page file


@dataclass(frozen=True)
class Field:
    value: str
    line: int


@dataclass(frozen=True)
class SessionPart:
    """One block of a page session (a kind with ``sessions``, blocks with the same ``Session:``)."""

    line: int  # the block's opening fence
    body_line: int | None
    body: tuple[str, ...] | None
    fields: tuple[tuple[str, str, int], ...]  # (key, value, line) of its headers


@dataclass(frozen=True)
class Block:
    kind: str
    path: str
    line: int  # the opening fence, 1-based line in the page file
    fields: dict[str, Field]
    body: tuple[str, ...] | None
    body_line: int | None
    ordinal: int  # position among annotation blocks of the page
    start: int  # 0-based index of the opening fence in the text given to parse
    end: int  # 0-based index of the closing fence (inclusive)
    indent: str = ""
    # A block of a page session: every block of the session in page order (this one included), and
    # this block's place among them. () when the block is in no session.
    session: tuple[SessionPart, ...] = ()
    session_index: int = 0

    def get(self, key: str) -> str | None:
        f = self.fields.get(key)
        return f.value if f else None

    def line_of(self, key: str) -> int:
        f = self.fields.get(key)
        return f.line if f else self.line

    @property
    def lines_range(self) -> tuple[int, int] | None:
        v = self.get("Lines")
        if v is None:
            return None
        m = LINES.match(v)
        if m is None:  # the kinds that allow `Lines` check it first
            raise LessonError(
                f"`Lines: {v}` is not a range `a-b`",
                path=self.path,
                line=self.line_of("Lines"),
                hint="e.g. `Lines: 25-32`",
            )
        return int(m[1]), int(m[2])


@dataclass(frozen=True)
class BrokenBlock:
    """A block that could not be parsed; it is replaced by an error box."""

    error: LessonError
    start: int
    end: int
    indent: str = ""
    ordinal: int | None = None  # the place among the page's blocks it would have had (a known kind)


@dataclass
class ParsedPage:
    path: str
    items: list = field(default_factory=list)  # Block | BrokenBlock, in order
    inline: list = field(default_factory=list)  # InlineItem, in order
    problems_inline: list = field(default_factory=list)  # Problem: unknown inline kinds
    ids: list = field(default_factory=list)  # (id, 1-based line): the ids the author wrote, in order
    # Problem: raw HTML in prose that uses the engine's classes or badges (ENGINE_HTML). Reported for
    # the pages an author writes (verify, and the build for pages with a file), not for pages the
    # engine generates from its own templates.
    engine_html: list = field(default_factory=list)
    # Problem: those of engine_html that are active content in prose (active_html: raw HTML that
    # runs, embeds or restyles), apart: what the project's templates render is checked for these
    active: list = field(default_factory=list)

    @property
    def blocks(self) -> list[Block]:
        return [b for b in self.items if isinstance(b, Block)]

    @property
    def problems(self) -> list[Problem]:
        out = []
        for b in self.items:
            if isinstance(b, BrokenBlock):
                out += b.error.problems
        return out + self.problems_inline


@dataclass(frozen=True)
class InlineItem:
    """An inline reference ``[[name: argument]]`` in prose, with its place in the text."""

    ref: InlineRef
    index: int  # 0-based line index in the text given to parse
    col: int
    end_col: int


def check_rel_path(value: str) -> str:
    """A repository-relative POSIX path, or a LessonError saying why not."""
    v = value.strip()
    if "://" in v or v.startswith(("http:", "https:", "file:")):
        raise LessonError(f"`{v}` is a URL, not a path in the tree", hint="write a relative path such as pkg/module.py")
    if "\\" in v:
        raise LessonError(f"`{v}` contains a backslash", hint="use forward slashes: pkg/module.py")
    if v.startswith("/") or re.match(r"^[A-Za-z]:", v):
        raise LessonError(f"`{v}` is an absolute path", hint="write the path relative to the tree, e.g. pkg/module.py")
    parts = v.split("/")
    if ".." in parts:
        raise LessonError(f"`{v}` has a `..` segment", hint="paths may not leave the tree")
    if any(p in ("", ".") for p in parts):
        raise LessonError(f"`{v}` has an empty or `.` segment", hint="write it as a plain relative path")
    return v
