"""The search index lessonkit rewrites after Material's search plugin (lessonkit.site.search):
the tokens the browser indexes stay the same, repeated blocks go, the glossary's terms land on
the sections that define them, and the bytes are the same on every run."""

from __future__ import annotations

import json
import re
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import ROOT

from lessonkit.errors import LessonError
from lessonkit.site import search

pytestmark = pytest.mark.warm_cache  # the builds' subject is not the cache: start from a warm one

# The project's separator, as mkdocs.yml writes it (a YAML single-quoted string: '' is one ').
SEPARATOR = re.search(r"^\s*separator: '(.*)'$", (ROOT / "mkdocs.yml").read_text(encoding="utf-8"), re.M)[1]
SEPARATOR = SEPARATOR.replace("''", "'")
SEP = re.compile(SEPARATOR)


def client_tokens(html: str, sep: re.Pattern = SEP) -> list[str]:
    """What Material's client indexes from one field (its ``tokenize``): the text between tags,
    split at the separator, lower-cased."""
    out = []
    for section in re.split(r"<[^>]*>", html):
        out += [t.lower() for t in sep.split(section) if t]
    return out


def segmented(text: str) -> str:
    """``text`` as Material's search plugin stores it (jieba, zero-width spaces around words)."""
    from material.plugins.search.plugin import SearchIndex

    return SearchIndex()._segment_chinese(text)


SAMPLES = [
    "<p>调用 <code>vjp(g)</code> 这一步：每次被记录的 primitive 调用都会新建一个 <code>VJPNode</code>。</p>",
    "<p>Box的值（value）与trace编号，HIPS/autograd 的实现「直接而且小」。</p>",
    "<li>第 26 行：<code>outgrads</code>是一个以节点对象为键的字典</li>",
    "<pre><code>def f(x):\n    return x * x  # 中文注释\n</code></pre>",
    "&lt;locals&gt;里的闭包&amp;函数",
    "反向传播（backpropagation）从种子开始",
]


@pytest.mark.parametrize("html", SAMPLES)
def test_compaction_keeps_the_tokens_and_the_text_shown(html):
    before = segmented(html)
    assert search.ZWSP in before
    after = search.compact_text(before, SEP)
    assert client_tokens(after) == client_tokens(before)
    assert after.replace(search.ZWSP, "") == before.replace(search.ZWSP, "")  # what a reader sees
    assert len(after) < len(before)


def test_a_zero_width_space_stays_only_between_two_words():
    assert (
        search.compact_text("\u200b反向\u200b传播\u200b：\u200bBox\u200b是\u200b", SEP) == "反向\u200b传播：Box\u200b是"
    )
    assert search.compact_text("中\u200b\u200b文 \u200bx", SEP) == "中\u200b文 x"
    assert search.compact_text("no zero-width space", SEP) == "no zero-width space"


ALPHABET = st.sampled_from(list("反向传播的是梯度节点 ，。（）「」:=-_/abcXY01<>&;\u3000\n") + ["\u200b"])


@settings(max_examples=150, deadline=None)
@given(st.lists(ALPHABET, max_size=40).map("".join))
def test_compaction_never_changes_what_the_client_indexes(text):
    for value in (text, segmented(text)):
        after = search.compact_text(value, SEP)
        assert client_tokens(after) == client_tokens(value), repr(value)


def test_a_separator_that_python_reads_wider_is_not_trusted():
    assert search.separator({"separator": SEPARATOR}) is not None
    assert search.separator({"separator": r"[\s\-]+"}) is None  # U+200B is no separator there
    assert search.separator({"separator": r"[\s\u200b]+|(?=[A-Z])"}) is None  # a lookahead
    assert search.separator({"separator": r"[\S\u200b]+"}) is None
    assert search.separator({"separator": "[\u200b"}) is None  # not a pattern
    text = "中\u200b文"
    assert search.compact({"config": {"separator": r"[\s]+"}, "docs": [{"text": text}]})["docs"][0]["text"] == text


def test_inline_code_is_written_short_and_code_blocks_stay():
    data = {
        "config": {},
        "docs": [
            {"location": "a/", "title": "<code>grad</code>", "text": "<p><code>x</code></p><pre><code>y\n</code></pre>"}
        ],
    }
    doc = search.compact(data)["docs"][0]
    assert doc == {"location": "a/", "title": "<c>grad</c>", "text": "<p><c>x</c></p><pre><code>y\n</code></pre>"}
    assert client_tokens(doc["text"]) == ["x", "y"]


