"""Living lessons across the site: what the ``line``, ``value``, ``snapshot`` and ``figure``
kinds add to verify, the build's job list, the reference map and the acceptance page.

Independent of MkDocs; everything is derived from one verify report (the same parse and
resolve code path as the build) and, for recorded values, from the runner's results
(the cache when the key matches, else a run: the build's own code path).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from lessonkit.checks.verify import Report
from lessonkit.config.site import PROSE_COLUMNS
from lessonkit.errors import LessonError, Problem, fold_repeats
from lessonkit.kinds import line as line_kind
from lessonkit.kinds import value as value_kind
from lessonkit.kinds.figure import Figure
from lessonkit.kinds.snapshot import Snapshot
from lessonkit.run import runner as execute
from lessonkit.run.outcomes import run_about
from lessonkit.util.fs import atomic_write
from lessonkit.util.text import line_span

REFS_NAME = "prose-refs.json"  # sibling of excerpts.json: every inline `line` reference
RECORDED = ("snapshot", "figure")  # fenced kinds drawn from a recording


def inline_jobs(project, report: Report) -> list[execute.Job]:
    """The runs that inline references (``value``) show values of, in page order."""
    out = []
    for refs in report.inline.values():
        for ref in refs:
            try:
                job = project.kinds.inline[ref.kind].job(project, ref)
            except LessonError:
                continue  # reported by verify.check
            if job is not None:
                out.append(job)
    return out


def _page_jobs(project, report: Report) -> dict[str, list[execute.Job]]:
    """Each page's runs: its blocks' jobs, then its inline values' jobs (pages in report order)."""
    out: dict[str, list[execute.Job]] = {}
    for page in dict.fromkeys([*report.resolved, *report.inline]):
        jobs = [r.job for r in report.resolved.get(page, []) if r.job is not None]
        jobs += inline_jobs(project, Report(inline={page: report.inline.get(page, [])}))
        if jobs:
            out[page] = jobs
    return out


def pages_with_runs(project, report: Report) -> list[str]:
    """Pages whose rendering waits for a run (blocks with a job, or inline values), in the order
    their runs end: by the place in :func:`all_jobs` of the last run each page waits for."""
    page_jobs = _page_jobs(project, report)
    place: dict[str, int] = {}  # a run's place in all_jobs: where its key first appears
    for jobs in page_jobs.values():
        for job in jobs:
            place.setdefault(project.runner.key(job), len(place))
    last = {page: max(place[project.runner.key(j)] for j in jobs) for page, jobs in page_jobs.items()}
    return sorted(last, key=lambda page: (last[page], page))


def all_jobs(project, report: Report) -> list[execute.Job]:
    """Every run the site needs, page by page (a page's blocks, then its inline values): the
    order they start in. Experiment blocks win over the recorded kinds for one script (same
    cache key, so the block's ``Timeout`` applies)."""
    by_key: dict[str, execute.Job] = {}
    for page, jobs in _page_jobs(project, report).items():
        kinds = [r.spec.name for r in report.resolved.get(page, []) if r.job is not None]
        for n, job in enumerate(jobs):
            key = project.runner.key(job)
            if n < len(kinds) and kinds[n] not in RECORDED:
                by_key[key] = job
            else:
                by_key.setdefault(key, job)
    return list(by_key.values())


def attachment_jobs(project) -> list[execute.Job]:
    """The runs the project's attachments draw from (``Attachment.jobs``), in registration order."""
    registered = project.attachments
    return [job for a in registered for job in registered.call(a, "jobs", project)]


def build_jobs(project, report: Report) -> list[execute.Job]:
    """Every run a build needs: experiment blocks, snapshots, figures, inline values, and what the
    attachments draw from. Standard library only, like everything it calls (the project's
    attachment modules included): the noxfile's prefill runs it while the lock installs
    (``python -m lessonkit.cli.prefill``)."""
    return all_jobs(project, report) + attachment_jobs(project)


def recorded_jobs(project, report: Report) -> list[execute.Job]:
    """Only the runs that snapshots, figures and inline values need (what verify runs)."""
    keys = {
        project.runner.key(r.job)
        for rs in report.resolved.values()
        for r in rs
        if r.job is not None and r.spec.name in RECORDED
    }
    keys |= {project.runner.key(j) for j in inline_jobs(project, report)}
    return [j for j in all_jobs(project, report) if project.runner.key(j) in keys]


