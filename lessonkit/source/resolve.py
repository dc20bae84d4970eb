"""Stage 2: resolve a parsed block into an exact excerpt of a tree."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from lessonkit.errors import LessonError
from lessonkit.pipeline.parse import Block, check_rel_path
from lessonkit.source.pyindex import SourceFile
from lessonkit.util.store import Store


@dataclass(frozen=True)
class Excerpt:
    origin: str  # "pinned" (the pinned tree, e.g. autograd) or "repo" (this repository)
    file: str
    symbol: str | None
    start: int
    end: int
    lines: tuple[str, ...]  # shown text, uniform indentation removed

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

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
    """The excerpt a block shows: a whole symbol, a fragment of it, or a unique body."""
    try:
        sf = tree.file(block.get(file_key))
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
    if symbol:
        try:
            d = sf.find(symbol)
        except LessonError as exc:
            raise exc.at(block.path, block.line_of(symbol_key))
        region = sf.lines[d.start - 1 : d.end]
        lo = d.start
        where = f"{sf.rel} ({symbol}, L{d.start}-{d.end})"
    else:
        region, lo, where = sf.lines, 1, sf.rel
    if block.body is None:
        start, end, lines = lo, lo + len(region) - 1, tuple(region)
    else:
        hits = _matches(region, block.body)
        if not hits:
            if symbol:
                outside = _matches(sf.lines, block.body)
                if outside:
                    k = outside[0][0]
                    raise LessonError(
                        f"body is not inside `{symbol}`",
                        path=block.path,
                        line=block.body_line,
                        hint=f"it is at {sf.rel} L{k + 1}-{k + len(block.body)}, outside "
                        f"{symbol} (L{lo}-{lo + len(region) - 1}); fix the Symbol",
                    )
            raise _mismatch(region, block.body, lo, block.body_line, where).at(block.path, block.body_line)
        if len(hits) > 1:
            at = ", ".join(f"L{lo + k}" for k, _ in hits[:6])
            raise LessonError(
                f"body occurs {len(hits)} times in {where}",
                path=block.path,
                line=block.body_line,
                hint=f"at {at}; quote more lines or name a Symbol",
            )
        k, indent = hits[0]
        start, end = lo + k, lo + k + len(block.body) - 1
        lines = tuple(l[len(indent) :] if l.startswith(indent) else l.lstrip() for l in region[k : k + len(block.body)])
    lines = _dedent(lines)
    return Excerpt(tree.origin, sf.rel, symbol, start, end, lines)


def _dedent(lines: tuple[str, ...]) -> tuple[str, ...]:
    widths = [len(l) - len(l.lstrip(" ")) for l in lines if l.strip()]
    cut = min(widths) if widths else 0
    return tuple(l[cut:] if l.strip() else "" for l in lines)


def check_lines(block: Block, ex: Excerpt) -> None:
    want = block.lines_range
    if want and want != (ex.start, ex.end):
        raise LessonError(
            f"`Lines: {want[0]}-{want[1]}` but the excerpt is at L{ex.start}-{ex.end}",
            path=block.path,
            line=block.line_of("Lines"),
            hint=f"write `Lines: {ex.start}-{ex.end}` or remove the line (it is only a locator)",
        )


def check_commit(block: Block, commit: str) -> None:
    c = block.get("Commit")
    if c and not commit.lower().startswith(c.lower()):
        raise LessonError(
            f"`Commit: {c}` is not the pinned commit",
            path=block.path,
            line=block.line_of("Commit"),
            hint=f"this site is pinned to {commit[:7]} ({commit})",
        )


def based_on(tree: Tree, block: Block) -> Excerpt:
    value = block.get("Based-on")
    file, symbol = (s.strip() for s in value.split("::", 1))
    try:
        sf = tree.file(file)
        d = sf.find(symbol)
    except LessonError as exc:
        raise exc.at(block.path, block.line_of("Based-on"))
    return Excerpt(tree.origin, sf.rel, symbol, d.start, d.end, tuple(sf.lines[d.start - 1 : d.end]))
