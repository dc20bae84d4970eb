"""Catalogue: annotation blocks in Markdown structures: processed where Markdown shows a fenced block, nowhere else.

A block is processed exactly where Markdown (with pymdownx.superfences) shows a fenced
block, and nowhere else: inside an indented code block or an HTML comment it is text
that Markdown does not render as a block, so it is ignored; an annotation block that an
unclosed ordinary fence would swallow is reported. Every message is the exact
``path:line: message — hint``, the same in ``verify``, in the build log and in the box
on the page.
"""

from __future__ import annotations

import json
import re
from html import unescape

import pytest
from support import block

from lessonkit.kinds import KINDS
from lessonkit.pipeline.parse import parse_page

pytestmark = pytest.mark.warm_cache  # the builds' subject is not the cache: start from a warm one

SRC = ("File: autograd/core.py", "Symbol: backward_pass", "Commit: f53a217")
GOOD = block("real-source", *SRC)
BAD_COMMIT = block("real-source", "File: autograd/core.py", "Symbol: backward_pass", "Commit: 1234567")
COMMIT_MSG = (
    "`Commit: 1234567` is not the pinned commit — this site is pinned to f53a217 "
    "(f53a21734fdfae636f448744d9097d8d35a643a0)"
)


def indent(text: str, n: int) -> str:
    return "\n".join((" " * n + l) if l else l for l in text.split("\n"))


def quote(text: str, marker: str) -> str:
    """``text`` inside a blockquote: every line starts with ``marker`` (an empty line with the bare ``>``)."""
    return "\n".join((marker + l) if l else marker.rstrip() for l in text.rstrip("\n").split("\n")) + "\n"