GLOSSARY = textwrap.dedent(
    """\
    # 术语表

    ## 两种模式 {#modes}

    | 中文 | English | 定义 | 首次介绍 |
    |---|---|---|---|
    | 有限差分 / 数值微分 | finite differences | 差商。 | [01 · 差分](lessons/01.md#fd)；另见 [12](lessons/12.md#fd) |
    | 节点 | node（`VJPNode` / `JVPNode`） | 图上的记录，`a \\| b`。 | [05](lessons/05.md#inside) |
    | 盒子 | Box | 包装。 | [04](lessons/04.md) |

    ## 写法 约定

    | 正文写法 | 不用的写法 | 说明 |
    |---|---|---|
    | closure | 闭包 | 见上。 |

    | 文件 | 用途 |
    |---|---|
    | core.py | 引擎 |
    """
)
COLUMNS = ("中文", "English", "正文写法", "不用的写法")


def test_glossary_rows_name_their_terms_section_and_first_link():
    rows = search.glossary_rows(GLOSSARY, COLUMNS, "首次介绍")
    assert [(r.terms, r.section_id, r.section_title, r.link, r.line) for r in rows] == [
        (("有限差分", "数值微分", "finite differences"), "modes", "两种模式", "lessons/01.md#fd", 7),
        (("节点", "node", "VJPNode", "JVPNode"), "modes", "两种模式", "lessons/05.md#inside", 8),
        (("盒子", "Box"), "modes", "两种模式", "lessons/04.md", 9),
        (("closure", "闭包"), None, "写法 约定", None, 15),
    ]


def test_defining_sections_are_the_glossary_section_and_the_introducing_one():
    rows = search.glossary_rows(GLOSSARY, COLUMNS, "首次介绍")
    docs = [
        {"location": "glossary/", "title": "术语表", "text": ""},
        {"location": "glossary/#modes", "title": "两种\u200b模式", "text": ""},
        {"location": "glossary/#_2", "title": "写法\u200b 约定", "text": ""},
        {"location": "lessons/01/", "title": "01", "text": ""},
        {"location": "lessons/01/#fd", "title": "数值微分", "text": ""},
        {"location": "lessons/05/", "title": "05", "text": ""},
        {"location": "lessons/05/#vjpnode", "title": "VJPNode", "text": ""},
        {"location": "lessons/04/", "title": "04", "text": ""},
    ]
    urls = {
        "glossary.md": "glossary/",
        "lessons/01.md": "lessons/01/",
        "lessons/05.md": "lessons/05/",
        "lessons/04.md": "lessons/04/",
    }
    pages = {"lessons/05/": '<h1 id="t">05</h1><h2 id="vjpnode">VJPNode</h2><p>..</p><div id="inside"></div>'}
    terms = search.defined_terms(rows, docs, "glossary.md", urls, pages.get)
    assert terms == {
        "glossary/#modes": [
            "有限差分",
            "数值微分",
            "finite differences",
            "节点",
            "node",
            "VJPNode",
            "JVPNode",
            "盒子",
            "Box",
        ],
        "lessons/01/#fd": ["有限差分", "数值微分", "finite differences"],
        "lessons/05/#vjpnode": ["节点", "node", "VJPNode", "JVPNode"],  # the section around the anchor
        "lessons/04/": ["盒子", "Box"],
        "glossary/#_2": ["closure", "闭包"],  # a heading without {#id}: found by its title
    }
    data = {"config": {"fields": {"title": {"boost": 1000.0}}}, "docs": docs}
    search.add_terms(data, terms)
    assert data["config"]["fields"]["defines"] == {"boost": search.DEFINES_BOOST}
    assert docs[6]["defines"] == ["节点", "node", "VJPNode", "JVPNode"] and "defines" not in docs[0]
    data["config"]["fields"]["defines"] = {"boost": 5.0}  # the site's own setting wins
    search.add_terms(data, terms)
    assert data["config"]["fields"]["defines"] == {"boost": 5.0}
    assert docs[6]["defines"] == ["节点", "node", "VJPNode", "JVPNode"]  # added once


