"""What a careful reader checks, in Debian's Chromium: copy buttons, unique ids, Chinese and
English search, `__init__` shown literally, no sideways scrolling at 375 px on any page, math
typeset with the shipped font, and nothing loaded from another host.

The engine changes these tests asked for have landed; a test that still needs
one would be marked ``@ENGINE`` (strict xfail, so it turns red as soon as the fix lands).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from test_site import ARTIFACTS, Visit  # the browser and server fixtures come from conftest.py

from lessonkit.pipeline import mathml

ENGINE = pytest.mark.xfail(reason="engine fix pending", strict=True)


def _rels(site: Path) -> list[str]:
    """Every HTML page of the built site as a URL path relative to the root."""
    rels = []
    for p in sorted(site.rglob("index.html")):
        rel = p.parent.relative_to(site).as_posix()
        rels.append("" if rel == "." else rel + "/")
    return rels


# --- pure checks (no browser) -------------------------------------------------------------


def test_sin_x_has_a_thin_space_and_function_application():
    html = mathml._polish(
        '<mrow><mi>sin</mi><mi>x</mi><mo>&#x0002B;</mo><mi>log</mi>'
        '<mo stretchy="false">&#x00028;</mo><mi>y</mi><mo stretchy="false">&#x00029;</mo></mrow>'
    )
    assert html == (
        '<mrow><mi>sin</mi><mo>&#x02061;</mo><mspace width="0.1667em"></mspace><mi>x</mi>'
        '<mo>&#x0002B;</mo><mi>log</mi><mo>&#x02061;</mo><mo stretchy="false">&#x00028;</mo>'
        '<mi>y</mi><mo stretchy="false">&#x00029;</mo></mrow>'
    )


def test_sub_and_superscripted_function_names_keep_their_two_children():
    for tex in (r"\log_2 x", r"\sin^2 x"):
        out = mathml._polish(mathml.convert(tex))
        assert "&#x02061;" not in out and out == mathml.convert(tex), tex


def test_search_separator_splits_full_width_punctuation(built_site):
    config = json.loads((built_site / "search" / "search_index.json").read_text())["config"]
    sep = re.compile(config["separator"])
    for text, words in [
        ("真实源码：backward_pass", ["真实源码", "backward_pass"]),
        ("前向模式（Forward Mode）", ["前向模式", "Forward", "Mode"]),
        ("「反向传播」、链式法则", ["反向传播", "链式法则"]),
    ]:
        assert [w for w in sep.split(text) if w] == words, text


def test_no_canonical_link_to_a_made_up_host(built_site):
    for p in built_site.rglob("*.html"):
        assert "example.org" not in p.read_text(), p
    assert 'rel="canonical"' not in (built_site / "index.html").read_text()  # no SITE_URL given


def test_every_page_is_reachable_by_links_from_the_home_page(built_site):
    """Every page a reader may need; the authoring guide is for authors (linked from the README)."""
    pages = {str(p.relative_to(built_site)) for p in built_site.rglob("*.html")} - {"404.html", "authoring/index.html"}
    seen, todo = set(), ["index.html"]
    while todo:
        page = todo.pop()
        if page in seen or page not in pages:
            continue
        seen.add(page)
        for href in re.findall(r'<a\b[^>]*\bhref="([^"#?]*)', (built_site / page).read_text()):
            if not href or urlsplit(href).scheme or href.startswith("//"):
                continue
            target = (built_site / page).parent.joinpath(href).resolve()
            if target.is_dir():
                target = target / "index.html"
            if target.suffix == ".html" and built_site.resolve() in target.parents:
                todo.append(str(target.relative_to(built_site.resolve())))
    assert sorted(pages - seen) == []


def test_user_dictionary_holds_every_chinese_glossary_term(built_site):
    """Each Chinese glossary term is one word of the search index: in the user dictionary, or a
    compound that ends with a shorter term of it (数值梯度检验: kept whole, it would hide 梯度检验
    from search; split, both queries find lesson 12, see test_search_quality)."""
    root = Path(__file__).resolve().parents[2]
    words = {line.split()[0] for line in (root / "docs/user-dictionary.txt").read_text().splitlines() if line.strip()}
    missing = []
    for line in (root / "docs/glossary.md").read_text().splitlines():
        if line.startswith("| ") and not line.startswith(("| 中文", "| 正文写法", "|---")):
            for w in re.split(r"\s*[/／、]\s*", line.split("|")[1].strip()):
                w = re.sub(r"[（(].*?[）)]", "", w).strip()
                compound = any(w.endswith(d) and len(d) >= 2 and d != w for d in words)
                if re.fullmatch(r"[\u4e00-\u9fff]{2,}", w) and w not in words and not compound:
                    missing.append(w)
    assert missing == []


def test_math_font_and_its_licence_are_shipped(built_site):
    font = built_site / "assets" / "fonts" / "STIXTwoMath-Regular.woff2"
    # the subset of STIX Two Math for the site's formulas (the whole font is 403 KB): more than a few
    # glyphs, far less than the font
    assert font.read_bytes()[:4] == b"wOF2" and 10_000 < font.stat().st_size < 100_000
    assert "SIL Open Font License" in (built_site / "assets/fonts/STIXTwoMath-OFL.txt").read_text()


# --- in the browser ------------------------------------------------------------------------


def test_home_page_starts_with_read_and_download_buttons(server, browser):
    v = Visit(browser, f"{server}/")
    buttons = v.page.eval_on_selector_all(
        "article .md-button", "els => els.map(e => [e.innerText.trim(), e.getAttribute('href')])"
    )
    first_block = v.page.eval_on_selector("article h1 + p", "e => e.querySelectorAll('.md-button').length")
    v.close()
    assert buttons[:2] == [["开始阅读", "lessons/01-ad-and-graph/"], ["下载资源包", "#bundle"]]
    assert first_block == 2


def test_footer_links_the_repository_and_its_licence(server, browser):
    v = Visit(browser, f"{server}/lessons/05-reverse-mode/")
    links = v.page.eval_on_selector_all(".md-copyright a", "els => els.map(e => [e.innerText.trim(), e.href])")
    v.close()
    assert ["HIPS/autograd", "https://github.com/HIPS/autograd"] in links
    licence = "https://github.com/HIPS/autograd/blob/f53a21734fdfae636f448744d9097d8d35a643a0/license.txt"
    assert ["MIT 许可证", licence] in links  # at the pinned commit, not the default branch


def test_404_page_is_chinese(server, browser):
    v = Visit(browser, f"{server}/404.html")
    h1 = v.page.inner_text("article h1")
    lang = v.page.get_attribute("html", "lang")
    v.close()
    assert h1.startswith("404 · 页面不存在") and lang == "zh"


def _search(page, term: str) -> list[str]:
    """Type the term as a reader does (Material searches on keyup) and return result page paths."""
    page.locator(".md-search__input").first.click()
    page.fill(".md-search__input", "")
    page.type(".md-search__input", term, delay=15)
    page.press(".md-search__input", "End")  # an IME commit ends with a key event too
    page.wait_for_selector(".md-search-result__item", timeout=15000)
    page.wait_for_timeout(400)
    hrefs = page.eval_on_selector_all(".md-search-result__item > a", "els => els.map(e => e.getAttribute('href'))")
    pages = []
    for h in hrefs:
        path = urlsplit(h).path
        if path not in pages:
            pages.append(path)
    return pages


@pytest.mark.parametrize(
    "term, lesson",
    [
        ("雅可比", "/lessons/11-operator-composition/"),
        ("前向模式", "/lessons/08-forward-mode/"),
        ("反向传播", "/lessons/05-reverse-mode/"),
        ("make_hvp", "/lessons/11-operator-composition/"),
        ("unbroadcast", "/lessons/07-broadcasting/"),
        ("嵌套追踪", "/lessons/10-higher-order/"),
        ("backward_pass", "/lessons/05-reverse-mode/"),  # lesson 05 carries `search: boost: 2` front matter
    ],
)
def test_search_finds_the_lesson_in_the_top_3(server, browser, term, lesson):
    v = Visit(browser, f"{server}/")
    found = _search(v.page, term)
    v.close()
    # a name's own definition (its source line, its API entry) ranks first by design: among the
    # pages that explain, the lesson is in the top 3
    explaining = [u for u in found if not u.startswith(("/source/", "/api/", "/symbols/", "/code/"))]
    assert lesson in explaining[:3], found[:6]


def test_search_highlights_the_term_on_the_opened_page(server, browser):
    v = Visit(browser, f"{server}/")
    _search(v.page, "累加")
    v.page.locator(".md-search-result__item > a").first.click()
    v.page.wait_for_load_state("load")
    v.page.wait_for_timeout(500)
    url = v.page.url
    marks = v.page.eval_on_selector_all("article mark", "els => els.map(e => e.textContent)")  # folded hints too
    v.close()
    assert "h=" in url and marks and set(marks) == {"累加"}, (url, marks[:5])


def test_title_shows_chinese_name_beside_english_term(server, browser):
    v = Visit(browser, f"{server}/lessons/08-forward-mode/")
    h1 = v.page.inner_text("article h1")
    v.close()
    assert h1.startswith("08 · 前向模式（Forward Mode）")


def test_math_uses_the_shipped_font_and_stretches_brackets(server, browser):
    v = Visit(browser, f"{server}/lessons/11-operator-composition/")
    p = v.page
    p.evaluate("() => document.fonts.ready")
    loaded = p.evaluate(
        "() => [...document.fonts].filter(f => f.family.replace(/\"/g, '') === 'STIX Two Math').map(f => f.status)"
    )
    family = p.evaluate("() => getComputedStyle(document.querySelector('math')).fontFamily")
    # the [ of a 3-row matrix is drawn taller than the [ of ordinary text
    heights = p.evaluate("""() => {
        const mo = [...document.querySelectorAll('.lk-math-block math mo')].find(m => m.textContent === '[');
        return [mo.getBoundingClientRect().height,
                mo.closest('mrow').querySelector('mtable').getBoundingClientRect().height];
    }""")
    external, failed = v.external, v.failed
    v.close()
    assert loaded == ["loaded"] and family.startswith('"STIX Two Math"')
    assert heights[0] > 0.8 * heights[1], heights
    assert external == [] and failed == []


def test_sin_x_is_drawn_with_a_gap(server, browser):
    v = Visit(browser, f"{server}/lessons/01-ad-and-graph/")
    gaps = v.page.evaluate("""() => [...document.querySelectorAll('math mi')].filter(m => m.textContent === 'sin')
        .map(m => { const n = m.nextElementSibling; return n && n.nextElementSibling ?
                    n.nextElementSibling.tagName.toLowerCase() : ''; })""")
    v.close()
    assert gaps and all(t in ("mspace", "mo") for t in gaps), gaps


def test_no_page_scrolls_sideways_at_375px_and_none_loads_another_host(built_site, server, browser):
    context = browser.new_context(viewport={"width": 375, "height": 800})
    external = []
    context.route(
        "**/*",
        lambda r: (
            (external.append(r.request.url), r.abort())
            if urlsplit(r.request.url).netloc not in (urlsplit(server).netloc, "")
            else r.continue_()
        ),
    )
    page = context.new_page()
    wide = {}
    for rel in _rels(built_site):
        page.goto(f"{server}/{rel}", wait_until="load")
        w = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        if w[0] > w[1]:
            wide[rel] = w
    context.close()
    assert wide == {} and external == []


def test_a_table_cut_off_on_a_phone_fades_at_the_edge_that_hides_more(server, browser):
    """lessonkit.js marks a box that scrolls sideways with the edges that hide more of it, as it is
    scrolled; lessonkit.css fades those edges on a screen (not on paper)."""
    edges = """el => [el.classList.contains('lk-more-left'), el.classList.contains('lk-more-right'),
                     getComputedStyle(el).maskImage !== 'none']"""
    phone = Visit(browser, f"{server}/lessons/03-grad-call-chain/", width=375)
    table = phone.page.locator(".lk-snapshot-table").first
    assert table.evaluate("el => el.scrollWidth > el.clientWidth")  # the page this test reads: it is cut off
    assert table.evaluate(edges) == [False, True, True]
    table.evaluate("el => { el.scrollLeft = 40; }")
    phone.page.wait_for_timeout(100)
    assert table.evaluate(edges) == [True, True, True]
    table.evaluate("el => { el.scrollLeft = el.scrollWidth; }")
    phone.page.wait_for_timeout(100)
    assert table.evaluate(edges) == [True, False, True]
    table.focus()  # from the keyboard (lessonkit.js gave it a tab stop): its outline shows, unmasked
    phone.page.keyboard.press("ArrowLeft")
    assert table.evaluate("el => el.matches(':focus-visible') && getComputedStyle(el).maskImage") == "none"
    table.evaluate("el => el.blur()")
    phone.page.emulate_media(media="print")
    assert table.evaluate("el => getComputedStyle(el).maskImage") == "none"
    phone.close()
    wide = Visit(browser, f"{server}/lessons/03-grad-call-chain/", width=1280)
    table = wide.page.locator(".lk-snapshot-table").first
    assert table.evaluate("el => el.scrollWidth <= el.clientWidth")
    assert table.evaluate(edges) == [False, False, False]
    wide.close()


def test_a_box_that_does_not_scroll_neither_fades_nor_takes_a_tab_stop(server, browser):
    """The repository map's term cards are Material tables whose scroll wrapper lessonkit.css lets
    overflow (``overflow: visible``): at 375 px one made 40 px wider than its box (a wide line in
    its first card, as a long identifier would be). Nothing can scroll it, so no edge of it may fade
    (its text would be hidden for good) nor may it join the Tab order."""
    v = Visit(browser, f"{server}/attachments/repo-map/", width=375)
    v.page.evaluate("""() => { const wrap = document.querySelector('.term-cards .md-typeset__scrollwrap');
        const wide = document.createElement('span'); wide.textContent = 'x';
        wide.style.display = 'inline-block'; wide.style.width = (wrap.clientWidth + 40) + 'px';
        wrap.querySelector('td').append(wide); window.dispatchEvent(new Event('resize')); }""")
    v.page.wait_for_timeout(400)  # lessonkit.js looks again 150 ms after a resize
    boxes = v.page.evaluate(
        """() => [...document.querySelectorAll(
                '.md-typeset__scrollwrap, .lk-diagram-wrap, .lk-math-block, .lk-math, .lk-snapshot-table')]
              .filter(el => !['auto', 'scroll'].includes(getComputedStyle(el).overflowX))
              .map(el => [el.className, el.scrollWidth - el.clientWidth, getComputedStyle(el).maskImage,
                          el.getAttribute('tabindex')])"""
    )
    assert any(over > 1 for _, over, _, _ in boxes)  # the page this test reads: one overflows
    assert [b for b in boxes if b[2] != "none" or b[3] is not None] == []
    v.close()


def test_a_formula_that_fits_once_the_math_font_arrives_neither_fades_nor_takes_a_tab_stop(server, browser):
    """Lesson 03's two display formulas overflow 343 px at 375 px only in the fallback font: when the
    shipped math font arrives after lessonkit.js's first look, the boxes are measured again."""
    import time

    context = browser.new_context(viewport={"width": 375, "height": 800})
    context.route("**/*", lambda r: (time.sleep(0.8) if r.request.url.endswith(".woff2") else None, r.continue_()))
    page = context.new_page()
    page.goto(f"{server}/lessons/03-grad-call-chain/", wait_until="load")
    page.evaluate("() => document.fonts.ready")
    page.wait_for_timeout(400)
    stale = page.evaluate(
        """() => [...document.querySelectorAll(
                '.md-typeset__scrollwrap, .lk-diagram-wrap, .lk-math-block, .lk-math, .lk-snapshot-table')]
              .filter(el => (el.scrollWidth - el.clientWidth > 1) !==
                            (el.classList.contains('lk-more-left') || el.classList.contains('lk-more-right'))
                            || (el.hasAttribute('data-lk-scroll') && el.scrollWidth - el.clientWidth <= 1))
              .map(el => [el.className, el.scrollWidth, el.clientWidth, el.getAttribute('tabindex')])"""
    )
    fonts = page.evaluate("() => [...document.fonts].filter(f => f.status === 'loaded').map(f => f.family)")
    context.close()
    assert any("STIX Two Math" in f for f in fonts)  # the font did arrive, late
    assert stale == []


