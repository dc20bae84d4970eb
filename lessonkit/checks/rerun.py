"""Output that a second run reproduces (``lessonkit verify --rerun``).

Every run the site shows (experiment blocks, snapshots, figures, inline values, the attachments'
runs) is run once more, in a fresh box and without the cache, and its output and record are
compared with the stored result of the build (or, where none is stored, with a first run made
here). A difference is an experiment whose page would change from build to build: a time, an id,
the order of a set, unseeded random numbers. One located line names the first differing value,
at the first block of the first page that shows the run.

An author declares output that varies on purpose with the experiment block's ``Varies`` field:
``output`` (the printed output) and record keys (``timing`` also covers ``timing.total``). Those
parts are left out of the comparison, and the page says that they vary.

Addresses (``0x7f…``) in the output are rewritten to ``0x…`` by the runner before anything is
stored or compared (:meth:`lessonkit.run.runner.Runner.normalise`), so a ``repr`` with an address
is reproducible already.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

from lessonkit.checks import living
from lessonkit.checks.verify import Report
from lessonkit.errors import Problem
from lessonkit.kinds.experiment import OUTPUT, varies_items
from lessonkit.run import runner as execute

HINT = (
    "print and record only what every run gives (seed random numbers, sort sets, leave out times and "
    "ids), or declare it with the experiment block's `Varies: output` or `Varies: KEY`"
)


def declared(report: Report, project) -> dict[str, set[str]]:
    """Run key -> what its experiment blocks declare as varying (``Varies``)."""
    out: dict[str, set[str]] = {}
    for rs in report.resolved.values():
        for r in rs:
            if r.job is not None and r.block.get("Varies"):
                out.setdefault(project.runner.key(r.job), set()).update(varies_items(r.block.get("Varies") or ""))
    return out


def _places(report: Report, project) -> dict[str, tuple[str, int]]:
    """Run key -> (page, line) of the first block that shows it."""
    out: dict[str, tuple[str, int]] = {}
    for page, rs in report.resolved.items():
        for r in rs:
            if r.job is not None:
                out.setdefault(project.runner.key(r.job), (page, r.block.line))
    return out


def _strip(record, varies: set[str], prefix: str = ""):
    """``record`` without the keys ``varies`` names (a key covers the keys below it)."""
    if not isinstance(record, dict):
        return record
    out = {}
    for k, v in record.items():
        path = f"{prefix}{k}"
        if path in varies:
            continue
        out[k] = _strip(v, varies, path + ".")
    return out


def _flat(value, prefix: str = "") -> dict[str, str]:
    """Dotted key -> JSON of every leaf of a record (for naming the first difference)."""
    if isinstance(value, dict) and value:
        out: dict[str, str] = {}
        for k, v in value.items():
            out.update(_flat(v, f"{prefix}{k}."))
        return out
    return {prefix.rstrip(".") or "(record)": json.dumps(value, sort_keys=True, ensure_ascii=False)}


def difference(first: execute.Result, second: execute.Result, varies: set[str]) -> str | None:
    """The first thing that differs between two runs (None: nothing outside ``varies``)."""
    if OUTPUT not in varies and first.stdout != second.stdout:
        a, b = first.stdout.split("\n"), second.stdout.split("\n")
        n = next((k for k in range(max(len(a), len(b))) if k >= len(a) or k >= len(b) or a[k] != b[k]), 0)
        one = a[n] if n < len(a) else "(no line)"
        two = b[n] if n < len(b) else "(no line)"
        return f"output line {n + 1} is {one[:70]!r}, then {two[:70]!r}"
    ra, rb = _strip(first.record, varies), _strip(second.record, varies)
    if ra != rb:
        fa, fb = _flat(ra), _flat(rb)
        key = next((k for k in sorted(set(fa) | set(fb)) if fa.get(k) != fb.get(k)), "(record)")
        one, two = _around(fa.get(key, "(missing)"), fb.get(key, "(missing)"))
        return f"recorded `{key}` is {one}, then {two}"
    return None


def _around(a: str, b: str, width: int = 60) -> tuple[str, str]:
    """Both texts cut to ``width`` characters, from a little before their first difference (a long
    value, such as a recorded SVG, differs far from its start)."""
    k = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    start = max(0, k - 20) if k > width - 10 else 0
    cut = lambda t: ("…" if start else "") + t[start : start + width] + ("…" if len(t) > start + width else "")  # noqa: E731
    return cut(a), cut(b)


def check(project, report: Report) -> list[Problem]:
    """One line for every run whose second run differs from the first (see the module docstring)."""
    jobs = living.build_jobs(project, report)
    runner = project.runner
    unique = {runner.key(j): j for j in jobs if j.whole is None}  # a session's blocks run as its whole
    varies = declared(report, project)
    places = _places(report, project)

    def pair(job):
        stored = runner.cached(job)
        first = stored if stored is not None else runner.run_again(job)
        return first, runner.run_again(job)

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(unique, pool.map(pair, unique.values()), strict=True))
    problems = []
    for key, (first, second) in results.items():
        if not (first.ok and second.ok):
            continue  # a failing run is reported by the build and by verify's other checks
        what = difference(first, second, varies.get(key, set()))
        if what is None:
            continue
        page, line = places.get(key, (unique[key].label, None))
        problems.append(
            Problem(f"{unique[key].label} gives a different result on a second run: {what}", page, line, HINT)
        )
    return problems
