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

Two more shapes draw numbers, checked before drawing (a located error says which value is
wrong): ``Plot: key`` with ``Scale: loglog`` (``{"x": [..], "series": [{"name": .., "y":
[..]}, …], "marks": [{"x": .., "name": ..}, …]}``, every value positive, one y per x;
optional ``X-label:`` and ``Y-label:``) and ``Matrix: key`` (``{"matrix": [[..], …],
"rows": [names], "columns": [names], "column": {"index": j, "values": [..], "label": ..},
"row": {"index": i, "values": [..], "label": ..}}``: column j and row i picked out, each
beside the vector it equals). Wherever these shapes say a list, a recorded tuple does as well
(``lessonkit_record`` tags tuples, :func:`lessonkit.pipeline.recording.as_lists`); a value a
figure writes as text (an edge label, a note) is shown as recorded, a tuple in parentheses.
"""

from __future__ import annotations

import json
import math
from html import escape
from typing import Any

from lessonkit.config.labels import defaults
from lessonkit.errors import LessonError, Problem
from lessonkit.kinds import _recorded
from lessonkit.kinds.base import Kind, Resolved
from lessonkit.pipeline import plots, recording, shapes
from lessonkit.pipeline import svg as figures
from lessonkit.util.store import digest
from lessonkit.util.text import whole_number

SHAPES = ("Graph", "Broadcast", "Nested", "Alive", "Plot", "Matrix")
SCALES = ("loglog",)  # what `Scale:` may say (a plot's axes)
PLOT_FIELDS = ("Scale", "X-label", "Y-label")
FORMAT = "2"  # bump when the HTML or the drawing changes shape


class Figure(Kind):
    name = "figure"
    label = "FIGURE"
    fields = ("Experiment", *SHAPES, "Title", "Caption", "Edge-labels", "Notes", "Precision", *PLOT_FIELDS)
    required = ("Experiment",)
    citation = None
    markup = ("Caption",)

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
        out += _plot_header_problems(b)
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
        return Resolved(block, None, None, _recorded.block_job(project, block))

    def anchor(self, r, n):
        return f"figure-{n}"

    def inputs(self, r: Resolved, result) -> tuple[str, tuple]:
        """(shape, data): what the figure is drawn from, looked up in the recording (located errors)."""
        b = r.block
        job = r.job
        assert job is not None  # resolve() gave the figure its run
        rec = _recorded.recording_of(result, job.label, b.path, b.line_of("Experiment"))
        shape = next(s for s in SHAPES if s in b.fields)
        p = whole_number(b.get("Precision"), 2)
        fmt = recording.Format(precision=3 if p is None else p)
        found = _Recording(b, job.label, rec, fmt)
        if shape in CHECKED:  # numbers to draw: every value checked, the wrong one named
            return shape, found.checked(shape)
        data = found.shaped(shape)
        if shape == "Broadcast":
            return shape, data
        if shape != "Graph":
            return shape, (data,)
        return shape, (data, *found.graph_texts(data))

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
        if shape == "Plot":
            x, series, marks, x_label, y_label = data
            return plots.loglog_svg(x, [tuple(s) for s in series], title, x_label, y_label, [tuple(m) for m in marks])
        if shape == "Matrix":
            cells, rows, columns, column, row = data
            return plots.matrix_svg(cells, title, rows, columns, column, row)
        return figures.alive_svg(data[0], title, layer=words["figure-after-layer"])

    def render(self, renderer, r, anchor, result):
        shape, data = self.inputs(r, result)
        b = r.block
        caption = b.get("Caption")
        from lessonkit.kinds.snapshot import _with_refs  # the caption's Markdown (code, $math$, references)

        # rendered before the key is made: its `[[value: …]]` and `[[line: …]]` references are
        # inputs of the figure's HTML as much as the caption's text
        text = _with_refs(caption, renderer, b.line_of("Caption")) if caption else ""

        def make() -> str:
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
            text,
            r.job.label,
            renderer.labels.fingerprint,
        )
        return renderer.store.get_or_make(key, make)

    def plain(self, r, project, result):
        b = r.block
        caption = f" {b.get('Caption')}" if b.get("Caption") else ""
        words = project.site.labels
        return [words.fill("figure-plain", title=self.title(r, words), script=r.job.label) + caption]


_SHAPE_WHAT = {
    "Graph": "a recorded graph (record.graph)",
    "Broadcast": "an object with `g_in` and `sums`",
    "Nested": "a chain [[type, trace], …]",
    "Alive": "a dict {mode: [live nodes after each layer]}",
}
_SHAPE_CHECK = {"Graph": shapes.graph, "Broadcast": shapes.broadcast, "Nested": shapes.nested, "Alive": shapes.alive}


class _Recording:
    """A figure block's recording: its values looked up and checked, every error located at the field."""

    def __init__(self, b, label: str, rec, fmt: recording.Format) -> None:
        self.b = b
        self.label = label
        self.rec = rec
        self.fmt = fmt

    def get(self, field, key=None):
        try:
            return recording.lookup(self.rec, key or self.b.get(field))
        except LessonError as exc:
            raise exc.at(self.b.path, self.b.line_of(field)) from None

    def need(self, ok, field, what, why=""):
        if not ok:
            raise LessonError(
                f"`{self.b.get(field)}` in {self.label}'s recording is not {what}" + (f": {why}" if why else ""),
                path=self.b.path,
                line=self.b.line_of(field),
                hint=f"`{field}:` names {what}",
            )

    def checked(self, shape: str) -> tuple:
        """The numbers of a Plot or Matrix, every value checked, the wrong one named."""
        try:
            return CHECKED[shape](recording.as_lists(self.get(shape)), self.b, self.fmt)
        except BadData as exc:
            raise LessonError(
                f"`{self.b.get(shape)}` in {self.label}'s recording is not {WHAT[shape]}: {exc}",
                path=self.b.path,
                line=self.b.line_of(shape),
                hint=f"`{shape}:` names {WHAT[shape]}",
            ) from None

    def shaped(self, shape: str) -> Any:
        """The shape's own checked form (shapes.graph: a dict, shapes.broadcast: a pair, …)."""
        data: Any = None
        try:  # any shape at all can come out of a run: checked before anything is drawn
            data = _SHAPE_CHECK[shape](recording.as_lists(self.get(shape)))
        except shapes.Bad as exc:
            self.need(False, shape, _SHAPE_WHAT[shape], str(exc))
        return data

    def graph_texts(self, data: dict) -> tuple[dict[str, str], dict[str, str]]:
        """(edge labels, notes) of a graph: ``{"child.k": text}`` and ``{node id: text}``."""
        ids: dict[str, list[int]] = {}
        for n in data["nodes"]:
            ids.setdefault(n["label"], []).append(n["id"])
        labels = self.edge_labels(data, ids) if self.b.get("Edge-labels") else {}
        notes: dict[str, str] = {}
        if self.b.get("Notes"):
            raw = self.get("Notes")
            self.need(isinstance(raw, dict), "Notes", "a dict from node labels of the graph to values")
            notes = {str(self.node(ids, k, "Notes")): self.shown(v, "Notes") for k, v in raw.items()}
        return labels, notes

    def edge_labels(self, data: dict, ids: dict[str, list[int]]) -> dict[str, str]:
        items = recording.items_of(self.get("Edge-labels"))  # a list or a tuple; values shown as recorded
        calls = items or []
        self.need(
            items is not None and all(isinstance(c, dict) and "from" in c and "ingrad" in c for c in calls),
            "Edge-labels",
            'a list of {"from": node label, "ingrad": value}',
        )
        labels: dict[str, str] = {}
        seen: dict[int, int] = {}
        for c in calls:
            child = self.node(ids, c["from"], "Edge-labels")
            k = seen[child] = seen.get(child, -1) + 1
            self.need(
                k < len(data["nodes"][child]["parents"]),
                "Edge-labels",
                "one value per edge",
                f"node `{c['from']}` has {len(data['nodes'][child]['parents'])} edges, and more values",
            )
            labels[f"{child}.{k}"] = self.shown(c["ingrad"], "Edge-labels")
        return labels

    def node(self, ids: dict[str, list[int]], label, field) -> int:
        found = ids.get(str(label), [])
        self.need(found, field, "about nodes of the graph", f"no node is labelled `{label}`")
        self.need(len(found) == 1, field, "about nodes of the graph", f"{len(found)} nodes are labelled `{label}`")
        return found[0]

    def shown(self, value, field) -> str:
        try:
            text = recording.format_value(value, self.fmt)
        except LessonError as exc:
            raise exc.at(self.b.path, self.b.line_of(field)) from None
        self.need(len(text) <= shapes.MAX_TEXT, field, "short values", f"`{text[:20]}…` is {len(text)} characters long")
        return text


