"""The site's search index, rewritten after Material's search plugin wrote it: smaller, and with
the glossary's terms on the sections that define them.

Material writes ``search/search_index.json`` with every non-ASCII character escaped (``\\u4e2d``:
six bytes for a Chinese character that takes three in UTF-8) and, where jieba is installed,
with a zero-width space (U+200B) on both sides of every Chinese word. The browser splits each
entry into tokens at the configured separator (Material's ``tokenize``: the text between tags,
split at ``separator``). :func:`compact` keeps the tokens and the text shown exactly as they
were:

* the file is written as UTF-8;
* inline code is written ``<c>…</c>`` instead of ``<code>…</code>`` (a tag is only a boundary
  to the tokenizer; lessonkit.css styles ``c`` in the results as Material styles ``code``);
* a run of zero-width spaces stays (as one) only where it is the sole boundary between two words;
  next to a space, punctuation the separator matches, or the start or end of a field, the
  browser splits there anyway.

:func:`drop_repeats` removes a block (a code block, a paragraph, a list item) that an earlier
page of the navigation already holds word for word: the same excerpt quoted in three lessons
is found once, in the first of them.

:func:`glossary_rows` reads a glossary page (``[search]`` of ``site.toml``): each row of its
tables names terms (the ``terms`` columns) and links the section that introduces them (the
first link of the ``introduced`` column). :func:`add_terms` puts those terms into a field of
their own, ``defines``, of the row's glossary section and of that section. Material's client
indexes every field the index's ``config.fields`` names, with its boost, and shows only the
title and the text: a term counts there as much as in a title (:data:`DEFINES_BOOST`), so a
search for it lists the sections that define it among the first, without outweighing every
other match the way Material's ``tags`` field (boost 10⁶) would: a query is a prefix (Material
appends ``*``), and ``grad`` must not rank the definition of "numerical gradient checking" above
the pages about ``grad``.

All of it reads the JSON file Material wrote (and, to find the section around a linked anchor,
the written page), never Material's entries in memory, so a full build and the incremental
serve (which writes the index again from its kept entries) give the same bytes.
"""

from __future__ import annotations

import functools
import json
import math
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path

INDEX = "search/search_index.json"
ZWSP = "\u200b"
# Characters that Python's and JavaScript's `\s` disagree on: never taken for a separator here.
AMBIGUOUS = set("\x1c\x1d\x1e\x1f\x85\ufeff")
# Separator features whose Python meaning is wider than the browser's: no compaction then.
UNSAFE = re.compile(r"\\[SBb]|\(\?")


def separator(config: dict) -> re.Pattern | None:
    """The index's separator as a Python pattern, when it splits at U+200B and means the same
    for single characters in Python as in the browser; otherwise None (nothing is compacted)."""
    source = config.get("separator")
    if not isinstance(source, str) or UNSAFE.search(source):
        return None
    try:
        pattern = re.compile(source)
    except re.error:
        return None
    return pattern if pattern.fullmatch(ZWSP) else None


def compact_text(text: str, sep: re.Pattern) -> str:
    """``text`` without the zero-width spaces that the separator makes redundant (see the module)."""
    if ZWSP not in text:
        return text
    return _compacted(text, sep)


@functools.lru_cache(maxsize=1 << 12)
def _compacted(text: str, sep: re.Pattern) -> str:
    # A pure function of its arguments (compiled patterns compare by pattern and flags): the
    # incremental serve rewrites the whole index after every edit, mostly of unchanged entries.

    def splits(ch: str) -> bool:
        return not ch or (ch not in AMBIGUOUS and sep.fullmatch(ch) is not None)

    def one(m: re.Match) -> str:
        before = text[m.start() - 1] if m.start() else ""
        after = text[m.end()] if m.end() < len(text) else ""
        return "" if splits(before) or splits(after) else ZWSP

    return re.sub(ZWSP + "+", one, text)


