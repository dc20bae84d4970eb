"""What an element of a written page shows, as a reader sees it, and how it differs from what
lessonkit emitted (:mod:`lessonkit.site.shipped`): the engine's classes, an element's parts and
their text, one block compared with its rendering, a snapshot's recorded cells, recorded values
in prose.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from functools import lru_cache

from lessonkit.checks.tree import Doc, serialized
from lessonkit.errors import Problem

CLAIMS = frozenset(
    "lk-block lk-real-source lk-teaching lk-experiment lk-snapshot lk-figure lk-error lk-head lk-badge lk-meta "
    "lk-links lk-disclaimer lk-purpose lk-output-label lk-output-wrap lk-output lk-truncated lk-provenance "
    "lk-script lk-snapshot-title lk-snapshot-table lk-generated lk-checked lk-fig-source lk-source lk-line lk-ln "
    "lk-cited lk-cite-mark lk-sym lk-value".split()
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
                return f"line {first + k}: missing, it is {short(y or '')!r}"  # x != y: y is a line
            if y is None:
                return f"line {first + k}: {short(x)!r}, an extra line"
            return f"line {first + k}: {short(x)!r} instead of {short(y)!r}"
    return "the same lines, other characters"


def _layout(doc: Doc, i: int) -> tuple[list[tuple[str, int, tuple]], tuple]:
    """Where element ``i``'s parts are: ``(part, element, skip)`` each (``skip``: the number column
    of a code part), and the parts' elements (what ``rest`` leaves out)."""
    key = ("layout", i)
    if key in doc.memo:
        return doc.memo[key]
    out: list[tuple[str, int, tuple]] = []
    j, stop = i + 1, doc.end(i)
    while j < stop:
        if doc.name(j) in ("div", "p", "pre") and "class" in doc.attrs(j):
            cls = doc.classes(j)
            name = "code" if "highlight" in cls else next((p for p in PARTS if p in cls), None)
            if name is not None:
                skip: tuple = ()
                if name == "code":  # the number column, a cell of the highlight table: not code
                    skip = tuple(
                        k for k in range(j + 1, doc.end(j)) if doc.name(k) == "td" and doc.has_class(k, "linenos")
                    )
                out.append((name, j, skip))
                j = doc.end(j)
                continue
        j += 1
    got = doc.memo[key] = (out, tuple(j for _, j, _ in out))
    return got


def parts(doc: Doc, i: int) -> list[tuple[str, str, tuple | None]]:
    """Element ``i``'s content as ``(part, text, line numbers)``: the engine's named parts
    (:data:`PARTS`; ``code`` for a highlighted block, its line-number column apart) in order, then
    ``rest``, the text outside them."""
    layout, inside_parts = _layout(doc, i)
    out: list[tuple[str, str, tuple | None]] = []
    for name, j, skip in layout:
        if name == "code":
            nums = "".join(doc.text(k) for k in skip).split()
            numbers = tuple(int(n) for n in nums if n.isdigit()) if skip else None
            out.append((name, doc.text(j, skip), numbers))
        else:
            out.append((name, doc.text(j), None))
    out.append(("rest", doc.text(i, inside_parts), None))
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
    shown: dict[str, tuple] = {}
    for name, text, numbers in got:
        if name != "code":
            shown.setdefault(name, (text, numbers))
    for name, text, _ in exp.parts:
        if name not in shown or name == "code":
            continue
        have, numbers = shown[name]
        if have != text:
            if name == "lk-output":
                diff = first_difference(have, text)
                msg = f"experiment output of {r.job.label} differs from this build's recorded run ({diff})"
            elif name == "lk-disclaimer":
                msg = f"{what} has another disclaimer label: {short(have)!r} instead of {short(text)!r}"
            else:
                msg = f"{what}: its {name.removeprefix('lk-')} reads {short(have)!r} instead of {short(text)!r}"
            out.append(Problem(msg, where, None, HINT))
    have_code = [(text, numbers) for name, text, numbers in got if name == "code"]
    want_code = [text for name, text, _ in exp.parts if name == "code"]
    if have_code and want_code:
        out += compare_code(check, r, what, where, have_code, want_code, doc, i)
    return out


