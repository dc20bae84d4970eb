"""Build-time SVG plots and matrices from recorded runs (the figure kinds' ``Plot`` and ``Matrix``).

- :func:`loglog_svg`: series of positive numbers on logarithmic axes (e.g. an error against a step).
- :func:`matrix_svg`: a matrix with one column and one row picked out, each beside the vector it is.

Drawn as :mod:`lessonkit.pipeline.svg` draws its figures (text in ``<text>``, colours from
``currentColor`` and CSS variables, deterministic). The colours of plot series and picked-out cells
are text-strength on both schemes (``PALETTE``: a light one, and one for Material's ``slate``), and
the series also differ in marker and dash, not in colour alone.
"""

from __future__ import annotations

import math

from lessonkit.pipeline import svg

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
            body.append(svg.text_at(gx, bottom + 17, decade_label(d), "lk-label", 13))
    for d in range(y_lo, y_hi + 1):
        gy = at_y(d)
        body.append(f'<path class="lk-grid" d="M{ml:.1f},{gy:.1f}H{ml + pw:.1f}"/>')
        body.append(f'<path class="lk-axis" d="M{ml:.1f},{gy:.1f}h-5"/>')
        if d % step(y_lo, y_hi) == 0:
            body.append(svg.text_at(ml - 8, gy, decade_label(d), "lk-label", 13, "end"))
    body.append(f'<path class="lk-axis" d="M{ml:.1f},{mt:.1f}V{bottom:.1f}H{ml + pw:.1f}"/>')
    if y_label:
        body.append(svg.text_at(8, 14, y_label, "lk-label", 13, "start"))
    for mx, text in marks:
        gx = px(mx)
        body.append(f'<path class="lk-mark" d="M{gx:.1f},{mt - 6:.1f}V{bottom:.1f}"/>')
        body.append(svg.text_at(gx, mt - 15, text, "lk-label", 12))
    for i, (_, ys) in enumerate(series):
        pts = sorted(zip(x, ys, strict=False))
        line = " ".join(f"{px(a):.1f},{py(b):.1f}" for a, b in pts)
        dots = "".join(_marker(i, px(a), py(b)) for a, b in pts)
        body.append(
            f'<g class="lk-s{i % len(LIGHT)}"><polyline class="lk-line"{DASHES[i % 4]} points="{line}"/>{dots}</g>'
        )
    y = bottom + 40
    if x_label:
        body.append(svg.text_at(ml + pw / 2, y, x_label, "lk-label", 13))
        y += 26
    for i, (name, _) in enumerate(series):  # the legend: a sample of the line and its marker
        body.append(
            f'<g class="lk-s{i % len(LIGHT)}"><path class="lk-line"{DASHES[i % 4]} d="M{ml:.1f},{y:.1f}h30"/>'
            + _marker(i, ml + 15, y)
            + "</g>"
        )
        body.append(svg.text_at(ml + 40, y, name, "lk-label", 13, "start"))
        y += 22
    width = max(W, max((ml + 40 + svg.text_width(n, 13) + 10 for n, _ in series), default=W))
    return svg.document(width, y - 6, title, body)


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
    cw = max(56.0, max(svg.text_width(c, 14) for c in everything) + 20)
    ch, pad = 38.0, 16.0
    hl = max([0.0] + [svg.text_width(s, 14) + 16 for s in row_names or []])
    ht = 26.0 if column_names else 0.0
    mx, my = pad + hl, pad + ht + (22 if column else 0)
    body = [
        PALETTE,
        '<defs><marker id="lk-ah3" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto"><path d="M0,0L10,5L0,10z" class="lk-arrow"/></marker></defs>',
    ]
    for k, name in enumerate(row_names or []):
        text = svg.text_at(mx - 8, my + k * ch + ch / 2, name, "lk-code", 14, "end")
        body.append(_picked(text, 1) if row is not None and k == row[0] else text)
    for k, name in enumerate(column_names or []):
        text = svg.text_at(mx + k * cw + cw / 2, my - 13, name, "lk-code", 14)
        body.append(_picked(text, 0) if column is not None and k == column[0] else text)
    for r in range(m):
        for c in range(n):
            x0, y0 = mx + c * cw, my + r * ch
            body.append(f'<rect class="lk-cell" x="{x0:.1f}" y="{y0:.1f}" width="{cw:.1f}" height="{ch:.1f}"/>')
            body.append(svg.text_at(mx + c * cw + cw / 2, my + r * ch + ch / 2, cells[r][c], "lk-code", 14))
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
        for r in range(len(values)):
            body.append(f'<rect class="lk-hl" x="{vx:.1f}" y="{my + r * ch:.1f}" width="{cw:.1f}" height="{ch:.1f}"/>')
        body.append("</g>")
        for r, v in enumerate(values):
            body.append(svg.text_at(vx + cw / 2, my + r * ch + ch / 2, v, "lk-code", 14))
        body.append(_picked(svg.text_at(vx, my - 13, text, "lk-code", 13, "start"), 0))
        width = max(width, vx + cw + pad, vx + svg.text_width(text, 13) + pad)
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
        for c in range(len(values)):
            body.append(f'<rect class="lk-hl" x="{mx + c * cw:.1f}" y="{vy:.1f}" width="{cw:.1f}" height="{ch:.1f}"/>')
        body.append("</g>")
        for c, v in enumerate(values):
            body.append(svg.text_at(mx + c * cw + cw / 2, vy + ch / 2, v, "lk-code", 14))
        body.append(_picked(svg.text_at(mx, vy + ch + 18, text, "lk-code", 13, "start"), 1))
        width = max(width, mx + svg.text_width(text, 13) + pad)
        height = vy + ch + 18 + 12 + pad
    return svg.document(width, height, title, body)