@dataclass(frozen=True)
class Row:
    """One glossary row: its terms, the heading of its table's section and the row's first link
    in the ``introduced`` column (a Markdown target, relative to the glossary page)."""

    terms: tuple[str, ...]
    section_id: str | None  # the heading's `{#id}`, if it has one
    section_title: str  # the heading's text
    link: str | None
    line: int


HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t]*(?:\{([^}]*)\})?[ \t]*#*[ \t]*$")
LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
# `/`, the ideographic comma, full-width and ASCII parentheses, commas and semicolons
TERM_SPLIT = re.compile(r"[/\u3001\uff08\uff09(),\uff0c;\uff1b]+")
RULE = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


def _cells(line: str) -> list[str]:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", body)]


def _plain(markdown: str) -> str:
    """Inline Markdown as text: links as their text, no code marks or emphasis."""
    return re.sub(r"[`*_]{1,2}(?=\S)|(?<=\S)[`*_]{1,2}", "", LINK.sub(r"\1", markdown)).strip()


def split_terms(cell: str) -> list[str]:
    """The terms one cell names: ``有限差分 / 数值微分``, ``node（`VJPNode` / `JVPNode`）``."""
    text = LINK.sub(r"\1", cell).replace("`", "")
    return [t.strip() for t in TERM_SPLIT.split(text) if re.search(r"\w", t)]


def glossary_rows(text: str, terms: tuple[str, ...], introduced: str | None) -> list[Row]:
    """Every row of the tables in ``text`` (a glossary page's Markdown) whose header has at least
    one of the ``terms`` columns."""
    lines = text.replace("\r\n", "\n").split("\n")
    rows: list[Row] = []
    section_id, section_title = None, ""
    n = 0
    while n < len(lines):
        line = lines[n]
        m = HEADING.match(line)
        if m:
            attrs = m.group(3) or ""
            ident = re.search(r"#([\w-]+)", attrs)
            section_id, section_title = (ident.group(1) if ident else None), _plain(m.group(2))
            n += 1
            continue
        if line.lstrip().startswith("|") and n + 1 < len(lines) and RULE.match(lines[n + 1].strip()):
            header = _cells(line)
            cols = [i for i, h in enumerate(header) if _plain(h) in terms]
            intro = next((i for i, h in enumerate(header) if introduced and _plain(h) == introduced), None)
            n += 2
            while n < len(lines) and lines[n].lstrip().startswith("|"):
                cells = _cells(lines[n])
                names: list[str] = []
                for i in cols:
                    if i < len(cells):
                        names += [t for t in split_terms(cells[i]) if t not in names]
                link = None
                if intro is not None and intro < len(cells):
                    found = LINK.search(cells[intro])
                    link = found.group(2) if found else None
                if cols and names:
                    rows.append(Row(tuple(names), section_id, section_title, link, n + 1))
                n += 1
            continue
        n += 1
    return rows


def _norm(html_or_text: str) -> str:
    return re.sub(r"\s+|" + ZWSP, "", re.sub(r"<[^>]+>", "", html_or_text))


HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})


def section_of(location: str, locations: set[str], page_html: str | None) -> str | None:
    """The index entry that holds ``location`` (``page/#anchor``): the entry itself, else the
    section whose heading comes last before the anchor's element in the page (as a browser builds
    it, :mod:`lessonkit.util.markup`), else the page's entry."""
    if location in locations:
        return location
    page, _, anchor = location.partition("#")
    if anchor and page_html is not None:
        from lessonkit.util import markup

        before: list[str] = []
        for node in markup.elements(markup.parse(page_html)):
            ident = node.attributes.get("id")
            if ident == anchor:
                found = next((f"{page}#{h}" for h in reversed(before) if f"{page}#{h}" in locations), None)
                if found is not None:
                    return found
                break
            if ident and markup.name(node) in HEADINGS:
                before.append(ident)
    return page if page in locations else None


