"""The ``output`` kind: a recorded table shown whole, and a recorded SVG made safe and deterministic
before a page shows it (static drawing only, no style attribute, ids prefixed with the block's
anchor); hostile SVG is cleaned or refused with the line of the SVG at the block's `Image:` line."""

from __future__ import annotations

import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from lessonkit.config.labels import defaults
from lessonkit.errors import LessonError
from lessonkit.kinds import KINDS, Resolved, _svgsafe
from lessonkit.pipeline.parse import parse_page
from lessonkit.run.jobs import Job, Result
from lessonkit.util import markup

SVG = 'xmlns="http://www.w3.org/2000/svg"'
HEAD = '<svg xmlns="http://www.w3.org/2000/svg" class="lk-fig" role="img" aria-label="T"><title>T</title>'


def clean(body: str, prefix: str = "output-1") -> str:
    return _svgsafe.clean(f"<svg {SVG}>{body}</svg>", prefix, "T")


def inner(body: str) -> str:
    out = clean(body)
    assert out.startswith(HEAD) and out.endswith("</svg>")
    return out[len(HEAD) : -len("</svg>")]


def refused(text: str) -> tuple[int, str]:
    with pytest.raises(_svgsafe.Refused) as exc:
        _svgsafe.clean(text, "output-1", "T")
    return exc.value.line, exc.value.why


# -- what a plotting library writes ----------------------------------------------------------

PLOT = """<?xml version="1.0" encoding="utf-8" standalone="no"?>
<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">
<svg xmlns:xlink="http://www.w3.org/1999/xlink" width="120pt" height="60pt" viewBox="0 0 120 60" \
xmlns="http://www.w3.org/2000/svg" version="1.1">
 <metadata>
  <rdf:RDF xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
   <dc:date>2026-12-07T19:30:00</dc:date>
  </rdf:RDF>
 </metadata>
 <defs>
  <style type="text/css">*{stroke-linejoin: round; stroke-linecap: butt}</style>
  <clipPath id="p0a1"><rect x="10" y="5" width="100" height="50"/></clipPath>
  <path id="m1" d="M 0 0 L 0 3" style="stroke: #000000; stroke-width: 0.8"/>
 </defs>
 <!-- line 1 -->
 <g id="line2d_1"><path d="M 10 50 L 110 5" clip-path="url(#p0a1)" \
style="fill: none; stroke: #1f77b4; stroke-width: 1.5; stroke-linecap: square"/></g>
 <use xlink:href="#m1" x="10" y="55" style="stroke: #000000"/>
 <text x="60" y="58" style="font-size: 8px; text-anchor: middle">x &lt; 1</text>
</svg>
"""


def test_a_plotting_librarys_svg_keeps_its_drawing_and_loses_metadata_style_and_comments():
    assert _svgsafe.clean(PLOT, "output-2", "误差曲线") == (
        '<svg xmlns="http://www.w3.org/2000/svg" class="lk-fig" viewBox="0 0 120 60" width="120pt" height="60pt" '
        'role="img" aria-label="误差曲线"><title>误差曲线</title>\n \n <defs>\n  \n'
        '  <clipPath id="output-2-p0a1"><rect height="50" width="100" x="10" y="5"/></clipPath>\n'
        '  <path d="M 0 0 L 0 3" id="output-2-m1" stroke="#000000" stroke-width="0.8"/>\n </defs>\n \n'
        ' <g id="output-2-line2d_1"><path clip-path="url(#output-2-p0a1)" d="M 10 50 L 110 5" fill="none" '
        'stroke="#1f77b4" stroke-linecap="square" stroke-width="1.5"/></g>\n'
        ' <use href="#output-2-m1" stroke="#000000" x="10" y="55"/>\n'
        ' <text font-size="8px" text-anchor="middle" x="60" y="58">x &lt; 1</text>\n</svg>'
    )


def test_the_cleaned_svg_passes_the_site_svg_check_and_has_no_style_attribute():
    out = _svgsafe.clean(PLOT, "output-2", "t")
    assert markup.svg_file_problems(out.encode()) == []
    tree = markup.parse(f"<body>{out}</body>")
    names = {markup.name(n) for n in markup.elements(tree)}
    assert "style" not in names and "metadata" not in names
    assert all("style" not in markup.attributes(n) for n in markup.elements(tree))


