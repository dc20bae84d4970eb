"""What an element of a written page shows, as a reader sees it, and how it differs from what
lessonkit emitted (:mod:`lessonkit.site.shipped`): the engine's classes, an element's parts and
their text, one block compared with its rendering, a snapshot's recorded cells, recorded values
in prose.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from html import unescape

from lessonkit.checks.htmlscan import TAG, Doc
from lessonkit.errors import Problem

CLAIMS = frozenset(
    "lk-block lk-real-source lk-teaching lk-experiment lk-snapshot lk-figure lk-error lk-head lk-badge lk-meta "
    "lk-links lk-disclaimer lk-purpose lk-output-label lk-output-wrap lk-output lk-truncated lk-provenance "
    "lk-script lk-snapshot-title lk-snapshot-table lk-generated lk-checked lk-fig-source lk-source lk-line lk-ln "
    "lk-cited lk-cites lk-sym lk-value".split()
)
PARTS = ("lk-head", "lk-disclaimer", "lk-purpose", "lk-output-label", "lk-output", "lk-truncated", "lk-provenance")
ROOTS = {"snapshot": ("div", frozenset({"lk-block", "lk-snapshot"})), "figure": ("figure", frozenset({"lk-figure"}))}
HINT = "something after lessonkit changed the page (a hook, plugin or cache); rebuild with a clean cache"
META = re.compile(r"^(?P<file>\S+) · (?:.+ · )?[0-9a-f]{7,40} · L(?P<a>\d+)–L(?P<b>\d+)$")


def is_claim(cls: str) -> bool:
    """``cls`` is one of the classes only lessonkit's own output may carry."""
    return cls in CLAIMS or cls.startswith("lk-badge-")


def short(text: str, limit: int = 70) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def first_difference(shown: str, want: str, first: int = 1) -> str:
    """``line N: "shown" instead of "wanted"`` for the first line that differs (N counted from ``first``)."""
    a, b = shown.split("\n"), want.split("\n")
    for k in range(max(len(a), len(b))):
        x, y = (a[k] if k < len(a) else None), (b[k] if k < len(b) else None)
        if x != y:
            if x is None:
                return f"line {first + k}: missing, it is {short(y)!r}"
            if y is None:
                return f"line {first + k}: {short(x)!r}, an extra line"
            return f"line {first + k}: {short(x)!r} instead of {short(y)!r}"
    return "the same lines, other characters"


def _layout(doc: Doc, i: int) -> list[tuple[str, int, int, list]]:
    """Where element ``i``'s parts are: ``(part, start, end, skip)`` (see :func:`parts`)."""
    key = ("layout", i)
    if key in doc.memo:
        return doc.memo[key]
    out = []
    pos, end = doc.inner(i)
    stop, j = doc.close_of(i), i + 1
    while j < stop:
        m = doc.tags[j]
        if not m[1] and m[2].lower() in ("div", "p", "pre") and "class" in m[3].lower():
            cls = doc.classes(j)
            name = "code" if "highlight" in cls else next((p for p in PARTS if p in cls), None)
            if name is not None:
                a, b = doc.span(j)
                out.append(("rest", pos, a, []))
                if name == "code":
                    skip = [
                        doc.span(k)
                        for k in range(j + 1, doc.close_of(j))
                        if "linenos" in doc.tags[k][3] and "linenos" in doc.classes(k)
                    ]
                    out.append((name, doc.tags[j].end(), b, skip))
                else:
                    out.append((name, *doc.inner(j), []))
                pos, j = b, doc.close_of(j) + 1
                continue
        j += 1
    out.append(("rest", pos, end, []))
    doc.memo[key] = out
    return out


def parts(doc: Doc, i: int) -> list[tuple[str, str, tuple | None]]:
    """Element ``i``'s content as ``(part, text, line numbers)``: the engine's named parts
    (:data:`PARTS`; ``code`` for a highlighted block, its line-number column apart) in order, then
    ``rest``, the text outside them."""
    out, rest = [], []
    for name, a, b, skip in _layout(doc, i):
        if name == "rest":
            rest.append(doc.text(a, b))
        elif name == "code":
            nums = "".join(doc.text(x, y) for x, y in skip).split()
            numbers = tuple(int(n) for n in nums if n.isdigit()) if skip else None
            out.append((name, doc.text(a, b, skip), numbers))
        else:
            out.append((name, doc.text(a, b), None))
    out.append(("rest", "".join(rest), None))
    return out


