"""Repin, for experiments: every experiment runs against the pin and the target (the target's
outputs are cached apart, under ``<cache>/repin``) and their outputs are compared."""

from __future__ import annotations

import re
from dataclasses import replace

from lessonkit.pipeline.blocks import Block
from lessonkit.project import Project
from lessonkit.repin.acquire import Target
from lessonkit.run import runner as execute
from lessonkit.util.text import lines as text_lines


def _normalise_output(text: str, name: str) -> str:
    """An experiment's output without the line that names the tree's version (``[name 1.9.1 · pinned tree]``)."""
    announce = re.compile(r"^\[" + re.escape(name) + r" [^\]\n]*· pinned tree\]$", re.M)
    return announce.sub(f"[{name} … · pinned tree]", text)


def target_runner(project: Project, target: Target) -> execute.Runner:
    """A runner for the project's experiments against the target tree (its own cache folder)."""
    return execute.Runner(
        target.root,
        target.version or "unknown",
        target.digest,
        project.experiments,
        project.cache / "repin",
        extra_paths=tuple(project.root / d for d in project.site.teaching),
        env_prefix=project.site.env_prefix,
        tools=project.site.tools,
        import_path=project.site.import_path,
    )


def experiment_items(project: Project, target: Target, exps: list[tuple[Block, execute.Job]], vs) -> list:
    """One row per experiment block: unchanged, differs (with a diff of the outputs), fails or error."""
    from lessonkit.repin.model import Item, _udiff

    if not exps:
        return []
    jobs = [j for _, j in exps]
    at_pin = project.runner.run_all(jobs)
    runner = target_runner(project, target)
    at_target = runner.run_all(jobs)
    out = []
    for block, job in exps:
        a, b = at_pin[project.runner.key(job)], at_target[runner.key(job)]
        item = Item(block.path, block.line, "experiment", job.label, "unchanged", block=block)
        if not a.ok:
            out.append(
                replace(
                    item,
                    status="error",
                    detail="fails at the pin: " + execute.failure(a, job, job.timeout).problem.message,
                )
            )
            continue
        if not b.ok:
            tail = execute.failure(b, job, job.timeout).problem.message
            out.append(
                replace(
                    item,
                    status="fails",
                    detail=f"fails against the target: {tail}",
                    diff=_udiff(
                        text_lines(a.stdout),
                        text_lines(b.stdout + b.stderr),
                        1,
                        1,
                        f"stdout {vs[0]}",
                        f"stdout + stderr {vs[1]}",
                    ),
                )
            )
            continue
        sa, sb = _normalise_output(a.stdout, target.name), _normalise_output(b.stdout, target.name)
        if sa == sb and a.truncated == b.truncated:
            out.append(item)
            continue
        diff = _udiff(text_lines(sa), text_lines(sb), 1, 1, f"stdout {vs[0]}", f"stdout {vs[1]}")
        n = sum(1 for l in diff if l[:1] in "+-" and not l.startswith(("+++", "---")))
        out.append(replace(item, status="differs", detail=f"its output differs ({n} line(s))", diff=diff))
    return out