def test_copy_button_targets_sit_in_the_same_block_outside_experiments(server, browser):
    """Every copy button targets the <pre> it sits on (pages without experiment output)."""
    v = Visit(browser, f"{server}/source/autograd/core.py/")
    bad = v.page.evaluate(_COPY_CHECK)
    v.close()
    assert bad == []


_COPY_CHECK = """() => [...document.querySelectorAll('button.md-code__button[data-md-type=copy], button.md-clipboard')]
    .map(b => { const t = document.querySelector(b.dataset.clipboardTarget);
                const own = b.closest('.md-code, .highlight, pre') || b.parentElement;
                return (t && (own.contains(t) || own === t.parentElement)) ? null : b.dataset.clipboardTarget; })
    .filter(x => x)"""


def test_copy_buttons_on_experiment_output_copy_the_output(server, browser):
    v = Visit(browser, f"{server}/lessons/05-reverse-mode/")
    bad = v.page.evaluate(_COPY_CHECK)
    v.close()
    assert bad == []


def test_an_elided_excerpt_copies_each_run_without_its_elision_rows(server, browser):
    """The guide's elided backward_pass: one copy button per run, each targeting its own run and
    copying that run's code only; the rows that stand for left-out lines are never copied."""
    v = Visit(browser, f"{server}/authoring/")
    v.context.grant_permissions(["clipboard-read", "clipboard-write"])
    assert v.page.evaluate(_COPY_CHECK) == []
    block = v.page.locator(".lk-real-source", has=v.page.locator(".lk-elided")).filter(has_text="outgrads = {end_node")
    assert block.locator(".lk-elided").all_inner_texts() == ["⋯ 省略 3 行 ⋯", "⋯ 省略 1 行 ⋯"]
    copied = []
    for run in block.locator(".lk-run").all():
        run.locator("button.md-code__button[data-md-type=copy]").click()
        copied.append(v.page.evaluate("navigator.clipboard.readText()"))
    v.close()
    assert copied == [
        "def backward_pass(g, end_node):\n    outgrads = {end_node: (g, False)}",
        "        for parent, ingrad in zip(node.parents, ingrads):\n"
        "            outgrads[parent] = add_outgrads(outgrads.get(parent), ingrad)",
    ]