def code_runs(r) -> list[tuple[object, int, int]]:
    """What every code part of a block shows, in page order: ``(excerpt, first, last)`` of each run
    of its excerpt, then of the full version of a recall (``excerpt`` None: the block's body)."""
    if r.excerpt is None:
        text, start = code_of_block(r)
        return [(None, start, start + text.count("\n") - 1)]
    out = [(r.excerpt, a, b) for a, b in r.excerpt.spans]
    full = getattr(r, "full", None)
    if full is not None:
        out += [(full, a, b) for a, b in full.spans]
    return out


def code_of_block(r) -> tuple[str, int]:
    from lessonkit.pipeline.render import code_of

    return code_of(r)


def compare_code(check, r, what, where, have: list, want: list[str], doc: Doc, i: int) -> list[Problem]:
    """The code parts a block shows (``have``: ``(text, line numbers)`` each, in page order) against
    the code lessonkit renders for it (``want``), run by run: a real-source block's also against
    the pinned lines each run names (its line numbers; a single run, the lines its own head
    names), with the indentation its ``Dedent`` removes; the line numbers of every run."""
    runs = code_runs(r)
    out = []
    if len(have) != len(want) or len(want) != len(runs):
        out.append(Problem(f"{what} shows {len(have)} run(s) of code instead of {len(want)}", where, None, HINT))
    pairs = list(zip(have, want, runs, strict=False))
    if r.kind.name == "real-source":
        out += _pinned(check, r, what, where, pairs, doc, i)
    else:
        for (text, _), w, (_, a, _b) in pairs:
            if text != w:
                origin = f"{r.block.path}:{r.block.body_line}" if r.excerpt is None else r.excerpt.file
                first = r.block.body_line if r.excerpt is None else a
                out.append(
                    Problem(
                        f"{what} differs from its code in {origin} ({first_difference(text, w, first)})",
                        where,
                        None,
                        HINT,
                    )
                )
    for (_, numbers), _w, (ex, a, b) in pairs:
        if numbers is not None and numbers != tuple(range(a, b + 1)):
            shown = f"{numbers[0]}–{numbers[-1]}" if numbers else "nothing"
            wrong = next(((x, y) for x, y in zip(numbers, range(a, b + 1), strict=False) if x != y), None)
            if wrong is not None and shown == f"{a}–{b}" and len(numbers) == b - a + 1:
                shown += f" ({wrong[0]} where {wrong[1]} belongs)"
            part = " (its full version)" if ex is not None and ex is not r.excerpt else ""
            out.append(Problem(f"{what}{part}: its line numbers read {shown} instead of {a}–{b}", where, None, HINT))
    return out


def _pinned(check, r, what, where, pairs, doc: Doc, i: int) -> list[Problem]:
    """Each run of a real-source block against the pinned lines it names: its line numbers, else
    (one run of the excerpt) the lines the block's head names, else the lines its Markdown names."""
    ex, out = r.excerpt, []
    meta = meta_of(doc, i)
    m = META.match(meta) if meta else None
    single = len(ex.spans) == 1
    named = []  # (pair, file, lines named)
    for pair in pairs:
        (text, numbers), _w, (part, a, b) = pair
        if part is ex and single and m:
            lines = list(range(int(m["a"]), int(m["b"]) + 1))
            file = m["file"]
        elif numbers:
            lines, file = list(numbers), ex.file
        else:
            lines, file = list(range(a, b + 1)), ex.file
        named.append((pair, file, lines))
    mode = _dedent_mode(r.block.get("Dedent"))
    tabs = _tab_width(r.block.get("Tab-width"))
    for part in (ex, getattr(r, "full", None)):
        group = [x for x in named if x[0][2][0] is part]
        if part is None or not group:
            continue
        texts = [_expanded(check.pinned_lines(file, lines), tabs) for _, file, lines in group]
        cut = _cut([t for t in texts if t is not None], mode)
        for (((text, _), w, _), file, lines), pinned in zip(group, texts, strict=True):
            label = f"real-source block {file} L{lines[0]}–L{lines[-1]}" if lines else f"real-source block {file}"
            if part is not ex:
                label = f"the full version of {what}"
            want_pinned = None if pinned is None else "".join((l[cut:] if l.strip() else "") + "\n" for l in pinned)
            if want_pinned is None or text != want_pinned:
                diff = (
                    first_difference(text, want_pinned, lines[0] if lines else 1)
                    if want_pinned is not None
                    else f"{file} is not a pinned file, or has no such lines"
                )
                out.append(Problem(f"{label} differs from the pinned source ({diff})", where, None, HINT))
            elif text != w:  # verbatim, but not the lines the Markdown names
                out.append(
                    Problem(
                        f"{what} shows {file} L{lines[0]}–L{lines[-1]}, not the lines its Markdown names",
                        where,
                        None,
                        HINT,
                    )
                )
    return out


