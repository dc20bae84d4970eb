"""``figure``: an SVG figure drawn at build time from an experiment's recording.

Header: ``Experiment: experiments/x.py`` (required) and exactly one of ``Graph: key``
(a recorded node graph, :func:`lessonkit.pipeline.svg.graph_svg`), ``Broadcast: key`` (an
object with ``g_in`` and ``sums``), ``Nested: key`` (a chain ``[[type, trace], …]``) or
``Alive: key`` (``{mode: [live nodes per layer]}``); optional ``Title:``, ``Caption:``
(Chinese prose, the ``<figcaption>``), ``Precision:`` (decimals of labels, default 3)
and, with ``Graph:``, ``Edge-labels: key`` (a list of ``{"from": child label,
"ingrad": value}``: the value labels the child's edges in argument order) and
``Notes: key`` (``{node label: value}``: one more line in the node). The SVG is inline:
no request, text selectable and searchable.
"""

from __future__ import annotations

import json
from html import escape

from lessonkit.pipeline import svg as figures
from lessonkit.pipeline import recording
from lessonkit.pipeline import shapes
from lessonkit.errors import LessonError, Problem
from lessonkit.config.labels import defaults
from lessonkit.util.store import digest
from lessonkit.kinds import _recorded
from lessonkit.kinds.base import Kind, Resolved
from lessonkit.util.text import whole_number

SHAPES = ("Graph", "Broadcast", "Nested", "Alive")
FORMAT = "1"  # bump when the HTML or the drawing changes shape


