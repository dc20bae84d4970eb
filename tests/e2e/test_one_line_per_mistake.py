"""One mistake, one line: a failed run or a missing script that a page names in several places
(an experiment block and inline values) is reported once, at the first place, by the build and by
verify alike; another problem of a page gives no false stale-map line."""

from __future__ import annotations

import pytest
from support import block

from lessonkit.errors import Problem, fold_repeats
from lessonkit.run import runner as execute
from lessonkit.run.jobs import Job, Result

pytestmark = pytest.mark.warm_cache  # the builds' subject is not the cache: start from a warm one

PAGE = (
    "# p\n\n"
    + block("experiment", "File: experiments/boom.py", "Purpose: 失败")
    + "\nCounted [[value: boom n]] and [[value: boom n]].\n"
)  # the block at line 3 (its `File:` at 4), both values at line 8
RUN = "run it by hand: lessonkit run experiments/boom.py"


def lines_of(stderr: str) -> list[str]:
    """The problem lines of a build's or verify's stderr, without MkDocs' `ERROR   -  `."""
    return [l.split("  -  ", 1)[-1] for l in stderr.splitlines() if "docs/p.md:" in l]


def check_both(site, expected: list[str]) -> None:
    b = site.build()
    assert b.returncode != 0
    assert lines_of(b.stderr) == expected, b.stderr
    assert "Traceback" not in b.stderr
    v = site.verify()
    assert v.returncode == 1
    assert lines_of(v.stderr) == expected, v.stderr
    assert f"; {len(expected)} problem(s) in " in v.stderr


@pytest.mark.parametrize(
    "last, tail",
    [
        (
            "raise ValueError('the claim is wrong')",
            '  File "experiments/boom.py", line 3, in <module> |     '
            "raise ValueError('the claim is wrong') | ValueError: the claim is wrong",
        ),
        (
            "assert 1 == 2, 'one is two'",
            "    assert 1 == 2, 'one is two' |            ^^^^^^ | AssertionError: one is two",
        ),
    ],
    ids=["raises", "false-assert"],
)
def test_a_failed_run_cited_three_times_is_one_line_at_its_block(site, last, tail):
    site.script("boom.py", f"from lessonkit_record import record\nrecord.set('n', 1)\n{last}\n")
    site.page("p.md", PAGE)
    check_both(
        site,
        [
            "docs/p.md:3: experiment experiments/boom.py failed with exit code 1 at experiments/boom.py:3: "
            f"{tail} (also cited at :8) — {RUN}"
        ],
    )


def test_a_missing_script_named_three_times_is_one_line_at_its_block(site):
    site.page("p.md", PAGE)
    check_both(
        site,
        [
            "docs/p.md:4: no file `experiments/boom.py` in this repository's experiments (also cited at :8) "
            "— did you mean `experiments/_record.py`, `experiments/_provenance.py`?"
        ],
    )


def test_only_the_box_copy_of_the_script_is_named_by_its_project_path():
    job = Job("boom.py", b"", 60, "experiments/boom.py")
    stderr = (
        'File "<tmp>/helper.py", line 1, in <module>\n'
        'File "<tmp>/boom.py", line 2, in <module>\n'
        "ValueError: <tmp>/boom.py\n"
    )
    err = execute.failure(Result("k", 1, "", stderr, 0, 0.0, 0.0), job, 60)
    assert str(err) == (
        "<markdown>: experiment experiments/boom.py failed with exit code 1 at experiments/boom.py:2: "
        'File "<tmp>/helper.py", line 1, in <module> | '
        'File "experiments/boom.py", line 2, in <module> | ValueError: <tmp>/boom.py — '
        "run it by hand: lessonkit run experiments/boom.py"
    )
    # an inline block's job is named by its page line: its file name in the box stays
    inline = Job("p_L3.py", b"", 60, "docs/p.md:3")
    err = execute.failure(Result("k", 1, "", 'File "<tmp>/p_L3.py", line 1\nValueError: x\n', 0, 0.0, 0.0), inline, 60)
    assert 'File "<tmp>/p_L3.py", line 1' in str(err)