def test_a_block_an_earlier_page_of_the_navigation_holds_is_dropped():
    code = "<pre><code>" + "def backward_pass(g, end_node):\n" * 4 + "</code></pre>"
    para = "<p>" + "这一段在两页里逐字出现。" * 8 + "</p>"
    short = "<pre><code>primitive_vjps = {}\n</code></pre>"
    docs = [
        {"location": "walkthrough/#a", "title": "w", "text": f"<p>w</p> {code} {short}"},
        {
            "location": "lessons/03/#b",
            "title": "b",
            "text": f"{code} {para} <ul><li>x<ul><li>{para[3:-4]}</li></ul></li></ul>",
        },
        {"location": "lessons/05/#c", "title": "c", "text": f"<p>own</p> {code} {para} {short}"},
    ]
    search.drop_repeats(docs, ["lessons/03/", "lessons/05/"])
    assert docs[1]["text"].startswith(code)  # the first page of the navigation keeps it
    assert docs[2]["text"] == f"<p>own</p> {short}"
    assert docs[0]["text"] == f"<p>w</p> {short}"  # not in the navigation: after it
    assert "<ul><li>x<ul><li>" in docs[1]["text"]  # a list item is never cut across its nested list


def test_closed_details_are_marked_out_of_the_index_and_open_ones_stay():
    html = (
        '<p>问题</p><details class="tip"><summary>提示</summary><p>先想</p></details>'
        '<details class="success" open="open"><summary>展开的</summary></details>'
        '<details open><summary>也展开</summary></details>'
        '<details class="lk-script" data-search-exclude="chrome"><summary>脚本</summary></details>'
        "<details><summary>答案</summary></details>"
        "<p><code>&lt;details&gt;</code> 是文字</p>"
    )
    assert search.fold_out(html) == (
        '<p>问题</p><details class="tip" data-search-exclude="folded"><summary>提示</summary><p>先想</p></details>'
        '<details class="success" open="open"><summary>展开的</summary></details>'
        '<details open><summary>也展开</summary></details>'
        '<details class="lk-script" data-search-exclude="chrome"><summary>脚本</summary></details>'
        '<details data-search-exclude="folded"><summary>答案</summary></details>'
        "<p><code>&lt;details&gt;</code> 是文字</p>"
    )
    assert search.fold_out("<p>没有折叠块</p>") == "<p>没有折叠块</p>"


def test_only_details_elements_a_browser_builds_are_marked():
    """`<details` inside an attribute value, a comment or a raw-text element is text: marking it would
    end the attribute early and turn the rest of the value into markup."""
    title = '<p><a title="<details x><img src=x onerror=alert(1)>">t</a></p>'
    assert search.fold_out(title) == title
    html = (
        '<!-- <details> --><details title="a>b"><summary>s</summary></details>'
        "<textarea><details></textarea><details><summary>答案</summary></details>"
    )
    assert search.fold_out(html) == (
        '<!-- <details> --><details title="a>b"><summary>s</summary></details>'  # its `>` is in a value: kept
        '<textarea><details></textarea><details data-search-exclude="folded"><summary>答案</summary></details>'
    )


def test_the_section_around_an_anchor_is_read_from_the_document():
    page = (
        '<h2 id="one">一</h2><p title=\'<h2 id="fake">\'>x</p><!-- <h2 id="two"> -->'
        '<p><a id="term"></a>词</p><h2 id="three">三</h2>'
    )
    locations = {"g/", "g/#one", "g/#fake", "g/#two", "g/#three"}
    assert search.section_of("g/#term", locations, page) == "g/#one"
    assert search.section_of("g/#nothing", locations, page) == "g/"


def _index(tmp_path, docs, separator=SEPARATOR):
    path = tmp_path / "search_index.json"
    data = {"config": {"lang": ["zh"], "separator": separator, "pipeline": ["stemmer"], "fields": {}}, "docs": docs}
    path.write_bytes(json.dumps(data, separators=(",", ":"), default=str).encode())  # as Material writes it
    return path


