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
from lessonkit.errors import LessonError, Problem
from lessonkit.config.labels import defaults
from lessonkit.util.store import digest
from lessonkit.kinds import _recorded
from lessonkit.kinds.base import Kind, Resolved

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
        fmt = recording.Format(precision=int(b.get("Precision") or 3))

        def get(field, key=None):
            try:
                return recording.lookup(rec, key or b.get(field))
            except LessonError as exc:
                raise exc.at(b.path, b.line_of(field)) from None

        def need(ok, field, what):
            if not ok:
                raise LessonError(
                    f"`{b.get(field)}` in {r.job.label}'s recording is not {what}",
                    path=b.path,
                    line=b.line_of(field),
                    hint=f"`{field}:` names {what}",
                )

        data = get(shape)
        if shape == "Graph":
            need(
                isinstance(data, dict) and isinstance(data.get("nodes"), list), shape, "a recorded graph (record.graph)"
            )
            labels, notes = {}, {}
            ids = {str(n["label"]): n["id"] for n in data["nodes"]}
            if b.get("Edge-labels"):
                calls = get("Edge-labels")
                need(
                    isinstance(calls, list)
                    and all(isinstance(c, dict) and "from" in c and "ingrad" in c for c in calls),
                    "Edge-labels",
                    'a list of {"from": node label, "ingrad": value}',
                )
                seen: dict[int, int] = {}
                for c in calls:
                    child = ids.get(str(c["from"]))
                    need(child is not None, "Edge-labels", f"about nodes of the graph (no node `{c['from']}`)")
                    k = seen[child] = seen.get(child, -1) + 1
                    labels[f"{child}.{k}"] = recording.format_value(c["ingrad"], fmt)
            if b.get("Notes"):
                raw = get("Notes")
                need(
                    isinstance(raw, dict) and all(k in ids for k in raw),
                    "Notes",
                    "a dict from node labels of the graph to values",
                )
                notes = {str(ids[k]): recording.format_value(v, fmt) for k, v in raw.items()}
            return shape, (data, labels, notes)
        if shape == "Broadcast":
            need(
                isinstance(data, dict) and "g_in" in data and isinstance(data.get("sums"), list),
                shape,
                "an object with `g_in` and `sums`",
            )
            return shape, (data["g_in"], data["sums"])
        if shape == "Nested":
            need(
                isinstance(data, list) and all(isinstance(c, list) and len(c) == 2 for c in data),
                shape,
                "a chain [[type, trace], …]",
            )
            return shape, (data,)
        # other entries (e.g. the size `n` the run used) are not drawn
        modes = [v for v in data.values() if isinstance(v, list)] if isinstance(data, dict) else []
        need(
            bool(modes) and all(v and all(isinstance(x, int) and x >= 0 for x in v) for v in modes),
            shape,
            "a dict {mode: [live nodes after each layer]}",
        )
        return shape, (data,)

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
