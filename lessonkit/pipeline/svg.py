"""Build-time SVG figures from recorded runs (no MkDocs, no external requests).

- :func:`graph_svg`: a recorded node graph (``_record`` ``Capture.graph``), laid
  out by grandalf's Sugiyama layered layout; edges point from parent to child,
  one edge per argnum (``x * x`` shows two edges R → M), optional edge labels
  (cotangents) keyed by ``(child id, argument position)``.
- :func:`broadcast_svg`: a gradient summed back to a shape (e.g. ``unbroadcast``), step by step.
- :func:`nested_svg`: boxes nested across traces (outermost first).
- :func:`loglog_svg`: series of positive numbers on logarithmic axes (e.g. an error against a step).
- :func:`matrix_svg`: a matrix with one column and one row picked out, each beside the vector it is.

All text is in ``<text>`` (selectable, searchable); colours come from
``currentColor`` and CSS variables with fallbacks (dark mode follows the page);
a ``viewBox`` with ``max-width:100%`` scales to a phone. Output is deterministic. The colours of
plot series and picked-out cells are text-strength on both schemes (``PALETTE``: a light one, and
one for Material's ``slate``), and the series also differ in marker and dash, not in colour alone.
"""

from __future__ import annotations

import hashlib
import math
from html import escape

MONO = "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace"
SANS = "system-ui, -apple-system, 'Noto Sans CJK SC', 'PingFang SC', sans-serif"
STYLE = (
    "<style>"
    ".lk-fig{color:var(--md-default-fg-color,#222)}"
    ".lk-node{fill:var(--md-default-bg-color,#fff);stroke:currentColor;stroke-width:1.5}"
    ".lk-root{fill:var(--md-accent-fg-color--transparent,rgba(80,120,255,.1))}"
    ".lk-edge{stroke:currentColor;stroke-width:1.4;fill:none}"
    ".lk-arrow{fill:currentColor}"
    ".lk-label{fill:currentColor;font-family:" + SANS.replace("'", "&apos;") + "}"
    ".lk-code{fill:currentColor;font-family:" + MONO + "}"
    # notes and edge labels are text: a deep orange of text strength on either scheme (the theme's
    # accent, #ff6e42, has a contrast of 2.8:1 on white)
    ".lk-note{fill:#b0400b;font-family:" + MONO + "}"
    '[data-md-color-scheme="slate"] .lk-note{fill:#ff9e80}'
    ".lk-cell{fill:none;stroke:currentColor;stroke-width:1}"
    ".lk-halo{paint-order:stroke;stroke:var(--md-default-bg-color,#fff);stroke-width:5px;stroke-linejoin:round}"
    "</style>"
)


def _t(x: float, y: float, text: str, cls: str, size: int = 14, anchor: str = "middle") -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" class="{cls}" font-size="{size}" '
        f'text-anchor="{anchor}" dominant-baseline="central">{escape(text)}</text>'
    )


def _svg(width: float, height: float, title: str, body: list[str]) -> str:
    """The figure; marker ids get a suffix from the content, so several figures on one page
    never share an id (and the same figure always gets the same one)."""
    w, h = round(width), round(height)
    inner = "".join(body)
    suffix = hashlib.sha256(f"{title}\0{inner}".encode()).hexdigest()[:8]
    inner = inner.replace('id="lk-ah', f'id="lk-{suffix}-ah').replace("url(#lk-ah", f"url(#lk-{suffix}-ah")
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="lk-fig" viewBox="0 0 {w} {h}" '
        f'width="{w}" role="img" aria-label="{escape(title)}">'
        f"<title>{escape(title)}</title>{STYLE}" + inner + "</svg>"
    )


class _View:
    def __init__(self, w: float, h: float):
        self.w, self.h, self.xy = w, h, (0.0, 0.0)


def _node_size(node: dict, note: str | None = None) -> tuple[float, float]:
    label, fun = str(node["label"]), node.get("fun") or "root"
    chars = max(len(label) * 1.6 + 2, len(fun) + 2, len(note or "") + 1)  # CJK and Latin in one estimate
    return max(64.0, chars * 8.6), 46.0


