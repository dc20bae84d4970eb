"""``output``: a table or an SVG image an experiment recorded, shown whole on the page.

Header: ``Experiment: experiments/x.py`` (required) and exactly one of ``Table: key`` (what
``record.table(key, columns, rows)`` recorded: ``{"columns": [..], "rows": [[..], ..]}``) or
``Image: key`` (what ``record.svg(key, text)`` recorded: ``{"svg": text}``); optional
``Title:`` (a table's ``<caption>``, an image's accessible name: its ``<title>`` and
``aria-label``, by default the key), ``Caption:`` (Markdown, the ``<figcaption>``) and
``Precision:`` (decimals of a table's floats, default as ``[[value:]]``). No body: nothing is
typed by hand. A table's cells are formatted as ``[[value:]]`` formats values, its header cells
are ``<th>``. An image is cleaned before it reaches the page (:mod:`lessonkit.kinds._svgsafe`:
static drawing only, no style attribute, ids prefixed with the block's anchor); what cannot be
cleaned is a located error at the ``Image:`` line naming the line of the SVG.

The block is HTML like any other: ``verify --site`` compares it with what the recording gives;
the record is part of the run's cached result; ``verify --rerun`` compares the record (the
SVG's text included) with a second run's.
"""

from __future__ import annotations

import json
from html import escape

from lessonkit.errors import LessonError, Problem
from lessonkit.kinds import _recorded, _svgsafe
from lessonkit.kinds.base import Kind, Resolved
from lessonkit.pipeline import recording
from lessonkit.util.store import digest
from lessonkit.util.text import whole_number

SHAPES = ("Table", "Image")
FORMAT = "2"  # bump when the HTML changes shape
MAX_CELLS = 10_000
WHAT = {
    "Table": 'a table recorded with record.table: {"columns": [..], "rows": [[..], ..]}',
    "Image": "an SVG image recorded with record.svg",
}


