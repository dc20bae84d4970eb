"""``line`` (inline): a line or range of the pinned source named by its content.

``[[line: core.py::backward_pass "outgrad = outgrads.pop(node)"]]`` renders ``line 28`` (the project's
``[labels] line-ref``, e.g. 「第 28 行」);
the argument grammar is :mod:`lessonkit.source.refs`'s (``FILE::SYMBOL``, a quoted fragment
or ``+N``, ``..`` for a range, ``|file`` or ``|L`` for the style). The reference links to
the line anchor of an excerpt on the same page that covers it, else to the source
browser (``#L28``, ``#L30-L31``).
"""

from __future__ import annotations

from html import escape

from lessonkit.errors import LessonError
from lessonkit.kinds.base import InlineKind
from lessonkit.source import refs as sourceref


def parse(ref) -> sourceref.SourceRef:
    try:
        return sourceref.parse("[[" + ref.argument + "]]")
    except LessonError as exc:
        raise exc.at(ref.path, ref.line) from None


def resolve(project, ref) -> sourceref.Resolved:
    """The lines ``ref`` names in the pinned tree (located errors); cached per project by argument."""
    cache = project.__dict__.setdefault("_line_refs", {})
    hit = cache.get(ref.argument)
    if hit is None:
        try:
            hit = sourceref.resolve(project.pinned, parse(ref))
        except LessonError as exc:
            hit = exc
        cache[ref.argument] = hit
    if isinstance(hit, LessonError):
        raise _located(hit, ref)
    return hit


def _located(exc: LessonError, ref) -> LessonError:
    p = exc.problems[0]
    return LessonError(p.message, path=ref.path, line=ref.line, hint=p.hint)


def href(links, r: sourceref.Resolved) -> str | None:
    """The excerpt's line anchor on this page when one covers the lines, else the source browser's."""
    on_page = getattr(links, "excerpt_line", None)
    target = on_page(r.file, r.start, r.end) if on_page else None
    if target:
        return target
    url = links.source(r.file, r.start, r.end)
    return url.split("#", 1)[0] + "#" + r.anchor if url else None


class Line(InlineKind):
    name = "line"

    def read(self, ref):
        return parse(ref)

    def look_up(self, project, ref):
        return resolve(project, ref)

    def render(self, project, ref, links):
        r = resolve(project, ref)
        text = escape(r.render(line=project.site.labels["line-ref"]))
        title = escape(
            f"{r.file} · {r.ref.symbol} · "
            + " / ".join(l.strip() for l in r.text[:2])
            + (" …" if len(r.text) > 2 else "")
        )
        ident = getattr(links, "inline_id", lambda ref: None)(ref)
        attr = f' id="{ident}"' if ident else ""
        link = href(links, r)
        if link is None:
            return f'<span class="lk-ref"{attr} title="{title}">{text}</span>'
        return f'<a class="lk-ref"{attr} href="{escape(link)}" title="{title}">{text}</a>'

    def plain(self, project, ref):
        return resolve(project, ref).render(line=project.site.labels["line-ref"])


KIND = Line()
