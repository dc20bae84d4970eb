"""``value`` (inline): a value recorded by this build's run of an experiment.

``[[value: multiple_paths xx.grad]]`` renders ``6.0``; ``[[value: multiple_paths
diamond.calls.2.ingrad|3]]`` renders it with 3 decimals. ``multiple_paths`` is
``experiments/multiple_paths.py``; the key is a dotted path into its recording
(:mod:`lessonkit.pipeline.recording`). The page waits for that run; hovering shows which
experiment and key the number comes from.
"""

from __future__ import annotations

import re
from html import escape

from lessonkit.errors import LessonError
from lessonkit.kinds import _recorded
from lessonkit.kinds.base import InlineKind
from lessonkit.pipeline import recording

ARG = re.compile(
    r"(?P<exp>[A-Za-z_][A-Za-z0-9_-]*)\s+(?P<key>" + recording.KEY.pattern + r")(?:\s*\|\s*(?P<prec>\d{1,2}))?"
)
HINT = "write [[value: experiment_name key.path]] or [[value: experiment_name key.path|3]] (3 decimals)"


def parse(ref) -> tuple[str, str, int | None]:
    m = ARG.fullmatch(ref.argument.strip())
    if not m:
        raise LessonError(f"cannot read the recorded value `{ref.argument}`", path=ref.path, line=ref.line, hint=HINT)
    return f"experiments/{m['exp']}.py", m["key"], int(m["prec"]) if m["prec"] else None


def job(project, ref):
    rel, _, _ = parse(ref)
    return _recorded.job_for(project, _recorded.script_rel(project, rel, ref.path, ref.line))


def value(project, ref) -> tuple[str, str, str]:
    """(experiment, key, text): the recorded value formatted as the page shows it."""
    rel, key, prec = parse(ref)
    rel = _recorded.script_rel(project, rel, ref.path, ref.line)
    result = _recorded.run(project, _recorded.job_for(project, rel), ref.path, ref.line)
    rec = _recorded.recording_of(result, rel, ref.path, ref.line)
    fmt = recording.Format() if prec is None else recording.Format(precision=prec)
    try:
        return rel, key, recording.format_value(recording.lookup(rec, key), fmt)
    except LessonError as exc:
        raise exc.at(ref.path, ref.line) from None


class Value(InlineKind):
    name = "value"

    def read(self, ref):
        return parse(ref)

    def look_up(self, project, ref):
        return job(project, ref)

    def job(self, project, ref):
        return job(project, ref)

    def render(self, project, ref, links):
        rel, key, text = value(project, ref)
        title = project.site.labels.fill("value-title", script=rel, key=key)
        return f'<span class="lk-value" title="{escape(title)}">{escape(text)}</span>'

    def plain(self, project, ref):
        return value(project, ref)[2]


KIND = Value()