def defined_terms(
    rows: list[Row],
    docs: list[dict],
    glossary_uri: str,
    urls: dict[str, str],
    page_html,
) -> dict[str, list[str]]:
    """Index location -> the terms it defines: each row's glossary section and the section its
    link introduces them in. ``urls`` maps a page's docs-relative path to its URL;
    ``page_html(url)`` gives a written page's HTML (or None)."""
    locations = {d["location"] for d in docs}
    base = urls.get(glossary_uri)
    if base is None:
        return {}
    titles: dict[str, str] = {}
    for d in docs:
        if d["location"].split("#", 1)[0] == base:
            titles.setdefault(_norm(d["title"]), d["location"])
    out: dict[str, list[str]] = {}

    def add(location: str | None, names: tuple[str, ...]) -> None:
        if location is None:
            return
        have = out.setdefault(location, [])
        have += [t for t in names if t not in have]

    for row in rows:
        if row.section_id and f"{base}#{row.section_id}" in locations:
            add(f"{base}#{row.section_id}", row.terms)
        else:
            add(titles.get(_norm(row.section_title), base if base in locations else None), row.terms)
        if not row.link or "://" in row.link or row.link.startswith("mailto:"):
            continue
        target, _, anchor = row.link.partition("#")
        if target:
            uri = posixpath.normpath(posixpath.join(posixpath.dirname(glossary_uri), target))
            url = urls.get(uri)
        else:
            url = base
        if url is None:
            continue
        location = f"{url}#{anchor}" if anchor else url
        add(section_of(location, locations, page_html(url) if anchor else None), row.terms)
    return out


FIELD = "defines"
DEFINES_BOOST = 1000.0  # Material's default for `title`


def add_terms(data: dict, terms: dict[str, list[str]]) -> None:
    """Put ``terms`` (location -> terms) into the ``defines`` field of the entries at their
    locations, and the field into the index's configuration (unless the site configured it)."""
    found = False
    for d in data.get("docs", []):
        extra = terms.get(d["location"])
        if not extra:
            continue
        have = list(d.get(FIELD) or [])
        d[FIELD] = have + [t for t in extra if t not in have]
        found = True
    if found:
        fields = data.setdefault("config", {}).setdefault("fields", {})
        fields.setdefault(FIELD, {"boost": DEFINES_BOOST})


# A block and the space after it; never one that holds another of its kind (a list item with a
# nested list is kept whole, and its inner items are blocks of their own).
BLOCK = re.compile(r"<(pre|p|li)>(?:(?!<\1>).)*?</\1>( ?)", re.S)
REPEAT_MIN = 80  # shorter blocks ("primitive_vjps = {}") may repeat: they cost little


def drop_repeats(docs: list[dict], order: list[str]) -> None:
    """Remove from every entry the blocks (``<pre>``, ``<p>``, ``<li>``, at least
    :data:`REPEAT_MIN` characters) that an entry before it holds too, where "before" follows
    ``order`` (page URLs, the navigation's order; other pages after them, in index order) and
    then the index order within a page."""
    rank = {url: n for n, url in enumerate(order)}
    first = sorted(range(len(docs)), key=lambda i: (rank.get(docs[i]["location"].split("#", 1)[0], len(rank)), i))
    seen: set[str] = set()
    for i in first:
        text = docs[i].get("text")
        if not isinstance(text, str) or len(text) < REPEAT_MIN:
            continue

        def keep(m: re.Match) -> str:
            block = m.group(0)[: len(m.group(0)) - len(m.group(2))]
            if len(block) < REPEAT_MIN:
                return m.group(0)
            if block in seen:
                return ""
            seen.add(block)
            return m.group(0)

        docs[i]["text"] = BLOCK.sub(keep, text).strip()


# A closed <details> (a hint, an answer, a folded script) and the attribute Material's search
# plugin skips an element by (it removes the attribute from the page afterwards).
CLOSED_DETAILS = re.compile(r"<details(?![^>]*\s(?:open|data-search-exclude)[\s=>])([^>]*)>")
FOLDED = ' data-search-exclude="folded"'