def test_rewrite_writes_utf8_the_same_bytes_every_time_and_is_idempotent(tmp_path):
    docs = [
        {
            "location": "a/",
            "title": "反向\u200b传播",
            "text": "<p>\u200b梯度\u200b只\u200b存在\u200b这里\u200b：<code>outgrads</code>\u200b。</p>",
        }
    ]
    path = _index(tmp_path, docs)
    raw = path.read_bytes()
    assert b"\\u" in raw.split(b'"docs"')[1]
    before, after = search.rewrite(path, lambda d: {"a/": ["反向传播"]}, ["a/"])
    out = path.read_bytes()
    assert (before, after) == (len(raw), len(out)) and after < before
    assert b"\\u" not in out.split(b'"docs"')[1]  # (the separator's own `\\u200b` is a regex)
    assert json.loads(out)["docs"] == [
        {
            "location": "a/",
            "title": "反向\u200b传播",
            "text": "<p>梯度\u200b只\u200b存在\u200b这里：<c>outgrads</c>。</p>",
            "defines": ["反向传播"],
        }
    ]
    search.rewrite(path, lambda d: {"a/": ["反向传播"]}, ["a/"])
    assert path.read_bytes() == out
    path2 = _index(tmp_path, docs)
    search.rewrite(path2, lambda d: {"a/": ["反向传播"]}, ["a/"])
    assert path2.read_bytes() == out


def test_search_table_of_site_toml_is_checked(tmp_path):
    from lessonkit.config import site as siteconfig

    (tmp_path / "sourcemap").mkdir()
    cases = [
        ('[search]\nterms = ["a"]\n', "sourcemap/site.toml:1: `[search]` has no `glossary`"),
        (
            '[search]\nglossary = "glossary.md"\nterms = ["a"]\n',
            "sourcemap/site.toml:2: `glossary` in `[search]` is 'glossary.md', not a page under docs/",
        ),
        (
            '[search]\nglossary = "docs/g.md"\nterms = []\n',
            "sourcemap/site.toml:3: `terms` in `[search]` is not a list of column names",
        ),
        (
            '[search]\nglossary = "docs/g.md"\nterms = ["a"]\nintroduced = " "\n',
            "sourcemap/site.toml:4: `introduced` in `[search]` is empty",
        ),
        ('[search]\nglossary = "docs/g.md"\nterm = ["a"]\n', "sourcemap/site.toml:3: unknown key `term` in `[search]`"),
    ]
    for text, message in cases:
        (tmp_path / "sourcemap" / "site.toml").write_text(text, encoding="utf-8")
        with pytest.raises(LessonError) as err:
            siteconfig.load(tmp_path, "https://github.com/o/p")
        assert str(err.value).split(" — ")[0] == message, text
    (tmp_path / "sourcemap" / "site.toml").write_text(
        '[search]\nglossary = "docs/g.md"\nterms = ["中文"]\nintroduced = "首次介绍"\n', encoding="utf-8"
    )
    conf = siteconfig.load(tmp_path, "https://github.com/o/p")
    assert (conf.glossary, conf.glossary_terms, conf.glossary_introduced) == ("docs/g.md", ("中文",), "首次介绍")


def test_a_build_writes_the_rewritten_index_the_same_way_twice(site):
    """A small series with Material's search and a glossary: the written index is compacted, the
    glossary's term defines its sections, two builds write the same bytes, and a glossary that
    is not a page of the site is one located error."""
    cfg = site.root / "mkdocs.yml"
    cfg.write_text(cfg.read_text().replace("plugins: []", "plugins:\n  - search:\n      lang: zh"))
    site.page(
        "glossary.md", "# 术语\n\n## 引擎 {#engine}\n\n| 中文 | 首次介绍 |\n|---|---|\n| 反向传播 | [一](a.md#why) |\n"
    )
    site.page("a.md", "# 第一篇\n\n## 为什么 {#why}\n\n反向传播从种子开始。\n\n## 然后 {#then}\n\n没有别的。\n")
    toml = site.root / "sourcemap" / "site.toml"
    toml.write_text(
        toml.read_text(encoding="utf-8")
        + '\n[search]\nglossary = "docs/glossary.md"\nterms = ["中文"]\nintroduced = "首次介绍"\n',
        encoding="utf-8",
    )
    first = site.build()
    assert first.returncode == 0, first.stderr[-2000:]
    index = site.root / "site" / "search" / "search_index.json"
    raw = index.read_bytes()
    data = json.loads(raw)
    by = {d["location"]: d for d in data["docs"]}
    assert by["a/#why"]["defines"] == ["反向传播"] and by["glossary/#engine"]["defines"] == ["反向传播"]
    assert "defines" not in by["a/#then"] and data["config"]["fields"]["defines"] == {"boost": search.DEFINES_BOOST}
    assert b"\\u" not in raw.split(b'"docs"')[1]
    assert site.build().returncode == 0
    assert index.read_bytes() == raw
    toml.write_text(toml.read_text(encoding="utf-8").replace("docs/glossary.md", "docs/missing.md"), encoding="utf-8")
    broken = site.build()
    line = toml.read_text(encoding="utf-8").split("\n").index('glossary = "docs/missing.md"') + 1
    assert broken.returncode != 0
    assert (
        f"sourcemap/site.toml:{line}: `glossary` in `[search]` names docs/missing.md, which is not a page of this site"
        in broken.stderr
    )