def test_fold_repeats_keeps_the_first_place_and_names_the_others():
    run = "run experiments/boom.py"
    problems = [
        Problem("a", "docs/p.md", 2),
        Problem("failed", "docs/p.md", 8, "hint", about=run),
        Problem("failed", "docs/p.md", 3, "hint", about=run),
        Problem("failed", "docs/p.md", 8, "hint", about=run),
        Problem("failed", "docs/q.md", 5, "hint", about=run),  # another page reports it too
        Problem("b", "docs/p.md", 9),
        Problem("b", "docs/p.md", 9),  # no `about`: not folded
    ]
    assert [str(p) for p in fold_repeats(problems)] == [
        "docs/p.md:2: a",
        "docs/p.md:3: failed (also cited at :8) — hint",
        "docs/q.md:5: failed — hint",
        "docs/p.md:9: b",
        "docs/p.md:9: b",
    ]
    # verify does not run an experiment block: its value's failure is reported at the block
    only_values = [Problem("failed", "docs/p.md", 8, "hint", about=run)] * 2
    assert [str(p) for p in fold_repeats(only_values, {run: 3})] == ["docs/p.md:3: failed (also cited at :8) — hint"]
    assert [str(p) for p in fold_repeats(only_values[:1], {run: 8})] == ["docs/p.md:8: failed — hint"]


MAPPED = (
    "# a\n\n"
    + block("real-source", "File: autograd/core.py", "Symbol: backward_pass")
    + '\n见 [[line: core.py::backward_pass "outgrads = {end_node: (g, False)}"]]。\n\n'
    + block("real-source", "File: autograd/core.py", "Symbol: make_vjp")
)  # the blocks at lines 3 and 10, the reference at 8


@pytest.mark.parametrize(
    "old, new, expected",
    [
        (
            "```real-source\nFile: autograd/core.py\nSymbol: backward_pass",
            "```real-sorce\nFile: autograd/core.py\nSymbol: backward_pass",
            "docs/a.md:3: unknown block kind `real-sorce` — did you mean `real-source`?",
        ),
        (
            "# a\n\n",
            "# a\n\n```python\nx = 1\n\n",
            "docs/a.md:6: real-source block inside the code fence opened on line 3, which is never closed "
            "before it — close that fence with a line ``` before this block",
        ),
        (
            "\n见 [[line:",
            "\n```python\n见 [[line:",
            "docs/a.md:11: real-source block inside the code fence opened on line 8, which is never closed "
            "before it — close that fence with a line ``` before this block",
        ),
    ],
    ids=["kind-typo", "unclosed-fence", "fence-hides-a-reference"],
)
def test_a_block_problem_is_no_stale_map(site, old, new, expected):
    """The maps record a page's blocks and references by their order: a block that is not there as
    written shifts the others, which is its own problem, not a stale map."""
    page = site.page("a.md", MAPPED)
    r = site.run("-m", "lessonkit", "verify", "--update-map")
    assert r.returncode == 0, r.stderr
    page.write_text(MAPPED.replace(old, new, 1), encoding="utf-8")
    r = site.run("-m", "lessonkit", "verify")
    assert r.returncode == 1
    assert [l for l in r.stderr.splitlines() if not l.startswith("verify: ")] == [expected]
    # fixed, the page matches its map again; a real change is still a stale map
    page.write_text(MAPPED, encoding="utf-8")
    r = site.run("-m", "lessonkit", "verify")
    assert r.returncode == 0, r.stderr
    one = "Symbol: backward_pass\nStart-at: outgrads = {end_node\nEnd-at: outgrads = {end_node"  # one line
    page.write_text(MAPPED.replace("Symbol: backward_pass", one), encoding="utf-8")
    r = site.run("-m", "lessonkit", "verify")
    assert [l for l in r.stderr.splitlines() if not l.startswith("verify: ")] == [
        "docs/a.md:3: the excerpt map is stale: lines, sha256 changed (recorded autograd/core.py L25-32, now "
        "autograd/core.py L26) — run `lessonkit verify --update-map` to record the new state"
    ]


def test_a_script_that_records_nothing_names_the_helper_every_series_has(site):
    site.script("quiet.py", "print('nothing recorded')\n")
    site.page("p.md", "# p\n\nCounted [[value: quiet n]].\n")
    v = site.verify()
    assert v.returncode == 1
    assert lines_of(v.stderr) == [
        "docs/p.md:3: experiments/quiet.py recorded nothing — record values with "
        '`from lessonkit_record import record`, then `record.set("key", value)`'
    ]
    # the hint works in a series without the autograd series' _record.py
    (site.root / "experiments" / "_record.py").unlink()
    site.script("quiet.py", "from lessonkit_record import record\n\nrecord.set('n', 3)\n")
    v = site.verify()
    assert v.returncode == 0, v.stderr


def test_a_message_names_one_line_as_one_line():
    from lessonkit.util.text import line_span

    assert [line_span(662, 662), line_span(662, 676)] == ["L662", "L662-676"]
