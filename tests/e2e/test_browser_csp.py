"""Every page's Content-Security-Policy (lessonkit.site.csp) in Debian's Chromium, on the real built
site: no page breaks its own policy, the policy really refuses code the build did not emit, and
what the pages do still works under it (search typed and pasted, copy buttons, the palette
toggle and its restoring on the next page, tooltips, figures' own styles, source-page line links).

One browser, one context and one tab for the sweep over all pages; the site is served on
127.0.0.1 by the session's threaded server (tests/support.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

# Records each violation the browser reports, before any script of the page runs.
RECORD = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", e => window.__csp.push(
  [e.effectiveDirective, e.blockedURI, (e.sample || "").slice(0, 60), e.sourceFile, e.lineNumber]));
"""


def _html_pages(site: Path) -> list[str]:
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html"))


@pytest.fixture(scope="module")
def tab(browser):
    """One tab in a context that records policy violations and console messages."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script(RECORD)
    page = context.new_page()
    page.messages = []  # type: ignore[attr-defined]
    page.on("console", lambda m: page.messages.append((m.type, m.text)))
    page.on("pageerror", lambda e: page.messages.append(("pageerror", str(e))))
    yield page
    context.close()


def _visit(tab, url: str) -> None:
    tab.messages.clear()
    tab.goto(url, wait_until="load")


def _violations(tab) -> list:
    return tab.evaluate("window.__csp") + [m for m in tab.messages if m[0] in ("error", "warning", "pageerror")]


def test_no_page_of_the_site_breaks_its_own_policy(built_site, server, tab):
    pages = _html_pages(built_site)
    assert len(pages) > 100 and "404.html" in pages
    broken = {}
    for rel in pages:
        _visit(tab, f"{server}/{rel}")
        found = _violations(tab)
        policy = tab.evaluate(
            "() => { const m = document.head.firstElementChild;"
            " return m && m.httpEquiv === 'Content-Security-Policy' ? m.content : null; }"
        )
        if found or not policy or "'unsafe-inline'" in policy:
            broken[rel] = (found[:3], policy)
    assert broken == {}


def test_the_policy_refuses_a_script_and_a_style_the_build_did_not_emit(built_site, server, tab):
    """The same page with one inline script, one inline <style> and one style attribute added after
    the build: the browser runs none of them and reports each (so the sweep above can fail)."""
    url = f"{server}/lessons/05-reverse-mode/"
    html = (built_site / "lessons/05-reverse-mode/index.html").read_text(encoding="utf-8")
    added = '<script>window.__ran = 1</script><style>body{display:none}</style><p id="x" style="color:red">x</p></body>'
    tampered = html.replace("</body>", added, 1)
    tab.route(url, lambda route: route.fulfill(status=200, content_type="text/html; charset=utf-8", body=tampered))
    try:
        _visit(tab, url)
        seen = tab.evaluate("window.__csp")
        ran = tab.evaluate("window.__ran === 1")
        hidden = tab.evaluate("getComputedStyle(document.body).display === 'none'")
        red = tab.evaluate("getComputedStyle(document.getElementById('x')).color === 'rgb(255, 0, 0)'")
    finally:
        tab.unroute(url)
    assert sorted(v[0] for v in seen) == ["script-src-elem", "style-src-attr", "style-src-elem"], seen
    assert (ran, hidden, red) == (False, False, False)


def _results(tab, query: str, how: str) -> list[str]:
    tab.locator(".md-search__input").first.click()
    tab.fill(".md-search__input", "")
    tab.wait_for_function("() => !document.querySelector('.md-search-result__item')", timeout=10000)
    if how == "paste":
        tab.keyboard.insert_text(query)  # no key events, as a paste or an input method's commit
    else:
        tab.type(".md-search__input", query, delay=10)
    tab.wait_for_selector(".md-search-result__item", timeout=15000)
    tab.wait_for_timeout(300)
    return tab.eval_on_selector_all(".md-search-result__item > a", "els => els.map(e => e.pathname)")


@pytest.mark.parametrize("how", ["type", "paste"])
def test_search_works_under_the_policy(server, tab, how):
    """Material's search worker (a file of the site) loads the index and answers, typed and pasted."""
    _visit(tab, f"{server}/")
    found = _results(tab, "反向传播", how)
    assert "/lessons/05-reverse-mode/" in found[:3] and _violations(tab) == [], (found[:5], _violations(tab))


def test_a_copy_button_copies_its_code_under_the_policy(server, tab):
    tab.context.grant_permissions(["clipboard-read", "clipboard-write"])
    _visit(tab, f"{server}/lessons/05-reverse-mode/")
    button = tab.locator(".lk-real-source button.md-code__button[data-md-type=copy]").first
    want = tab.evaluate("b => document.querySelector(b.dataset.clipboardTarget).textContent", button.element_handle())
    button.click()
    assert want.strip() and tab.evaluate("navigator.clipboard.readText()") == want.rstrip("\n")
    assert _violations(tab) == []


