"""Mutation check: proof that verify notices a change of one character in any cited region.

For every real-source entry of ``sourcemap/excerpts.json`` one character inside each shown
run of lines is changed (deterministically: the first letter, digit or symbol of the run's
middle line; an excerpt without elisions is one run, an elided one or one without its
docstring has several, and each is checked as an excerpt of its own). The mutation counts as caught only if both
defences notice it:

1. the manifest check fails on a copy of the pinned tree holding the mutated file,
   naming that file: :func:`lessonkit.source.pin.check_file` (what the build's
   :func:`~lessonkit.source.pin.check_tree` runs for each file) for every mutant, and the
   whole :func:`~lessonkit.source.pin.check_tree` once per file. The tree is copied once
   per run; each mutant is written into the copy and undone;
2. re-resolving the block that cites the region against the mutated bytes, with
   the manifest out of the way, gives an excerpt whose sha256 differs from the map,
   or an error. The mutated file is served from memory by a :class:`Tree` subclass.

``python -m lessonkit mutate`` prints one line per mutation that is not caught and
``mutations: N/N caught (100%)``; it exits non-zero unless every mutation is caught.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from lessonkit.config import maps
from lessonkit.errors import LessonError, Problem
from lessonkit.pipeline.blocks import Block
from lessonkit.project import Project
from lessonkit.source.pin import check_file, check_tree
from lessonkit.source.pyindex import SourceFile
from lessonkit.source.resolve import Tree, check_lines, excerpt_of
from lessonkit.util.text import lines as text_lines

HINT = "verify would miss this change; strengthen the manifest or the resolver"


@dataclass(frozen=True)
class Mutation:
    file: str
    line: int  # 1-based line of the changed character
    column: int  # 1-based
    old: str
    new: str
    data: bytes  # the whole mutated file

    def describe(self) -> str:
        return f"{self.file} L{self.line}:{self.column} {self.old!r}→{self.new!r}"


@dataclass(frozen=True)
class Outcome:
    page: str
    block: int
    page_line: int | None
    mutation: Mutation | None
    manifest_caught: bool
    resolve_caught: bool
    detail: str  # how it was caught, or why not

    @property
    def caught(self) -> bool:
        return self.manifest_caught and self.resolve_caught

    def problem(self) -> Problem:
        what = self.mutation.describe() if self.mutation else "no mutation"
        return Problem(f"mutation not caught: {what} ({self.detail})", self.page, self.page_line, HINT)


@dataclass
class MutationReport:
    outcomes: list[Outcome]
    problems: list[Problem]  # stale map entries and the like: the check could not run

    @property
    def caught(self) -> int:
        return sum(1 for o in self.outcomes if o.caught)

    @property
    def ok(self) -> bool:
        return not self.problems and self.caught == len(self.outcomes)

    def summary(self) -> str:
        n = len(self.outcomes)
        pct = 100.0 * self.caught / n if n else 100.0
        return f"mutations: {self.caught}/{n} caught ({pct:.0f}%)"


def _swap(ch: str) -> str:
    if ch.isdigit():
        return str((int(ch) + 1) % 10) if ch.isascii() else "0"
    if ch.isalpha():
        if ch.isascii():
            return "b" if ch == "a" else "B" if ch == "A" else ("a" if ch.islower() else "A")
        return "x"
    return "#" if ch != "#" else "@"


def mutate(data: bytes, rel: str, start: int, end: int) -> Mutation:
    """Change one character inside lines ``start..end`` (1-based, inclusive) of ``data``."""
    text = data.decode("utf-8")
    lines = text_lines(text, keepends=True)
    if not (1 <= start <= end <= len(lines)):
        raise LessonError(
            f"L{start}-{end} is outside {rel} ({len(lines)} lines)",
            hint="the excerpt map is stale; run `lessonkit verify --update-map`",
        )
    middle = (start + end) // 2
    order = [middle] + [n for n in range(start, end + 1) if n != middle]
    for n in order:
        body = lines[n - 1].rstrip("\r\n")
        col = next((i for i, c in enumerate(body) if c.isalnum()), None)
        if col is None:
            col = next((i for i, c in enumerate(body) if not c.isspace()), None)
        if col is None:
            continue
        old = body[col]
        new = _swap(old)
        lines[n - 1] = lines[n - 1][:col] + new + lines[n - 1][col + 1 :]
        return Mutation(rel, n, col + 1, old, new, "".join(lines).encode("utf-8"))
    raise LessonError(
        f"{rel} L{start}-{end} has no visible character to change",
        hint="the excerpt map is stale; run `lessonkit verify --update-map`",
    )


class MutatedTree(Tree):
    """The pinned tree without its manifest, with one file served from mutated bytes."""

    def __init__(self, base: Tree, mutation: Mutation):
        super().__init__(base.root, base.origin, allowed=None, prefixes=base.prefixes, label=base.label)
        self.mutation = mutation

    def _read(self, rel: str) -> SourceFile:
        if rel == self.mutation.file:
            return SourceFile(rel, self.mutation.data)
        return super()._read(rel)


def _resolve(tree: Tree, block: Block):
    ex = excerpt_of(tree, block)
    check_lines(block, ex)
    return ex


def run(project: Project, pages: set[str] | None = None) -> MutationReport:
    """Mutate every cited real-source region of the excerpt map once; see the module docstring."""
    map_path = project.sourcemap / "excerpts.json"
    map_rel = project.rel(map_path)
    recorded = maps.read_excerpt_map(map_path, map_rel)  # every entry's shape checked
    entries = [e for e in recorded["excerpts"] if e["kind"] == "real-source"]
    if pages is not None:
        entries = [e for e in entries if e["page"] in pages]
    pin = project.pin
    pinned = project.pinned  # provides the tree and checks it against the manifest first
    parsed: dict[str, dict[int, Block]] = {}
    report = MutationReport([], [])
    whole_tree_checked: set[str] = set()
    work = Path(tempfile.mkdtemp(prefix="lessonkit-mutate-"))
    try:
        copy = work / "tree"
        shutil.copytree(project.tree.root, copy, symlinks=True)
        for e in entries:
            page, ordinal, rel = e["page"], e["block"], e["file"]
            if page not in parsed:
                try:
                    parsed[page] = {b.ordinal: b for b in project.parse(project.root / page).blocks}
                except (LessonError, OSError) as exc:
                    report.problems.append(
                        Problem(
                            f"cannot read the page of a map entry: {exc}", map_rel, None, "run `lessonkit verify` first"
                        )
                    )
                    parsed[page] = {}
            block = parsed[page].get(ordinal)
            stale = Problem(
                f"the excerpt map entry for block {ordinal} of {page} is stale",
                page,
                block.line if block else None,
                "run `lessonkit verify` first; the mutation check needs a map that matches the pages",
            )
            try:
                if block is None or block.kind != "real-source" or _resolve(pinned, block).sha256 != e["sha256"]:
                    report.problems.append(stale)
                    continue
                original = (copy / rel).read_bytes()
                mutants = [mutate(original, rel, a, b) for a, b in e.get("runs") or [e["lines"]]]
            except LessonError as exc:
                report.problems += exc.at(page, block.line if block else None).problems
                continue
            for m in mutants:
                report.outcomes.append(_check(copy, pin, pinned, block, e, m, original, whole_tree_checked))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report


def _check(copy: Path, pin, pinned: Tree, block: Block, e: dict, m: Mutation, original: bytes, checked: set) -> Outcome:
    """Whether both defences notice one mutant (see the module docstring)."""
    rel = m.file
    # 1. the manifest check, on the one copy of the tree, with only this file changed:
    #    the per-file check for every mutant, the whole-tree check once per file
    (copy / rel).write_bytes(m.data)
    try:
        what = check_file(copy, rel, pin)
        manifest_caught, how = what is not None, f"manifest: {what or 'the file check passed'}"
        if manifest_caught and rel not in checked:
            checked.add(rel)
            try:
                check_tree(copy, pin, "mutation check copy")
                manifest_caught, how = False, "manifest: the tree check passed"
            except LessonError as exc:
                manifest_caught = any(rel in p.message for p in exc.problems)
                if not manifest_caught:
                    how = "manifest: the tree check fails without naming the file"
    finally:
        (copy / rel).write_bytes(original)
    # 2. resolution of the same block against the mutated bytes, no manifest
    try:
        ex = _resolve(MutatedTree(pinned, m), block)
        resolve_caught = ex.sha256 != e["sha256"]
        how += "; resolve: " + ("sha256 differs" if resolve_caught else "same sha256 as the map")
    except LessonError as exc:
        resolve_caught = True
        how += f"; resolve: error ({exc.problem.message[:60]})"
    return Outcome(e["page"], e["block"], block.line, m, manifest_caught, resolve_caught, how)


# ---------------------------------------------------------------- the written site (verify --site)


@dataclass(frozen=True)
class SiteOutcome:
    file: str  # the HTML file, in the site folder
    target: str  # what was changed, e.g. "real-source block autograd/core.py L25–L32"
    spot: tuple[int, int]  # (text node of the page's document, character in it)
    old: str
    new: str
    detail: str  # the first problem verify --site reported, or why nothing was caught
    caught: bool

    def problem(self) -> Problem:
        return Problem(
            f"site mutation not caught: {self.target}, {self.old!r}→{self.new!r} at character {self.spot[1]} of "
            f"text {self.spot[0]} "
            f"({self.detail})",
            self.file,
            None,
            "verify --site would miss this change; strengthen lessonkit.site.shipped",
        )


@dataclass
class SiteMutationReport:
    outcomes: list[SiteOutcome]

    @property
    def caught(self) -> int:
        return sum(1 for o in self.outcomes if o.caught)

    @property
    def ok(self) -> bool:
        return self.caught == len(self.outcomes)

    def summary(self) -> str:
        n = len(self.outcomes)
        pct = 100.0 * self.caught / n if n else 100.0
        return f"mutations: {self.caught}/{n} caught ({pct:.0f}%)"


def _visible(doc, i: int, skip=()) -> list[tuple[int, int]]:
    """(text node, character) of every letter and digit a reader sees in element ``i`` outside the
    elements ``skip``."""
    return [(t, c) for t in doc.visible(i, skip) for c, ch in enumerate(doc.texts[t]) if ch.isalnum()]


def site_targets(check) -> list[tuple[str, str, tuple[int, int]]]:
    """(file, what, (text node, character)): one character to change in each real-source block's code, each
    experiment's output, each teaching block's disclaimer, each figure's caption, each snapshot's
    recorded cells and each source page's code; the files in :func:`target_files` order."""
    return [(rel, what, offset) for rel in target_files(check) for what, offset in page_targets(check, rel)]


