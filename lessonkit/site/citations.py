"""Site-level cross-links, independent of MkDocs: who cites which lines, the
source browser pages, the symbol index and each lesson's list of cited source.

Everything here is derived from one verify report (the same parse and resolve
code path as the build and ``nox -s verify``), never from hand-kept lists.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from html import escape
from pathlib import Path, PurePosixPath
from typing import Callable

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer, get_lexer_for_filename
from pygments.util import ClassNotFound

from lessonkit.checks import living
from lessonkit.checks.verify import Report
from lessonkit.config.labels import Labels, defaults
from lessonkit.kinds.base import slug
from lessonkit.source.pyindex import SourceFile
from lessonkit.util.store import Store, digest
from lessonkit.util.text import md_code, md_text, md_url

FORMAT = "3"  # bump when the HTML of the generated pages changes shape
SOURCE_DIR = "source"
CODE_DIR = "code"
TITLE = re.compile(r"^#\s+(.+?)\s*(\{.*\})?\s*$", re.M)
LESSON = re.compile(r"^(\d\d)-")


@dataclass(frozen=True)
class Citation:
    page: str  # docs-relative source path, e.g. lessons/05-reverse-mode.md
    label: str  # short page label: "05" for lessons, else the page title
    anchor: str
    kind: str
    role: str | None  # the kind's citation role: "source", "script" or None (see lessonkit.kinds)
    origin: str  # "pinned" or "repo"
    file: str
    symbol: str | None
    start: int
    end: int
    title: str = ""  # the page's title (its first heading), what the lists of citing pages show

    @property
    def shown(self) -> str:
        """How a list of citing pages names the page: its title, else its label."""
        return self.title or self.label

    @property
    def target(self) -> str:
        return f"{self.page}#{self.anchor}"


def page_label(docs_rel: str, text: str) -> str:
    m = LESSON.match(PurePosixPath(docs_rel).name)
    if m:
        return m.group(1)
    t = TITLE.search(text)
    return t.group(1).strip() if t else PurePosixPath(docs_rel).stem


def page_title(docs_rel: str, text: str) -> str:
    """A page's title as a list of pages shows it: its first heading, as plain text."""
    t = TITLE.search(text)
    return t.group(1).strip().replace("`", "") if t else PurePosixPath(docs_rel).stem


def for_readers(cites: list[Citation], authors: tuple[str, ...]) -> list[Citation]:
    """The citations the source browser, the symbol index and the API reference list as citing
    pages: those of pages for readers, not of the pages for the series' authors (``authors``,
    docs-relative: ``[pages] authors`` of site.toml)."""
    return [c for c in cites if c.page not in authors]


def citations(report: Report, docs_prefix: str, texts: dict[str, str]) -> list[Citation]:
    """Every resolved block with an excerpt, labelled and anchored as the page renders it."""
    out = []
    for page, resolved in sorted(report.resolved.items()):
        rel = page[len(docs_prefix) :] if page.startswith(docs_prefix) else page
        label, title = page_label(rel, texts.get(page, "")), page_title(rel, texts.get(page, ""))
        for r, anchor in zip(resolved, report.anchors(page), strict=True):
            ex = r.excerpt
            if ex is not None and r.spec.citation is not None:
                out.append(
                    Citation(
                        rel,
                        label,
                        anchor,
                        r.block.kind,
                        r.spec.citation,
                        ex.origin,
                        ex.file,
                        ex.symbol,
                        ex.start,
                        ex.end,
                        title,
                    )
                )
    return out


def source_uri(file: str) -> str:
    return f"{SOURCE_DIR}/{file}.md"


def code_uri(file: str) -> str:
    return f"{CODE_DIR}/{file}.md"


def page_uri(c: Citation) -> str:
    return source_uri(c.file) if c.origin == "pinned" else code_uri(c.file)


def _lexer(name: str):
    if name.endswith(".py"):
        return PythonLexer(stripnl=False, ensurenl=False)
    try:
        return get_lexer_for_filename(name, stripnl=False, ensurenl=False)
    except ClassNotFound:
        from pygments.lexers import TextLexer

        return TextLexer(stripnl=False, ensurenl=False)


