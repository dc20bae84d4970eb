"""Which lines of a file a block shows: the runs ``Lines`` or ``Symbol-lines`` pick, a symbol without
its docstring, or a quoted body found verbatim (runs between elision lines, up to one uniform
indentation), with a located error that points at the first line that differs."""

from __future__ import annotations

from itertools import pairwise

from lessonkit.errors import LessonError
from lessonkit.pipeline.blocks import Block
from lessonkit.source import select
from lessonkit.source.pyindex import SourceFile
from lessonkit.util.text import line_span


def _match_at(region: list[str], body: tuple[str, ...], k: int) -> tuple[bool, str, int]:
    """Does ``body`` equal ``region[k:]`` up to one uniform indentation? -> (ok, indent, first bad index)."""
    indent = None
    for idx, bl in enumerate(body):
        if k + idx >= len(region):
            return False, "", idx
        rl = region[k + idx]
        if not bl.strip():
            if rl.strip():
                return False, "", idx
            continue
        if indent is None:
            if not rl.endswith(bl) or rl[: len(rl) - len(bl)].strip():
                return False, "", idx
            indent = rl[: len(rl) - len(bl)]
        if rl != indent + bl:
            return False, "", idx
    return True, indent or "", len(body)


def _matches(region: list[str], body: tuple[str, ...]) -> list[tuple[int, str]]:
    out = []
    for k in range(0, len(region) - len(body) + 1):
        ok, indent, _ = _match_at(region, body, k)
        if ok:
            out.append((k, indent))
    return out


def _mismatch(region: list[str], body: tuple[str, ...], first_line: int, body_line: int, where: str):
    best_k, best_n = 0, -1
    for k in range(0, max(1, len(region))):
        _, _, n = _match_at(region, body, k)
        if n > best_n:
            best_k, best_n = k, n
    if best_n == 0 and region:  # not even the first line matches: point at the most similar line
        import difflib

        first = body[0].strip()
        best_k = max(range(len(region)), key=lambda k: difflib.SequenceMatcher(None, region[k].strip(), first).ratio())
    idx = min(best_n, len(body) - 1)
    found = body[idx].strip(" ")  # spaces only: a form feed or other control character stays, and shows
    if best_k + idx < len(region):
        expected = region[best_k + idx].strip(" ")
        hint = f"{where} line {first_line + best_k + idx} reads {expected[:70]!r}"
    else:
        hint = f"the body runs past the end of {where}"
    return LessonError(
        f"body is not verbatim: {found[:60]!r} does not match the source", line=body_line + idx, hint=hint
    )


def selects_lines(block: Block) -> bool:
    """``Lines``/``Symbol-lines`` choose the lines shown (not a body or patterns: there ``Lines``
    only says where the excerpt is)."""
    return (
        block.body is None
        and not any(block.get(k) for k in select.PATTERNS)
        and any(block.get(k) for k in select.SELECTING)
    )


def picked_runs(sf: SourceFile, block: Block, d) -> list[tuple[int, int]]:
    """The runs ``Lines`` (file line numbers) or ``Symbol-lines`` (1 = the symbol's first line)
    choose, within the symbol or the file, blank lines at their ends left out; [] when neither does."""
    if not selects_lines(block):
        return []
    lo, hi = (d.start, d.end) if d is not None else (1, len(sf.lines))
    what = f"`{d.name}` in {sf.rel}" if d is not None else sf.rel
    out = []
    for key in select.SELECTING:
        value = block.get(key)
        if not value:
            continue
        if key == "Symbol-lines" and d is None:
            raise LessonError(
                "`Symbol-lines` without `Symbol`",
                path=block.path,
                line=block.line_of(key),
                hint="`Symbol-lines` counts from the symbol's first line; use `Lines` for file lines",
            )
        try:
            items = select.line_items(value, key)
            picked = select.pick_lines(items, lo, hi, d.start - 1 if key == "Symbol-lines" else 0, what, key, value)
        except LessonError as exc:
            raise exc.at(block.path, block.line_of(key)) from None
        for a, b in picked:
            if not any(sf.lines[n - 1].strip() for n in range(a, b + 1)):
                raise LessonError(
                    f"`{key}: {value}`: {line_span(a, b)} has only blank lines",
                    path=block.path,
                    line=block.line_of(key),
                    hint="select lines with code",
                )
        out = [trim(sf, a, b) for a, b in picked]
    return out


def trim(sf: SourceFile, a: int, b: int) -> tuple[int, int]:
    """Lines ``a``-``b`` without blank lines at either end (a run starts and ends with text, so that
    the highlighter, which drops blank lines at the ends, numbers every line right)."""
    while a < b and not sf.lines[a - 1].strip():
        a += 1
    while b > a and not sf.lines[b - 1].strip():
        b -= 1
    return a, b