@dataclass
class Facts:
    """What the living kinds show, counted for the acceptance page."""

    generated: int = 0  # snapshot cells from the recording
    checked: int = 0  # hand-written snapshot cells checked against it
    hand: int = 0  # hand-written snapshot cells (explanations excluded: see count_table)
    tables: int = 0
    figures: int = 0
    values: int = 0  # inline recorded values
    refs: int = 0  # inline source references
    per_page: dict = field(default_factory=dict)  # page -> [generated, checked, hand, figures, values, refs]
    problems: list[Problem] = field(default_factory=list)

    @property
    def share(self) -> float:
        total = self.generated + self.checked + self.hand
        return (self.generated + self.checked) / total if total else 1.0


def count_table(table, prose_columns=PROSE_COLUMNS) -> tuple[int, int, int]:
    """(generated, checked, hand) value cells: the first column names the row and explanation
    columns are the author's prose, so neither counts; nor does an empty or "—" cell.

    A column is prose when its name contains one of ``prose_columns``: the project's words
    (``prose-columns`` of ``[snapshots]`` in site.toml), columns that hold the author's prose,
    a rule's name or a code location, not a value of the run (a code location written as
    [[line: …]] is checked by verify like every inline reference)."""
    g = c = h = 0
    for row in table.rows:
        for col, cell in zip(table.columns[1:], row[1:], strict=False):
            if cell.mode == "generated":
                g += 1
            elif cell.mode == "checked":
                c += 1
            elif not any(w in col for w in prose_columns) and cell.text.strip() not in ("", "—", "-"):
                h += 1
    return g, c, h


def check_recorded(project, report: Report, results: dict[str, execute.Result] | None = None) -> Facts:
    """Build every snapshot, figure and inline value from its recording (running what is not
    cached); the problems are located errors, exactly as the build reports them."""
    if results is None:
        results = project.runner.run_all(recorded_jobs(project, report))
    facts = Facts()
    for page in sorted(set(report.resolved) | set(report.inline)):
        found = _check_page(project, report, results, facts, page)
        # a failed run is the mistake of the first place of the page that runs it, an experiment
        # block too (which verify does not run itself): reported there once, as the build does
        first: dict[str, int] = {}
        for r in report.resolved.get(page, []):
            if r.job is not None and r.block.line is not None:
                first.setdefault(run_about(r.job), r.block.line)
        facts.problems += sorted(fold_repeats(found, first), key=lambda p: p.line or 0)
    return facts


def _check_page(project, report: Report, results: dict, facts: Facts, page: str) -> list[Problem]:
    """Count one page's recorded kinds and values into ``facts``: the problems found."""
    problems: list[Problem] = []
    row = facts.per_page.setdefault(page, [0, 0, 0, 0, 0, 0])
    for r in report.resolved.get(page, []):
        if r.spec.name not in RECORDED:
            continue
        if r.job is None:  # RECORDED kinds resolve with their run
            continue
        result = results.get(project.runner.key(r.job))
        if result is None or not result.ok:
            problems += execute.failure(result, r.job, r.job.timeout).at(r.block.path, r.block.line).problems
            continue
        try:
            if isinstance(r.spec, Snapshot):  # the kind named "snapshot"
                from lessonkit.kinds.snapshot import cell_refs

                for ref in cell_refs(r.block):  # inline references in the table's cells
                    if ref.kind == "value":
                        value_kind.value(project, ref)
                        facts.values += 1
                        row[4] += 1
                    elif ref.kind == "line":
                        facts.refs += 1
                        row[5] += 1
                g, c, h = count_table(r.spec.table(r, result), project.site.prose_columns)
                facts.generated, facts.checked, facts.hand = facts.generated + g, facts.checked + c, facts.hand + h
                facts.tables += 1
                row[0], row[1], row[2] = row[0] + g, row[1] + c, row[2] + h
            elif isinstance(r.spec, Figure):  # the kind named "figure"
                r.spec.inputs(r, result)
                facts.figures += 1
                row[3] += 1
        except LessonError as exc:
            problems += exc.at(r.block.path, r.block.line).problems
    for ref in report.inline.get(page, []):
        if ref.kind == "line":
            facts.refs += 1
            row[5] += 1
            continue
        if ref.kind != "value":
            continue
        try:
            value_kind.value(project, ref)  # the runner returns this build's result (run above)
            facts.values += 1
            row[4] += 1
        except LessonError as exc:
            problems += exc.at(ref.path, ref.line).problems
    return problems


# -- the reference map (sourcemap/prose-refs.json)


def line_refs(project, report: Report):
    """(page, n, ref, resolved) of every inline ``line`` reference that resolves, pages sorted;
    ``n`` counts a page's ``line`` references from 1 (one that does not resolve still counts)."""
    for page, refs in sorted(report.inline.items()):
        n = 0
        for ref in refs:
            if ref.kind != "line":
                continue
            n += 1
            try:
                yield page, n, ref, line_kind.resolve(project, ref)
            except LessonError:
                continue


