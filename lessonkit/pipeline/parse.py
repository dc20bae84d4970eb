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
from dataclasses import dataclass, field, replace

from lessonkit.errors import LessonError, Problem
from lessonkit.util import markup

# A fence line: container indentation, maybe inside blockquotes (`> `), then ``` or ~~~ and the info string.
FENCE = re.compile(r"^(?P<indent>(?:[ \t]*>[ ]?)*[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
QUOTE = re.compile(r"^(?:[ \t]*>[ ]?)*")  # the blockquote markers a line starts with
# A fence of a known kind that is not where Markdown opens a block: after a list marker, a footnote
# label or a definition's colon on the same line, in a table row, after text (group `lead`).
MISPLACED = re.compile(r"(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>\{?[ \t]*\.?[A-Za-z][\w-]*[^`]*)$")
LEAD = re.compile(r"^[ \t]*(?:[-*+]|[0-9]{1,9}[.)]|\[\^[^\]\s]+\]:|:)[ \t]+$")
# Explicit ids an author writes: an attribute list `{#id}` / `{: #id .cls}` ending a line, an HTML `id="…"`.
ATTR_ID = re.compile(r"\{:?[ \t]*((?:[^{}]*?\s)?#[^\s{}]+[^{}]*)\}[ \t]*$")
HTML_ID = re.compile(r"<[A-Za-z][^<>]*?\sid[ \t]*=[ \t]*(?:\"([^\"]*)\"|'([^']*)')")
HEADER = re.compile(r"^(?P<key>[A-Za-z][A-Za-z0-9_-]*)[ \t]*:(?P<value>.*)$")
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


# Lines whose content continues, 4 columns further in, on the lines under them: a list item, an
# admonition, details, a tab, a footnote (`[^1]:`) and a definition (`:   `).
OPENER = re.compile(r"^\s*(?:[-*+]|\d+[.)]|!!!|\?\?\?\+?|===|\[\^[^\]\s]+\]:|:)(?:\s|$)")


def _width(line: str) -> int:
    stripped = line.lstrip(" \t")
    return len(line[: len(line) - len(stripped)].expandtabs(4))


def _containers(lines: list[str]) -> list[int]:
    """For each line, the indentation at which the content of the block holding it starts: from
    the nearest earlier non-blank line that is less indented (the nearest smaller width, found
    with one stack in one pass, not by walking back from every line)."""
    stack: list[tuple[int, int]]
    out, stack = [0] * len(lines), []  # stack: (width, its container) of lines with rising widths
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        w = _width(line)
        while stack and stack[-1][0] >= w:
            stack.pop()
        out[i] = stack[-1][1] if stack else 0
        stack.append((w, w + (4 if OPENER.match(line) else 0)))
    return out


def _code_spans(line: str) -> list[tuple[int, int]]:
    """The code spans of one line, ``(start, end)``: a run of backticks up to the next run of
    the same length (a run without such a partner is literal backticks)."""
    runs = [(m.start(), m.end()) for m in re.finditer(r"`+", line)]
    out, k = [], 0
    while k < len(runs):
        a, b = runs[k]
        partner = next((j for j in range(k + 1, len(runs)) if runs[j][1] - runs[j][0] == b - a), None)
        if partner is None:
            k += 1
            continue
        out.append((a, runs[partner][1]))
        k = partner + 1
    return out


def _in_spans(spans: list[tuple[int, int]], pos: int) -> bool:
    return any(a <= pos < b for a, b in spans)


def _comment_opens(line: str, spans: list[tuple[int, int]]) -> bool:
    """Does an HTML comment start on this line and stay open after it? ``<!--`` in a code span is
    text, as Markdown shows it, not a comment."""
    starts = [m.start() for m in re.finditer("<!--", line) if not _in_spans(spans, m.start())]
    return bool(starts) and "-->" not in line[starts[-1] + 4 :]


def _unquote(line: str, depth: int) -> str | None:
    """``line`` without its first ``depth`` blockquote markers; "" for a blank line; None when the
    line is not inside that many blockquotes (Markdown ends the blockquote, and a fence in it, there)."""
    if depth == 0:
        return line
    if not line.strip():
        return ""
    m = re.match(r"^(?:[ \t]*>[ ]?){%d}" % depth, line)
    return line[m.end() :] if m else None


def blank_line(indent: str) -> str:
    """The empty line of a block's container: its blockquote markers (``> `` → ``>``), else ""."""
    quote = _quote(indent)
    return quote.rstrip() if ">" in quote else ""


def _quote(line: str) -> str:
    """The blockquote markers ``line`` starts with ("" when none: QUOTE matches every line)."""
    m = QUOTE.match(line)
    return m[0] if m else ""


@dataclass(frozen=True)
class InlineItem:
    """An inline reference ``[[name: argument]]`` in prose, with its place in the text."""

    ref: InlineRef
    index: int  # 0-based line index in the text given to parse
    col: int
    end_col: int


def parse_page(
    text: str, path: str, line_offset: int = 0, *, kinds, badges: tuple[str, ...] = (), html_checks: bool = True
) -> ParsedPage:
    """Find every annotation block of a page. Never raises for bad blocks: they become
    ``BrokenBlock`` items carrying one located :class:`LessonError` each. ``kinds`` is the
    registry to consult (a :class:`lessonkit.kinds.Registry`: the project's, or the built-in
    :data:`lessonkit.kinds.KINDS`).

    Fences are found where Markdown finds them: not inside an indented code block, not
    inside an HTML comment. An annotation block that an ordinary fence would swallow
    (its closing line would close the ordinary fence) is reported. Prose that uses the engine's
    classes (``lk-…``) or shows one of ``badges`` in raw HTML is listed in ``engine_html``."""
    lines = text.split("\n")
    containers = _containers(lines)
    page = ParsedPage(path)
    ordinal = 0
    i = 0
    prev_blank, in_code, in_comment = True, False, False
    prose: list[tuple[int, str]] = []  # (index, text) of the lines Markdown shows as prose: for active_html
    while i < len(lines):
        line = lines[i]
        if in_comment:  # Markdown passes the comment through: a browser may end it sooner (`<!-->`)
            in_comment = "-->" not in line
            prose.append((i, line))
            i += 1
            continue
        blank = not line.strip()
        if not blank:
            width = _width(line) if line[:1] in " \t" else 0
            in_code = width >= 4 and (prev_blank or in_code) and width - containers[i] >= 4
        prev_blank = blank
        if blank or in_code:  # blank lines neither start nor end an indented code block
            i += 1
            continue
        m = FENCE.match(line) if ("`" in line or "~" in line) else None
        if not m or (m["fence"][0] == "`" and "`" in m["info"]):
            spans = _code_spans(line) if "`" in line else []
            if _comment_opens(line, spans):
                in_comment = True
                prose.append((i, _blank_code(line, spans)))  # the HTML check reads the comment as a browser does
            else:
                _inline(page, kinds, line, i, path, line_offset)
                _ids(page, line, spans, line_offset + i + 1)
                if "lk" in line or "&" in line or (badges and "<" in line):
                    page.engine_html += engine_html(line, path, line_offset + i + 1, badges)
                if badges or "!!!" in line or "???" in line:
                    page.engine_html += badge_labels(line, path, line_offset + i + 1, badges)
                prose.append((i, _blank_code(line, spans)))
                skip = _misplaced(page, kinds, lines, i, spans, path, line_offset)
                if skip is not None:
                    i = skip
            i += 1
            continue
        indent, fence, info = m["indent"], m["fence"], m["info"].strip()
        depth = _quote(indent).count(">")
        word = kind_word(info)
        end, lazy = _end(lines, i, fence, depth)
        lineno = line_offset + i + 1
        if word in kinds.fenced:
            if lazy is not None:
                err = LessonError(
                    f"this line of the {word} block opened on line {lineno} does not start with `>`: "
                    "Markdown ends the blockquote, and the block, here",
                    path=path,
                    line=line_offset + lazy + 1,
                    hint="start every line of a block in a blockquote with `>`, as its first line",
                )
                page.items.append(BrokenBlock(err, i, lazy - 1, indent, ordinal))
                ordinal += 1
                i = lazy
                prev_blank = False
                continue
            if end is None:
                err = LessonError(
                    f"unclosed {word} block: no closing {fence}",
                    path=path,
                    line=lineno,
                    hint=f"add a line {fence} after the block",
                )
                page.items.append(BrokenBlock(err, i, len(lines) - 1, indent, ordinal))
                break
            inner = _opens_inside(kinds, lines, i, end, fence, depth)
            if inner is not None:  # this block's fence was left open: the next block's closing line closes it
                err = LessonError(
                    f"unclosed {word} block: the {inner[1]} block on line {line_offset + inner[0] + 1} opens "
                    f"inside it, and that block's closing {fence} closes this one",
                    path=path,
                    line=lineno,
                    hint=f"close this block with a line {fence} before line {line_offset + inner[0] + 1}",
                )
                page.items.append(BrokenBlock(err, i, end, indent, ordinal))
                ordinal += 1
                i = end + 1
                prev_blank = False
                continue
            try:
                block = _build(kinds[word], lines, i, end, indent, path, line_offset, ordinal)
                page.items.append(block)
                page.engine_html += markup_values(kinds[word], block, badges, html_checks)
            except LessonError as exc:
                page.items.append(BrokenBlock(exc.at(path, lineno), i, end, indent, ordinal))
            ordinal += 1
        elif badges and any(b and b in info for b in badges):  # an ordinary fence titled like a block
            page.engine_html += fence_badges(info, path, lineno, badges)
            if lazy is None:
                _swallowed(page, kinds, lines, i, end, fence, path, line_offset)
        elif kinds.near(word):
            err = kinds.unknown(word, path, lineno)
            page.items.append(BrokenBlock(err, i, end if end is not None else len(lines) - 1, indent))
        elif lazy is None:
            _swallowed(page, kinds, lines, i, end, fence, path, line_offset)
        if lazy is not None:  # an ordinary fence in a blockquote that ends before the fence closes
            i = lazy
            prev_blank = False
            continue
        if end is None:
            break  # an unclosed ordinary fence runs to the end of the page
        i = end + 1
        prev_blank = False
    if html_checks:  # off only in the prefill, which lists experiments before the HTML parser is installed
        page.active = active_html(prose, path, line_offset)
        page.engine_html += page.active
    _link_sessions(page, kinds)
    return page


def _link_sessions(page: ParsedPage, kinds) -> None:
    """Give every block of a page session (same kind, which has ``sessions``; same ``Session:``)
    the session's blocks in page order. A block the kind's ``session_problems`` rejects becomes a
    broken block; the session goes on without it."""
    groups: dict[tuple[str, str], list[int]] = {}
    for n, item in enumerate(page.items):
        if isinstance(item, Block) and (name := item.get("Session")) and getattr(kinds[item.kind], "sessions", False):
            groups.setdefault((item.kind, name), []).append(n)
    for (kind, _), where in groups.items():
        bad: dict[int, list[Problem]] = {}
        for block, problem in kinds[kind].session_problems([page.items[n] for n in where]):
            bad.setdefault(id(block), []).append(problem)
        good = []
        for n in where:
            b = page.items[n]
            if id(b) in bad:
                page.items[n] = BrokenBlock(LessonError.collect(bad[id(b)]), b.start, b.end, b.indent, b.ordinal)
            else:
                good.append(n)
        parts = tuple(
            SessionPart(
                page.items[n].line,
                page.items[n].body_line,
                page.items[n].body,
                tuple((k, f.value, f.line) for k, f in page.items[n].fields.items()),
            )
            for n in good
        )
        for k, n in enumerate(good):
            page.items[n] = replace(page.items[n], session=parts, session_index=k)


def _end(lines: list[str], i: int, fence: str, depth: int) -> tuple[int | None, int | None]:
    """(closing line, None), or (None, the first line outside the fence's blockquotes), or (None, None)
    for a fence that is never closed."""
    for j in range(i + 1, len(lines)):
        content = _unquote(lines[j], depth)
        if content is None:
            return None, j
        if _closing(content, fence[0], len(fence)):
            return j, None
    return None, None


def _misplaced(page, kinds, lines, i, spans, path, offset) -> int | None:
    """Report a fence of a known kind that Markdown does not open a block with: after a list
    marker, a footnote label or a definition's colon on the same line, in a table row, after
    text. Returns the line of its closing fence (the lines up to it are the block's, which
    Markdown shows as inline code or text), or None when there is no such fence."""
    line = lines[i]
    m = MISPLACED.search(line)
    if m is None or _in_spans(spans, m.start()):
        return None
    word = kind_word(m["info"])
    if word not in kinds.fenced:
        return None
    quote = _quote(line)
    lead = line[len(quote) : m.start()]
    if LEAD.match(lead):
        what, hint = (
            f"after `{lead.strip()}` on the same line",
            "put the fence on a line of its own under it, indented by 4 spaces",
        )
    elif "|" in lead:
        what, hint = "in a table row", "a table cell cannot hold a block: put the block before or after the table"
    else:
        what, hint = "after text on the same line", "start the fence on a line of its own"
    fence, depth, end = m["fence"], quote.count(">"), None
    for j in range(i + 1, len(lines)):
        content = _unquote(lines[j], depth)
        if content is None or (content.strip() and FENCE.match(content) and not _closing(content, fence[0], 3)):
            break  # the blockquote ends, or another block starts: Markdown's code span cannot reach further
        if _closing(content, fence[0], len(fence)):
            end = j
            break
    err = LessonError(
        f"{word} block {what}: Markdown shows it as inline code, not as a block",
        path=path,
        line=offset + i + 1,
        hint=hint,
    )
    page.items.append(BrokenBlock(err, i, i if end is None else end, quote))
    return end


def _ids(page, line: str, spans, lineno: int) -> None:
    """The explicit ids on one prose line: ``{#id}`` attribute lists and HTML ``id="…"``."""
    if "#" not in line and "id" not in line:
        return
    m = ATTR_ID.search(line)
    if m and not _in_spans(spans, m.start()):
        page.ids += [(t[1:], lineno) for t in m[1].split() if t.startswith("#") and len(t) > 1]
    for h in HTML_ID.finditer(line) if "<" in line else ():
        if not _in_spans(spans, h.start()):
            page.ids.append((h[1] if h[1] is not None else h[2], lineno))


def _opens_inside(kinds, lines, start, end, fence, depth) -> tuple[int, str] | None:
    """(index, kind) of the first fence of a known kind inside the annotation block ``start``…``end``
    that its closing line could close too: the block's own fence was left open before it."""
    for j in range(start + 1, end):
        content = _unquote(lines[j], depth)
        m = FENCE.match(content) if content is not None else None
        if m and m["fence"][0] == fence[0] and len(m["fence"]) >= len(fence) and kind_word(m["info"]) in kinds.fenced:
            return j, kind_word(m["info"])
    return None


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
    spans = []
    code = _code_spans(line) if "`" in line else []  # ``a ` b`` is one span: backtick runs pair by length
    for m in INLINE.finditer(line):
        spans.append((m.start(), m.end()))
        if _in_spans(code, m.start()):  # inside a code span
            continue
        name = m["name"]
        if name not in kinds.inline:
            if kinds.near(name, inline=True):
                page.problems_inline.append(kinds.unknown(name, path, offset + index + 1, inline=True).problem)
            continue
        ref = InlineRef(name, m["arg"], path, offset + index + 1)
        page.inline.append(InlineItem(ref, index, m.start(), m.end()))
    for m in re.finditer(r"\[\[([a-z][a-z0-9-]*):", line):  # an inline kind's opening that never closes
        in_code = _in_spans(spans, m.start()) or _in_spans(code, m.start())
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
        ("lk-real-source", "lk-badge-real", "lk-source", "lk-line", "lk-ln", "lk-cited", "lk-cite-mark"),
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
    engine: list[str]
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
        if attr_list:
            message = f"an attribute list `{{: … }}` uses the engine class {engine[0]}"
        else:
            message = f"raw HTML uses the engine class {engine[0]}"
        return [Problem(message, path, lineno, f"write {instead} instead", code=ENGINE_HTML)]
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


# -- active content: raw HTML or Markdown that runs code, embeds or restyles (refused in a page an
# author writes, with code ENGINE_HTML like an imitation: the build and verify report both)

# The elements a page may not contain, and why.
ACTIVE_ELEMENTS = {
    "script": "runs code in the reader's browser",
    "style": "restyles the page (it can hide text or draw other text over a block)",
    "link": "loads a stylesheet or another resource into the page",
    "base": "changes where every link and resource of the page points",
    "meta": "can reload or redirect the page",
    **dict.fromkeys(
        ("iframe", "frame", "frameset", "object", "embed", "applet", "portal"),
        "embeds another document in the page (nothing checks what it shows)",
    ),
}
# URL schemes that run code (javascript, vbscript) or carry a whole document or image (data).
RUNS = ("javascript", "vbscript")
URL_ATTRS = frozenset(
    "href src srcset action formaction data poster background xlink:href codebase lowsrc dynsrc ping manifest".split()
)
ACTIVE_HINT = "remove it: a page shows code, output and figures through annotation blocks, which the build checks"
# A Markdown link or image destination `](url` and a reference definition `[id]: url`.
_MD_URL = re.compile(r"\]\([ \t]*<?(?P<inline>[^\s)>]+)|^[ \t]*(?:>[ \t]?)*[ \t]*\[[^\]]+\]:[ \t]*<?(?P<ref>\S+)")
# An attribute list `{: … }` (attr_list reads `{ … }` too) and a `key=value` in it.
_ATTR_LIST = re.compile(r"\{:?([^{}\n]*)\}")
_NAME = re.compile(r"[a-z_:][-a-z0-9_:.]*")  # an attribute name attr_list writes as it is
_LIST_PAIR = re.compile(r"""(?:^|\s)([^\s=#.{}'"]+)[ \t]*=[ \t]*(?:"([^"]*)"|'([^']*)'|(\S+))""")


def _blank_code(line: str, spans: list[tuple[int, int]] | None = None) -> str:
    """``line`` with its code spans (text, as Markdown shows them) blanked out."""
    for a, b in reversed(spans if spans is not None else _code_spans(line) if "`" in line else []):
        line = line[:a] + " " * (b - a) + line[b:]
    return line


def _blank_paragraph_code(rows: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """``rows`` (consecutive indices are one paragraph) with the code spans that go on from one
    line to the next blanked out (the line breaks kept)."""
    out, k = [], 0
    while k < len(rows):
        j = k + 1
        while j < len(rows) and rows[j][0] == rows[j - 1][0] + 1:
            j += 1
        text = "\n".join(line for _, line in rows[k:j])
        if "`" in text:
            text = _blank_spans(text)
        out += list(zip([i for i, _ in rows[k:j]], text.split("\n")))
        k = j
    return out


def _blank_spans(text: str) -> str:
    for a, b in reversed(_code_spans(text)):
        text = text[:a] + re.sub(r"[^\n]", " ", text[a:b]) + text[b:]
    return text


# The elements raw HTML in a lesson may make: text-level and structural HTML (the tree builder's own
# html, head and body included), and names no standard gives (`grad_of_<lambda>`: an unknown element,
# inert). Every other element of HTML, SVG and MathML (a form, a frame, media, SVG or MathML written by
# hand, an element that changes how the rest of the page is parsed) is refused: the engine draws
# figures, formulas and diagrams itself.
LESSON_ELEMENTS = frozenset(
    "html head body a abbr address article aside b bdi bdo blockquote br caption cite code col colgroup dd del "
    "details dfn div dl dt em figcaption figure footer h1 h2 h3 h4 h5 h6 header hr i img ins kbd li mark ol p "
    "pre q rp rt ruby s samp section small span strong sub summary sup table tbody td tfoot th thead time tr u "
    "ul var wbr".split()
)
STANDARD_ELEMENTS = LESSON_ELEMENTS | frozenset(
    "area audio base button canvas data datalist dialog embed fieldset form hgroup iframe input label legend link "
    "main map menu meta meter nav noscript object optgroup option output picture portal progress script search "
    "select slot source style template textarea title track video acronym applet basefont bgsound big blink "
    "center dir font frame frameset image isindex keygen listing marquee menuitem multicol nextid nobr noembed "
    "noframes param plaintext rb rtc spacer strike tt xmp svg math".split()
)
# The attributes they may carry: on any of them, and on some.
GLOBAL_ATTRIBUTES = frozenset("id class title lang dir role markdown".split())
LESSON_ATTRIBUTES = {
    "a": frozenset("href name rel target hreflang".split()),
    "img": frozenset("src alt width height loading decoding".split()),
    "ol": frozenset("start reversed type".split()),
    "li": frozenset({"value"}),
    "td": frozenset("colspan rowspan align".split()),
    "th": frozenset("colspan rowspan align scope abbr".split()),
    "col": frozenset({"span"}),
    "colgroup": frozenset({"span"}),
    "details": frozenset({"open"}),
    "time": frozenset({"datetime"}),
    "blockquote": frozenset({"cite"}),
    "q": frozenset({"cite"}),
    "del": frozenset("cite datetime".split()),
    "ins": frozenset("cite datetime".split()),
}


# What an attribute list (`{: … }`, whose element Markdown chooses) may set: what raw HTML may carry on
# some element of a lesson.
LIST_ATTRIBUTES = GLOBAL_ATTRIBUTES | frozenset(a for names in LESSON_ATTRIBUTES.values() for a in names)
# Classes the theme and the highlighter style as boxes of their own (an admonition, a code block, its
# line numbers, content tabs): raw HTML or an attribute list with one draws, beside the engine's blocks,
# a box a reader takes for one Markdown or the engine wrote, holding text nothing checks. Markdown
# writes them (`!!! note`, a fence, `=== "tab"`).
THEME_BOXES = ("admonition", "highlight", "codehilite", "linenos", "linenodiv", "tabbed-", "md-typeset")


def theme_box(cls: str) -> bool:
    """``cls`` is a class of :data:`THEME_BOXES` (or starts with one)."""
    return cls.startswith(THEME_BOXES)


def _scheme(value: str, attr: str) -> str | None:
    """The scheme of a URL that runs code (any attribute) or carries a document (a URL
    attribute), as a browser reads it (:func:`lessonkit.util.markup.scheme`: spaces and control
    characters gone; character references are decoded by the caller or the HTML parser)."""
    from html import unescape

    scheme = markup.scheme(unescape(value) if "&" in value else value)
    if scheme in RUNS or (scheme == "data" and attr in URL_ATTRS):
        return scheme
    return None


# Ids the theme finds elements by: Material's all start with `__` (`__config`, the JSON its scripts
# read, naming the search worker's file; `__code_<id>`, the copy buttons' targets; `__drawer`,
# `__search`, `__palette_0`, …). An element of a page with such an id comes before the theme's own
# and is the one its scripts find.
RESERVED_ID = "__"


def reserved_id(value: str) -> bool:
    """An id the theme reserves (see :data:`RESERVED_ID`), as a browser reads it (spaces trimmed)."""
    return value.strip(" \t\n\f\r").startswith(RESERVED_ID)


def _attribute_problem(name: str, value: str, element: str | None = None, attrs: dict | None = None) -> str | None:
    """Why an attribute written in a page is refused, or None (``element``: the element it is on,
    None for an attribute list, whose element Markdown chooses)."""
    if name == "id" and reserved_id(value):
        return (
            f"the id `{value.strip()}`, which the theme's scripts find elements by (its configuration, "
            "the copy buttons' targets)"
        )
    if name.startswith("on") and len(name) > 2:
        return f"an event attribute `{name}`, which runs code in the reader's browser"
    if name == "style":
        return "a `style` attribute, which can hide text or draw other text over a block"
    if name == "srcdoc":
        return "a `srcdoc` attribute, which embeds another document in the page"
    if name == "class":
        box = next((c for c in value.split() if theme_box(c)), None)
        if box is not None:
            return f"the theme's class `{box}`, {BOX}"
    urls = markup.url_values(element or "", name, value, attrs) if element is not None else [value]
    for url in urls or [value]:
        scheme = _scheme(url, name if urls else "")
        if scheme is not None:
            what = "runs code in the reader's browser" if scheme in RUNS else "shows content that nothing checks"
            return f"a `{scheme}:` URL in `{name}`, which {what}"
    if element is not None and name not in markup.FOLLOWED_ONLY and name not in markup.NAVIGATION.get(element, ()):
        far = next((u for u in urls if markup.other_host(u)), None)
        if far is not None:
            return f"a URL of another host in `{name}` ({far.strip()}), which the page would load"
    elif element is not None and name == "ping" and any(markup.other_host(u) for u in urls):
        return "a `ping` URL of another host, which the reader's click would send a request to"
    if element is not None and name not in GLOBAL_ATTRIBUTES and name not in LESSON_ATTRIBUTES.get(element, ()):
        if not name.startswith("aria-"):
            return f"an attribute `{name}` on a <{element}>, {NOT_USED}"
    return None


NOT_USED = "which lessons do not use (text and structure only)"
BOX = "which draws a box like those Markdown and the engine write (text in it nothing checks)"


def _element_problem(name: str) -> str | None:
    if name in ACTIVE_ELEMENTS:
        return f"raw HTML has a <{name}> element, which {ACTIVE_ELEMENTS[name]}"
    if name in STANDARD_ELEMENTS and name not in LESSON_ELEMENTS:
        return f"raw HTML has a <{name}> element, {NOT_USED}"
    return None


# Markdown writes markup after the prose (`</p>`): a tag the prose leaves open is closed there, with
# its attributes. Read as if it were (markup.CLOSE_TAG).
CLOSE_TAG = markup.CLOSE_TAG


def html_problems(text: str) -> list[tuple[int, str]]:
    """(1-based line of ``text``, what is wrong) for every element of the document a browser
    builds from ``text`` (:mod:`lessonkit.util.markup`) that a lesson may not carry, or whose
    attributes it may not carry; the first problem of each element."""
    tree = markup.parse(text + CLOSE_TAG)
    found = []
    for node in markup.elements(tree):
        name = markup.name(node)
        why, where = _element_problem(name), None
        if why is None and node.attributes:
            attrs = markup.attributes(node)
            for attr, value in attrs.items():
                what = _attribute_problem(attr, value, name, attrs)
                if what is not None:
                    why, where = f"raw HTML has {what}", attr
                    break
        if why is not None:
            found.append((node, why, where))
    return [(markup.element_line(text, tree, node, attr), why) for node, why, attr in found]


def active_html(prose: list[tuple[int, str]], path: str, offset: int = 0) -> list[Problem]:
    """Problems for active content in the prose of a page (``prose``: (0-based index, text) of the
    lines Markdown shows as prose): the elements of :data:`ACTIVE_ELEMENTS`, event attributes,
    ``style`` attributes and URLs that run code or carry a document, in raw HTML (a tag may span
    lines), attribute lists and Markdown links. One problem per line; code spans are text."""
    if not any("<" in line or "{" in line or "]" in line for _, line in prose):
        return []
    rows = [(i, _blank_code(line)) for i, line in prose]
    if any("`" in line for _, line in rows):  # a code span may go on over the lines of its paragraph
        rows = _blank_paragraph_code(rows)
    found: dict[int, str] = {}  # 0-based index -> what is wrong there (the first one)
    text = "\n".join(line for _, line in rows)
    if "<" in text or "&" in text:
        found_html = html_problems(text)  # on a line with several, what runs or embeds is named first
        for at, message in sorted(found_html, key=lambda p: p[1].endswith(NOT_USED)):
            found.setdefault(rows[at - 1][0], message)
    for i, line in rows:
        for m in _MD_URL.finditer(line) if "]" in line else ():
            url = m["inline"] or m["ref"]
            scheme = _scheme(url, "href")
            if scheme is not None:
                what = "runs code in the reader's browser" if scheme in RUNS else "shows content that nothing checks"
                found.setdefault(i, f"a Markdown link or image to a `{scheme}:` URL, which {what}")
        for m in _ATTR_LIST.finditer(line) if "{" in line and ("=" in line or "#" in line or "." in line) else ():
            why = _attr_list_problem(line, m)
            if why is not None:
                found.setdefault(i, f"an attribute list `{{: … }}` sets {why}")
    return [Problem(msg, path, offset + i + 1, ACTIVE_HINT, code=ENGINE_HTML) for i, msg in sorted(found.items())]


def _attr_list_problem(line: str, m: re.Match) -> str | None:
    """What attribute list ``m`` of ``line`` sets that a lesson may not: what raw HTML may not carry
    (an event, a style, a URL that runs code, a reserved id, a theme box's class) and, where it is an
    attribute list for certain (``{:``, after a link or image, or ending a line after a space), an
    attribute outside :data:`LIST_ATTRIBUTES` (`_{i=1}` in a formula is no attribute list)."""
    sure = (
        not m[1].lstrip().startswith("@")
        and (  # `{@name = value}`: a checked value, the engine's
            m[0].startswith("{:")
            or line[: m.start()].endswith(")")
            or (not line[m.end() :].strip() and line[: m.start()].endswith((" ", "\t")))
        )
    )
    for token in m[1].split():
        if token.startswith("#") and reserved_id(token[1:]):
            return _attribute_problem("id", token[1:])
        if token.startswith(".") and theme_box(token[1:]):
            return _attribute_problem("class", token[1:])
    for pair in _LIST_PAIR.finditer(m[1]):
        name = pair[1].lower()
        value = next((v for v in pair.groups()[1:] if v is not None), "")
        why = _attribute_problem(name, value)
        if why is not None:
            return why
        if sure and _NAME.fullmatch(name) and name not in LIST_ATTRIBUTES and not name.startswith("aria-"):
            return f"an attribute `{name}`, {NOT_USED}"
    return None


# -- badges written as prose: the label of an engine block, without the block
LABEL_LEAD = re.compile(r"^[ \t]*(?:>[ \t]?)*(?:(?:[-*+]|[0-9]{1,9}[.)])[ \t]+)?(?:#{1,6}[ \t]+)?[*_~=]*[ \t]*")
# an admonition, a details block or a tab: its types and its quoted title
TITLED = re.compile(
    r"^[ \t]*(?:>[ \t]?)*[ \t]*(?P<mark>!!!|\?\?\?\+?|===)[ \t]*(?P<types>[^\"\n]*?)[ \t]*"
    r"(?:\"(?P<title>[^\"\n]*)\")?[ \t]*$"
)


def badge_labels(line: str, path: str, lineno: int, badges: tuple[str, ...] = ()) -> list[Problem]:
    """Problems for one prose line that labels something the way only the engine's blocks are
    labelled: an admonition whose type is an engine class (``!!! lk-real-source``), or one of
    ``badges`` as a label (at the start of the line or of a table cell, alone in emphasis, as an
    admonition's or a tab's title). The badge inside a sentence, after other words, is prose."""
    from html import unescape

    if "!!!" not in line and "???" not in line and "&" not in line and not any(b and b in line for b in badges):
        return []
    line = _blank_code(line)
    titled = TITLED.match(line) if ("!" in line or "?" in line or "=" in line) else None
    if titled is not None:
        engine = [t for t in titled["types"].split() if t.startswith("lk-")]
        if engine:
            instead = next((what for names, what in INSTEAD if engine[0] in names), "an annotation block")
            what = "an admonition" if titled["mark"] != "===" else "a tab"
            return [
                Problem(
                    f"{what} of type `{engine[0]}` uses the engine class {engine[0]}",
                    path,
                    lineno,
                    f"write {instead} instead",
                    code=ENGINE_HTML,
                )
            ]
    plain = unescape(line) if "&" in line else line
    texts = [titled["title"] or ""] if titled is not None else plain.split("|") if "|" in plain else [plain]
    for badge in badges:
        if not badge or badge not in plain:
            continue
        alone = re.search(r"(\*\*|__|\*|_|~~|==)[ \t]*" + re.escape(badge) + r"[ \t]*\1", plain)
        if alone or any(LABEL_LEAD.sub("", t, count=1).startswith(badge) for t in texts):
            return [
                Problem(
                    f'prose shows the engine\'s badge "{badge}" as a label, as if an engine block followed',
                    path,
                    lineno,
                    "write the annotation block instead; to name a kind of block, write its badge inside a "
                    "sentence or in quotes (\u300c…\u300d)",
                    code=ENGINE_HTML,
                )
            ]
    return []


_TITLE = re.compile(r"""\btitle[ \t]*=[ \t]*(?:"([^"]*)"|'([^']*)'|(\S+))""")


def fence_badges(info: str, path: str, lineno: int, badges: tuple[str, ...]) -> list[Problem]:
    """The title of an ordinary code fence (``title="…"``, which the theme shows above the code, where
    an engine block shows its badge) that holds one of the engine's ``badges``."""
    from html import unescape

    for m in _TITLE.finditer(info):
        title = unescape(next(g for g in m.groups() if g is not None))
        badge = next((b for b in badges if b and b in title), None)
        if badge is not None:
            return [
                Problem(
                    f'a code block\'s title shows the engine\'s badge "{badge}", as if it were an engine block',
                    path,
                    lineno,
                    "write the annotation block instead (it checks the code against the pin), or title the "
                    "code block without the badge",
                    code=ENGINE_HTML,
                )
            ]
    return []


def markup_values(spec, block: Block, badges: tuple[str, ...] = (), html_checks: bool = True) -> list[Problem]:
    """The header values and body lines a kind shows as Markdown (``spec.markup``: field names,
    ``"body"`` for the body): checked as prose is, for imitations, badges and active content."""
    rows: list[tuple[int, str]] = []
    for name in getattr(spec, "markup", ()):
        value = block.get(name)
        if name == "body":
            if block.body_line is not None:
                rows += [(block.body_line + k, line) for k, line in enumerate(block.body or ())]
        elif value:
            rows.append((block.line_of(name), value))
    out = []
    for n, value in rows:
        out += engine_html(value, block.path, n, badges)
        out += badge_labels(value, block.path, n, badges)
        if html_checks:
            out += active_html([(n - 1, value)], block.path)
    return out


def _dedent(line: str, indent: str) -> str:
    if line.startswith(indent):
        return line[len(indent) :]
    return line.lstrip(" ")


def _build(spec, lines, start, end, indent, path, offset, ordinal) -> Block:
    quote = _quote(indent)
    depth, inner = quote.count(">"), indent[len(quote) :]
    content = [_dedent(_unquote(l, depth) or "", inner) for l in lines[start + 1 : end]]
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
