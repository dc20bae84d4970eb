"""The `output` kind in a build: an experiment records a table and an SVG (written by hand, as a
plotting library would write one, metadata and style attributes included); a page shows both.
`build` and `verify --site` pass; an edit of the built page's SVG fails `verify --site`; an SVG
that differs between runs fails `verify --rerun`; the page shows the image in Chromium under its
own Content-Security-Policy without one violation."""

from __future__ import annotations

import functools
import http.server
import shutil
import threading
from pathlib import Path

import pytest
from support import TmpSite, block

from lessonkit.util import markup

pytestmark = pytest.mark.warm_cache

PLOTS = '''\
from lessonkit_record import record

xs = [0, 1, 2, 3, 4]
ys = [x * x for x in xs]
record.table("squares", ["x", "x²", "x / 3"], [[x, y, x / 3] for x, y in zip(xs, ys)])

points = " ".join(f"L {20 + 40 * x} {180 - 10 * y}" for x, y in zip(xs, ys)).replace("L", "M", 1)
svg = f"""<?xml version="1.0" encoding="utf-8" standalone="no"?>
<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">
<svg xmlns:xlink="http://www.w3.org/1999/xlink" width="200pt" height="200pt" viewBox="0 0 200 200"
     xmlns="http://www.w3.org/2000/svg" version="1.1">
 <metadata><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"/></metadata>
 <defs>
  <style type="text/css">*{{stroke-linejoin: round}}</style>
  <clipPath id="area"><rect x="10" y="10" width="180" height="180"/></clipPath>
  <path id="tick" d="M 0 0 L 0 6" style="stroke: #000000; stroke-width: 1"/>
 </defs>
 <rect x="0" y="0" width="200" height="200" style="fill: #ffffff"/>
 <path d="{points}" clip-path="url(#area)" style="fill: none; stroke: #d62728; stroke-width: 4"/>
 <use xlink:href="#tick" x="20" y="184"/><use xlink:href="#tick" x="180" y="184"/>
 <text x="100" y="30" style="font-size: 14px; text-anchor: middle; fill: #1f77b4">y = x²</text>
</svg>
"""
record.svg("curve", svg)
print("drawn", len(ys), "points")
'''

PAGE = (
    "# 输出\n\n下表由实验记录：\n\n"
    + block("output", "Experiment: experiments/plots.py", "Table: squares", "Title: 平方表", "Caption: 每行一个 `x`")
    + "\n曲线也由同一个实验画出：\n\n"
    + block(
        "output", "Experiment: experiments/plots.py", "Image: curve", "Title: 平方曲线", "Caption: 红线是 $y = x^2$"
    )
    + "\n第二张同样的图，id 不会冲突：\n\n"
    + block("output", "Experiment: experiments/plots.py", "Image: curve", "Title: 再画一次")
)


@pytest.fixture(scope="module")
def built(tmp_path_factory, pinned_root, warm_seed) -> TmpSite:
    site = TmpSite(tmp_path_factory.mktemp("output") / "proj", pinned_root)
    for kind in ("highlight", "links", "pages", "symbols", "templates", "seal"):
        if (warm_seed / kind).is_dir():
            shutil.copytree(warm_seed / kind, site.cache / kind)
    site.script("plots.py", PLOTS)
    site.page("o.md", PAGE)
    r = site.run("-m", "lessonkit", "verify", "--update-map")
    assert r.returncode == 0, r.stderr
    r = site.build()
    assert r.returncode == 0, r.stderr[-3000:]
    return site


def _html(site: TmpSite) -> str:
    return (site.root / "site" / "o" / "index.html").read_text(encoding="utf-8")


