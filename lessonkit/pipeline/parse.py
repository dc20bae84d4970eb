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
from dataclasses import replace

from lessonkit.errors import LessonError, Problem
from lessonkit.pipeline.activehtml import active_html
from lessonkit.pipeline.blocks import (
    INLINE,
    Block,
    BrokenBlock,
    Field,
    InlineItem,
    InlineRef,
    ParsedPage,
    SessionPart,
)
from lessonkit.pipeline.fences import (
    FENCE,
    blank_code,
    closing,
    code_spans,
    comment_opens,
    containers,
    in_spans,
    kind_word,
    quote_of,
    unquote,
    width,
)
from lessonkit.pipeline.imitations import badge_labels, engine_html, fence_badges

# A fence of a known kind that is not where Markdown opens a block: after a list marker, a footnote
# label or a definition's colon on the same line, in a table row, after text (group `lead`).
MISPLACED = re.compile(r"(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>\{?[ \t]*\.?[A-Za-z][\w-]*[^`]*)$")
LEAD = re.compile(r"^[ \t]*(?:[-*+]|[0-9]{1,9}[.)]|\[\^[^\]\s]+\]:|:)[ \t]+$")
# Explicit ids an author writes: an attribute list `{#id}` / `{: #id .cls}` ending a line, an HTML `id="…"`.
ATTR_ID = re.compile(r"\{:?[ \t]*((?:[^{}]*?\s)?#[^\s{}]+[^{}]*)\}[ \t]*$")
HTML_ID = re.compile(r"<[A-Za-z][^<>]*?\sid[ \t]*=[ \t]*(?:\"([^\"]*)\"|'([^']*)')")
HEADER = re.compile(r"^(?P<key>[A-Za-z][A-Za-z0-9_-]*)[ \t]*:(?P<value>.*)$")


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
    content_at = containers(lines)  # per line: the column its container's content starts at
    scan = _PageScan(lines, path, line_offset, kinds, badges, html_checks)
    i = 0
    prev_blank, in_code, in_comment = True, False, False
    while i < len(lines):
        line = lines[i]
        if in_comment:  # Markdown passes the comment through: a browser may end it sooner (`<!-->`)
            in_comment = "-->" not in line
            scan.prose.append((i, line))
            i += 1
            continue
        blank = not line.strip()
        if not blank:
            w = width(line) if line[:1] in " \t" else 0
            in_code = w >= 4 and (prev_blank or in_code) and w - content_at[i] >= 4
        prev_blank = blank
        if blank or in_code:  # blank lines neither start nor end an indented code block
            i += 1
            continue
        m = FENCE.match(line) if ("`" in line or "~" in line) else None
        if not m or (m["fence"][0] == "`" and "`" in m["info"]):
            in_comment, i = scan.prose_line(i)
            i += 1
            continue
        after = scan.fence(i, m)
        if after is None:
            break
        i = after
        prev_blank = False
    page = scan.page
    if html_checks:  # off only in the prefill, which lists experiments before the HTML parser is installed
        page.active = active_html(scan.prose, path, line_offset)
        page.engine_html += page.active
    _link_sessions(page, kinds)
    return page


