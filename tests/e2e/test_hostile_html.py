"""Hostile HTML and CSS (tests/e2e/data/hostile/payloads.txt): every payload is refused with a located
line wherever a contribution can put it, or, when it is harmless, runs nothing and requests nothing
in Chromium.

Places: a lesson page's prose and an include (``--8<--`` of a ``.md`` file, which is a page too,
and of a non-``.md`` file under docs/includes), checked in-process by what the build and verify
run (:func:`lessonkit.pipeline.parse.parse_page`, :func:`lessonkit.checks.verify.check`); a docs
asset (``.html``, ``.svg``, ``.css``), checked in-process by what ``verify --site`` and the build's
link check run on the written folder. A smaller slice builds one small project and runs
``verify --site`` and Chromium on it."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from support import SITE_CONFIG, TmpSite

from lessonkit.checks.tree import Doc
from lessonkit.kinds import KINDS
from lessonkit.pipeline.parse import parse_page
from lessonkit.site import active, links
from lessonkit.util import markup

DATA = Path(__file__).parent / "data" / "hostile" / "payloads.txt"
HOST = "evil.example"


def _payloads() -> dict[str, str]:
    out: dict[str, str] = {}
    for section in DATA.read_text(encoding="utf-8").split("\n### ")[1:]:
        name, _, body = section.partition("\n")
        out[name] = body.rstrip("\n")
    return out


PAYLOADS = _payloads()
NAMES = list(PAYLOADS)
# In a page of the written site, these do nothing a browser runs or loads (checked in Chromium below):
# an attribute name or value the tokenizer reads otherwise than it looks, an element Chromium does not
# implement, one that runs nothing by itself, or one the tree builder drops (`<frameset>` and `<frame>`
# after `<body>`). Lessons may not carry them (the input check refuses).
HARMLESS_IN_SITE = {
    "attribute list popover",
    "theme admonition box",
    "details tag inside a title",
    "frameset frame",
    "svg handler",
    "plaintext",
    "slash separators",
    "attribute name with quote",
    "data-md component",
    "dialog open",
    "button popovertarget",
}


# In a lesson page (after its first paragraph): `<frameset>` and `<frame>` in a body are ignored by the
# tree builder, `<img/src=x/onerror=…>` has one attribute, src, and markup in an attribute value is text
# (also after the build marks the page's closed `<details>` for search; checked in Chromium below).
HARMLESS_IN_PAGES = {"frameset frame", "slash separators", "details tag inside a title"}


def test_the_corpus_is_large_and_names_are_unique():
    assert len(PAYLOADS) >= 150
    assert HARMLESS_IN_SITE <= set(PAYLOADS)


# -------------------------------------------------------------------- a lesson page (input check)


@pytest.mark.parametrize("name", NAMES)
def test_payload_in_a_lesson_page_is_a_located_error(name):
    payload = PAYLOADS[name]
    page = parse_page("# 标题\n\n" + payload + "\n\n后文\n", "docs/a.md", kinds=KINDS)
    lines = {p.line for p in page.engine_html}
    first, last = 3, 2 + len(payload.split("\n"))
    if name in HARMLESS_IN_PAGES:
        assert page.engine_html == []
        return
    assert page.engine_html, name
    assert all(p.path == "docs/a.md" for p in page.engine_html)
    assert lines and all(first <= n <= last for n in lines), (name, [str(p) for p in page.engine_html])
    assert all(" — " in str(p) and "\n" not in str(p) for p in page.engine_html)


def test_the_html_check_reads_comments_and_foreign_content_as_a_browser_does():
    """The exact problems for the shapes the regex scanners missed, at the line a browser runs them."""
    cases = {
        "# t\n\n<!-->\n<img src=x onerror=alert(1)>\n-->\n": [
            "docs/a.md:4: raw HTML has an event attribute `onerror`, which runs code in the reader's browser"
        ],
        "# t\n\n<!-- a --!>\n<script>alert(1)</script>\n": [
            "docs/a.md:4: raw HTML has a <script> element, which runs code in the reader's browser"
        ],
        "# t\n\n<svg><title>\n<script>alert(1)</script></title></svg>\n": [
            "docs/a.md:3: raw HTML has a <svg> element, which lessons do not use (text and structure only)",
            "docs/a.md:4: raw HTML has a <script> element, which runs code in the reader's browser",
        ],
        '# t\n\n<img src="data&colon;image/svg+xml;base64,PHN2Zz4=">\n': [
            "docs/a.md:3: raw HTML has a `data:` URL in `src`, which shows content that nothing checks"
        ],
        "# t\n\n<!-- <script>alert(1)</script> -->\n写 `<script>` 是文字\n": [],
    }
    hint = " — remove it: a page shows code, output and figures through annotation blocks, which the build checks"
    for text, want in cases.items():
        got = [str(p) for p in parse_page(text, "docs/a.md", kinds=KINDS).engine_html]
        assert got == [w + hint for w in want], text


def test_attribute_lists_pass_the_attribute_allowlist_and_theme_boxes_are_refused():
    """An attribute list sets only what raw HTML may carry on some element of a lesson, where it is one
    for certain; raw HTML and attribute lists may not use the classes the theme draws boxes with."""
    text = (
        "# t\n\n"
        "[a](b){ target=_blank }\n\n"  # 3: allowed (a link's target)
        "[a](b){: popovertarget=x }\n\n"  # 5
        "段落 { hidden=until-found }\n\n"  # 7
        "公式 $\\sum_{i=1}^{p}$ 与 x_{k=1} 文字\n\n"  # 9: a formula, no attribute list
        "![i](x.png){ width=\"300\" .highlight }\n\n"  # 11
        '<details class="tip"><summary>提示</summary><div class="tabbed-set">x</div></details>\n\n'  # 13
        "[开始](a.md){ .md-button #start }\n\n"  # 15: a button is no box
        "| 值 |\n| --- |\n| 8.0 {@g = 8.0} |\n"  # 17-19: a checked value, the engine's
    )
    got = [str(p).split(" — ")[0] for p in parse_page(text, "docs/a.md", kinds=KINDS).engine_html]
    box = "which draws a box like those Markdown and the engine write (text in it nothing checks)"
    assert got == [
        "docs/a.md:5: an attribute list `{: … }` sets an attribute `popovertarget`, which lessons do not use "
        "(text and structure only)",
        "docs/a.md:7: an attribute list `{: … }` sets an attribute `hidden`, which lessons do not use "
        "(text and structure only)",
        f"docs/a.md:11: an attribute list `{{: … }}` sets the theme's class `highlight`, {box}",
        f"docs/a.md:13: raw HTML has the theme's class `tabbed-set`, {box}",
    ]


# -------------------------------------------------------------------- includes (input check)


@pytest.fixture(scope="module")
def included(tmp_path_factory, pinned_root):
    """One small project whose page includes every payload as a non-.md file, and which has every
    payload as a .md include too (a page of docs/, checked as one): verify's problems."""
    site = TmpSite(tmp_path_factory.mktemp("hostile") / "proj", pinned_root)
    lines = ["# 收录", ""]
    for k, name in enumerate(NAMES):
        site.page(f"includes/p{k:03}.html", PAYLOADS[name] + "\n")
        site.page(f"includes/m{k:03}.md", "说明\n\n" + PAYLOADS[name] + "\n")
        lines.append(f'--8<-- "includes/p{k:03}.html"')
    site.page("a.md", "\n".join(lines) + "\n")
    return site.problems()


