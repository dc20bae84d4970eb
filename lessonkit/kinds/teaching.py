"""``teaching-simplification``: code written for teaching, shown with a disclaimer; it may
quote a file of this repository verbatim and name the pinned symbol it is ``Based-on``."""

from __future__ import annotations

from html import escape

from lessonkit.errors import Problem
from lessonkit.kinds.base import Kind, Resolved
from lessonkit.source.resolve import based_on, excerpt_of


class Teaching(Kind):
    name = "teaching-simplification"
    label = "TEACHING"
    fields = ("Title", "Based-on", "File", "Symbol")
    required = ()

    def validate(self, b):
        out = []

        def bad(msg, key, hint):
            out.append(Problem(msg, b.path, b.line_of(key) if key else b.line, hint))

        if "File" not in b.fields and b.body is None:
            bad("empty teaching-simplification block", None, "write the teaching code as the body")
        if "Symbol" in b.fields and "File" not in b.fields:
            bad(
                "`Symbol` needs `File` in a teaching-simplification block",
                "Symbol",
                "add `File:` naming this repository's teaching code, "
                "or use `Based-on: FILE::SYMBOL` for the pinned source",
            )
        if "File" in b.fields and "Symbol" not in b.fields and b.body is None:
            bad(
                "teaching-simplification with `File` but neither `Symbol` nor a body",
                "File",
                "name the Symbol to show, or quote the lines as a body",
            )
        v = b.get("Based-on")
        if v and v.count("::") != 1:
            bad(
                f"`Based-on: {v}` is not `FILE::SYMBOL`",
                "Based-on",
                "for example `Based-on: pkg/module.py::function`",
            )
        return out

    def resolve(self, project, block):
        ex = excerpt_of(project.repo, block) if block.get("File") else None
        base = based_on(project.pinned, block) if block.get("Based-on") else None
        return Resolved(block, ex, base)

    def anchor(self, r, n):
        return f"teach-{n}"

    def render(self, renderer, r, anchor, result):
        b, ex = r.block, r.excerpt
        meta = []
        if b.get("Title"):
            meta.append(escape(b.get("Title")))
        links = []
        if ex:
            symbol = f" · <code>{escape(ex.symbol)}</code>" if ex.symbol else ""
            meta.append(f"<code>{escape(ex.file)}</code>{symbol} · L{ex.start}–L{ex.end}")
            links.append((renderer.labels["view-file"], renderer.links.script(ex.file)))
        if r.based_on:
            base = r.based_on
            target = renderer.links.source(base.file, base.start, base.end) or renderer.pin.permalink(
                base.file, base.start, base.end
            )
            code = f"<code>{escape(base.file)}::{escape(base.symbol)}</code>"
            link = f'<a href="{escape(target)}">{code}</a>' if target else code
            meta.append(renderer.labels.html("based-on", target=link))
        no_search = renderer.no_search
        not_verbatim = renderer.labels.html("not-verbatim", upstream=escape(renderer.upstream))
        note = f'<p class="lk-disclaimer"{no_search}>{not_verbatim}</p>'
        if ex:
            own = renderer.labels.html("teaching-file", file=f"<code>{escape(ex.file)}</code>")
            note = f'<p class="lk-disclaimer"{no_search}>{not_verbatim}{own}</p>'
        body = renderer.shown(r, anchor)
        return (
            f'<div class="lk-block lk-teaching" id="{anchor}">'
            + renderer.head(renderer.labels["teaching-simplification"], "teach", meta, links)
            + note
            + body
            + "</div>"
        )

    def plain(self, r, project, result):
        body = r.excerpt.text_lines("# " + project.site.labels["elided"]) if r.excerpt else list(r.block.body)
        note = project.site.labels.fill("not-verbatim", upstream=project.site.label)
        return ["```python", f"# [TEACHING SIMPLIFICATION] {note}", *body, "```"]

    def repin(self, block):
        return ("based-on",) if block.get("Based-on") else ()


KIND = Teaching()
