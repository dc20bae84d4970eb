"""The selectors of an excerpt besides ``Symbol`` and the body: ``Lines`` on its own, the text
patterns ``Start-after`` / ``Start-at`` / ``End-before`` / ``End-at``, ``Docstring: hide``,
``Dedent``, ``Emphasize`` and elision lines (``...`` or ``…`` alone on a line of the body).

:func:`header_problems` checks the values before any file is opened (the kind's ``validate``);
the other functions work on the lines of a file and raise a located :class:`LessonError` when the
selection does not hold (see :func:`lessonkit.source.resolve.excerpt_of`, which calls them).
Line numbers are always the file's own, 1-based, as the page shows them.
"""

from __future__ import annotations

import difflib
import re
from itertools import pairwise

from lessonkit.errors import LessonError, Problem
from lessonkit.pipeline.blocks import Block
from lessonkit.source.pysyntax import Definition

# Text patterns, in the order they are applied; each must match exactly one line of its scope.
PATTERNS = ("Start-after", "Start-at", "End-before", "End-at")
ELISION = ("...", "\u2026")  # a body line that stands for left-out lines
EMPHASIS_ITEM = re.compile(r"^([0-9]{1,6})(?:[ \t]*-[ \t]*([0-9]{1,6}))?$")
DEDENT_MAX = 40  # `Dedent: N`: more is not a real indentation
TAB_WIDTH_MAX = 16  # `Tab-width: N`: 1 to this
EMPHASIS_HINT = "file line numbers as the page shows them, e.g. `Emphasize: 27, 30-31`"
LINES_ITEM = re.compile(r"^([0-9]{1,9})?[ \t]*(-)?[ \t]*([0-9]{1,9})?$")
LINES_HINT = "ranges such as `25-32`, `40-` (to the end), `-12` (from the start) or a list `3-5, 9`"
# `Lines` and `Symbol-lines` select lines when nothing else does; with a body or `Start-*`/`End-*`
# patterns, `Lines` is a locator: one range, the lines the excerpt must be at.
SELECTING = ("Lines", "Symbol-lines")


def line_items(value: str, key: str = "Lines") -> list[tuple[int | None, int | None]]:
    """The ranges of ``Lines: 3-5, 9, 40-``: (first, last), None where the range is open."""
    out: list[tuple[int | None, int | None]] = []
    for item in value.split(","):
        m = LINES_ITEM.match(item.strip())
        if not m or not (m[1] or m[3]) or (not m[2] and not m[1]):
            if re.fullmatch(r"[0-9]+[ \t]*-?[ \t]*[0-9]*", item.strip()):  # a range, with numbers too long
                raise _not_a_range(key, value, item)
            raise LessonError(f"`{key}: {value}` is not a list of line ranges", hint=LINES_HINT)
        a = int(m[1]) if m[1] else None
        b = (int(m[3]) if m[3] else None) if m[2] else a
        if (a is not None and a < 1) or (a is not None and b is not None and b < a):
            raise _not_a_range(key, value, item)
        out.append((a, b))
    for (_, b1), (a2, _) in pairwise(out):
        if b1 is None or a2 is None or a2 <= b1:
            raise LessonError(
                f"`{key}: {value}`: the ranges overlap or are out of order",
                hint="list the ranges in file order, each after the previous one",
            )
    return out


def _not_a_range(key: str, value: str, item: str) -> LessonError:
    """The error for one item of ``Lines``/``Symbol-lines`` that is no range ``a-b`` with 1 ≤ a ≤ b."""
    what = f"`{key}: {value}` is" if item.strip() == value.strip() else f"`{key}: {value}`: `{item.strip()}` is"
    return LessonError(f"{what} not a range `a-b` with 1 ≤ a ≤ b", hint=LINES_HINT)