def test_the_page_shows_the_whole_table_and_the_cleaned_images(built):
    tree = markup.parse(_html(built))
    table = tree.css_first("#output-1 table")
    assert [th.text() for th in table.css("thead th")] == ["x", "x²", "x / 3"]
    assert [[td.text() for td in tr.css("td")] for tr in table.css("tbody tr")] == [
        ["0", "0", "0.0"],
        ["1", "1", "0.333333"],
        ["2", "4", "0.666667"],
        ["3", "9", "1.0"],
        ["4", "16", "1.333333"],
    ]
    assert table.css_first("caption").text() == "平方表"
    one, two = tree.css_first("#output-2 svg"), tree.css_first("#output-3 svg")
    assert one.attributes["aria-label"] == "平方曲线" and two.attributes["aria-label"] == "再画一次"
    ids = [n.attributes.get("id") for n in markup.elements(tree) if n.attributes.get("id", "").startswith("output-")]
    assert ids == [
        "output-1",
        "output-2",
        "output-2-area",
        "output-2-tick",
        "output-3",
        "output-3-area",
        "output-3-tick",
    ]
    assert [u.attributes["href"] for u in one.css("use")] == ["#output-2-tick", "#output-2-tick"]
    for svg in (one, two):
        names = {markup.name(n) for n in svg.traverse(include_text=False)}
        assert not names & {"style", "metadata", "script"}
        assert all("style" not in n.attributes for n in svg.traverse(include_text=False))


def test_build_and_verify_site_pass(built):
    r = built.run("-m", "lessonkit", "verify", "--site", "site")
    assert r.returncode == 0, r.stderr[-3000:]
    summary = next(line for line in r.stdout.splitlines() if line.startswith("site: "))
    assert ", 3 engine block(s)," in summary and "0 problem(s)" in summary, summary


def test_an_edit_of_the_built_page_after_the_build_fails_verify_site(built):
    page = built.root / "site" / "o" / "index.html"
    html = page.read_text(encoding="utf-8")
    page.write_text(html.replace('stroke="#d62728"', 'stroke="#2ca02c"', 1), encoding="utf-8")
    try:
        r = built.run("-m", "lessonkit", "verify", "--site", "site")
    finally:
        page.write_text(html, encoding="utf-8")
    assert r.returncode == 1
    assert [line for line in r.stderr.splitlines() if line.startswith("site/")] == [
        "site/o/index.html: changed after the build that wrote the folder — build the site again "
        "(`lessonkit build`) before `verify --site`",
        "site/downloads/autograd-offline.zip: the offline edition is not this site's: autograd-offline/o/index.html "
        "differs from the edition of this site — a hook or plugin after lessonkit changed the site or the offline "
        "edition; rebuild",
        "site/o/index.html: output block #output-2 (experiments/plots.py) is not the markup lessonkit wrote: "
        "'<path clip-path=\"url(#output-2-area)\" d=\"M 20 180 L 60 170 L…' where lessonkit wrote "
        "'<path clip-path=\"url(#output-2-area)\" d=\"M 20 180 L 60 170 L…' — " + CHANGED,
    ]


CHANGED = "something after lessonkit changed the page (a hook, plugin or cache); rebuild with a clean cache"

LATE_HOOK = """\
def on_post_page(output, page, config):
    if page.file.src_uri != "o.md":
        return output
    output = output.replace('stroke="#d62728"', 'stroke="#2ca02c"', 1)  # the first image's line: green
    head, sep, tail = output.rpartition("y = x²</text>")  # the second image's label
    return head + "y = x³</text>" + tail
"""


def test_an_svg_changed_by_a_later_hook_fails_verify_site(built, tmp_path):
    """The build records the folder a later hook changed: the blocks' markup is what catches it."""
    site = object.__new__(TmpSite)
    shutil.copytree(built.root, tmp_path / "p", symlinks=True)
    site.root, site.pinned_root, site.cache = tmp_path / "p", built.pinned_root, tmp_path / "p" / ".cache"
    site.env = {**built.env, "LESSONKIT_CACHE": str(site.cache)}
    (site.root / "late_hook.py").write_text(LATE_HOOK, encoding="utf-8")
    config = (site.root / "mkdocs.yml").read_text()
    (site.root / "mkdocs.yml").write_text(
        config.replace("plugins: []", f"  - {site.root / 'late_hook.py'}\nplugins: []")
    )
    r = site.build()
    assert r.returncode == 0, r.stderr[-3000:]
    assert 'stroke="#2ca02c"' in _html(site) and "y = x³" in _html(site)
    r = site.run("-m", "lessonkit", "verify", "--site", "site")
    assert r.returncode == 1
    assert [line for line in r.stderr.splitlines() if line.startswith("site/")] == [
        "site/o/index.html: output block #output-2 (experiments/plots.py) is not the markup lessonkit wrote: "
        "'<path clip-path=\"url(#output-2-area)\" d=\"M 20 180 L 60 170 L…' where lessonkit wrote "
        "'<path clip-path=\"url(#output-2-area)\" d=\"M 20 180 L 60 170 L…' — " + CHANGED,
        "site/o/index.html: output block #output-3 (experiments/plots.py): its rest reads "
        "'y = x\\xb3\\n（图由本次构建运行 experiments/plots.py 的记录绘制）' instead of "
        "'y = x\\xb2\\n（图由本次构建运行 experiments/plots.py 的记录绘制）' — " + CHANGED,
    ]


