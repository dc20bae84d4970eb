"""Stage 1: find annotation blocks in Markdown text, with their lines.

A block is a fenced code block whose info string is one of ``KINDS``; it starts
with ``Key: value`` header lines, then optionally a blank line and a body. The
header is validated here, before any file is opened.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from dataclasses import dataclass, field

from .errors import LessonError, Problem

KINDS = ("real-source", "teaching-simplification", "experiment")

ALLOWED = {
    "real-source": ("File", "Symbol", "Commit", "Lines"),
    "teaching-simplification": ("Title", "Based-on", "File", "Symbol"),
    "experiment": ("File", "Purpose", "Symbol", "Timeout", "Memory"),
}
REQUIRED = {
    "real-source": ("File", "Commit"),
    "teaching-simplification": (),
    "experiment": ("Purpose",),
}

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
HEADER = re.compile(r"^(?P<key>[A-Za-z][A-Za-z0-9_-]*)[ \t]*:(?P<value>.*)$")
LINES = re.compile(r"^([0-9]+)-([0-9]+)$")
COMMIT = re.compile(r"^[0-9a-fA-F]{7,40}$")


@dataclass(frozen=True)
class Field:
    value: str
    line: int


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
        a, b = LINES.match(v).groups()
        return int(a), int(b)


@dataclass(frozen=True)
class BrokenBlock:
    """A block that could not be parsed; it is replaced by an error box."""

    error: LessonError
    start: int
    end: int
    indent: str = ""


@dataclass
class ParsedPage:
    path: str
    items: list = field(default_factory=list)  # Block | BrokenBlock, in order

    @property
    def blocks(self) -> list[Block]:
        return [b for b in self.items if isinstance(b, Block)]

    @property
    def problems(self) -> list[Problem]:
        out = []
        for b in self.items:
            if isinstance(b, BrokenBlock):
                out += b.error.problems
        return out


def near_kind(word: str) -> str | None:
    """The known kind that ``word`` was probably meant to be, if any."""
    if word in KINDS or not word:
        return None
    norm = re.sub(r"[\s_]+", "-", word.strip().lower())
    if norm in KINDS:
        return norm
    close = difflib.get_close_matches(norm, KINDS, n=1, cutoff=0.8)
    return close[0] if close else None


def _closing(line: str, char: str, length: int) -> bool:
    s = line.strip()
    return len(s) >= length and set(s) == {char}


def parse_page(text: str, path: str = "<markdown>", line_offset: int = 0) -> ParsedPage:
    """Find every annotation block of a page. Never raises for bad blocks: they become
    ``BrokenBlock`` items carrying one located :class:`LessonError` each."""
    lines = text.split("\n")
    page = ParsedPage(path)
    ordinal = 0
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m or (m["fence"][0] == "`" and "`" in m["info"]):
            i += 1
            continue
        indent, fence, info = m["indent"], m["fence"], m["info"].strip()
        word = info.split()[0].lstrip("{.") if info else ""
        word = word.rstrip("}")
        end = next((j for j in range(i + 1, len(lines)) if _closing(lines[j], fence[0], len(fence))), None)
        lineno = line_offset + i + 1
        if word in KINDS:
            stop = end if end is not None else len(lines) - 1
            if end is None:
                err = LessonError(f"unclosed {word} block: no closing {fence}", path=path, line=lineno,
                                  hint=f"add a line {fence} after the block")
                page.items.append(BrokenBlock(err, i, stop, indent))
                break
            try:
                block = _build(word, lines, i, end, indent, path, line_offset, ordinal)
                page.items.append(block)
            except LessonError as exc:
                page.items.append(BrokenBlock(exc.at(path, lineno), i, end, indent))
            ordinal += 1
        else:
            guess = near_kind(word)
            if guess:
                err = LessonError(f"unknown block kind `{word}`", path=path, line=lineno,
                                  hint=f"did you mean `{guess}`?")
                page.items.append(BrokenBlock(err, i, end if end is not None else len(lines) - 1, indent))
        if end is None:
            break  # an unclosed ordinary fence runs to the end of the page
        i = end + 1
    return page


def _dedent(line: str, indent: str) -> str:
    if line.startswith(indent):
        return line[len(indent):]
    return line.lstrip(" ")


def _build(kind, lines, start, end, indent, path, offset, ordinal) -> Block:
    content = [_dedent(l, indent) for l in lines[start + 1:end]]
    problems: list[Problem] = []

    def bad(msg, n, hint=None):
        problems.append(Problem(msg, path, offset + n + 1, hint))

    for k, l in enumerate(content):
        if "\t" in l:
            bad("tab character in an annotation block", start + 1 + k,
                "indent with spaces, as the pinned source does")
    fields: dict[str, Field] = {}
    k = 0
    allowed = ALLOWED[kind]
    while k < len(content) and content[k].strip():
        n = start + 1 + k
        m = HEADER.match(content[k])
        if not m:
            bad(f"expected a `Key: value` header line, got {content[k].strip()[:60]!r}", n,
                "headers come first; separate the body from them with one blank line")
            k += 1
            continue
        key, value = m["key"], m["value"].strip()
        ctrl = next((c for c in value if unicodedata.category(c) in ("Cc", "Zl", "Zp") and c != "\t"), None)
        if ctrl is not None:
            bad(f"control or line-separator character U+{ord(ctrl):04X} in the value of `{key}`", n,
                "retype the line; header values are plain text")
        elif key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.5) or \
                [a for a in allowed if a.lower() == key.lower()]
            hint = f"did you mean `{close[0]}`?" if close else f"allowed keys for {kind}: {', '.join(allowed)}"
            bad(f"unknown key `{key}` in a {kind} block", n, hint)
        elif key in fields:
            bad(f"duplicate key `{key}` (first given on line {fields[key].line})", n, "keep only one")
        elif not value:
            bad(f"empty value for `{key}`", n, f"write `{key}: …` with a value, or remove the line")
        else:
            fields[key] = Field(value, offset + n + 1)
        k += 1
    while k < len(content) and not content[k].strip():
        k += 1
    body_lines = content[k:]
    while body_lines and not body_lines[-1].strip():
        body_lines.pop()
    body = tuple(body_lines) if body_lines else None
    body_line = offset + start + 1 + k + 1 if body else None
    block = Block(kind, path, offset + start + 1, fields, body, body_line, ordinal, start, end, indent)
    if not problems:
        problems += _validate(block)
    if problems:
        raise LessonError.collect(problems)
    return block


def _validate(b: Block) -> list[Problem]:
    """Header rules that need no file: required keys, formats, conflicts."""
    out = []

    def bad(msg, key=None, hint=None):
        out.append(Problem(msg, b.path, b.line_of(key) if key else b.line, hint))

    for key in REQUIRED[b.kind]:
        if key not in b.fields:
            bad(f"{b.kind} block without `{key}`", None, f"add a `{key}: …` header line")
    if b.kind == "real-source":
        c = b.get("Commit")
        if c and not COMMIT.match(c):
            bad(f"`Commit: {c}` is not a commit id", "Commit", "use the pinned commit or a prefix of ≥ 7 hex digits")
        if "Symbol" not in b.fields and b.body is None:
            bad("real-source block with neither `Symbol` nor a body", None,
                "name a Symbol, or quote the lines as a body")
        v = b.get("Lines")
        if v:
            m = LINES.match(v)
            if not m or int(m[1]) < 1 or int(m[1]) > int(m[2]):
                bad(f"`Lines: {v}` is not a range `a-b` with 1 ≤ a ≤ b", "Lines",
                    "for example `Lines: 25-32`, or remove the line (it is only a locator)")
    elif b.kind == "teaching-simplification":
        if "File" not in b.fields and b.body is None:
            bad("empty teaching-simplification block", None, "write the teaching code as the body")
        if "Symbol" in b.fields and "File" not in b.fields:
            bad("`Symbol` needs `File` in a teaching-simplification block", "Symbol",
                "add `File: mini-autograd/….py`, or use `Based-on: FILE::SYMBOL` for the pinned source")
        if "File" in b.fields and "Symbol" not in b.fields and b.body is None:
            bad("teaching-simplification with `File` but neither `Symbol` nor a body", "File",
                "name the Symbol to show, or quote the lines as a body")
        v = b.get("Based-on")
        if v and v.count("::") != 1:
            bad(f"`Based-on: {v}` is not `FILE::SYMBOL`", "Based-on",
                "for example `Based-on: autograd/core.py::backward_pass`")
    elif b.kind == "experiment":
        if "File" in b.fields and b.body is not None:
            bad("experiment block with both `File` and a body", None, "give the script as a File or inline, not both")
        if "File" not in b.fields and b.body is None:
            bad("experiment block with neither `File` nor a body", None,
                "add `File: experiments/….py`, or write the script as the body")
        if "Symbol" in b.fields and "File" not in b.fields:
            bad("`Symbol` needs `File` in an experiment block", "Symbol",
                "add `File: experiments/….py`, or remove `Symbol` from the inline script")
        t = b.get("Timeout")
        if t and not (t.isascii() and t.isdigit() and 1 <= int(t) <= 600):
            bad(f"`Timeout: {t}` is not a whole number of seconds from 1 to 600", "Timeout",
                "for example `Timeout: 120`; without it the limit is 60 s")
    return out


def check_rel_path(value: str) -> str:
    """A repository-relative POSIX path, or a LessonError saying why not."""
    v = value.strip()
    if "://" in v or v.startswith(("http:", "https:", "file:")):
        raise LessonError(f"`{v}` is a URL, not a path in the tree", hint="write a relative path such as autograd/core.py")
    if "\\" in v:
        raise LessonError(f"`{v}` contains a backslash", hint="use forward slashes: autograd/core.py")
    if v.startswith("/") or re.match(r"^[A-Za-z]:", v):
        raise LessonError(f"`{v}` is an absolute path", hint="write the path relative to the tree, e.g. autograd/core.py")
    parts = v.split("/")
    if ".." in parts:
        raise LessonError(f"`{v}` has a `..` segment", hint="paths may not leave the tree")
    if any(p in ("", ".") for p in parts):
        raise LessonError(f"`{v}` has an empty or `.` segment", hint="write it as a plain relative path")
    return v