def pick_lines(
    items: list[tuple[int | None, int | None]], lo: int, hi: int, offset: int, what: str, key: str, value: str
) -> list[tuple[int, int]]:
    """The file lines (first, last) of each range, within ``lo``-``hi`` (``what``); ``offset`` is
    added to the numbers written (``Symbol-lines`` counts from the symbol's first line)."""
    out: list[tuple[int, int]] = []
    for a, b in items:
        first = lo if a is None else a + offset
        last = hi if b is None else b + offset
        if first < lo or last > hi:
            bad = first if first < lo else last
            if offset:
                hint = f"`Symbol-lines` counts the symbol's lines: 1 to {hi - lo + 1}"
            else:
                hint = f"{what} is L{lo}-{hi}" + (
                    "; `Symbol-lines` counts from the symbol's first line" if lo > 1 or "`" in what else ""
                )
            if last > hi and not offset and lo == 1 and "`" not in what:
                raise LessonError(
                    f"`{key}: {value}` runs past the end of {what} ({hi} lines)",
                    hint="check the range against the source browser",
                )
            raise LessonError(f"`{key}: {value}`: line {bad - offset} is outside {what}", hint=hint)
        if out and first == out[-1][1] + 1:  # adjacent ranges are one run
            out[-1] = (out[-1][0], last)
        else:
            out.append((first, last))
    return out


def is_elision(line: str) -> bool:
    return line.strip() in ELISION


def emphasis(value: str) -> tuple[int, ...]:
    """The line numbers of ``Emphasize: 3, 5-7`` (sorted, without repeats)."""
    out: set[int] = set()
    for item in value.split(","):
        m = EMPHASIS_ITEM.match(item.strip())
        if not m or int(m[1]) < 1 or (m[2] and int(m[2]) < int(m[1])):
            raise LessonError(f"`Emphasize: {value}` is not a list of lines such as `3, 5-7`", hint=EMPHASIS_HINT)
        out.update(range(int(m[1]), int(m[2] or m[1]) + 1))
    return tuple(sorted(out))


def dedent_mode(value: str | None) -> str | int:
    """``auto`` (the default: the common indentation of the shown lines), ``none`` or a number of spaces."""
    v = (value or "auto").strip().lower()
    if v in ("auto", "none"):
        return v
    if v.isascii() and v.isdigit() and len(v) <= 2 and int(v) <= DEDENT_MAX:
        return int(v)
    raise LessonError(
        f"`Dedent: {value}` is not `auto`, `none` or a number of spaces from 0 to {DEDENT_MAX}",
        hint="`auto` (the default) removes the indentation the shown lines share; `none` keeps it",
    )


def tab_width(value: str | None) -> int | None:
    """``Tab-width: N`` (1 to 16): the tab stops tabs are expanded to before ``Dedent`` and display;
    None (no field): tabs stay as the file holds them."""
    if value is None:
        return None
    v = value.strip()
    if v.isascii() and v.isdigit() and len(v) <= 2 and 1 <= int(v) <= TAB_WIDTH_MAX:
        return int(v)
    raise LessonError(
        f"`Tab-width: {value}` is not a number of columns from 1 to {TAB_WIDTH_MAX}",
        hint="for example `Tab-width: 4`: tabs then become spaces up to the next multiple of 4",
    )


def expand_tabs(lines, width: int | None) -> list[str]:
    """``lines`` with every tab expanded to the tab stops of ``width`` (None: unchanged)."""
    return lines if width is None else [line.expandtabs(width) for line in lines]


def body_parts(body: tuple[str, ...], body_line: int) -> list[tuple[int, tuple[str, ...]]]:
    """The runs of a body between its elision lines: (page line of the run's first line, lines).
    An elision before the first or after the last run gives an empty run there."""
    parts: list[tuple[int, list[str]]] = [(body_line, [])]
    for k, line in enumerate(body):
        if is_elision(line):
            parts.append((body_line + k + 1, []))
        else:
            parts[-1][1].append(line)
    return [(at, tuple(lines)) for at, lines in parts]


def elision_lines(block: Block) -> list[int]:
    """The page lines of the body's elision lines."""
    if block.body_line is None:  # no body
        return []
    return [block.body_line + k for k, line in enumerate(block.body or ()) if is_elision(line)]


