"""The bench writes the table of docs/dev/performance.md itself (`--doc`): its rows, exactly,
between the two marker lines, and nothing else of the page changes."""

from __future__ import annotations

import importlib.util
import math
import sys

import pytest
from support import ROOT


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_tool", ROOT / "tools" / "bench.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


ROWS = [
    ("1", "warm build / plain build", 0.6912, 0.7051, 1.10),
    ("7", "serve: edit to rebuilt page", 0.0949, math.nan, 0.10),
    ("8", "README build command / pip install", 1.3333, 1.9, 1.00),
    ("-", "supporting: warm / plain-docs", 1.2, 1.23, None),
]


def test_the_table_holds_each_ratio_with_its_target_and_result(bench):
    spread = {"warm build / plain build": "0.64–0.77"}
    text = bench.doc_table(ROWS, spread, "One run.", ["  home page: 1 ms"])
    assert text.splitlines() == [
        "One run.",
        "",
        "| # | ratio | target | wall | CPU | spread (wall) | result |",
        "|---|---|---|---|---|---|---|",
        "| 1 | warm build / plain build | ≤ 1.10 | 0.69 | 0.71 | 0.64–0.77 | pass |",
        "| 7 | serve: edit to rebuilt page | ≤ 0.10 | 0.09 | — | — | pass |",
        "| 8 | README build command / pip install | ≤ 1.00 | 1.33 | 1.90 | — | **fail** |",
        "| - | supporting: warm / plain-docs | — | 1.20 | 1.23 | — | report |",
        "",
        "- home page: 1 ms",
    ]


def test_the_table_replaces_only_what_is_between_the_markers(bench, tmp_path):
    page = tmp_path / "performance.md"
    page.write_text(f"# P\n\nbefore\n{bench.DOC_BEGIN}\nold table\n{bench.DOC_END}\nafter\n", encoding="utf-8")
    bench.write_doc(page, "new table")
    assert page.read_text(encoding="utf-8") == f"# P\n\nbefore\n{bench.DOC_BEGIN}\nnew table\n{bench.DOC_END}\nafter\n"
    assert [p.name for p in tmp_path.iterdir()] == ["performance.md"]  # no temporary file left


def test_a_page_without_the_markers_is_one_line_and_unchanged(bench, tmp_path):
    page = tmp_path / "performance.md"
    page.write_text("# P\n", encoding="utf-8")
    with pytest.raises(SystemExit) as exc:
        bench.write_doc(page, "table")
    assert str(exc.value).startswith(f"{page}: no `{bench.DOC_BEGIN}` … `{bench.DOC_END}` lines — put the two lines")
    assert "\n" not in str(exc.value)
    assert page.read_text(encoding="utf-8") == "# P\n"


def test_the_performance_page_has_the_markers(bench):
    text = (ROOT / "docs" / "dev" / "performance.md").read_text(encoding="utf-8")
    assert text.count(bench.DOC_BEGIN) == 1 and text.count(bench.DOC_END) == 1
    assert text.index(bench.DOC_BEGIN) < text.index(bench.DOC_END)


NOX_RUN = [
    (4.1, "Running session build"),
    (4.2, "/x/uv venv --quiet --python /x/python3 /x/.nox/lessonkit"),
    (4.5, "/x/uv pip install --quiet --python /x/python autograd==1.9.1 numpy==2.4.6"),
    (5.0, "/x/uv pip install --quiet --python /x/python -r requirements.txt -e ."),
    (14.0, "/x/python -I -X pycache_prefix=/x/pycache -c 'import warnings"),
    (14.5, "mkdocs build --strict"),
    (25.0, "Session build was successful in 21 seconds."),
    (25.2, "Running session verify"),
    (25.3, "python -m lessonkit verify --mutate --site site"),
    (30.0, "Ran 2 sessions in 26 seconds:"),
]


def test_the_readme_commands_steps_are_read_from_the_lines_nox_writes(bench):
    sample = bench.Sample(30.5, 50.0, "", tuple(NOX_RUN))
    phases = bench.nox_phases(sample)
    assert [name for name, _ in phases] == [
        "`pip install` of nox and uv",
        "the environment and the experiments' own dependencies",
        "the rest of the lock and the project (the prefill runs the experiments meanwhile)",
        "jieba's bytecode",
        "`mkdocs build --strict`",
        "`lessonkit verify --mutate --site`",
    ]
    assert [round(t, 6) for _, t in phases] == [4.1, 0.9, 9.0, 0.5, 10.7, 5.3]
    assert bench.nox_phases(bench.Sample(30.5, 50.0, "", tuple(NOX_RUN[:4]))) is None  # a step never started
    other = bench.Sample(40.5, 50.0, "", tuple((t + 10, line) for t, line in NOX_RUN))
    assert bench.phases_note([sample, other]) == (
        "where the README command's time goes (ratio 8, median of 2 run(s)): `pip install` of nox and uv 9.1 s, "
        "the environment and the experiments' own dependencies 0.9 s, the rest of the lock and the project (the "
        "prefill runs the experiments meanwhile) 9.0 s, jieba's bytecode 0.5 s, `mkdocs build --strict` 10.7 s, "
        "`lessonkit verify --mutate --site` 5.3 s"
    )


