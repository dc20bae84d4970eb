"""Classify every block and experiment of a project against a target tree.

Every block is resolved against the pin with the build's code path
(:meth:`Project.resolve`) and against the target with the same
:func:`~lessonkit.source.resolve.excerpt_of` / :func:`~lessonkit.source.resolve.based_on`, and
classified as **unchanged** (same text, same lines), **moved** (same text, other
lines), **changed** (still resolves, text differs; with a diff) or **missing**
(file or symbol gone, by the error's code; with the closest candidates). Every
experiment runs against both trees (the target's outputs are cached apart, under
``<cache>/repin``) and their outputs are compared.
"""

from __future__ import annotations

import ast
import difflib
import re
import time
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

from lessonkit.errors import LessonError
from lessonkit.pipeline.blocks import Block, BrokenBlock
from lessonkit.project import Project
from lessonkit.repin import runs
from lessonkit.repin.acquire import Target
from lessonkit.repin.model import Item, _udiff
from lessonkit.run import runner as execute
from lessonkit.source import select
from lessonkit.source.pin import Pin
from lessonkit.source.pyindex import MISSING_SYMBOL, SELECTOR, SourceFile
from lessonkit.source.resolve import Excerpt, Tree, based_on, excerpt_of
from lessonkit.util.text import line_span

FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


@dataclass
class RepinReport:
    pin: Pin
    target: Target
    items: list[Item]
    titles: dict[str, str]  # page -> its title
    prose: list[tuple[str, int, str]]  # page, line, text naming the old version or commit
    files: dict[str, list[str]]  # "changed", "only-pin", "only-target": tree paths
    seconds: float = 0.0

    def counts(self, kinds: tuple[str, ...]) -> Counter:
        return Counter(i.status for i in self.items if i.kind in kinds)

    @property
    def attention(self) -> list[Item]:
        return [i for i in self.items if i.attention]

    @property
    def exit_code(self) -> int:
        return 1 if self.attention else 0


def _norm_symbol(symbol: str) -> str:
    m = SELECTOR.match(symbol.strip())
    if not m:
        return symbol.strip()
    try:
        return f"{m['func']}({ast.unparse(ast.parse(m['arg'], mode='eval').body)})"
    except SyntaxError:
        return symbol.strip()


class Index:
    """Every definition of every Python file of the target, built on first use."""

    def __init__(self, tree: Tree, manifest: dict[str, str]):
        self.tree = tree
        self.manifest = manifest
        self._defs: dict[str, list[str]] | None = None

    def where(self, symbol: str, but: str | None = None) -> list[str]:
        if self._defs is None:
            self._defs = {}
            for rel in sorted(self.manifest):
                if not rel.endswith(".py"):
                    continue
                try:
                    for d in self.tree.file(rel).definitions:
                        self._defs.setdefault(d.name, []).append(f"{rel} {line_span(d.start, d.end)}")
                except LessonError:
                    continue
        return [w for w in self._defs.get(_norm_symbol(symbol), []) if not (but and w.startswith(but + " "))]


def _missing_file(item: Item, file: str, symbol: str | None, index: Index) -> Item:
    base = file.rsplit("/", 1)[-1]
    names = sorted(index.manifest)
    cands = [f"{r} (same file name)" for r in names if r.rsplit("/", 1)[-1] == base and r != file]
    cands += [
        f"{r} (similar path)"
        for r in difflib.get_close_matches(file, names, n=3, cutoff=0.6)
        if not any(c.startswith(r + " ") for c in cands)
    ]
    if symbol:
        cands += [f"`{symbol}` is defined at {w}" for w in index.where(symbol)]
    return replace(item, status="missing", detail=f"no file `{file}` in the target", candidates=cands[:8])