def graph_svg(
    graph: dict, title: str, edge_labels: dict | None = None, root_text: str = "root", notes: dict | None = None
) -> str:
    """SVG of a recorded graph; ``edge_labels[(child, k)]`` labels the edge of argument position k;
    ``notes[node id]`` is one more line in the node (e.g. its tangent ``g = 0.540302``).

    Prose that explains the figure belongs in the page's ``<figcaption>``, which wraps on a phone."""
    # grandalf is imported here, not at the top: its layouts module imports NumPy (≈ 0.2 s), which
    # every lessonkit process (verify, mutate, serve) would pay for without drawing a figure.
    from grandalf.graphs import Edge, Vertex
    from grandalf.layouts import SugiyamaLayout

    nodes = graph["nodes"]
    edge_labels, notes = edge_labels or {}, notes or {}
    half = 30.0 if notes else 23.0  # half a node's height
    verts = []
    for n in nodes:
        v = Vertex(n["id"])
        v.view = _View(_node_size(n, notes.get(n["id"]))[0], 2 * half)
        verts.append(v)
    pairs = sorted({(p, n["id"]) for n in nodes for p in n["parents"]})
    pos = {}
    x_off = 0.0
    for comp in _components(verts, [Edge(verts[a], verts[b]) for a, b in pairs]):  # side by side, in id order
        sug = SugiyamaLayout(comp)
        sug.xspace, sug.yspace = 60, 80
        sug.init_all(roots=[v for v in comp.sV if not v.e_in()] or None)
        sug.draw(3)
        xs = [v.view.xy[0] - v.view.w / 2 for v in comp.sV]
        x_min = min(xs)
        for v in comp.sV:
            pos[v.data] = (v.view.xy[0] - x_min + x_off, v.view.xy[1])
        x_off += max(v.view.xy[0] + v.view.w / 2 for v in comp.sV) - x_min + 40
    pad = 24
    size = {n["id"]: (_node_size(n, notes.get(n["id"]))[0], 2 * half) for n in nodes}
    xs = [pos[n["id"]][0] - size[n["id"]][0] / 2 for n in nodes]
    ys = [pos[n["id"]][1] - half for n in nodes]
    dx, dy = pad - min(xs), pad - min(ys)
    P = {k: (x + dx, y + dy) for k, (x, y) in pos.items()}
    room = 8 * max((len(v) for v in edge_labels.values()), default=0)
    if room:
        P = {k: (x + room, y) for k, (x, y) in P.items()}
    width = max(P[n["id"]][0] + size[n["id"]][0] / 2 for n in nodes) + pad + room
    height = max(P[n["id"]][1] + half for n in nodes) + pad
    body = [
        '<defs><marker id="lk-ah" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" class="lk-arrow"/></marker></defs>'
    ]
    edges = [(p, n["id"], k) for n in nodes for k, p in enumerate(n["parents"])]

    def ports(key_of, end_of):  # spread the edges leaving (or entering) a node over its side
        out = {}
        for v in size:
            mine = sorted((e for e in edges if end_of(e) == v), key=key_of)
            span = min(size[v][0] - 16, 18 * (len(mine) - 1))
            for i, e in enumerate(mine):
                out[e] = P[v][0] + (i * span / (len(mine) - 1) - span / 2 if len(mine) > 1 else 0)
        return out

    out_x = ports(lambda e: (P[e[1]][0], e[2]), lambda e: e[0])
    in_x = ports(lambda e: (P[e[0]][0], e[2]), lambda e: e[1])
    for e in edges:  # edges first, under the nodes
        p, c, k = e
        twins = [x for x in edges if x[:2] == e[:2]]
        bend = (twins.index(e) - (len(twins) - 1) / 2) * 40
        sx, sy, ex, ey = out_x[e], P[p][1] + half, in_x[e], P[c][1] - half
        mx, my = (sx + ex) / 2 + bend, (sy + ey) / 2
        body.append(
            f'<path class="lk-edge" marker-end="url(#lk-ah)" '
            f'd="M{sx:.1f},{sy:.1f} Q{mx:.1f},{my:.1f} {ex:.1f},{ey:.1f}"/>'
        )
        label = edge_labels.get((c, k))
        if label is not None:  # beside the curve's midpoint (never across the line), over a halo
            lx, ly = (sx + 2 * mx + ex) / 4, (sy + 2 * my + ey) / 4
            side = "end" if bend < 0 else "start"  # a straight edge: the label to its right
            lx += -6 if side == "end" else 6
            body.append(_t(lx, ly, label, "lk-note lk-halo", 12, side))
    for n in nodes:
        x, y = P[n["id"]]
        w, h = size[n["id"]]
        root = n["kind"] == "root"
        note = notes.get(n["id"])
        y0 = y - (7 if note else 0)
        body.append(
            f'<rect class="lk-node{" lk-root" if root else ""}" x="{x - w / 2:.1f}" y="{y - h / 2:.1f}" '
            f'width="{w:.1f}" height="{h:.1f}" rx="8"/>'
        )
        if not root and n["label"] == n["fun"]:
            body.append(_t(x, y0, n["fun"], "lk-code", 13))
        elif root and n["label"] == "root":  # an unnamed root: just say what it is
            body.append(_t(x, y0, root_text, "lk-label", 13))
        else:
            body.append(_t(x, y0 - 9, str(n["label"]), "lk-label", 14))
            body.append(_t(x, y0 + 10, root_text if root else n["fun"], "lk-label" if root else "lk-code", 11))
        if note:
            single = n["label"] == (n["fun"] if not root else "root")
            body.append(_t(x, y0 + (17 if single else 26), note, "lk-note", 11))
    return _svg(width, height, title, body)