def test_the_same_input_gives_the_same_text():
    assert _svgsafe.clean(PLOT, "output-1", "t") == _svgsafe.clean(PLOT, "output-1", "t")


def test_two_images_on_one_page_share_no_id():
    a, b = (_svgsafe.clean(PLOT, anchor, "t") for anchor in ("output-1", "output-2"))
    ids = lambda html: {markup.attributes(n).get("id") for n in markup.elements(markup.parse(html))} - {None}  # noqa: E731
    assert ids(a) == {"output-1-p0a1", "output-1-m1", "output-1-line2d_1"}
    assert not ids(a) & ids(b)


def test_a_style_declaration_wins_over_the_attribute_and_other_properties_are_dropped():
    assert inner('<rect fill="red" style="fill: blue; position: fixed; top: 0"/>') == '<rect fill="blue"/>'


# -- hostile input: dropped -------------------------------------------------------------------


@pytest.mark.parametrize(
    "body, want",
    [
        ("<script>alert(1)</script><rect/>", "<rect/>"),
        ('<script xlink:href="x.js" xmlns:xlink="http://www.w3.org/1999/xlink"/><rect/>', "<rect/>"),
        ('<rect onload="alert(1)" onclick="x()" width="2"/>', '<rect width="2"/>'),
        ('<a href="javascript:alert(1)"><text>t</text></a>', "<a><text>t</text></a>"),
        ('<use href="https://evil.example/x.svg#a"/>', "<use/>"),
        ('<use xmlns:xlink="http://www.w3.org/1999/xlink" xlink:href="//evil.example/x.svg#a"/>', "<use/>"),
        ('<image href="https://evil.example/p.png"/>', "<image/>"),
        ('<image href="data:image/svg+xml,&lt;svg/&gt;"/>', "<image/>"),
        ('<image href="data:image/png;base64,AAAA"/>', '<image href="data:image/png;base64,AAAA"/>'),
        ("<foreignObject><div xmlns='http://www.w3.org/1999/xhtml'>hi</div></foreignObject><rect/>", "<rect/>"),
        ("<style>@import url(https://evil.example/a.css);</style><rect/>", "<rect/>"),
        ('<rect class="lk-output md-typeset" data-x="1" x="1"/>', '<rect x="1"/>'),
        ("<!-- 2026-12-07 --><rect/>", "<rect/>"),
        ("<title>old</title><rect/>", "<rect/>"),
    ],
)
def test_hostile_markup_is_dropped(body, want):
    assert inner(body) == want


# -- hostile input: refused with the line of the SVG ----------------------------------------


@pytest.mark.parametrize(
    "text, line, why",
    [
        (
            '<?xml version="1.0"?>\n<!DOCTYPE svg [\n<!ENTITY a "aaaaaaaaaa">\n<!ENTITY b "&a;&a;&a;&a;">\n]>\n'
            f"<svg {SVG}><text>&b;</text></svg>",
            2,
            "a DOCTYPE with declarations of its own, whose entities can put any markup into the image",
        ),
        (
            f'<!DOCTYPE svg SYSTEM "x.dtd">\n<svg {SVG}><text>&ext;</text></svg>',
            2,
            "a reference to the entity `ext`, which the image does not declare",
        ),
        (
            f'<?xml-stylesheet href="https://evil.example/a.css"?>\n<svg {SVG}/>',
            1,
            "a processing instruction `<?xml-stylesheet …?>`, which can load a style sheet",
        ),
        (
            f"<svg {SVG}>\n<h:iframe xmlns:h='http://www.w3.org/1999/xhtml' src='https://evil.example'/></svg>",
            2,
            "a <iframe> element in the namespace http://www.w3.org/1999/xhtml, which is not static SVG drawing",
        ),
        (
            f"<svg {SVG}>\n\n<animate attributeName='href' values='javascript:alert(1)'/></svg>",
            3,
            "a <animate> element in the namespace http://www.w3.org/2000/svg, which is not static SVG drawing",
        ),
        (
            f'<svg {SVG}>\n<rect fill="url(https://evil.example/p.svg#g)"/></svg>',
            2,
            "`fill` of a <rect> loads 'https://evil.example/p.svg#g', which is not a part of the image (`#id`)",
        ),
        (
            f'<svg {SVG}>\n<rect style="fill: url(/tracker.svg#g)"/></svg>',
            2,
            "`fill` of a <rect> loads '/tracker.svg#g', which is not a part of the image (`#id`)",
        ),
        (
            f'<svg {SVG}>\n<g xml:base="https://evil.example/"/></svg>',
            2,
            "an `xml:base` on a <g>, which makes its references point elsewhere",
        ),
        (
            f'<svg {SVG}>\n<g id="a&quot;b"/></svg>',
            2,
            "the id 'a\"b' of a <g> is not a plain name (letters, digits, _ . : -)",
        ),
        (
            f"<html {SVG}/>",
            1,
            "a <html> element in the namespace http://www.w3.org/2000/svg, which is not static SVG drawing",
        ),
        (f"<g {SVG}/>", 1, "a <g> at the top: an image is one <svg> element"),
        ("<svg>\n<rect/></svg>", 1, "a <svg> element (no namespace), which is not static SVG drawing"),
        (f"<svg {SVG}>\n<rect></svg>", 2, "not well-formed XML (mismatched tag)"),
        (f"<svg {SVG}>" + "<g>" * 70 + "</g>" * 70 + "</svg>", 1, "elements nested more than 64 deep"),
    ],
)
def test_hostile_markup_is_refused_with_its_line(text, line, why):
    assert refused(text) == (line, why)


