"""Prose that imitates an engine block: raw HTML or an attribute list with the engine's classes,
its badges as a label (an admonition, a tab, emphasis, the start of a line or a table cell), and
its badges in the title of an ordinary code fence. Each is one problem (``ENGINE_HTML``) naming
the block to write instead."""

from __future__ import annotations

import re

from lessonkit.errors import Problem
from lessonkit.pipeline.activehtml import ENGINE_HTML
from lessonkit.pipeline.fences import blank_code, code_spans

# class="…lk-…" (any quoting) or an attr_list `{: .lk-… }` / `{: class="lk-…" }`
ENGINE_CLASS = re.compile(
    r"""\bclass\s*=\s*(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<uq>[^\s>"']+))|\{:?(?P<attr>[^{}]*)\}""", re.I
)
ATTR_CLASS = re.compile(r"""(?:^|\s)\.(?P<dot>[\w-]+)|\bclass\s*=\s*(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<uq>\S+))""")
# what a reader of an imitation would take it for: the block to write instead
INSTEAD = (
    (
        ("lk-real-source", "lk-badge-real", "lk-source", "lk-line", "lk-ln", "lk-cited", "lk-cite-mark"),
        "a real-source block",
    ),
    (("lk-teaching", "lk-badge-teach", "lk-disclaimer"), "a teaching-simplification block"),
    (
        ("lk-experiment", "lk-badge-exp", "lk-output", "lk-output-wrap", "lk-output-label", "lk-provenance"),
        "an experiment block",
    ),
    (("lk-snapshot", "lk-badge-snap", "lk-generated", "lk-checked", "lk-snapshot-table"), "a snapshot block"),
    (("lk-figure", "lk-fig-source"), "a figure block"),
    (("lk-value",), "a [[value: …]] reference"),
)


def engine_html(line: str, path: str, lineno: int, badges: tuple[str, ...] = ()) -> list[Problem]:
    """Problems for raw HTML (or an attr_list) on one prose line that uses the engine's classes or
    shows one of its badges outside a block: the site would show an imitation of an engine block
    that nothing checked. Code spans are text and are left alone."""
    from html import unescape

    spans = code_spans(line) if "`" in line else []
    text = line
    for a, b in reversed(spans):
        text = text[:a] + " " * (b - a) + text[b:]
    plain = unescape(text) if "&" in text else text
    engine: list[str]
    engine, attr_list = [], False
    for m in ENGINE_CLASS.finditer(plain):
        if m["attr"] is not None:
            classes = [c["dot"] or c["dq"] or c["sq"] or c["uq"] or "" for c in ATTR_CLASS.finditer(m["attr"])]
            classes = [w for c in classes for w in c.split()]
        else:
            classes = (m["dq"] if m["dq"] is not None else m["sq"] if m["sq"] is not None else m["uq"]).split()
        found = [c for c in classes if c.startswith("lk-")]
        attr_list = attr_list or (bool(found) and m["attr"] is not None and not engine)
        engine += found
    if engine:  # one line of the page, one problem: the first class it uses, the block it imitates
        instead = next((what for names, what in INSTEAD if any(c in names for c in engine)), "an annotation block")
        if attr_list:
            message = f"an attribute list `{{: … }}` uses the engine class {engine[0]}"
        else:
            message = f"raw HTML uses the engine class {engine[0]}"
        return [Problem(message, path, lineno, f"write {instead} instead", code=ENGINE_HTML)]
    out = []
    for badge in badges:
        if badge and re.search(r">\s*" + re.escape(badge) + r"\s*</?[A-Za-z]", plain):
            out.append(
                Problem(
                    f"raw HTML shows the engine's badge \"{badge}\" outside a block",
                    path,
                    lineno,
                    "write the annotation block instead; only the engine shows its badges",
                    code=ENGINE_HTML,
                )
            )
    return out


# -- badges written as prose: the label of an engine block, without the block
LABEL_LEAD = re.compile(r"^[ \t]*(?:>[ \t]?)*(?:(?:[-*+]|[0-9]{1,9}[.)])[ \t]+)?(?:#{1,6}[ \t]+)?[*_~=]*[ \t]*")
# an admonition, a details block or a tab: its types and its quoted title
TITLED = re.compile(
    r"^[ \t]*(?:>[ \t]?)*[ \t]*(?P<mark>!!!|\?\?\?\+?|===)[ \t]*(?P<types>[^\"\n]*?)[ \t]*"
    r"(?:\"(?P<title>[^\"\n]*)\")?[ \t]*$"
)