@pytest.mark.parametrize("k", range(len(NAMES)), ids=NAMES)
def test_payload_in_an_include_is_a_located_error(k, included):
    payload = PAYLOADS[NAMES[k]]
    n = len(payload.split("\n"))
    html = [p for p in included if p.startswith(f"docs/includes/p{k:03}.html:")]
    md = [p for p in included if p.startswith(f"docs/includes/m{k:03}.md:")]
    if NAMES[k] in HARMLESS_IN_PAGES:  # an include read alone starts a document: <frameset> counts there
        assert all(1 <= int(p.split(":")[1]) <= n for p in html) and md == []
        return
    assert html and all(1 <= int(p.split(":")[1]) <= n for p in html), (NAMES[k], html)
    assert md and all(3 <= int(p.split(":")[1]) <= n + 2 for p in md), (NAMES[k], md)


# -------------------------------------------------------------------- docs assets (verify --site)


class _Check:
    """What the active-content check reads of a site check: no recorded copies or theme folders
    (Material's installed templates only), the site published at the root."""

    def __init__(self):
        self.record = {"theme": [], "copied": {}}
        self.project = SimpleNamespace(attachments=[])
        self.base, self.hashes, self.site_dir = "/", {}, Path("/nonexistent")
        self.allowed = active.Allowed(self)


