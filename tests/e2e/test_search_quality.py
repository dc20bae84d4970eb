"""Search as a reader uses it, in Debian's Chromium on the real built site: Chinese, English,
mixed and identifier queries pasted into the box (Playwright's ``insert_text``: no key events,
as a paste or an input method's commit) find the page that explains them in the top three (after
the source browser's page of a symbol of that name), the exact name of a pinned symbol lands on
its definition line first, a glossary term's defining sections come first after it, typing and
pasting give the same results, single characters and stop words are not highlighted, formulas
stay out of the teasers, and the index stays within its budget."""

from __future__ import annotations

import json
import re
from html import escape
from urllib.parse import parse_qs, urlsplit

import pytest
from test_site import Visit  # the browser and server fixtures come from conftest.py

L = "/lessons/"
# (query, the page that explains it): that page is among the first three result pages.
EXPECTED = [
    ("反向传播", L + "05-reverse-mode/"),
    ("广播", L + "07-broadcasting/"),
    ("闭包", "/glossary/"),
    ("雅可比", L + "02-jvp-vjp/"),
    ("前向模式", L + "08-forward-mode/"),
    ("嵌套追踪", L + "10-higher-order/"),
    ("拓扑排序", L + "05-reverse-mode/"),
    ("累加", L + "05-reverse-mode/"),
    ("计算图", L + "01-ad-and-graph/"),
    ("局部导数", L + "01-ad-and-graph/"),
    ("有限差分", L + "01-ad-and-graph/"),
    ("种子", L + "03-grad-call-chain/"),
    ("伴随恒等式", L + "12-gradient-check/"),
    ("对偶数", L + "08-forward-mode/"),
    ("数值梯度检验", L + "12-gradient-check/"),
    ("梯度检验", L + "12-gradient-check/"),
    ("自定义原语", L + "13-custom-primitive/"),
    ("向量空间", L + "05-reverse-mode/"),
    ("盒子", L + "04-tracer-and-box/"),
    ("动态图", L + "04-tracer-and-box/"),
    ("切向量", L + "02-jvp-vjp/"),
    ("高阶导数", L + "10-higher-order/"),
    ("可变标志", L + "05-reverse-mode/"),
    ("backpropagation", L + "05-reverse-mode/"),
    ("cotangent", L + "02-jvp-vjp/"),
    ("closure", L + "06-numpy-vjp/"),
    ("Jacobian", L + "02-jvp-vjp/"),
    ("broadcasting", L + "07-broadcasting/"),
    ("backward_pass", L + "05-reverse-mode/"),
    ("VJPNode", L + "05-reverse-mode/"),
    ("JVPNode", L + "08-forward-mode/"),
    ("unbroadcast", L + "07-broadcasting/"),
    ("make_hvp", L + "11-operator-composition/"),
    ("toposort", L + "05-reverse-mode/"),
    ("add_outgrads", L + "05-reverse-mode/"),
    ("defvjp", L + "06-numpy-vjp/"),
    ("primitive_vjps", L + "06-numpy-vjp/"),
    ("ArrayBox", L + "04-tracer-and-box/"),
    ("find_top_boxed_args", L + "10-higher-order/"),
    ("make_vjp", L + "02-jvp-vjp/"),  # its user API section; lesson 03 follows its call chain
    ("check_grads", L + "12-gradient-check/"),
    ("notrace_primitive", L + "04-tracer-and-box/"),
    ("Box 是什么", L + "04-tracer-and-box/"),
    ("grad 调用链", L + "03-grad-call-chain/"),
    ("outgrads 字典", L + "05-reverse-mode/"),
    ("Mini 引擎", L + "14-mini-autograd/"),
]
# A glossary term: the first result page is the glossary or the page whose section introduces it
# (the row's 首次介绍 link), the sections that carry the term in their `defines` field.
DEFINED_FIRST = [
    ("闭包", {"/glossary/"}),
    ("Box", {L + "04-tracer-and-box/", "/glossary/"}),
    ("盒子", {L + "04-tracer-and-box/", "/glossary/"}),
    ("反向传播", {L + "05-reverse-mode/", "/glossary/"}),
    ("backpropagation", {L + "05-reverse-mode/", "/glossary/"}),
    ("累加", {L + "05-reverse-mode/", "/glossary/"}),
    ("种子", {L + "03-grad-call-chain/", "/glossary/"}),
    ("局部导数", {L + "01-ad-and-graph/", "/glossary/"}),
    ("可变标志", {L + "05-reverse-mode/", "/glossary/"}),
    ("动态图", {L + "04-tracer-and-box/", "/glossary/"}),
    ("数值梯度检验", {L + "12-gradient-check/", "/glossary/"}),
    ("toposort", {L + "05-reverse-mode/", "/glossary/"}),
    ("ArrayBox", {L + "04-tracer-and-box/", "/glossary/"}),
    ("unbroadcast", {L + "07-broadcasting/", "/glossary/"}),
]
# (query, pinned file): a search for a symbol's exact name lists its file's page in the source
# browser first, with the symbol's definition line as its first section.
SYMBOLS = [
    ("toposort", "autograd/util.py"),
    ("VJPNode", "autograd/core.py"),
    ("JVPNode", "autograd/core.py"),
    ("defvjp", "autograd/core.py"),
    ("make_vjp", "autograd/core.py"),
    ("backward_pass", "autograd/core.py"),
    ("add_outgrads", "autograd/core.py"),
    ("Box", "autograd/tracer.py"),
    ("notrace_primitive", "autograd/tracer.py"),
    ("find_top_boxed_args", "autograd/tracer.py"),
    ("ArrayBox", "autograd/numpy/numpy_boxes.py"),
    ("unbroadcast", "autograd/numpy/numpy_vjps.py"),
    ("check_grads", "autograd/test_util.py"),
    ("make_hvp", "autograd/differential_operators.py"),
]
SOURCE = "/source/"
HAN = re.compile(r"^[\u3400-\u9fff\uf900-\ufaff]$")  # one Chinese character