# name -> (page text, the blocks parse finds, exact problems)
CASES: dict[str, tuple[str, list[str], list[str]]] = {
    "attr list with spaces": ("# t\n\n" + GOOD.replace("```real-source", "``` { .real-source }"), ["real-source"], []),
    "attr list without spaces": ("# t\n\n" + GOOD.replace("```real-source", "```{.real-source}"), ["real-source"], []),
    "attr list with an id": (
        "# t\n\n" + GOOD.replace("```real-source", "```{ .real-source #mine }"),
        ["real-source"],
        [],
    ),
    "attr list, bad block is reported": (
        "# t\n\n" + block("{ .real-source }", "File: autograd/core.py", "Commit: f53a217", "Which: 2"),
        [],
        ["docs/a.md:6: `Which` without `Symbol` — `Which` picks one of several definitions of the Symbol's name"],
    ),
    "tilde fence": ("# t\n\n" + GOOD.replace("```", "~~~"), ["real-source"], []),
    "after an unclosed plain fence": (
        "# t\n\n```\nplain code\n\n" + GOOD + "\nmore\n",
        [],
        [
            "docs/a.md:6: real-source block inside the code fence opened on line 3, which is never closed before it — "
            "close that fence with a line ``` before this block"
        ],
    ),
    # an annotation block left open: the next block's closing fence closes it (one line, at the
    # block left open, instead of a problem of its header or body made of the page after it)
    "an unclosed block before another": (
        "# t\n\n```real-source\nFile: autograd/core.py\nSymbol: backward_pass\n\nprose\n\n" + GOOD + "\nafter\n",
        [],
        [
            "docs/a.md:3: unclosed real-source block: the real-source block on line 9 opens inside it, and that "
            "block's closing ``` closes this one — close this block with a line ``` before line 9"
        ],
    ),
    "an unclosed block in a blockquote before another": (
        "# t\n\n" + quote("```experiment\nPurpose: p\n\nprint(1)\n\n" + GOOD, "> "),
        [],
        [
            "docs/a.md:3: unclosed experiment block: the real-source block on line 8 opens inside it, and that "
            "block's closing ``` closes this one — close this block with a line ``` before line 8"
        ],
    ),
    "a longer fence quoting a block is closed": (
        "# t\n\n````teaching-simplification\nTitle: t\n\n" + GOOD + "````\n",
        ["teaching-simplification"],
        [],
    ),
    "after a closed plain fence": ("# t\n\n```\nplain\n```\n\n" + GOOD, ["real-source"], []),
    "example inside a longer fence": ("# t\n\n````markdown\n" + GOOD + "````\n", [], []),
    "inside an indented code block": ("# t\n\ntext\n\n" + indent(BAD_COMMIT, 4) + "\nafter\n", [], []),
    "inside an indented code block after code": ("# t\n\n    x = 1\n" + indent(BAD_COMMIT, 4), [], []),
    "indented code inside an admonition": ("# t\n\n!!! note\n\n" + indent(BAD_COMMIT, 8), [], []),
    "inside a list item (not code)": ("# t\n\n- item\n\n" + indent(GOOD, 4), ["real-source"], []),
    "inside an admonition (not code)": ("# t\n\n!!! note\n\n" + indent(GOOD, 4), ["real-source"], []),
    "lazy continuation of a paragraph": ("# t\ntext\n" + indent(GOOD, 4), ["real-source"], []),
    "inside an HTML comment": ("# t\n\n<!--\n" + BAD_COMMIT + "-->\n\nafter\n", [], []),
    "inside a one-line-opened comment": ("# t\n\ntext <!-- note\n" + BAD_COMMIT + "end -->\n", [], []),
    "after an HTML comment": ("# t\n\n<!-- a comment -->\n\n" + GOOD, ["real-source"], []),
    "header-line error": ("# t\n\n" + BAD_COMMIT, ["real-source"], [f"docs/a.md:6: {COMMIT_MSG}"]),
    # blockquotes: SuperFences renders a fence there, so the block is processed there
    "in a blockquote": ("# t\n\n" + quote(GOOD, "> "), ["real-source"], []),
    "in a blockquote without spaces": ("# t\n\n" + quote(GOOD, ">"), ["real-source"], []),
    "in a nested blockquote": ("# t\n\n" + quote(GOOD, "> > "), ["real-source"], []),
    "in a blockquote in a list item": ("# t\n\n- item\n\n" + quote(GOOD, "    > "), ["real-source"], []),
    "in a blockquote, with a body": (
        "# t\n\n" + quote(block("real-source", *SRC[:1], SRC[2], body="for node in toposort(end_node):"), "> "),
        ["real-source"],
        [],
    ),
    "in a blockquote, header error at its line": (
        "# t\n\n" + quote(BAD_COMMIT, "> "),
        ["real-source"],
        [f"docs/a.md:6: {COMMIT_MSG}"],
    ),
    "in a blockquote, a line without >": (
        "# t\n\n> ```real-source\nFile: autograd/core.py\n> ```\n",
        [],
        [
            "docs/a.md:4: this line of the real-source block opened on line 3 does not start with `>`: "
            "Markdown ends the blockquote, and the block, here — "
            "start every line of a block in a blockquote with `>`, as its first line"
        ],
    ),
    # footnotes and definitions: their content is indented by 4, and fences render there
    "in a footnote": ("# t\n\ntext[^1]\n\n[^1]: note\n\n" + indent(GOOD, 4), ["real-source"], []),
    "in a definition": ("# t\n\nterm\n\n:   meaning\n\n" + indent(GOOD, 4), ["real-source"], []),
    "code in a footnote stays code": ("# t\n\n[^1]: note\n\n" + indent(BAD_COMMIT, 8), [], []),
    # where Markdown does not open a block: reported, and the page goes on after it
    "on the line of a list marker": (
        "# t\n\n- " + indent(BAD_COMMIT, 2)[2:] + "\n" + GOOD,
        ["real-source"],
        [
            "docs/a.md:3: real-source block after `-` on the same line: Markdown shows it as inline code, not as a "
            "block — put the fence on a line of its own under it, indented by 4 spaces"
        ],
    ),
    "on the line of a footnote label": (
        "# t\n\n[^1]: " + indent(BAD_COMMIT, 4)[4:] + "\n" + GOOD,
        ["real-source"],
        [
            "docs/a.md:3: real-source block after `[^1]:` on the same line: Markdown shows it as inline code, not "
            "as a block — put the fence on a line of its own under it, indented by 4 spaces"
        ],
    ),
    "in a table row": (
        "# t\n\n| a | b |\n|---|---|\n| ```real-source | x |\n\n" + GOOD,
        ["real-source"],
        [
            "docs/a.md:5: real-source block in a table row: Markdown shows it as inline code, not as a block — "
            "a table cell cannot hold a block: put the block before or after the table"
        ],
    ),
    "after text": (
        "# t\n\nsee ```real-source\nFile: autograd/core.py\n```\n\n" + GOOD,
        ["real-source"],
        [
            "docs/a.md:3: real-source block after text on the same line: Markdown shows it as inline code, not as a "
            "block — start the fence on a line of its own"
        ],
    ),
    "named in a code span in prose": (
        "# t\n\nwrite ```` ```real-source ```` to open one\n\n" + GOOD,
        ["real-source"],
        [],
    ),
    # a comment opener in a code span is text: the blocks after it are found
    "comment opener in a code span": (
        "# t\n\nwrite `<!--` to start a comment\n\n" + BAD_COMMIT,
        ["real-source"],
        [f"docs/a.md:8: {COMMIT_MSG}"],
    ),
    "comment opener in a double code span": ("# t\n\n``a <!-- b``\n\n" + GOOD, ["real-source"], []),
    "comment after a code span": ("# t\n\n`x` <!-- open\n" + BAD_COMMIT + "-->\n", [], []),
}


