"""Stage 1: find annotation blocks in Markdown text, with their lines.

A block is a fenced code block whose info string names a kind of the registry
(:mod:`lessonkit.kinds`); it starts
with ``Key: value`` header lines, then optionally a blank line and a body. The
header is validated here, before any file is opened.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from dataclasses import dataclass, field

from lessonkit.errors import LessonError, Problem

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
HEADER = re.compile(r"^(?P<key>[A-Za-z][A-Za-z0-9_-]*)[ \t]*:(?P<value>.*)$")
LINES = re.compile(r"^([0-9]+)-([0-9]+)$")


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
    inline: list = field(default_factory=list)  # InlineItem, in order
    problems_inline: list = field(default_factory=list)  # Problem: unknown inline kinds
    # Problem: raw HTML in prose that uses the engine's classes or badges (ENGINE_HTML). Reported for
    # the pages an author writes (verify, and the build for pages with a file), not for pages the
    # engine generates from its own templates.
    engine_html: list = field(default_factory=list)

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


def _closing(line: str, char: str, length: int) -> bool:
    s = line.strip()
    return len(s) >= length and set(s) == {char}


def kind_word(info: str) -> str:
    """The kind an info string names: ``real-source``, ``{.real-source}``, ``{ .real-source #id }``."""
    info = info.strip()
    if info.startswith("{"):
        inner = info[1:].split("}", 1)[0].split()
        return next((t[1:] for t in inner if t.startswith(".")), "")
    return info.split()[0].lstrip("{.").rstrip("}") if info else ""


OPENER = re.compile(r"^\s*(?:[-*+]|\d+[.)]|!!!|\?\?\?\+?|===)(?:\s|$)")  # list item, admonition, details, tab


def _width(line: str) -> int:
    stripped = line.lstrip(" \t")
    return len(line[: len(line) - len(stripped)].expandtabs(4))


def _container(lines: list[str], i: int, width: int) -> int:
    """The indentation at which the content of the block holding line ``i`` starts."""
    for j in range(i - 1, -1, -1):
        if lines[j].strip() and _width(lines[j]) < width:
            return _width(lines[j]) + (4 if OPENER.match(lines[j]) else 0)
    return 0


@dataclass(frozen=True)
class InlineItem:
    """An inline reference ``[[name: argument]]`` in prose, with its place in the text."""

    ref: object  # lessonkit.kinds.InlineRef
    index: int  # 0-based line index in the text given to parse
    col: int
    end_col: int


def parse_page(
    text: str, path: str = "<markdown>", line_offset: int = 0, kinds=None, badges: tuple[str, ...] = ()
) -> ParsedPage:
    """Find every annotation block of a page. Never raises for bad blocks: they become
    ``BrokenBlock`` items carrying one located :class:`LessonError` each. ``kinds`` is the
    registry to consult (:data:`lessonkit.kinds.KINDS` when not given).

    Fences are found where Markdown finds them: not inside an indented code block, not
    inside an HTML comment. An annotation block that an ordinary fence would swallow
    (its closing line would close the ordinary fence) is reported. Prose that uses the engine's
    classes (``lk-…``) or shows one of ``badges`` in raw HTML is listed in ``engine_html``."""
    if kinds is None:
        from lessonkit.kinds import KINDS as kinds
    lines = text.split("\n")
    page = ParsedPage(path)
    ordinal = 0
    i = 0
    prev_blank, in_code, in_comment = True, False, False
    while i < len(lines):
        line = lines[i]
        if in_comment:
            in_comment = "-->" not in line
            i += 1
            continue
        blank = not line.strip()
        if not blank:
            width = _width(line) if line[:1] in " \t" else 0
            in_code = width >= 4 and (prev_blank or in_code) and width - _container(lines, i, width) >= 4
        prev_blank = blank
        if blank or in_code:  # blank lines neither start nor end an indented code block
            i += 1
            continue
        m = FENCE.match(line) if ("`" in line or "~" in line) else None
        if not m or (m["fence"][0] == "`" and "`" in m["info"]):
            start = line.rfind("<!--")
            if start >= 0 and "-->" not in line[start:]:
                in_comment = True
            else:
                _inline(page, kinds, line, i, path, line_offset)
            if "lk" in line or "&" in line or (badges and "<" in line):
                page.engine_html += engine_html(line, path, line_offset + i + 1, badges)
            i += 1
            continue
        indent, fence, info = m["indent"], m["fence"], m["info"].strip()
        word = kind_word(info)
        end = next((j for j in range(i + 1, len(lines)) if _closing(lines[j], fence[0], len(fence))), None)
        lineno = line_offset + i + 1
        if word in kinds.fenced:
            stop = end if end is not None else len(lines) - 1
            if end is None:
                err = LessonError(
                    f"unclosed {word} block: no closing {fence}",
                    path=path,
                    line=lineno,
                    hint=f"add a line {fence} after the block",
                )
                page.items.append(BrokenBlock(err, i, stop, indent))
                break
            try:
                block = _build(kinds[word], lines, i, end, indent, path, line_offset, ordinal)
                page.items.append(block)
            except LessonError as exc:
                page.items.append(BrokenBlock(exc.at(path, lineno), i, end, indent))
            ordinal += 1
        elif kinds.near(word):
            err = kinds.unknown(word, path, lineno)
            page.items.append(BrokenBlock(err, i, end if end is not None else len(lines) - 1, indent))
        else:
            _swallowed(page, kinds, lines, i, end, fence, path, line_offset)
        if end is None:
            break  # an unclosed ordinary fence runs to the end of the page
        i = end + 1
        prev_blank = False
    return page


def _swallowed(page, kinds, lines, start, end, fence, path, offset) -> None:
    """Report an annotation block inside an ordinary fence whose closing line is the block's own:
    the author left the ordinary fence open (Markdown shows the block as part of its code)."""
    for j in range(start + 1, len(lines) if end is None else end):
        m = FENCE.match(lines[j])
        if m and m["fence"][0] == fence[0] and len(m["fence"]) >= len(fence) and kind_word(m["info"]) in kinds.fenced:
            opened = offset + start + 1
            err = LessonError(
                f"{kind_word(m['info'])} block inside the code fence opened on line {opened}, "
                "which is never closed before it",
                path=path,
                line=offset + j + 1,
                hint=f"close that fence with a line {fence} before this block",
            )
            page.items.append(BrokenBlock(err, start, len(lines) - 1 if end is None else end, m["indent"]))
            return


def _inline(page, kinds, line, index, path, offset) -> None:
    """Collect ``[[name: argument]]`` references of inline kinds on one prose line."""
    if "[[" not in line or not kinds.inline:
        return
    from lessonkit.kinds import INLINE, InlineRef

    spans = []
    for m in INLINE.finditer(line):
        spans.append((m.start(), m.end()))
        if line.count("`", 0, m.start()) % 2:  # inside a code span
            continue
        name = m["name"]
        if name not in kinds.inline:
            if kinds.near(name, inline=True):
                page.problems_inline.append(kinds.unknown(name, path, offset + index + 1, inline=True).problem)
            continue
        ref = InlineRef(name, m["arg"], path, offset + index + 1)
        page.inline.append(InlineItem(ref, index, m.start(), m.end()))
    for m in re.finditer(r"\[\[([a-z][a-z0-9-]*):", line):  # an inline kind's opening that never closes
        in_code = any(a <= m.start() < b for a, b in spans) or line.count("`", 0, m.start()) % 2
        if m[1] in kinds.inline and not in_code:
            page.problems_inline.append(
                Problem(
                    f"the inline `{m[1]}` reference is not closed",
                    path,
                    offset + index + 1,
                    'end it with ]] on the same line (close every "quote"; write \\" for a quote inside one)',
                )
            )


ENGINE_HTML = "engine-html"  # Problem.code of raw HTML that imitates the engine's output
# class="…lk-…" (any quoting) or an attr_list `{: .lk-… }` / `{: class="lk-…" }`
ENGINE_CLASS = re.compile(
    r"""\bclass\s*=\s*(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<uq>[^\s>"']+))|\{:?(?P<attr>[^{}]*)\}""", re.I
)
ATTR_CLASS = re.compile(r"""(?:^|\s)\.(?P<dot>[\w-]+)|\bclass\s*=\s*(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<uq>\S+))""")
# what a reader of an imitation would take it for: the block to write instead
INSTEAD = (
    (
        ("lk-real-source", "lk-badge-real", "lk-source", "lk-line", "lk-ln", "lk-cited", "lk-cites"),
        "a real-source block",
    ),
    (("lk-teaching", "lk-badge-teach", "lk-disclaimer"), "a teaching-simplification block"),
    (
        ("lk-experiment", "lk-badge-exp", "lk-output", "lk-output-wrap", "lk-output-label", "lk-provenance"),
        "an experiment block",
    ),
    (("lk-snapshot", "lk-badge-snap", "lk-generated", "lk-checked", "lk-snapshot-table"), "a snapshot block"),
    (("lk-figure", "lk-fig-source"), "a figure block"),
    (("lk-value",), "a [[value: …]] reference"),
)


def _code_spans(line: str) -> list[tuple[int, int]]:
    """Where Markdown code spans are on one line (a run of backticks up to the same run)."""
    out, pos = [], 0
    for m in re.finditer(r"`+", line):
        if m.start() < pos:
            continue
        close = re.compile(r"(?<!`)" + m.group(0) + r"(?!`)").search(line, m.end())
        if close:
            out.append((m.start(), close.end()))
            pos = close.end()
    return out


def engine_html(line: str, path: str, lineno: int, badges: tuple[str, ...] = ()) -> list[Problem]:
    """Problems for raw HTML (or an attr_list) on one prose line that uses the engine's classes or
    shows one of its badges outside a block: the site would show an imitation of an engine block
    that nothing checked. Code spans are text and are left alone."""
    from html import unescape

    spans = _code_spans(line) if "`" in line else []
    text = line
    for a, b in reversed(spans):
        text = text[:a] + " " * (b - a) + text[b:]
    plain = unescape(text) if "&" in text else text
    engine, attr_list = [], False
    for m in ENGINE_CLASS.finditer(plain):
        if m["attr"] is not None:
            classes = [c["dot"] or c["dq"] or c["sq"] or c["uq"] or "" for c in ATTR_CLASS.finditer(m["attr"])]
            classes = [w for c in classes for w in c.split()]
        else:
            classes = (m["dq"] if m["dq"] is not None else m["sq"] if m["sq"] is not None else m["uq"]).split()
        found = [c for c in classes if c.startswith("lk-")]
        attr_list = attr_list or (bool(found) and m["attr"] is not None and not engine)
        engine += found
    if engine:  # one line of the page, one problem: the first class it uses, the block it imitates
        instead = next((what for names, what in INSTEAD if any(c in names for c in engine)), "an annotation block")
        what = "an attribute list `{: … }`" if attr_list else "raw HTML"
        return [
            Problem(
                f"{what} uses the engine class {engine[0]}", path, lineno, f"write {instead} instead", code=ENGINE_HTML
            )
        ]
    out = []
    for badge in badges:
        if badge and re.search(r">\s*" + re.escape(badge) + r"\s*</?[A-Za-z]", plain):
            out.append(
                Problem(
                    f"raw HTML shows the engine's badge \"{badge}\" outside a block",
                    path,
                    lineno,
                    "write the annotation block instead; only the engine shows its badges",
                    code=ENGINE_HTML,
                )
            )
    return out


def _dedent(line: str, indent: str) -> str:
    if line.startswith(indent):
        return line[len(indent) :]
    return line.lstrip(" ")


def _build(spec, lines, start, end, indent, path, offset, ordinal) -> Block:
    content = [_dedent(l, indent) for l in lines[start + 1 : end]]
    problems: list[Problem] = []

    def bad(msg, n, hint=None):
        problems.append(Problem(msg, path, offset + n + 1, hint))

    for k, l in enumerate(content):
        if "\t" in l:
            bad("tab character in an annotation block", start + 1 + k, "indent with spaces, as the pinned source does")
    fields: dict[str, Field] = {}
    k = 0
    kind, allowed = spec.name, spec.fields
    while k < len(content) and content[k].strip():
        n = start + 1 + k
        m = HEADER.match(content[k])
        if not m:
            bad(
                f"expected a `Key: value` header line, got {content[k].strip()[:60]!r}",
                n,
                "headers come first; separate the body from them with one blank line",
            )
            k += 1
            continue
        key, value = m["key"], m["value"].strip()
        ctrl = next((c for c in value if unicodedata.category(c) in ("Cc", "Zl", "Zp") and c != "\t"), None)
        if ctrl is not None:
            bad(
                f"control or line-separator character U+{ord(ctrl):04X} in the value of `{key}`",
                n,
                "retype the line; header values are plain text",
            )
        elif key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.5) or [
                a for a in allowed if a.lower() == key.lower()
            ]
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
        problems += _validate(spec, block)
    if problems:
        raise LessonError.collect(problems)
    return block


def _validate(spec, b: Block) -> list[Problem]:
    """Header rules that need no file: required keys, then the kind's own rules."""
    out = [
        Problem(f"{b.kind} block without `{key}`", b.path, b.line, f"add a `{key}: …` header line")
        for key in spec.required
        if key not in b.fields
    ]
    return out + spec.validate(b)


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
