"""``snapshot``: a STATE SNAPSHOT table built from an experiment's recording.

Header: ``Experiment: experiments/x.py`` (required), ``Title:``, ``Label:`` (the table's
badge: one of ``badges`` in ``[snapshots]`` of site.toml, e.g. 手算推演 / 源码推演 / 实验观察),
``Precision:`` (decimals, default 6). The body is
:func:`lessonkit.pipeline.recording.build_snapshot`'s table: the first row names the columns;
``@key`` is generated from the run, ``@key = text`` is written by hand and checked,
``text {@key = v}`` shows ``text`` and checks ``v``, anything else is the author's text.
A mismatch is a located error at the row's line.
"""

from __future__ import annotations

from functools import lru_cache
from html import escape

from lessonkit.config.labels import defaults
from lessonkit.errors import LessonError, Problem
from lessonkit.kinds import _recorded
from lessonkit.kinds.base import Kind, Resolved
from lessonkit.pipeline import recording
from lessonkit.pipeline.activehtml import rendered_active
from lessonkit.util.store import digest
from lessonkit.util.text import whole_number

FORMAT = "1"  # bump when the HTML changes shape


def precision(block) -> int:
    p = whole_number(block.get("Precision"), 2)
    return 6 if p is None else p


class Snapshot(Kind):
    name = "snapshot"
    label = "SNAPSHOT"
    fields = ("Experiment", "Title", "Label", "Precision")
    required = ("Experiment",)
    citation = None
    markup = ("Title", "body")

    def validate(self, b):
        out = []
        if b.body is None:
            out.append(
                Problem(
                    "a snapshot block without a table",
                    b.path,
                    b.line,
                    "after a blank line write the header row (`object | value | note`) and one row per object",
                )
            )
        out += _recorded.precision_problems(b)
        return out

    def resolve(self, project, block):
        rel = _recorded.script_rel(project, block.get("Experiment"), block.path, block.line_of("Experiment"))
        problems = []
        label, badges = block.get("Label"), project.site.badges
        if label is not None and label not in badges:  # the series' words: site.toml [snapshots] badges
            problems.append(
                Problem(
                    f"`Label: {label}` is not one of {' / '.join(badges)}",
                    block.path,
                    block.line_of("Label"),
                    "the badges are `badges` of [snapshots] in sourcemap/site.toml",
                )
            )
        for ref in cell_refs(block):  # inline references in cells: checked like those in prose
            kind = project.kinds.inline.get(ref.kind)
            problems += (
                kind.check(project, ref)
                if kind
                else [project.kinds.unknown(ref.kind, ref.path, ref.line, inline=True).problem]
            )
        if problems:
            raise LessonError.collect(problems)
        return Resolved(block, None, None, _recorded.job_for(project, rel))

    def anchor(self, r, n):
        return f"snapshot-{n}"

    def table(self, r: Resolved, result) -> recording.SnapshotTable:
        """The table model (located errors for every wrong row)."""
        b = r.block
        assert r.job is not None and b.body is not None  # resolve() gave it its run; validate() its table
        rec = _recorded.recording_of(result, r.job.label, b.path, b.line_of("Experiment"))
        table = recording.build_snapshot(
            list(b.body), rec, path=b.path, first_line=b.body_line, fmt=recording.Format(precision=precision(b))
        )
        recorded = any(c.mode in ("generated", "checked") for row in table.rows for c in row)
        if not recorded and not any("[[value:" in line for line in b.body):
            raise LessonError(
                f"a snapshot table shows nothing of {r.job.label}'s recording, though its head says it does",
                path=b.path,
                line=b.line,
                hint="write `@key` for a recorded value or `text {@key = v}` to check one written by hand; "
                "a table of the author's words alone is a plain Markdown table",
            )
        return table

    def render(self, renderer, r, anchor, result):
        table = self.table(r, result)
        b = r.block

        def make() -> str:
            badge = renderer.labels["snapshot"] + (f" · {b.get('Label')}" if b.get("Label") else "")
            meta = [f"<code>{escape(r.job.label)}</code>", escape(renderer.labels["run-record"])]
            title = (
                f'<p class="lk-snapshot-title"><strong>{_with_refs(b.get("Title"), renderer, b.line_of("Title"))}'
                "</strong></p>"
                if b.get("Title")
                else ""
            )
            head = "".join(f"<th>{_md(c)}</th>" for c in table.columns)
            rows = "".join(
                "<tr>" + "".join(_cell(c, r.job.label, renderer, b.line) for c in row) + "</tr>" for row in table.rows
            )
            return (
                f'<div class="lk-block lk-snapshot" id="{anchor}">'
                + renderer.head(
                    badge, "snap", meta, [(renderer.labels["view-script"], renderer.links.script(r.job.label))]
                )
                + title
                + f'<table class="lk-snapshot-table"><thead><tr>{head}</tr></thead>'
                f"<tbody>{rows}</tbody></table></div>"
            )

        if renderer.store is None or any("[[" in line for line in [*b.body, b.get("Title") or ""]):  # inline refs
            return make()
        key = digest(
            "snapshot",
            FORMAT,
            anchor,
            repr(table),
            b.get("Title") or "",
            b.get("Label") or "",
            renderer.links.script(r.job.label) or "",
            renderer.labels.fingerprint,
        )
        return renderer.store.get_or_make(key, make)

    def plain(self, r, project, result):
        try:
            table = self.table(r, result)
        except LessonError:
            return []
        from lessonkit.pipeline.blocks import INLINE, InlineRef

        def plain_ref(m):
            kind = project.kinds.inline.get(m["name"])
            try:
                return (
                    kind.plain(project, InlineRef(m["name"], m["arg"], r.block.path, r.block.line))
                    if kind
                    else m.group(0)
                )
            except LessonError:
                return m.group(0)

        title = r.block.get("Title")
        head = [f"**{INLINE.sub(plain_ref, title)}**", ""] if title else []
        return head + INLINE.sub(plain_ref, table.markdown()).rstrip("\n").split("\n")