class Figure(Kind):
    name = "figure"
    label = "FIGURE"
    fields = ("Experiment", *SHAPES, "Title", "Caption", "Edge-labels", "Notes", "Precision")
    required = ("Experiment",)
    citation = None

    def validate(self, b):
        out = []
        shapes = [s for s in SHAPES if s in b.fields]
        if len(shapes) != 1:
            out.append(
                Problem(
                    f"a figure block needs exactly one of {', '.join(SHAPES)}"
                    + (f" (it has {', '.join(shapes)})" if shapes else ""),
                    b.path,
                    b.line,
                    "for example `Graph: xx.graph`",
                )
            )
        for extra in ("Edge-labels", "Notes"):
            if extra in b.fields and "Graph" not in b.fields:
                out.append(
                    Problem(
                        f"`{extra}` belongs to a `Graph:` figure",
                        b.path,
                        b.line_of(extra),
                        "remove it, or draw a graph",
                    )
                )
        if b.body is not None:
            out.append(
                Problem(
                    "a figure block has no body",
                    b.path,
                    b.body_line,
                    "put the explanation in `Caption:`; the figure is drawn from the recording",
                )
            )
        out += _recorded.precision_problems(b)
        return out

    def resolve(self, project, block):
        rel = _recorded.script_rel(project, block.get("Experiment"), block.path, block.line_of("Experiment"))
        return Resolved(block, None, None, _recorded.job_for(project, rel))

    def anchor(self, r, n):
        return f"figure-{n}"

    def inputs(self, r: Resolved, result) -> tuple[str, tuple]:
        """(shape, data): what the figure is drawn from, looked up in the recording (located errors)."""
        b = r.block
        rec = _recorded.recording_of(result, r.job.label, b.path, b.line_of("Experiment"))
        shape = next(s for s in SHAPES if s in b.fields)
        p = whole_number(b.get("Precision"), 2)
        fmt = recording.Format(precision=3 if p is None else p)

        def get(field, key=None):
            try:
                return recording.lookup(rec, key or b.get(field))
            except LessonError as exc:
                raise exc.at(b.path, b.line_of(field)) from None

        def need(ok, field, what, why=""):
            if not ok:
                raise LessonError(
                    f"`{b.get(field)}` in {r.job.label}'s recording is not {what}" + (f": {why}" if why else ""),
                    path=b.path,
                    line=b.line_of(field),
                    hint=f"`{field}:` names {what}",
                )

        what = {
            "Graph": "a recorded graph (record.graph)",
            "Broadcast": "an object with `g_in` and `sums`",
            "Nested": "a chain [[type, trace], …]",
            "Alive": "a dict {mode: [live nodes after each layer]}",
        }[shape]
        check = {"Graph": shapes.graph, "Broadcast": shapes.broadcast, "Nested": shapes.nested, "Alive": shapes.alive}
        try:  # any shape at all can come out of a run: checked before anything is drawn
            data = check[shape](get(shape))
        except shapes.Bad as exc:
            need(False, shape, what, str(exc))
        if shape == "Broadcast":
            return shape, data
        if shape != "Graph":
            return shape, (data,)
        labels, notes = {}, {}
        ids: dict[str, list[int]] = {}
        for n in data["nodes"]:
            ids.setdefault(n["label"], []).append(n["id"])

        def node(label, field) -> int:
            found = ids.get(str(label), [])
            need(found, field, "about nodes of the graph", f"no node is labelled `{label}`")
            need(len(found) == 1, field, "about nodes of the graph", f"{len(found)} nodes are labelled `{label}`")
            return found[0]

        def shown(value, field) -> str:
            try:
                text = recording.format_value(value, fmt)
            except LessonError as exc:
                raise exc.at(b.path, b.line_of(field)) from None
            need(len(text) <= shapes.MAX_TEXT, field, "short values", f"`{text[:20]}…` is {len(text)} characters long")
            return text

        if b.get("Edge-labels"):
            calls = get("Edge-labels")
            need(
                isinstance(calls, list) and all(isinstance(c, dict) and "from" in c and "ingrad" in c for c in calls),
                "Edge-labels",
                'a list of {"from": node label, "ingrad": value}',
            )
            seen: dict[int, int] = {}
            for c in calls:
                child = node(c["from"], "Edge-labels")
                k = seen[child] = seen.get(child, -1) + 1
                need(
                    k < len(data["nodes"][child]["parents"]),
                    "Edge-labels",
                    "one value per edge",
                    f"node `{c['from']}` has {len(data['nodes'][child]['parents'])} edges, and more values",
                )
                labels[f"{child}.{k}"] = shown(c["ingrad"], "Edge-labels")
        if b.get("Notes"):
            raw = get("Notes")
            need(isinstance(raw, dict), "Notes", "a dict from node labels of the graph to values")
            notes = {str(node(k, "Notes")): shown(v, "Notes") for k, v in raw.items()}
        return shape, (data, labels, notes)

    def title(self, r, words=None) -> str:
        b = r.block
        colon = (words or defaults())["colon"]
        return (
            b.get("Title")
            or b.get("Caption")
            or f"{r.job.label}{colon}{next(b.get(s) for s in SHAPES if s in b.fields)}"
        )

    def svg(self, r, shape: str, data: tuple, words=None) -> str:
        """The figure; ``words`` are the project's labels (``figure-*``)."""
        words = words or defaults()
        title = self.title(r, words)
        if shape == "Graph":
            graph, labels, notes = data
            edge_labels = {tuple(int(x) for x in k.split(".")): v for k, v in labels.items()}
            notes = {int(k): v for k, v in notes.items()}
            return figures.graph_svg(graph, title, edge_labels, words["figure-root"], notes)
        if shape == "Broadcast":
            return figures.broadcast_svg(
                data[0], data[1], title, words["figure-result"], words["figure-upstream"], words["figure-sum-step"]
            )
        if shape == "Nested":
            return figures.nested_svg(data[0], title, trace=words["figure-trace"])
        return figures.alive_svg(data[0], title, layer=words["figure-after-layer"])

    def render(self, renderer, r, anchor, result):
        shape, data = self.inputs(r, result)
        b = r.block

        def make() -> str:
            caption = b.get("Caption")
            from lessonkit.kinds.snapshot import _with_refs  # the caption's Markdown (code, $math$, references)

            text = _with_refs(caption, renderer, b.line_of("Caption")) if caption else ""
            drawn = renderer.labels.html("figure-source", script=f"<code>{escape(r.job.label)}</code>")
            cap = f'<figcaption>{text}<span class="lk-fig-source"{renderer.no_search}>{drawn}</span></figcaption>'
            svg = self.svg(r, shape, data, renderer.labels)
            return f'<figure class="lk-figure" id="{anchor}">' + svg + cap + "</figure>"

        if renderer.store is None:
            return make()
        key = digest(
            "figure",
            FORMAT,
            anchor,
            shape,
            json.dumps(data, sort_keys=True, ensure_ascii=False),
            b.get("Title") or "",
            b.get("Caption") or "",
            r.job.label,
            renderer.labels.fingerprint,
        )
        return renderer.store.get_or_make(key, make)

    def plain(self, r, project, result):
        b = r.block
        caption = f" {b.get('Caption')}" if b.get("Caption") else ""
        words = project.site.labels
        return [words.fill("figure-plain", title=self.title(r, words), script=r.job.label) + caption]


KIND = Figure()
