"""Where Markdown sees structure on a line: fences and their kind, blockquote markers, the
indentation of containers (list items, admonitions, footnotes), code spans and HTML comments."""

from __future__ import annotations

import re

# A fence line: container indentation, maybe inside blockquotes (`> `), then ``` or ~~~ and the info string.
FENCE = re.compile(r"^(?P<indent>(?:[ \t]*>[ ]?)*[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
QUOTE = re.compile(r"^(?:[ \t]*>[ ]?)*")  # the blockquote markers a line starts with


def closing(line: str, char: str, length: int) -> bool:
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


def width(line: str) -> int:
    stripped = line.lstrip(" \t")
    return len(line[: len(line) - len(stripped)].expandtabs(4))


def containers(lines: list[str]) -> list[int]:
    """For each line, the indentation at which the content of the block holding it starts: from
    the nearest earlier non-blank line that is less indented (the nearest smaller width, found
    with one stack in one pass, not by walking back from every line)."""
    stack: list[tuple[int, int]]
    out, stack = [0] * len(lines), []  # stack: (width, its container) of lines with rising widths
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        w = width(line)
        while stack and stack[-1][0] >= w:
            stack.pop()
        out[i] = stack[-1][1] if stack else 0
        stack.append((w, w + (4 if OPENER.match(line) else 0)))
    return out


def code_spans(line: str) -> list[tuple[int, int]]:
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


def in_spans(spans: list[tuple[int, int]], pos: int) -> bool:
    return any(a <= pos < b for a, b in spans)


def comment_opens(line: str, spans: list[tuple[int, int]]) -> bool:
    """Does an HTML comment start on this line and stay open after it? ``<!--`` in a code span is
    text, as Markdown shows it, not a comment."""
    starts = [m.start() for m in re.finditer("<!--", line) if not in_spans(spans, m.start())]
    return bool(starts) and "-->" not in line[starts[-1] + 4 :]


def unquote(line: str, depth: int) -> str | None:
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
    quote = quote_of(indent)
    return quote.rstrip() if ">" in quote else ""


def quote_of(line: str) -> str:
    """The blockquote markers ``line`` starts with ("" when none: QUOTE matches every line)."""
    m = QUOTE.match(line)
    return m[0] if m else ""


def blank_code(line: str, spans: list[tuple[int, int]] | None = None) -> str:
    """``line`` with its code spans (text, as Markdown shows them) blanked out."""
    for a, b in reversed(spans if spans is not None else code_spans(line) if "`" in line else []):
        line = line[:a] + " " * (b - a) + line[b:]
    return line