def _plot_header_problems(b) -> list[Problem]:
    """`Scale:`, `X-label:` and `Y-label:` belong to a `Plot:`, which needs a `Scale:` it knows."""
    out = []
    if "Plot" not in b.fields:
        for extra in PLOT_FIELDS:
            if extra in b.fields:
                out.append(Problem(f"`{extra}` belongs to a `Plot:` figure", b.path, b.line_of(extra), "remove it"))
        return out
    scale = b.get("Scale")
    if scale is None:
        out.append(Problem("a `Plot:` figure needs `Scale:`", b.path, b.line, "write `Scale: loglog`"))
    elif scale not in SCALES:
        out.append(
            Problem(
                f"`Scale: {scale}` is not a scale a plot is drawn on",
                b.path,
                b.line_of("Scale"),
                f"write `Scale: {' | '.join(SCALES)}`",
            )
        )
    return out


# -- the numbers a Plot or a Matrix draws, checked ----------------------------------------------

MAX_SERIES = len(plots.LIGHT)  # one colour, marker and dash each
MAX_POINTS = 500
MAX_CELLS = 12  # rows or columns of a matrix
MAX_TEXT = 80  # characters of a name or label
WHAT = {
    "Plot": 'a plot {"x": [..], "series": [{"name": .., "y": [..]}, …]}',
    "Matrix": 'a matrix {"matrix": [[..], …], "column": {..}, "row": {..}}',
}


