"""The figure kind's number shapes, ``Plot:`` (log-log) and ``Matrix:``: the drawing of small data
sets element by element, the colours' contrast on both schemes, and every bad recording or
header as a located error."""

from __future__ import annotations

import re

import pytest
from support import block

from lessonkit.kinds import figure
from lessonkit.pipeline import plots, recording
from lessonkit.pipeline import svg as figures

pytestmark = pytest.mark.warm_cache  # the builds' subject is not the cache: start from a warm one


def _texts(svg: str) -> list[str]:
    return re.findall(r"<text [^>]*>([^<]*)</text>", svg)


def _drawn(svg: str) -> str:
    """What comes after the style sheets."""
    return svg.split("</style>")[-1]


SMALL = dict(
    x=[1e-3, 1e-2, 1e-1],
    series=[("前向", [1e-6, 1e-4, 1e-2]), ("中心", [2e-5, 3e-5, 1e-3])],
    title="误差随 ε",
    x_label="ε",
    y_label="误差",
    marks=[(1e-2, "EPS")],
)


def test_loglog_plot_of_a_small_data_set():
    svg = plots.loglog_svg(**SMALL)
    assert svg.startswith(
        '<svg xmlns="http://www.w3.org/2000/svg" class="lk-fig" viewBox="0 0 440 374" width="440" '
        'role="img" aria-label="误差随 ε"><title>误差随 ε</title><style>'
    )
    # ticks of x (10⁻³…10⁻¹), of y (the decades enclosing every y: 10⁻⁶…10⁻²), the axis and mark
    # labels, the legend
    assert _texts(svg) == [
        "10⁻³",
        "10⁻²",
        "10⁻¹",
        "10⁻⁶",
        "10⁻⁵",
        "10⁻⁴",
        "10⁻³",
        "10⁻²",
        "误差",
        "EPS",
        "ε",
        "前向",
        "中心",
    ]
    drawn = _drawn(svg)
    # 1e-3 … 1e-1 span the plot's width (58 + 10 … 422 - 10); 1e-6 is at the bottom (270 - 10),
    # 1e-2 at the top (40 + 10), each decade 52.5 apart: 2e-5 is 0.699 decades above 1e-5
    assert re.findall(r"<polyline [^>]*/>", drawn) == [
        '<polyline class="lk-line" points="68.0,260.0 240.0,155.0 412.0,50.0"/>',
        '<polyline class="lk-line" stroke-dasharray="7 4" points="68.0,191.7 240.0,182.5 412.0,102.5"/>',
    ]
    groups = re.findall(r'<g class="(lk-s\d)">(.*?)</g>', drawn)
    assert [g for g, _ in groups] == ["lk-s0", "lk-s1", "lk-s0", "lk-s1"]  # two series, two legend rows
    assert re.findall(r"<circle [^>]*/>", groups[0][1]) == [
        '<circle class="lk-dot" cx="68.0" cy="260.0" r="4"/>',
        '<circle class="lk-dot" cx="240.0" cy="155.0" r="4"/>',
        '<circle class="lk-dot" cx="412.0" cy="50.0" r="4"/>',
    ]
    assert re.findall(r'<rect class="lk-dot" x="([\d.]+)" y="([\d.]+)"', groups[1][1]) == [
        ("64.4", "188.1"),
        ("236.4", "178.9"),
        ("408.4", "98.9"),
    ]
    assert drawn.count('class="lk-grid"') == 3 + 5  # one line per decade
    assert re.findall(r'<path class="lk-mark" d="([^"]+)"/>', drawn) == ["M240.0,34.0V270.0"]
    assert re.findall(r'<path class="lk-axis" d="(M[^"]*V[^"]*H[^"]*)"/>', drawn) == ["M58.0,40.0V270.0H422.0"]
    assert "href" not in svg and "http" not in svg.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert plots.loglog_svg(**SMALL) == svg  # deterministic


def test_loglog_labels_at_most_seven_decades():
    x = [10.0**-k for k in range(1, 14)]  # lesson 12's eps: 1e-1 … 1e-13
    svg = plots.loglog_svg(x, [("a", x)], "t")
    assert _texts(svg) == [
        *["10⁻¹²", "10⁻¹⁰", "10⁻⁸", "10⁻⁶", "10⁻⁴", "10⁻²"],  # x: every second of 12 decades
        *["10⁻¹²", "10⁻¹⁰", "10⁻⁸", "10⁻⁶", "10⁻⁴", "10⁻²"],  # y: the same
        "a",
    ]
    assert _drawn(svg).count('class="lk-grid"') == 13 + 13  # but a tick at every decade
    # x all on one decade: a decade more on each side; y inside one decade: the two around it
    one = plots.loglog_svg([1e-3, 1e-3], [("a", [5.0, 5.0])], "t")
    assert _texts(one) == ["10⁻⁴", "10⁻³", "10⁻²", "10⁰", "10¹", "a"]


