"""``real-source``: a verbatim excerpt of the pinned tree, by Symbol or quoted lines."""

from __future__ import annotations

import re
from dataclasses import replace
from html import escape

from lessonkit.config.site import LESSONS
from lessonkit.errors import LessonError, Problem
from lessonkit.kinds.base import Kind, Resolved, slug
from lessonkit.source import select
from lessonkit.source.resolve import check_commit, check_lines, excerpt_of

COMMIT = re.compile(r"^[0-9a-fA-F]{7,40}$")
LESSON = re.compile(r"^(\d\d)-")
# the fields that narrow a symbol to some of its lines: what the full version of a recall leaves out
NARROWING = (*select.SELECTING, *select.PATTERNS, "Match", "Docstring", "Emphasize")


class RealSource(Kind):
    name = "real-source"
    label = "REAL SOURCE"
    fields = (
        "File",
        "Symbol",
        "Which",
        "Commit",
        "Lines",
        "Symbol-lines",
        *select.PATTERNS,
        "Match",
        "Emphasize",
        "Docstring",
        "Dedent",
        "Tab-width",
        "Recall",
    )
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
        if b.get("Which") is not None and not b.get("Symbol"):
            out.append(
                Problem(
                    "`Which` without `Symbol`",
                    b.path,
                    b.line_of("Which"),
                    "`Which` picks one of several definitions of the Symbol's name",
                )
            )
        for key in select.SELECTING:
            v = b.get(key)
            if v is None:
                continue
            try:
                items = select.line_items(v, key)
            except LessonError as exc:
                out.append(Problem(exc.problem.message, b.path, b.line_of(key), exc.problem.hint))
                continue
            locator = b.body is not None or any(k in b.fields for k in select.PATTERNS)
            if key == "Symbol-lines" and not b.get("Symbol"):
                out.append(
                    Problem(
                        "`Symbol-lines` without `Symbol`",
                        b.path,
                        b.line_of(key),
                        "`Symbol-lines` counts from the symbol's first line; use `Lines` for file lines",
                    )
                )
            elif key == "Symbol-lines" and locator:
                out.append(
                    Problem(
                        "`Symbol-lines` beside a body or `Start-*`/`End-*` patterns",
                        b.path,
                        b.line_of(key),
                        "select the lines one way: the body, the patterns, or `Symbol-lines`",
                    )
                )
            elif locator and (len(items) != 1 or None in items[0]):
                out.append(
                    Problem(
                        f"`Lines: {v}` beside a body or patterns must be one range `a-b`",
                        b.path,
                        b.line_of(key),
                        "there `Lines` only says where the excerpt is; e.g. `Lines: 25-32`",
                    )
                )
        if "Lines" in b.fields and "Symbol-lines" in b.fields:
            out.append(
                Problem(
                    "both `Lines` and `Symbol-lines`",
                    b.path,
                    b.line_of("Symbol-lines"),
                    "give one: `Lines` counts file lines, `Symbol-lines` lines of the symbol",
                )
            )
        recall = b.get("Recall")
        if recall is not None:
            if recall != "yes":
                out.append(
                    Problem(f"`Recall: {recall}` is not `yes`", b.path, b.line_of("Recall"), "write `Recall: yes`")
                )
            elif not b.get("Symbol"):
                out.append(
                    Problem(
                        "`Recall: yes` without `Symbol`",
                        b.path,
                        b.line_of("Recall"),
                        "name the symbol shown in full earlier",
                    )
                )
            elif b.body is None and not any(b.get(k) for k in select.PATTERNS):
                out.append(
                    Problem(
                        "`Recall: yes` shows the whole symbol again",
                        b.path,
                        b.line_of("Recall"),
                        "quote only the lines under discussion as a body (`...` for the rest), or give "
                        "`Start-*`/`End-*`",
                    )
                )
        return out + select.header_problems(b)

    def resolve(self, project, block):
        check_commit(block, project.pin.commit, project.pin.commit_known)
        ex = excerpt_of(project.pinned, block)
        check_lines(block, ex)
        if block.get("Recall") is None:
            return Resolved(block, ex)
        # the expandable full version: the whole symbol, resolved (and so verified) like any excerpt
        whole = {k: f for k, f in block.fields.items() if k not in NARROWING and k != "Recall"}
        full = excerpt_of(project.pinned, replace(block, fields=whole, body=None, body_line=None))
        return Resolved(block, ex, full=full)

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
        full = ""
        if r.full is not None:
            target = renderer.recalls.get(r.block.ordinal)
            if target is not None:
                lessons = renderer.project.site.lessons if renderer.project is not None else LESSONS
                links.insert(0, (recall_text(renderer.labels, target.page, lessons), recall_href(renderer, target)))
            summary = escape(renderer.labels.fill("recall-full", symbol=r.full.symbol))
            full = (
                # its own container: Material's copy button targets the code of the container's id
                f'<details class="lk-recall-full" id="{anchor}-full"><summary>{summary}</summary>'
                + renderer.excerpt(r.full, anchor + "-full")
                + "</details>"
            )
        return (
            f'<div class="lk-block lk-real-source" id="{anchor}">'
            + renderer.head(renderer.labels["real-source"], "real", meta, links)
            + renderer.excerpt(ex, anchor)
            + full
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


def recall_text(labels, page: str, lessons: str = LESSONS) -> str:
    """「full source: lesson 01」: the words of a recall's link to ``page`` (project-relative; a
    lesson when it is in the docs-relative folder ``lessons``)."""
    name = page.rsplit("/", 1)[-1]
    m = LESSON.match(name)
    if m and page.startswith("docs/" + lessons):
        return labels.fill("recall-lesson", n=m[1])
    return labels.fill("recall-page", page=name.removesuffix(".md"))


def recall_href(renderer, target) -> str | None:
    """``#anchor`` on the same page, else the target page's URL with the anchor."""
    if target.page == renderer.page:
        return "#" + target.anchor
    url = renderer.links.page(target.page.removeprefix("docs/"))
    return f"{url}#{target.anchor}" if url is not None else None