def compare_block(check, doc: Doc, i: int, exp, what: str, where: str) -> list[Problem]:
    """Element ``i`` against ``exp`` (:class:`lessonkit.site.shipped.Expected`), part by part."""
    r, out = exp.r, []
    got = parts(doc, i)
    want_names, got_names = [p[0] for p in exp.parts], [p[0] for p in got]
    if want_names != got_names:
        missing = [n for n in want_names if n not in got_names]
        if "lk-disclaimer" in missing:
            label = next(t for n, t, _ in exp.parts if n == "lk-disclaimer")
            out.append(Problem(f'{what} has no disclaimer label ("{short(label)}")', where, None, HINT))
        else:
            extra = [n for n in got_names if n not in want_names]
            out.append(
                Problem(
                    f"{what} is not laid out as lessonkit wrote it (missing: {', '.join(missing) or '-'}; "
                    f"extra: {', '.join(extra) or '-'})",
                    where,
                    None,
                    HINT,
                )
            )
    shown = {}
    for name, text, numbers in got:
        shown.setdefault(name, (text, numbers))
    for name, text, _ in exp.parts:
        if name not in shown:
            continue
        have, numbers = shown[name]
        if name == "code":
            out += compare_code(check, r, what, where, have, text, numbers, doc, i)
        elif have != text:
            if name == "lk-output":
                diff = first_difference(have, text)
                msg = f"experiment output of {r.job.label} differs from this build's recorded run ({diff})"
            elif name == "lk-disclaimer":
                msg = f"{what} has another disclaimer label: {short(have)!r} instead of {short(text)!r}"
            else:
                msg = f"{what}: its {name.removeprefix('lk-')} reads {short(have)!r} instead of {short(text)!r}"
            out.append(Problem(msg, where, None, HINT))
    return out


def compare_code(check, r, what, where, have: str, want: str, numbers, doc: Doc, i: int) -> list[Problem]:
    """The code a block shows (``have``) against the code lessonkit renders for it (``want``); a
    real-source block's also against the pinned lines its own head names; its line numbers."""
    from lessonkit.pipeline.render import code_of

    start = code_of(r)[1]
    out = []
    if r.kind.name == "real-source":  # the pinned lines the element's own head names
        ex = r.excerpt
        meta = meta_of(doc, i)
        m = META.match(meta) if meta else None
        file, a, b = (m["file"], int(m["a"]), int(m["b"])) if m else (ex.file, ex.start, ex.end)
        pinned = check.pinned_text(file, a, b)
        if pinned is None or have != pinned:
            diff = first_difference(have, pinned, a) if pinned is not None else f"{file} is not a pinned file"
            out.append(
                Problem(
                    f"real-source block {file} L{a}–L{b} differs from the pinned source ({diff})", where, None, HINT
                )
            )
        elif have != want:  # verbatim, but not the lines the Markdown names
            out.append(Problem(f"{what} shows {file} L{a}–L{b}, not the lines its Markdown names", where, None, HINT))
    elif have != want:
        origin = f"{r.block.path}:{r.block.body_line}" if r.excerpt is None else r.excerpt.file
        first = r.block.body_line if r.excerpt is None else start
        out.append(
            Problem(
                f"{what} differs from its code in {origin} ({first_difference(have, want, first)})",
                where,
                None,
                HINT,
            )
        )
    lines = want.rstrip("\n").count("\n") + 1
    if numbers is not None and numbers != tuple(range(start, start + lines)):
        shown = f"{numbers[0]}–{numbers[-1]}" if numbers else "nothing"
        out.append(
            Problem(f"{what}: its line numbers read {shown} instead of {start}–{start + lines - 1}", where, None, HINT)
        )
    return out