def test_a_huge_svg_is_refused_before_it_is_read():
    text = f"<svg {SVG}>" + "<rect/>" * (_svgsafe.MAX_BYTES // 7) + "</svg>"
    start = time.process_time()
    assert refused(text) == (1, f"the SVG is {len(text)} bytes, more than {_svgsafe.MAX_BYTES}: record a smaller image")
    assert time.process_time() - start < 1


def test_too_many_elements_are_refused():
    text = f"<svg {SVG}>" + "<g/>" * (_svgsafe.MAX_ELEMENTS + 1) + "</svg>"
    assert refused(text) == (1, f"more than {_svgsafe.MAX_ELEMENTS} elements: record a smaller image")


# -- the block ------------------------------------------------------------------------------

RENDERER = SimpleNamespace(labels=defaults(), no_search=" data-search-exclude", store=None, project=None)


def block(header: str, record: dict) -> tuple:
    page = parse_page(f"# t\n\n```output\nExperiment: experiments/e.py\n{header}\n```\n", "docs/o.md", kinds=KINDS)
    assert not page.problems, [str(p) for p in page.problems]
    r = Resolved(page.blocks[0], job=Job("e.py", b"", 60, "experiments/e.py"))
    return r, Result("k", 0, "", "", 0, 0.0, 0.0, record=record)


TABLE = {"grid": {"columns": ["x", "x²"], "rows": [[1, 1.0], [{"tuple": [1, 2]}, 2.5], ["a<b", None]]}}


def test_a_recorded_table_is_shown_whole_with_value_formatting():
    r, result = block("Table: grid\nTitle: 平方\nCaption: 由 `e.py` 记录", TABLE)
    html = KINDS["output"].render(RENDERER, r, "output-1", result)
    assert html == (
        '<figure class="lk-block lk-figure lk-recorded lk-recorded-table" id="output-1"><table>'
        '<caption>平方</caption><thead><tr><th scope="col">x</th><th scope="col">x²</th></tr></thead><tbody>'
        "<tr><td>1</td><td>1.0</td></tr><tr><td>(1, 2)</td><td>2.500000</td></tr><tr><td>a&lt;b</td><td>None</td></tr>"
        "</tbody></table><figcaption>由 <code>e.py</code> 记录"
        '<span class="lk-fig-source" data-search-exclude>'
        + defaults().html("figure-source", script="<code>experiments/e.py</code>")
        + "</span></figcaption></figure>"
    )
    assert KINDS["output"].plain(r, SimpleNamespace(site=SimpleNamespace(labels=defaults())), result) == [
        "**平方**",
        "",
        "| x | x² |",
        "|---|---|",
        "| 1 | 1.0 |",
        "| (1, 2) | 2.500000 |",
        "| a<b | None |",
        "由 `e.py` 记录",
    ]


def test_an_image_block_shows_the_cleaned_svg():
    r, result = block("Image: plot\nTitle: 曲线", {"plot": {"svg": PLOT}})
    html = KINDS["output"].render(RENDERER, r, "output-3", result)
    assert html.startswith(
        '<figure class="lk-block lk-figure lk-recorded lk-recorded-image" id="output-3">'
        + _svgsafe.clean(PLOT, "output-3", "曲线")
        + "<figcaption>"
    )


@pytest.mark.parametrize(
    "header, record, message",
    [
        (
            "Image: plot",
            {"plot": "<svg/>"},
            "docs/o.md:5: `plot` in experiments/e.py's recording is not an SVG image recorded with record.svg — "
            "`Image:` names an SVG image recorded with record.svg",
        ),
        (
            "Table: grid",
            {"grid": {"columns": ["a"], "rows": [[1, 2]]}},
            "docs/o.md:5: `grid` in experiments/e.py's recording is not a table recorded with record.table: "
            '{"columns": [..], "rows": [[..], ..]}: row 0 does not have 1 cells — `Table:` names a table recorded '
            'with record.table: {"columns": [..], "rows": [[..], ..]}',
        ),
        (
            "Image: plot",
            {"plot": {"svg": f"<svg {SVG}>\n\n<script/><h:p xmlns:h='http://www.w3.org/1999/xhtml'/></svg>"}},
            "docs/o.md:5: the SVG `plot` of experiments/e.py cannot be shown: line 3 of the SVG has a <p> element in "
            "the namespace http://www.w3.org/1999/xhtml, which is not static SVG drawing — record static SVG drawing "
            "only (no scripts, no DTD, no links out of the image)",
        ),
        (
            "Image: nothing",
            {"plot": {"svg": "<svg/>"}},
            "docs/o.md:5: experiments/e.py recorded no `nothing` (no `nothing` under the top level) — there: plot",
        ),
    ],
)
def test_a_wrong_recording_is_one_located_line(header, record, message):
    r, result = block(header, record)
    with pytest.raises(LessonError) as exc:
        KINDS["output"].render(RENDERER, r, "output-1", result)
    assert str(exc.value) == message


@pytest.mark.parametrize(
    "header, message",
    [
        ("Title: x", "docs/o.md:3: an output block needs exactly one of Table, Image"),
        ("Table: a\nImage: b", "docs/o.md:3: an output block needs exactly one of Table, Image (it has both)"),
        ("Image: a\nPrecision: 2", "docs/o.md:6: `Precision` belongs to a `Table:` output — remove it"),
    ],
)
def test_header_mistakes_are_located(header, message):
    page = parse_page(f"# t\n\n```output\nExperiment: experiments/e.py\n{header}\n```\n", "docs/o.md", kinds=KINDS)
    assert [str(p).split(" — ")[0] if "exactly one" in str(p) else str(p) for p in page.problems] == [message]


# -- the record helper's side -----------------------------------------------------------------


def _record(code: str, tmp_path) -> tuple[subprocess.CompletedProcess, str | None]:
    """``code`` run as an experiment writes its record (the helper on the path, as in a box)."""
    from lessonkit.run.runner import RECORD_HELPER

    out = tmp_path / "rec.json"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(RECORD_HELPER.parent), "LESSONKIT_RECORD": str(out)}
    r = subprocess.run(
        [sys.executable, "-B", "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    return r, out.read_text(encoding="utf-8") if out.exists() else None


def test_record_svg_stores_the_text_tagged(tmp_path):
    r, text = _record(
        "from lessonkit_record import record\n"
        "record.svg('plot', '<svg/>')\n"
        "record.svg('raw', '<svg>é</svg>'.encode())\n"
        "record.set('word', '<svg/>')\n",
        tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert text == '{"plot":{"svg":"<svg/>"},"raw":{"svg":"<svg>é</svg>"},"word":"<svg/>"}'


@pytest.mark.parametrize(
    "call, error",
    [
        ("record.svg('plot', 3)", "TypeError: record.svg('plot', …) takes the SVG's text, not a int"),
        ("record.svg('plot', '<svg/>'); record.svg('plot', '<svg/>')", "ValueError: record key 'plot' is already set"),
    ],
)
def test_record_svg_refuses_what_is_not_one_new_text(tmp_path, call, error):
    r, _ = _record(f"from lessonkit_record import record\n{call}\n", tmp_path)
    assert r.returncode == 1 and r.stderr.strip().splitlines()[-1] == error
