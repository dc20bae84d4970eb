"""Stage 2: resolve a parsed block into an exact excerpt of a tree."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from itertools import pairwise
from pathlib import Path

from lessonkit.errors import LessonError
from lessonkit.pipeline.blocks import Block, check_rel_path
from lessonkit.source import select
from lessonkit.source.matching import body_runs, picked_runs, selects_lines, trim, without_docstring
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


def excerpt_of(tree: Tree, block: Block, file_key: str = "File", symbol_key: str = "Symbol") -> Excerpt:
    """The excerpt a block shows: a whole symbol, lines of it or of the file (``Lines`` alone,
    ``Start-*``/``End-*`` patterns), or a body (runs between elision lines, each verbatim);
    then ``Tab-width``, ``Docstring``, ``Dedent`` and ``Emphasize`` (see :mod:`lessonkit.source.select`)."""
    try:
        sf = tree.file(block.get(file_key) or "")  # none: the empty path's error, at the block
    except LessonError as exc:
        raise exc.at(block.path, block.line_of(file_key)) from None
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
            raise exc.at(block.path, block.line_of("Which" if exc.code == WHICH else symbol_key)) from None
        region = sf.lines[d.start - 1 : d.end]
        lo = d.start
        where = f"{sf.rel} ({symbol}, {line_span(d.start, d.end)})"
    else:
        region, lo, where = sf.lines, 1, sf.rel
    try:
        tabs = select.tab_width(block.get("Tab-width"))
    except LessonError as exc:
        raise exc.at(block.path, block.line_of("Tab-width")) from None
    region = select.expand_tabs(region, tabs)  # a body and the patterns match the text as shown
    if any(block.get(k) for k in select.PATTERNS):
        region, lo = select.narrow(region, lo, block, where)
    elided: list[tuple[int, int]] = []
    if block.body is None:
        picked = picked_runs(sf, block, d)
        if picked:
            runs = picked
            elided = [(x + 1, y - 1) for (_, x), (y, _) in pairwise(runs) if y - x > 1]
        else:
            runs = [trim(sf, lo, lo + len(region) - 1)]
        if d is not None and block.get("Docstring") == "hide":
            runs, elided = without_docstring(sf, d, block)
    else:
        runs, elided = body_runs(sf, region, lo, block, symbol, where, d)
    originals = [select.expand_tabs(sf.lines[a - 1 : b], tabs) for a, b in runs]
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
        raise exc.at(block.path, block.line_of("Dedent")) from None
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
            raise exc.at(block.path, block.line_of("Emphasize")) from None
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


def check_lines(block: Block, ex: Excerpt) -> None:
    """``Lines`` beside a body or ``Start-*``/``End-*`` patterns: the one range the excerpt is at."""
    if selects_lines(block) or not block.get("Lines"):
        return
    try:
        items = select.line_items(block.get("Lines") or "")
    except LessonError as exc:
        raise exc.at(block.path, block.line_of("Lines")) from None
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
        raise exc.at(block.path, block.line_of("Based-on")) from None
    return Excerpt(tree.origin, sf.rel, symbol, d.start, d.end, tuple(sf.lines[d.start - 1 : d.end]))
