"""Stage 3: turn resolved blocks into HTML (Material code blocks, escaped text)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html import escape
from typing import Callable, Protocol

from lessonkit.config.labels import Labels, defaults
from lessonkit.errors import LessonError, Problem
from lessonkit.kinds.base import Resolved
from lessonkit.run.runner import Result
from lessonkit.source.pin import Pin
from lessonkit.util.store import Store, digest

# What `Renderer.code` makes of highlighted code; part of its cache key (bump it when that changes).
CODE_HTML = "2"  # 2: each line's anchor carries its number (data-ln), for print

# Block chrome (badges, link rows, labels, provenance, the head's file · symbol · commit · lines)
# stays out of the search index: a search for "GitHub" or a badge's word should not match every
# block, and a teaser should not begin with a commit id (a symbol's name leads to its definition
# through the index's entries for the source browser: lessonkit.site.search.symbol_entries).
# Material drops the attribute itself.
NO_SEARCH = ' data-search-exclude="chrome"'


class Links(Protocol):
    """Where a rendered block links to on the site; ``None`` when there is no such page."""

    def source(self, file: str, start: int, end: int) -> str | None: ...
    def script(self, file: str) -> str | None: ...
    def api(self, file: str, symbol: str | None) -> str | None: ...
    def page(self, uri: str) -> str | None: ...  # a docs page (``lessons/01-x.md``)


class NoLinks:
    def source(self, file, start, end):
        return None

    def script(self, file):
        return None

    def api(self, file, symbol):
        return None

    def page(self, uri):
        return None


def anchors(resolved: list[Resolved]) -> list[str]:
    """Stable ids from each block's kind (e.g. src-<Symbol>, teach-<n>, exp-<script stem>);
    repeats get -2, -3…"""
    seen: dict[str, int] = {}
    per_kind: dict[str, int] = {}
    out = []
    for r in resolved:
        per_kind[r.spec.name] = n = per_kind.get(r.spec.name, 0) + 1
        base = re.sub(r"[^A-Za-z0-9_-]+", "-", r.spec.anchor(r, n)) or "block"  # a project's kind: any text
        seen[base] = seen.get(base, 0) + 1
        out.append(base if seen[base] == 1 else f"{base}-{seen[base]}")
    return out


def page_ids(resolved: list[Resolved], ids: list[str], line_refs: int, lesson: bool) -> dict[str, str]:
    """Every id the engine puts on a page, and what carries it: each block's id, the line anchors
    of the code it shows (``<id>-L<n>``), an experiment's output (``<id>-output``), the inline
    source references (``ref-<n>``) and, on a lesson that cites source, its list (``cited-source``)."""
    out: dict[str, str] = {}
    for r, anchor in zip(resolved, ids, strict=True):
        what = f"the {r.spec.name} block on line {r.block.line}"
        out.setdefault(anchor, what)
        if r.spec.citation is not None:  # the kinds that show code (not snapshot, figure)
            text, start = code_of(r)
            for n in range(start, start + text.count("\n")):
                out.setdefault(f"{anchor}-L{n}", f"line {n} of {what}")
        if r.job is not None and r.spec.citation == "script":
            out.setdefault(f"{anchor}-output", f"the output of {what}")
    for n in range(1, line_refs + 1):
        out.setdefault(f"ref-{n}", f"inline source reference {n}")
    if lesson and any(r.excerpt is not None and r.spec.citation == "source" for r in resolved):
        out.setdefault("cited-source", "the list of cited source")
    return out


def duplicate_ids(path: str, written: list[tuple[str, int]], generated: dict[str, str]) -> list[Problem]:
    """An id the author wrote (``{#id}``, ``id="…"``) that another element of the page has too: links
    to it would reach only one of them."""
    out: list[Problem] = []
    seen: dict[str, int] = {}
    for ident, line in written:
        if ident in generated:
            out.append(
                Problem(
                    f"the id `{ident}` is also the id of {generated[ident]}",
                    path,
                    line,
                    "give this element another id: a link to it would reach only one of the two",
                )
            )
        elif ident in seen:
            out.append(
                Problem(
                    f"the id `{ident}` is given twice on this page (first on line {seen[ident]})",
                    path,
                    line,
                    "give each element its own id",
                )
            )
        seen.setdefault(ident, line)
    return out


def code_of(r: Resolved) -> tuple[str, int]:
    """The code a block shows and its first line number: the excerpt, else the body."""
    if r.excerpt is not None:
        return r.excerpt.text, r.excerpt.start
    return "\n".join(r.block.body or ()) + "\n", 1


@dataclass
class Deferred:
    """Highlighted code and MathML kept out of the page until after the search index has read it.

    The page first carries the same code as plain text between two comment markers
    (the search index extracts exactly the same text from either form, and plain
    text is far cheaper to parse); :meth:`fill` then swaps the highlighted HTML in.
    """

    nonce: str
    html: dict[str, str]

    def _hold(self, html: str) -> str:
        token = f"lk-defer-{self.nonce}-{len(self.html)}"
        self.html[token] = html
        return token

    def slot(self, text: str, highlighted: str) -> str:
        token = self._hold(highlighted)
        return (
            f'<!--{token}--><div class="language-python highlight"><pre><code>{escape(text, quote=False)}'
            f'</code></pre></div><!--/{token}-->'
        )

    def slot_text(self, text_html: str, html: str) -> str:
        """``html`` (a formula's MathML) held back like code; the page carries ``text_html``
        meanwhile (for a formula, nothing: its wrapper keeps it out of the index anyway)."""
        token = self._hold(html)
        return f"<!--{token}-->{text_html}<!--/{token}-->"

    def fill(self, page_html: str) -> tuple[str, list[str]]:
        """``page_html`` with every slot filled, and the tokens that were not found."""
        missing = []
        for token, html in self.html.items():
            start = page_html.find(f"<!--{token}-->")
            end_mark = f"<!--/{token}-->"
            end = page_html.find(end_mark, start)
            if start < 0 or end < 0:
                missing.append(token)
                continue
            page_html = page_html[:start] + html + page_html[end + len(end_mark) :]
        return page_html, missing


LINENO_LINK = re.compile(r'(<span class="(?:normal|special)">)<a href=')


@dataclass
class Renderer:
    pin: Pin
    highlight: Callable[..., str]  # pymdownx Highlight(...).highlight
    links: Links
    provenance: str  # "Python 3.11.7 · NumPy 2.4.6 · autograd 1.9.1 (f53a217)"
    upstream: str = ""  # how disclaimers name the pinned project, e.g. "HIPS/autograd"
    labels: Labels = field(default_factory=defaults)  # lessonkit.config.labels, then site.toml [labels]
    store: Store | None = None  # highlighted code by content (key includes `tools`)
    tools: str = ""  # versions and options of whatever `highlight` depends on
    deferred: Deferred | None = None
    no_search: str = NO_SEARCH
    project: object = None  # the project whose pages are rendered (kinds that render inline references)
    page: str = ""  # the project-relative page being rendered
    recalls: dict = field(default_factory=dict)  # ordinal -> recall.Showing (verify.Report.recalls)
    code_of = staticmethod(code_of)

    def code(self, text: str, start: int, anchor: str, title: str | None = None, emphasize=()) -> str:
        """Highlighted code with real line numbers from ``start``; ``emphasize``: file lines to mark
        (pymdownx's ``hl_lines``, which Material styles as ``.hll``)."""
        hl = [n - start + 1 for n in emphasize if n >= start]

        def make() -> str:
            html = self.highlight(text, "python", linestart=start, title=title, code_block_count=0, hl_lines=hl or None)
            html = html.replace("__codelineno-0-", f"{anchor}-L").replace("__span-0-", f"{anchor}-s")
            # line-number links are for the mouse (a link to the line): out of the Tab order
            html = LINENO_LINK.sub(r'\1<a tabindex="-1" href=', html)
            # Each line's anchor carries the line's number: a printed page shows it at the start of
            # the line (lessonkit.css), where the number column cannot follow a line that wraps.
            line = re.compile(f'<a id="{re.escape(anchor)}-L(\\d+)" name="{re.escape(anchor)}-L(\\d+)"></a>')
            return line.sub(lambda m: m.group(0)[:-5] + f' data-ln="{m.group(1)}"></a>', html)

        if self.store is None:
            html = make()
        else:
            key = digest("code", CODE_HTML, self.tools, text, str(start), anchor, title or "", repr(hl))
            html = self.store.get_or_make(key, make)
        return self.deferred.slot(text, html) if self.deferred is not None else html

    def excerpt(self, ex, anchor: str) -> str:
        """An excerpt's code: one highlighted block per run (each in its own container, so that
        Material gives each its own copy button, which copies that run's code only) with an elision
        row, outside any code, for every range of left-out lines; it links to all of them in the
        source browser (else upstream)."""
        parts = ex.parts()
        if len(parts) == 1:
            return self.code(ex.text, ex.start, anchor, emphasize=ex.emphasize)
        out, k = [], 0
        for what, a, b, lines in parts:
            if what == "run":
                k += 1
                code = self.code("\n".join(lines) + "\n", a, anchor, emphasize=ex.emphasize)
                out.append(f'<div class="lk-run" id="{anchor}-r{k}">{code}</div>')
                continue
            lo, hi = ex.scope or (ex.start, ex.end)
            if ex.origin == "pinned":
                href = self.links.source(ex.file, lo, hi) or self.pin.permalink(ex.file, lo, hi)
            else:
                href = self.links.script(ex.file)
            text = escape(self.labels.fill("elided", n=b - a + 1))
            title = escape(self.labels["elided-title"])
            row = f'<a href="{escape(href)}" title="{title}">{text}</a>' if href else text
            out.append(f'<div class="lk-elided"{self.no_search}>{row}</div>')
        return "".join(out)

    def shown(self, r: Resolved, anchor: str) -> str:
        """The code a block shows: its excerpt (runs and elision rows), else its body."""
        if r.excerpt is not None:
            return self.excerpt(r.excerpt, anchor)
        return self.code(*self.code_of(r), anchor)

    def head(self, badge: str, kind: str, meta: list[str], links: list[tuple[str, str]]) -> str:
        link_html = " ".join(f'<a class="lk-link" href="{escape(u)}">{escape(t)}</a>' for t, u in links if u)
        return (
            f'<div class="lk-head"><span class="lk-badge lk-badge-{kind}"{NO_SEARCH}>{escape(badge)}</span>'
            f'<span class="lk-meta"{NO_SEARCH}>{" · ".join(meta)}</span>'
            f'<span class="lk-links"{NO_SEARCH}>{link_html}</span></div>'
        )

    def block(self, r: Resolved, anchor: str, result: Result | None = None) -> str:
        """A resolved block's HTML, as its kind renders it."""
        return r.spec.render(self, r, anchor, result)

    def error(self, err: LessonError, anchor: str | None = None) -> str:
        items = "".join(f"<li><code>{escape(str(p))}</code></li>" for p in err.problems)
        ident = f' id="{anchor}"' if anchor else ""  # links to the failed block still land here
        word = escape(self.labels["annotation-error"])
        return f'<div class="lk-block lk-error"{ident}><strong>{word}</strong><ul>{items}</ul></div>'

    def inline_error(self, err: LessonError) -> str:
        """The error box for an inline reference: a span, so the paragraph stays a paragraph."""
        text = "; ".join(str(p) for p in err.problems)
        word = escape(self.labels["annotation-error"])
        return f'<span class="lk-error lk-inline-error"><strong>{word}</strong> <code>{escape(text)}</code></span>'