class _PageScan:
    """What :func:`parse_page` collects while it walks a page's lines: the page's items, the
    ordinal of the next annotation block, and the lines Markdown shows as prose."""

    def __init__(self, lines: list[str], path: str, offset: int, kinds, badges: tuple[str, ...], html_checks: bool):
        self.lines = lines
        self.path = path
        self.offset = offset
        self.kinds = kinds
        self.badges = badges
        self.html_checks = html_checks
        self.page = ParsedPage(path)
        self.ordinal = 0
        self.prose: list[tuple[int, str]] = []  # (index, text) of the lines Markdown shows as prose: for active_html

    def prose_line(self, i: int) -> tuple[bool, int]:
        """Read the prose line ``i``: (whether an HTML comment opens on it, the last line it takes)."""
        line, page, badges = self.lines[i], self.page, self.badges
        lineno = self.offset + i + 1
        spans = code_spans(line) if "`" in line else []
        if comment_opens(line, spans):
            self.prose.append((i, blank_code(line, spans)))  # the HTML check reads the comment as a browser does
            return True, i
        _inline(page, self.kinds, line, i, self.path, self.offset)
        _ids(page, line, spans, lineno)
        if "lk" in line or "&" in line or (badges and "<" in line):
            page.engine_html += engine_html(line, self.path, lineno, badges)
        if badges or "!!!" in line or "???" in line:
            following = self.lines[i + 1] if i + 1 < len(self.lines) else ""  # a label over two lines
            page.engine_html += badge_labels(line, self.path, lineno, badges, following)
        self.prose.append((i, blank_code(line, spans)))
        skip = _misplaced(page, self.kinds, self.lines, i, spans, self.path, self.offset)
        return False, i if skip is None else skip

    def fence(self, i: int, m: re.Match) -> int | None:
        """Read the fence opened on line ``i``: the line to go on from, or None: it runs to the page's end."""
        lines, kinds, badges = self.lines, self.kinds, self.badges
        indent, fence, info = m["indent"], m["fence"], m["info"].strip()
        word = kind_word(info)
        end, lazy = _end(lines, i, fence, quote_of(indent).count(">"))
        lineno = self.offset + i + 1
        if word in kinds.fenced:
            return self.annotation(i, m, word, end, lazy)
        if badges and any(b and b in info for b in badges):  # an ordinary fence titled like a block
            self.page.engine_html += fence_badges(info, self.path, lineno, badges)
            if lazy is None:
                _swallowed(self.page, kinds, lines, i, end, fence, self.path, self.offset)
        elif kinds.near(word):
            err = kinds.unknown(word, self.path, lineno)
            self.page.items.append(BrokenBlock(err, i, end if end is not None else len(lines) - 1, indent))
        elif lazy is None:
            _swallowed(self.page, kinds, lines, i, end, fence, self.path, self.offset)
        if lazy is not None:  # an ordinary fence in a blockquote that ends before the fence closes
            return lazy
        if end is None:
            return None  # an unclosed ordinary fence runs to the end of the page
        return end + 1

    def annotation(self, i: int, m: re.Match, word: str, end: int | None, lazy: int | None) -> int | None:
        """Read the annotation block of kind ``word`` opened on line ``i`` (a block, or a broken one)."""
        lines, path, offset = self.lines, self.path, self.offset
        indent, fence = m["indent"], m["fence"]
        lineno = offset + i + 1
        if lazy is not None:
            err = LessonError(
                f"this line of the {word} block opened on line {lineno} does not start with `>`: "
                "Markdown ends the blockquote, and the block, here",
                path=path,
                line=offset + lazy + 1,
                hint="start every line of a block in a blockquote with `>`, as its first line",
            )
            self.broken(err, i, lazy - 1, indent)
            return lazy
        if end is None:
            err = LessonError(
                f"unclosed {word} block: no closing {fence}",
                path=path,
                line=lineno,
                hint=f"add a line {fence} after the block",
            )
            self.page.items.append(BrokenBlock(err, i, len(lines) - 1, indent, self.ordinal))
            return None
        inner = _opens_inside(self.kinds, lines, i, end, fence, quote_of(indent).count(">"))
        if inner is not None:  # this block's fence was left open: the next block's closing line closes it
            err = LessonError(
                f"unclosed {word} block: the {inner[1]} block on line {offset + inner[0] + 1} opens "
                f"inside it, and that block's closing {fence} closes this one",
                path=path,
                line=lineno,
                hint=f"close this block with a line {fence} before line {offset + inner[0] + 1}",
            )
            self.broken(err, i, end, indent)
            return end + 1
        try:
            spec = self.kinds[word]
            block = _build(spec, lines, i, end, indent, path, offset, self.ordinal)
            self.page.items.append(block)
            self.page.engine_html += markup_values(spec, block, self.badges, self.html_checks)
        except LessonError as exc:
            self.page.items.append(BrokenBlock(exc.at(path, lineno), i, end, indent, self.ordinal))
        self.ordinal += 1
        return end + 1

    def broken(self, err: LessonError, start: int, end: int, indent: str) -> None:
        """A broken annotation block: it takes the next ordinal."""
        self.page.items.append(BrokenBlock(err, start, end, indent, self.ordinal))
        self.ordinal += 1


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
        content = unquote(lines[j], depth)
        if content is None:
            return None, j
        if closing(content, fence[0], len(fence)):
            return j, None
    return None, None


def _misplaced(page, kinds, lines, i, spans, path, offset) -> int | None:
    """Report a fence of a known kind that Markdown does not open a block with: after a list
    marker, a footnote label or a definition's colon on the same line, in a table row, after
    text. Returns the line of its closing fence (the lines up to it are the block's, which
    Markdown shows as inline code or text), or None when there is no such fence."""
    line = lines[i]
    m = MISPLACED.search(line)
    if m is None or in_spans(spans, m.start()):
        return None
    word = kind_word(m["info"])
    if word not in kinds.fenced:
        return None
    quote = quote_of(line)
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
        content = unquote(lines[j], depth)
        if content is None or (content.strip() and FENCE.match(content) and not closing(content, fence[0], 3)):
            break  # the blockquote ends, or another block starts: Markdown's code span cannot reach further
        if closing(content, fence[0], len(fence)):
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
    if m and not in_spans(spans, m.start()):
        page.ids += [(t[1:], lineno) for t in m[1].split() if t.startswith("#") and len(t) > 1]
    for h in HTML_ID.finditer(line) if "<" in line else ():
        if not in_spans(spans, h.start()):
            page.ids.append((h[1] if h[1] is not None else h[2], lineno))


def _opens_inside(kinds, lines, start, end, fence, depth) -> tuple[int, str] | None:
    """(index, kind) of the first fence of a known kind inside the annotation block ``start``…``end``
    that its closing line could close too: the block's own fence was left open before it."""
    for j in range(start + 1, end):
        content = unquote(lines[j], depth)
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
    code = code_spans(line) if "`" in line else []  # ``a ` b`` is one span: backtick runs pair by length
    for m in INLINE.finditer(line):
        spans.append((m.start(), m.end()))
        if in_spans(code, m.start()):  # inside a code span
            continue
        name = m["name"]
        if name not in kinds.inline:
            if kinds.near(name, inline=True):
                page.problems_inline.append(kinds.unknown(name, path, offset + index + 1, inline=True).problem)
            continue
        ref = InlineRef(name, m["arg"], path, offset + index + 1)
        page.inline.append(InlineItem(ref, index, m.start(), m.end()))
    for m in re.finditer(r"\[\[([a-z][a-z0-9-]*):", line):  # an inline kind's opening that never closes
        in_code = in_spans(spans, m.start()) or in_spans(code, m.start())
        if m[1] in kinds.inline and not in_code:
            page.problems_inline.append(
                Problem(
                    f"the inline `{m[1]}` reference is not closed",
                    path,
                    offset + index + 1,
                    'end it with ]] on the same line (close every "quote"; write \\" for a quote inside one)',
                )
            )


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
    quote = quote_of(indent)
    depth, inner = quote.count(">"), indent[len(quote) :]
    content = [_dedent(unquote(l, depth) or "", inner) for l in lines[start + 1 : end]]
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
