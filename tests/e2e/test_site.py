"""The built site, as a reader sees it: links, anchors, search, math, diagrams,
dark mode, phone width and zero external requests, in Debian's Chromium."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from lessonkit.site.links import check_site

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"


class Visit:
    """One page load with every request and console error recorded; other hosts are blocked."""

    def __init__(self, browser, url, width=1280, scheme="light"):
        self.external, self.failed, self.errors = [], [], []
        self.context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
        host = urlsplit(url).netloc

        def route(r):
            if urlsplit(r.request.url).netloc not in (host, "") and not r.request.url.startswith("data:"):
                self.external.append(r.request.url)
                return r.abort()
            return r.continue_()

        self.context.route("**/*", route)
        self.page = self.context.new_page()
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("requestfailed", lambda r: self.failed.append(r.url))
        self.page.on("response", lambda r: r.status >= 400 and self.failed.append(f"{r.status} {r.url}"))
        self.page.goto(url, wait_until="load")
        self.page.wait_for_timeout(150)

    def close(self):
        self.context.close()


def _pages(site: Path) -> list[str]:
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("index.html"))


def test_no_broken_internal_link_or_anchor_and_no_external_resource(built_site):
    problems = check_site(built_site)
    assert problems == [], "\n".join(map(str, problems[:20]))


def test_link_checker_catches_a_cdn_or_google_fonts_link(built_site, tmp_path):
    copy = tmp_path / "site"
    shutil.copytree(built_site, copy)
    page = copy / "index.html"
    html = page.read_text()
    foreign = (
        '<link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto">'
        '<script src="https://unpkg.com/mermaid@10/dist/mermaid.min.js"></script></head>'
    )
    page.write_text(html.replace("</head>", foreign, 1))
    found = {(p.page, p.target) for p in check_site(copy)}
    assert ("index.html", "https://fonts.googleapis.com/css?family=Roboto") in found
    assert ("index.html", "https://unpkg.com/mermaid@10/dist/mermaid.min.js") in found


def test_every_page_loads_cleanly_in_chromium(built_site, server, browser):
    bad = []
    for rel in _pages(built_site):
        v = Visit(browser, f"{server}/{rel[: -len('index.html')]}")
        if v.external or v.failed or v.errors:
            bad.append((rel, v.external, v.failed, v.errors))
        v.close()
    assert bad == []


def test_browser_blocks_and_reports_an_added_cdn_link(built_site, server, browser, tmp_path):
    """A page that gains a CDN link is caught: the page's Content-Security-Policy makes Chromium refuse it
    before any request leaves, and the refusal is a console error, so the page-visit check fails."""
    page = built_site / "index.html"
    original = page.read_text()
    cdn = "https://fonts.googleapis.com/css?family=Roboto"
    try:
        page.write_text(original.replace("</head>", f'<link rel="stylesheet" href="{cdn}"></head>', 1))
        v = Visit(browser, f"{server}/")
        external, errors = list(v.external), list(v.errors)
        v.close()
    finally:
        page.write_text(original)
    assert external == []  # no request to another host was even attempted
    refusals = [e for e in errors if "Content Security Policy" in e and cdn in e]
    assert len(refusals) == 1, errors
    assert "style-src" in refusals[0], refusals[0]


@pytest.mark.parametrize("term, lesson", [("累加", "05-reverse-mode"), ("反向传播", "05-reverse-mode")])
def test_chinese_search_finds_words_inside_paragraphs(server, browser, term, lesson):
    v = Visit(browser, f"{server}/")
    p = v.page
    p.locator("label.md-search__icon, .md-search__input").first.click()
    p.fill("input.md-search__input", term)
    p.wait_for_selector(".md-search-result__item", timeout=15000)
    hrefs, before = [], -1
    while len(hrefs) != before:  # results render in batches as the list scrolls
        before = len(hrefs)
        p.eval_on_selector(".md-search__scrollwrap", "el => el.scrollTo(0, el.scrollHeight)")
        p.wait_for_timeout(300)
        hrefs = p.eval_on_selector_all(".md-search-result__item a", "els => els.map(e => e.getAttribute('href'))")
    v.close()
    assert any(lesson in h for h in hrefs), hrefs


def test_search_index_segments_chinese(built_site):
    index = json.loads((built_site / "search" / "search_index.json").read_text())
    assert index["config"]["lang"] == ["zh"]
    texts = " ".join(d["text"] for d in index["docs"] if "05-reverse-mode" in d["location"])
    assert "累加" in texts.split() or "累加" in texts


def test_math_is_rendered_as_mathml(server, browser):
    v = Visit(browser, f"{server}/lessons/02-jvp-vjp/")
    n = v.page.locator("math").count()
    box = v.page.locator("math").first.bounding_box()
    v.close()
    assert n > 5 and box["width"] > 5 and box["height"] > 5


def test_diagrams_are_svg(server, browser):
    for rel in ("attachments/call-sequence/", "attachments/nested-traces/"):
        v = Visit(browser, f"{server}/{rel}")
        box = v.page.locator("svg.lk-diagram").first.bounding_box()
        v.close()
        assert box and box["width"] > 200 and box["height"] > 100, rel


def test_line_anchor_scrolls_to_that_line(server, browser):
    v = Visit(browser, f"{server}/source/autograd/core.py/#L25-L32")
    line = v.page.locator("#L28")
    assert "lk-hl" in line.get_attribute("class")
    assert "lk-hl" not in v.page.locator("#L33").get_attribute("class")
    in_view = v.page.evaluate(
        "() => { const r = document.getElementById('L25').getBoundingClientRect();"
        " return r.top >= 0 && r.bottom <= window.innerHeight; }"
    )
    v.close()
    assert in_view


def test_real_source_block_links_to_its_range_and_back(server, browser):
    v = Visit(browser, f"{server}/lessons/05-reverse-mode/")
    link = v.page.locator("#src-backward_pass .lk-links a", has_text="在站内源码中查看")
    href = link.get_attribute("href")
    assert href.endswith("source/autograd/core.py/#L25-L32")
    link.click()
    v.page.wait_for_url("**/source/autograd/core.py/#L25-L32")
    assert v.page.locator("#L25 .lk-cite-mark").get_attribute("href") == "#cited-backward_pass"
    back = v.page.locator('#cited-backward_pass a[href$="lessons/05-reverse-mode/#src-backward_pass"]')
    assert back.count() == 1 and back.first.inner_text().startswith("05")  # the lesson, by its title
    back.first.click()
    v.page.wait_for_url("**/lessons/05-reverse-mode/#src-backward_pass")
    v.close()


def test_dark_mode_toggle(server, browser):
    v = Visit(browser, f"{server}/lessons/05-reverse-mode/")
    before = v.page.get_attribute("body", "data-md-color-scheme")
    v.page.locator("form[data-md-component=palette] label:visible").first.click()
    after = v.page.get_attribute("body", "data-md-color-scheme")
    v.close()
    assert (before, after) == ("default", "slate")


@pytest.mark.parametrize(
    "rel", ["", "lessons/05-reverse-mode/", "source/autograd/core.py/", "attachments/call-sequence/"]
)
def test_phone_width_does_not_scroll_sideways(server, browser, rel):
    v = Visit(browser, f"{server}/{rel}", width=375)
    widths = v.page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    v.close()
    assert widths[0] <= widths[1], widths


def test_screenshots(server, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    for name, rel, scheme in [
        ("home", "", "light"),
        ("lesson05-light", "lessons/05-reverse-mode/", "light"),
        ("lesson05-dark", "lessons/05-reverse-mode/", "dark"),
    ]:
        v = Visit(browser, f"{server}/{rel}", scheme=scheme)
        v.page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=False)
        v.close()
        assert (ARTIFACTS / f"{name}.png").stat().st_size > 10_000


def test_the_readme_and_site_toml_counts_of_the_pinned_sdist_are_the_pins(real_project):
    """Facts about the pin typed into prose (docs/dev/, sourcemap/site.toml): derived here, so that a
    new pin that changes them fails until the prose says so."""
    readme = " ".join(
        (ROOT / "docs" / "dev" / name).read_text(encoding="utf-8") for name in ("reliability.md", "performance.md")
    )
    site_toml = (ROOT / "sourcemap" / "site.toml").read_text(encoding="utf-8")
    manifest = real_project.pin.manifest
    runner = real_project.runner
    held = [rel for rel in manifest if runner._in_box(rel)]
    images = sum(
        (real_project.tree.root / rel).stat().st_size
        for rel in manifest
        if rel.lower().endswith((".png", ".jpg", ".jpeg", ".gif", ".svg"))
    )
    mb = f"{images / 1e6:.1f} MB"
    assert f"the sdist's other {len(manifest) - len(held)} files, {mb} of them images" in " ".join(readme.split())
    assert f"holds {mb} of images" in site_toml
    site_pages = [p for p in real_project.pages() if "dev" not in p.relative_to(real_project.docs).parts]
    assert f"only the {len(site_pages)} pages of `docs/`" in " ".join(readme.split())


def test_links_from_the_root_are_checked_under_the_path_the_site_is_published_at(tmp_path):
    """With `site_url: https://example.net/series/` MkDocs writes the 404 page's links from the root
    (`/series/assets/x.css`): they name files of the folder under that path, and a link from the
    root outside it leaves the site."""
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "x.css").write_text("", encoding="utf-8")
    (tmp_path / "index.html").write_text("<p>home</p>", encoding="utf-8")
    links = '<a href="/series/">home</a> <a href="/series/assets/x.css">css</a> <a href="/series">bare</a>'
    links += ' <a href="/other/">away</a> <a href="/series/gone/">gone</a>'
    (tmp_path / "404.html").write_text(f"<p>{links}</p>", encoding="utf-8")
    found = [(p.page, p.target, p.what) for p in check_site(tmp_path, base="/series/")]
    assert found == [("404.html", "/other/", "link leaves the site"), ("404.html", "/series/gone/", "broken link")]
    at_root = [(p.target, p.what) for p in check_site(tmp_path)]
    assert ("/series/assets/x.css", "broken link") in at_root
