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