SNAPSHOT = """() => [...document.querySelectorAll('.md-search-result__item')].map(li => ({
  href: li.querySelector('a').getAttribute('href'),
  links: [...li.querySelectorAll('a.md-search-result__link')].map(a => a.getAttribute('href')),
  marks: [...li.querySelectorAll('mark')].map(m => m.textContent),
  text: li.innerText,
}))"""


@pytest.fixture(scope="module")
def search(server, browser):
    v = Visit(browser, f"{server}/")
    yield v.page
    v.close()


def results(page, query: str, how: str = "paste") -> list[dict]:
    """The result list for ``query``, entered as a paste (``insert_text``) or typed, once it is stable."""
    page.locator(".md-search__input").first.click()
    page.fill(".md-search__input", "")
    page.wait_for_function("() => !document.querySelector('.md-search-result__item')", timeout=10000)
    if how == "paste":
        page.keyboard.insert_text(query)
    else:
        page.type(".md-search__input", query, delay=10)
    page.wait_for_selector(".md-search-result__item", timeout=15000)
    shown, again = None, page.evaluate(SNAPSHOT)
    while shown != again:  # results for a shorter prefix may still be on their way
        page.wait_for_timeout(250)
        shown, again = again, page.evaluate(SNAPSHOT)
    return shown


def pages_of(items: list[dict]) -> list[str]:
    out = []
    for it in items:
        path = urlsplit(it["href"]).path
        if path not in out:
            out.append(path)
    return out


def test_the_query_set_is_large_enough():
    kinds = {
        "chinese": [q for q, _ in EXPECTED if re.fullmatch(r"[\u3400-\u9fff]+", q)],
        "english": [q for q, _ in EXPECTED if re.fullmatch(r"[A-Za-z]+", q)],
        "identifier": [q for q, _ in EXPECTED if "_" in q],
        "mixed": [q for q, _ in EXPECTED if " " in q],
    }
    assert len(EXPECTED) >= 30 and all(len(v) >= 3 for v in kinds.values()), kinds


def explaining(found: list[str]) -> list[str]:
    """The result pages other than the source browser's (a symbol's definition comes first)."""
    return [p for p in found if not p.startswith(SOURCE)]


@pytest.mark.parametrize("query, page", EXPECTED)
def test_a_pasted_query_finds_its_page_in_the_top_3(search, query, page):
    found = pages_of(results(search, query))
    assert page in explaining(found)[:3], found[:6]


