"""Stage 2: resolve a parsed block into an exact excerpt of a tree."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from pathlib import Path

from lessonkit.errors import LessonError
from lessonkit.pipeline.parse import Block, check_rel_path
from lessonkit.source import select
from lessonkit.source.pyindex import WHICH, SourceFile
from lessonkit.util.store import Store
from lessonkit.util.text import line_span

ELIDED = "\u2026"  # what stands for left-out lines in the text an excerpt's sha256 is taken of


@dataclass(frozen=True)
class Excerpt:
    origin: str  # "pinned" (the pinned tree, e.g. autograd) or "repo" (this repository)
    file: str
    symbol: str | None
    start: int  # the first line of the first run
    end: int  # the last line of the last run
    lines: tuple[str, ...]  # shown text of every run, in order, indentation removed (see Dedent)
    runs: tuple[tuple[int, int], ...] = ()  # (first, last) file line of each shown run; (): one run
    elided: tuple[tuple[int, int], ...] = ()  # (first, last) file lines left out between or around runs
    scope: tuple[int, int] | None = None  # what an elision row links to: the symbol, else start-end
    emphasize: tuple[int, ...] = ()  # file lines shown emphasised (`Emphasize:`)

    @property
    def spans(self) -> tuple[tuple[int, int], ...]:
        """The (first, last) line of every shown run."""
        return self.runs or ((self.start, self.end),)

    def parts(self) -> list[tuple[str, int, int, tuple[str, ...]]]:
        """Runs and elisions in file order: ``("run", first, last, lines)`` or ``("elided", first, last, ())``."""
        out, k = [], 0
        for a, b in self.spans:
            out.append(("run", a, b, self.lines[k : k + b - a + 1]))
            k += b - a + 1
        out += [("elided", a, b, ()) for a, b in self.elided]
        return sorted(out, key=lambda p: p[1])

    def numbers(self) -> list[int]:
        """The file line number of every shown line, in order."""
        return [n for a, b in self.spans for n in range(a, b + 1)]

    def shows(self, start: int, end: int) -> bool:
        """Lines ``start``-``end`` are all shown, in one run."""
        return any(a <= start and end <= b for a, b in self.spans)

    def text_lines(self, elision: str = ELIDED) -> list[str]:
        """The shown lines, an ``elision`` line (``{n}``: how many lines) where lines are left out."""
        out = []
        for what, a, b, lines in self.parts():
            out += list(lines) if what == "run" else [elision.replace("{n}", str(b - a + 1))]
        return out

    @property
    def text(self) -> str:
        return "\n".join(self.text_lines()) + "\n"

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


class Tree:
    """A directory of files that excerpts may come from, each file parsed once."""

    def __init__(
        self,
        root: Path,
        origin: str,
        allowed: set[str] | None = None,
        prefixes: tuple[str, ...] = (),
        label: str = "the tree",
        symbols: Store | None = None,
    ):
        self.root = root
        self.symbols = symbols  # symbol tables on disk, by content (lessonkit.util.store)
        self.origin = origin
        self.allowed = allowed  # manifest paths, or None for "any file under prefixes"
        self.prefixes = prefixes
        self.label = label
        self._files: dict[str, SourceFile] = {}

    def file(self, value: str) -> SourceFile:
        rel = check_rel_path(value)
        if self.prefixes and not rel.startswith(self.prefixes):
            raise LessonError(
                f"`{rel}` is not under {' or '.join(self.prefixes)}", hint=f"files of {self.label} live there"
            )
        if rel in self._files:
            return self._files[rel]
        try:
            sf = self._read(rel)
        except OSError as exc:  # e.g. a name too long for the file system
            raise LessonError(
                f"cannot read `{rel}` in {self.label}: {exc.strerror or exc}", hint="check the path"
            ) from None
        self._files[rel] = sf
        return sf

    def _read(self, rel: str) -> SourceFile:
        p = self.root / rel
        if p.is_dir():
            raise LessonError(f"`{rel}` is a directory in {self.label}", hint="name a file inside it")
        if self.allowed is not None and rel not in self.allowed:
            raise LessonError(f"no file `{rel}` in {self.label}", hint=_nearest_path(rel, self.allowed))
        if p.is_symlink() or (p.exists() and self.root.resolve() not in p.resolve().parents):
            real = p.resolve()
            if self.root.resolve() in real.parents and real.is_file():  # a link to a file of this tree
                inside = real.relative_to(self.root.resolve()).as_posix()
                raise LessonError(f"`{rel}` is a link to `{inside}`", hint=f"name the file itself: `File: {inside}`")
            raise LessonError(f"`{rel}` is a link that leaves {self.label}", hint="only regular files can be excerpted")
        if not p.is_file():
            known = self.allowed if self.allowed is not None else self._listing()
            hint = _nearest_path(rel, known) if known else "check the spelling"
            raise LessonError(f"no file `{rel}` in {self.label}", hint=hint)
        return SourceFile.of(rel, p.read_bytes(), self.symbols)

    def _listing(self) -> set[str]:
        """The files under this tree's prefixes (for "did you mean" hints)."""
        out = set()
        for prefix in self.prefixes:
            base = self.root / prefix
            if base.is_dir():
                out |= {
                    p.relative_to(self.root).as_posix()
                    for p in base.rglob("*")
                    if p.is_file() and "__pycache__" not in p.parts
                }
        return out


