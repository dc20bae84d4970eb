"""`lessonkit verify --rerun`: every run once more, uncached; output or a record that changes from
run to run is one located line, unless the experiment block declares it with `Varies`, which the
page then says."""

from __future__ import annotations

import pytest
from support import block, site  # noqa: F401 (fixture)

pytestmark = pytest.mark.warm_cache

CLOCK = """\
import time
from _record import record

record.set("stamp", time.time_ns())
record.set("steady", 3)
print("fixed line")
print("now", time.time_ns())
"""


def page(*extra: str) -> str:
    return "# 实验\n\n" + block("experiment", "File: experiments/clock.py", "Purpose: 时间", *extra)


def test_output_that_changes_between_runs_is_one_located_line(site):  # noqa: F811
    site.script("clock.py", CLOCK)
    site.page("a.md", page())
    plain = site.verify()
    assert plain.returncode == 0, plain.stderr  # one run: nothing to compare with
    rerun = site.verify("--rerun")
    assert rerun.returncode == 1
    lines = [l for l in rerun.stderr.splitlines() if l.startswith("docs/")]
    assert len(lines) == 1, rerun.stderr
    assert lines[0].startswith(
        "docs/a.md:3: experiments/clock.py gives a different result on a second run: output line 2 is 'now "
    )
    assert lines[0].endswith(
        " — print and record only what every run gives (seed random numbers, sort sets, leave out times and "
        "ids), or declare it with the experiment block's `Varies: output` or `Varies: KEY`"
    )


def test_a_record_that_changes_is_named_by_its_key(site):  # noqa: F811
    site.script("clock.py", CLOCK)
    site.page("a.md", page("Varies: output"))
    rerun = site.verify("--rerun")
    assert rerun.returncode == 1
    (line,) = [l for l in rerun.stderr.splitlines() if l.startswith("docs/")]
    assert line.startswith(
        "docs/a.md:3: experiments/clock.py gives a different result on a second run: recorded `stamp` is "
    )


def test_declared_variation_passes_and_the_page_says_so(site):  # noqa: F811
    site.script("clock.py", CLOCK)
    site.page("a.md", page("Varies: output, stamp"))
    rerun = site.verify("--rerun")
    assert rerun.returncode == 0, rerun.stderr
    built = site.build()
    assert built.returncode == 0, built.stderr
    html = (site.root / "site" / "a" / "index.html").read_text(encoding="utf-8")
    assert '<p class="lk-varies">作者声明这些内容每次运行都会不同：输出，stamp。</p>' in html


def test_a_bad_varies_value_is_refused(site):  # noqa: F811
    site.script("clock.py", CLOCK)
    site.page("a.md", page("Varies: out put!"))
    got = site.verify()
    assert got.returncode == 1
    assert (
        "docs/a.md:6: `Varies: out put!` names `out put!`, which is neither `output` nor a record key — list what "
        "varies from run to run on purpose: `output`, and record keys such as `timing.total`"
    ) in got.stderr