@pytest.mark.parametrize("query, first", DEFINED_FIRST)
def test_a_glossary_term_lists_a_section_that_defines_it_first(search, query, first):
    found = pages_of(results(search, query))
    assert explaining(found)[0] in first, found[:5]


def definition_line(pinned_root, file: str, name: str) -> int:
    """The line of ``def name`` or ``class name`` at the top of ``file`` of the pinned tree."""
    lines = (pinned_root / file).read_text(encoding="utf-8").split("\n")
    found = [n for n, line in enumerate(lines, 1) if re.match(rf"(?:async\s+)?(?:def|class)\s+{name}\b", line)]
    assert len(found) == 1, (file, name, found)
    return found[0]


@pytest.mark.parametrize("query, file", SYMBOLS)
def test_a_symbols_exact_name_lands_on_its_definition_line_first(search, pinned_root, query, file):
    first = results(search, query)[0]
    page, section = (urlsplit(link) for link in first["links"][:2])
    assert page.path == section.path == f"{SOURCE}{file}/", first["links"][:3]
    assert section.fragment == f"L{definition_line(pinned_root, file, query)}", first["links"][:3]


def test_a_method_is_found_by_its_qualified_name(search, pinned_root):
    first = results(search, "VJPNode.__init__")[0]
    lines = (pinned_root / "autograd/core.py").read_text(encoding="utf-8").split("\n")
    start = lines.index("class VJPNode(Node):")
    init = next(n for n in range(start, len(lines)) if lines[n].strip().startswith("def __init__(")) + 1
    assert urlsplit(first["links"][1]).fragment == f"L{init}", first["links"][:3]
    assert urlsplit(first["links"][1]).path == f"{SOURCE}autograd/core.py/"


def test_an_input_methods_commit_searches_and_its_composition_does_not(search):
    """While an input method composes, its input events leave the results alone (the text is not
    the reader's yet); the commit (compositionend) runs the search."""
    search.locator(".md-search__input").first.click()
    search.fill(".md-search__input", "")
    search.wait_for_function("() => !document.querySelector('.md-search-result__item')", timeout=10000)
    search.evaluate(
        """() => { const q = document.querySelector('.md-search__input');
        q.value = '反向';
        q.dispatchEvent(new InputEvent('input', {bubbles: true, isComposing: true, data: '反向'})); }"""
    )
    search.wait_for_timeout(1000)
    assert search.locator(".md-search-result__item").count() == 0
    search.evaluate(
        """() => { const q = document.querySelector('.md-search__input');
        q.value = '反向传播';
        q.dispatchEvent(new CompositionEvent('compositionend', {bubbles: true, data: '反向传播'})); }"""
    )
    search.wait_for_selector(".md-search-result__item", timeout=15000)
    assert L + "05-reverse-mode/" in pages_of(search.evaluate(SNAPSHOT))[:3]


@pytest.mark.parametrize("query", ["反向传播", "Box 是什么", "add_outgrads", "闭包"])
def test_typing_and_pasting_give_the_same_results(search, query):
    typed = results(search, query, how="type")
    pasted = results(search, query)
    assert [it["links"] for it in typed] == [it["links"] for it in pasted]


@pytest.mark.parametrize("query", ["Box 是什么", "primitive 的包装", "种子", "反向传播", "局部导数"])
def test_no_single_character_or_stop_word_is_highlighted(search, query):
    items = results(search, query)
    marks = [m.strip() for it in items for m in it["marks"]]
    assert marks, items[:1]
    assert [m for m in marks if HAN.match(m) or m in ("是", "的", "什么")] == []
    for it in items:
        for link in it["links"]:
            for term in parse_qs(urlsplit(link).query).get("h", [""])[0].split():
                assert not HAN.match(term), link


def test_the_opened_page_highlights_the_words_not_single_characters(search):
    items = results(search, "Box 是什么")
    search.locator(".md-search-result__item > a").first.click()
    search.wait_for_load_state("load")
    search.wait_for_timeout(500)
    marks = search.eval_on_selector_all("article mark", "els => els.map(e => e.textContent)")
    assert items and marks and {m.lower() for m in marks} == {"box"}, marks[:10]  # the page of Box


# A formula flattened to its text nodes: "v¯=∂L∂v" (a spacing macron, a fraction's parts run together).
FLATTENED = re.compile(r"\u00af|∂\w+∂")