def target_files(check) -> list[str]:
    """The HTML files that site mutations change: the lessons' pages (by path), then the source pages."""
    rels = [rel for rel, page in sorted(check.pages.items()) if page in check.expected and rel in check.files]
    rels += [rel for rel in sorted(check.record["code_pages"]) if rel in check.files]
    return list(dict.fromkeys(rels))


WANT = {"real-source": "highlight", "experiment": "lk-output", "teaching-simplification": "lk-disclaimer"}
WHATS = {"highlight": "the code of", "lk-output": "the output of", "lk-disclaimer": "the disclaimer of"}


def page_targets(check, rel: str) -> list[tuple[str, tuple[int, int]]]:
    """(what, (text node, character)) of one file's site mutations (see :func:`site_targets`)."""
    from lessonkit.checks.tree import Doc

    out: list[tuple[str, tuple[int, int]]] = []
    if rel not in check.files:
        return out
    doc = check.docs.get(rel) or Doc(check.files[rel].decode("utf-8", "replace"))
    page = check.pages.get(rel)
    if page is not None and page in check.expected:
        ids: dict[str | None, int] = {}
        for t in range(len(doc)):
            if "id" in doc.attrs(t) and any(c.startswith("lk-") for c in doc.classes(t)):
                ids.setdefault(doc.attrs(t).get("id"), t)
        for exp in check.expected[page]:
            i = ids.get(exp.anchor)
            if i is not None:
                out += _block_targets(doc, i, exp)
    code = check.record["code_pages"].get(rel)
    if code is not None:
        box = next((i for i in range(len(doc)) if doc.has_class(i, "lk-source")), None)
        if box is not None:
            skip = [k for k in range(box + 1, doc.end(box)) if {"lk-ln", "lk-cite-mark"} & set(doc.classes(k))]
            spots = _visible(doc, box, skip)
            if spots:
                out.append((f"the source page of {code[1]}", spots[len(spots) // 2]))
    return out


def _block_targets(doc, i: int, exp) -> list[tuple[str, tuple[int, int]]]:
    """The site mutations of one engine block, element ``i`` of the page."""
    kind = exp.r.kind.name
    if kind in ("figure", "snapshot"):
        spot = _drawn_spot(doc, i, kind)
        what = "the caption of" if kind == "figure" else "a recorded cell of"
        return [(f"{what} {_site_what(exp)}", spot)] if spot is not None else []
    if kind not in WANT:
        return []
    found = [j for j in range(i + 1, doc.end(i)) if doc.has_class(j, WANT[kind])]
    # every run of a real-source block's code (elided runs, a recall's full version) apart
    parts = found if kind == "real-source" else found[:1]
    out = []
    for n, part in enumerate(parts, 1):
        skip = [k for k in range(part + 1, doc.end(part)) if doc.has_class(k, "linenos")]
        spots = _visible(doc, part, skip)
        if spots:
            target = WHATS[WANT[kind]] + " " + _site_what(exp) + (f" (code run {n})" if len(parts) > 1 else "")
            out.append((target, spots[len(spots) // 2] if kind != "teaching-simplification" else spots[0]))
    return out


def _drawn_spot(doc, i: int, kind: str) -> tuple[int, int] | None:
    """One character of what a figure's caption (its author's words and recorded values, not the
    line naming the script; else its drawing) or a snapshot's first recorded cell shows."""
    stop = doc.end(i)
    if kind == "figure":
        caps = [j for j in range(i + 1, stop) if doc.name(j) == "figcaption"]
        skip = [k for k in range(i + 1, stop) if doc.has_class(k, "lk-fig-source")]
        spots = _visible(doc, caps[0], skip) if caps else []
        if not spots:
            svg = next((j for j in range(i + 1, stop) if doc.name(j) == "svg"), None)
            spots = _visible(doc, svg) if svg is not None else []
    else:
        cells = [j for j in range(i + 1, stop) if {"lk-generated", "lk-checked"} & set(doc.classes(j))]
        spots = _visible(doc, cells[0]) if cells else []
    return spots[len(spots) // 2] if spots else None


def _site_what(exp) -> str:
    r = exp.r
    if r.kind.name == "real-source":
        return f"real-source block {r.excerpt.file} L{r.excerpt.start}–L{r.excerpt.end}"
    return f"{r.kind.name} block #{exp.anchor} ({r.block.path}:{r.block.line})"


def check_site(check, mutate: bool, split: bool = True):
    """``verify --site`` (:meth:`lessonkit.site.shipped.SiteCheck.run`) and, with ``mutate``, the
    site mutations in one pass over the pages: each page is checked, then, if it passed, mutated
    by the same process, which keeps its scan and finds its targets from it (see
    :func:`_mutate_page`: one character of what each engine element shows, changed in a copy of
    the page's HTML, must be reported by :meth:`lessonkit.site.shipped.SiteCheck.page`).

    With ``split`` (and a second core, and the ``fork`` start method, and no other thread in this
    process), a forked copy of this process takes every other page: it has the whole check as it
    is, nothing is computed twice; pages whose helper ended without a result are done here.
    Returns the site report (problems, counts, in the order one process gives) and the mutation
    report (None without ``mutate``, or when the site has problems: there is nothing to mutate
    then), its outcomes in page order either way."""
    rep = check.folder()
    if rep is None:
        return check.new_report(check.problems), None
    check.problems += check.svg_files()  # the folder's SVG documents, as SiteCheck.run reads them
    done = _by_page(check, list(check.files), lambda c, rel: _page_pass(c, rel, mutate), split)
    muts: dict[str, tuple] = {}
    for rel, (problems, counts, mutated) in done.items():
        check.problems += problems
        rep.files, rep.blocks = rep.files + counts[0], rep.blocks + counts[1]
        rep.code_pages, rep.lines = rep.code_pages + counts[2], rep.lines + counts[3]
        if mutated is not None:
            muts[rel] = mutated
    if not mutate or check.problems:
        return rep, None
    outcomes = [o for rel in target_files(check) for o in muts.get(rel, [])]  # page order
    return rep, SiteMutationReport(outcomes)


def _page_pass(check, rel: str, mutate: bool):
    """One file of :func:`check_site`: (its problems, its counts, its mutations or None)."""
    counts = check.new_report([])
    problems = check.check_file(rel, counts)
    mutated = None
    if mutate and not problems:
        mutated = _mutate_page(check, rel, page_targets(check, rel))
    return problems, (counts.files, counts.blocks, counts.code_pages, counts.lines), mutated


def _by_page(check, rels: list[str], work, split: bool) -> dict:
    """``work(check, rel)`` of every file of ``rels``, by file in that order; with ``split``, a
    forked copy of this process does every other one (see :func:`check_site`), and what it did not
    send is done here."""
    share = rels[1::2]
    helper = _start_share(check, share, work) if split and share else None
    mine = rels[0::2] if helper else rels
    done = {rel: work(check, rel) for rel in mine}
    if helper is not None:
        got = _share_result(*helper)
        for rel in share:
            done[rel] = got[rel] if got is not None and rel in got else work(check, rel)
    return {rel: done[rel] for rel in rels}


def _mutate_page(check, rel: str, targets) -> list[SiteOutcome]:
    """The site mutations of one page, which has just passed the site check unchanged: their
    outcomes. Each changes one letter or digit of a text node of the browser's document of the
    page, which is then checked as it is written out (the document serialized, its elements kept)."""
    from lessonkit.checks.tree import Doc

    doc = check.docs.get(rel) or Doc(check.files[rel].decode("utf-8", "replace"))
    outcomes = []
    for target, (t, c) in targets:
        text = doc.texts[t]
        old = text[c]
        new = _swap(old)  # a letter or digit for a letter or digit: no element changes
        with doc.swapped(t, text[:c] + new + text[c + 1 :]) as mutated:
            found = check.page(rel, mutated.html, doc=mutated)
        detail = found[0].message if found else "verify --site reported nothing"
        outcomes.append(SiteOutcome(f"{check.label}/{rel}", target, (t, c), old, new, detail, bool(found)))
    return outcomes


def _share_worker(check, share, work, conn) -> None:
    """In the forked helper: ``work`` of ``share``'s pages, sent as one dict (rel -> result)."""
    from lessonkit.run.box import sandbox

    sandbox.helper_process()  # dies with verify; Ctrl-C is verify's to handle
    try:
        conn.send({rel: work(check, rel) for rel in share})
    except Exception:  # noqa: BLE001 (verify does these pages itself)
        pass
    conn.close()


def _start_share(check, share, work):
    """Fork :func:`_share_worker` for ``share``: (process, our end of its pipe), or None when it
    cannot be forked safely or usefully (one core; no ``fork``; another thread in this process)."""
    import multiprocessing
    import os
    import threading

    from lessonkit.run.box import sandbox

    if (os.cpu_count() or 1) < 2 or threading.active_count() > 1:
        return None
    if "fork" not in multiprocessing.get_all_start_methods():
        return None
    return sandbox.start_piped_helper("fork", _share_worker, (check, share, work), "lessonkit-site-mutate")


def _share_result(proc, conn) -> dict | None:
    """What the helper sent, or None when it ended without a result."""
    try:
        got = conn.recv()
    except (EOFError, OSError):
        got = None
    finally:
        conn.close()
    proc.join()
    return got if isinstance(got, dict) else None