def _nearest_path(rel: str, candidates) -> str:
    import difflib

    close = difflib.get_close_matches(rel, sorted(candidates), n=3, cutoff=0.6)
    return ("did you mean " + ", ".join(f"`{c}`" for c in close) + "?") if close else "check the path"


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


def excerpt_of(tree: Tree, block: Block, file_key: str = "File", symbol_key: str = "Symbol") -> Excerpt:
    """The excerpt a block shows: a whole symbol, lines of it or of the file (``Lines`` alone,
    ``Start-*``/``End-*`` patterns), or a body (runs between elision lines, each verbatim);
    then ``Docstring``, ``Dedent`` and ``Emphasize`` (see :mod:`lessonkit.source.select`)."""
    try:
        sf = tree.file(block.get(file_key) or "")  # none: the empty path's error, at the block
    except LessonError as exc:
        raise exc.at(block.path, block.line_of(file_key))
    symbol = block.get(symbol_key)
    if not sf.lines:
        raise LessonError(
            f"`{sf.rel}` is empty: there is nothing to excerpt",
            path=block.path,
            line=block.line_of(file_key),
            hint="excerpt a file with content",
        )
    d = None
    if symbol:
        try:
            d = sf.find(symbol, block.get("Which"))
        except LessonError as exc:
            raise exc.at(block.path, block.line_of("Which" if exc.code == WHICH else symbol_key))
        region = sf.lines[d.start - 1 : d.end]
        lo = d.start
        where = f"{sf.rel} ({symbol}, {line_span(d.start, d.end)})"
    else:
        region, lo, where = sf.lines, 1, sf.rel
    if any(block.get(k) for k in select.PATTERNS):
        region, lo = select.narrow(region, lo, block, where)
    elided: list[tuple[int, int]] = []
    if block.body is None:
        picked = _picked(sf, block, d)
        if picked:
            runs = picked
            elided = [(x + 1, y - 1) for (_, x), (y, _) in zip(runs, runs[1:]) if y - x > 1]
        else:
            runs = [_trim(sf, lo, lo + len(region) - 1)]
        if d is not None and block.get("Docstring") == "hide":
            runs, elided = _without_docstring(sf, d, block)
    else:
        runs, elided = _body_runs(sf, region, lo, block, symbol, where, d)
    originals = [sf.lines[a - 1 : b] for a, b in runs]
    if not any(line.strip() for run in originals for line in run):
        raise LessonError(
            "the excerpt has only blank lines",
            path=block.path,
            line=block.line,
            hint="select lines with code",
        )
    try:
        mode = select.dedent_mode(block.get("Dedent"))
    except LessonError as exc:
        raise exc.at(block.path, block.line_of("Dedent"))
    shown = select.dedent(originals, mode, [a for a, _ in runs], block, block.line_of("Dedent"))
    lines = tuple(line for run in shown for line in run)
    scope = (d.start, d.end) if d is not None else (runs[0][0], runs[-1][1])
    ex = Excerpt(
        tree.origin,
        sf.rel,
        symbol,
        runs[0][0],
        runs[-1][1],
        lines,
        tuple(runs) if len(runs) > 1 else (),
        tuple(elided),
        scope,
    )
    value = block.get("Emphasize")
    if value:
        try:
            emph = select.emphasis(value)
        except LessonError as exc:
            raise exc.at(block.path, block.line_of("Emphasize"))
        hidden = [n for n in emph if not ex.shows(n, n)]
        if hidden:
            where_shown = ", ".join(line_span(a, b) for a, b in ex.spans)
            raise LessonError(
                f"`Emphasize: {value}`: line {hidden[0]} is not shown (the excerpt shows {where_shown})",
                path=block.path,
                line=block.line_of("Emphasize"),
                hint=select.EMPHASIS_HINT,
            )
        ex = replace(ex, emphasize=emph)
    return ex