def _missing_symbol(item: Item, sf: SourceFile, symbol: str, exc: LessonError, index: Index) -> Item:
    want = _norm_symbol(symbol)
    m = SELECTOR.match(want)
    try:
        defs = sf.definitions
    except LessonError:  # not parseable Python in the target
        defs = []
    if m:
        pool = [d for d in defs if d.kind == "call" and d.name.split("(", 1)[0] == m["func"]]
    else:
        pool = [d for d in defs if d.kind != "call"]
    names = sorted({d.name for d in pool})
    cands = [f"`{symbol}` is defined at {w}" for w in index.where(symbol, but=sf.rel)]
    for c in difflib.get_close_matches(want, names, n=4, cutoff=0.6):
        d = next(d for d in pool if d.name == c)
        cands.append(f"`{c}` at {sf.rel} {line_span(d.start, d.end)} (similar name)")
    if exc.code == MISSING_SYMBOL:
        return replace(
            item, status="missing", detail=f"no symbol `{symbol}` in {sf.rel} of the target", candidates=cands[:8]
        )
    # defined several times, or a selector that became ambiguous: it exists, but not as one definition
    return replace(
        item,
        status="changed",
        detail=f"{exc.problem.message} — {exc.problem.hint or ''}".rstrip(" —"),
        candidates=cands[:8],
    )


def _closest_window(old: Excerpt, sf: SourceFile) -> tuple[float, int]:
    n = len(old.lines)
    want = "\n".join(l.strip() for l in old.lines)
    best, at = 0.0, 0
    for k in range(0, max(1, len(sf.lines) - n + 1)):
        window = "\n".join(l.strip() for l in sf.lines[k : k + n])
        sm = difflib.SequenceMatcher(None, want, window, autojunk=False)
        if sm.real_quick_ratio() <= best or sm.quick_ratio() <= best:
            continue
        r = sm.ratio()
        if r > best:
            best, at = r, k
    return best, at


def _unresolved(
    item: Item,
    project: Project,
    ttree: Tree,
    index: Index,
    old: Excerpt,
    file: str,
    symbol: str | None,
    exc: LessonError,
    vs: str,
) -> Item:
    try:
        sf = ttree.file(file)
    except LessonError:
        return _missing_file(item, file, symbol, index)
    if symbol:
        try:
            d = sf.find(symbol)
        except LessonError as e:
            return _missing_symbol(item, sf, symbol, e, index)
        pin_sf = project.pinned.file(file)
        pd = pin_sf.find(symbol)
        diff = _udiff(
            pin_sf.lines[pd.start - 1 : pd.end],
            sf.lines[d.start - 1 : d.end],
            pd.start,
            d.start,
            f"{file} ({symbol}, {line_span(pd.start, pd.end)}) {vs[0]}",
            f"{file} ({symbol}, {line_span(d.start, d.end)}) {vs[1]}",
        )
        detail = (
            f"the quoted lines {line_span(old.start, old.end)} no longer occur verbatim in `{symbol}` "
            f"(now {line_span(d.start, d.end)}): {exc.problem.hint or exc.problem.message}"
        )
        return replace(item, status="changed", detail=detail, new=(d.start, d.end), diff=diff)
    ratio, k = _closest_window(old, sf)
    n = len(old.lines)
    closest = f"{sf.rel} {line_span(k + 1, k + n)} ({ratio:.0%} alike)"
    if ratio >= 0.6:
        diff = _udiff(
            old.lines,
            [l for l in sf.lines[k : k + n]],
            old.start,
            k + 1,
            f"{file} {line_span(old.start, old.end)} {vs[0]}",
            f"{file} {line_span(k + 1, k + n)} {vs[1]}",
        )
        return replace(
            item,
            status="changed",
            detail=f"the quoted lines no longer occur in {file}; closest: {closest}",
            new=(k + 1, k + n),
            diff=diff,
            candidates=[closest],
        )
    cands = [closest] + [f"{r} (same lines)" for r in _files_with_body(old, index)]
    return replace(item, status="missing", detail=f"the quoted lines no longer occur in {file}", candidates=cands)