class Output(Kind):
    name = "output"
    label = "OUTPUT"
    fields = ("Experiment", *SHAPES, "Title", "Caption", "Precision")
    required = ("Experiment",)
    citation = None
    markup = ("Caption",)

    def validate(self, b):
        out = []
        shapes = [s for s in SHAPES if s in b.fields]
        if len(shapes) != 1:
            out.append(
                Problem(
                    "an output block needs exactly one of Table, Image" + (" (it has both)" if shapes else ""),
                    b.path,
                    b.line,
                    "for example `Table: results` (record.table) or `Image: plot` (record.svg)",
                )
            )
        if "Precision" in b.fields and "Table" not in b.fields:
            out.append(Problem("`Precision` belongs to a `Table:` output", b.path, b.line_of("Precision"), "remove it"))
        if b.body is not None:
            out.append(
                Problem(
                    "an output block has no body",
                    b.path,
                    b.body_line,
                    "everything it shows comes from the recording; put the explanation in `Caption:`",
                )
            )
        out += _recorded.precision_problems(b)
        return out

    def resolve(self, project, block):
        return Resolved(block, None, None, _recorded.block_job(project, block))

    def anchor(self, r, n):
        return f"output-{n}"

    def shape(self, r: Resolved) -> str:
        return next(s for s in SHAPES if s in r.block.fields)

    def data(self, r: Resolved, result):
        """The recorded table ``(columns, rows)`` as text, or the recorded SVG's text (located errors)."""
        b, job = r.block, r.job
        assert job is not None  # resolve() gave the block its run
        rec = _recorded.recording_of(result, job.label, b.path, b.line_of("Experiment"))
        shape = self.shape(r)
        key = b.get(shape)
        try:
            value = recording.lookup(rec, key)
        except LessonError as exc:
            raise exc.at(b.path, b.line_of(shape)) from None

        def bad(why: str = ""):
            return LessonError(
                f"`{key}` in {job.label}'s recording is not {WHAT[shape]}" + (f": {why}" if why else ""),
                path=b.path,
                line=b.line_of(shape),
                hint=f"`{shape}:` names {WHAT[shape]}",
            )

        if shape == "Image":
            if not (isinstance(value, dict) and set(value) == {"svg"} and isinstance(value["svg"], str)):
                raise bad()
            return value["svg"]
        if not (isinstance(value, dict) and set(value) == {"columns", "rows"}):
            raise bad()
        columns, rows = recording.items_of(value["columns"]), recording.items_of(value["rows"])
        if columns is None or rows is None:
            raise bad("its columns and rows are lists")
        p = whole_number(b.get("Precision"), 2)
        fmt = recording.Format() if p is None else recording.Format(precision=p)
        if len(columns) * (len(rows) + 1) > MAX_CELLS:
            raise bad(f"more than {MAX_CELLS} cells")
        try:
            head = [c if isinstance(c, str) else recording.format_value(c, fmt) for c in columns]
            body = []
            for n, row in enumerate(rows):
                cells = recording.items_of(row)
                if cells is None or len(cells) != len(columns):
                    raise bad(f"row {n} does not have {len(columns)} cells")
                body.append([recording.format_value(c, fmt) for c in cells])
        except LessonError as exc:
            raise exc.at(b.path, b.line_of(shape)) from None
        return head, body

    def title(self, r: Resolved) -> str:
        return r.block.get("Title") or r.block.get(self.shape(r)) or ""

    def drawn(self, r: Resolved, anchor: str, data) -> str:
        """The table or the cleaned SVG (a located error when the SVG is refused)."""
        b, shape = r.block, self.shape(r)
        script = r.job.label if r.job is not None else b.get("Experiment")
        if shape == "Image":
            try:
                return _svgsafe.clean(data, anchor, self.title(r))
            except _svgsafe.Refused as exc:
                raise LessonError(
                    f"the SVG `{b.get('Image')}` of {script} cannot be shown: line {exc.line} of the SVG has {exc.why}",
                    path=b.path,
                    line=b.line_of("Image"),
                    hint="record static SVG drawing only (no scripts, no DTD, no links out of the image)",
                ) from None
        head, rows = data
        title = b.get("Title") or ""
        cap = f"<caption>{escape(title, quote=False)}</caption>" if title else ""
        th = "".join(f'<th scope="col">{escape(c, quote=False)}</th>' for c in head)
        body = "".join("<tr>" + "".join(f"<td>{escape(c, quote=False)}</td>" for c in row) + "</tr>" for row in rows)
        return f"<table>{cap}<thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"

    def render(self, renderer, r, anchor, result):
        data = self.data(r, result)
        b, shape = r.block, self.shape(r)
        caption = b.get("Caption")
        from lessonkit.kinds.snapshot import _with_refs  # the caption's Markdown (code, $math$, references)

        text = _with_refs(caption, renderer, b.line_of("Caption")) if caption else ""

        def make() -> str:
            source = renderer.labels.html("figure-source", script=f"<code>{escape(r.job.label)}</code>")
            cap = f'<figcaption>{text}<span class="lk-fig-source"{renderer.no_search}>{source}</span></figcaption>'
            return (
                f'<figure class="lk-block lk-figure lk-recorded lk-recorded-{shape.lower()}" id="{anchor}">'
                + self.drawn(r, anchor, data)
                + cap
                + "</figure>"
            )

        if renderer.store is None:
            return make()
        key = digest(
            "output",
            FORMAT,
            anchor,
            shape,
            json.dumps(data, ensure_ascii=False),
            b.get("Title") or "",
            b.get(shape) or "",
            text,
            r.job.label,
            renderer.no_search,
            renderer.labels.fingerprint,
        )
        return renderer.store.get_or_make(key, make)

    def plain(self, r, project, result):
        b = r.block
        caption = f" {b.get('Caption')}" if b.get("Caption") else ""
        if self.shape(r) == "Image":
            words = project.site.labels
            return [words.fill("figure-plain", title=self.title(r), script=r.job.label) + caption]
        try:
            head, rows = self.data(r, result)
        except LessonError:
            return []

        def cell(text: str) -> str:
            return text.replace("|", "\\|").replace("\n", " ")

        lines = [f"**{b.get('Title')}**", ""] if b.get("Title") else []
        lines.append("| " + " | ".join(cell(c) for c in head) + " |")
        lines.append("|" + "---|" * len(head))
        lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
        return lines + ([caption.strip()] if caption else [])


KIND = Output()