def test_ratio_8s_floor_is_the_readme_commands_cpu_over_the_cores_and_the_pip_sides_wall(bench):
    readme = [bench.Sample(30.0, 60.0), bench.Sample(33.0, 56.0), bench.Sample(31.0, 58.0)]
    pip = [bench.Sample(25.0, 18.0), bench.Sample(20.0, 17.0), bench.Sample(29.0, 17.5)]
    # per pair: 60/2/25 = 1.20, 56/2/20 = 1.40, 58/2/29 = 1.00 -> median 1.20
    assert bench.floor_note(readme, pip, 2) == (
        "ratio 8's floor (the README command's CPU / 2 cores / the pip side's wall, median of 3 pair(s)): 1.20; "
        "the README command used 58.0 s of CPU, the pip side 17.5 s of CPU in 25.0 s"
    )


def test_timed_keeps_the_time_of_each_line_nox_writes(bench, tmp_path):
    script = (
        "import sys, time\nprint('nox > one', flush=True)\ntime.sleep(0.3)\n"
        "print('other', file=sys.stderr, flush=True)\nprint('nox > two', flush=True)\n"
    )
    sample = bench.timed([sys.executable, "-c", script], tmp_path, {"PATH": "/usr/bin:/bin"}, marks=True)
    assert [line for _, line in sample.marks] == ["one", "two"]
    # each line's time is when it was read (from the start): the second comes at least 0.3 s in, even when
    # a loaded machine reads the first one late
    assert sample.marks[0][0] <= sample.marks[1][0] and sample.marks[1][0] >= 0.3
    assert sample.log == "nox > one\nother\nnox > two\n"  # both streams, in the order they came


def test_ratio_8s_floor_is_none_without_a_pair(bench):
    """`--only 8 --fresh-reps 0` measures no pair: no floor line, not a StatisticsError."""
    assert bench.floor_note([], [], 2) is None
    assert bench.floor_note([bench.Sample(30.0, 60.0)], [bench.Sample(0.0, 1.0)], 2) is None


def test_ratio_8_divides_by_the_pip_install_and_the_plain_build_and_keeps_the_pip_only_floor(bench):
    readme = [bench.Sample(30.0, 60.0), bench.Sample(33.0, 56.0), bench.Sample(31.0, 58.0)]
    pip = [bench.Sample(25.0, 18.0), bench.Sample(20.0, 17.0), bench.Sample(29.0, 17.5)]
    plain = [bench.Sample(5.0, 6.0), bench.Sample(8.0, 7.0), bench.Sample(1.0, 6.5)]
    both = bench.plus(pip, plain)
    assert [(s.wall, s.cpu) for s in both] == [(30.0, 24.0), (28.0, 24.0), (30.0, 24.0)]
    # per pair: 30/30 = 1.00, 33/28 = 1.18, 31/30 = 1.03 -> median 1.03
    assert bench.paired(bench._walls_of(readme), bench._walls_of(both))[0] == 31.0 / 30.0
    # floors: 60/2/30 = 1.00, 56/2/28 = 1.00, 58/2/30 = 0.97 -> 1.00; pip only: 1.20 as above
    assert bench.fresh_notes(readme, pip, plain, 2) == [
        "ratio 8's floor (the README command's CPU / 2 cores / the pip side with the plain build's wall, "
        "median of 3 pair(s)): 1.00; the README command used 58.0 s of CPU, the pip side with the plain build "
        "24.0 s of CPU in 30.0 s",
        "the pip-only line's floor (the README command's CPU / 2 cores / the pip side's wall, median of 3 "
        "pair(s)): 1.20; the README command used 58.0 s of CPU, the pip side 17.5 s of CPU in 25.0 s",
    ]  # no nox lines in these samples: no note of the README command's steps
    assert bench.fresh_notes([], [], [], 2) == []


def test_the_plain_variant_has_no_lessonkit_extension_hook_or_math(bench):
    plain = bench.plain_config((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    items = [line.strip() for line in plain.splitlines() if line.strip().startswith("- ")]
    assert not [i for i in items if "lessonkit" in i]
    assert "- pymdownx.arithmatex:" in items  # the formulas, as a plain Material site does them
