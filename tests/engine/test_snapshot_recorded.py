"""A snapshot's head says "recorded by this build's run": a table none of whose cells comes from,
or is checked against, the recording is refused at its block; one recorded or checked cell (or a
recorded value in a cell) is enough."""

from __future__ import annotations

import pytest

from lessonkit.errors import LessonError
from lessonkit.kinds import KINDS, Resolved
from lessonkit.pipeline.parse import parse_page
from lessonkit.run.jobs import Job, Result

RESULT = Result("k", 0, "", "", 0, 0.0, 0.0, record={"grad": 6.0, "name": "x"})


def table(*rows: str):
    page = parse_page(
        "# t\n\n```snapshot\nExperiment: experiments/e.py\n\nobject | value\n" + "\n".join(rows) + "\n```\n",
        "docs/s.md",
        kinds=KINDS,
    )
    assert not page.problems, [str(p) for p in page.problems]
    block = page.blocks[0]
    r = Resolved(block, job=Job("e.py", b"", 60, "experiments/e.py"))
    return KINDS["snapshot"].table(r, RESULT)


@pytest.mark.parametrize("row", ["g | @grad", "g | 6.0 {@grad = 6.0}", "g | @grad = 6.0"])
def test_a_table_with_a_recorded_or_checked_cell_is_a_snapshot(row):
    assert table(row).rows


def test_a_table_of_words_alone_is_refused_at_its_block():
    with pytest.raises(LessonError) as exc:
        table("g | six", "h | seven")
    assert str(exc.value) == (
        "docs/s.md:3: a snapshot table shows nothing of experiments/e.py's recording, though its head says it "
        "does — write `@key` for a recorded value or `text {@key = v}` to check one written by hand; a table of "
        "the author's words alone is a plain Markdown table"
    )


@pytest.mark.parametrize(
    ("cell", "holds"),
    [
        ("<sub>999.0</sub> {@grad = 6.0}", "'<s'"),
        ("[999.0](#) {@grad = 6.0}", "']('"),
        ("6.0&#8203;999 {@grad = 6.0}", "'&#8203;'"),
        ("6.0<!-- x -->999 {@grad = 6.0}", "'<!'"),
        ("6.0 <br> 999.0 {@grad = 6.0}", "'<b'"),
        ("6.0\u200b999 {@grad = 6.0}", "U+200B"),
    ],
)
def test_a_checked_cell_holds_no_markup_that_shows_other_numbers(cell, holds):
    with pytest.raises(LessonError) as exc:
        table(f"g | {cell}")
    text = cell.split(" {@")[0]
    assert str(exc.value) == (
        f"docs/s.md:7: snapshot cell {text!r} checks `grad` but holds {holds}: a checked cell is plain Markdown, "
        "shown as it is written — write the cell's text without HTML, character references, links or invisible "
        "characters"
    )


@pytest.mark.parametrize("cell", ["$999$", "９９９.0", "$9\\!99$", "`999.0`"])
def test_a_checked_cell_that_shows_a_value_shows_the_checked_number_whatever_writes_it(cell):
    with pytest.raises(LessonError) as exc:
        table(f"g | {cell} {{@grad = 6.0}}")
    message = str(exc.value)
    assert (
        "a checked cell that shows a value shows the numbers it checks, and 6.0 is not among them" in message
        or "but shows 999.0 in its text" in message
    ), message


@pytest.mark.parametrize("cell", ["$6$", "$6.0$", "`g = 6.0`", "(6.0, 6.0)", "$e^{b} = y$", "`f_<lambda>` 的 6.0"])
def test_a_checked_cell_that_shows_its_number_or_a_formula_for_it_passes(cell):
    assert table(f"g | {cell} {{@grad = 6.0}}").rows


@pytest.mark.parametrize(
    "cell",
    ["**999.0**", "*999.0*", "999\\.0", "≈ 999.0", "999.0%", "999.0 ✓", "==999.0==", "~999.0~", "٩٩٩.٠", "结果 999.0"],
)
def test_a_checked_cell_shows_no_other_number_in_its_prose(cell):
    with pytest.raises(LessonError) as exc:
        table(f"g | {cell} {{@grad = 6.0}}")
    assert "a checked cell shows no other number where a reader would take it for the checked value" in str(
        exc.value
    ) or "a checked cell that shows a value shows the numbers it checks" in str(exc.value)


@pytest.mark.parametrize("cell", ["计数 `2 ≠ 1`，减为 6.0", "$\\sin 1$ 的 6 倍", "零维 `ndarray`，值 6.0", "Y0 = 6.0"])
def test_other_numbers_in_code_formulas_or_names_are_the_authors(cell):
    assert table(f"g | {cell} {{@grad = 6.0}}").rows
