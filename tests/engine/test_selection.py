"""Selecting code: symbols at any depth and of any Python 3 grammar, picking one of several
definitions (`Which`), and `Lines`/`Symbol-lines` ranges, lists and open ends; over a small tree made
in the test (no pin, no autograd)."""

from __future__ import annotations

import ast
import sys
import textwrap
from pathlib import Path

import pytest

from lessonkit.errors import LessonError
from lessonkit.kinds import KINDS
from lessonkit.pipeline.parse import parse_page
from lessonkit.source import pysyntax, pysyntax_cst
from lessonkit.source.pyindex import read_definitions
from lessonkit.source.resolve import Tree, check_lines, excerpt_of

NESTED = textwrap.dedent(
    '''\
    import typing

    class Outer:
        class Inner:
            def deep(self):
                return 1

        @property
        def value(self):
            return self._v

        @value.setter
        def value(self, v):
            self._v = v


    def outer():
        def inner():
            return 2

        return inner


    if typing.TYPE_CHECKING:
        Alias = int
    else:
        Alias = "int"

    try:
        from fast import speedup
    except ImportError:

        def speedup(x):
            """Fallback."""
            return x

        # trailing comment, not part of the def
    '''
)

# Python 3.12–3.14 syntax (type parameters and aliases, nested f-string quotes, t-strings): the
# interpreter running these tests may be older; symbols must not depend on it.
MODERN = textwrap.dedent(
    '''\
    type Pair[T] = tuple[T, T]


    class Box[T]:
        def get[U](self, x: U) -> U:
            return f"{x!r:{'>'}{10}}"


    def greet(name):
        return t"hello {name}"
    '''
)

TEXT = "\n".join(f"line {n}" if n not in (4, 5) else "" for n in range(1, 13)) + "\n"


def excerpt(tmp_path: Path, name: str, text: str, *header: str, body: str | None = None):
    (tmp_path / name).write_text(text, encoding="utf-8")
    lines = ["```real-source", f"File: {name}", *header, "Commit: f53a217"]
    if body is not None:
        lines += ["", body]
    page = parse_page("\n".join([*lines, "```", ""]), "d.md", kinds=KINDS)
    assert not page.problems, [str(p) for p in page.problems]
    return excerpt_of(Tree(tmp_path, "pinned", label="t"), page.blocks[0])


def problem(tmp_path: Path, name: str, text: str, *header: str) -> str:
    with pytest.raises(LessonError) as err:
        excerpt(tmp_path, name, text, *header)
    return str(err.value)


def header_problems(*header: str) -> list[str]:
    page = parse_page("\n".join(["```real-source", "File: m.py", *header, "```", ""]), "d.md", kinds=KINDS)
    return [str(p) for p in page.problems]


@pytest.mark.parametrize(
    "symbol, span, first",
    [
        ("Outer.Inner.deep", (5, 6), "def deep(self):"),
        ("Outer.Inner", (4, 6), "class Inner:"),
        ("outer.inner", (18, 19), "def inner():"),
        ("speedup", (33, 35), "def speedup(x):"),
    ],
)
def test_a_symbol_at_any_depth(tmp_path, symbol, span, first):
    ex = excerpt(tmp_path, "m.py", NESTED, f"Symbol: {symbol}")
    assert (ex.start, ex.end) == span
    assert ex.lines[0] == first


def test_several_definitions_are_refused_with_candidates(tmp_path):
    assert problem(tmp_path, "m.py", NESTED, "Symbol: Outer.value") == (
        "d.md:3: symbol `Outer.value` is defined 2 times in m.py — candidates: 1. L8-10 (@property), "
        "2. L12-14 (@value.setter); pick one with `Which: N` (the N-th), `Which: @decorator` or "
        "`Which: TEXT` (found in the line of its def)"
    )
    assert problem(tmp_path, "m.py", NESTED, "Symbol: Alias") == (
        "d.md:3: symbol `Alias` is defined 2 times in m.py — candidates: 1. L25 (under `if`), "
        "2. L27 (under `else`); pick one with `Which: N` (the N-th), `Which: @decorator` or "
        "`Which: TEXT` (found in the line of its def)"
    )


@pytest.mark.parametrize(
    "which, span",
    [("2", (12, 14)), ("@value.setter", (12, 14)), ("@ property", (8, 10)), ("def value(self, v)", (12, 14))],
)
def test_which_picks_one_definition(tmp_path, which, span):
    ex = excerpt(tmp_path, "m.py", NESTED, "Symbol: Outer.value", f"Which: {which}")
    assert (ex.start, ex.end) == span