def broadcast_svg(
    g_in: list,
    sums: list[dict],
    title: str,
    out_label: str = "gradient",
    in_label: str = "upstream g",
    step: str = "sum(axis={axis}, keepdims={keepdims})",
) -> str:
    """A gradient summed back to an operand's shape, step by step: the incoming g, then each
    recorded sum (``step`` names it, with ``{axis}`` and ``{keepdims}``); the words come from the
    project's ``[labels]`` (``figure-upstream``, ``figure-result``, ``figure-sum-step``)."""
    stages = [(_shape(g_in), g_in, in_label)]
    for s in sums:
        stages.append((tuple(s["out_shape"]), _plain(s["out"]), "g"))
    cell, gap_y, pad = 40, 34, 20
    body, y = [], pad
    width = max(max(1, _cols(sh)) * cell for sh, _, _ in stages) + 2 * pad + 150
    for i, (shape, data, note) in enumerate(stages):
        rows, cols = _rows(shape), _cols(shape)
        label = out_label if i == len(stages) - 1 and i else note
        body.append(_t(pad, y + 8, f"{label}  shape={tuple(shape)}", "lk-label", 12, "start"))
        y += 20
        grid = _grid(data, shape)
        for r in range(rows):
            for c in range(cols):
                x0, y0 = pad + c * cell, y + r * cell
                body.append(f'<rect class="lk-cell" x="{x0}" y="{y0}" width="{cell}" height="{cell}"/>')
                body.append(_t(x0 + cell / 2, y0 + cell / 2, _num(grid[r][c]), "lk-code", 13))
        y += rows * cell
        if i < len(stages) - 1:
            nxt = sums[i]
            body.append(f'<path class="lk-edge" marker-end="url(#lk-ah2)" d="M{pad + 20},{y + 4} v{gap_y - 8}"/>')
            body.append(
                _t(
                    pad + 34,
                    y + gap_y / 2,
                    step.replace("{axis}", str(nxt["axis"])).replace("{keepdims}", str(nxt["keepdims"])),
                    "lk-note",
                    12,
                    "start",
                )
            )
            y += gap_y
    defs = (
        '<defs><marker id="lk-ah2" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto"><path d="M0,0L10,5L0,10z" class="lk-arrow"/></marker></defs>'
    )
    return _svg(width, y + pad, title, [defs] + body)


def _plain(v):
    if isinstance(v, dict) and "array" in v:
        return v["array"]
    if isinstance(v, dict) and "scalar" in v:
        return v["scalar"]
    return v


def _shape(data) -> tuple:
    data = _plain(data)
    out = []
    while isinstance(data, list):
        out.append(len(data))
        data = data[0] if data else None
    return tuple(out)


def _rows(shape) -> int:
    return shape[0] if len(shape) == 2 else 1


def _cols(shape) -> int:
    return shape[-1] if shape else 1


def _grid(data, shape):
    data = _plain(data)
    if len(shape) == 2:
        return data
    if len(shape) == 1:
        return [data]
    return [[data]]


def _num(v) -> str:
    return str(int(v)) if isinstance(v, float) and v == int(v) else (f"{v:.4g}" if isinstance(v, float) else str(v))