def _loose(text: str) -> str:
    """``text`` as a reader sees it, for comparing with a badge: character references decoded,
    compatibility forms (no-break and wide spaces) folded, emphasis marks, backslashes and invisible
    characters dropped, no whitespace at all (a browser shows two spaces, a tab or a line break as one)."""
    import unicodedata
    from html import unescape

    folded = unicodedata.normalize("NFKC", unescape(text))
    return "".join(c for c in folded if not c.isspace() and c not in "*_~=^\\" and unicodedata.category(c) != "Cf")


def _loose_label(texts: list[str], badges: tuple[str, ...], following: str) -> str | None:
    """The badge one of ``texts`` (or the line with the one after it: a label over two lines) starts
    with, read loosely (:func:`_loose`)."""
    for badge in badges:
        want = _loose(badge)
        if want and any(_loose(LABEL_LEAD.sub("", t, count=1) + following).startswith(want) for t in texts):
            return badge
    return None


def badge_labels(line: str, path: str, lineno: int, badges: tuple[str, ...] = (), following: str = "") -> list[Problem]:
    """Problems for one prose line that labels something the way only the engine's blocks are
    labelled: an admonition whose type is an engine class (``!!! lk-real-source``), or one of
    ``badges`` as a label (at the start of the line or of a table cell, alone in emphasis, as an
    admonition's or a tab's title). The badge inside a sentence, after other words, is prose."""
    from html import unescape

    if "!!!" not in line and "???" not in line and "&" not in line and not any(b and b in line for b in badges):
        cells = line.split("|") if "|" in line else [line]
        found = _loose_label(cells, badges, "") or (_loose_label([line], badges, following) if following else None)
        return [_label_problem(found, path, lineno)] if found else []
    line = blank_code(line)
    titled = TITLED.match(line) if ("!" in line or "?" in line or "=" in line) else None
    if titled is not None:
        engine = [t for t in titled["types"].split() if t.startswith("lk-")]
        if engine:
            instead = next((what for names, what in INSTEAD if engine[0] in names), "an annotation block")
            what = "an admonition" if titled["mark"] != "===" else "a tab"
            return [
                Problem(
                    f"{what} of type `{engine[0]}` uses the engine class {engine[0]}",
                    path,
                    lineno,
                    f"write {instead} instead",
                    code=ENGINE_HTML,
                )
            ]
    plain = unescape(line) if "&" in line else line
    texts = [titled["title"] or ""] if titled is not None else plain.split("|") if "|" in plain else [plain]
    for badge in badges:
        if not badge or badge not in plain:
            continue
        alone = re.search(r"(\*\*|__|\*|_|~~|==)[ \t]*" + re.escape(badge) + r"[ \t]*\1", plain)
        if alone or any(LABEL_LEAD.sub("", t, count=1).startswith(badge) for t in texts):
            return [_label_problem(badge, path, lineno)]
    found = _loose_label(texts, badges, "")
    return [_label_problem(found, path, lineno)] if found else []


def _label_problem(badge: str, path: str, lineno: int) -> Problem:
    return Problem(
        f'prose shows the engine\'s badge "{badge}" as a label, as if an engine block followed',
        path,
        lineno,
        "write the annotation block instead; to name a kind of block, write its badge inside a "
        "sentence or in quotes (\u300c…\u300d)",
        code=ENGINE_HTML,
    )


_TITLE = re.compile(r"""\btitle[ \t]*=[ \t]*(?:"([^"]*)"|'([^']*)'|(\S+))""")


def fence_badges(info: str, path: str, lineno: int, badges: tuple[str, ...]) -> list[Problem]:
    """The title of an ordinary code fence (``title="…"``, which the theme shows above the code, where
    an engine block shows its badge) that holds one of the engine's ``badges``."""
    from html import unescape

    for m in _TITLE.finditer(info):
        title = unescape(next(g for g in m.groups() if g is not None))
        badge = next((b for b in badges if b and b in title), None)
        if badge is not None:
            return [
                Problem(
                    f'a code block\'s title shows the engine\'s badge "{badge}", as if it were an engine block',
                    path,
                    lineno,
                    "write the annotation block instead (it checks the code against the pin), or title the "
                    "code block without the badge",
                    code=ENGINE_HTML,
                )
            ]
    return []