def test_plot_and_matrix_colours_are_text_strength_on_both_schemes():
    def luminance(hexcolour: str) -> float:
        rgb = [int(hexcolour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
        lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    def contrast(a: str, b: str) -> float:
        la, lb = sorted((luminance(a), luminance(b)), reverse=True)
        return (la + 0.05) / (lb + 0.05)

    light, slate = "#ffffff", "#1e2129"  # Material's backgrounds, as Chromium computes them
    assert min(contrast(c, light) for c in plots.LIGHT) >= 4.5
    assert min(contrast(c, slate) for c in plots.DARK) >= 4.5
    assert contrast("#b0400b", light) >= 4.5 and contrast("#ff9e80", slate) >= 4.5  # notes, edge labels
    for i, (day, night) in enumerate(zip(plots.LIGHT, plots.DARK, strict=True)):
        assert f".lk-s{i}{{--lk-c:{day}}}" in plots.PALETTE
        assert f'[data-md-color-scheme="slate"] .lk-s{i}{{--lk-c:{night}}}' in plots.PALETTE
    assert ".lk-note{fill:#b0400b;" in figures.STYLE and '[data-md-color-scheme="slate"] .lk-note{fill:#ff9e80}' in (
        figures.STYLE
    )


def test_matrix_picks_out_a_column_and_a_row():
    cells = [["2", "1", "0"], ["0.540", "3", "2"]]
    svg = plots.matrix_svg(
        cells, "J", ["f₁", "f₂"], ["x₁", "x₂", "x₃"], (2, ["0", "2"], "jvp(e₃)"), (1, ["0.540", "3", "2"], "vjp(e₂)")
    )
    assert _texts(svg) == [
        *["f₁", "f₂", "x₁", "x₂", "x₃"],  # row and column names
        *["2", "1", "0", "0.540", "3", "2"],  # the matrix, row by row
        *["0", "2", "jvp(e₃)"],  # the column's values, right of the matrix
        *["0.540", "3", "2", "vjp(e₂)"],  # the row's values, under it
    ]
    drawn = _drawn(svg)
    # the picked names are drawn in their series' colour: row f₂ (lk-s1), column x₃ (lk-s0)
    assert re.findall(r'<g class="(lk-s\d)"><text [^>]*class="lk-hl-text lk-code"[^>]*>([^<]*)</text></g>', drawn) == [
        ("lk-s1", "f₂"),
        ("lk-s0", "x₃"),
        ("lk-s0", "jvp(e₃)"),
        ("lk-s1", "vjp(e₂)"),
    ]
    # cells 62 wide ("0.540" and padding), 38 high; the matrix starts right of the row names (16 + 32.8)
    # and under the column names and the column's label (16 + 26 + 22)
    outlines = re.findall(r'<g class="(lk-s\d)"><rect class="lk-hl" ([^>]*)/></g>', drawn)
    assert outlines == [
        ("lk-s0", 'x="172.8" y="64.0" width="62.0" height="76.0" rx="3"'),  # column 2
        ("lk-s1", 'x="48.8" y="102.0" width="186.0" height="38.0" rx="3"'),  # row 1
    ]
    assert drawn.count('class="lk-cell"') == 6 and drawn.count('class="lk-hl"') == 2 + 2 + 3
    assert re.findall(r'<path class="lk-edge" marker-end="url\(#lk-[0-9a-f]{8}-ah3\)" d="([^"]+)"/>', drawn) == [
        "M242.8,102.0H290.8",  # to the column's values
        "M141.8,148.0V188.0",  # to the row's values, 56 under the matrix (64 + 76)
    ]
    plain = plots.matrix_svg(cells, "J")  # nothing picked out: just the cells
    assert _texts(plain) == ["2", "1", "0", "0.540", "3", "2"] and "lk-hl" not in _drawn(plain)


class _Header:
    def __init__(self, **fields):
        self.fields = fields

    def get(self, name):
        return self.fields.get(name)


FMT = recording.Format(precision=3)
GOOD = {"x": [1e-2, 1e-1], "series": [{"name": "a", "y": [1e-3, 2e-3]}]}


def test_plot_data_is_read_from_the_recording():
    raw = {
        "x": {"array": [0.01, 0.1], "shape": [2], "dtype": "float64"},
        "series": [{"name": "a", "y": [{"scalar": 0.001, "dtype": "float64"}, 2e-3]}],
        "marks": [{"x": 1e-2, "name": "EPS"}],
    }
    assert figure.plot_data(raw, _Header(**{"X-label": "ε"}), FMT) == (
        [0.01, 0.1],
        [["a", [0.001, 0.002]]],
        [[0.01, "EPS"]],
        "ε",
        "",
    )


@pytest.mark.parametrize(
    "change, message",
    [
        ({"x": [1e-2, 0.0]}, "value 1 of `x` is 0: a logarithmic axis shows only positive numbers"),
        (
            {"series": [{"name": "a", "y": [1e-3, -2.0]}]},
            "value 1 of `y` of series 0 (a) is -2 (at x = 0.1): a logarithmic axis shows only positive numbers",
        ),
        ({"series": [{"name": "a", "y": [1e-3]}]}, "series 0 (a) has 1 values of y for 2 values of x"),
        ({"series": [{"name": "a", "y": []}]}, "series 0 (a) is empty"),
        ({"series": []}, "it has no series"),
        ({"x": []}, "its `x` is empty"),
        ({"x": [{"float": "nan"}, 1.0]}, "value 0 of `x` is nan, not a finite number"),
        ({"x": [1e-2, float("inf")]}, "value 1 of `x` is inf, not a finite number"),
        (
            {"series": [{"name": "a", "y": [1e-3, 10**400]}]},
            "value 1 of `y` of series 0 (a) is an integer of 1329 bits, too large to draw",
        ),
        ({"x": [1e-2, True]}, "value 1 of `x` is a boolean, not a number"),
        (
            {"x": {"array": [[1.0]], "shape": [1, 1], "dtype": "float64"}},
            "`x` is an array of shape (1, 1), not a list of numbers",
        ),
        ({"series": [{"y": [1.0, 2.0]}]}, "series 0 is an object without `name` and `y`"),
        ({"series": [{"name": 3, "y": [1.0, 2.0]}]}, "the name of series 0 is a number, not text"),
        (
            {"marks": [{"x": -1e-6, "name": "EPS"}]},
            "`x` of mark 0 is -1e-06: a logarithmic axis shows only positive numbers",
        ),
        ({"series": [{"name": str(k), "y": [1.0, 2.0]} for k in range(5)]}, "it has 5 series (a plot shows at most 4)"),
    ],
)
def test_bad_plot_data_says_which_value(change, message):
    with pytest.raises(figure.BadData) as err:
        figure.plot_data({**GOOD, **change}, _Header(), FMT)
    assert str(err.value) == message


@pytest.mark.parametrize(
    "raw, message",
    [
        ({"matrix": [[1.0, 2.0], [3.0]]}, "the rows of its `matrix` have 2, 1 entries, not one length"),
        ({"matrix": []}, "its `matrix` is not a non-empty list of rows"),
        (
            {"matrix": [[1.0, 2.0]], "columns": ["a"]},
            "its `columns` should be a list of 2 names (the matrix has 2 columns)",
        ),
        (
            {"matrix": [[1.0, 2.0]], "column": {"index": 2, "values": [1.0], "label": "c"}},
            "the `index` of its `column` is 2, not one of 0…1",
        ),
        (
            {"matrix": [[1.0, 2.0]], "row": {"index": 0, "values": [1.0], "label": "r"}},
            "its `row` has 1 values, but the matrix has 2 columns",
        ),
        ({"matrix": [[1.0, "x"]]}, "value 1 of row 0 of `matrix` is text, not a number"),
        ({"matrix": [[1.0, float("-inf")]]}, "value 1 of row 0 of `matrix` is -inf, not a finite number"),
    ],
)
def test_bad_matrix_data_says_which_value(raw, message):
    with pytest.raises(figure.BadData) as err:
        figure.matrix_data(raw, _Header(), FMT)
    assert str(err.value) == message


def test_matrix_data_formats_its_numbers():
    raw = {
        "matrix": {"array": [[2.0, 1.0], [0.5403023058681398, 3.0]], "shape": [2, 2], "dtype": "float64"},
        "rows": ["f₁", "f₂"],
        "row": {"index": 1, "values": [0.5403023058681398, 3.0], "label": "vjp(e₂)"},
    }
    assert figure.matrix_data(raw, _Header(), recording.Format(precision=2)) == (
        [["2", "1"], ["0.54", "3"]],
        ["f₁", "f₂"],
        None,
        None,
        [1, ["0.54", "3"], "vjp(e₂)"],
    )


PLOTTED = """\
from _record import record
record.set("bad", {"x": [0.01, 0.1], "series": [{"name": "a", "y": [0.001, 0.0]}]})
record.set("good", {"x": [0.01, 0.1], "series": [{"name": "a", "y": [0.001, 0.002]}]})
print("ok")
"""


def test_plot_headers_are_checked(site):
    site.script("p.py", PLOTTED)
    site.page(
        "a.md",
        "# 图\n\n"
        + block("figure", "Experiment: experiments/p.py", "Plot: good")  # lines 3-6
        + "\n"
        + block("figure", "Experiment: experiments/p.py", "Plot: good", "Scale: linear")  # lines 8-12
        + "\n"
        + block("figure", "Experiment: experiments/p.py", "Graph: good", "X-label: ε"),  # lines 14-18
    )
    assert site.problems() == [
        "docs/a.md:3: a `Plot:` figure needs `Scale:` — write `Scale: loglog`",
        "docs/a.md:11: `Scale: linear` is not a scale a plot is drawn on — write `Scale: loglog`",
        "docs/a.md:17: `X-label` belongs to a `Plot:` figure — remove it",
    ]


def test_bad_plot_data_is_a_located_error(site):
    site.script("p.py", PLOTTED)
    head = ("figure", "Experiment: experiments/p.py", "Title: t")
    site.page("a.md", "# 图\n\n" + block(*head, "Scale: loglog", "Plot: bad"))  # Plot: on line 7
    r = site.verify()  # runs the experiment
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.splitlines()[:1] == [
        "docs/a.md:7: `bad` in experiments/p.py's recording is not a plot "
        '{"x": [..], "series": [{"name": .., "y": [..]}, …]}: value 1 of `y` of series 0 (a) is 0 (at x = 0.1): '
        'a logarithmic axis shows only positive numbers — `Plot:` names a plot {"x": [..], "series": '
        '[{"name": .., "y": [..]}, …]}',
    ]
    site.page("a.md", "# 图\n\n" + block(*head, "Scale: loglog", "Plot: good"))
    r = site.verify()
    assert r.returncode == 0, r.stderr


def test_a_plot_in_the_built_page(site):
    site.script("p.py", PLOTTED)
    site.page(
        "a.md",
        "# 图\n\n"
        + block(
            "figure",
            "Experiment: experiments/p.py",
            "Plot: good",
            "Scale: loglog",
            "X-label: 步长",
            "Y-label: 误差",
            "Caption: 双对数坐标",
        ),
    )
    r = site.build()
    assert r.returncode == 0, r.stderr
    html = (site.root / "site" / "a" / "index.html").read_text(encoding="utf-8")
    fig = html.split('<figure class="lk-figure" id="figure-1">')[1].split("</figure>")[0]
    assert _texts(fig) == ["10⁻²", "10⁻¹", "10⁻³", "10⁻²", "误差", "步长", "a"]
    assert (
        fig.startswith('<svg xmlns="http://www.w3.org/2000/svg" class="lk-fig"') and "<title>双对数坐标</title>" in fig
    )


def test_nested_boxes_are_wide_enough_for_their_labels():
    short = [["ArrayBox", 2], ["ArrayBox", 1], ["ArrayBox", 0], ["float", None]]  # lesson 10: as before
    assert re.search(r'viewBox="0 0 (\d+) ', figures.nested_svg(short, "t", "1.5 (float)")).group(1) == "314"
    long = [["jacobian：VJPNode，反向 3 次", 1], ["jacobian：VJPNode，反向 1 次", 0], ["ndarray", None]]
    svg = figures.nested_svg(long, "t")
    # the inner box needs 36 + 189.6 (its label: 18 Latin characters, 5 CJK at 12 px) + 50.4 (trace 0)
    assert re.findall(r'<rect class="lk-node[^"]*" x="(\d+)" y="\d+" width="(\d+)"', svg) == [
        ("16", "320"),
        ("38", "276"),
    ]
    assert _texts(svg) == [
        "jacobian：VJPNode，反向 3 次",
        "trace 1",
        "jacobian：VJPNode，反向 1 次",
        "trace 0",
        "ndarray",
    ]