class BadData(Exception):
    """What is wrong with recorded figure data (``str(exc)`` names the value)."""


def _number(v, what: str) -> float:
    if isinstance(v, dict) and set(v) == {"scalar", "dtype"}:
        v = v["scalar"]
    if isinstance(v, dict) and set(v) == {"float"}:
        raise BadData(f"{what} is {v['float']}, not a finite number")
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise BadData(f"{what} is {_what(v)}, not a number")
    try:
        out = float(v)
    except OverflowError:  # an integer beyond a float's range (a float is never too large for float())
        bits = v.bit_length() if isinstance(v, int) else 0
        raise BadData(f"{what} is an integer of {bits} bits, too large to draw") from None
    if not math.isfinite(out):
        raise BadData(f"{what} is {out}, not a finite number")
    return out


def _numbers(v, what: str) -> list[float]:
    """A list of numbers (a recorded list, or a one-dimensional recorded array)."""
    if isinstance(v, dict) and set(v) == {"array", "shape", "dtype"}:
        if len(v["shape"]) != 1:
            raise BadData(f"{what} is an array of shape {tuple(v['shape'])}, not a list of numbers")
        v = v["array"]
    if not isinstance(v, list):
        raise BadData(f"{what} is {_what(v)}, not a list of numbers")
    return [_number(x, f"value {k} of {what}") for k, x in enumerate(v)]


def _text(v, what: str) -> str:
    if not isinstance(v, str):
        raise BadData(f"{what} is {_what(v)}, not text")
    if len(v) > MAX_TEXT:
        raise BadData(f"{what} is {len(v)} characters long (at most {MAX_TEXT})")
    return v


def _what(v) -> str:
    return {type(None): "null", bool: "a boolean", str: "text", list: "a list", dict: "an object"}.get(
        type(v), "a number" if isinstance(v, (int, float)) else type(v).__name__
    )


def _positive(values: list[float], what: str, at=None) -> None:
    for k, v in enumerate(values):
        if not v > 0:
            where = f" (at x = {at[k]:g})" if at is not None else ""
            raise BadData(f"value {k} of {what} is {v:g}{where}: a logarithmic axis shows only positive numbers")


def plot_data(raw, b, fmt) -> tuple:
    """(x, [[name, ys], …], [[x, name], …], x label, y label), every value checked."""
    if not isinstance(raw, dict) or "x" not in raw or "series" not in raw:
        raise BadData(f"it is {_what(raw)} without `x` and `series`")
    x = _numbers(raw["x"], "`x`")
    if not x:
        raise BadData("its `x` is empty")
    if len(x) > MAX_POINTS:
        raise BadData(f"it has {len(x)} points (a plot shows at most {MAX_POINTS})")
    _positive(x, "`x`")
    series = raw["series"]
    if not isinstance(series, list) or not series:
        raise BadData("it has no series" if series == [] else f"its `series` is {_what(series)}, not a list")
    if len(series) > MAX_SERIES:
        raise BadData(f"it has {len(series)} series (a plot shows at most {MAX_SERIES})")
    out = []
    for k, s in enumerate(series):
        if not isinstance(s, dict) or "y" not in s or "name" not in s:
            raise BadData(f"series {k} is {_what(s)} without `name` and `y`")
        name = _text(s["name"], f"the name of series {k}")
        ys = _numbers(s["y"], f"`y` of series {k} ({name})")
        if not ys:
            raise BadData(f"series {k} ({name}) is empty")
        if len(ys) != len(x):
            raise BadData(f"series {k} ({name}) has {len(ys)} values of y for {len(x)} values of x")
        _positive(ys, f"`y` of series {k} ({name})", x)
        out.append([name, ys])
    marks = raw.get("marks", [])
    if not isinstance(marks, list):
        raise BadData(f"its `marks` is {_what(marks)}, not a list")
    checked = []
    for k, m in enumerate(marks):
        if not isinstance(m, dict) or "x" not in m or "name" not in m:
            raise BadData(f"mark {k} is {_what(m)} without `x` and `name`")
        mx = _number(m["x"], f"`x` of mark {k}")
        if not mx > 0:
            raise BadData(f"`x` of mark {k} is {mx:g}: a logarithmic axis shows only positive numbers")
        checked.append([mx, _text(m["name"], f"the name of mark {k}")])
    return x, out, checked, b.get("X-label") or "", b.get("Y-label") or ""


