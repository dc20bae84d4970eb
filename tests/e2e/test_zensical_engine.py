"""A series built by Zensical (`lessonkit build --engine zensical`) is the site MkDocs' build makes,
checked the same way: generated pages included, every block verified by `verify --site`, every
page under its Content-Security-Policy, nothing loaded from another host, docs/ untouched."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser
from test_examples import _run, example, micrograd_sdist  # noqa: F401 (fixtures)

from lessonkit.site import csp
from lessonkit.util import markup

GENERATED = [
    "symbols/index.html",  # the symbol index
    "source/index.html",  # the source browser
    "source/micrograd/engine.py/index.html",
    "source/micrograd/nn.py/index.html",
    "code/experiments/mul_backward.py/index.html",  # the experiment's script page
    "code/tiny/tiny_value.py/index.html",  # the teaching file's page
    "attachments/acceptance/index.html",  # the acceptance page
    "downloads/micrograd-resources.zip",  # the bundle
]


def _inputs(proj: Path) -> dict[Path, bytes]:
    return {
        p.relative_to(proj): p.read_bytes()
        for p in proj.rglob("*")
        if p.is_file() and p.relative_to(proj).parts[0] not in ("site", ".cache")
    }


def _loads(page: Path) -> list[str]:
    """Every URL the page makes a browser fetch (scripts, stylesheets, icons, images, media)."""
    tree = LexborHTMLParser(page.read_text(encoding="utf-8"))
    out = []
    for node in tree.css("script[src], link[href], img, source, video, audio, iframe, object, embed, input"):
        name = markup.name(node)
        attrs = markup.attributes(node)
        for attr in ("src", "srcset", "data", "poster") + (("href",) if name == "link" else ()):
            if attr in attrs:
                out += markup.url_values(name, attr, attrs[attr], attrs) or [attrs[attr]]
    return out


def test_zensical_builds_the_example_with_its_generated_pages_and_verify_site_passes(example):  # noqa: F811
    proj, env = example
    before = _inputs(proj)

    build = _run(proj, env, "-m", "lessonkit", "build", "--engine", "zensical")
    assert build.returncode == 0, build.stderr[-3000:]
    assert "Traceback" not in build.stderr
    assert f"lessonkit: built {proj / 'site'} with Zensical" in build.stderr
    assert _inputs(proj) == before  # docs/ and every other input untouched: pages are staged elsewhere

    site = proj / "site"
    index = (site / "index.html").read_text(encoding="utf-8")
    assert f'<meta name="generator" content="zensical-{version("zensical")}">' in index
    missing = [rel for rel in GENERATED if not (site / rel).is_file()]
    assert missing == []

    # a real-source block, swapped in whole, with its link to the source browser's line anchors
    lesson = LexborHTMLParser((site / "lessons/01-mul-and-backward/index.html").read_text(encoding="utf-8"))
    blocks = lesson.css("div.lk-block.lk-real-source")
    assert [b.attributes.get("id") for b in blocks] == ["src-Value-__mul__", "src-Value-backward", "src-Neuron"]
    assert "def __mul__(self, other):" in blocks[0].text()
    hrefs = [a.attributes.get("href") for a in blocks[0].css("a[href]")]
    assert "../../source/micrograd/engine.py/#L24-L33" in hrefs
    source = LexborHTMLParser((site / "source/micrograd/engine.py/index.html").read_text(encoding="utf-8"))
    assert source.css_first("#L24") is not None and "def __mul__(self, other):" in source.css_first("#L24").text()

    pages = sorted(site.rglob("*.html"))
    assert len(pages) == 12
    assert [p for page in pages for p in csp.problems(page.read_text(encoding="utf-8"), str(page))] == []
    loads = [(page.name, url) for page in pages for url in _loads(page)]
    assert len(loads) > 12 * 4  # the theme's stylesheet, script and icon, lessonkit's stylesheet and script
    assert [(name, url) for name, url in loads if markup.scheme(url) or url.startswith("//")] == []

    verify = _run(proj, env, "-m", "lessonkit", "verify", "--site", "site")
    assert verify.returncode == 0, verify.stdout[-3000:] + verify.stderr[-3000:]
    summary = [line for line in verify.stdout.splitlines() if line.startswith("site: ")]
    assert len(summary) == 1
    assert summary[0].startswith("site: 12 HTML file(s) of site/, 5 engine block(s), 6 source page(s)")
    assert "; 0 problem(s) in " in summary[0]