def cell_refs(block) -> list:
    """The inline references (``[[line: …]]``, ``[[value: …]]``) written in the Title and the table's cells."""
    from lessonkit.pipeline.blocks import INLINE, InlineRef

    out = []
    lines = [(block.line_of("Title"), block.get("Title") or "")]
    lines += [(block.body_line + i, line) for i, line in enumerate(block.body or ())]
    for n, line in lines:
        for m in INLINE.finditer(line):
            if not line.count("`", 0, m.start()) % 2:
                out.append(InlineRef(m["name"], m["arg"], block.path, n))
    return out


def _with_refs(text: str, renderer, line: int | None) -> str:
    """A hand-written cell as HTML, its inline references rendered by their kinds."""
    from lessonkit.pipeline.blocks import INLINE, InlineRef

    project = renderer.project
    if "[[" not in text or project is None:
        return _md(text)
    parts: list[str] = []

    def stash(m):
        if text.count("`", 0, m.start()) % 2 or m["name"] not in project.kinds.inline:
            return m.group(0)
        ref = InlineRef(m["name"], m["arg"], None, line)
        parts.append(project.kinds.inline[ref.kind].render(project, ref, renderer.links))
        return f"LKREF{len(parts) - 1}X"

    html = _md(INLINE.sub(stash, text))
    for n, part in enumerate(parts):
        html = html.replace(f"LKREF{n}X", part)
    return html


def _cell(c: recording.Cell, source: str, renderer=None, line: int | None = None) -> str:
    md = (lambda t: _with_refs(t, renderer, line)) if renderer is not None else _md
    words = renderer.labels if renderer is not None else defaults()
    if c.mode == "hand":
        return f"<td>{md(c.text)}</td>"
    shown = f"<code>{escape(c.text)}</code>" if c.code else (escape(c.text) if c.mode == "generated" else md(c.text))
    tip = words.fill("cell-recorded", script=source, key=c.key) + (words["cell-checked"] if c.mode == "checked" else "")
    return f'<td class="lk-{c.mode}" title="{escape(tip)}">{shown}</td>'


@lru_cache(maxsize=4096)
def _md(text: str) -> str:
    """A cell's Markdown (code, emphasis, $math$) as inline HTML."""
    import markdown

    html = markdown.Markdown(extensions=["lessonkit.pipeline.mathml"]).convert(text).strip()
    found = rendered_active(html, styles=True)  # what Markdown made of the text, read as a browser reads it
    if found:
        raise LessonError(
            f"the text {text[:60]!r} comes out of Markdown with {found[0][0]}",
            hint="a caption, title or table cell is text, code and formulas: remove the markup",
        )
    if html.startswith("<p>") and html.endswith("</p>") and html.count("<p>") == 1:
        html = html[3:-4]
    return html


KIND = Snapshot()