def test_a_module_is_named_by_its_dotted_path():
    assert search.module_name("autograd/core.py") == "autograd.core"
    assert search.module_name("autograd/numpy/__init__.py") == "autograd.numpy"
    assert search.module_name("tests/test_scipy.py") == "tests.test_scipy"
    assert search.module_name("__init__.py") == "__init__"


def test_each_module_and_symbol_gets_one_entry_and_a_name_outweighs_the_names_that_extend_it():
    lessons = [{"location": f"l{n}/", "title": "defvjp", "text": "<p><c>defvjp</c> grad</p>"} for n in range(40)]
    modules = [
        search.Module("source/a/core.py/", "a.core", (("defvjp_argnums", 55), ("defvjp_argnum", 59), ("defvjp", 67))),
        search.Module("source/a/util.py/", "a.util", (("toposort", 21), ("Box.__init__", 30))),
        search.Module("source/a/none.py/", "a.none", ()),
    ]
    entries = search.symbol_entries(modules, lessons, SEP)
    assert [(e["location"], e["title"], e["text"]) for e in entries] == [
        ("source/a/core.py/", "a.core", ""),
        ("source/a/core.py/#L55", "defvjp_argnums", ""),
        ("source/a/core.py/#L59", "defvjp_argnum", ""),
        ("source/a/core.py/#L67", "defvjp", ""),
        ("source/a/util.py/", "a.util", ""),
        ("source/a/util.py/#L21", "toposort", ""),
        ("source/a/util.py/#L30", "Box.__init__", ""),
        ("source/a/none.py/", "a.none", ""),
    ]
    assert all("boost" not in e for e in entries if "#" not in e["location"])
    every = lessons + entries
    df = search.frequencies(every, SEP)
    assert df["defvjp"] == 40 * 2 + 1 and df["defvjp_argnum"] == 1 and df["box.__init__"] == 1

    def weight(title: str) -> float:  # what Lunr gives the entry for its own name: boost × idf
        e = next(e for e in entries if e["title"] == title)
        return e["boost"] * search.idf(df[title.lower()], len(every))

    # a common name (in every lesson) still outweighs the rare names it begins, each step by a quarter
    assert weight("defvjp") > weight("defvjp_argnum") > weight("defvjp_argnums")
    assert weight("defvjp") / weight("defvjp_argnums") == pytest.approx(1.5, rel=0.1)
    assert weight("toposort") == pytest.approx(weight("defvjp_argnums"), rel=0.1)


def test_rewrite_appends_the_symbol_entries_once(tmp_path):
    docs = [{"location": "a/", "title": "A", "text": "<p>toposort</p>"}]
    path = _index(tmp_path, docs)
    modules = [search.Module("source/u.py/", "u", (("toposort", 3),))]
    search.rewrite(path, None, ["a/"], modules)
    out = json.loads(path.read_bytes())["docs"]
    assert [d["location"] for d in out] == ["a/", "source/u.py/", "source/u.py/#L3"]
    assert out[2]["title"] == "toposort" and isinstance(out[2]["boost"], int) and out[2]["boost"] >= 1
    again = path.read_bytes()
    search.rewrite(path, None, ["a/"], modules)
    assert path.read_bytes() == again  # the entries already there are not added twice