def test_the_palette_toggle_switches_and_the_next_page_restores_it_under_the_policy(server, tab):
    """The toggle sets the scheme; the next page's inline restoring script (hashed) sets it again
    before the page shows."""
    _visit(tab, f"{server}/lessons/01-ad-and-graph/")
    scheme = "document.body.getAttribute('data-md-color-scheme')"
    before = tab.evaluate(scheme)
    tab.locator("label.md-header__button[for^=__palette]:visible").first.click()
    tab.wait_for_function(f"() => {scheme} !== {before!r}")
    after = tab.evaluate(scheme)
    _visit(tab, f"{server}/lessons/02-jvp-vjp/")
    again = tab.evaluate(scheme)
    tab.locator("label.md-header__button[for^=__palette]:visible").first.click()  # back, for the other tests
    tab.wait_for_function(f"() => {scheme} === {before!r}")
    assert (before, after, again) == ("default", "slate", "slate") and _violations(tab) == []


def test_a_tooltip_shows_under_the_policy(server, tab):
    _visit(tab, f"{server}/lessons/05-reverse-mode/")
    tab.locator("article abbr[title]").first.hover()
    tip = tab.locator(".md-tooltip2--active")
    tip.wait_for(state="visible", timeout=5000)
    assert "cotangent" in tip.inner_text() or tip.inner_text().strip(), tip.inner_text()
    assert _violations(tab) == []


def test_figures_keep_their_own_style_and_fit_a_phone_under_the_policy(server, browser):
    """Each figure's <style> (hashed) applies, and without a style attribute the SVG still fits the
    column at 375 px (lessonkit.css sizes it)."""
    context = browser.new_context(viewport={"width": 375, "height": 800})
    context.add_init_script(RECORD)
    page = context.new_page()
    page.goto(f"{server}/lessons/13-custom-primitive/", wait_until="load")  # two figures wider than a phone
    got = page.evaluate(
        """() => [...document.querySelectorAll('svg.lk-fig')].map(s => {
             const edge = s.querySelector('.lk-edge');
             return [+s.getAttribute('width'), s.getBoundingClientRect().width <= s.parentElement.clientWidth,
                     edge ? getComputedStyle(edge).strokeWidth : null]; })"""
    )
    seen = page.evaluate("window.__csp")
    context.close()
    assert len(got) == 2 and all(w > 375 and fits and stroke == "1.4px" for w, fits, stroke in got), got
    assert seen == []


def test_source_page_line_links_work_under_the_policy(server, tab):
    """lessonkit.js (a file of the site) marks the lines a link names, on load and on a click."""
    marked = "() => [...document.querySelectorAll('.lk-line.lk-hl')].map(e => e.id)"
    _visit(tab, f"{server}/source/autograd/core.py/#L25")
    first = tab.evaluate(marked)
    tab.locator('a[href="#L27-L31"]').first.click()  # a row of the page's "cited by" list
    tab.wait_for_function(f"() => ({marked})().length === 5")
    assert (first, tab.evaluate(marked)) == (["L25"], ["L27", "L28", "L29", "L30", "L31"]) and _violations(tab) == []


def test_serve_pages_keep_their_policy_and_run_the_live_reload_script(site, browser):
    """`lessonkit serve` on a small series: the pages it serves (MkDocs' live-reload script added
    to each response) load with no violation, and that script runs (it logs "Enabled live reload")."""
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    site.page("lessons/a.md", "# 一课\n\n正文。\n")
    log = site.root.parent / "serve.log"
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "lessonkit", "serve", "-a", f"127.0.0.1:{port}"],
            cwd=site.root,
            env=site.env,
            stdout=subprocess.DEVNULL,
            stderr=err,
            stdin=subprocess.DEVNULL,
        )
    context = browser.new_context()
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2).read()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.5)
        context.add_init_script(RECORD)
        page = context.new_page()
        messages: list[tuple[str, str]] = []
        page.on("console", lambda m: messages.append((m.type, m.text)))
        seen = {}
        for rel in ("", "lessons/a/"):
            messages.clear()
            page.goto(f"http://127.0.0.1:{port}/{rel}", wait_until="load")
            page.wait_for_timeout(300)
            seen[rel] = (page.evaluate("window.__csp"), sorted(set(messages)))
    finally:
        context.close()
        proc.terminate()
        proc.wait(60)
    assert seen == {rel: ([], [("log", "Enabled live reload")]) for rel in ("", "lessons/a/")}, seen
