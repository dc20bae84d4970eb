"""Shared by the kinds that show a recorded run (``snapshot``, ``figure``, ``value``).

An experiment named by these kinds becomes a :class:`~lessonkit.run.runner.Job` exactly
like an ``experiment`` block with ``File:`` (same name, source and memory, so the same
cache key): the build runs it once, whether or not a page also shows it as an
experiment block. A script that no page shows is still run (and listed on the
acceptance page); the default timeout applies (an ``experiment`` block's ``Timeout``
wins when the page shows the script, see :func:`lessonkit.build.Build.plan`).
"""

from __future__ import annotations

import re
from pathlib import Path

from lessonkit.errors import MISSING_SCRIPT, LessonError, Problem
from lessonkit.pipeline.blocks import check_rel_path
from lessonkit.pipeline.recording import Recording, load
from lessonkit.run import runner as execute
from lessonkit.run.box import sandbox
from lessonkit.util.text import whole_number

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def script_rel(project, value: str, path: str | None, line: int | None) -> str:
    """``experiments/x.py`` checked: a path under experiments/ that exists (a name that passed is
    not checked again by the same project object: a page names the same script many times)."""
    known = project._scripts_named.get(value)
    if known is not None:
        return known
    project._scripts_named[value] = rel = _checked_script(project, value, path, line)
    return rel


def _checked_script(project, value: str, path: str | None, line: int | None) -> str:
    try:
        rel = check_rel_path(value)
    except LessonError as exc:
        raise exc.at(path, line) from None
    if not (rel.startswith("experiments/") and rel.endswith(".py")):
        raise LessonError(
            f"`{rel}` is not an experiment script",
            path=path,
            line=line,
            hint="name a script such as experiments/multiple_paths.py",
        )
    if not (project.root / rel).is_file():
        have = sorted(p.name for p in project.experiments.glob("*.py") if not p.name.startswith("_"))
        import difflib

        close = difflib.get_close_matches(Path(rel).name, have, n=1)
        raise LessonError(
            f"there is no {rel}",
            path=path,
            line=line,
            hint=f"did you mean experiments/{close[0]}?" if close else "create the experiment first",
            about=MISSING_SCRIPT + rel,  # the experiment blocks naming it say so too (kinds.experiment)
        )
    return rel


def job_for(project, rel: str) -> execute.Job:
    """The run of ``rel``: the same job (and cache key) as an experiment block with ``File: rel``
    (one object per script and project object, so that its key is looked up, not made again)."""
    job = project._script_jobs.get(rel)
    if job is None:
        source = project.scripts.file(rel).data
        job = execute.Job(Path(rel).name, source, execute.DEFAULT_TIMEOUT, rel, sandbox.DEFAULT_MEMORY)
        project._script_jobs[rel] = job
    return job


def recording_of(result, rel: str, path: str | None, line: int | None) -> Recording:
    """The recording of a passing result (a located error when the run recorded nothing)."""
    try:
        return load(result.record, rel)
    except LessonError as exc:
        raise exc.at(path, line) from None


def run(project, job: execute.Job, path: str | None, line: int | None):
    """The job's passing result (from this build, the cache, or run now); a located error otherwise."""
    result = project.runner.run(job)
    if not result.ok:
        raise execute.failure(result, job, job.timeout).at(path, line)
    return result


def precision_problems(b) -> list[Problem]:
    """The `Precision:` header of a snapshot or figure: a number of decimals from 0 to 12."""
    p = b.get("Precision")
    n = whole_number(p, 2)
    if p is None or (n is not None and n <= 12):
        return []
    return [
        Problem(
            f"`Precision: {p}` is not a number of decimals from 0 to 12",
            b.path,
            b.line_of("Precision"),
            "for example `Precision: 3`",
        )
    ]


def block_job(project, block) -> execute.Job:
    """The run of the script a block's ``Experiment:`` names (its line located on a mistake)."""
    return job_for(project, script_rel(project, block.get("Experiment"), block.path, block.line_of("Experiment")))