def _dedent_mode(value):
    from lessonkit.errors import LessonError
    from lessonkit.source import select

    try:
        return select.dedent_mode(value)
    except LessonError:
        return "auto"


def _tab_width(value):
    from lessonkit.errors import LessonError
    from lessonkit.source import select

    try:
        return select.tab_width(value)
    except LessonError:
        return None


def _expanded(lines, tabs):
    """The pinned lines with their tabs expanded as the block's ``Tab-width`` says (None: kept)."""
    from lessonkit.source import select

    return None if lines is None else select.expand_tabs(lines, tabs)


def _cut(texts: list[list[str]], mode) -> int:
    """How many leading spaces the pinned lines of one excerpt lose (as ``select.dedent`` cuts)."""
    if mode == "none":
        return 0
    if mode != "auto":
        return int(mode)
    widths = [len(l) - len(l.lstrip(" ")) for t in texts for l in t if l.strip()]
    return min(widths, default=0)


def prose_values(check, doc: Doc, where: str, page: str, verified: list[int]) -> list[Problem]:
    """The recorded values (``lk-value``) outside the page's blocks against the ``[[value: …]]``
    references of its prose, as this build's runs recorded them (by title and text)."""
    want = Counter(check.values.get(page, {}))
    out: list[Problem] = []
    memo = ("values", tuple(verified))
    if memo not in doc.memo:
        skip = ranges(doc, verified)
        doc.memo[memo] = [i for i in range(len(doc)) if not inside(skip, i) and doc.has_class(i, "lk-value")]
    for i in doc.memo[memo]:
        key = (doc.attrs(i).get("title", ""), doc.text(i))
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
    for k in range(i + 1, doc.end(i)):
        if doc.has_class(k, "lk-meta"):
            return doc.text(k).strip()
    return None


def unchecked_claims(doc: Doc, skip: list[tuple[int, int]]) -> list[int]:
    """The outermost elements outside ``skip`` (element-index ranges) whose classes are the engine's."""
    out = []
    i, n, k = 0, len(doc), 0
    while i < n:
        while k < len(skip) and skip[k][1] <= i:
            k += 1
        if k < len(skip) and skip[k][0] <= i:
            i = skip[k][1]  # a checked element: its content is accounted for
            continue
        if any(is_claim(c) for c in doc.classes(i)):
            out.append(i)
            i = doc.end(i)  # one line for the outermost imitation
            continue
        i += 1
    return out


def ranges(doc: Doc, elements: list[int]) -> list[tuple[int, int]]:
    """The element-index ranges of ``elements`` (the element and its descendants), sorted."""
    return sorted((i, doc.end(i)) for i in elements)


def inside(spans: list[tuple[int, int]], pos: int) -> bool:
    """``pos`` lies in one of the sorted, disjoint ``spans`` (``start <= pos < end``)."""
    k = bisect.bisect_right(spans, (pos, float("inf"))) - 1
    return k >= 0 and spans[k][0] <= pos < spans[k][1]


def recorded_cell(doc: Doc, k: int) -> bool:
    """Element ``k`` is a snapshot cell drawn from the recording (generated, or checked against it)."""
    return doc.name(k) == "td" and bool({"lk-generated", "lk-checked"} & set(doc.classes(k)))


def td_text(html: str) -> str:
    """The text a reader sees in one table cell the engine renders (``<td …>…</td>``)."""
    doc = Doc(f"<table><tr>{html}</tr></table>")
    return next((doc.text(k) for k in range(len(doc)) if doc.name(k) == "td"), "")