def test_an_svg_that_differs_between_runs_fails_verify_rerun(site):
    stamped = 'record.svg("curve", svg.replace("<defs>", f"<!-- {time.time_ns()} --><defs>"))'
    site.script("plots.py", "import time\n" + PLOTS.replace('record.svg("curve", svg)', stamped))
    site.page("o.md", PAGE)
    assert site.verify().returncode == 0
    r = site.verify("--rerun")
    assert r.returncode == 1
    (line,) = [line for line in r.stderr.splitlines() if line.startswith("docs/")]
    head = "docs/o.md:5: experiments/plots.py gives a different result on a second run: recorded `curve.svg` is "
    assert line.startswith(head + "…") and line.count("<!-- ") == 2, line


def test_the_image_renders_under_the_pages_policy(built, browser, tmp_path):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(built.root / "site"))
    handler.log_message = lambda *a: None  # type: ignore[attr-defined]
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        context = browser.new_context(viewport={"width": 1000, "height": 1400})
        context.add_init_script(
            "window.__csp = []; document.addEventListener('securitypolicyviolation', "
            "e => window.__csp.push([e.effectiveDirective, e.blockedURI, e.sample]));"
        )
        tab = context.new_page()
        errors: list = []
        tab.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
        tab.goto(f"http://127.0.0.1:{httpd.server_address[1]}/o/", wait_until="load")
        assert tab.evaluate("window.__csp") == [] and errors == []
        drawn = tab.evaluate(
            """() => { const svg = document.querySelector('#output-2 svg');
                const line = svg.querySelector('path[clip-path]'), text = svg.querySelector('text');
                const box = svg.getBoundingClientRect();
                return [Math.round(box.width), Math.round(box.height), getComputedStyle(line).stroke,
                        getComputedStyle(line).strokeWidth, getComputedStyle(text).fill,
                        svg.querySelectorAll('use')[1].getBBox().height]; }"""
        )
        assert drawn == [267, 267, "rgb(214, 39, 40)", "4px", "rgb(31, 119, 180)", 6]
        shot = tmp_path / "output.png"
        tab.locator("#output-2").screenshot(path=str(shot))
        assert shot.stat().st_size > 1000
        tab.locator("#output-1").screenshot(path=str(tmp_path / "table.png"))
        styled = tab.evaluate(
            "() => [getComputedStyle(document.querySelector('#output-1 th')).fontWeight,"
            " [...document.querySelectorAll('#output-1 td')].map(c => getComputedStyle(c).borderTopStyle)]"
        )
        assert styled == ["700", ["solid"] * 15]  # Material's style of a table of no class of its own
        context.close()
    finally:
        httpd.shutdown()


def test_the_annotation_references_examples_are_the_blocks_built_here():
    """The reference's two examples are blocks of the page this module builds and verifies."""
    reference = (Path(__file__).resolve().parents[2] / "docs" / "dev" / "annotation-reference.md").read_text()
    section = reference[reference.index("\n## output\n") : reference.index("\n## figure\n")]
    examples = [part.split("```", 1)[0] for part in section.split("```output\n")[1:]]
    assert len(examples) == 2
    for text in examples:
        assert "```output\n" + text + "```\n" in PAGE