def fold_out(html: str) -> str:
    """A page's HTML with its closed ``<details>`` out of the search index: what a page folds away
    (a quiz's hints and answers, say) is meant to be opened after the reader has tried, and a
    result's teaser would show it unfolded. An open one (``???+``) stays, and so does its summary's
    page, found by the text around it.

    Only a start tag the HTML parser reads as a ``<details>`` element is marked (each candidate is
    tried with a bare marker attribute first): ``<details`` in an attribute value, a comment or a
    raw-text element is text, and one whose attributes hold a ``>`` is left as it is. The marked page
    must then read as the page did, but for the marks; else it is left unmarked."""
    if "<details" not in html:
        return html
    found = list(CLOSED_DETAILS.finditer(html))
    if not found:
        return html
    from lessonkit.util import markup

    def marked(marks: dict[int, str]) -> str:
        parts, pos = [], 0
        for k, m in enumerate(found):
            if k in marks:
                parts += [html[pos : m.end() - 1], marks[k]]
                pos = m.end() - 1
        return "".join(parts) + html[pos:]

    probe = markup.parse(marked({k: f" data-lk-fold{k}" for k in range(len(found))}))
    real = {
        int(a.removeprefix("data-lk-fold"))
        for node in probe.css("details")
        for a in node.attributes
        if a.startswith("data-lk-fold") and a[12:].isdigit()
    }
    out = marked({k: FOLDED for k in real})
    if _elements(out, drop="data-search-exclude") != _elements(html, drop="data-search-exclude"):
        return html
    return out


def _elements(html: str, drop: str) -> list[tuple[str, list[tuple[str, str | None]]]]:
    """The elements of a page in order, with their attributes (less ``drop``)."""
    from lessonkit.util import markup

    return [
        (node.tag or "", [(k, v) for k, v in node.attributes.items() if k != drop])
        for node in markup.elements(markup.parse(html))
    ]


INLINE_CODE = re.compile(r"(?<!<pre>)<code>((?:(?!</?code>).)*)</code>", re.S)


def _ordered(d: dict) -> dict:
    keys = ["location", "title", "text", "tags", FIELD, "boost"]
    return {**{k: d[k] for k in keys if k in d}, **{k: v for k, v in d.items() if k not in keys}}


def compact(data: dict) -> dict:
    """The index with its titles and texts compacted: inline code as ``<c>``, and without the
    zero-width spaces the separator makes redundant (:func:`compact_text`)."""
    sep = separator(data.get("config") or {})
    for d in data.get("docs", []):
        for key in ("title", "text"):
            value = d.get(key)
            if isinstance(value, str):
                value = INLINE_CODE.sub(r"<c>\1</c>", value)
                d[key] = compact_text(value, sep) if sep is not None else value
    return data


def dumps(data: dict) -> bytes:
    """The index as Material's client reads it, as UTF-8 (ASCII escapes only where a string
    cannot be encoded, which a lone surrogate cannot)."""
    data = {**data, "docs": [_ordered(d) for d in data.get("docs", [])]}
    try:
        return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(data, separators=(",", ":")).encode("ascii")


@dataclass(frozen=True)
class Module:
    """A Python file of the source browser: its page's URL, its dotted name, and its symbols
    (qualified name, line of the ``def`` or ``class``), in file order."""

    url: str
    name: str
    symbols: tuple[tuple[str, int], ...]


def module_name(file: str) -> str:
    """``autograd/numpy/__init__.py`` -> ``autograd.numpy``; ``tests/test_core.py`` -> ``tests.test_core``."""
    parts = file.removesuffix(".py").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" and len(parts) > 1 else parts)


# A symbol's entry is a section of its module's page, which Material's client ranks below a page
# with the same match (after Lunr's score, it multiplies a page's by 5 and a section's by 2), so
# symbol entries carry a boost. Lunr's score of a word is the field's boost times the entry's boost
# times the word's idf (its weight: the rarer, the higher), and the client looks a query up as a
# prefix (``defvjp*`` also matches ``defvjp_argnum``). Each entry's boost is SYMBOL_SCORE / idf of
# its name: every name weighs the same in its own entry, so that neither a rare name that merely
# begins with the query (``grad_chol`` for ``grad``) nor the many such names of a short word
# outweigh the lessons of a query of several words, and a name's own entry beats the lessons
# that name it; and times 1 + EXACT_STEP for each name that extends it (``defvjp`` ⊂
# ``defvjp_argnum`` ⊂ ``defvjp_argnums``), so that a name's own entry comes before longer names.
SYMBOL_SCORE = 13.0
EXACT_STEP = 0.25


