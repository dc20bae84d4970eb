"""Two block kinds defined only for the tests, registered through a project's
``sourcemap/kinds.toml`` (``modules = ["sample_kinds"]``): proof that a kind is one
module and one registry line, with no change inside ``lessonkit/``.

* ``signature`` (fenced): the first line of a pinned symbol, e.g. ``def grad(fun, argnum=0):``.
* ``line-of`` (inline): ``[[line-of: autograd/core.py::grad]]`` becomes 「第 N 行」 linked
  to that line in the source browser.
"""

from __future__ import annotations

from html import escape

from lessonkit.errors import LessonError, Problem
from lessonkit.kinds import InlineKind, Kind, Resolved
from lessonkit.kinds.base import slug
from lessonkit.source.resolve import excerpt_of


class Signature(Kind):
    name = "signature"
    label = "SIGNATURE"
    fields = ("File", "Symbol")
    required = ("File", "Symbol")

    def validate(self, block):
        if block.body is not None:
            return [
                Problem(
                    "a signature block has no body",
                    block.path,
                    block.body_line,
                    "remove the body; the signature is read from the pinned source",
                )
            ]
        return []

    def resolve(self, project, block):
        return Resolved(block, excerpt_of(project.pinned, block))

    def anchor(self, r, n):
        return "sig-" + slug(r.block.get("Symbol"))

    def render(self, renderer, r, anchor, result):
        ex = r.excerpt
        link = renderer.links.source(ex.file, ex.start, ex.start)
        first = escape(ex.lines[0].strip())
        meta = [f"<code>{escape(ex.file)}</code>", f"L{ex.start}"]
        return (
            f'<div class="lk-block lk-signature" id="{anchor}">'
            + renderer.head("SIGNATURE", "sig", meta, [("在站内源码中查看", link)])
            + f"<p><code>{first}</code></p></div>"
        )

    def plain(self, r, project, result):
        ex = r.excerpt
        return [
            "```python",
            f"# [SIGNATURE] {ex.file} · {ex.symbol} · {project.pin.short} · L{ex.start}",
            ex.lines[0],
            "```",
        ]

    def repin(self, block):
        return ("source",)


class LineOf(InlineKind):
    name = "line-of"

    def validate(self, ref):
        if ref.argument.count("::") != 1:
            return [
                Problem(
                    f"`{ref.argument}` is not `FILE::SYMBOL`",
                    ref.path,
                    ref.line,
                    "for example [[line-of: autograd/core.py::grad]]",
                )
            ]
        return []

    def _line(self, project, ref) -> tuple[str, int]:
        file, symbol = (s.strip() for s in ref.argument.split("::"))
        tree = project.pinned
        sf = tree.file(file)
        for d in sf.definitions:
            if d.name == symbol:
                return file, d.start
        raise LessonError(
            f"`{symbol}` is not defined in {file}",
            path=ref.path,
            line=ref.line,
            hint="name a function or class of the pinned file",
        )

    def render(self, project, ref, links):
        file, line = self._line(project, ref)
        href = links.source(file, line, line)
        text = f"第 {line} 行"
        return f'<a class="lk-line-of" href="{escape(href)}">{text}</a>' if href else text

    def plain(self, project, ref):
        return f"第 {self._line(project, ref)[1]} 行"


KINDS = [Signature(), LineOf()]
