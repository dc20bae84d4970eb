"""Tab-indented pinned code: without `Tab-width` tabs are shown as the file holds them and `Dedent: N`
refuses to cut into a tab with a line that says so; `Tab-width: N` expands every tab of the selected
lines to tab stops N columns apart before `Dedent`, matching and display. Over the tiny package's
``tiny/helpers_tabbed.py`` (tinypin.py)."""

from __future__ import annotations

import pytest
from test_stages import Blocks, convert, fence, resolve
from tinypin import SOURCES

from lessonkit.checks import verify
from lessonkit.errors import LessonError
from lessonkit.kinds import KINDS
from lessonkit.pipeline.parse import parse_page
from lessonkit.source.resolve import Tree, excerpt_of

TABBED = SOURCES["tiny/helpers_tabbed.py"].splitlines()


def rendered(tiny, *header: str, body: str | None = None) -> dict:
    p = Blocks()
    p.feed(convert(tiny, "# T\n\n" + fence("real-source", "File: tiny/helpers_tabbed.py", *header, body=body)))
    [b] = p.blocks
    return b


def test_the_fixture_is_indented_with_tabs():
    assert TABBED[4:8] == ["\tout = []", "\tfor x in xs:", "\t\tout.append(x * k)\t# a tab before the comment",
                           "\treturn out"]  # fmt: skip


def test_without_tab_width_tabs_are_shown_as_the_file_holds_them(tiny):
    b = rendered(tiny, "Symbol: scale")
    assert b["code"] == "\n".join(TABBED[3:8]) + "\n"
    assert b["lines"] == [(f"src-scale-L{n}", n) for n in range(4, 9)]


def test_tab_width_expands_tabs_to_tab_stops_before_dedent(tiny):
    b = rendered(tiny, "Symbol: scale", "Symbol-lines: 2-4", "Tab-width: 4", "Dedent: 4")
    assert b["code"].splitlines() == [
        "out = []",
        "for x in xs:",
        "    out.append(x * k)   # a tab before the comment",  # the inner tab stops at column 28 of the file line
    ]
    assert b["lines"] == [("src-scale-L5", 5), ("src-scale-L6", 6), ("src-scale-L7", 7)]


def test_tab_width_with_automatic_dedent_and_another_width(tiny):
    ex, problems = resolve(tiny, "File: tiny/helpers_tabbed.py", "Symbol: scale", "Symbol-lines: 3-4", "Tab-width: 8")
    assert problems == []
    assert ex.lines == ("for x in xs:", "        out.append(x * k)       # a tab before the comment")


def test_a_body_is_matched_against_the_expanded_lines(tiny):
    body = "for x in xs:\n    out.append(x * k)   # a tab before the comment"
    ex, problems = resolve(tiny, "File: tiny/helpers_tabbed.py", "Symbol: scale", "Tab-width: 4", body=body)
    assert problems == []
    assert (ex.start, ex.end) == (6, 7)
    assert ex.lines == ("for x in xs:", "    out.append(x * k)   # a tab before the comment")


def test_dedent_on_tab_indented_code_says_tab_and_hints_tab_width(tiny):
    ex, problems = resolve(tiny, "File: tiny/helpers_tabbed.py", "Symbol: scale", "Symbol-lines: 2-4", "Dedent: 4")
    assert ex is None
    assert problems == [
        "docs/p.md:7: `Dedent: 4` but L5 is indented with tabs, and `Dedent` removes spaces — add `Tab-width: N` "
        "(e.g. `Tab-width: 4`) to expand the tabs to spaces first, or use `Dedent: auto` or `Dedent: none`"
    ]


def test_dedent_more_than_the_expanded_indentation_counts_spaces(tiny):
    _, problems = resolve(
        tiny, "File: tiny/helpers_tabbed.py", "Symbol: scale", "Symbol-lines: 2-4", "Tab-width: 2", "Dedent: 4"
    )
    assert problems == ["docs/p.md:8: `Dedent: 4` but L5 is indented by only 2 space(s) — use `Dedent: auto`, or at "
                        "most `Dedent: 2`"]  # fmt: skip


@pytest.mark.parametrize("value", ["0", "17", "four", "4.0", "-1"])
def test_a_tab_width_outside_1_to_16_is_one_located_line(tiny, value):
    _, problems = resolve(tiny, "File: tiny/helpers_tabbed.py", "Symbol: scale", f"Tab-width: {value}")
    assert problems == [
        f"docs/p.md:6: `Tab-width: {value}` is not a number of columns from 1 to 16 — for example `Tab-width: 4`: "
        "tabs then become spaces up to the next multiple of 4"
    ]


def test_mixed_spaces_and_a_tab_in_the_indentation_say_tab(tmp_path):
    (tmp_path / "m.py").write_text("class C:\n    def f(self):\n  \t  return 1\n", encoding="utf-8")
    page = parse_page("```real-source\nFile: m.py\nSymbol: C.f\nDedent: 4\n```\n", "d.md", kinds=KINDS)
    with pytest.raises(LessonError) as err:
        excerpt_of(Tree(tmp_path, "pinned", label="t"), page.blocks[0])
    assert str(err.value).startswith("d.md:4: `Dedent: 4` but L3 is indented with tabs, and `Dedent` removes spaces")
    page = parse_page("```real-source\nFile: m.py\nSymbol: C.f\nDedent: 4\nTab-width: 4\n```\n", "d.md", kinds=KINDS)
    ex = excerpt_of(Tree(tmp_path, "pinned", label="t"), page.blocks[0])
    assert ex.lines == ("def f(self):", "  return 1")  # "  \t" reaches column 4, two spaces more: 6, less 4


def test_verify_passes_on_a_page_with_tab_width(tiny):
    tiny.page("a.md", "# A\n\n" + fence("real-source", "File: tiny/helpers_tabbed.py", "Symbol: scale", "Tab-width: 4"))
    assert verify.check(tiny.project(), None).problems == []


def test_a_built_page_shows_the_expanded_lines_and_verify_site_checks_them(tiny):
    """The page a build writes shows the expanded, dedented lines, and `verify --site` compares
    them with the pinned lines expanded the same way (a check that kept the tabs would report
    the block as changed after lessonkit)."""
    import subprocess
    import sys

    from tinypin import subprocess_env

    tiny.page("a.md", "# A\n\n" + fence("real-source", "File: tiny/helpers_tabbed.py", "Symbol: scale",
                                        "Symbol-lines: 2-4", "Tab-width: 4", "Dedent: 4"))  # fmt: skip
    (tiny.root / "mkdocs.yml").write_text(
        "site_name: t\ntheme:\n  name: material\n  font: false\nplugins:\n  - lessonkit:\n      course: true\n",
        encoding="utf-8",
    )
    env = subprocess_env(tiny)

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", *args], cwd=tiny.root, env=env, capture_output=True, text=True,
                              timeout=600)  # fmt: skip

    b = run("mkdocs", "build", "--strict")
    assert b.returncode == 0, b.stderr[-3000:]
    p = Blocks()
    p.feed((tiny.root / "site" / "a" / "index.html").read_text(encoding="utf-8"))
    [block] = p.blocks
    assert block["code"].splitlines() == [
        "out = []",
        "for x in xs:",
        "    out.append(x * k)   # a tab before the comment",
    ]
    v = run("lessonkit", "verify", "--no-map", "--site", "site")
    assert v.returncode == 0, v.stdout + v.stderr
    assert "1 engine block(s)" in v.stdout and " 0 problem(s) in " in v.stdout.splitlines()[-1]