CHECK = _Check()


def _asset_page(payload: str) -> str:
    head = '<!doctype html>\n<html>\n<head>\n<meta charset="utf-8">\n<title>t</title>\n</head>\n'
    return f"{head}<body>\n{payload}\n</body>\n</html>\n"


def site_page_problems(payload: str) -> list[str]:
    """What ``verify --site`` and the build's link check find in an HTML file of the folder."""
    html = _asset_page(payload)
    doc = Doc(html)
    out = [str(p) for p in active.problems(CHECK, doc, "a.html", "site/a.html", [])]
    out += [
        f"site/a.html: loads a resource from another host: {u}"
        for u in links._scan(html).resources
        if markup.other_host(u)
    ]
    return out


@pytest.mark.parametrize("name", NAMES)
def test_payload_in_an_html_asset_is_refused_unless_harmless(name):
    found = site_page_problems(PAYLOADS[name])
    if name in HARMLESS_IN_SITE:
        assert found == []
    else:
        assert found, name
        n = len(PAYLOADS[name].split("\n"))
        lines = [int(m[1]) for p in found if (m := re.match(r"site/a\.html:(\d+):", p))]
        assert any(8 <= x <= 7 + n for x in lines) or any("another host" in p for p in found), found


# An SVG file's own <style> restyles only that file: the style payloads that load nothing are left out.
SVG = [
    n
    for n in NAMES
    if PAYLOADS[n].startswith("<svg")
    and n not in HARMLESS_IN_SITE
    and not (n.startswith("style in") and HOST not in PAYLOADS[n])
]


@pytest.mark.parametrize("name", SVG)
def test_payload_in_an_svg_asset_is_refused(name, tmp_path):
    text = '<?xml version="1.0"?>\n' + PAYLOADS[name] + "\n"
    found = [str(p) for p in active.svg_problems(text.encode(), "site/x.svg")]
    (tmp_path / "x.svg").write_text(text, encoding="utf-8")
    other = [u for _, u in links._scan_asset(tmp_path / "x.svg") if markup.other_host(u)]
    assert found or other, name
    assert all(re.match(r"site/x\.svg:\d+: .+ — ", p) for p in found)


CSS = {n: m[1] for n in NAMES if (m := re.fullmatch(r"<style>(.*)</style>", PAYLOADS[n], re.S))}


@pytest.mark.parametrize("name", list(CSS))
def test_payload_in_a_css_asset_loads_nothing_from_another_host(name, tmp_path):
    """A style sheet of docs/ that loads from another host fails the build's link check; one that
    only restyles loads nothing (what a page may link is the trust boundary's check)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(_asset_page("<p>x</p>"), encoding="utf-8")
    (site / "x.css").write_text(CSS[name] + "\n", encoding="utf-8")
    found = [str(p) for p in links.check_site(site)]
    if HOST in CSS[name]:
        assert found == [f"site/x.css: loads a resource from another host: {u}" for _, u in markup.css_urls(CSS[name])]
    else:
        assert found == []


def test_other_hosts_in_every_url_bearing_attribute_fail_the_link_check(tmp_path):
    """The build's link check on a folder with every other-host payload as a page of its own."""
    site = tmp_path / "site"
    site.mkdir()
    names = [n for n in NAMES if HOST in PAYLOADS[n] and n not in HARMLESS_IN_SITE]
    for k, name in enumerate(names):
        (site / f"p{k:03}.html").write_text(_asset_page(PAYLOADS[name]), encoding="utf-8")
    pages = {p.page for p in links.check_site(site) if p.what == "loads a resource from another host"}
    missing = [names[k] for k in range(len(names)) if f"p{k:03}.html" not in pages]
    # A meta refresh navigates (refused as active content, as is an <object>, which loads nothing without
    # `data`); CSS reads `url(\\\\host)` as one backslash: a path of this site (refused as a style attribute).
    assert missing == [
        "style attribute backslash url",
        "meta refresh other host",
        "meta refresh upper",
        "object with param",
    ]


# -------------------------------------------------------------------- end to end: build, verify --site, Chromium

E2E_PAGE = ["comment <!--> ends at once", "svg title holds script", "img src data named colon"]
E2E_ASSET = ["comment --!> ends it", "svg noembed holds img", "noscript attribute breakout", "template shadow root"]


