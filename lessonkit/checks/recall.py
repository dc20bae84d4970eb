"""Recall: a real-source block with ``Recall: yes`` shows only the lines under discussion of a
symbol that an earlier block showed in full, and links to that first full showing.

A *full showing* is a real-source block of the pinned tree, without ``Recall``, whose excerpt is
its whole ``Symbol`` in one run (no body, patterns or ``Docstring: hide``; or a body equal to the
whole symbol). Pages are taken in course order (:func:`course_order`): the lessons
(``docs/lessons/``) by name, then every other page by name; blocks in page order. A recall's
target is the first full showing of the same file and symbol before it in that order.
"""

from __future__ import annotations

from dataclasses import dataclass

from lessonkit.config.site import LESSONS
from lessonkit.errors import LessonError, Problem

HINT = "show the whole symbol once (`Symbol` and no body) on an earlier page, or drop `Recall`"


@dataclass(frozen=True)
class Showing:
    """Where a symbol is first shown in full."""

    page: str  # project-relative page, e.g. "docs/lessons/01-ad-and-graph.md"
    ordinal: int
    line: int  # the opening fence
    anchor: str  # the block's id on its page


def course_order(pages, lessons: str = LESSONS) -> list[str]:
    """Project-relative pages, the lessons (docs-relative folder ``lessons``) first by name, then the
    rest by name."""
    return sorted(pages, key=lambda p: (not p.startswith("docs/" + lessons), p))


def recalls(r) -> bool:
    return r.block.kind == "real-source" and r.block.get("Recall") is not None


def is_full(r) -> bool:
    """The block shows a whole symbol of the pinned tree, in one run (see the module docstring)."""
    ex = r.excerpt
    return (
        ex is not None
        and ex.origin == "pinned"
        and ex.symbol is not None
        and r.kind is not None
        and r.kind.citation == "source"
        and not recalls(r)
        and not ex.runs
        and not ex.elided
        and (ex.start, ex.end) == ex.scope
    )


def full_showings(report, lessons: str = LESSONS) -> dict[tuple[str, str], list[Showing]]:
    """Every full showing of every (file, symbol), in course order."""
    out: dict[tuple[str, str], list[Showing]] = {}
    for page in course_order(report.resolved, lessons):
        for r, anchor in zip(report.resolved[page], report.anchors(page), strict=True):
            if is_full(r):
                s = Showing(page, r.block.ordinal, r.block.line, anchor)
                out.setdefault((r.excerpt.file, r.excerpt.symbol), []).append(s)
    return out


def targets(project, report) -> tuple[dict[str, dict[int, Showing]], list[Problem]]:
    """page -> {block ordinal -> the first full showing it recalls}, and one located problem for
    every recall of a symbol not shown in full before it. Pages the report does not hold (a check of
    some pages only) are resolved here when a recall may need them."""
    lessons = project.site.lessons
    order = course_order(report.resolved, lessons)
    wanted = any(recalls(r) for rs in report.resolved.values() for r in rs)
    if not wanted:
        return {}, []
    extra = _other_pages(project, report)
    seen: dict[tuple[str, str], Showing] = {}
    found: dict[str, dict[int, Showing]] = {}
    problems: list[Problem] = []
    for page in course_order([*order, *extra], lessons):
        own = page in report.resolved
        rs = report.resolved[page] if own else extra[page][0]
        ids = report.anchors(page) if own else extra[page][1]
        for r, anchor in zip(rs, ids, strict=True):
            if own and recalls(r):
                key = (r.excerpt.file, r.excerpt.symbol)
                target = seen.get(key)
                if target is None:
                    problems.append(
                        Problem(
                            f"`Recall: yes`: `{r.excerpt.symbol}` of {r.excerpt.file} is not shown in full "
                            "before this block",
                            page,
                            r.block.line_of("Recall"),
                            HINT,
                        )
                    )
                else:
                    found.setdefault(page, {})[r.block.ordinal] = target
            elif is_full(r):
                seen.setdefault(
                    (r.excerpt.file, r.excerpt.symbol), Showing(page, r.block.ordinal, r.block.line, anchor)
                )
    return found, problems


def _other_pages(project, report) -> dict[str, tuple[list, list[str]]]:
    """The resolved blocks and ids of the project's pages the report does not hold."""
    from lessonkit.pipeline.render import anchors

    out = {}
    for path in project.pages():
        rel = project.rel(path)
        if rel in report.resolved or rel in report.broken:
            continue
        try:
            resolved, _ = project.resolve_page(project.parse(path))
        except LessonError:
            continue  # its own check reports it
        out[rel] = (resolved, anchors(resolved))
    return out