def without_docstring(sf: SourceFile, d, block: Block) -> tuple[list, list]:
    """The runs of a whole def or class without its docstring (and the blank lines after it)."""
    try:
        doc = select.docstring_range(d)
    except LessonError as exc:
        raise exc.at(block.path, block.line_of("Docstring")) from None
    if doc is None:
        raise LessonError(
            f"`{d.name}` has no docstring to hide",
            path=block.path,
            line=block.line_of("Docstring"),
            hint="remove `Docstring: hide`",
        )
    a, b = doc
    while b < d.end and not sf.lines[b].strip():  # the blank lines right after it go too
        b += 1
    runs = [trim(sf, x, y) for x, y in ((d.start, a - 1), (b + 1, d.end)) if x <= y]
    return runs, [(a, b)]


def body_runs(sf: SourceFile, region: list[str], lo: int, block: Block, symbol, where, d) -> tuple[list, list]:
    """The file lines each run of the body quotes, in order, and the lines its elisions leave out."""
    assert block.body is not None and block.body_line is not None  # excerpt_of: a block with a body
    parts = select.body_parts(block.body, block.body_line)
    if len(parts) == 1:
        return [_only_run(sf, region, lo, block, symbol, where)], []
    problems = select.body_problems(block, d is not None)
    if problems:
        raise LessonError.collect(problems)
    runs: list[tuple[int, int]]
    runs, window = [], 0
    for at, lines in parts:
        if not lines:
            continue
        hits = [(k + window, i) for k, i in _matches(region[window:], lines)]
        if not hits:
            before = _matches(region, lines)
            if before:
                k = before[0][0]
                raise LessonError(
                    "this run of the body does not follow the previous one in the source",
                    path=block.path,
                    line=at,
                    hint=f"it is at {line_span(lo + k, lo + k + len(lines) - 1)}; runs must keep the source's order "
                    "and may not overlap",
                )
            raise _outside(sf, lines, symbol, lo, region, block, at) or _mismatch(
                region[window:], lines, lo + window, at, where
            ).at(block.path, at)
        if len(hits) > 1:
            shown = ", ".join(f"L{lo + k}" for k, _ in hits[:6])
            after = " after the previous run" if runs else ""
            raise LessonError(
                f"this run of the body occurs {len(hits)} times in {where}{after}",
                path=block.path,
                line=at,
                hint=f"at {shown}; quote more lines",
            )
        k = hits[0][0]
        runs.append(trim(sf, lo + k, lo + k + len(lines) - 1))
        window = k + len(lines)
    elided = []
    gaps: list[tuple[int, int, str | None]]
    gaps = [(d.start - 1, runs[0][0], "first")] if not parts[0][1] else []  # d: body_problems checked it
    gaps += [(x, y, None) for (_, x), (y, _) in pairwise(runs)]
    if not parts[-1][1]:
        gaps.append((runs[-1][1], d.end + 1, "last"))
    for (prev, nxt, end), mark in zip(gaps, select.elision_lines(block), strict=False):
        if nxt - prev < 2:
            what = (
                f"L{prev} and L{nxt} are adjacent"
                if end is None
                else f"the {end} run is where `{symbol}` " + ("starts" if end == "first" else "ends")
            )
            raise LessonError(
                f"the elision line leaves out no lines: {what}",
                path=block.path,
                line=mark,
                hint="remove the `...` line",
            )
        elided.append((prev + 1, nxt - 1))
    return runs, elided


def _outside(sf, lines, symbol, lo, region, block, at) -> LessonError | None:
    """The error for a run that is in the file but outside the symbol (None: it is not)."""
    if not symbol:
        return None
    outside = _matches(sf.lines, lines)
    if not outside:
        return None
    k = outside[0][0]
    return LessonError(
        f"body is not inside `{symbol}`",
        path=block.path,
        line=at,
        hint=f"it is at {sf.rel} {line_span(k + 1, k + len(lines))}, outside "
        f"{symbol} ({line_span(lo, lo + len(region) - 1)}); fix the Symbol",
    )


def _only_run(sf: SourceFile, region: list[str], lo: int, block: Block, symbol, where) -> tuple[int, int]:
    """The lines a body without elisions quotes: exactly one place in the region."""
    assert block.body is not None and block.body_line is not None  # body_runs: a block with a body
    hits = _matches(region, block.body)
    if not hits:
        raise _outside(sf, block.body, symbol, lo, region, block, block.body_line) or _mismatch(
            region, block.body, lo, block.body_line, where
        ).at(block.path, block.body_line)
    if len(hits) > 1:
        at = ", ".join(f"L{lo + k}" for k, _ in hits[:6])
        raise LessonError(
            f"body occurs {len(hits)} times in {where}",
            path=block.path,
            line=block.body_line,
            hint=f"at {at}; quote more lines or name a Symbol",
        )
    k = hits[0][0]
    return lo + k, lo + k + len(block.body) - 1