def body_problems(block: Block, has_scope: bool) -> list[Problem]:
    """Elision lines that cannot stand where they are (checked before any file is read)."""
    if not block.body or block.body_line is None:
        return []
    at = elision_lines(block)
    if not at:
        return []
    out = []
    if len(at) == len(block.body):
        return [Problem("the body has nothing but elision lines", block.path, at[0], "quote the lines to show")]
    for a, b in pairwise(at):
        if b == a + 1:
            out.append(
                Problem("two elision lines in a row", block.path, b, "one `...` line stands for any number of lines")
            )
    ends = [n for n in at if n in (block.body_line, block.body_line + len(block.body) - 1)]
    if ends and not has_scope:
        out.append(
            Problem(
                "an elision line at the start or end of the body needs a `Symbol`",
                block.path,
                ends[0],
                "it stands for the symbol's lines before or after the quoted ones; without a Symbol, "
                "quote the lines on both sides of it",
            )
        )
    return out


def header_problems(b: Block) -> list[Problem]:
    """The selector headers of a real-source block, checked before any file is read."""
    given = [k for k in PATTERNS if k in b.fields]
    out = []
    checks = (_pattern_problems, _match_problems, _docstring_problems, _dedent_problems, _tab_problems)
    for check in (*checks, _emphasis_problems):
        out += check(b, given)
    out += body_problems(b, "Symbol" in b.fields)
    return out


def _bad(b: Block, msg: str, key: str, hint: str | None) -> Problem:
    return Problem(msg, b.path, b.line_of(key) if key else b.line, hint)


def _pattern_problems(b: Block, given: list[str]) -> list[Problem]:
    """``Start-after`` with ``Start-at`` (or ``End-before`` with ``End-at``); patterns beside a body."""
    out = []
    for one, other in (("Start-after", "Start-at"), ("End-before", "End-at")):
        if one in b.fields and other in b.fields:
            later = max(one, other, key=b.line_of)
            out.append(
                _bad(
                    b,
                    f"both `{one}` and `{other}`",
                    later,
                    "give one of them: `-after`/`-before` leave the matching line out",
                )
            )
    if given and b.body is not None:
        out.append(
            _bad(
                b,
                f"`{given[0]}` and a body both select the lines",
                given[0],
                "use the body, or the patterns without a body",
            )
        )
    return out


def _match_problems(b: Block, given: list[str]) -> list[Problem]:
    """``Match`` says how the patterns match: it needs one, and is `unique` or `first`."""
    if b.get("Match") is None:
        return []
    if not given:
        return [
            _bad(b, "`Match` without a `Start-*` or `End-*` pattern", "Match", "`Match` says how the patterns match")
        ]
    try:
        match_mode(b.get("Match"))
    except LessonError as exc:
        return [_bad(b, exc.problem.message, "Match", exc.problem.hint)]
    return []


def _docstring_problems(b: Block, given: list[str]) -> list[Problem]:
    """``Docstring`` is `hide` or `show`; `hide` needs a whole symbol."""
    d = b.get("Docstring")
    if d is None:
        return []
    if d not in ("hide", "show"):
        return [
            _bad(
                b,
                f"`Docstring: {d}` is not `hide` or `show`",
                "Docstring",
                "`hide` leaves a def's or class's docstring out",
            )
        ]
    if d == "hide" and ("Symbol" not in b.fields or b.body is not None or given):
        return [
            _bad(
                b,
                "`Docstring: hide` needs a whole symbol: a `Symbol` without a body or `Start-…`/`End-…` patterns",
                "Docstring",
                "quote the lines without the docstring as a body with `...` instead",
            )
        ]
    return []


def _dedent_problems(b: Block, given: list[str]) -> list[Problem]:
    try:
        dedent_mode(b.get("Dedent"))
    except LessonError as exc:
        return [_bad(b, exc.problem.message, "Dedent", exc.problem.hint)]
    return []