def prose_values(check, doc: Doc, where: str, page: str, verified: list[int]) -> list[Problem]:
    """The recorded values (``lk-value``) outside the page's blocks against the ``[[value: …]]``
    references of its prose, as this build's runs recorded them (by title and text)."""
    want = Counter(check.values.get(page, {}))
    out = []
    if "lk-value" not in doc.html and not want:
        return out
    memo = ("values", tuple(verified))
    if memo not in doc.memo:
        skip = ranges(doc, verified)
        doc.memo[memo] = [
            i
            for i, m in enumerate(doc.tags)
            if not m[1] and "lk-value" in m[3] and not inside(skip, i) and "lk-value" in doc.classes(i)
        ]
    for i in doc.memo[memo]:
        key = (doc.attrs(i).get("title", ""), doc.text(*doc.inner(i)))
        verified.append(i)
        if want[key] > 0:
            want[key] -= 1
            continue
        out.append(
            Problem(
                f"the recorded value {short(key[1])!r} ({short(key[0], 90)}) is not what this build's run "
                "recorded for this page",
                where,
                None,
                HINT,
            )
        )
    for (title, text), n in want.items():
        if n > 0:
            out.append(
                Problem(f"the recorded value {text!r} ({short(title, 90)}) is not on the page", where, None, HINT)
            )
    return out


def block_what(r, anchor: str) -> str:
    """How a problem names a block: ``real-source block FILE La–Lb``, else its kind and id."""
    ex = r.excerpt
    if r.kind.name == "real-source" and ex is not None:
        return f"real-source block {ex.file} L{ex.start}–L{ex.end}"
    if r.job is not None:
        return f"{r.kind.name} block #{anchor} ({r.job.label})"
    return f"{r.kind.name} block #{anchor}"


def meta_of(doc: Doc, i: int) -> str | None:
    """The text of the block head's ``lk-meta`` (``file · symbol · commit · La–Lb``), if any."""
    for k in range(i + 1, doc.close_of(i)):
        if not doc.closing(k) and "lk-meta" in doc.tags[k][3] and "lk-meta" in doc.classes(k):
            return doc.text(*doc.inner(k)).strip()
    return None


def unchecked_claims(doc: Doc, skip: list[tuple[int, int]]) -> list[int]:
    """The outermost elements outside ``skip`` (tag-index ranges) whose classes are the engine's."""
    out = []
    i, n, k = 0, len(doc.tags), 0
    while i < n:
        while k < len(skip) and skip[k][1] < i:
            k += 1
        if k < len(skip) and skip[k][0] <= i <= skip[k][1]:
            i = skip[k][1] + 1  # a checked element: its content is accounted for
            continue
        m = doc.tags[i]
        a = m[3]
        if not m[1] and ("lk" in a or "&" in a) and any(is_claim(c) for c in doc.classes(i)):
            out.append(i)
            i = doc.close_of(i) + 1  # one line for the outermost imitation
            continue
        i += 1
    return out


def ranges(doc: Doc, elements: list[int]) -> list[tuple[int, int]]:
    """The tag-index ranges of ``elements`` (start tag to end tag), sorted."""
    return sorted((i, doc.close_of(i)) for i in elements)


def inside(spans: list[tuple[int, int]], pos: int) -> bool:
    """``pos`` lies in one of the sorted, disjoint ``spans`` (``start <= pos < end``)."""
    k = bisect.bisect_right(spans, (pos, float("inf"))) - 1
    return k >= 0 and spans[k][0] <= pos < spans[k][1]


def recorded_cell(doc: Doc, k: int) -> bool:
    """Tag ``k`` opens a snapshot cell drawn from the recording (generated, or checked against it)."""
    m = doc.tags[k]
    return (
        not m[1]
        and m[2].lower() == "td"
        and ("lk-generated" in m[3] or "lk-checked" in m[3])
        and bool({"lk-generated", "lk-checked"} & set(doc.classes(k)))
    )


def td_text(html: str) -> str:
    """The text of one table cell the engine renders (``<td …>…</td>``)."""
    inner = html[html.index(">") + 1 : html.rindex("</td>")]
    text = TAG.sub("", inner)
    return unescape(text) if "&" in text else text


def compare_cells(doc: Doc, i: int, exp, what: str, where: str) -> list[Problem]:
    """A snapshot's recorded cells (generated, or checked against the run) against the recording."""
    cells = [doc.text(*doc.inner(k)) for k in range(i + 1, doc.close_of(i)) if recorded_cell(doc, k)]
    if cells == exp.cells:
        return []
    k = next((n for n, (a, b) in enumerate(zip(cells, exp.cells)) if a != b), min(len(cells), len(exp.cells)))
    got = cells[k] if k < len(cells) else "nothing"
    want = exp.cells[k] if k < len(exp.cells) else "nothing"
    return [
        Problem(
            f"{what} shows {short(got)!r} in recorded cell {k + 1}, where this build's run recorded {short(want)!r}",
            where,
            None,
            HINT,
        )
    ]