def test_which_that_picks_none_is_located_at_its_line(tmp_path):
    assert problem(tmp_path, "m.py", NESTED, "Symbol: Outer.value", "Which: @value.deleter") == (
        "d.md:4: `Which: @value.deleter`: none of the 2 definition(s) of `Outer.value` has the decorator "
        "`@value.deleter` — candidates: 1. L8-10 (@property), 2. L12-14 (@value.setter)"
    )
    assert problem(tmp_path, "m.py", NESTED, "Symbol: Outer.value", "Which: 3").startswith(
        "d.md:4: `Which: 3` but `Outer.value` is defined 2 time(s) in m.py — candidates:"
    )


def test_which_needs_a_symbol():
    assert header_problems("Which: 2") == [
        "d.md:3: `Which` without `Symbol` — `Which` picks one of several definitions of the Symbol's name"
    ]


def test_modern_syntax_gives_symbols_on_any_interpreter(tmp_path):
    assert [(d.name, d.kind, d.start, d.end) for d in read_definitions(MODERN)] == [
        ("Pair", "type", 1, 1),
        ("Box", "class", 4, 6),
        ("Box.get", "def", 5, 6),
        ("greet", "def", 9, 10),
    ]
    ex = excerpt(tmp_path, "new.py", MODERN, "Symbol: Box.get")
    assert ex.lines == ("def get[U](self, x: U) -> U:", "    return f\"{x!r:{'>'}{10}}\"")


def test_the_two_readers_agree_on_every_file_both_can_read():
    """ast (the running grammar) and libcst (every grammar) give the same records."""
    roots = [Path(__file__).resolve().parents[2] / "lessonkit", Path(ast.__file__).parent / "json"]
    files = [p for root in roots for p in sorted(root.rglob("*.py"))]
    assert len(files) > 20
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert pysyntax.ast_definitions(text) == pysyntax_cst.definitions(text), path
    assert pysyntax.ast_definitions(NESTED) == pysyntax_cst.definitions(NESTED)


def test_the_symbol_index_lists_module_level_and_class_members_only():
    listed = [d.name for d in read_definitions(NESTED) if d.listed]
    assert listed == ["Outer", "Outer.Inner", "Outer.value", "Outer.value", "outer"]


def test_a_docstring_is_found_by_either_reader(tmp_path):
    ex = excerpt(tmp_path, "m.py", NESTED, "Symbol: speedup", "Docstring: hide")
    assert ex.lines == ("def speedup(x):", "    return x")  # one cut for all runs: they keep their indentation
    assert ex.elided == ((34, 34),)


def test_file_alone_shows_the_whole_file(tmp_path):
    ex = excerpt(tmp_path, "t.txt", TEXT)
    assert (ex.start, ex.end) == (1, 12)


@pytest.mark.parametrize(
    "value, runs, elided",
    [
        ("9-", ((9, 12),), ()),
        ("-2", ((1, 2),), ()),
        ("1-2, 7, 10-", ((1, 2), (7, 7), (10, 12)), ((3, 6), (8, 9))),
        ("3-6", ((3, 6),), ()),  # blank lines at the ends (4-5 are blank) are allowed, and left out
        ("1-4, 5-6", ((1, 6),), ()),  # adjacent ranges are one run
    ],
)
def test_lines_take_lists_and_open_ranges(tmp_path, value, runs, elided):
    ex = excerpt(tmp_path, "t.txt", TEXT, f"Lines: {value}")
    assert ex.spans == runs
    assert ex.elided == elided


def test_a_range_that_starts_on_a_blank_line_is_trimmed(tmp_path):
    ex = excerpt(tmp_path, "t.txt", TEXT, "Lines: 4-7")
    assert (ex.start, ex.end) == (6, 7)


def test_lines_beside_a_symbol_select_inside_it(tmp_path):
    ex = excerpt(tmp_path, "m.py", NESTED, "Symbol: Outer", "Lines: 8-10")
    assert ex.lines[0] == "@property" and (ex.start, ex.end) == (8, 10)
    assert problem(tmp_path, "m.py", NESTED, "Symbol: Outer", "Lines: 2-4") == (
        "d.md:4: `Lines: 2-4`: line 2 is outside `Outer` in m.py — `Outer` in m.py is L3-14; "
        "`Symbol-lines` counts from the symbol's first line"
    )
    assert problem(tmp_path, "t.txt", TEXT, "Lines: 10-13") == (
        "d.md:3: `Lines: 10-13` runs past the end of t.txt (12 lines) — check the range against the source browser"
    )


def test_symbol_lines_count_from_the_symbols_first_line(tmp_path):
    ex = excerpt(tmp_path, "m.py", NESTED, "Symbol: Outer", "Symbol-lines: 1, 6-")
    assert ex.spans == ((3, 3), (8, 14))
    assert ex.elided == ((4, 7),)