def _tab_problems(b: Block, given: list[str]) -> list[Problem]:
    try:
        tab_width(b.get("Tab-width"))
    except LessonError as exc:
        return [_bad(b, exc.problem.message, "Tab-width", exc.problem.hint)]
    return []


def _emphasis_problems(b: Block, given: list[str]) -> list[Problem]:
    """``Emphasize`` names lines; with a ``Lines`` range, lines inside it."""
    e = b.get("Emphasize")
    if e is None:
        return []
    try:
        lines = emphasis(e)
    except LessonError as exc:
        return [_bad(b, exc.problem.message, "Emphasize", exc.problem.hint)]
    try:
        items = line_items(b.get("Lines") or "")
    except LessonError:
        items = []  # the kind reports it
    if items and all(a is not None and z is not None for a, z in items):
        outside = next((n for n in lines if not any(a <= n <= z for a, z in items)), None)  # type: ignore[operator]
        if outside is not None:
            return [
                _bad(
                    b,
                    f"`Emphasize: {e}`: line {outside} is outside `Lines: {b.get('Lines')}`",
                    "Emphasize",
                    EMPHASIS_HINT,
                )
            ]
    return []


def match_mode(value: str | None) -> str:
    """``Match: unique`` (the default: each pattern matches exactly one line of its scope) or
    ``first`` (the first line that matches; the end pattern is searched from the start on)."""
    v = (value or "unique").strip().lower()
    if v in ("unique", "first"):
        return v
    raise LessonError(
        f"`Match: {value}` is not `unique` or `first`",
        hint="`first` takes the first matching line, and searches the end pattern after the start",
    )


def narrow(region: list[str], lo: int, block: Block, where: str) -> tuple[list[str], int]:
    """The lines of ``region`` (whose first line is file line ``lo``) between the block's
    ``Start-*`` and ``End-*`` patterns; with ``Match: unique`` each pattern must occur in exactly
    one line of it, with ``Match: first`` the first match counts and the end is searched from the
    first line the start leaves in."""
    try:
        mode = match_mode(block.get("Match"))
    except LessonError as exc:
        raise exc.at(block.path, block.line_of("Match")) from None
    first, last, at = 0, len(region) - 1, {}
    for key in PATTERNS:
        pattern = block.get(key)
        if pattern is None:
            continue
        window = first if mode == "first" and key.startswith("End") else 0
        hits = [k for k, line in enumerate(region) if k >= window and pattern in line]
        if not hits:
            close = max(range(len(region)), key=lambda k: difflib.SequenceMatcher(None, region[k], pattern).ratio())
            after = f" after L{lo + window}" if window else ""
            raise LessonError(
                f"`{key}: {pattern}` matches no line of {where}{after}",
                path=block.path,
                line=block.line_of(key),
                hint=f"the pattern is plain text found inside one line; the closest line is L{lo + close}: "
                f"{region[close].strip()[:60]!r}",
            )
        if len(hits) > 1 and mode == "unique":
            shown = ", ".join(f"L{lo + k}" for k in hits[:8])
            raise LessonError(
                f"`{key}: {pattern}` matches {len(hits)} lines of {where} ({shown})",
                path=block.path,
                line=block.line_of(key),
                hint="make the pattern longer, so that it matches one line, or add `Match: first` to take the "
                "first (the end pattern is then searched after the start)",
            )
        k = at[key] = hits[0]
        if key == "Start-after":
            first = k + 1
        elif key == "Start-at":
            first = k
        elif key == "End-before":
            last = k - 1
        else:
            last = k
    if first > last:
        keys = [k for k in PATTERNS if k in at]
        shown = " and ".join(f"`{k}` (L{lo + at[k]})" for k in keys)
        raise LessonError(
            f"no lines are left between {shown}",
            path=block.path,
            line=block.line_of(keys[-1]),
            hint="the start pattern must come before the end pattern",
        )
    return region[first : last + 1], lo + first