def _files_with_body(old: Excerpt, index: Index) -> list[str]:
    first = next((l.strip() for l in old.lines if l.strip()), None)
    out: list[str] = []
    if not first:
        return out
    for rel in sorted(index.manifest):
        if rel == old.file or not rel.endswith((".py", ".md", ".txt")):
            continue
        try:
            text = (index.tree.root / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if first in text and all(l.strip() in text for l in old.lines):
            out.append(rel)
    return out[:4]


def _source_item(project: Project, ttree: Tree, index: Index, block: Block, based: bool, vs) -> Item:
    symbol: str | None
    if based:
        file, symbol = (s.strip() for s in (block.get("Based-on") or "::").split("::", 1))  # none: based_on says
        kind, line = "based-on", block.line_of("Based-on")
    else:
        file, symbol = block.get("File") or "", block.get("Symbol")  # the kind requires `File`
        kind, line = "real-source", block.line
    label = f"{file}::{symbol}" if symbol else f"{file} (quoted lines)"
    item = Item(block.path, line, kind, label, "error", block=block)
    try:
        old = based_on(project.pinned, block) if based else project.resolve(block).excerpt
    except LessonError as exc:
        hint = f" — {exc.problem.hint}" if exc.problem.hint else ""
        return replace(item, detail=f"does not resolve at the pin: {exc.problem.message}{hint}")
    if old is None:  # the kinds whose repin role is "source" resolve to an excerpt
        return replace(item, detail="does not resolve at the pin: it shows no excerpt")
    item = replace(item, old=(old.start, old.end))
    try:
        new = based_on(ttree, block) if based else excerpt_of(ttree, select.without_numbers(block, old))
    except LessonError as exc:
        return _unresolved(item, project, ttree, index, old, file, symbol, exc, vs)
    item = replace(item, new=(new.start, new.end))
    if new.lines == old.lines and len(new.spans) == len(old.spans):
        if (new.spans, new.elided) == (old.spans, old.elided):
            return replace(item, status="unchanged")
        rewrite = [f"`{k}:`" for k in ("Lines", "Emphasize") if not based and block.get(k)]
        loc = f" ({' and '.join(rewrite)} to rewrite)" if rewrite else ""
        if len(rewrite) == 1 and block.get("Lines"):
            loc = " (a `Lines:` locator to rewrite)"
        emph = None
        if not based and old.emphasize:
            moved_to = dict(zip(old.numbers(), new.numbers(), strict=False))
            emph = select.ranges([moved_to[n] for n in old.emphasize])
        span = f"{line_span(old.start, old.end)} → {line_span(new.start, new.end)}"
        if new.spans != ((new.start, new.end),) or old.spans != ((old.start, old.end),):
            span += f" (runs {_show_spans(old.spans)} → {_show_spans(new.spans)})"
        return replace(item, status="moved", detail=span + loc, emphasize=emph)
    diff = _udiff(
        old.lines,
        new.lines,
        old.start,
        new.start,
        f"{file} {line_span(old.start, old.end)} {vs[0]}",
        f"{file} {line_span(new.start, new.end)} {vs[1]}",
    )
    changed = sum(1 for l in diff if l[:1] in "+-" and not l.startswith(("+++", "---")))
    return replace(
        item,
        status="changed",
        diff=diff,
        detail=f"{line_span(old.start, old.end)} → {line_span(new.start, new.end)}, {changed} line(s) differ",
    )


def _show_spans(spans) -> str:
    return ", ".join(line_span(a, b) for a, b in spans)


def _title(text: str, fallback: str) -> str:
    """The page's first level-1 heading outside code fences."""
    fence = None
    for line in text.split("\n"):
        m = FENCE.match(line)
        if fence:
            if m and m[1][0] == fence[0] and len(m[1]) >= len(fence) and not line.strip()[len(m[1]) :]:
                fence = None
            continue
        if m:
            fence = m[1]
            continue
        if line.startswith("# "):
            return re.sub(r"\s*\{[^}]*\}\s*$", "", line[2:]).strip()
    return fallback


def _prose(project: Project, path: Path, text: str, parsed, pin: Pin, target: Target) -> list[tuple[str, int, str]]:
    pats = []
    if target.version != pin.version:
        pats.append(re.compile(r"(?<![\w.])" + re.escape(pin.version) + r"(?![\w]|\.\d)"))
    if target.commit != pin.commit:
        pats.append(re.compile(r"(?<![0-9a-fA-F])" + re.escape(pin.commit[:7]) + r"[0-9a-fA-F]*"))
    if not pats:
        return []
    inside: set[int] = set()
    for it in parsed.items:
        inside.update(range(it.start, it.end + 1))
    out = []
    for k, line in enumerate(text.split("\n")):
        if k not in inside and any(p.search(line) for p in pats):
            out.append((project.rel(path), k + 1, line.strip()))
    return out


def _tree_files_diff(pin: Pin, target: Target) -> dict[str, list[str]]:
    a, b = pin.manifest, target.manifest
    return {
        "changed": sorted(r for r in a if r in b and a[r] != b[r]),
        "only-pin": sorted(set(a) - set(b)),
        "only-target": sorted(set(b) - set(a)),
    }


def build_report(project: Project, target: Target, pages: list[Path] | None = None) -> RepinReport:
    """Resolve every block of every page against the pin and the target; run the experiments on both."""
    t0 = time.perf_counter()
    pin = project.pin
    _ = project.tree  # the pin first: a bad pinned tree is one clear error
    ttree = Tree(target.root, "target", allowed=None, label=f"the target {target.label} tree")
    index = Index(ttree, target.manifest)
    vs = (f"(pin, {pin.name} {pin.version})", f"(target, {target.label})")
    items: list[Item] = []
    titles: dict[str, str] = {}
    prose: list[tuple[str, int, str]] = []
    exps: list[tuple[Block, execute.Job]] = []
    parsed_pages = []
    for path in pages or project.pages():
        rel = project.rel(path)
        try:
            text = project.read_page(path)
        except LessonError as exc:
            items.append(Item(rel, exc.problem.line or 1, "page", rel, "error", detail=exc.problem.message))
            titles[rel] = rel
            continue
        titles[rel] = _title(text, rel)
        parsed = project.parse(path, text)
        parsed_pages.append(parsed)
        prose += _prose(project, path, text, parsed, pin, target)
        for it in parsed.items:
            if isinstance(it, BrokenBlock):
                p = it.error.problem
                items.append(
                    Item(
                        rel,
                        p.line or 1,
                        "page",
                        "annotation block",
                        "error",
                        detail=f"does not parse at the pin: {p.message}",
                    )
                )
        for block in parsed.blocks:
            for role in project.kinds.of(block).repin(block):  # the kind says what to compare
                if role in ("source", "based-on"):
                    items.append(_source_item(project, ttree, index, block, role == "based-on", vs))
                elif role == "experiment":
                    try:
                        job = project.resolve(block).job
                        if job is not None:  # an experiment resolves with its run
                            exps.append((block, job))
                    except LessonError as exc:
                        items.append(
                            Item(
                                rel,
                                block.line,
                                "experiment",
                                block.get("File") or f"{rel}:{block.line}",
                                "error",
                                detail=f"does not resolve at the pin: {exc.problem.message}",
                                block=block,
                            )
                        )
                else:
                    raise LessonError(
                        f"block kind `{block.kind}` asks repin for role `{role}`",
                        path=rel,
                        line=block.line,
                        hint="a kind's repin() returns roles from lessonkit.kinds.REPIN_ROLES",
                    )
    items += runs.experiment_items(project, target, exps, vs)
    from lessonkit.repin import prose as repin_prose  # inline references, snapshots, figures and recorded values

    items += repin_prose.items(project, ttree, target, parsed_pages, vs)
    items.sort(key=lambda i: (i.page, i.line, i.kind))
    return RepinReport(pin, target, items, titles, prose, _tree_files_diff(pin, target), time.perf_counter() - t0)
