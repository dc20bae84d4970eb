"""``real-source``: a verbatim excerpt of the pinned tree, by Symbol or quoted lines."""

from __future__ import annotations

import re
from html import escape

from lessonkit.errors import Problem
from lessonkit.pipeline.parse import LINES
from lessonkit.source import select
from lessonkit.source.resolve import check_commit, check_lines, excerpt_of
from lessonkit.kinds.base import Kind, Resolved, slug

COMMIT = re.compile(r"^[0-9a-fA-F]{7,40}$")


class RealSource(Kind):
    name = "real-source"
    label = "REAL SOURCE"
    fields = ("File", "Symbol", "Commit", "Lines", *select.PATTERNS, "Emphasize", "Docstring", "Dedent")
    # `Commit` may be left out: the project has one pin (sourcemap/pin.toml), which every block shows;
    # when given, it must name that pin.
    required = ("File",)

    def validate(self, b):
        out = []
        c = b.get("Commit")
        if c and not COMMIT.match(c):
            out.append(
                Problem(
                    f"`Commit: {c}` is not a commit id",
                    b.path,
                    b.line_of("Commit"),
                    "use the pinned commit or a prefix of ≥ 7 hex digits",
                )
            )
        locators = ("Symbol", "Lines", *select.PATTERNS)
        if not any(k in b.fields for k in locators) and b.body is None:
            out.append(
                Problem(
                    "real-source block with neither `Symbol` nor a body",
                    b.path,
                    b.line,
                    "name a Symbol, quote the lines as a body, or give `Lines: a-b`",
                )
            )
        v = b.get("Lines")
        if v:
            m = LINES.match(v)
            if not m or int(m[1]) < 1 or int(m[1]) > int(m[2]):  # LINES bounds the digits
                out.append(
                    Problem(
                        f"`Lines: {v}` is not a range `a-b` with 1 ≤ a ≤ b",
                        b.path,
                        b.line_of("Lines"),
                        "for example `Lines: 25-32`",
                    )
                )
        return out + select.header_problems(b)

    def resolve(self, project, block):
        check_commit(block, project.pin.commit)
        ex = excerpt_of(project.pinned, block)
        check_lines(block, ex)
        return Resolved(block, ex)

    def anchor(self, r, n):
        return "src-" + slug(r.block.get("Symbol") or f"{r.excerpt.file.rsplit('/', 1)[-1]}-L{r.excerpt.start}")

    def render(self, renderer, r, anchor, result):
        ex = r.excerpt
        meta = [f"<code>{escape(ex.file)}</code>"]
        api = renderer.links.api(ex.file, ex.symbol)
        if ex.symbol:
            sym = f"<code>{escape(ex.symbol)}</code>"
            meta.append(f'<a href="{escape(api)}">{sym}</a>' if api else sym)
        meta += [f"<code>{renderer.pin.short}</code>", f"L{ex.start}–L{ex.end}"]
        links = [
            (renderer.labels["view-source"], renderer.links.source(ex.file, ex.start, ex.end)),
            (renderer.labels["permalink"], renderer.pin.permalink(ex.file, ex.start, ex.end)),
        ]
        return (
            f'<div class="lk-block lk-real-source" id="{anchor}">'
            + renderer.head(renderer.labels["real-source"], "real", meta, links)
            + renderer.excerpt(ex, anchor)
            + "</div>"
        )

    def plain(self, r, project, result):
        ex = r.excerpt
        symbol = ex.symbol or project.site.labels["fragment-plain"]
        head = f"# [REAL SOURCE] {ex.file} · {symbol} · {project.pin.short} · L{ex.start}-L{ex.end}"
        return ["```python", head, *ex.text_lines("# " + project.site.labels["elided"]), "```"]

    def repin(self, block):
        return ("source",)


KIND = RealSource()