def idf(df: int, n: int) -> float:
    """Lunr's weight of a word found ``df`` times (a field of an entry each) in ``n`` entries."""
    return math.log(1 + abs((n - df + 0.5) / (df + 0.5)))


def _words(value: str, sep: re.Pattern) -> set[str]:
    """The words the client's tokenizer makes of a field (tags are boundaries; lower case)."""
    return {w.lower() for w in sep.split(re.sub(r"<[^>]+>", " ", value)) if w}


def frequencies(docs: list[dict], sep: re.Pattern, fields=("title", "text", FIELD)) -> dict[str, int]:
    """Each word's count of (entry, field) pairs holding it: Lunr's document frequency."""
    out: dict[str, int] = {}
    for d in docs:
        for field in fields:
            value = d.get(field)
            values = value if isinstance(value, list) else [value] if isinstance(value, str) else []
            for word in set().union(*(_words(v, sep) for v in values)) if values else ():
                out[word] = out.get(word, 0) + 1
    return out


def _heights(names: list[str]) -> dict[str, int]:
    """The length of the longest chain of names that extend each name (compared in lower case)."""
    keys = sorted({n.lower() for n in names})
    height: dict[str, int] = {}
    for key in sorted(keys, key=len, reverse=True):  # the longer first: their heights are known
        longer = [height[k] for k in keys if len(k) > len(key) and k.startswith(key)]
        height[key] = 1 + max(longer) if longer else 0
    return height


def symbol_entries(modules: list[Module], docs: list[dict] | None = None, sep: re.Pattern | None = None) -> list[dict]:
    """One entry per module (its page, titled with its dotted name) and one per symbol, titled
    with its qualified name (``VJPNode.__init__``), at its line on the module's page, boosted (see
    above; ``docs``: the index's other entries, ``sep``: its separator) so that a search for a name
    lists its definition first. The text stays empty: the title is what a reader searches for,
    and the index keeps its size."""
    out: list[dict] = []
    for m in modules:
        out.append({"location": m.url, "title": m.name, "text": ""})
        out += [{"location": f"{m.url}#L{line}", "title": name, "text": ""} for name, line in m.symbols]
    names = [d["title"] for d in out if "#" in d["location"]]
    height = _heights(names)
    sep = sep or re.compile(r"[\s\-]+")
    every = (docs or []) + out
    df, n = frequencies(every, sep), len(every)
    for d in out:
        if "#" in d["location"]:
            word = d["title"].lower()
            weight = idf(df.get(word, 1), n)
            d["boost"] = max(1, round(SYMBOL_SCORE * (1 + EXACT_STEP * height[word]) / weight))
    return out


def rewrite(
    path: Path, terms_of=None, order: list[str] | None = None, modules: list[Module] | None = None
) -> tuple[int, int]:
    """Rewrite the index at ``path``: without repeated blocks (``order``: the pages' URLs in
    navigation order), compacted, with ``terms_of(docs)`` (location -> terms) as ``defines``, and
    with the entries of the source browser's ``modules`` and their symbols at the end
    (:func:`symbol_entries`; none already there). Returns the sizes before and after."""
    raw = path.read_bytes()
    data = json.loads(raw)
    docs = data.get("docs", [])
    if order is not None:
        drop_repeats(docs, order)
    if terms_of is not None:
        add_terms(data, terms_of(docs))
    if modules:
        have = {d["location"] for d in docs}
        config = data.get("config") or {}
        try:
            sep = re.compile(config.get("separator") or r"[\s\-]+")
        except re.error:
            sep = None
        docs += [d for d in symbol_entries(modules, docs, sep) if d["location"] not in have]
    out = dumps(compact(data))
    if out != raw:
        path.write_bytes(out)
    return len(raw), len(out)
