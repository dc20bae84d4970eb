"""Build-time SVG figures from recorded runs (no MkDocs, no external requests).

- :func:`graph_svg`: a recorded node graph (``_record`` ``Capture.graph``), laid
  out by grandalf's Sugiyama layered layout; edges point from parent to child,
  one edge per argnum (``x * x`` shows two edges R → M), optional edge labels
  (cotangents) keyed by ``(child id, argument position)``.
- :func:`broadcast_svg`: a gradient summed back to a shape (e.g. ``unbroadcast``), step by step.
- :func:`nested_svg`: boxes nested across traces (outermost first).

Plots and matrices are drawn in :mod:`lessonkit.pipeline.plots`, with :func:`text_at` and
:func:`document` from here.

All text is in ``<text>`` (selectable, searchable); colours come from
``currentColor`` and CSS variables with fallbacks (dark mode follows the page);
a ``viewBox`` with ``max-width:100%`` scales to a phone. Output is deterministic.
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


def text_at(x: float, y: float, text: str, cls: str, size: int = 14, anchor: str = "middle") -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" class="{cls}" font-size="{size}" '
        f'text-anchor="{anchor}" dominant-baseline="central">{escape(text)}</text>'
    )


def document(width: float, height: float, title: str, body: list[str]) -> str:
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


def text_width(text: str, size: float) -> float:
    """The drawn width of a line of text, estimated: CJK characters a full em, others 0.6 em."""
    return sum(size if ord(ch) >= 0x2E80 else 0.6 * size for ch in text)


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
            body.append(text_at(lx, ly, label, "lk-note lk-halo", 12, side))
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
            body.append(text_at(x, y0, n["fun"], "lk-code", 13))
        elif root and n["label"] == "root":  # an unnamed root: just say what it is
            body.append(text_at(x, y0, root_text, "lk-label", 13))
        else:
            body.append(text_at(x, y0 - 9, str(n["label"]), "lk-label", 14))
            body.append(text_at(x, y0 + 10, root_text if root else n["fun"], "lk-label" if root else "lk-code", 11))
        if note:
            single = n["label"] == (n["fun"] if not root else "root")
            body.append(text_at(x, y0 + (17 if single else 26), note, "lk-note", 11))
    return document(width, height, title, body)


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
        body.append(text_at(pad, y + 8, f"{label}  shape={tuple(shape)}", "lk-label", 12, "start"))
        y += 20
        grid = _grid(data, shape)
        for r in range(rows):
            for c in range(cols):
                x0, y0 = pad + c * cell, y + r * cell
                body.append(f'<rect class="lk-cell" x="{x0}" y="{y0}" width="{cell}" height="{cell}"/>')
                body.append(text_at(x0 + cell / 2, y0 + cell / 2, _num(grid[r][c]), "lk-code", 13))
        y += rows * cell
        if i < len(stages) - 1:
            nxt = sums[i]
            body.append(f'<path class="lk-edge" marker-end="url(#lk-ah2)" d="M{pad + 20},{y + 4} v{gap_y - 8}"/>')
            body.append(
                text_at(
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
    return document(width, y + pad, title, [defs] + body)


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
        need = 36 + text_width(str(kind), 12) + text_width(trace.replace("{trace}", str(level)), 12)
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
        body.append(text_at(x0 + 10, y0 + 15, f"{kind}", "lk-code", 12, "start"))
        body.append(text_at(x0 + w - 10, y0 + 15, trace.replace("{trace}", str(level)), "lk-label", 12, "end"))
    n = len(boxes)
    cy = pad + n * (step + 28) + 25
    body.append(text_at(total_w / 2, cy, value_text or inner, "lk-code", 13))
    return document(total_w, total_h, title, body)


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
        text_at(pad + label_w + j * col_w, pad + 8, row_labels.get(k, k), "lk-code", 12, "start")
        for j, k in enumerate(kinds)
    ]
    y = pad + 30
    for i in range(layers):
        body.append(text_at(pad, y + 8, layer.replace("{n}", str(i + 1)), "lk-label", 12, "start"))
        for j, kind in enumerate(kinds):
            n = during[kind][i]
            x0 = pad + label_w + j * col_w
            for k in range(n):
                body.append(
                    f'<rect class="lk-node" x="{x0 + k * (sq + gap)}" y="{y + 2}" width="{sq}" height="{sq}" rx="2"/>'
                )
            body.append(text_at(x0 + n * (sq + gap) + 4, y + 8, str(n), "lk-note", 12, "start"))
        y += 28
    return document(pad * 2 + label_w + len(kinds) * col_w, y + pad - 8, title, body)


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