def test_ids_are_unique_on_every_page(built_site, server, browser):
    context = browser.new_context()
    page = context.new_page()
    dups = {}
    for rel in _rels(built_site):
        page.goto(f"{server}/{rel}", wait_until="load")
        d = page.evaluate("""() => { const seen = {}, out = [];
            for (const e of document.querySelectorAll('[id]')) { if (seen[e.id]) out.push(e.id); seen[e.id] = 1; }
            return out; }""")
        if d:
            dups[rel] = d[:5]
    context.close()
    assert dups == {}


def test_dunder_init_is_shown_literally(built_site, server, browser):
    shown = []
    for rel in ("source/autograd/__init__.py/", "symbols/", "lessons/14-mini-autograd/"):
        v = Visit(browser, f"{server}/{rel}")
        text = v.page.inner_text("article")
        title = v.page.title()
        v.close()
        shown.append((rel, "__init__" in text, bool(re.search(r"(?<!_)\binit\b(?!_)", text.replace("__init__", "")))))
        if rel.startswith("source/"):
            assert title.startswith("autograd/__init__.py"), title
    assert all(has and not bare for _, has, bare in shown), shown


def test_line_anchor_keeps_the_line_and_its_marker_below_the_header(server, browser):
    v = Visit(browser, f"{server}/source/autograd/core.py/#L25")
    v.page.wait_for_timeout(300)
    r = v.page.evaluate("""() => { const l = document.getElementById('L25');
        const h = document.querySelector('.md-header').getBoundingClientRect().bottom;
        return [l.querySelector('.lk-cite-mark').getBoundingClientRect().top, l.getBoundingClientRect().top, h]; }""")
    v.close()
    assert r[0] >= r[2] and r[1] >= r[2], r


