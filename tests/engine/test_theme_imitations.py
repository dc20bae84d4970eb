"""What imitates the theme or the engine. Ids the theme's scripts find their elements by
(Material's start with `__`: `__config`, whose JSON names the search worker's file, and `__code_…`,
the copy buttons' targets) may not be written in a page, and a built page holds each on one element
only: an element placed before the theme's with the same id is the one its scripts would read (a
forged configuration ran a docs/ file as the search worker; a forged `__code_…` made a real block's
copy button copy other text). A code block may not wear an engine badge as its title."""

from __future__ import annotations

import pytest

from lessonkit.checks.tree import Doc
from lessonkit.pipeline.activehtml import active_html
from lessonkit.site.active import _reserved_ids

WHY = "which the theme's scripts find elements by (its configuration, the copy buttons' targets)"


@pytest.mark.parametrize(
    "line, what",
    [
        ('<div id="__config">{"search": "../../assets/x.js"}</div>', "raw HTML has the id `__config`"),
        ('<div id="__code_src-grad"><code>forged</code></div>', "raw HTML has the id `__code_src-grad`"),
        ("<span id=' __drawer'>x</span>", "raw HTML has the id `__drawer`"),
        ("A paragraph. {: #__config }", "an attribute list `{: … }` sets the id `__config`"),
        ('A paragraph. {: id="__code_exp-x-output" }', "an attribute list `{: … }` sets the id `__code_exp-x-output`"),
    ],
)
def test_a_page_may_not_write_an_id_of_the_theme(line, what):
    (problem,) = active_html([(4, line)], "docs/a.md")
    assert str(problem).startswith(f"docs/a.md:5: {what}, {WHY} — ")


def test_ids_of_the_page_s_own_are_fine():
    assert active_html([(0, '<span id="mine">x</span> and {: #also-mine }')], "docs/a.md") == []


def _site(html: str) -> list[str]:
    return [str(p) for _, p, _ in _reserved_ids(Doc(html), "site/a/index.html")]


def test_a_built_page_holds_each_theme_id_once_and_the_configuration_in_a_json_script():
    real = '<script id="__config" type="application/json">{}</script>'
    assert _site(f"<html><body><div id='__code_0'><code>x</code></div>{real}</body></html>") == []
    forged = '<div id="__config">{"search": "x.js"}</div>'
    assert [p.split(" — ")[0] for p in _site(f"<html><body>\n{forged}\n{real}</body></html>")] == [
        "site/a/index.html:2: a <div> with the id `__config`, where the theme keeps its configuration",
        "site/a/index.html:3: a second element with the id `__config`, which the theme's scripts find their "
        "elements by",
    ]
    twice = "<div id='__code_1'><code>forged</code></div>\n<div id='__code_1'><code>real</code></div>"
    assert [p.split(" — ")[0] for p in _site(f"<html><body>\n{twice}</body></html>")] == [
        "site/a/index.html:3: a second element with the id `__code_1`, which the theme's scripts find their elements by"
    ]


def test_a_code_block_titled_with_an_engine_badge_is_refused():
    """The theme shows a fence's `title` above the code, where an engine block shows its badge."""
    from lessonkit.kinds import KINDS
    from lessonkit.pipeline.parse import parse_page

    text = (
        '# t\n\n```python title="真实源码 REAL SOURCE · autograd/core.py · L25–L32" linenums="25"\nx = 1\n```\n\n'
        '```python title="a helper"\ny = 2\n```\n'
    )
    page = parse_page(text, "docs/a.md", kinds=KINDS, badges=("REAL SOURCE", "EXPERIMENT"))
    assert [str(p) for p in page.engine_html] == [
        'docs/a.md:3: a code block\'s title shows the engine\'s badge "REAL SOURCE", as if it were an engine '
        "block — write the annotation block instead (it checks the code against the pin), or title the code "
        "block without the badge"
    ]