_LINE = re.compile(r'<span id="L-(\d+)">')


def _highlight_key(sf: SourceFile) -> str:
    import pygments

    return digest("highlight", pygments.__version__, sf.rel, sf.data)


def highlighted(sf: SourceFile, cache: Path | None = None) -> str:
    """Pygments HTML of a whole file, one ``<span id="L-n">`` per line; cached by content."""

    def make() -> str:
        body = highlight(sf.text, _lexer(sf.rel), HtmlFormatter(linespans="L"))
        return body[body.index("<pre>") + 5 : body.rindex("</pre>")].removeprefix("<span></span>")

    return Store(cache, "highlight").get_or_make(_highlight_key(sf), make)


def is_highlighted(sf: SourceFile, cache: Path | None) -> bool:
    """Whether :func:`highlighted` would find ``sf`` in the cache."""
    return Store(cache, "highlight").holds(_highlight_key(sf))


def cite_groups(cites: list[Citation]) -> list[tuple[str, str | None, list[tuple[int, int, list[Citation]]]]]:
    """The cited ranges of one file, one group per symbol: ``(id, symbol, [(start, end, one
    citation per page), ...])``, groups in the order of their first line, ranges in line order.
    ``id`` is the group's anchor (``cited-…``). A citation without a symbol joins the symbol that
    another citation gives the same lines, else it is a group of its own (a fragment)."""
    named = {(c.start, c.end): c.symbol for c in cites if c.symbol}
    groups: dict[str, tuple[str | None, dict[tuple[int, int], list[Citation]]]] = {}
    for c in cites:
        symbol = c.symbol or named.get((c.start, c.end))
        gid = f"cited-{slug(symbol)}" if symbol else f"cited-L{c.start}-L{c.end}"
        groups.setdefault(gid, (symbol, defaultdict(list)))[1][(c.start, c.end)].append(c)
    out = []
    for gid, (symbol, ranges) in groups.items():
        rows = [(start, end, per_page(cs)) for (start, end), cs in sorted(ranges.items())]
        out.append((gid, symbol, rows))
    return sorted(out, key=lambda g: (g[2][0][0], g[2][0][1], g[0]))


def _cite_text(c: Citation, labels: Labels, title: bool = False) -> str:
    return (c.shown if title else c.label) + (labels["cite-prose"] if c.role == "prose" else "")


def _span(start: int, end: int) -> str:
    return f"L{start}" if start == end else f"L{start}–L{end}"


def _range_href(start: int, end: int) -> str:
    return f"#L{start}" if start == end else f"#L{start}-L{end}"


def code_html(
    sf: SourceFile,
    cites: list[Citation],
    href: Callable[[Citation], str],
    symbol_lines: dict[int, list[str]],
    cache: Path | None = None,
    labels: Labels | None = None,
) -> str:
    """The whole file, highlighted, one anchor per line (#L12), cited ranges marked.

    The ``code`` element's text is exactly the file's text: the line numbers are drawn by CSS
    (a counter on an empty, non-focusable link) and the first line of each cited range carries
    an empty gutter marker, a link to its symbol's entry in the list of cited ranges
    (:func:`cites_table_html`) whose name lists the citing pages."""
    cited: set[int] = set()
    for c in cites:
        cited.update(range(c.start, c.end + 1))
    labels = labels or defaults()
    sep, colon = labels["list-separator"], labels["colon"]
    marks_at: dict[int, tuple[str, list[str]]] = {}  # first line -> (group id, citing pages)
    for gid, _, rows in cite_groups(cites):
        for start, _end, cs in rows:
            _, pages = marks_at.setdefault(start, (gid, []))
            pages += [t for t in (_cite_text(c, labels) for c in cs) if t not in pages]
    body = highlighted(sf, cache)

    def line(m: re.Match) -> str:
        n = int(m.group(1))
        cls = "lk-line lk-cited" if n in cited else "lk-line"
        anchors = "".join(f'<span class="lk-sym" id="sym-{slug(s)}"></span>' for s in symbol_lines.get(n, []))
        mark = ""
        if n in marks_at:
            gid, pages = marks_at[n]
            name = escape(labels["cited-by-aria"] + colon + sep.join(pages))  # what a screen reader says
            tip = escape(labels["cited-by"] + sep.join(pages))  # what the pointer shows
            mark = f'<a class="lk-cite-mark" href="#{gid}" aria-label="{name}" title="{tip}"></a>'
        return (
            f'<span id="L{n}" class="{cls}"><a class="lk-ln" href="#L{n}" tabindex="-1" aria-hidden="true"></a>'
            + mark
            + anchors
        )

    body = _LINE.sub(line, body)
    return f'<div class="lk-source highlight"><pre><code>{body}</code></pre></div>'