def nested_svg(chain: list, title: str, value_text: str | None = None, trace: str = "trace {trace}") -> str:
    """Boxes nested across traces: ``chain`` is ``[[type, trace], ..., [type, None]]`` outermost first;
    ``trace`` labels a box's level (``[labels] figure-trace``)."""
    boxes = [c for c in chain if c[1] is not None]
    inner = chain[-1][0]
    step, pad = 22, 16
    inner_w = max(150, 9 * len(value_text or inner) + 30)
    for i, (kind, level) in enumerate(boxes):  # room for each box's two labels on its top line
        need = 36 + _width(str(kind), 12) + _width(trace.replace("{trace}", str(level)), 12)
        inner_w = max(inner_w, math.ceil(need - 2 * step * (len(boxes) - i)))
    total_w = inner_w + 2 * step * len(boxes) + 2 * pad
    total_h = 50 + 2 * step * len(boxes) + 28 * len(boxes) + 2 * pad
    body = []
    for i, (kind, level) in enumerate(boxes):
        x0 = pad + i * step
        y0 = pad + i * (step + 28)
        w = total_w - 2 * x0
        h = total_h - y0 - pad - i * step
        body.append(
            f'<rect class="lk-node{" lk-root" if i % 2 else ""}" x="{x0}" y="{y0}" width="{w}" height="{h}" rx="8"/>'
        )
        body.append(_t(x0 + 10, y0 + 15, f"{kind}", "lk-code", 12, "start"))
        body.append(_t(x0 + w - 10, y0 + 15, trace.replace("{trace}", str(level)), "lk-label", 12, "end"))
    n = len(boxes)
    cy = pad + n * (step + 28) + 25
    body.append(_t(total_w / 2, cy, value_text or inner, "lk-code", 13))
    return _svg(total_w, total_h, title, body)


def alive_svg(during: dict, title: str, row_labels: dict | None = None, layer: str = "after layer {n}") -> str:
    """Live nodes after each layer, one square per node: ``{"JVPNode": [2, 2, 2], "VJPNode": [3, 5, 7]}``.

    One column per mode (labelled by ``row_labels``), one row per layer: narrow enough for a phone."""
    kinds = [k for k in sorted(during) if isinstance(during[k], list)]
    row_labels = row_labels or {}
    layers = max(len(during[k]) for k in kinds)
    most = max(max(during[k]) for k in kinds)
    sq, gap, pad, label_w = 12, 3, 16, 74
    col_w = max(most * (sq + gap) + 30, max(7.4 * len(row_labels.get(k, k)) + 14 for k in kinds))
    body = [
        _t(pad + label_w + j * col_w, pad + 8, row_labels.get(k, k), "lk-code", 12, "start")
        for j, k in enumerate(kinds)
    ]
    y = pad + 30
    for i in range(layers):
        body.append(_t(pad, y + 8, layer.replace("{n}", str(i + 1)), "lk-label", 12, "start"))
        for j, kind in enumerate(kinds):
            n = during[kind][i]
            x0 = pad + label_w + j * col_w
            for k in range(n):
                body.append(
                    f'<rect class="lk-node" x="{x0 + k * (sq + gap)}" y="{y + 2}" width="{sq}" height="{sq}" rx="2"/>'
                )
            body.append(_t(x0 + n * (sq + gap) + 4, y + 8, str(n), "lk-note", 12, "start"))
        y += 28
    return _svg(pad * 2 + label_w + len(kinds) * col_w, y + pad - 8, title, body)