def selects_lines(block: Block) -> bool:
    """``Lines``/``Symbol-lines`` choose the lines shown (not a body or patterns: there ``Lines``
    only says where the excerpt is)."""
    return (
        block.body is None
        and not any(block.get(k) for k in select.PATTERNS)
        and any(block.get(k) for k in select.SELECTING)
    )


def _picked(sf: SourceFile, block: Block, d) -> list[tuple[int, int]]:
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
            raise exc.at(block.path, block.line_of(key))
        for a, b in picked:
            if not any(sf.lines[n - 1].strip() for n in range(a, b + 1)):
                raise LessonError(
                    f"`{key}: {value}`: {line_span(a, b)} has only blank lines",
                    path=block.path,
                    line=block.line_of(key),
                    hint="select lines with code",
                )
        out = [_trim(sf, a, b) for a, b in picked]
    return out


def _trim(sf: SourceFile, a: int, b: int) -> tuple[int, int]:
    """Lines ``a``-``b`` without blank lines at either end (a run starts and ends with text, so that
    the highlighter, which drops blank lines at the ends, numbers every line right)."""
    while a < b and not sf.lines[a - 1].strip():
        a += 1
    while b > a and not sf.lines[b - 1].strip():
        b -= 1
    return a, b


def _without_docstring(sf: SourceFile, d, block: Block) -> tuple[list, list]:
    """The runs of a whole def or class without its docstring (and the blank lines after it)."""
    try:
        doc = select.docstring_range(d)
    except LessonError as exc:
        raise exc.at(block.path, block.line_of("Docstring"))
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
    runs = [_trim(sf, x, y) for x, y in ((d.start, a - 1), (b + 1, d.end)) if x <= y]
    return runs, [(a, b)]


def _body_runs(sf: SourceFile, region: list[str], lo: int, block: Block, symbol, where, d) -> tuple[list, list]:
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
        runs.append(_trim(sf, lo + k, lo + k + len(lines) - 1))
        window = k + len(lines)
    elided = []
    gaps: list[tuple[int, int, str | None]]
    gaps = [(d.start - 1, runs[0][0], "first")] if not parts[0][1] else []  # d: body_problems checked it
    gaps += [(x, y, None) for (_, x), (y, _) in zip(runs, runs[1:])]
    if not parts[-1][1]:
        gaps.append((runs[-1][1], d.end + 1, "last"))
    for (prev, nxt, end), mark in zip(gaps, select.elision_lines(block)):
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
    assert block.body is not None and block.body_line is not None  # _body_runs: a block with a body
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


def check_lines(block: Block, ex: Excerpt) -> None:
    """``Lines`` beside a body or ``Start-*``/``End-*`` patterns: the one range the excerpt is at."""
    if selects_lines(block) or not block.get("Lines"):
        return
    try:
        items = select.line_items(block.get("Lines") or "")
    except LessonError as exc:
        raise exc.at(block.path, block.line_of("Lines"))
    want = items[0] if len(items) == 1 else None
    if want != (ex.start, ex.end):
        shown = block.get("Lines")
        raise LessonError(
            f"`Lines: {shown}` but the excerpt is at {line_span(ex.start, ex.end)}",
            path=block.path,
            line=block.line_of("Lines"),
            hint=f"write `Lines: {ex.start}-{ex.end}` or remove the line (beside a body it is only a locator)",
        )


def check_commit(block: Block, commit: str, known: bool = True) -> None:
    """A block's ``Commit:`` line names the pinned tree: a prefix of the commit, or where the pin
    records none (a release archive, ``known`` False), of the archive's sha256 that stands for it."""
    c = block.get("Commit")
    if c and not commit.lower().startswith(c.lower()):
        what = "commit" if known else "tree"
        hint = (
            f"this site is pinned to {commit[:7]} ({commit})"
            if known
            else f"the pinned release archive records no commit; its sha256 starts {commit[:7]} "
            "(write that, or remove the line)"
        )
        raise LessonError(
            f"`Commit: {c}` is not the pinned {what}", path=block.path, line=block.line_of("Commit"), hint=hint
        )


def based_on(tree: Tree, block: Block) -> Excerpt:
    value = block.get("Based-on")
    if value is None:
        raise LessonError("no `Based-on` line", path=block.path, line=block.line, hint="write `Based-on: FILE::SYMBOL`")
    file, symbol = (s.strip() for s in value.split("::", 1))
    try:
        sf = tree.file(file)
        d = sf.find(symbol)
    except LessonError as exc:
        raise exc.at(block.path, block.line_of("Based-on"))
    return Excerpt(tree.origin, sf.rel, symbol, d.start, d.end, tuple(sf.lines[d.start - 1 : d.end]))