def _definitions(sf: SourceFile) -> list:
    """A Python file's symbols (module level and class members); none for other files."""
    if not sf.rel.endswith(".py"):
        return []
    try:
        return [d for d in sf.definitions if d.kind != "call"]
    except Exception:  # not parseable: no symbols, the code is still shown
        return []


def symbol_lines(sf: SourceFile) -> dict[int, list[str]]:
    """Line -> names defined there, for the ``#sym-…`` anchors of a source page."""
    by_line: dict[int, list[str]] = defaultdict(list)
    for d in _definitions(sf):
        by_line[d.start].append(d.name)
    return by_line


def per_page(cites: list[Citation]) -> list[Citation]:
    """One citation per page and cited range: the page's first block citing it, pages in order."""
    first: dict[tuple, Citation] = {}
    for c in cites:  # citations() lists each page's blocks in page order
        key = (c.page, c.origin, c.file, c.start, c.end)
        if key not in first:
            first[key] = c
    # lessons (numbered labels) first, in their order, then the other pages
    return sorted(first.values(), key=lambda c: (not c.label.isdigit(), c.page, c.start, c.end))


def symbol_index(cites: list[Citation], rel_link: Callable[[str], str], labels: Labels | None = None) -> str:
    """Every cited symbol, grouped by file: one row per cited range, with one link per citing
    page (its short label, to the page's first block citing the range)."""
    by_file: dict[tuple[str, str], dict[tuple, list[Citation]]] = defaultdict(lambda: defaultdict(list))
    labels = labels or defaults()
    word = {k: md_text(labels[k]) for k in ("browse-file", "col-symbol", "col-lines", "col-cited-in", "fragment")}
    for c in cites:
        by_file[(c.origin, c.file)][(c.symbol or "", c.start, c.end)].append(c)
    sep = labels["list-separator"]
    parts = []
    for (origin, file), ranges in sorted(by_file.items(), key=lambda kv: (kv[0][0] != "pinned", kv[0][1])):
        page = rel_link(source_uri(file) if origin == "pinned" else code_uri(file))
        parts.append(
            f"## {md_code(file)}\n\n[{word['browse-file']}]({md_url(page)})\n\n"
            f"| {word['col-symbol']} | {word['col-lines']} | {word['col-cited-in']} |\n|---|---|---|"
        )
        # one row per symbol (its ranges, then every page citing any of them, once), a fragment per range
        rows: dict[tuple, list[tuple[int, int, list[Citation]]]] = {}
        for (sym, start, end), cs in sorted(ranges.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
            rows.setdefault((sym,) if sym else ("", start, end), []).append((start, end, cs))
        for key, spans in rows.items():
            users: dict[str, Citation] = {}
            for c in per_page([c for _, _, cs in spans for c in cs]):
                users.setdefault(c.page, c)
            where = sep.join(
                f"[{md_text(c.shown)}]({md_url(f'{rel_link(c.page)}#{c.anchor}')})" for c in users.values()
            )
            lines = sep.join(f"[{_span(a, b)}]({md_url(f'{page}#L{a}')})" for a, b, _ in spans)
            shown = md_code(key[0]) if key[0] else word["fragment"]
            parts.append(f"| {shown} | {lines} | {where} |")
        parts.append("")
    return "\n".join(parts) + "\n"


FOOTER = re.compile(r"\n[ \t]*(?:-{3,}|\*{3,}|_{3,})[ \t]*\n+(?:[^\n]*\]\([^)\n]*\)[^\n]*\n?)+\s*\Z")


def add_section(markdown: str, section: str) -> str:
    """``section`` at the end of a page, but before a closing footer of links (a rule,
    then only lines with links, such as a lesson's previous/next line)."""
    if not section:
        return markdown
    m = FOOTER.search(markdown)
    if m is None:
        return markdown + section
    return markdown[: m.start()] + section + markdown[m.start() :]


def cited_list(page_cites: list[Citation], rel_link: Callable[[str], str], labels: Labels | None = None) -> str:
    """The list appended to a lesson: the source it cited, in page order."""
    rows, seen = [], set()
    labels = labels or defaults()
    word = {k: md_text(labels[k]) for k in labels if k.startswith(("col-", "cited-", "jump-", "fragment"))}
    for c in page_cites:
        if c.role != "source":
            continue
        key = (c.origin, c.file, c.start, c.end)
        if key in seen:
            continue
        seen.add(key)
        uri = source_uri(c.file) if c.origin == "pinned" else code_uri(c.file)
        sym = md_code(c.symbol) if c.symbol else word["fragment"]
        where = f"[{md_code(c.file)} {_span(c.start, c.end)}]({md_url(f'{rel_link(uri)}#L{c.start}')})"
        rows.append(f"| {sym} | {where} | [{word['jump-to-block']}]({md_url('#' + c.anchor)}) |")
    if not rows:
        return ""
    # the table repeats what the blocks above already show: keep it out of the search index
    return (
        f"\n\n## {word['cited-heading']} {{#cited-source}}\n\n"
        f"{word['cited-intro']}\n\n"
        '<div class="lk-cited-list" markdown="1" data-search-exclude="list">\n\n'
        f"| {word['col-symbol']} | {word['col-location']} | {word['col-this-page']} |\n|---|---|---|\n"
        + "\n".join(rows)
        + "\n\n</div>\n"
    )


def _table(head: list[str], rows: list[list[str]]) -> str:
    th = "".join(f"<th>{h}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def symbol_table_html(sf: SourceFile, labels: Labels | None = None) -> str:
    """HTML table of a Python file's symbols (built directly: no Markdown pass needed)."""
    rows = [
        [
            f'<a href="#sym-{slug(d.name)}"><code>{escape(d.name)}</code></a>',
            d.kind,
            f'<a href="#L{d.start}">{_span(d.start, d.end)}</a>',
        ]
        for d in _definitions(sf)
    ]
    labels = labels or defaults()
    return _table([escape(labels[k]) for k in ("col-symbol", "col-type", "col-lines")], rows) if rows else ""


def cites_table_html(cites: list[Citation], href: Callable[[Citation], str], labels: Labels | None = None) -> str:
    """The list of cited ranges: one row per symbol (the gutter markers of the code link to it),
    each of its ranges with one link per citing page (no internal block ids)."""
    labels = labels or defaults()
    if not cites:
        return f"<p>{escape(labels['not-cited'])}</p>"
    colon, sep = escape(labels["colon"]), escape(labels["list-separator"])
    rows = []
    for gid, symbol, ranges in cite_groups(cites):
        first = ranges[0]
        name = f"<code>{escape(symbol)}</code>" if symbol else escape(labels["fragment"])
        items = "".join(
            f'<li><a href="{_range_href(start, end)}">{_span(start, end)}</a>{colon}'
            + sep.join(f'<a href="{escape(href(c))}">{escape(_cite_text(c, labels, title=True))}</a>' for c in cs)
            + "</li>"
            for start, end, cs in ranges
        )
        rows.append(
            f'<tr id="{gid}" class="lk-cite-group"><td><a href="{_range_href(first[0], first[1])}">{name}</a></td>'
            f'<td><ul class="lk-cite-ranges">{items}</ul></td></tr>'
        )
    head = "".join(f"<th>{escape(labels[k])}</th>" for k in ("col-symbol", "col-citing-pages"))
    return f'<table><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


_API_ENTRY = re.compile(
    r'(<h(\d) id="([\w.]+)" class="doc doc-heading">.*?</h\2>\s*'
    r'(?:<div class="language-python doc-signature highlight">.*?</div>)?)',
    re.S,
)


def api_entry_links(
    html: str,
    project,
    cites: list[Citation],
    source_href: Callable[[str, int], str | None],
    cite_href: Callable[[Citation], str],
) -> str:
    """Under each API entry (mkdocstrings heading and signature): the call signature the page's
    own table gives for the name (when it differs from the wrapped function's), the entry's lines
    in the source browser, and one link per page that cites the object. Labels: site.toml [labels]."""
    labels = project.site.labels
    colon, sep = escape(labels["colon"]), escape(labels["list-separator"])

    def where(dotted: str):
        parts = dotted.split(".")
        for i in range(len(parts) - 1, 0, -1):
            for file in ("/".join(parts[:i]) + ".py", "/".join(parts[:i]) + "/__init__.py"):
                if file in project.pin.manifest:
                    return file, ".".join(parts[i:])
        return None, None

    def add(m: re.Match) -> str:
        # every signature is highlighted as block 0: give its line ids the entry's name, so that
        # ids stay unique on the page (and each copy button targets its own signature)
        head = re.sub(r"__(codelineno|span)-0-", lambda k: f"{slug(m.group(3))}-sig-{k.group(1)}-", m.group(1))
        file, symbol = where(m.group(3))
        if file is None:
            return head
        try:
            defs = {d.name: d for d in _definitions(project.pinned.file(file))}
        except Exception:  # not a readable Python file: the entry stays as it is
            return head
        items = []
        short = symbol.rsplit(".", 1)[-1]
        sig = re.search(r"<tr>\s*<td><code>" + re.escape(short) + r"</code></td>\s*<td><code>(.*?)</code></td>", html)
        if sig and f"{short}(" in sig.group(1):
            items.append(f'{escape(labels["api-call"])}{colon}<code>{sig.group(1)}</code>')
        d = defs.get(symbol)
        href = source_href(file, d.start) if d else None
        if d and href:
            items.append(
                f'{escape(labels["api-source"])}{colon}<a href="{escape(href)}"><code>{escape(file)}</code> '
                f'{_span(d.start, d.end)}</a>'
            )
        users = per_page([c for c in cites if c.origin == "pinned" and c.file == file and c.symbol == symbol])
        if users:
            seen, links = set(), []
            for c in users:  # one link per page
                if c.page not in seen:
                    seen.add(c.page)
                    links.append(f'<a href="{escape(cite_href(c))}">{escape(c.label)}</a>')
            items.append(f'{escape(labels["api-lessons"])}{colon}' + sep.join(links))
        if not items:
            return head
        return head + f'<p class="lk-api-links" data-search-exclude="chrome">{" · ".join(items)}</p>'

    return _API_ENTRY.sub(add, html)


# -- the source browser's backlinks


def prose_citations(project, report: Report, docs_prefix: str, texts: dict[str, str]) -> list:
    """A :class:`Citation` for every inline ``line`` reference (role ``"prose"``:
    the source browser links back to it; the lesson's cited-source list, which lists blocks,
    does not)."""
    out = []
    for page, n, _, r in living.line_refs(project, report):
        rel = page[len(docs_prefix) :] if page.startswith(docs_prefix) else page
        label, title = page_label(rel, texts.get(page, "")), page_title(rel, texts.get(page, ""))
        out.append(
            Citation(rel, label, f"ref-{n}", "line", "prose", "pinned", r.file, r.ref.symbol, r.start, r.end, title)
        )
    return out
