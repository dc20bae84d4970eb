"""The rest of a written page: source-browser and script listings, line by line against their
files, and whatever claims to be the engine's outside what was checked (:mod:`lessonkit.site.shipped`).
"""

from __future__ import annotations

import bisect
import re
from html import unescape

from lessonkit.checks.htmlscan import TAG, Doc
from lessonkit.checks.shown import (
    HINT,
    META,
    first_difference,
    inside,
    is_claim,
    meta_of,
    parts,
    ranges,
    short,
    unchecked_claims,
)
from lessonkit.errors import LessonError, Problem
from lessonkit.pipeline.parse import INSTEAD

IMITATES = "raw HTML or a plugin imitates an engine block; write {instead} in the Markdown instead"
REBUILD = "build the site again (`lessonkit build`) before `verify --site`"
LINE = re.compile(r'<span id="L(\d+)" class="lk-line(?: lk-cited)?">')
# a line's start: its number (drawn by CSS from an empty link), the gutter marker of a cited range
# (empty: its names are attributes), the symbol anchors
LN = re.compile(
    r'^<a class="lk-ln" href="#L(\d+)" tabindex="-1" aria-hidden="true"></a>'
    r'(?:<a class="lk-cite-mark" href="#cited-[^"<>]*" aria-label="[^"<>]*" title="[^"<>]*"></a>)?'
    r'(?:<span class="lk-sym" id="sym-[^"<>]*"></span>)*'
)
RAW_CLAIM = re.compile(r"\blk-(?:block|real-source|teaching|experiment|badge|disclaimer|output|source|value)\b")


def source_page(check, doc: Doc, where: str, code, roots: list[int], verified: list[int], rep) -> list[Problem]:
    """A source-browser or script page (``code``: origin and file): one listing, its lines numbered
    1…N in order, each line's text (its number, gutter marker and anchors are empty elements) the
    file's line, so that the code element's text is the file's."""
    origin, file = code
    rep.code_pages += 1
    from lessonkit.site.pages import code_file

    try:
        text = code_file(check.project, origin, file).text
    except (LessonError, OSError) as exc:
        return [Problem(f"cannot read {file}: {exc}", where, None, REBUILD)]
    want = text.split("\n")
    if want and want[-1] == "":
        want.pop()
    source = "the pinned source" if origin == "pinned" else f"this repository's {file}"
    boxes = [i for i in roots if doc.name(i) == "div" and "lk-source" in doc.classes(i)]
    if len(boxes) != 1:
        return [Problem(f"the source page of {file} shows {len(boxes)} code listing(s), not one", where, None, HINT)]
    box = boxes[0]
    verified.append(box)
    codes = [k for k in range(box + 1, doc.close_of(box)) if doc.name(k) == "code" and not doc.closing(k)]
    if not codes:
        return [Problem(f"the source page of {file} has no code", where, None, HINT)]
    a, b = doc.inner(codes[0])
    inner = doc.html[a:b]
    marks = list(LINE.finditer(inner))
    bad = []
    for n, m in enumerate(marks):
        seg = inner[m.end() : marks[n + 1].start() if n + 1 < len(marks) else len(inner)]
        ln = LN.match(seg)
        number = int(m[1])
        if ln is None or int(ln[1]) != number or number != n + 1:
            bad.append(
                (
                    n + 1,
                    f"line {n + 1} is numbered {m[1]}"
                    if number != n + 1
                    else f"line {number}'s number is not lessonkit's",
                )
            )
            continue
        shown = TAG.sub("", seg[ln.end() :])
        shown = unescape(shown) if "&" in shown else shown
        expected = want[n] if n < len(want) else None
        if expected is None or shown not in (expected + "\n", expected if n == len(want) - 1 else None):
            bad.append((n + 1, f"line {n + 1}: {short(shown)!r} instead of {short(expected or '')!r}"))
    rep.lines += len(marks)
    out = []
    if len(marks) != len(want):
        out.append(
            Problem(f"the source page of {file} shows {len(marks)} lines; {source} has {len(want)}", where, None, HINT)
        )
    if bad:
        out.append(
            Problem(
                f"the source page of {file} differs from {source} ({bad[0][1]}; {len(bad)} line(s) differ)",
                where,
                None,
                HINT,
            )
        )
    outside = doc.text(doc.tags[box].end(), doc.tags[codes[0]].start()) + doc.text(
        doc.span(codes[0])[1], doc.inner(box)[1]
    )
    if outside.strip():
        out.append(
            Problem(f"the source page of {file} shows text beside its code: {short(outside)!r}", where, None, HINT)
        )
    return out


def imitations(check, doc: Doc, where: str, verified: list[int]) -> list[Problem]:
    """Elements, scripts and styles that claim to be the engine's outside what was checked."""
    memo = ("claims", tuple(sorted(verified)))
    if memo not in doc.memo:
        doc.memo[memo] = unchecked_claims(doc, ranges(doc, verified))
    reported = doc.memo[memo]
    out = [imitation(check, doc, i, where) for i in reported]
    for name, a, b in doc.raw:
        m = RAW_CLAIM.search(doc.html, a, b)
        badge = next((x for x in check.badges if x in doc.html[a:b]), None)
        if m or badge:
            shown = m.group(0) if m else f"the badge \"{badge}\""
            out.append(
                Problem(
                    f"a <{name}> on the page carries {shown}, which only lessonkit's own blocks may show",
                    where,
                    None,
                    "raw HTML or a plugin imitates an engine block; remove it",
                )
            )
    found = list(check.badge_re.finditer(doc.html)) if check.badge_re is not None else []
    if found:
        ends = doc.memo.get("ends") or doc.memo.setdefault("ends", [m.end() for m in doc.tags])
        spans = sorted(doc.span(j) for j in verified + reported)
        for m in found:
            k = bisect.bisect_right(ends, m.start() + 1) - 1
            if k < 0 or doc.tags[k].end() != m.start() + 1 or doc.closing(k) or inside(spans, m.start()):
                continue
            attrs = doc.attrs(k)
            if "class" in attrs or "style" in attrs:
                out.append(
                    Problem(
                        f"an element shows the engine's badge \"{short(m.group(0)[1:-1])}\" outside its blocks",
                        where,
                        None,
                        IMITATES.format(instead="the annotation block"),
                    )
                )
    return out


def imitation(check, doc: Doc, i: int, where: str) -> Problem:
    classes = [c for c in doc.classes(i) if is_claim(c)]
    inner = {c for k in range(i, doc.close_of(i)) if not doc.closing(k) for c in doc.classes(k)} if classes else set()
    instead = next((what for names, what in INSTEAD if any(c in names for c in inner)), "an annotation block")
    hint = IMITATES.format(instead=instead)
    if "lk-real-source" in inner:
        meta = meta_of(doc, i)
        m = META.match(meta) if meta else None
        claim = f" ({m['file']} L{m['a']}–L{m['b']})" if m else ""
        code = next((t for n, t, _ in parts(doc, i) if n == "code"), None)
        tail = ""
        if m and code is not None:
            pinned = check.pinned_text(m["file"], int(m["a"]), int(m["b"]))
            if pinned is None:
                tail = f"; {m['file']} is not a file of the pinned tree"
            elif code != pinned:
                tail = f"; its code is not the pinned source ({first_difference(code, pinned, int(m['a']))})"
        return Problem(
            f"an element claims to be a REAL SOURCE block{claim} that lessonkit did not emit{tail}",
            where,
            None,
            hint,
        )
    return Problem(f"an element with the engine class {classes[0]} that lessonkit did not emit", where, None, hint)