def docstring_range(d: Definition) -> tuple[int, int] | None:
    """The lines of the docstring of the def or class ``d`` (None: it has none).
    Raises when the symbol is not a def or class, or the docstring shares a line with other code."""
    if d.kind not in ("def", "class"):
        raise LessonError(
            f"`Docstring: hide` works on a def or class; `{d.name}` is neither",
            hint="remove the line, or name the function or class",
        )
    if d.doc is not None and d.doc_shared:
        raise LessonError(
            f"the docstring of `{d.name}` shares a line with other code",
            hint="`Docstring: hide` leaves out whole lines; quote the lines you want as a body instead",
        )
    return d.doc


def dedent(runs: list[list[str]], mode: str | int, first_lines: list[int], block: Block, key_line: int) -> list[tuple]:
    """Every run's lines with the indentation ``mode`` removes (one cut for all runs, so that runs
    keep their relative indentation); blank lines become empty."""
    widths = [
        (len(l) - len(l.lstrip(" ")), at + k)
        for run, at in zip(runs, first_lines, strict=True)
        for k, l in enumerate(run)
    ]
    widths = [(w, n) for (w, n), l in zip(widths, [l for run in runs for l in run], strict=True) if l.strip()]
    if mode == "none":
        cut = 0
    elif mode == "auto":
        cut = min((w for w, _ in widths), default=0)
    else:
        assert isinstance(mode, int)  # dedent_mode: "none", "auto" or a number of spaces
        least = min(widths, default=(0, 0))
        tabbed = next((n for w, n in widths if w < mode and _tab_indented(_line_of(runs, first_lines, n))), None)
        if tabbed is not None:
            raise LessonError(
                f"`Dedent: {mode}` but L{tabbed} is indented with tabs, and `Dedent` removes spaces",
                path=block.path,
                line=key_line,
                hint="add `Tab-width: N` (e.g. `Tab-width: 4`) to expand the tabs to spaces first, "
                "or use `Dedent: auto` or `Dedent: none`",
            )
        if least[0] < mode:
            raise LessonError(
                f"`Dedent: {mode}` but L{least[1]} is indented by only {least[0]} space(s)",
                path=block.path,
                line=key_line,
                hint=f"use `Dedent: auto`, or at most `Dedent: {least[0]}`",
            )
        cut = mode
    return [tuple(l[cut:] if l.strip() else "" for l in run) for run in runs]


def _tab_indented(line: str) -> bool:
    """A tab stands in the line's indentation (alone or mixed with spaces)."""
    return "\t" in line[: len(line) - len(line.lstrip(" \t"))]


def _line_of(runs: list[list[str]], first_lines: list[int], n: int) -> str:
    """File line ``n`` among the runs."""
    for run, at in zip(runs, first_lines, strict=True):
        if at <= n < at + len(run):
            return run[n - at]
    return ""


def without_numbers(block: Block, old) -> Block:
    """The block as resolved against another tree (repin): ``Emphasize`` names this tree's line
    numbers (they move with the text), and ``Lines`` or ``Symbol-lines`` selecting lines by number
    become a body of the lines they showed here (``old``, an Excerpt), found again by their text."""
    from dataclasses import replace

    fields = {k: f for k, f in block.fields.items() if k != "Emphasize"}
    body, body_line = block.body, block.body_line
    if block.body is None and not any(k in block.fields for k in PATTERNS) and any(k in fields for k in SELECTING):
        for k in SELECTING:
            fields.pop(k, None)
        runs = [lines for kind, _, _, lines in old.parts() if kind == "run"]
        joined: list[str] = []
        for n, run in enumerate(runs):
            joined += ([ELISION[0]] if n else []) + list(run)
        body, body_line = tuple(joined), block.line
    return replace(block, fields=fields, body=body, body_line=body_line)


def ranges(numbers: list[int]) -> str:
    """``3, 5-7`` for [3, 5, 6, 7]: the form of ``Emphasize``."""
    out: list[list[int]] = []
    for n in sorted(set(numbers)):
        if out and n == out[-1][1] + 1:
            out[-1][1] = n
        else:
            out.append([n, n])
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in out)