@pytest.mark.parametrize("name", list(CASES))
def test_markdown_structure(name, site):
    text, kinds, problems = CASES[name]
    page = parse_page(text, "docs/a.md", kinds=KINDS)
    assert [b.kind for b in page.blocks] == kinds
    site.page("a.md", text)
    assert site.problems() == problems


def test_header_line_error_pins_the_same_message_everywhere(site):
    """verify, the build log and the box on the page say the same thing at the same line,
    also after YAML front matter (the page's line numbers are the file's)."""
    site.page("a.md", "---\ntitle: t\n---\n\n# t\n\n" + BAD_COMMIT)
    want = f"docs/a.md:10: {COMMIT_MSG}"
    assert site.problems() == [want]
    v = site.verify()
    assert v.returncode == 1 and want in v.stderr.split("\n")
    b = site.build()
    assert b.returncode == 1
    assert f"ERROR   -  {want}" in b.stderr.split("\n")
    html = (site.root / "site" / "a" / "index.html").read_text(encoding="utf-8")
    box = re.search(r'<div class="lk-block lk-error"[^>]*>(.*?)</div>', html, re.S)[1]
    assert [unescape(x) for x in re.findall(r"<li><code>(.*?)</code></li>", box)] == [want]


def test_ignored_blocks_are_shown_as_markdown_shows_them_and_stay_out_of_search(site):
    secret = "Commit: 7654321"
    cfg = site.root / "mkdocs.yml"
    cfg.write_text(cfg.read_text().replace("plugins: []", "plugins:\n  - search"))
    site.page(
        "a.md",
        "# t\n\ntext\n\n"
        + indent(block("real-source", "File: autograd/core.py", secret), 4)
        + "\n<!--\n"
        + block("real-source", "File: nothing.py", "Commit: 1111111")
        + "-->\n\n"
        + GOOD,
    )
    b = site.build()
    assert b.returncode == 0, b.stderr
    html = (site.root / "site" / "a" / "index.html").read_text(encoding="utf-8")
    assert f"<code>```real-source\nFile: autograd/core.py\n{secret}\n```\n</code></pre>" in html
    assert html.count("lk-block lk-real-source") == 1
    index = json.loads((site.root / "site" / "search" / "search_index.json").read_text(encoding="utf-8"))
    text = " ".join(d["text"] for d in index["docs"] if d["location"].startswith("a/"))
    assert "nothing.py" not in text and "1111111" not in text


def test_blocks_in_blockquotes_footnotes_and_definitions_are_rendered_in_place(site):
    """Each block is drawn where Markdown draws a fenced block: inside the blockquote, the footnote
    and the definition (not as raw headers, not beside them)."""
    cfg = site.root / "mkdocs.yml"
    cfg.write_text(cfg.read_text().replace("  - tables\n", "  - tables\n  - footnotes\n  - def_list\n"))
    teach = block("teaching-simplification", body="x = 1")
    site.page(
        "a.md",
        "# t\n\n> before\n>\n"
        + quote(GOOD, "> ")
        + ">\n> after\n\n"
        + "text[^1]\n\n[^1]: note\n\n"
        + indent(teach, 4)
        + "\n"
        + "term\n\n:   meaning\n\n"
        + indent(teach.replace("x = 1", "y = 2"), 4)
        + "\n",
    )
    b = site.build()
    assert b.returncode == 0, b.stderr[-3000:]
    html = (site.root / "site" / "a" / "index.html").read_text(encoding="utf-8")
    quoted = re.search(r"<blockquote>(.*?)</blockquote>", html, re.S)[1]
    assert re.fullmatch(
        r'\s*<p>before</p>\s*<div class="lk-block lk-real-source".*</div>\s*<p>after</p>\s*', quoted, re.S
    )
    note = re.search(r'<li id="fn:1">(.*?)</li>', html, re.S)[1]
    assert note.count("lk-block lk-teaching") == 1 and "x" in unescape(re.sub(r"<[^>]+>", "", note))
    assert re.search(r"<dd>.*?lk-block lk-teaching.*?</dd>", html, re.S)
    assert "File: autograd/core.py" not in html  # no raw header anywhere