def test_screenshots_at_1280_and_375(server, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    shots = [
        (f"readers-{name}-{w}-{scheme}", rel, w, scheme)
        for name, rel in (
            ("home", ""),
            ("lesson05", "lessons/05-reverse-mode/#src-backward_pass"),
            ("core", "source/autograd/core.py/#L25-L32"),
        )
        for w in (1280, 375)
        for scheme in ("light", "dark")
    ]
    shots += [
        (name, rel, w, "light")
        for name, rel, w in [
            ("readers-home", "", 1280),
            ("readers-home-375", "", 375),
            ("readers-11-375", "lessons/11-operator-composition/#hand", 375),
            ("readers-11-1280", "lessons/11-operator-composition/#hand", 1280),
            ("readers-core-L25", "source/autograd/core.py/#L25", 1280),
            ("readers-404", "404.html", 1280),
            ("readers-05-1280", "lessons/05-reverse-mode/#exp-multiple_paths", 1280),
            ("readers-05-375", "lessons/05-reverse-mode/#exp-multiple_paths", 375),
            ("readers-core-L25-375", "source/autograd/core.py/#L25", 375),
            ("readers-symbols-1280", "symbols/", 1280),
            ("readers-symbols-375", "symbols/", 375),
            ("readers-api-1280", "api/#autograd.differential_operators.grad", 1280),
            ("readers-call-sequence-375", "attachments/call-sequence/", 375),
            ("readers-glossary-375", "glossary/", 375),
        ]
    ]
    for name, rel, width, scheme in shots:
        v = Visit(browser, f"{server}/{rel}", width=width, scheme=scheme)
        v.page.wait_for_timeout(300)
        v.page.screenshot(path=str(ARTIFACTS / f"{name}.png"))
        v.close()
        assert (ARTIFACTS / f"{name}.png").stat().st_size > 10_000


def test_call_sequence_caller_skips_filtered_frames():
    """A call under a filtered frame (a VJP <lambda>) belongs to the nearest kept caller above
    it, not to the last kept call at a shallower depth (toposort is a sibling, not a caller)."""
    from lessonkit_ext.diagrams import call_tree, sequence_svg

    calls = [(0, "core.backward_pass"), (1, "util.toposort"), (1, "numpy_vjps.<lambda>"), (2, "numpy_vjps.unbroadcast")]
    assert call_tree(calls) == [
        (0, None, "core.backward_pass"),
        (1, 0, "util.toposort"),
        (1, 0, "numpy_vjps.unbroadcast"),
    ]
    svg = sequence_svg(calls)
    rows = re.findall(
        r'<text x="(\d+)" y="(\d+)"><tspan class="lk-seq-fun">([^<]+)</tspan><tspan class="lk-seq-mod"[^>]*>([^<]+)<',
        svg,
    )
    assert [(f, m) for _, _, f, m in rows] == [
        ("backward_pass", "core"),
        ("toposort", "util"),
        ("unbroadcast", "numpy_vjps"),
    ]
    assert rows[1][0] == rows[2][0] > rows[0][0]  # both one level under backward_pass
    # one arrow from the caller's line to each callee: down backward_pass's stem, then across
    arrows = re.findall(r'<path d="M(\d+),(\d+) V(\d+) H(\d+)" class="lk-seq-edge"', svg)
    assert [(int(y1) < int(y2), int(x2) < int(rows[i + 1][0])) for i, (_, y1, y2, x2) in enumerate(arrows)] == [
        (True, True),
        (True, True),
    ]
    assert len({x for x, _, _, _ in arrows}) == 1  # both from backward_pass's stem
    assert "<title>call sequence diagram</title>" in svg


def test_call_sequence_stays_narrow_and_drops_deep_calls():
    from lessonkit_ext.diagrams import call_tree, sequence_svg

    calls = [(d, f"m{d}.f{d}") for d in range(14)]
    assert [lv for lv, _, _ in call_tree(calls)] == list(range(10))  # depth 0-9 drawn, 10-13 not
    width = int(re.search(r'viewBox="0 0 (\d+) ', sequence_svg(calls)).group(1))
    assert width < 400


def test_api_reference_shows_the_signature_readers_call(built_site):
    html = (built_site / "api" / "index.html").read_text()
    row = re.search(r"<tr>\s*<td><code>grad</code></td>(.*?)</tr>", html, re.S).group(1)
    assert "<code>grad(fun, argnum=0)</code>" in row
    assert 'href="../source/autograd/differential_operators.py/#sym-grad"' in row
    assert 'href="../lessons/03-grad-call-chain/"' in row


def test_every_self_test_question_has_a_folded_hint(built_site):
    hint = r'<details class="tip">\s*<summary>提示</summary>'
    counts = {}
    for page in sorted((built_site / "lessons").glob("*/index.html")):
        html = page.read_text()
        start = re.search(r"<h2 id=\"[^\"]*\">自测问题", html).start()
        questions = html[start:].split("</ol>")[0]
        counts[page.parent.name] = (len(re.findall(r"<li>\s*<p>", questions)), len(re.findall(hint, questions)))
    html = (built_site / "attachments/self-test/index.html").read_text()
    counts["self-test"] = (len(re.findall(r"<strong>Q\d+\.</strong>", html)), len(re.findall(hint, html)))
    assert all(items == hints and items > 0 for items, hints in counts.values()), counts
    assert sum(h for _, h in counts.values()) == 133  # 103 in the lessons, 30 in the attachment


# --- engine fixes: copy buttons, labels, citation tables, bundle, diagrams ---------------------


def test_block_labels_purpose_and_provenance_are_bilingual_from_site_toml(built_site):
    html = (built_site / "lessons" / "05-reverse-mode" / "index.html").read_text()
    badges = set(re.findall(r'<span class="lk-badge lk-badge-(\w+)"[^>]*>([^<]*)</span>', html))
    assert badges >= {("real", "真实源码 REAL SOURCE"), ("exp", "实验 EXPERIMENT")}, badges
    assert "<strong>目的（Purpose）：</strong>" in html
    prov = re.findall(r'<p class="lk-provenance"[^>]*>([^<]*)</p>', html)
    assert prov and all("package index" not in p and "来源：" in p and "退出码 0" in p for p in prov), prov[:1]
    teach = (built_site / "lessons" / "14-mini-autograd" / "index.html").read_text()
    assert "教学简化 TEACHING SIMPLIFICATION</span>" in teach
    css = (built_site / "assets" / "lessonkit.css").read_text()
    assert "::before { content: \"真实源码" not in css  # the interim CSS badge is gone


def test_engine_labels_default_to_english_and_are_configurable(tmp_path):
    from lessonkit.config import site as siteconfig
    from lessonkit.errors import LessonError

    plain = siteconfig.load(tmp_path, "https://github.com/o/p")
    assert plain.labels["real-source"] == "REAL SOURCE" and plain.labels["purpose"] == "Purpose"
    (tmp_path / "sourcemap").mkdir()
    (tmp_path / "sourcemap" / "site.toml").write_text('[labels]\nexperiment = "实验 EXPERIMENT"\n')
    assert siteconfig.load(tmp_path, "https://github.com/o/p").labels["experiment"] == "实验 EXPERIMENT"
    (tmp_path / "sourcemap" / "site.toml").write_text('[labels]\nexperimnt = "x"\n')
    with pytest.raises(LessonError) as err:
        siteconfig.load(tmp_path, "https://github.com/o/p")
    assert str(err.value).startswith("sourcemap/site.toml:2: unknown key `experimnt` in `[labels]`")


def test_provider_text_is_chosen_by_provider_kind():
    from lessonkit.config.site import LABELS
    from lessonkit.pipeline.markdown import provider_text

    zh = {**LABELS, "from-index": "来自 Python 包索引的发布包 {detail}", "from-archive": "本地发布包（{detail}）"}
    assert (
        provider_text("sdist autograd-1.9.1.tar.gz from the Python package index", zh)
        == "来自 Python 包索引的发布包 autograd-1.9.1.tar.gz"
    )
    assert provider_text("local archive LESSONKIT_SDIST (autograd-1.9.1.tar.gz)", zh) == "本地发布包（LESSONKIT_SDIST）"
    assert provider_text("something new", zh) == "something new"


def test_experiment_output_comes_before_its_folded_script(built_site, server, browser):
    html = (built_site / "lessons" / "05-reverse-mode" / "index.html").read_text()
    blocks = re.findall(r'<div class="lk-block lk-experiment" id="([^"]+)">(.*?)</details></div>', html, re.S)
    assert blocks
    for anchor, body in blocks:
        out = body.index(f'<div class="lk-output-wrap" id="{anchor}-output"><pre class="lk-output">')
        assert out < body.index('<details class="lk-script">'), anchor
    v = Visit(browser, f"{server}/lessons/05-reverse-mode/")
    closed = v.page.evaluate("() => [...document.querySelectorAll('details.lk-script')].every(d => !d.open)")
    v.close()
    assert closed
    v = Visit(browser, f"{server}/lessons/05-reverse-mode/#exp-multiple_paths-L25")
    v.page.wait_for_timeout(300)
    opened = v.page.evaluate("() => document.getElementById('exp-multiple_paths-L25').closest('details').open")
    v.close()
    assert opened


def test_citation_tables_have_one_link_per_page_and_no_block_ids(built_site):
    html = (built_site / "symbols" / "index.html").read_text()
    rows = re.findall(r"<tr>(.*?)</tr>", html, re.S)
    assert len(rows) > 50
    for row in rows:
        cells = re.findall(r"<td>(.*?)</td>", row, re.S)
        if len(cells) < 3:
            continue
        texts = re.findall(r">([^<]*)</a>", cells[2])
        pages = [h.split("#")[0] for h in re.findall(r'href="([^"]+)"', cells[2])]
        assert not any(t.startswith(("src-", "exp-", "teach-")) for t in texts), row
        assert len(pages) == len(set(pages)), row
    core = (built_site / "source" / "autograd" / "core.py" / "index.html").read_text()
    table = core.split('id="cited"', 1)[1].split("</table>", 1)[0]
    assert "src-" not in re.sub(r'href="[^"]*"', "", table)
    ranges = re.findall(r'<li><a href="#L(\d+)(?:-L(\d+))?">L\d+(?:–L\d+)?</a>', table)
    assert len(ranges) > 20 and len(ranges) == len(set(ranges))
    groups = re.findall(r'<tr id="cited-([\w-]+)" class="lk-cite-group">', table)
    assert "backward_pass" in groups and len(groups) == len(set(groups))  # one row per symbol


def test_bundle_has_one_top_folder_and_runs_from_it(built_site, tmp_path, pinned_root):
    import subprocess
    import sys
    import zipfile

    with zipfile.ZipFile(built_site / "downloads" / "autograd-resources.zip") as zf:
        names = zf.namelist()
        zf.extractall(tmp_path)
    assert names and all(n.startswith("autograd-resources/") for n in names), names[:3]
    home = (built_site / "index.html").read_text()
    assert "cd autograd-resources" in home
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(pinned_root), "AUTOGRAD_PINNED_ROOT": str(pinned_root)}
    r = subprocess.run(
        [sys.executable, "-B", "autograd-resources/experiments/toposort_order.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-800:]


def test_api_entries_link_their_source_lines_and_citing_lessons(built_site):
    html = (built_site / "api" / "index.html").read_text()
    entry = html.split('<h3 id="autograd.differential_operators.grad" class="doc doc-heading">', 1)[1]
    links = re.search(r'<p class="lk-api-links"[^>]*>(.*?)</p>', entry.split('<h3 id=', 1)[0], re.S).group(1)
    assert "读者调用：<code>grad(fun, argnum=0)</code>" in links
    assert 'href="../source/autograd/differential_operators.py/#L' in links
    assert re.search(r'href="../lessons/03-grad-call-chain/#[^"]+">03</a>', links), links
    assert html.count('class="lk-api-links"') >= 15


def test_mini_readme_is_translated_with_the_original_kept(built_site):
    html = (built_site / "attachments" / "mini-readme" / "index.html").read_text()
    zh, en = html.index('id="zh"'), html.index('id="original"')
    assert zh < en and "只支持 float 和一维向量。" in html[zh:en]
    assert "Floats and one-dimensional vectors only." in html[en:]
    root = Path(__file__).resolve().parents[2]
    spans = lambda p: set(re.findall(r"`([^`]+)`", (root / p).read_text()))  # noqa: E731
    assert spans("mini-autograd/README.md") <= spans("mini-autograd/README.zh.md")  # the translation keeps up
    size = re.search(r"the engine \(about (\d+) lines\)", (root / "mini-autograd/README.md").read_text())
    assert f"引擎本身（约 {size.group(1)} 行）" in (root / "mini-autograd/README.zh.md").read_text()
    lines = len((root / "mini-autograd/mini_autograd.py").read_text().splitlines())
    assert 0 <= lines - int(size.group(1)) < 10, lines  # "about N lines": N is the count rounded down to tens


# --- reader details ------------------------------------------------------------------------------


def test_a_line_link_stays_in_the_address_bar_while_the_reader_scrolls(server, browser):
    """Material's navigation.tracking writes the heading in view into the address: a #L range
    opened on a source page stays there while the reader scrolls; a link followed replaces it."""
    v = Visit(browser, f"{server}/source/autograd/core.py/#L184-L204")
    p = v.page
    p.wait_for_timeout(300)
    assert p.evaluate("() => document.querySelectorAll('.lk-line.lk-hl').length") == 21
    for y in (0, 400, 3000, 8000):
        p.mouse.wheel(0, y - p.evaluate("() => window.scrollY"))
        p.wait_for_timeout(700)  # Material updates the address 250 ms after scrolling stops
        assert p.evaluate("() => location.hash") == "#L184-L204", y
    p.evaluate("() => window.scrollTo(0, 0)")
    p.wait_for_timeout(700)
    assert p.evaluate("() => location.hash") == "#L184-L204"
    p.locator("#L25 .lk-cite-mark").click()  # a link followed: the line link is gone, tracking as before
    p.wait_for_timeout(700)
    assert p.evaluate("() => location.hash").startswith("#cited")
    v.close()
    lesson = Visit(browser, f"{server}/lessons/05-reverse-mode/")  # elsewhere Material tracks as before
    lp = lesson.page
    lp.wait_for_function("() => typeof document$ !== 'undefined'", timeout=30_000)  # Material's bundle is running
    # Material writes the heading in view once scrolling stops. On a loaded machine its observers may
    # start after a first scroll, so the reader scrolls on until the address follows (at most 30 s).
    tracked = "() => location.hash !== '' && location.hash !== '#L1'"
    for step in range(30):
        lp.mouse.wheel(0, 600 if step % 2 == 0 else -300)
        try:
            lp.wait_for_function(tracked, timeout=1_000)
            break
        except PlaywrightTimeout:  # not yet: scroll again
            continue
    assert lp.evaluate(tracked), lp.evaluate("() => [location.hash, window.scrollY]")
    lesson.close()


def _cells(html: str, table_of):
    """The rows of the tables below ``table_of`` (a CSS selector), each a list of (text, links)."""
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(html)
    rows = []
    for table in tree.css(table_of):
        for tr in table.css("tbody tr"):
            rows.append(
                [(td.text(separator="", strip=True), [a.text(strip=True) for a in td.css("a")]) for td in tr.css("td")]
            )
    return rows


def test_cited_by_lists_name_lessons_by_title_and_never_the_authoring_guide(built_site):
    """The lists of citing pages (a source page's, the symbol index): page titles, not bare
    numbers; never the authoring guide; one line printed as L36, not L36–L36; one row per symbol."""
    docs = Path(__file__).resolve().parents[2] / "docs" / "lessons"
    titles = {
        p.name[:2]: re.search(r"^# (.+)$", p.read_text(encoding="utf-8"), re.M).group(1) for p in docs.glob("*.md")
    }
    assert titles["05"] == "05 · 反向模式（Reverse Mode）的核心实现"
    core = (built_site / "source" / "autograd" / "core.py" / "index.html").read_text(encoding="utf-8")
    rows = _cells(core, "table:has(tr.lk-cite-group)")
    links = [t for row in rows for t in row[1][1]]
    assert len(rows) > 10 and links
    assert not any(re.fullmatch(r"L\d+–L(\d+)", t) and t.split("–")[0][1:] == t.split("–L")[1] for t in links)
    pages = [t for t in links if not t.startswith("L")]
    assert titles["05"] in pages and "05" not in pages
    assert not [t for t in pages if "写作指南" in t]
    lesson_titles = set(titles.values())
    assert all(t.removesuffix("（正文）") in lesson_titles or not t[:2].isdigit() for t in pages), pages
    assert "L36" in [t for row in _cells(core, "table:not(:has(tr.lk-cite-group))") for t in row[2][1]]
    symbols = (built_site / "symbols" / "index.html").read_text(encoding="utf-8")
    srows = _cells(symbols, "article table")
    assert len(srows) > 50
    for row in srows:
        assert not any("写作指南" in t for t in row[2][1]), row
        assert not any(re.fullmatch(r"L(\d+)–L\1", t) for t in row[1][1]), row
        assert len(row[2][1]) == len(set(row[2][1])), row  # one link per page
    vspace = [row for row in srows if row[0][0] == "VSpace"]  # core.py's VSpace: one row, three ranges
    assert len(vspace) == 1, vspace
    assert vspace[0][1][1] == ["L237–L244", "L258–L263", "L261–L263"] and vspace[0][2][1] == [
        titles["05"],
        titles["14"],
    ]


def test_the_authoring_guide_is_out_of_the_readers_navigation_and_search(built_site):
    from selectolax.lexbor import LexborHTMLParser

    index = json.loads((built_site / "search" / "search_index.json").read_text(encoding="utf-8"))
    assert not [d for d in index["docs"] if d["location"].startswith("authoring/")]
    assert [d for d in index["docs"] if d["location"].startswith("glossary/")]  # the other reference pages stay
    for page in ("index.html", "lessons/05-reverse-mode/index.html", "glossary/index.html"):
        nav = LexborHTMLParser((built_site / page).read_text(encoding="utf-8")).css(".md-nav--primary a[href]")
        hrefs = [a.attributes["href"] for a in nav]
        assert hrefs and not [h for h in hrefs if "authoring" in h], page
    assert (built_site / "authoring" / "index.html").is_file()  # still built, for authors
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert "[「写作指南」](docs/authoring.md)" in readme


def test_every_table_has_header_cells_with_text(built_site):
    """Each table of every page starts with a row of header cells, none of them empty."""
    from selectolax.lexbor import LexborHTMLParser

    bad, tables = [], 0
    for p in sorted(built_site.rglob("*.html")):
        for table in LexborHTMLParser(p.read_text(encoding="utf-8")).css("article table"):
            if table.css_first(".linenos, td.code"):  # an excerpt's line-number layout, not a data table
                continue
            tables += 1
            heads = table.css("th")
            if not heads or any(not th.text(strip=True) for th in heads):
                bad.append((p.relative_to(built_site).as_posix(), table.html[:120]))
    assert tables > 100 and bad == []


_OVERFLOW_LOG = """
window.__lkWide = 0;
(function tick() {
  const d = document.documentElement;
  if (d && document.body) window.__lkWide = Math.max(window.__lkWide, d.scrollWidth - d.clientWidth);
  if (performance.now() < 8000) requestAnimationFrame(tick);
})();
"""


@pytest.mark.parametrize(
    "rel",
    ["lessons/05-reverse-mode/", "lessons/06-numpy-vjp/", "lessons/08-forward-mode/", "lessons/12-gradient-check/"],
)
def test_no_sideways_scroll_while_a_page_loads_on_a_phone(server, browser, rel):
    """At 375 px on a slow link (fonts and scripts arrive late), the page is never wider than the
    screen, at any frame of its loading."""
    context = browser.new_context(viewport={"width": 375, "height": 800})
    context.add_init_script(_OVERFLOW_LOG)
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send(
        "Network.emulateNetworkConditions",
        {"offline": False, "latency": 150, "downloadThroughput": 200_000, "uploadThroughput": 100_000},
    )
    page.goto(f"{server}/{rel}", wait_until="load")
    page.wait_for_selector("html[data-lk-settled]", state="attached", timeout=30_000)
    wide = page.evaluate("() => window.__lkWide")
    context.close()
    assert wide == 0


def test_code_is_14px_and_the_copy_button_covers_no_code_on_a_phone(server, browser):
    """Code blocks and inline code at 14 px (16 px text); at 375 px each block's buttons stand
    above its first line (and an excerpt's line numbers stay level with its lines)."""
    v = Visit(browser, f"{server}/lessons/05-reverse-mode/", width=375)
    p = v.page
    p.wait_for_selector("html[data-lk-settled]", state="attached")
    got = p.evaluate("""() => {
        const size = s => getComputedStyle(document.querySelector(s)).fontSize;
        const out = {block: size('article pre > code'), inline: size('article p > code'),
                     text: size('article p'), covered: [], blocks: 0, level: []};
        for (const code of document.querySelectorAll('article pre > code')) {
          const nav = code.parentElement.querySelector(':scope > nav.md-code__nav');
          if (!nav || !code.getClientRects().length) continue;
          out.blocks++;
          const range = document.createRange(); range.selectNodeContents(code);
          const first = [...range.getClientRects()].filter(r => r.width > 0 && r.height > 0)
                                                   .reduce((a, r) => Math.min(a, r.top), Infinity);
          const id = code.closest('[id]');
          if (first < nav.getBoundingClientRect().bottom) out.covered.push(id && id.id);
          const table = code.closest('.highlighttable');
          if (table) {
            const n = table.querySelector('.linenos pre span, .linenos pre a');
            const line = table.querySelector('code > span');
            if (n && line) out.level.push(Math.round(n.getBoundingClientRect().top - line.getBoundingClientRect().top));
          }
        }
        return out; }""")
    v.close()
    assert got["block"] == got["inline"] == "14px" and got["text"] == "16px", got
    assert got["blocks"] > 20 and got["covered"] == [], got
    assert all(abs(d) <= 1 for d in got["level"]), got["level"]