def _components(verts: list, edges: list) -> list:
    """The connected components as grandalf graphs, built in a fixed order.

    grandalf's ``Graph`` gathers each component's edges in a ``set``, whose order follows the
    objects' addresses; the edge order then steers the crossing reduction, so the same graph
    could be drawn differently from one run to the next. Here every component gets its
    vertices and edges in id order."""
    from grandalf.graphs import graph_core

    index = {id(v): i for i, v in enumerate(verts)}
    parent = list(range(len(verts)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for e in edges:
        parent[find(index[id(e.v[0])])] = find(index[id(e.v[1])])
    groups: dict[int, list] = {}
    for i, v in enumerate(verts):
        groups.setdefault(find(i), []).append(v)
    out = []
    for members in sorted(groups.values(), key=lambda m: index[id(m[0])]):
        ids = {id(v) for v in members}
        out.append(graph_core(members, [e for e in edges if id(e.v[0]) in ids], directed=True))
    return out


# -- plots and matrices: colours per series, readable on the light and the dark scheme ----------

# Text-strength colours (contrast of at least 4.5:1 on Material's light background #fff and on its
# dark "slate" background): a series' colour is the custom property --lk-c of its group.
LIGHT = ("#1d5bb5", "#b3261e", "#2b6e2f", "#7a3a99")
DARK = ("#8ab4f8", "#f28b82", "#81c995", "#d7aefb")
PALETTE = (
    "<style>"
    + "".join(f".lk-s{i}{{--lk-c:{c}}}" for i, c in enumerate(LIGHT))
    + "".join(f'[data-md-color-scheme="slate"] .lk-s{i}{{--lk-c:{c}}}' for i, c in enumerate(DARK))
    + ".lk-line{fill:none;stroke:var(--lk-c,currentColor);stroke-width:2}"
    ".lk-dot{fill:var(--lk-c,currentColor);stroke:var(--md-default-bg-color,#fff);stroke-width:1}"
    ".lk-axis{stroke:currentColor;stroke-width:1.2;fill:none}"
    ".lk-grid{stroke:currentColor;stroke-opacity:.14;stroke-width:1}"
    ".lk-mark{stroke:currentColor;stroke-width:1.2;stroke-dasharray:5 4}"
    ".lk-hl{fill:var(--lk-c,currentColor);fill-opacity:.16;stroke:var(--lk-c,currentColor);stroke-width:2.5}"
    ".lk-hl-text{fill:var(--lk-c,currentColor)}"
    "</style>"
)
DASHES = ("", ' stroke-dasharray="7 4"', ' stroke-dasharray="2 3"', ' stroke-dasharray="9 3 2 3"')
SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _width(text: str, size: float) -> float:
    """The drawn width of a line of text, estimated: CJK characters a full em, others 0.6 em."""
    return sum(size if ord(ch) >= 0x2E80 else 0.6 * size for ch in text)


def decade_label(d: int) -> str:
    """``10⁻⁶`` for ``-6``: a tick label of a logarithmic axis."""
    return "10" + str(d).translate(SUPERSCRIPT)


def _decades(values: list[float]) -> tuple[int, int]:
    """The decades that enclose ``values`` (positive numbers): at least one decade wide."""
    lo = math.floor(math.log10(min(values)) + 1e-9)
    hi = math.ceil(math.log10(max(values)) - 1e-9)
    return (lo - 1, hi + 1) if lo == hi else (lo, hi)


def _dot(d: str) -> str:
    return f'<path class="lk-dot" d="{d}"/>'


def _marker(i: int, x: float, y: float) -> str:
    """A point of series ``i``: circle, square, triangle, diamond (told apart without colour)."""
    shape = i % 4
    if shape == 0:
        return f'<circle class="lk-dot" cx="{x:.1f}" cy="{y:.1f}" r="4"/>'
    if shape == 1:
        return f'<rect class="lk-dot" x="{x - 3.6:.1f}" y="{y - 3.6:.1f}" width="7.2" height="7.2"/>'
    if shape == 2:
        return _dot(f"M{x:.1f},{y - 4.8:.1f}L{x + 4.4:.1f},{y + 3.4:.1f}L{x - 4.4:.1f},{y + 3.4:.1f}z")
    return _dot(f"M{x:.1f},{y - 5:.1f}L{x + 5:.1f},{y:.1f}L{x:.1f},{y + 5:.1f}L{x - 5:.1f},{y:.1f}z")


def loglog_svg(
    x: list[float],
    series: list[tuple[str, list[float]]],
    title: str,
    x_label: str = "",
    y_label: str = "",
    marks: list[tuple[float, str]] | None = None,
) -> str:
    """A log-log plot: one polyline with a marker at each point per series (``(name, ys)``, one y per
    x; every value positive, checked by the caller), a vertical dashed line per mark ``(x, text)``.

    The axes span the decades enclosing the data; a tick at every decade, a label (``10⁻⁶``) at
    every decade that is a multiple of a step chosen to give at most seven labels. Larger x to
    the right, larger y upwards; ``y_label`` stands above the y axis, ``x_label`` under the x
    axis, the legend under it (one row per series). Narrow (440 wide) so that its text stays
    readable when a phone scales it down."""
    marks = marks or []
    ml, mr, mt, ph, W = 58.0, 18.0, 40.0, 230.0, 440.0
    pw = W - ml - mr
    x_lo, x_hi = _decades(list(x) + [m[0] for m in marks])
    y_lo, y_hi = _decades([v for _, ys in series for v in ys])

    inset = 10.0  # the outermost decades stand off the axes, so no point sits on an axis line

    def at_x(d: float) -> float:  # d: log10 of a value
        return ml + inset + (d - x_lo) / (x_hi - x_lo) * (pw - 2 * inset)

    def at_y(d: float) -> float:
        return mt + inset + (y_hi - d) / (y_hi - y_lo) * (ph - 2 * inset)

    def px(v: float) -> float:
        return at_x(math.log10(v))

    def py(v: float) -> float:
        return at_y(math.log10(v))

    def step(lo: int, hi: int) -> int:
        return max(1, math.ceil((hi - lo) / 6))

    body = [PALETTE]
    bottom = mt + ph
    for d in range(x_lo, x_hi + 1):  # grid and ticks: every decade
        gx = at_x(d)
        body.append(f'<path class="lk-grid" d="M{gx:.1f},{mt:.1f}V{bottom:.1f}"/>')
        body.append(f'<path class="lk-axis" d="M{gx:.1f},{bottom:.1f}v5"/>')
        if d % step(x_lo, x_hi) == 0:
            body.append(_t(gx, bottom + 17, decade_label(d), "lk-label", 13))
    for d in range(y_lo, y_hi + 1):
        gy = at_y(d)
        body.append(f'<path class="lk-grid" d="M{ml:.1f},{gy:.1f}H{ml + pw:.1f}"/>')
        body.append(f'<path class="lk-axis" d="M{ml:.1f},{gy:.1f}h-5"/>')
        if d % step(y_lo, y_hi) == 0:
            body.append(_t(ml - 8, gy, decade_label(d), "lk-label", 13, "end"))
    body.append(f'<path class="lk-axis" d="M{ml:.1f},{mt:.1f}V{bottom:.1f}H{ml + pw:.1f}"/>')
    if y_label:
        body.append(_t(8, 14, y_label, "lk-label", 13, "start"))
    for mx, text in marks:
        gx = px(mx)
        body.append(f'<path class="lk-mark" d="M{gx:.1f},{mt - 6:.1f}V{bottom:.1f}"/>')
        body.append(_t(gx, mt - 15, text, "lk-label", 12))
    for i, (_, ys) in enumerate(series):
        pts = sorted(zip(x, ys))
        line = " ".join(f"{px(a):.1f},{py(b):.1f}" for a, b in pts)
        dots = "".join(_marker(i, px(a), py(b)) for a, b in pts)
        body.append(
            f'<g class="lk-s{i % len(LIGHT)}"><polyline class="lk-line"{DASHES[i % 4]} points="{line}"/>{dots}</g>'
        )
    y = bottom + 40
    if x_label:
        body.append(_t(ml + pw / 2, y, x_label, "lk-label", 13))
        y += 26
    for i, (name, _) in enumerate(series):  # the legend: a sample of the line and its marker
        body.append(
            f'<g class="lk-s{i % len(LIGHT)}"><path class="lk-line"{DASHES[i % 4]} d="M{ml:.1f},{y:.1f}h30"/>'
            + _marker(i, ml + 15, y)
            + "</g>"
        )
        body.append(_t(ml + 40, y, name, "lk-label", 13, "start"))
        y += 22
    width = max(W, max((ml + 40 + _width(n, 13) + 10 for n, _ in series), default=W))
    return _svg(width, y - 6, title, body)


def _picked(text: str, i: int) -> str:
    """A ``<text>`` drawn in the colour of series ``i``."""
    return f'<g class="lk-s{i}">' + text.replace('class="', 'class="lk-hl-text ', 1) + "</g>"


def matrix_svg(
    cells: list[list[str]],
    title: str,
    row_names: list[str] | None = None,
    column_names: list[str] | None = None,
    column: tuple[int, list[str], str] | None = None,
    row: tuple[int, list[str], str] | None = None,
) -> str:
    """A matrix of formatted numbers with one column and one row picked out.

    ``column = (j, values, text)``: column j is outlined in the first series colour and
    ``values`` (one per row) stand to its right, after an arrow, under ``text``; ``row = (i,
    values, text)``: row i is outlined in the second colour and ``values`` (one per column)
    stand under the matrix, after an arrow, above ``text``. ``row_names`` label the rows on the
    left, ``column_names`` the columns on top."""
    m, n = len(cells), len(cells[0])
    everything = [c for r in cells for c in r] + (column[1] if column else []) + (row[1] if row else [])
    cw = max(56.0, max(_width(c, 14) for c in everything) + 20)
    ch, pad = 38.0, 16.0
    hl = max([0.0] + [_width(s, 14) + 16 for s in row_names or []])
    ht = 26.0 if column_names else 0.0
    mx, my = pad + hl, pad + ht + (22 if column else 0)
    body = [
        PALETTE,
        '<defs><marker id="lk-ah3" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto"><path d="M0,0L10,5L0,10z" class="lk-arrow"/></marker></defs>',
    ]
    for k, name in enumerate(row_names or []):
        text = _t(mx - 8, my + k * ch + ch / 2, name, "lk-code", 14, "end")
        body.append(_picked(text, 1) if row is not None and k == row[0] else text)
    for k, name in enumerate(column_names or []):
        text = _t(mx + k * cw + cw / 2, my - 13, name, "lk-code", 14)
        body.append(_picked(text, 0) if column is not None and k == column[0] else text)
    for r in range(m):
        for c in range(n):
            x0, y0 = mx + c * cw, my + r * ch
            body.append(f'<rect class="lk-cell" x="{x0:.1f}" y="{y0:.1f}" width="{cw:.1f}" height="{ch:.1f}"/>')
            body.append(_t(mx + c * cw + cw / 2, my + r * ch + ch / 2, cells[r][c], "lk-code", 14))
    right, below = mx + n * cw, my + m * ch
    width, height = right + pad, below + pad
    if column is not None:  # the column, outlined; its values to the right
        j, values, text = column
        body.append(
            f'<g class="lk-s0"><rect class="lk-hl" x="{mx + j * cw:.1f}" y="{my:.1f}" width="{cw:.1f}" '
            f'height="{m * ch:.1f}" rx="3"/></g>'
        )
        vx = right + 64
        body.append(
            f'<path class="lk-edge" marker-end="url(#lk-ah3)" d="M{right + 8:.1f},{my + m * ch / 2:.1f}H{vx - 8:.1f}"/>'
        )
        body.append('<g class="lk-s0">')
        for r, v in enumerate(values):
            body.append(f'<rect class="lk-hl" x="{vx:.1f}" y="{my + r * ch:.1f}" width="{cw:.1f}" height="{ch:.1f}"/>')
        body.append("</g>")
        for r, v in enumerate(values):
            body.append(_t(vx + cw / 2, my + r * ch + ch / 2, v, "lk-code", 14))
        body.append(_picked(_t(vx, my - 13, text, "lk-code", 13, "start"), 0))
        width = max(width, vx + cw + pad, vx + _width(text, 13) + pad)
    if row is not None:  # the row, outlined; its values under the matrix
        i, values, text = row
        body.append(
            f'<g class="lk-s1"><rect class="lk-hl" x="{mx:.1f}" y="{my + i * ch:.1f}" width="{n * cw:.1f}" '
            f'height="{ch:.1f}" rx="3"/></g>'
        )
        vy = below + 56
        body.append(
            f'<path class="lk-edge" marker-end="url(#lk-ah3)" d="M{mx + n * cw / 2:.1f},{below + 8:.1f}V{vy - 8:.1f}"/>'
        )
        body.append('<g class="lk-s1">')
        for c, v in enumerate(values):
            body.append(f'<rect class="lk-hl" x="{mx + c * cw:.1f}" y="{vy:.1f}" width="{cw:.1f}" height="{ch:.1f}"/>')
        body.append("</g>")
        for c, v in enumerate(values):
            body.append(_t(mx + c * cw + cw / 2, vy + ch / 2, v, "lk-code", 14))
        body.append(_picked(_t(mx, vy + ch + 18, text, "lk-code", 13, "start"), 1))
        width = max(width, mx + _width(text, 13) + pad)
        height = vy + ch + 18 + 12 + pad
    return _svg(width, height, title, body)