# ---------------------------------------------------------------- active content and badges as labels

ACTIVE_HINT = "remove it: a page shows code, output and figures through annotation blocks, which the build checks"
RUNS = "which runs code in the reader's browser"
EMBEDS = "which embeds another document in the page (nothing checks what it shows)"
LABEL = (
    'prose shows the engine\'s badge "真实源码 REAL SOURCE" as a label, as if an engine block followed — write the '
    "annotation block instead; to name a kind of block, write its badge inside a sentence or in quotes (「…」)"
)
# name -> (the page after its title line and a blank line, exact problems; the page's line 3 is the first)
ACTIVE: dict[str, tuple[str, list[str]]] = {
    "script": (
        "文字\n\n<script>document.title = 1</script>\n",
        [f"docs/a.md:5: raw HTML has a <script> element, {RUNS}"],
    ),
    "script inside an SVG": (
        "<svg><script>x()</script></svg>\n",
        [f"docs/a.md:3: raw HTML has a <script> element, {RUNS}"],
    ),
    "event attribute on the next line of its tag": (
        "文字 <img src=x\n  onerror=alert(1)> 后面\n",
        [f"docs/a.md:4: raw HTML has an event attribute `onerror`, {RUNS}"],
    ),
    "event attribute after a slash": (
        "<b/onmouseover=x()>b</b>\n",
        [f"docs/a.md:3: raw HTML has an event attribute `onmouseover`, {RUNS}"],
    ),
    "iframe with a data URL": (
        '<iframe src="data:text/html;base64,PGI+">\n</iframe>\n',
        [f"docs/a.md:3: raw HTML has a <iframe> element, {EMBEDS}"],
    ),
    "object and embed": (
        "<object data=x.svg></object>\n\n<EMBED src=x.svg>\n",
        [
            f"docs/a.md:3: raw HTML has a <object> element, {EMBEDS}",
            f"docs/a.md:5: raw HTML has a <embed> element, {EMBEDS}",
        ],
    ),
    "javascript href, entity-encoded with a tab": (
        '<a href="java&#x09;script:alert(1)">a</a>\n',
        [f"docs/a.md:3: raw HTML has a `javascript:` URL in `href`, {RUNS}"],
    ),
    "data URL in an image": (
        '<img src=" data:image/svg+xml;base64,PHN2Zz4=">\n',
        ["docs/a.md:3: raw HTML has a `data:` URL in `src`, which shows content that nothing checks"],
    ),
    "style attribute": (
        '<span style="position:absolute;top:0">x</span>\n',
        ["docs/a.md:3: raw HTML has a `style` attribute, which can hide text or draw other text over a block"],
    ),
    "style element": (
        "<style>.lk-real-source code { display: none }</style>\n",
        [
            "docs/a.md:3: raw HTML has a <style> element, which restyles the page (it can hide text or draw other "
            "text over a block)"
        ],
    ),
    "base and meta refresh": (
        '<base href="https://example.org/">\n<meta http-equiv="refresh" content="0">\n',
        [
            "docs/a.md:3: raw HTML has a <base> element, which changes where every link and resource of the page "
            "points",
            "docs/a.md:4: raw HTML has a <meta> element, which can reload or redirect the page",
        ],
    ),
    "Markdown link to javascript, entity-encoded": (
        "[点我](&#106;avascript:alert(1))\n",
        [f"docs/a.md:3: a Markdown link or image to a `javascript:` URL, {RUNS}"],
    ),
    "Markdown image of a data URL": (
        "![图](data:image/svg+xml;base64,PHN2Zz4=)\n",
        ["docs/a.md:3: a Markdown link or image to a `data:` URL, which shows content that nothing checks"],
    ),
    "reference definition": (
        "[x][r]\n\n[r]: vbscript:msgbox\n",
        [f"docs/a.md:5: a Markdown link or image to a `vbscript:` URL, {RUNS}"],
    ),
    "attribute list": (
        '一段话\n{: onclick="x()" }\n',
        [f"docs/a.md:4: an attribute list `{{: … }}` sets an event attribute `onclick`, {RUNS}"],
    ),
    "attribute list with a style": (
        "## 标题 { style='display:none' }\n",
        [
            "docs/a.md:3: an attribute list `{: … }` sets a `style` attribute, which can hide text or draw other "
            "text over a block"
        ],
    ),
    "after a one-line comment": (
        "<!-- x --> <script>y()</script>\n",
        [f"docs/a.md:3: raw HTML has a <script> element, {RUNS}"],
    ),
    "after a comment that closes": (
        "<!--\nnote\n--> <embed src=x>\n",
        [f"docs/a.md:5: raw HTML has a <embed> element, {EMBEDS}"],
    ),
    "before a comment that stays open": (
        "<object data=x></object> <!-- open\n-->\n",
        [f"docs/a.md:3: raw HTML has a <object> element, {EMBEDS}"],
    ),
    "in a code span, a fence, indented code and a comment: text": (
        "写 `<script>` 或 `<b onclick=x>` 都只是文字\n\n```html\n<script>x()</script>\n```\n\n"
        "    <iframe src=x>\n\n<!-- <script>x()</script> -->\n",
        [],
    ),
    "a code span over two lines of a paragraph: text": ("写成 `<script>\nalert(1)</script>` 也只是文字\n", []),
    "ordinary links, images and attributes": (
        '[a](https://example.org) ![b](img.png) <a href="#x" title="data: 1">c</a> <b class="note">d</b>\n'
        "段落 {: #mine .wide title=t }\n",
        [],
    ),
    # badges written as Markdown: the label of a block without the block
    "badge in bold over a code fence": (
        "**真实源码 REAL SOURCE** `autograd/core.py` · `backward_pass`\n\n```python\nx = 1\n```\n",
        [f"docs/a.md:3: {LABEL}"],
    ),
    "badge as a heading": ("### 真实源码 REAL SOURCE\n", [f"docs/a.md:3: {LABEL}"]),
    "badge as a list item and a table cell": (
        "- 真实源码 REAL SOURCE：x\n\n| 种类 | 说明 |\n|---|---|\n| a | _真实源码 REAL SOURCE_ |\n",
        [f"docs/a.md:3: {LABEL}", f"docs/a.md:7: {LABEL}"],
    ),
    "badge as an admonition title": ('!!! note "真实源码 REAL SOURCE"\n\n    x\n', [f"docs/a.md:3: {LABEL}"]),
    "admonition of an engine type": (
        '!!! lk-real-source "源码"\n\n    ```python\n    x = 1\n    ```\n',
        [
            "docs/a.md:3: an admonition of type `lk-real-source` uses the engine class lk-real-source — write a "
            "real-source block instead"
        ],
    ),
    "badge inside a sentence, in quotes or in code: prose": (
        "带「真实源码 REAL SOURCE」标记的块逐字来自固定版本；写法见 `真实源码 REAL SOURCE`。\n"
        "[真实源码 REAL SOURCE] 是它的徽标。\n",
        [],
    ),
}