def matrix_data(raw, b, fmt) -> tuple:
    """(cells, row names, column names, [j, values, label] or None, [i, values, label] or None) as text."""
    fmt = recording.Format(precision=fmt.precision, integral="int")

    def shown(v: float) -> str:
        return recording.format_value(v, fmt)

    if not isinstance(raw, dict) or "matrix" not in raw:
        raise BadData(f"it is {_what(raw)} without `matrix`")
    rows = _matrix_rows(raw["matrix"])
    n = len(rows[0])
    names = {key: _axis_names(raw, key, count) for key, count in (("rows", len(rows)), ("columns", n))}
    picked = {
        key: _picked_line(raw, key, count, length, across, shown)
        for key, count, length, across in (("column", n, len(rows), "rows"), ("row", len(rows), n, "columns"))
    }
    cells = [[shown(v) for v in r] for r in rows]
    return cells, names["rows"], names["columns"], picked["column"], picked["row"]


def _matrix_rows(m) -> list[list[float]]:
    """The rows of a recorded ``matrix`` (a list of rows, or a recorded 2-d array): numbers, one length."""
    if isinstance(m, dict) and set(m) == {"array", "shape", "dtype"}:
        if len(m["shape"]) != 2:
            raise BadData(f"its `matrix` is an array of shape {tuple(m['shape'])}, not two-dimensional")
        m = m["array"]
    if not isinstance(m, list) or not m or not all(isinstance(r, list) for r in m):
        raise BadData("its `matrix` is not a non-empty list of rows")
    rows = [_numbers(r, f"row {k} of `matrix`") for k, r in enumerate(m)]
    n = len(rows[0])
    if not n or any(len(r) != n for r in rows):
        raise BadData(f"the rows of its `matrix` have {', '.join(str(len(r)) for r in rows)} entries, not one length")
    if len(rows) > MAX_CELLS or n > MAX_CELLS:
        raise BadData(f"its `matrix` is {len(rows)}×{n} (a figure shows at most {MAX_CELLS}×{MAX_CELLS})")
    return rows


def _axis_names(raw: dict, key: str, count: int) -> list[str] | None:
    """The names of the matrix's ``rows`` or ``columns`` (``key``), one per row or column; None: none given."""
    v = raw.get(key)
    if v is None:
        return None
    if not isinstance(v, list) or len(v) != count:
        raise BadData(f"its `{key}` should be a list of {count} names (the matrix has {count} {key})")
    return [_text(t, f"name {k} of `{key}`") for k, t in enumerate(v)]


def _picked_line(raw: dict, key: str, count: int, length: int, across: str, shown) -> list | None:
    """The ``column`` or ``row`` (``key``) picked out: [index, values as text, label]; None: none given."""
    p = raw.get(key)
    if p is None:
        return None
    if not isinstance(p, dict) or not {"index", "values", "label"} <= set(p):
        raise BadData(f"its `{key}` is {_what(p)} without `index`, `values` and `label`")
    i = p["index"]
    if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < count:
        raise BadData(f"the `index` of its `{key}` is {i!r}, not one of 0…{count - 1}")
    values = _numbers(p["values"], f"`values` of its `{key}`")
    if len(values) != length:
        raise BadData(f"its `{key}` has {len(values)} values, but the matrix has {length} {across}")
    return [i, [shown(v) for v in values], _text(p["label"], f"the `label` of its `{key}`")]


CHECKED = {"Plot": plot_data, "Matrix": matrix_data}


KIND = Figure()