def compare_cells(doc: Doc, i: int, exp, what: str, where: str) -> list[Problem]:
    """A snapshot's recorded cells (generated, or checked against the run) against the recording."""
    cells = [doc.text(k) for k in range(i + 1, doc.end(i)) if recorded_cell(doc, k)]
    if cells == exp.cells:
        return []
    k = next(
        (n for n, (a, b) in enumerate(zip(cells, exp.cells, strict=False)) if a != b), min(len(cells), len(exp.cells))
    )
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


# -- an element's markup: tags, attributes and text, as lessonkit wrote it

NO_SEARCH = re.compile(r' data-search-exclude(?:="[^"]*")?')  # Material's search drops it from the page itself
# What lessonkit writes inside a figure or a snapshot, besides what its author wrote there.
INSIDE = {
    "figure": frozenset({"lk-fig-source", "lk-value"}),
    "snapshot": frozenset(
        "lk-head lk-badge lk-badge-snap lk-meta lk-links lk-snapshot-title lk-snapshot-table lk-generated "
        "lk-checked lk-value".split()
    ),
}
# What makes text that is in the markup invisible, or text that is not in it visible.
HIDES = (
    (re.compile(r"\shidden\b", re.I), "a `hidden` attribute"),
    (re.compile(r"\sstyle\s*=", re.I), "a `style` attribute"),
    (
        re.compile(r"<(template|xmp|noscript|textarea|noembed|noframes|plaintext|script|style|iframe|object)\b", re.I),
        None,
    ),
    (re.compile(r"\bclass=\"[^\"]*\b(linenos|lk-cites)\b"), None),
)


def markup_problem(doc: Doc, i: int, want: str, what: str, where: str) -> list[Problem]:
    """Element ``i`` against the markup lessonkit writes for it (``want``), both as the browser's
    document serializes them, character for character (each text part is compared already; this
    finds what changes what a reader sees without changing that text: hidden or template copies of
    it, raw-text elements, styles, wrappers, attributes, links)."""
    have = doc.markup(i)
    want = _serialized(want)
    if "data-search-exclude" in have:
        have = NO_SEARCH.sub("", have)
    if "data-search-exclude" in want:
        want = NO_SEARCH.sub("", want)
    if have == want:
        return []
    k = next((n for n, (x, y) in enumerate(zip(have, want, strict=False)) if x != y), min(len(have), len(want)))
    got, wrote = _at(have, k), _at(want, k)
    why = ""
    region = have[have.rfind("<", 0, k + 1) if "<" in have[: k + 1] else k : k + 200]
    for pattern, name in HIDES:
        m = pattern.search(region)
        if m:
            why = f" ({name or f'`{m[1]}`'}: text a reader does not see, or sees and nothing compares)"
            break
    return [
        Problem(
            f"{what} is not the markup lessonkit wrote{why}: {got!r} where lessonkit wrote {wrote!r}",
            where,
            None,
            HINT,
        )
    ]


@lru_cache(maxsize=256)
def _serialized(html: str) -> str:
    return serialized(html)


def _at(html: str, k: int, limit: int = 60) -> str:
    """The markup of ``html`` from the tag (or text) that holds offset ``k``."""
    start = html.rfind("<", 0, k + 1)
    if start < 0 or html.rfind(">", 0, k) > start:  # in text: from the end of the previous tag
        start = html.rfind(">", 0, k) + 1
    text = html[start : start + limit]
    return text + "…" if start + limit < len(html) else text if text else "nothing"


def nested_claims(doc: Doc, i: int) -> list[int]:
    """The elements inside figure or snapshot ``i`` that claim to be the engine's, other than what
    lessonkit writes there (:data:`INSIDE`; the figure's drawing is lessonkit's): an imitation in a
    caption, a title or a cell."""
    kind = "figure" if doc.name(i) == "figure" else "snapshot"
    out, k, stop = [], i + 1, doc.end(i)
    while k < stop:
        if doc.name(k) == "svg":  # the drawing
            k = doc.end(k)
            continue
        if any(is_claim(c) and c not in INSIDE[kind] for c in doc.classes(k)):
            out.append(k)
            k = doc.end(k)
            continue
        k += 1
    return out