def _project(root: Path, pinned_root: Path, snippets: bool) -> TmpSite:
    site = TmpSite(root, pinned_root)
    config = SITE_CONFIG.format(hooks=Path(__file__).resolve().parents[2] / "hooks" / "lessonkit_hooks.py")
    if snippets:
        config += "  - pymdownx.snippets:\n      base_path: [docs]\n      check_paths: true\n"
    (root / "mkdocs.yml").write_text(config, encoding="utf-8")
    return site


def test_hostile_pages_and_includes_fail_the_build_at_their_lines(tmp_path, pinned_root):
    site = _project(tmp_path / "p", pinned_root, snippets=True)
    site.page("a.md", "# 一\n\n" + PAYLOADS[E2E_PAGE[0]] + "\n")
    site.page("includes/x.html", PAYLOADS[E2E_PAGE[1]] + "\n")
    site.page("includes/y.md", PAYLOADS[E2E_PAGE[2]] + "\n")
    site.page("b.md", '# 二\n\n--8<-- "includes/x.html"\n\n--8<-- "includes/y.md"\n')
    r = site.build()
    assert r.returncode != 0
    out = r.stdout + r.stderr
    assert "docs/a.md:4: raw HTML has an event attribute `onerror`" in out
    assert "docs/includes/x.html:1: raw HTML has a <script> element" in out
    assert "docs/includes/y.md:1: raw HTML has a `data:` URL in `src`" in out
    assert "Traceback" not in out


@pytest.fixture(scope="module")
def asset_site(tmp_path_factory, pinned_root):
    """One small project with hostile and harmless HTML assets: it builds (nothing checks an asset
    before the folder is written); verify --site reads the folder."""
    site = _project(tmp_path_factory.mktemp("assets") / "p", pinned_root, snippets=False)
    for k, name in enumerate(E2E_ASSET):
        site.page(f"assets/bad{k}.html", _asset_page(PAYLOADS[name]))
    for k, name in enumerate(sorted(HARMLESS_IN_SITE)):
        site.page(f"assets/ok{k}.html", _asset_page(PAYLOADS[name]))
    site.page("h.md", "# 无害\n\n" + "\n\n".join(PAYLOADS[n] for n in sorted(HARMLESS_IN_PAGES)) + "\n")
    r = site.build()
    assert r.returncode == 0, r.stderr[-3000:]
    return site


def test_hostile_assets_fail_verify_site_at_their_lines(asset_site):
    r = asset_site.verify("--site", "site")
    assert r.returncode != 0
    out = r.stdout + r.stderr
    for k in range(len(E2E_ASSET)):
        assert re.search(rf"^site/assets/bad{k}\.html:\d+: .+ — ", out, re.M), (E2E_ASSET[k], out[-3000:])
    # a harmless asset is reported only because it is an HTML file without the site's policy
    ok = [line for line in out.splitlines() if line.startswith("site/assets/ok")]
    assert ok and all(": the page has no Content-Security-Policy <meta> — " in line for line in ok), ok
    assert "Traceback" not in out


def test_harmless_assets_run_nothing_and_request_no_other_host_in_chromium(asset_site, browser):
    import functools
    import http.server
    import threading

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(asset_site.root / "site"))
    )
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        pages = [(name, f"assets/ok{k}.html") for k, name in enumerate(sorted(HARMLESS_IN_SITE))]
        for name, path in [*pages, ("the lesson page of HARMLESS_IN_PAGES", "h/")]:
            page = browser.new_page()
            events: list[str] = []
            page.on("dialog", lambda d, events=events: (events.append("dialog " + d.message), d.dismiss()))
            page.on(  # a missing image's 404 is the server's answer, not the page's doing
                "console",
                lambda m, events=events: (
                    None if "Failed to load resource" in m.text else events.append("console " + m.text)
                ),
            )
            page.on("pageerror", lambda e, events=events: events.append("error " + str(e)))
            page.on(
                "request",
                lambda q, events=events: None if q.url.startswith(base) else events.append("request " + q.url),
            )
            page.add_init_script("window.alert = (x) => { document.title = 'RAN ' + x; }")
            page.goto(f"{base}/{path}")
            page.mouse.move(5, 5)
            page.keyboard.press("Tab")
            page.wait_for_timeout(200)
            ran = page.title().startswith("RAN")
            page.close()
            assert not ran and events == [], (name, events)
    finally:
        httpd.shutdown()
