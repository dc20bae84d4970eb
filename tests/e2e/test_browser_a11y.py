"""Accessibility and reading, in Debian's Chromium: axe-core over every page in both colour
schemes, the keyboard, the source browser's copy button and gutter, figures, page facts
(last-updated date, licence at the pinned commit, one set of previous/next links).

axe-core is a test tool only: the fixture installs the pinned version into `.nox/axe` with npm
(never into the site, which a test checks). It runs on a page once the page's own scripts are
done (``html[data-lk-settled]``, set by lessonkit.js once the page and its fonts have loaded and
its scrolling boxes are in the Tab order): every rule in the light scheme, every rule again after
switching the page to the dark scheme (Material's palette attribute, transitions off), and every
rule in the light scheme a second time, which must find what the first run found.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from itertools import pairwise
from pathlib import Path

import pytest
from support import ROOT
from test_site import Visit

from lessonkit.errors import LessonError

AXE_VERSION = "4.14.1"  # axe-core, exact: the rules and their results change between releases
AXE_DIR = ROOT / ".nox" / "axe"
SERIOUS = ("serious", "critical")
COLOUR_RULES = ["color-contrast", "link-in-text-block"]  # what the colour scheme can change
NO_MOTION = "*, *::before, *::after { transition: none !important; animation: none !important; }"


def _no_motion(page) -> None:
    """NO_MOTION as a constructed stylesheet: the page's Content-Security-Policy refuses a <style>
    element it does not hash (Playwright's add_style_tag adds one), not the CSS object model."""
    page.evaluate(
        "css => { const s = new CSSStyleSheet(); s.replaceSync(css);"
        " document.adoptedStyleSheets = [...document.adoptedStyleSheets, s]; }",
        NO_MOTION,
    )


def _rels(site: Path) -> list[str]:
    rels = []
    for p in sorted(site.rglob("index.html")):
        rel = p.parent.relative_to(site).as_posix()
        rels.append("" if rel == "." else rel + "/")
    return rels + ["404.html"]


@pytest.fixture(scope="session")
def axe() -> str:
    """The source of axe-core AXE_VERSION, installed once into .nox/axe (a test tool only)."""
    script = AXE_DIR / "node_modules" / "axe-core" / "axe.min.js"
    package = AXE_DIR / "node_modules" / "axe-core" / "package.json"
    if not (package.is_file() and json.loads(package.read_text())["version"] == AXE_VERSION):
        npm = shutil.which("npm")
        if npm is None:
            if os.environ.get("CI"):
                pytest.fail("npm is required in CI for the accessibility tests (apt-get install npm)")
            pytest.skip("npm not found: the accessibility tests install axe-core with it")
        r = subprocess.run(
            [npm, "install", "--prefix", str(AXE_DIR), "--no-save", "--no-package-lock", "--no-audit", "--no-fund"]
            + ["--ignore-scripts", f"axe-core@{AXE_VERSION}"],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(package.read_text())["version"] == AXE_VERSION
    return script.read_text(encoding="utf-8")


def _axe(page, rules: list[str] | None = None, exclude: list[str] = (), impacts=SERIOUS) -> dict:
    """Violations of the given impacts on the page (default: serious and critical; None: any):
    {rule: [(target, summary), ...]}."""
    options = {"resultTypes": ["violations"]}
    if rules:
        options["runOnly"] = {"type": "rule", "values": rules}
    found = page.evaluate(
        """async ([options, exclude, impacts]) =>
            (await axe.run({include: [['html']], exclude: exclude.map(s => [s])}, options))
            .violations.filter(v => impacts === null || impacts.includes(v.impact))
            .map(v => [v.id, v.nodes.map(n => [n.target.join(' '), n.failureSummary.slice(0, 200)])])""",
        [options, list(exclude), None if impacts is None else list(impacts)],
    )
    return {rule: nodes for rule, nodes in found}


def _settled(page) -> None:
    """Wait until the page's own scripts are done: lessonkit.js marks <html> once the page and its
    fonts have loaded and it has put the boxes that scroll into the Tab order; Material has named
    its code blocks' button rows (lessonkit.js names each one it adds)."""
    page.wait_for_selector("html[data-lk-settled]", state="attached", timeout=20_000)
    page.wait_for_function(
        "() => [...document.querySelectorAll('nav.md-code__nav')].every(n => n.hasAttribute('aria-label'))"
    )


# The code of a source page is one stylesheet's tokens, thousands of them (numpy_vjps.py: 10,000
# elements, most of axe's time): checked in full on core.py (and its highlighted lines below),
# left out on the other source pages, whose tables, links and chrome are checked like any page.
FULL_CODE = "source/autograd/core.py/"


def _load_with_axe(page, url: str, axe: str) -> None:
    page.goto(url, wait_until="load")
    _settled(page)
    _no_motion(page)
    page.evaluate(axe)


def _dark(page) -> None:
    page.evaluate("() => document.body.setAttribute('data-md-color-scheme', 'slate')")


def test_axe_finds_no_violation_of_any_impact_on_any_page_in_either_scheme(built_site, server, browser, axe):
    """Every page, once settled: every axe rule, of any impact, in the light scheme, in the dark
    scheme, and in the light scheme again (the same result: it does not depend on when axe runs).
    Also counts the code blocks that scroll sideways at 1280 px (fewer than a third)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    bad, unstable, blocks, scrolling, pages = {}, {}, 0, 0, 0
    for rel in _rels(built_site):
        _load_with_axe(page, f"{server}/{rel}", axe)
        pages += 1
        skip = [".lk-source code"] if rel.startswith(("source/", "code/")) and rel != FULL_CODE else []
        light = _axe(page, exclude=skip, impacts=None)
        widths = page.evaluate(
            "() => [...document.querySelectorAll('article pre > code')].map(c => c.scrollWidth - c.clientWidth)"
        )
        blocks += len(widths)
        scrolling += sum(1 for w in widths if w > 1)
        _dark(page)
        dark = _axe(page, exclude=skip, impacts=None)
        page.evaluate("() => document.body.setAttribute('data-md-color-scheme', 'default')")
        again = _axe(page, exclude=skip, impacts=None)
        if again != light:
            unstable[rel] = (sorted(light), sorted(again))
        for scheme, found in (("light", light), ("dark", dark), ("light again", again)):
            for rule, nodes in found.items():
                bad[f"{rel} {scheme} {rule}"] = nodes[:3]
    context.close()
    assert bad == {} and unstable == {}
    assert pages > 100
    assert blocks > 300 and scrolling / blocks < 1 / 3, (scrolling, blocks)


def test_axe_on_highlighted_source_lines_in_both_schemes(server, browser, axe):
    """A range opened from a lesson (#L25-L32) is tinted: its code keeps 4.5:1 too."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    _load_with_axe(page, f"{server}/source/autograd/core.py/#L25-L32", axe)
    page.wait_for_timeout(200)
    assert page.evaluate("() => document.querySelectorAll('.lk-line.lk-hl').length") == 8
    context_rule = {"include": [["#L24"], ["#L25"], ["#L28"], ["#L32"], ["#L33"]]}
    found = []
    for scheme in ("light", "dark"):
        if scheme == "dark":
            _dark(page)
        found.append(
            page.evaluate(
                """async (ctx) => (await axe.run(ctx, {runOnly: {type: 'rule', values: ['color-contrast']}}))
                    .violations.map(v => v.nodes.length)""",
                context_rule,
            )
        )
    context.close()
    assert found == [[], []]


def test_axe_stays_out_of_the_site(built_site):
    hits = [p for p in built_site.rglob("*") if p.is_file() and "axe" in p.name.lower()]
    assert hits == []
    for p in built_site.rglob("*.html"):
        assert "axe.min.js" not in p.read_text(encoding="utf-8") and "axe-core" not in p.read_text(encoding="utf-8")


# --- the keyboard --------------------------------------------------------------------------------

_TABBABLE = """() => [...document.querySelectorAll(
    'a[href], button, input, select, textarea, summary, [tabindex], label[tabindex]')]
  .filter(e => !e.disabled && e.tabIndex >= 0 && e.getAttribute('tabindex') !== '-1' && !e.closest('[hidden]'))
  .filter(e => e.type !== 'radio' || e === (document.querySelector(`input[name="${e.name}"]:checked`)
                                            || document.querySelector(`input[name="${e.name}"]`)))  // one stop
  .filter(e => { const s = getComputedStyle(e); return s.display !== 'none' && s.visibility === 'visible'
                 && e.getClientRects().length > 0 && !e.closest('[inert], details:not([open]) > :not(summary)'); })
  .map(e => e.dataset.lkKey)"""

_KEY_ALL = """() => { let i = 0; for (const e of document.querySelectorAll('*')) e.dataset.lkKey = String(i++); }"""

# the element that has the focus: its key, whether a person can see it, whether it shows the focus
_FOCUSED = """() => {
  const e = document.activeElement;
  if (!e || e === document.body) return null;
  const r = e.getBoundingClientRect(), s = getComputedStyle(e);
  let shown = e, hidden = r.width < 1 || r.height < 1 || s.visibility !== 'visible' || s.opacity === '0'
                         || !!e.closest('[aria-hidden="true"]')
                         || r.right <= 0 || r.left >= window.innerWidth;  // off the side (a closed drawer)
  // a visually hidden radio shows its focus on the label after it (Material's palette toggle)
  const next = e.nextElementSibling;
  if (hidden && e.type === 'radio' && next && next.tagName === 'LABEL' && next.getClientRects().length > 0) {
    shown = next; hidden = false;
  }
  const ss = getComputedStyle(shown);
  const ring = (ss.outlineStyle !== 'none' && parseFloat(ss.outlineWidth) >= 2) || ss.boxShadow !== 'none';
  return [e.dataset.lkKey, e.tagName.toLowerCase() + (e.className ? '.' + String(e.className).split(' ')[0] : ''),
          hidden, ring];
}"""


@pytest.mark.parametrize(
    "rel, width",
    [("", 1280), ("lessons/05-reverse-mode/", 1280), ("source/autograd/core.py/", 1280), ("glossary/", 1280)]
    + [("", 375), ("lessons/05-reverse-mode/", 375)],  # a phone: the closed drawer, the search overlay
)
def test_every_control_is_reached_by_tab_and_shows_its_focus(server, browser, rel, width):
    v = Visit(browser, f"{server}/{rel}", width=width)
    p = v.page
    _no_motion(p)  # judge each focus as it ends up, not halfway through a fade
    p.evaluate(_KEY_ALL)
    wanted = p.evaluate(_TABBABLE)
    lines = p.evaluate("() => document.querySelectorAll('.lk-source a.lk-ln').length")
    reached, kinds, hidden, unringed = [], [], [], []
    for _ in range(len(wanted) + 20):
        p.keyboard.press("Tab")
        f = p.evaluate(_FOCUSED)
        if f is None:
            continue
        key, what, is_hidden, ring = f
        if reached and key == reached[0]:
            break  # round the page once
        reached.append(key)
        kinds.append(what)
        if is_hidden:
            hidden.append(what)
        elif not ring:
            unringed.append(what)
    v.close()
    assert hidden == [] and unringed == []
    assert sorted(set(wanted) - set(reached), key=int) == []
    if rel.startswith("source/"):  # one line-number link per line, none of them a Tab stop
        assert lines > 400 and "a.lk-ln" not in kinds, len(reached)


def _tab_to(page, selector: str, limit: int = 400) -> int:
    """Press Tab until the focus is on an element matching ``selector``; the number of presses."""
    for n in range(1, limit + 1):
        page.keyboard.press("Tab")
        if page.evaluate("s => !!document.activeElement && document.activeElement.matches(s)", selector):
            return n
    raise AssertionError(f"Tab never reached {selector}")


def _ring(page) -> bool:
    """Whether the focused element shows a focus outline (2 px or more) or ring (a box shadow)."""
    return page.evaluate("""() => { const s = getComputedStyle(document.activeElement);
        return (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2) || s.boxShadow !== 'none'; }""")


@pytest.mark.parametrize("width", [1280, 375])
def test_keyboard_alone_reaches_the_menu_terms_code_and_more_search_results(server, browser, width):
    """Only the keyboard, on lesson 05: the ☰ menu where it is shown (Enter opens the drawer and
    moves into it, Escape closes it and returns), every glossary term (its definition shown and
    named as its description while it has the focus), every code block that scrolls, and the
    search's 「还有 N 个结果」 row (reached with the arrow keys, as Material moves through results),
    each with a visible focus."""
    v = Visit(browser, f"{server}/lessons/05-reverse-mode/", width=width)
    p = v.page
    _settled(p)
    _no_motion(p)
    menu = p.evaluate("() => getComputedStyle(document.querySelector('.md-header label[for=\"__drawer\"]')).display")
    assert menu != "none" or width > 1220  # Material shows the menu below 76.25em
    if menu != "none":
        _tab_to(p, 'label[for="__drawer"]')
        assert _ring(p)
        assert p.evaluate(
            "() => [document.activeElement.getAttribute('role'), document.activeElement.ariaLabel,"
            " document.activeElement.getAttribute('aria-expanded')]"
        ) == ["button", "导航菜单", "false"]
        p.keyboard.press("Enter")
        p.wait_for_timeout(100)
        got = p.evaluate("""() => [document.getElementById('__drawer').checked,
            !!document.activeElement.closest('.md-sidebar--primary'), document.activeElement.tagName,
            document.querySelector('.md-header label[for="__drawer"]').getAttribute('aria-expanded'),
            getComputedStyle(document.querySelector('.md-sidebar--primary')).visibility]""")
        assert got == [True, True, "A", "true", "visible"], got
        p.keyboard.press("Tab")  # on through the drawer's links
        assert p.evaluate("() => !!document.activeElement.closest('.md-sidebar--primary')") and _ring(p)
        p.keyboard.press("Escape")
        p.wait_for_timeout(100)
        assert p.evaluate("""() => [document.getElementById('__drawer').checked,
            document.activeElement.matches('label[for="__drawer"]')]""") == [False, True]
    # every glossary term: a Tab stop whose definition the tooltip shows and names
    terms = p.evaluate("() => [...document.querySelectorAll('article abbr')].map(a => [a.title, a.tabIndex])")
    assert len(terms) >= 25 and all(title and tab == 0 for title, tab in terms), terms[:5]  # lesson 05 has 31
    p.evaluate("() => document.activeElement && document.activeElement.blur()")
    p.evaluate("() => window.scrollTo(0, 0)")
    seen = []
    _tab_to(p, "article abbr")
    for _ in range(4):  # the first terms, one after another
        p.wait_for_timeout(350)  # Material shows a tooltip after a short delay
        tip = p.evaluate("""() => { const a = document.activeElement, id = a.getAttribute('aria-describedby');
            const t = id && document.getElementById(id);
            return [a.tagName, a.textContent, t && t.getAttribute('role'), t && t.textContent.trim(),
                    t && getComputedStyle(t).visibility, a.getAttribute('title')]; }""")
        assert tip[0] == "ABBR" and tip[2] == "tooltip" and tip[4] == "visible" and _ring(p), tip
        definition = next(title for title, _ in terms if title == tip[3])
        seen.append((tip[1], definition))
        _tab_to(p, "article abbr")
    assert len(seen) == 4 and all(d for _, d in seen)
    # every code block that scrolls sideways is a Tab stop (or holds one), and shows its focus
    p.evaluate("() => { document.activeElement.blur(); window.scrollTo(0, 0); }")
    code = p.evaluate("""() => [...document.querySelectorAll('article pre > code')]
        .filter(c => c.scrollWidth > c.clientWidth + 1)
        .map(c => c.tabIndex >= 0 || !!c.querySelector('a[href]:not([tabindex="-1"]), button'))""")
    assert code and all(code), code
    _tab_to(p, "article pre > code")
    assert _ring(p)
    # search: a query with many results, then the 「还有 N 个结果」 row by the arrow keys
    p.evaluate("() => { document.activeElement.blur(); window.scrollTo(0, 0); }")
    if width == 375:
        p.keyboard.press("s")  # Material's shortcut opens the search
    else:
        _tab_to(p, "input.md-search__input")
    p.wait_for_selector("input.md-search__input:focus")
    p.keyboard.type("grad")
    p.wait_for_selector(".md-search-result__more > summary", timeout=20_000)
    for _ in range(60):  # Material moves through the results with the arrow keys (Tab closes the search)
        p.keyboard.press("ArrowDown")
        if p.evaluate("() => document.activeElement.matches('.md-search-result__more > summary')"):
            break
    got = p.evaluate("""() => { const s = getComputedStyle(document.activeElement);
        return [document.activeElement.textContent.trim(), s.outlineStyle, parseFloat(s.outlineWidth)]; }""")
    assert re.fullmatch(r"在该页上还有 \d+ 个符合条件的结果", got[0]) and got[1] != "none" and got[2] >= 2, got
    p.keyboard.press("Enter")
    assert p.evaluate("() => document.activeElement.parentElement.open") is True
    assert v.errors == [] and v.external == []
    v.close()


def test_every_code_block_button_row_is_a_landmark_with_a_name_of_its_own(server, browser):
    """Material's row of buttons of each code block is a <nav>: named "代码块 N 的按钮", one N each."""
    v = Visit(browser, f"{server}/lessons/05-reverse-mode/")
    _settled(v.page)
    names = v.page.evaluate("() => [...document.querySelectorAll('nav.md-code__nav')].map(n => n.ariaLabel)")
    v.close()
    assert len(names) > 20 and names == [f"代码块 {n} 的按钮" for n in range(1, len(names) + 1)]


# --- the source browser -------------------------------------------------------------------------


class _CodeText(HTMLParser):
    """The text of the first `.lk-source` code element of a page, and what its links hold."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth, self.text, self.links, self.inside = 0, [], [], False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "div" and "lk-source" in (a.get("class") or "").split() and not self.text:
            self.inside = True
        if self.inside:
            self.depth += 1
            if tag == "a":
                self.links.append(a)

    def handle_endtag(self, tag):
        if self.inside:
            self.depth -= 1
            if self.depth == 0:
                self.inside = False

    def handle_data(self, data):
        if self.inside:
            self.text.append(data)


def test_the_code_of_every_source_page_is_the_file_exactly(built_site, real_project):
    """What the copy button and a selection copy: the file's text, nothing glued on."""
    pages = sorted((built_site / "source").rglob("*.py/index.html"))
    assert len(pages) > 30
    for page in pages:
        rel = page.parent.relative_to(built_site / "source").as_posix()
        parser = _CodeText()
        parser.feed(page.read_text(encoding="utf-8"))
        data = real_project.pinned.file(rel).data
        assert "".join(parser.text) == data.decode("utf-8"), rel
        numbers = [a for a in parser.links if a.get("class") == "lk-ln"]
        assert len(numbers) == len(data.decode("utf-8").split("\n")) - (1 if data.endswith(b"\n") else 0) or not data
        assert all(a.get("tabindex") == "-1" and a.get("aria-hidden") == "true" for a in numbers), rel
        marks = [a for a in parser.links if a.get("class") == "lk-cite-mark"]
        assert all(
            a["aria-label"].startswith("引用此处的块：")
            and a["title"].startswith("被引用：")
            and a["href"].startswith("#cited-")
            for a in marks
        ), rel


def test_copy_button_of_a_source_page_copies_the_file(server, browser, real_project):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server)
    page = context.new_page()
    page.goto(f"{server}/source/autograd/core.py/", wait_until="load")
    page.wait_for_timeout(300)
    button = page.locator(".lk-source button[data-md-type=copy]")
    assert button.count() == 1
    button.first.click()
    page.wait_for_timeout(300)
    copied = page.evaluate("() => navigator.clipboard.readText()")
    context.close()
    text = real_project.pinned.file("autograd/core.py").data.decode("utf-8")
    assert copied == text and copied.startswith("from functools import reduce")


def test_a_phone_shows_the_cited_range_as_code(server, browser):
    """core.py#L25-L32 at 375 px: the eight lines, one below the other, with no citation rows
    between them; the gutter marker of L25 leads to the list of its citations and back."""
    v = Visit(browser, f"{server}/source/autograd/core.py/#L25-L32", width=375)
    p = v.page
    p.wait_for_timeout(300)
    tops = p.evaluate(
        "() => [...Array(8).keys()].map(i => document.getElementById('L' + (25 + i)).getBoundingClientRect().top)"
    )
    header = p.evaluate("() => document.querySelector('.md-header').getBoundingClientRect().bottom")
    gaps = {round(b - a) for a, b in pairwise(tops)}
    assert tops[0] >= header and tops[-1] < 800 and len(gaps) == 1, (tops, header)
    mark = p.locator("#L25 .lk-cite-mark")
    assert mark.get_attribute("href") == "#cited-backward_pass"
    mark.click()
    p.wait_for_timeout(200)
    row = p.evaluate(
        "() => { const r = document.getElementById('cited-backward_pass').getBoundingClientRect(); return r.top; }"
    )
    assert row >= header
    p.locator("#cited-backward_pass a", has_text="05").first.click()
    p.wait_for_url("**/lessons/05-reverse-mode/#src-backward_pass")
    v.close()


def test_the_cited_ranges_read_as_one_card_per_symbol_on_a_phone(server, browser):
    """At 375 px a symbol's name stands above its ranges, which take the column's width."""
    v = Visit(browser, f"{server}/source/autograd/core.py/", width=375)
    got = v.page.evaluate("""() => { const col = document.querySelector('article').getBoundingClientRect().width;
        const rows = [...document.querySelectorAll('tr.lk-cite-group')];
        const cells = rows.map(r => [...r.children].map(c => c.getBoundingClientRect()));
        return [rows.length, cells.every(([name, pages]) => pages.top >= name.bottom - 1),
                Math.min(...cells.map(([, pages]) => pages.width)) / col,
                document.documentElement.scrollWidth <= document.documentElement.clientWidth]; }""")
    wide = Visit(browser, f"{server}/source/autograd/core.py/", width=1280)
    side = wide.page.evaluate("""() => { const [name, pages] = document.querySelector('tr.lk-cite-group').children;
        return pages.getBoundingClientRect().left >= name.getBoundingClientRect().right - 1; }""")
    v.close()
    wide.close()
    assert got[0] > 20 and got[1] and got[2] > 0.9 and got[3], got
    assert side  # two columns on a wide screen


def test_line_numbers_keep_4_5_to_1_in_both_schemes(server, browser):
    """The colour of line numbers and gutter text against the line behind them (the counter is
    generated content, which axe does not see): plain, cited and highlighted lines."""
    ratios = {}
    for scheme in ("light", "dark"):
        v = Visit(browser, f"{server}/source/autograd/core.py/#L25-L26", scheme=scheme)
        v.page.wait_for_timeout(200)
        ratios[scheme] = v.page.evaluate(
            "() => {"
            + _CONTRAST_JS
            + """return ['L1', 'L25', 'L35'].map(id => { const line = document.getElementById(id);
                   const ln = line.querySelector('.lk-ln');
                   return ratio(rgb(getComputedStyle(ln).color), background(line)); }); }"""
        )
        v.close()
    assert all(r >= 4.5 for rs in ratios.values() for r in rs), ratios


# computes WCAG contrast in the page: rgb('rgb(1, 2, 3)'), background(element), ratio(a, b)
_CONTRAST_JS = """
const rgb = s => { const m = s.match(/[\\d.]+/g).map(Number); return [m[0], m[1], m[2], m.length > 3 ? m[3] : 1]; };
const over = (top, below) => [0, 1, 2].map(i => top[i] * top[3] + below[i] * (1 - top[3])).concat([1]);
function background(el) {
  const layers = [];
  for (let e = el; e; e = e.parentElement) {
    const c = rgb(getComputedStyle(e).backgroundColor);
    if (c[3] > 0) layers.push(c);
    if (c[3] === 1) break;
  }
  let out = [255, 255, 255, 1];
  for (const c of layers.reverse()) out = over(c, out);
  return out;
}
const lum = c => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
                   return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
const ratio = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
"""


# --- figures -------------------------------------------------------------------------------------


@pytest.mark.parametrize("width", [1280, 375])
def test_call_sequence_fits_the_column_with_a_caption_and_a_title(server, browser, width):
    """The figure stays in the text column and the page does not scroll sideways; on a phone the
    drawing keeps at least 440 px (its text readable) and scrolls inside its figure."""
    v = Visit(browser, f"{server}/attachments/call-sequence/", width=width)
    got = v.page.evaluate("""() => { const f = document.querySelector('figure.lk-diagram-figure#calls');
        const svg = f.querySelector('svg'); const col = document.querySelector('article').getBoundingClientRect();
        const box = f.getBoundingClientRect();
        return [box.left >= col.left - 1, box.right <= col.right + 1, svg.querySelector('title').textContent,
                svg.getAttribute('role'), f.querySelector('figcaption').textContent.length,
                document.documentElement.scrollWidth <= document.documentElement.clientWidth,
                Math.round(svg.getBoundingClientRect().width), f.scrollWidth > f.clientWidth]; }""")
    v.close()
    assert got[:4] == [True, True, "grad 调用时序图", "img"] and got[4] > 20 and got[5], got
    assert got[6] >= 440 and got[7] == (width < 440 + 64), got  # scrolls only where the column is narrower


def test_figure_labels_keep_4_5_to_1_in_both_schemes(built_site, server, browser):
    """Edge labels and notes of figures (cotangents, tangents), measured against the page."""
    pages = [
        p.parent.relative_to(built_site).as_posix() + "/"
        for p in sorted(built_site.rglob("index.html"))
        if 'class="lk-note' in p.read_text(encoding="utf-8")
    ]
    assert pages
    low = {}
    for scheme in ("light", "dark"):
        for rel in pages:
            v = Visit(browser, f"{server}/{rel}", scheme=scheme)
            r = v.page.evaluate(
                "() => {"
                + _CONTRAST_JS
                + """return [...document.querySelectorAll('text.lk-note')]
                .map(t => ratio(rgb(getComputedStyle(t).fill), background(t.closest('figure')))); }"""
            )
            v.close()
            if r and min(r) < 4.5:
                low[(scheme, rel)] = round(min(r), 2)
    assert low == {}


# --- page facts ----------------------------------------------------------------------------------


def _git_date(path: Path) -> str | None:
    r = subprocess.run(["git", "log", "-1", "--format=%cs", "--", str(path)], cwd=ROOT, capture_output=True, text=True)
    return r.stdout.strip() or None if r.returncode == 0 else None


def test_every_page_says_when_it_last_changed(built_site):
    dates = {}
    for page in sorted(built_site.rglob("*.html")):
        if page.name == "404.html":
            continue
        m = re.search(
            r'<aside class="lk-page-facts">.*?<time datetime="(\d{4}-\d\d-\d\d)">\1</time>', page.read_text(), re.S
        )
        assert m, page
        dates[page.relative_to(built_site).as_posix()] = m.group(1)
    lesson = _git_date(ROOT / "docs/lessons/05-reverse-mode.md")
    if lesson is None:
        pytest.skip("not a git checkout")
    assert dates["lessons/05-reverse-mode/index.html"] == lesson
    assert dates["glossary/index.html"] == _git_date(ROOT / "docs/glossary.md")


def test_page_dates_come_from_git_or_source_date_epoch(tmp_path, monkeypatch):
    from lessonkit.integrations.mkdocs import pagefacts

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("a\n")
    (tmp_path / "docs" / "b.md").write_text("b\n")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1764460800")  # 2025-11-30T00:00:00Z
    no_git = pagefacts.PageDates(tmp_path, ["docs"])  # not a repository: the epoch's day
    assert no_git.of(str(tmp_path / "docs" / "a.md")) == "2025-11-30" and no_git.of(None) == "2025-11-30"
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "soon")  # the build stops on it before any page (on_config)
    with pytest.raises(LessonError, match=r"^SOURCE_DATE_EPOCH: 'soon' is not a whole number of seconds"):
        pagefacts.epoch_date()
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    assert pagefacts.epoch_date() is None and pagefacts.PageDates(tmp_path, ["docs"]).of(None) is None

    def git(*args, date):
        env = {**os.environ, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
        subprocess.run(["git", *args], cwd=tmp_path, env=env, check=True, capture_output=True)

    git("init", "-q", date="2024-01-01T12:00:00+00:00")
    git("-c", "user.name=t", "-c", "user.email=t@t", "add", ".", date="2024-01-01T12:00:00+00:00")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a b", date="2024-01-01T12:00:00+00:00")
    (tmp_path / "docs" / "b.md").write_text("b2\n")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "b", date="2024-03-05T12:00:00+00:00")
    dates = pagefacts.PageDates(tmp_path, ["docs"])
    assert dates.of(str(tmp_path / "docs" / "a.md")) == "2024-01-01"
    assert dates.of(str(tmp_path / "docs" / "b.md")) == "2024-03-05"
    assert dates.of(None) == "2024-03-05"  # a generated page: the last change of any input


def test_licence_links_name_the_pinned_commit(built_site, real_project):
    pin = real_project.pin
    want = f"{pin.repo}/blob/{pin.commit}/license.txt"
    assert real_project.pin.manifest.get("license.txt")
    pages = sorted(built_site.rglob("*.html"))
    for page in pages:
        html = page.read_text(encoding="utf-8")
        assert not re.search(r'href="[^"]*/blob/master/', html), page  # (the pinned code itself may name one)
        assert f'<a href="{want}" rel="noopener">MIT 许可证</a>，固定版本 {pin.version}）' in html, page
    assert len(pages) > 90


def test_a_lesson_has_one_set_of_previous_and_next_links(built_site):
    """The lesson's own line at its end; Material's footer links stay on the other pages."""
    order = re.findall(r"^\s+- (lessons/\d\d-[\w-]+)\.md$", (ROOT / "mkdocs.yml").read_text(), re.M)
    assert len(order) == 14
    for i, lesson in enumerate(order):
        html = (built_site / lesson / "index.html").read_text(encoding="utf-8")
        assert "md-footer__link" not in html, lesson
        article = html.split('<article class="md-content__inner md-typeset">', 1)[1].split("</article>", 1)[0]
        links = [(h, re.sub(r"<[^>]+>", "", t).strip()) for h, t in re.findall(r'<a href="([^"]+)">(.*?)</a>', article)]
        arrows = [(h, t) for h, t in links if t.startswith("←") or t.endswith("→")]
        prev = "../../" if i == 0 else f"../{order[i - 1].split('/')[1]}/"
        nxt = "../../" if i == len(order) - 1 else f"../{order[i + 1].split('/')[1]}/"
        assert [h for h, _ in arrows] == [prev, nxt], (lesson, arrows)
    other = (built_site / "attachments" / "theory" / "index.html").read_text(encoding="utf-8")
    assert other.count('class="md-footer__link') == 2


def test_report_link_and_date_with_a_repository(site):
    """With LESSONKIT_REPO_URL, every page says where to report an error on it."""
    site.page("lessons/01-x.md", "# 一\n\n正文。\n")
    config = (site.root / "mkdocs.yml").read_text()
    config = config.replace("  font: false\n", f"  font: false\n  custom_dir: {ROOT / 'overrides'}\n")
    config += "extra:\n  upstream_repo: https://github.com/HIPS/autograd\n  upstream_license_file: license.txt\n"
    config += "  project_repo: !ENV [LESSONKIT_REPO_URL, \"\"]\n"
    (site.root / "mkdocs.yml").write_text(config)
    site.env.update(LESSONKIT_REPO_URL="https://github.com/o/lessons", SOURCE_DATE_EPOCH="1764460800")
    r = site.build()
    assert r.returncode == 0, r.stderr[-2000:]
    html = (site.root / "site" / "lessons" / "01-x" / "index.html").read_text(encoding="utf-8")
    facts = re.sub(r"\s+", " ", html.split('<aside class="lk-page-facts">', 1)[1].split("</aside>", 1)[0])
    assert '<time datetime="2025-11-30">2025-11-30</time>' in facts  # not a git repository: the epoch
    assert (
        '<a href="https://github.com/o/lessons/issues/new?title=%E9%A1%B5%E9%9D%A2%E6%9C%89%E8%AF%AF%EF%BC%9A'
        'lessons/01-x.md" rel="noopener">到本站仓库报告</a>' in facts
    )
    assert "md-footer__link" not in html  # a lesson: its own previous/next line only


def test_search_override_differs_from_material_only_by_the_dialog_name():
    import material

    theirs = (Path(material.__file__).parent / "templates" / "partials" / "search.html").read_text()
    ours = (ROOT / "overrides" / "partials" / "search.html").read_text()
    body = lambda t: t.split("-#}\n", 1)[1]  # noqa: E731  (after the leading comment)
    named = 'role="dialog" aria-label="{{ lang.t(\'search.placeholder\') }}">'
    assert body(ours) == body(theirs).replace('role="dialog">', named, 1) and named in ours


# --- reading -------------------------------------------------------------------------------------


def test_source_browser_is_in_the_navigation(server, browser):
    v = Visit(browser, f"{server}/lessons/01-ad-and-graph/")
    top = v.page.eval_on_selector_all(
        ".md-nav--primary > .md-nav__list > .md-nav__item > a.md-nav__link",
        "els => els.filter(e => e.offsetParent).map(e => [e.innerText.trim(), e.getAttribute('href')])",
    )
    v.close()
    assert ["源码浏览", "../../source/"] in top


def test_script_code_has_the_size_of_other_code(server, browser):
    v = Visit(browser, f"{server}/lessons/05-reverse-mode/")
    v.page.evaluate("() => document.querySelectorAll('details.lk-script').forEach(d => d.open = true)")
    sizes = v.page.evaluate("""() => [document.querySelector('.lk-real-source pre code'),
        document.querySelector('details.lk-script pre code')].map(c => getComputedStyle(c).fontSize)""")
    v.close()
    assert sizes[0] == sizes[1] == "14px", sizes


def test_glossary_reads_as_cards_on_a_phone(server, browser):
    v = Visit(browser, f"{server}/glossary/", width=375)
    got = v.page.evaluate("""() => { const col = document.querySelector('article').getBoundingClientRect().width;
        const defs = [...document.querySelectorAll('.term-cards tbody tr td:nth-child(3)')];
        return [defs.length, Math.min(...defs.map(d => d.getBoundingClientRect().width)) / col,
                [...document.querySelectorAll('.term-cards .md-typeset__scrollwrap')]
                  .every(w => w.scrollWidth <= w.clientWidth + 1),
                document.documentElement.scrollWidth <= document.documentElement.clientWidth]; }""")
    v.close()
    assert got[0] > 40 and got[1] > 0.9 and got[2] and got[3], got


@pytest.mark.parametrize("rel", ["glossary/", "symbols/", "lessons/05-reverse-mode/", "attachments/theory/"])
def test_identifiers_are_not_broken_inside_a_word(server, browser, rel):
    """At 375 px an identifier in code wraps only when it is wider than its line on its own."""
    v = Visit(browser, f"{server}/{rel}", width=375)
    broken = v.page.evaluate("""() => [...document.querySelectorAll('article code')]
        .filter(c => !c.closest('pre') && /^[A-Za-z_][\\w.]*$/.test(c.textContent) && c.getClientRects().length > 1)
        .filter(c => { const probe = c.cloneNode(true);
                       probe.style.whiteSpace = 'nowrap'; probe.style.position = 'absolute';
                       document.body.append(probe); const w = probe.getBoundingClientRect().width; probe.remove();
                       return w < c.closest('td, li, p, div').getBoundingClientRect().width; })
        .map(c => c.textContent)""")
    v.close()
    assert broken == []


def test_cited_ranges_are_grouped_by_symbol():
    """One row per symbol; a fragment of the same lines as a named citation shares its row and
    range; a fragment elsewhere is a row of its own; one link per page and range."""
    from lessonkit.site.citations import Citation, cite_groups, cites_table_html

    def cite(page, label, start, end, symbol=None, role="source"):
        return Citation(page, label, f"src-{start}", "real-source", role, "pinned", "a.py", symbol, start, end)

    cites = [
        cite("lessons/05-x.md", "05", 25, 32, "backward_pass"),
        cite("lessons/05-x.md", "05", 28, 28, "backward_pass", "prose"),
        cite("lessons/07-y.md", "07", 25, 32),  # a fragment of the same lines
        cite("lessons/07-y.md", "07", 25, 32, "backward_pass"),  # the same page again: one link
        cite("lessons/03-z.md", "03", 4, 4),
    ]
    groups = cite_groups(cites)
    assert [(gid, sym, [(a, b, [c.label for c in cs]) for a, b, cs in rows]) for gid, sym, rows in groups] == [
        ("cited-L4-L4", None, [(4, 4, ["03"])]),
        ("cited-backward_pass", "backward_pass", [(25, 32, ["05", "07"]), (28, 28, ["05"])]),
    ]
    html = cites_table_html(cites, lambda c: f"../{c.page}#{c.anchor}")
    assert html.count('class="lk-cite-group"') == 2 and '<a href="#L28">L28</a>: ' in html