@pytest.mark.parametrize("name", list(ACTIVE))
def test_active_content_and_badges_as_labels_are_located_errors(name, site):
    text, problems = ACTIVE[name]
    site.page("a.md", "# t\n\n" + text)
    hinted = [p if " — " in p else f"{p} — {ACTIVE_HINT}" for p in problems]
    assert site.problems() == hinted


FAKE = (
    '<div class="lk-block lk-real-source"><span class="lk-badge lk-badge-real">真实源码 REAL SOURCE</span>'
    "<code>outgrads = {end_node: (g, True)}</code></div>"
)


def test_what_figures_and_snapshots_show_as_markdown_is_checked_as_prose(site):
    """A figure's caption, a snapshot's title and its cells are Markdown on the page: an imitation, a
    badge as a label or active content there is a located error at its line, as in prose."""
    site.script("g.py", 'from _record import record\nrecord.set("g", 7.0)\n')
    site.page(
        "a.md",
        "# t\n\n"
        + block("figure", "Experiment: experiments/g.py", "Graph: g", f"Caption: 图注 {FAKE}")
        + "\n"
        + block(
            "snapshot",
            "Experiment: experiments/g.py",
            'Title: <span class="lk-badge lk-badge-real">真实源码 REAL SOURCE</span> 标题',
            body="对象 | 值\ng | @g\n说明 | <img src=x onerror=alert(1)>\n真实源码 REAL SOURCE | x\n",
        ),
    )
    assert site.problems() == [
        "docs/a.md:6: raw HTML uses the engine class lk-block — write a real-source block instead",
        "docs/a.md:11: raw HTML uses the engine class lk-badge — write a real-source block instead",
        f"docs/a.md:15: raw HTML has an event attribute `onerror`, {RUNS} — {ACTIVE_HINT}",
        f"docs/a.md:16: {LABEL}",
    ]
