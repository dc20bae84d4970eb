"""The offline edition (lessonkit.site.offline), unzipped and opened from disk in Debian's Chromium:
links land on pages, search answers a typed query, formulas and figures render, the source
browser's line links work, and the pages request nothing but their own files (and the search
worker's blob: URL, made in the page) with 0 Content-Security-Policy violations.

The zip is the one the session's real build wrote into its site; the home page links it with
its size."""

from __future__ import annotations

import io
import json
import posixpath
import zipfile
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from lessonkit.site import offline
from lessonkit.util import markup

ZIP = "downloads/autograd-offline.zip"
TOP = "autograd-offline"
RECORD = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", e => window.__csp.push(
  [e.effectiveDirective, e.blockedURI, (e.sample || "").slice(0, 60)]));
"""


@pytest.fixture(scope="module")
def edition(built_site, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("offline")
    zipfile.ZipFile(built_site / ZIP).extractall(out)
    return out / TOP


@pytest.fixture
def tab(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script(RECORD)
    page = context.new_page()
    page.requests = []  # type: ignore[attr-defined]
    page.messages = []  # type: ignore[attr-defined]
    context.on("request", lambda r: page.requests.append(r.url))
    page.on("console", lambda m: page.messages.append((m.type, m.text)))
    page.on("pageerror", lambda e: page.messages.append(("pageerror", str(e))))
    yield page
    context.close()


def test_the_home_page_links_the_edition_with_its_size_and_search_leaves_the_link_out(built_site):
    tree = markup.parse((built_site / "index.html").read_text(encoding="utf-8"))
    spans = tree.css("span.lk-offline")
    assert len(spans) == 1
    link = spans[0].css_first("a")
    assert link is not None and link.attributes.get("href") == ZIP
    size = (built_site / ZIP).stat().st_size
    shown = spans[0].css_first("data.lk-offline-size")
    assert (shown.text(), shown.attributes.get("value")) == (f"{size / 2**20:.1f} MiB", str(size))
    assert "data-search-exclude" in spans[0].attributes
    # the section is in the index, without a word of the link's sentence (the size, the path, or
    # the text after the size: Material ends an exclusion at the first end tag of the same name)
    index = json.loads((built_site / "search/search_index.json").read_text(encoding="utf-8"))
    entry = next(d for d in index["docs"] if d["location"] == "#offline")
    text = entry["text"].replace("\u200b", "")
    sentence = spans[0].text().strip()
    assert "离线版是本站页面的完整副本" in text
    assert sentence[:4] not in text and sentence[-6:] not in text and "MiB" not in text, text[:80]


def test_every_link_of_the_edition_lands_on_a_file_of_it(edition):
    """Every relative link of every page names a file of the edition (no folder, no missing file),
    and no page names another host in anything it loads."""
    pages = sorted(p.relative_to(edition).as_posix() for p in edition.rglob("*.html"))
    assert len(pages) > 100 and "404.html" not in pages
    folders, missing, checked = [], [], 0
    for rel in pages:
        tree = markup.parse((edition / rel).read_text(encoding="utf-8"))
        for node in tree.css("a[href], link[href], script[src], img[src]"):
            value = node.attributes.get("href") or node.attributes.get("src") or ""
            parts = urlsplit(value)
            if parts.scheme or parts.netloc or not parts.path:
                continue
            checked += 1
            target = edition / posixpath.normpath(posixpath.join(posixpath.dirname(rel), parts.path))
            if target.is_dir():
                folders.append((rel, value))
            elif not target.is_file():
                missing.append((rel, value))
    assert checked > 5000 and folders == [] and missing == []


def test_the_edition_is_the_written_site_made_again_byte_for_byte(built_site, real_project, tmp_path):
    """The zip is reproducible from the site it came from, and one changed byte in one of its pages
    is found (what verify --site checks)."""
    words = real_project.site.labels
    site = offline.read_site(built_site)
    args = (ZIP, words["offline-here"], words["exercise-offline"], "site")
    assert offline.problems(site, *args) == []
    data = site[ZIP]
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        entries = {i.filename: zf.read(i) for i in zf.infolist()}
    page = f"{TOP}/lessons/05-reverse-mode/index.html"
    entries[page] = entries[page].replace(b"index.html", b"index.htm", 1)
    changed = io.BytesIO()
    with zipfile.ZipFile(changed, "w") as zf:
        for name, body in entries.items():
            zf.writestr(zipfile.ZipInfo(name, date_time=(2025, 12, 1, 0, 0, 0)), body)
    found = offline.problems({**site, ZIP: changed.getvalue()}, *args)
    assert [p.message for p in found] == [
        f"the offline edition is not this site's: {page} differs from the edition of this site",
        f"the page gives the offline edition's size as {offline.size_text(len(data))!r}; it is "
        f"{offline.size_text(len(changed.getvalue()))} ({len(changed.getvalue())} bytes)",
    ]


def _violations(tab) -> list:
    return tab.evaluate("window.__csp") + [m for m in tab.messages if m[0] in ("error", "warning", "pageerror")]


def _search(tab, query: str) -> list[str]:
    tab.locator(".md-search__input").first.click()
    tab.type(".md-search__input", query, delay=15)
    tab.wait_for_selector(".md-search-result__item", timeout=30000)
    tab.wait_for_timeout(300)
    return tab.eval_on_selector_all(".md-search-result__item > a", "els => els.map(e => e.href)")


def test_the_edition_works_from_file_urls_and_requests_nothing_else(edition, tab):
    home = (edition / "index.html").as_uri()
    tab.goto(home, wait_until="load")
    # links across lessons: the navigation, then the lesson's own line to the next one
    tab.locator("a.md-nav__link[href='lessons/01-ad-and-graph/index.html']").first.click()
    tab.wait_for_load_state("load")
    assert tab.url == (edition / "lessons/01-ad-and-graph/index.html").as_uri()
    assert tab.locator("h1").first.inner_text().startswith("01")
    tab.locator("article a[href='../02-jvp-vjp/index.html']").last.click()
    tab.wait_for_load_state("load")
    assert tab.url == (edition / "lessons/02-jvp-vjp/index.html").as_uri()
    # search, typed: the best page first, and its link opens the page
    found = _search(tab, "反向传播")
    lesson05 = (edition / "lessons/05-reverse-mode/index.html").as_uri()
    assert any(h.split("?")[0] == lesson05 for h in found[:3]), found[:5]
    tab.locator(".md-search-result__item > a").first.click()
    tab.wait_for_load_state("load")
    assert tab.url.split("?")[0].split("#")[0] in [h.split("?")[0].split("#")[0] for h in found[:1]]
    # a formula (MathML in the site's own math font) and a figure (an SVG with its own style)
    tab.goto(lesson05, wait_until="load")
    tab.evaluate("document.fonts.ready")
    math = tab.evaluate(
        "(() => { const m = document.querySelector('article math'); const r = m.getBoundingClientRect();"
        " return [r.width > 0 && r.height > 0, getComputedStyle(m).fontFamily,"
        " document.fonts.check('16px \"STIX Two Math\"'),"
        " [...document.fonts].some(f => f.family.includes('STIX Two Math') && f.status === 'loaded')]; })()"
    )
    assert math[0] is True and "STIX Two Math" in math[1] and math[3] is True, math
    figure = tab.evaluate(
        "(() => { const s = document.querySelector('figure.lk-figure svg'); const r = s.getBoundingClientRect();"
        " return [r.width, s.querySelectorAll('text').length]; })()"
    )
    assert figure[0] > 100 and figure[1] > 0, figure
    # the source browser: a source link of a lesson lands on its line
    link = tab.locator("article a[href*='source/autograd/core.py/index.html#L']").first
    href = link.get_attribute("href")
    link.click()
    tab.wait_for_load_state("load")
    assert tab.url.startswith((edition / "source/autograd/core.py/index.html").as_uri() + "#L")
    assert href and tab.url.endswith("#" + href.split("#")[1])
    numbers = [int(n) for n in href.split("#L")[1].split("-L")]
    want = [f"L{n}" for n in range(numbers[0], numbers[-1] + 1)]
    tab.wait_for_selector(".lk-line.lk-hl")
    assert tab.eval_on_selector_all(".lk-line.lk-hl", "els => els.map(e => e.id)") == want
    others = [u for u in tab.requests if not u.startswith("file://")]
    assert len(tab.requests) > 20
    assert [u for u in others if not u.startswith("blob:null/")] == [], others
    assert _violations(tab) == []


def test_no_page_of_the_edition_breaks_its_policy_or_requests_anything_else(edition, tab):
    """Every page opened from disk: 0 policy violations, 0 console errors, only file: requests and
    one blob: (the search worker, made in the page)."""
    pages = sorted(p.relative_to(edition).as_posix() for p in edition.rglob("*.html"))
    broken = {}
    for rel in pages:
        tab.messages.clear()
        tab.requests.clear()
        tab.goto((edition / rel).as_uri(), wait_until="load")
        blobs = [u for u in tab.requests if u.startswith("blob:null/")]
        found = _violations(tab) + [u for u in tab.requests if not u.startswith(("file://", "blob:null/"))]
        if found or len(blobs) != 1:
            broken[rel] = (found[:3], len(blobs))
    assert len(pages) > 100 and broken == {}


def test_an_exercise_of_the_edition_says_it_does_not_run_and_loads_nothing(edition, tab):
    tab.goto((edition / "lessons/14-mini-autograd/index.html").as_uri(), wait_until="load")
    tab.wait_for_timeout(500)
    blocks = tab.locator(".lk-exercise-offline")
    assert blocks.count() >= 5
    note = blocks.first.locator("p.lk-ex-note").inner_text()
    assert note.startswith("离线版不能运行这里的检查")
    assert blocks.first.locator("button").count() == 0
    assert tab.locator(".lk-exercise").count() == 0
    assert [u for u in tab.requests if "pyodide" in u or "exercise/" in u] == []
    assert _violations(tab) == []