@pytest.mark.parametrize(
    "header, expected",
    [
        (("Lines: 5-3",), "d.md:3: `Lines: 5-3` is not a range `a-b` with 1 ≤ a ≤ b"),
        (("Lines: 1-2, 5-3",), "d.md:3: `Lines: 1-2, 5-3`: `5-3` is not a range `a-b` with 1 ≤ a ≤ b"),
        (("Lines: 7-9, 2",), "d.md:3: `Lines: 7-9, 2`: the ranges overlap or are out of order"),
        (("Lines: x",), "d.md:3: `Lines: x` is not a list of line ranges"),
        (("Symbol-lines: 2",), "d.md:3: `Symbol-lines` without `Symbol`"),
        (("Symbol: f", "Lines: 3-4", "Symbol-lines: 1"), "d.md:5: both `Lines` and `Symbol-lines`"),
    ],
)
def test_bad_line_ranges_are_one_located_line(header, expected):
    got = header_problems(*header)
    assert len(got) == 1 and got[0].startswith(expected + " — "), got


def test_lines_beside_a_body_stay_a_locator(tmp_path):
    ex = excerpt(tmp_path, "t.txt", TEXT, "Lines: 6-7", body="line 6\nline 7")
    assert (ex.start, ex.end) == (6, 7)
    with pytest.raises(LessonError) as err:
        page = parse_page("```real-source\nFile: t.txt\nLines: 6-8\n\nline 6\nline 7\n```\n", "d.md", kinds=KINDS)
        check_lines(page.blocks[0], ex)
    assert str(err.value).startswith("d.md:3: `Lines: 6-8` but the excerpt is at L6-7 — ")


def test_a_call_copied_whole_from_the_source_selects_it(tmp_path):
    text = "defvjp(f, lambda g: g)\nx = 1\ndefvjp(h, lambda g: -g)\n"
    ex = excerpt(tmp_path, "c.py", text, "Symbol: defvjp(h, lambda g: -g)")
    assert (ex.start, ex.end) == (3, 3)


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the fallback reader is used where ast cannot read 3.12")
def test_the_running_python_cannot_read_what_the_fallback_does():
    with pytest.raises(SyntaxError):
        ast.parse(MODERN)


SECTIONS = textwrap.dedent(
    """\
    # -- section --
    a = 1
    # -- end --
    # -- section --
    b = 2
    # -- end --
    """
)


def test_patterns_are_unique_by_default(tmp_path):
    assert problem(tmp_path, "s.py", SECTIONS, "Start-after: # -- section --", "End-before: # -- end --") == (
        "d.md:3: `Start-after: # -- section --` matches 2 lines of s.py (L1, L4) — make the pattern longer, so "
        "that it matches one line, or add `Match: first` to take the first (the end pattern is then searched "
        "after the start)"
    )


def test_match_first_end_searched_from_the_start(tmp_path):
    ex = excerpt(tmp_path, "s.py", SECTIONS, "Start-at: b = 2", "End-before: # -- end --", "Match: first")
    assert (ex.start, ex.end, ex.lines) == (5, 5, ("b = 2",))
    ex = excerpt(tmp_path, "s.py", SECTIONS, "Start-after: # -- section --", "End-before: # -- end --", "Match: first")
    assert (ex.start, ex.end, ex.lines) == (2, 2, ("a = 1",))


def test_match_needs_a_pattern_and_a_known_value():
    assert header_problems("Match: first") == [
        "d.md:3: `Match` without a `Start-*` or `End-*` pattern — `Match` says how the patterns match"
    ]
    assert header_problems("Start-at: x", "Match: all") == [
        "d.md:4: `Match: all` is not `unique` or `first` — `first` takes the first matching line, and searches "
        "the end pattern after the start"
    ]


def test_dedent_on_tab_indented_code_says_tab(tmp_path):
    text = "def f():\n\treturn 1\n"
    assert problem(tmp_path, "t.py", text, "Symbol: f", "Symbol-lines: 2", "Dedent: 4") == (
        "d.md:5: `Dedent: 4` but L2 is indented with tabs, and `Dedent` removes spaces — add `Tab-width: N` "
        "(e.g. `Tab-width: 4`) to expand the tabs to spaces first, or use `Dedent: auto` or `Dedent: none`"
    )


def test_call_selector_hints_name_the_authors_own_call(tmp_path):
    text = "setup(alpha)\nsetup(beta)\n"
    assert problem(tmp_path, "c.py", text, "Symbol: teardown(alpha)") == (
        "d.md:3: no top-level call of `teardown` in c.py — a call selector `f(first_argument)` matches a call at "
        "module level (not inside a def or class)"
    )
    assert problem(tmp_path, "c.py", text, "Symbol: setup(alpha beta)") == (
        "d.md:3: call selector `setup(alpha beta)` has an unparseable argument — write it as the call reads in "
        "the source: `setup(first_argument)`"
    )