def ref_entries(project, report: Report) -> list[dict]:
    """One entry per ``line`` reference: what it names and the pinned lines it shows. Its page
    line is not recorded: editing the prose around a reference changes nothing the map is for."""
    return [
        {
            "page": page,
            "ref": n,
            "argument": ref.argument,
            "file": r.file,
            "symbol": r.ref.symbol,
            "lines": [r.start, r.end],
            "text": list(r.text),
        }
        for page, n, ref, r in line_refs(project, report)
    ]


def build_ref_map(project, report: Report) -> dict:
    return {"pin": project.pin.commit, "version": project.pin.version, "refs": ref_entries(project, report)}


def write_ref_map(project, report: Report):
    path = project.sourcemap / REFS_NAME
    data = json.dumps(build_ref_map(project, report), indent=1, ensure_ascii=False) + "\n"
    atomic_write(path, data.encode("utf-8"), durable=True)
    return path


def _span(e: dict) -> str:
    lines = e.get("lines")
    if isinstance(lines, list) and len(lines) == 2:
        return f"{e.get('file')} L{lines[0]}" + (f"–L{lines[1]}" if lines[1] != lines[0] else "")
    return f"{e.get('file')} (no lines)"


def _ref_change(a: dict, b: dict) -> str:
    """What differs between a recorded reference ``a`` and the same reference resolved now ``b``."""
    if a.get("argument") != b["argument"]:
        return f"recorded [[line: {a.get('argument')}]], now [[line: {b['argument']}]]"
    if (a.get("file"), a.get("lines")) != (b["file"], b["lines"]):
        return f"recorded {_span(a)}, now {_span(b)}"
    if a.get("text") != b["text"]:
        return f"the text of {_span(b)} differs from the recorded one"
    return "recorded " + ", ".join(f"{k} {a.get(k)!r}" for k in sorted(b) if a.get(k) != b[k])


def stale_ref_map(project, report: Report, only_pages: set[str] | None = None) -> list[Problem]:
    """Problems when ``sourcemap/prose-refs.json`` does not record the references as they resolve now."""
    from lessonkit.checks.verify import UPDATE_HINT, troubled_pages

    path = project.sourcemap / REFS_NAME
    rel = project.rel(path)
    fresh = build_ref_map(project, report)
    if not path.is_file():
        return [Problem("the prose reference map does not exist", rel, None, UPDATE_HINT)] if fresh["refs"] else []
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
        old_refs = recorded["refs"]
        assert isinstance(old_refs, list) and all(isinstance(e, dict) for e in old_refs)
    except (ValueError, KeyError, AssertionError, TypeError):
        return [Problem("the prose reference map is not a JSON object with `refs`", rel, None, UPDATE_HINT)]
    problems = []
    if recorded.get("pin") != fresh["pin"]:
        problems.append(Problem("the prose reference map was made for another pin", rel, None, UPDATE_HINT))

    def key(e):
        return e.get("page"), e.get("ref")

    troubled = troubled_pages(report)  # references counted by their order: not compared there
    old = {
        key(e): e
        for e in old_refs
        if (only_pages is None or e.get("page") in only_pages) and e.get("page") not in troubled
    }
    new = {
        key(e): e
        for e in fresh["refs"]
        if (only_pages is None or e["page"] in only_pages) and e["page"] not in troubled
    }
    at = {(page, n): ref.line for page, n, ref, _ in line_refs(project, report)}  # page lines, for messages
    for k in sorted(set(old) | set(new), key=lambda k: (str(k[0]), k[1] or 0)):
        a, b = old.get(k), new.get(k)
        if a is not None and b is not None:
            a = {f: a.get(f) for f in b}  # what a map of an older lessonkit holds besides (a page line) is not read
        if a == b:
            continue
        if b is None:
            problems.append(
                Problem(
                    f"the prose reference map records reference {k[1]} of {k[0]}, which no longer exists",
                    rel,
                    None,
                    UPDATE_HINT,
                )
            )
        elif a is None:
            problems.append(
                Problem(
                    f"a new reference ({b['file']} {line_span(*b['lines'])}) is not in the prose reference map",
                    b["page"],
                    at[k],
                    UPDATE_HINT,
                )
            )
        else:
            problems.append(
                Problem(
                    f"the prose reference map is stale ({_ref_change(a, b)})",
                    b["page"],
                    at[k],
                    UPDATE_HINT,
                )
            )
    return problems
