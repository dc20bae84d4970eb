"""Repin, for what the living kinds show: inline source references (``line``), snapshot
tables, figures and inline recorded values (``value``).

* A ``line`` reference names its lines by content, so it is classified like an excerpt
  (:func:`lessonkit.source.refs.classify`): ``unchanged``, ``moved`` (the new numbers are
  shown; the page needs no edit, the build renders the new number), ``changed`` (the
  lines' text differs: reread the sentence) or ``missing`` (the fragment or the symbol
  is gone: rewrite the reference).
* Snapshots, figures and values are rebuilt from the recordings of both runs (the pin's
  and the target's): ``unchanged``, ``differs`` (which cells, values or figure data
  change), ``fails`` (a hand-written value no longer matches, or the run fails) or
  ``error`` (it does not build at the pin).

:func:`items` returns :class:`lessonkit.repin.Item` rows that ``build_report`` adds to its own.
"""

from __future__ import annotations

import json
from dataclasses import replace

from lessonkit.checks.living import RECORDED
from lessonkit.errors import LessonError
from lessonkit.kinds import line as line_kind
from lessonkit.kinds import value as value_kind
from lessonkit.pipeline.blocks import Block
from lessonkit.run import runner as execute
from lessonkit.source import refs as sourceref

KINDS = ("prose-ref", "snapshot", "figure", "value")


def items(project, ttree, target, parsed_pages: list, vs) -> list:
    """The repin rows of every inline reference, snapshot, figure and value of ``parsed_pages``."""
    from lessonkit.repin.model import Item
    from lessonkit.source.resolve import Tree

    # base names (`core.py`) resolve among the target's files, as they do among the pin's
    ttree = Tree(ttree.root, "target", allowed=set(target.manifest), label=ttree.label)
    out, recorded = [], []  # recorded: (block or ref, job)
    for parsed in parsed_pages:
        for item in parsed.inline:
            ref = item.ref
            if ref.kind == "line":
                out.append(_ref_item(project, ttree, ref, Item))
            elif ref.kind == "value":
                try:
                    recorded.append((ref, value_kind.job(project, ref)))
                except LessonError as exc:
                    out.append(
                        Item(
                            ref.path,
                            ref.line,
                            "value",
                            ref.argument,
                            "error",
                            detail=f"does not resolve at the pin: {exc.problem.message}",
                        )
                    )
        for block in parsed.blocks:
            if block.kind not in RECORDED:
                continue
            try:
                recorded.append((block, project.resolve(block).job))
            except LessonError as exc:
                out.append(
                    Item(
                        block.path,
                        block.line,
                        block.kind,
                        block.get("Experiment") or "",
                        "error",
                        detail=f"does not resolve at the pin: {exc.problem.message}",
                        block=block,
                    )
                )
    out += _recorded_items(project, target, recorded, vs, Item)
    return out


def _ref_item(project, ttree, ref, Item):
    label = ref.argument
    try:
        old = line_kind.resolve(project, ref)
    except LessonError as exc:
        return Item(
            ref.path,
            ref.line,
            "prose-ref",
            label,
            "error",
            detail=f"does not resolve at the pin: {exc.problem.message}",
        )
    status, new = sourceref.classify(old, ttree)
    words = project.site.labels["line-ref"]  # as the page shows the reference
    item = Item(
        ref.path,
        ref.line,
        "prose-ref",
        label,
        status,
        old=(old.start, old.end),
        new=(new.start, new.end) if new else None,
    )
    if status == "moved" and new is not None:
        return replace(
            item,
            detail=f"{old.render(line=words)} → {new.render(line=words)} (rendered from the content: no edit needed)",
        )
    if status == "changed" and new is not None:
        from lessonkit.repin.model import _udiff

        return replace(
            item,
            detail=f"{old.render(line=words)} → {new.render(line=words)}: the lines' text differs; reread the sentence",
            diff=_udiff(old.text, new.text, old.start, new.start, "pin", "target"),
        )
    if status == "missing":
        try:
            sourceref.resolve(ttree, old.ref)
        except LessonError as exc:
            return replace(item, detail=f"{old.render(line=words)} names nothing at the target: {exc.problem.message}")
    return item


def _recorded_items(project, target, recorded, vs, Item) -> list:
    if not recorded:
        return []
    jobs = [j for _, j in recorded]
    at_pin = project.runner.run_all(jobs)
    from lessonkit.repin.runs import target_runner

    runner = target_runner(project, target)
    at_target = runner.run_all(jobs)
    out = []
    for what, job in recorded:
        a, b = at_pin[project.runner.key(job)], at_target[runner.key(job)]
        is_block = isinstance(what, Block)
        kind = what.kind if is_block else "value"
        label = f"{job.label}" + ("" if is_block else f" {what.argument.split(None, 1)[-1]}")
        item = Item(what.path, what.line, kind, label, "unchanged", block=what if is_block else None)
        if not a.ok:
            out.append(replace(item, status="error", detail="its experiment fails at the pin"))
            continue
        if not b.ok:
            out.append(
                replace(
                    item,
                    status="fails",
                    detail="its experiment fails against the target: "
                    + execute.failure(b, job, job.timeout).problem.message,
                )
            )
            continue
        try:
            old = _shown(project, what, a)
        except LessonError as exc:
            out.append(replace(item, status="error", detail=f"does not build at the pin: {exc.problem.message}"))
            continue
        try:
            new = _shown(project, what, b)
        except LessonError as exc:
            out.append(replace(item, status="fails", detail=f"under the target: {exc.problem.message}"))
            continue
        if old != new:
            out.append(replace(item, status="differs", detail=_difference(kind, old, new)))
        else:
            out.append(item)
    return out


def _shown(project, what, result):
    """What the page would show from ``result``: table cells, figure data or the value's text."""
    if isinstance(what, Block):
        r = project.resolve(what)
        if what.kind == "snapshot":
            table = r.kind.table(r, result)
            return [[c.text for c in row] for row in table.rows]
        return json.loads(json.dumps(r.kind.inputs(r, result), sort_keys=True))
    rel, key, prec = value_kind.parse(what)
    from lessonkit.pipeline import recording

    rec = recording.load(result.record, rel)
    fmt = recording.Format() if prec is None else recording.Format(precision=prec)
    return recording.format_value(recording.lookup(rec, key), fmt)


def _difference(kind: str, old, new) -> str:
    if kind == "value":
        return f"the recorded value changes: {old} → {new}"
    if kind == "snapshot":
        cells = [
            f"row {i + 1}: {a} → {b}"
            for i, (ra, rb) in enumerate(zip(old, new, strict=False))
            for a, b in zip(ra, rb, strict=False)
            if a != b
        ]
        return f"{len(cells)} generated value(s) change: " + "; ".join(cells[:6]) + (" …" if len(cells) > 6 else "")
    return "the figure changes: its recorded data differ"
