"""The rest of a written page: source-browser and script listings, line by line against their
files, and whatever claims to be the engine's outside what was checked (:mod:`lessonkit.site.shipped`).
"""

from __future__ import annotations

import re

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
from lessonkit.checks.tree import Doc
from lessonkit.errors import LessonError, Problem
from lessonkit.pipeline.imitations import INSTEAD

IMITATES = "raw HTML or a plugin imitates an engine block; write {instead} in the Markdown instead"
REBUILD = "build the site again (`lessonkit build`) before `verify --site`"
LINE_ID = re.compile(r"L(\d+)")
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
    codes = [k for k in range(box + 1, doc.end(box)) if doc.name(k) == "code"]
    if not codes:
        return [Problem(f"the source page of {file} has no code", where, None, HINT)]
    code_el = codes[0]
    marks = [k for k in doc.children(code_el) if doc.name(k) == "span" and doc.has_class(k, "lk-line")]
    bad = []
    for n, k in enumerate(marks):
        why = _line_problem(doc, k, n + 1)
        if why is not None:
            bad.append((n + 1, why))
            continue
        # the line's text, and what follows it up to the next line (its number and marks are empty)
        stop = doc.tstart[marks[n + 1]] if n + 1 < len(marks) else doc.tend[code_el]
        shown = "".join(doc.texts[t] for t in range(doc.tstart[k], stop) if not doc.hidden[t])
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
    first = doc.tstart[marks[0]] if marks else doc.tend[code_el]
    before = "".join(doc.texts[t] for t in range(doc.tstart[code_el], first) if not doc.hidden[t])
    outside = doc.text(box, [code_el]) + before
    if outside.strip():
        out.append(
            Problem(f"the source page of {file} shows text beside its code: {short(outside)!r}", where, None, HINT)
        )
    return out


def _line_problem(doc: Doc, k: int, n: int) -> str | None:
    """Why line element ``k`` is not line ``n`` as lessonkit writes it, or None: its id, then, first
    in it and empty, the link that draws its number (out of the Tab order, hidden from screen
    readers), the gutter marker of a cited range, the symbol anchors."""
    m = LINE_ID.fullmatch(doc.attrs(k).get("id", ""))
    number = int(m[1]) if m else None
    if number != n:
        return f"line {n} is numbered {number if number is not None else 'nothing'}"
    kids = list(doc.children(k))
    ln = {"class": "lk-ln", "href": f"#L{n}", "tabindex": "-1", "aria-hidden": "true"}
    if not kids or doc.name(kids[0]) != "a" or doc.attrs(kids[0]) != ln or not _empty(doc, kids[0]):
        return f"line {n}'s number is not lessonkit's"
    rest = kids[1:]
    if rest and doc.name(rest[0]) == "a" and doc.has_class(rest[0], "lk-cite-mark"):
        mark = doc.attrs(rest[0])
        if set(mark) != {"class", "href", "aria-label", "title"} or not mark["href"].startswith("#cited-"):
            return f"line {n}'s number is not lessonkit's"
        if not _empty(doc, rest[0]):
            return f"line {n}'s number is not lessonkit's"
    return None


def _empty(doc: Doc, i: int) -> bool:
    """Element ``i`` holds nothing (no element, no text)."""
    return doc.end(i) == i + 1 and doc.tstart[i] == doc.tend[i]


def imitations(check, doc: Doc, where: str, verified: list[int]) -> list[Problem]:
    """Elements, scripts and styles that claim to be the engine's outside what was checked."""
    memo = ("claims", tuple(sorted(verified)))
    if memo not in doc.memo:
        doc.memo[memo] = unchecked_claims(doc, ranges(doc, verified))
    reported = doc.memo[memo]
    out = [imitation(check, doc, i, where) for i in reported]
    for i in doc.raw:
        content = doc.raw_text(i)
        m = RAW_CLAIM.search(content)
        badge = next((x for x in check.badges if x in content), None)
        if m or badge:
            shown = m.group(0) if m else f"the badge \"{badge}\""
            out.append(
                Problem(
                    f"a <{doc.name(i)}> on the page carries {shown}, which only lessonkit's own blocks may show",
                    where,
                    None,
                    "raw HTML or a plugin imitates an engine block; remove it",
                )
            )
    if check.badges:
        spans = ranges(doc, verified + reported)
        for k, badge in _badged(check, doc):
            if inside(spans, k):
                continue
            attrs = doc.attrs(k)
            if "class" in attrs or "style" in attrs:
                out.append(
                    Problem(
                        f"an element shows the engine's badge \"{short(badge)}\" outside its blocks",
                        where,
                        None,
                        IMITATES.format(instead="the annotation block"),
                    )
                )
    return out


def _badged(check, doc: Doc) -> list[tuple[int, str]]:
    """The elements whose first child is a text that reads one of the engine's badges (spaces
    around it aside), with that badge."""
    badges = set(check.badges)
    if "badged" not in doc.memo:
        doc.memo["badged"] = [(k, t) for k, t in doc.first_text if doc.texts[t].strip() in badges]
    found = doc.memo["badged"]
    if doc.changed is not None:  # a changed text may now read a badge, or no longer
        found = [(k, t) for k, t in found if t != doc.changed]
        found += [(k, t) for k, t in doc.first_text if t == doc.changed and doc.texts[t].strip() in badges]
    return [(k, doc.texts[t].strip()) for k, t in sorted(found)]


def imitation(check, doc: Doc, i: int, where: str) -> Problem:
    classes = [c for c in doc.classes(i) if is_claim(c)]
    inner = {c for k in range(i, doc.end(i)) for c in doc.classes(k)} if classes else set()
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
