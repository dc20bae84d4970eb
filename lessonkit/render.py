"""Stage 3: turn resolved blocks into HTML (Material code blocks, escaped text)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import escape
from typing import Callable, Protocol

from .errors import LessonError
from .execute import Result
from .pin import Pin
from .project import Resolved
from .store import Store, digest

NOT_VERBATIM = "以下不是 HIPS/autograd verbatim source。"
# Block chrome (badges, link rows, labels, provenance) stays out of the search index: a search
# for "GitHub" or "运行输出" should not match every block. Material drops the attribute itself.
NO_SEARCH = ' data-search-exclude="chrome"'


class Links(Protocol):
    """Where a rendered block links to on the site; ``None`` when there is no such page."""

    def source(self, file: str, start: int, end: int) -> str | None: ...
    def script(self, file: str) -> str | None: ...
    def api(self, file: str, symbol: str | None) -> str | None: ...


class NoLinks:
    def source(self, file, start, end):
        return None

    def script(self, file):
        return None

    def api(self, file, symbol):
        return None


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]+", "-", text).strip("-") or "x"


def anchors(resolved: list[Resolved]) -> list[str]:
    """Stable ids: src-<Symbol>, teach-<n>, exp-<script stem>; repeats get -2, -3…"""
    seen: dict[str, int] = {}
    out = []
    teach = 0
    for r in resolved:
        b = r.block
        if b.kind == "real-source":
            base = "src-" + slug(b.get("Symbol") or f"{r.excerpt.file.rsplit('/', 1)[-1]}-L{r.excerpt.start}")
        elif b.kind == "experiment":
            base = "exp-" + (slug(b.get("File").rsplit("/", 1)[-1].removesuffix(".py")) if b.get("File")
                             else f"inline-L{b.line}")
        else:
            teach += 1
            base = f"teach-{teach}"
        seen[base] = seen.get(base, 0) + 1
        out.append(base if seen[base] == 1 else f"{base}-{seen[base]}")
    return out


def code_of(r: Resolved) -> tuple[str, int]:
    """The code a block shows and its first line number: the excerpt, else the body."""
    if r.excerpt is not None:
        return r.excerpt.text, r.excerpt.start
    return "\n".join(r.block.body) + "\n", 1


@dataclass
class Deferred:
    """Highlighted code kept out of the page until after the search index has read it.

    The page first carries the same code as plain text between two comment markers
    (the search index extracts exactly the same text from either form, and plain
    text is far cheaper to parse); :meth:`fill` then swaps the highlighted HTML in.
    """

    nonce: str
    html: dict[str, str]

    def slot(self, text: str, highlighted: str) -> str:
        token = f"lk-defer-{self.nonce}-{len(self.html)}"
        self.html[token] = highlighted
        return f'<!--{token}--><div class="language-python highlight"><pre><code>{escape(text, quote=False)}' \
               f'</code></pre></div><!--/{token}-->'

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
            page_html = page_html[:start] + html + page_html[end + len(end_mark):]
        return page_html, missing


@dataclass
class Renderer:
    pin: Pin
    highlight: Callable[..., str]  # pymdownx Highlight(...).highlight
    links: Links
    provenance: str  # "Python 3.11.7 · NumPy 2.4.6 · autograd 1.9.1 (f53a217)"
    store: Store | None = None  # highlighted code by content (key includes `tools`)
    tools: str = ""  # versions and options of whatever `highlight` depends on
    deferred: Deferred | None = None

    def code(self, text: str, start: int, anchor: str, title: str | None = None) -> str:
        def make() -> str:
            html = self.highlight(text, "python", linestart=start, title=title, code_block_count=0)
            return html.replace("__codelineno-0-", f"{anchor}-L").replace("__span-0-", f"{anchor}-s")

        if self.store is None:
            html = make()
        else:
            html = self.store.get_or_make(digest("code", self.tools, text, str(start), anchor, title or ""), make)
        return self.deferred.slot(text, html) if self.deferred is not None else html

    def head(self, badge: str, kind: str, meta: list[str], links: list[tuple[str, str]]) -> str:
        link_html = " ".join(f'<a class="lk-link" href="{escape(u)}">{escape(t)}</a>' for t, u in links if u)
        return (f'<div class="lk-head"><span class="lk-badge lk-badge-{kind}"{NO_SEARCH}>{escape(badge)}</span>'
                f'<span class="lk-meta">{" · ".join(meta)}</span>'
                f'<span class="lk-links"{NO_SEARCH}>{link_html}</span></div>')

    def real_source(self, r: Resolved, anchor: str) -> str:
        ex = r.excerpt
        meta = [f"<code>{escape(ex.file)}</code>"]
        api = self.links.api(ex.file, ex.symbol)
        if ex.symbol:
            sym = f"<code>{escape(ex.symbol)}</code>"
            meta.append(f'<a href="{escape(api)}">{sym}</a>' if api else sym)
        meta += [f"<code>{self.pin.short}</code>", f"L{ex.start}–L{ex.end}"]
        links = [("在站内源码中查看", self.links.source(ex.file, ex.start, ex.end)),
                 ("GitHub", self.pin.permalink(ex.file, ex.start, ex.end))]
        return (f'<div class="lk-block lk-real-source" id="{anchor}">'
                + self.head("REAL SOURCE", "real", meta, links)
                + self.code(*code_of(r), anchor) + "</div>")

    def teaching(self, r: Resolved, anchor: str) -> str:
        b, ex = r.block, r.excerpt
        meta = []
        if b.get("Title"):
            meta.append(escape(b.get("Title")))
        links = []
        if ex:
            meta.append(f"<code>{escape(ex.file)}</code>" + (f" · <code>{escape(ex.symbol)}</code>" if ex.symbol else "")
                        + f" · L{ex.start}–L{ex.end}")
            links.append(("查看文件", self.links.script(ex.file)))
        if r.based_on:
            base = r.based_on
            target = self.links.source(base.file, base.start, base.end) or \
                self.pin.permalink(base.file, base.start, base.end)
            meta.append(f'依据 <a href="{escape(target)}"><code>{escape(base.file)}::{escape(base.symbol)}</code></a>')
        note = f'<p class="lk-disclaimer"{NO_SEARCH}>{NOT_VERBATIM}</p>'
        if ex:
            note = (f'<p class="lk-disclaimer"{NO_SEARCH}>{NOT_VERBATIM}这是本系列的独立教学实现，'
                    f'代码逐字取自本仓库的 <code>{escape(ex.file)}</code>，并由测试覆盖。</p>')
        body = self.code(*code_of(r), anchor)
        return (f'<div class="lk-block lk-teaching" id="{anchor}">'
                + self.head("TEACHING SIMPLIFICATION", "teach", meta, links) + note + body + "</div>")

    def experiment(self, r: Resolved, anchor: str, result: Result) -> str:
        b, ex = r.block, r.excerpt
        if ex:
            meta = [f"<code>{escape(ex.file)}</code>"]
            if ex.symbol:
                meta.append(f"<code>{escape(ex.symbol)}</code>")
            links = [("查看脚本", self.links.script(ex.file))]
        else:
            meta, links = ["内联脚本"], []
        code = self.code(*code_of(r), anchor)
        purpose = f'<p class="lk-purpose"><strong>Purpose：</strong>{escape(b.get("Purpose"))}</p>'
        out = escape(result.stdout) if result.stdout else "（无输出）"
        notice = ""
        if result.truncated:
            notice = (f'<p class="lk-truncated">输出过长：另有 {result.truncated} 字节未显示'
                      f'（上限 {len(result.stdout.encode())} 字节）。</p>')
        return (f'<div class="lk-block lk-experiment" id="{anchor}">'
                + self.head("EXPERIMENT", "exp", meta, links) + purpose + code
                + f'<div class="lk-output-label"{NO_SEARCH}>本次构建的运行输出</div>'
                  f'<pre class="lk-output"><code>{out}</code></pre>{notice}'
                + f'<p class="lk-provenance"{NO_SEARCH}>{escape(self.provenance)} · 退出码 {result.exit_code}</p></div>')

    def error(self, err: LessonError, anchor: str | None = None) -> str:
        items = "".join(f"<li><code>{escape(str(p))}</code></li>" for p in err.problems)
        ident = f' id="{anchor}"' if anchor else ""  # links to the failed block still land here
        return f'<div class="lk-block lk-error"{ident}><strong>注解错误</strong><ul>{items}</ul></div>'