@pytest.mark.parametrize("query", ["cotangent", "反向累积", "伴随恒等式", "雅可比"])
def test_teasers_carry_formulas_as_linear_text_never_flattened(search, query):
    text = " ".join(it["text"] for it in results(search, query))
    assert text and not FLATTENED.search(text), text[:300]


def test_inline_code_in_the_results_looks_like_code(search):
    results(search, "add_outgrads")
    style = search.evaluate(
        """() => {
          const c = document.querySelector('.md-search-result c');
          const s = c && getComputedStyle(c);
          const probe = document.createElement('code');
          document.querySelector('.md-search-result__list').appendChild(probe);
          const want = getComputedStyle(probe).fontFamily;
          probe.remove();
          return s && {font: s.fontFamily, want, bg: s.backgroundColor, display: s.display};
        }"""
    )
    assert style and style["font"] == style["want"] and style["display"] == "inline", style
    assert style["bg"] not in ("rgba(0, 0, 0, 0)", "transparent"), style


BUDGET = 800 * 1024  # bytes of search/search_index.json (docs/dev/performance.md)


def test_the_index_is_within_budget_utf8_and_defines_the_glossary_terms(built_site, pinned_root):
    raw = (built_site / "search" / "search_index.json").read_bytes()
    assert len(raw) <= BUDGET, f"{len(raw) / 1024:.0f} KiB"
    index = json.loads(raw)
    assert b"\\u" not in raw.split(b'"docs"')[1]  # written as UTF-8
    assert index["config"]["fields"]["defines"] == {"boost": 1000.0}
    assert "stopWordFilter" in index["config"]["pipeline"]
    by = {d["location"]: d for d in index["docs"]}
    assert {"盒子", "Box"} <= set(by["lessons/04-tracer-and-box/#box"]["defines"])
    assert {"盒子", "Box", "ArrayBox"} <= set(by["glossary/#tracing"]["defines"])
    assert {"closure", "闭包"} <= set(by["glossary/#spelling"]["defines"])
    text = "".join(d["title"] + d["text"] for d in index["docs"])
    assert not FLATTENED.search(text) and "<code>" not in text.replace("<pre><code>", "")
    # a formula is in the index as one line of text, so a teaser has no gap where it stood
    assert "结果是 2x=6。" in by["lessons/05-reverse-mode/#goal"]["text"].replace("\u200b", "")
    assert not [d for d in index["docs"] if d["location"].startswith(("symbols/", "code/"))]
    # under source/: the browser's index page, then one entry per Python file and one per symbol, no text
    symbols = [d for d in index["docs"] if d["location"].startswith("source/") and d["location"] != "source/"]
    assert {d["text"] for d in symbols} == {""} and len(symbols) > 300
    line = definition_line(pinned_root, "autograd/util.py", "toposort")
    assert by["source/autograd/util.py/"]["title"] == "autograd.util"
    assert by[f"source/autograd/util.py/#L{line}"]["title"] == "toposort"
    assert by[f"source/autograd/util.py/#L{line}"]["boost"] >= 1
    assert "def watched_toposort" not in text  # a folded experiment script (lesson 05)
    # a quiz's folded answer (lesson 13) is on the page, not in the index (a teaser would show it)
    answer = "setting an array element with a sequence."
    assert answer in (built_site / "lessons" / "13-custom-primitive" / "index.html").read_text(encoding="utf-8")
    assert answer not in text and "参考答案 <p>" not in text
    # the whole excerpt of backward_pass (core.py L25–L32), quoted on more than one page, is indexed
    # once (the authoring guide's elided example and its Markdown source are other blocks)
    lines = (pinned_root / "autograd" / "core.py").read_text(encoding="utf-8").split("\n")[24:32]
    whole = "<pre><code>" + escape("\n".join(lines) + "\n", quote=False) + "</code></pre>"
    assert lines[0].startswith("def backward_pass(") and text.count(whole) == 1
    meta = "<code>autograd/core.py</code> · <code>backward_pass</code> · <code>f53a217</code> · L25–L32"
    quoted = [p for p in built_site.glob("**/index.html") if meta in p.read_text(encoding="utf-8")]
    assert len(quoted) >= 2, quoted  # lesson 05 and the authoring guide
