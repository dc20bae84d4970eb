"""This series' two diagrams, drawn from what two experiments print in this build.

* ``call-sequence``: a sequence diagram of ``grad``'s calls, one lifeline per module, from the
  ``CALL: <depth> <name>`` lines of ``experiments/debug_walkthrough.py`` (the bundle also gets the
  lines themselves, ``call-sequence.txt``);
* ``nested-traces``: the boxes ``grad(grad(grad(f)))`` nests, from the ``NESTING: 2 1 0`` line of
  ``experiments/higher_order.py``.

Each is a :class:`lessonkit.Diagram` (registered in ``sourcemap/attachments.toml``); the prose of
the pages is ``templates/call-sequence.md`` and ``templates/nested-traces.md``, the words of the
drawings are labels of the series (``x-calls-diagram``, ``x-nesting-*`` in ``sourcemap/site.toml``).
Standard library and lessonkit only: the build imports this module while it plans its runs.
"""

from __future__ import annotations

import re
from html import escape

from lessonkit import Diagram, Inputs, LessonError

NOISE = re.compile(r"<(genexpr|listcomp|dictcomp|setcomp|lambda)>$")


CALL = re.compile(r"CALL: ([0-9]{1,4}) (\S.*)")
NESTING = re.compile(r"NESTING:(?: [0-9]{1,4}){0,64}")


def parse_calls(output: str, source: str | None = None) -> list[tuple[int, str]]:
    """The ``CALL: <depth> <name>`` lines of the calls diagram's source experiment (a located
    error at the experiment for a line of another shape)."""
    calls = []
    for line in output.split("\n"):  # the runner's output has no \r
        if line.startswith("CALL: "):
            m = CALL.fullmatch(line.rstrip())
            if not m:
                raise LessonError(
                    f"printed {line[:60]!r}, not `CALL: <depth> <name>`",
                    path=source,
                    hint="print one line per call: `CALL: ` then its depth (a number) and its name",
                )
            calls.append((int(m[1]), m[2].strip()))
    return calls


def _short(name: str) -> str:
    return name.replace(".<locals>.", "›")


def _module(name: str) -> str:
    return name.split(".")[0] if not name.startswith("numpy.") else ".".join(name.split(".")[:2])


def sequence_svg(calls: list[tuple[int, str]], max_depth: int = 9, title: str = "call sequence diagram") -> str:
    """A sequence diagram (SVG) of the recorded calls: one lifeline per module.

    Filtered frames (``<lambda>``, comprehensions) draw no arrow but still end the calls
    above them: a call's caller is the nearest *kept* call on the stack at a smaller depth,
    so ``unbroadcast`` called from a VJP lambda inside ``backward_pass`` is drawn from
    ``backward_pass``'s module, not from ``toposort`` which returned before. ``title`` is the
    figure's accessible name (``[labels] x-calls-diagram``)."""
    kept, callers = [], []
    frames: dict[int, str] = {}  # depth -> module of the kept call open at that depth
    for d, n in calls:
        for k in [k for k in frames if k >= d]:
            del frames[k]
        if NOISE.search(n) or d > max_depth:
            continue
        mod = _module(n)
        callers.append(frames[max(frames)] if frames else "user")
        kept.append((d, n))
        frames[d] = mod
    modules: list[str] = []
    for _, n in kept:
        mod = _module(n)
        if mod not in modules:
            modules.append(mod)
    col, row, top = 190, 22, 60
    width = col * len(modules) + 40
    height = top + row * (len(kept) + 1) + 20
    x = {m: 20 + col * i + col // 2 for i, m in enumerate(modules)}
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="lk-diagram" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(title)}" font-size="11" '
        f'font-family="ui-monospace, SFMono-Regular, Menlo, monospace">',
        '<defs><marker id="lk-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="currentColor"/></marker></defs>',
    ]
    for m in modules:
        parts.append(
            f'<rect x="{x[m] - 85}" y="10" width="170" height="28" rx="4" class="lk-actor"/>'
            f'<text x="{x[m]}" y="29" text-anchor="middle" class="lk-actor-text">{escape(m)}</text>'
            f'<line x1="{x[m]}" y1="38" x2="{x[m]}" y2="{height - 10}" class="lk-lifeline"/>'
        )
    for i, ((depth, name), caller) in enumerate(zip(kept, callers)):
        mod = _module(name)
        y = top + row * (i + 1)
        x2 = x[mod]
        x1 = x.get(caller, 5)
        label = escape(_short(name.split(".", 1 if not name.startswith("numpy.") else 2)[-1]))
        if caller == mod:
            parts.append(
                f'<path d="M{x2},{y - 8} h24 v10 h-20" class="lk-msg" fill="none" '
                'marker-end="url(#lk-arrow)"/>'
                f'<text x="{x2 + 28}" y="{y - 2}" class="lk-msg-text">{label}</text>'
            )
        else:
            anchor = "start" if x2 > x1 else "end"
            tx = x1 + 6 if x2 > x1 else x1 - 6
            parts.append(
                f'<line x1="{x1}" y1="{y}" x2="{x2}" y2="{y}" class="lk-msg" marker-end="url(#lk-arrow)"/>'
                f'<text x="{tx}" y="{y - 4}" text-anchor="{anchor}" class="lk-msg-text">{label}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def parse_nesting(output: str, source: str | None = None) -> list[int]:
    """The trace numbers of the ``NESTING: 2 1 0`` line of the nesting diagram's source experiment."""
    for line in output.split("\n"):  # the runner's output has no \r
        if line.startswith("NESTING: "):
            if not NESTING.fullmatch(line.rstrip()):
                raise LessonError(
                    f"printed {line[:60]!r}, not `NESTING: ` and up to 64 trace numbers",
                    path=source,
                    hint="print the trace numbers from the outermost box in, e.g. `NESTING: 2 1 0`",
                )
            return [int(t) for t in line[9:].split()]
    return []


def nesting_svg(
    levels: list[int],
    inner: str = "raw value",
    box: str = "Box · trace {level}",
    title: str = "nested boxes and their trace numbers",
) -> str:
    """Nested boxes: the outermost level's box contains the next one, down to the raw value.
    The words come from the series (``[labels] x-nesting-inner``, ``x-nesting-box`` with ``{level}``,
    ``x-nesting-diagram``)."""
    pad, h = 28, 46
    n = len(levels)
    width = 520
    height = h + 2 * pad * n + 20
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="lk-diagram" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(title)}" font-size="13" '
        f'font-family="ui-monospace, SFMono-Regular, Menlo, monospace">'
    ]
    for i, level in enumerate(levels):
        x, y = 10 + pad * i, 10 + pad * i
        w, hh = width - 2 * x, height - 2 * y
        parts.append(
            f'<rect x="{x}" y="{y}" width="{w}" height="{hh}" rx="6" class="lk-box lk-box-{i % 3}"/>'
            f'<text x="{x + 8}" y="{y + 18}" class="lk-box-text">{escape(box.replace("{level}", str(level)))}</text>'
        )
    x = 10 + pad * n
    parts.append(
        f'<text x="{width / 2}" y="{height / 2 + 5}" text-anchor="middle" class="lk-box-text">'
        f'{escape(inner)}</text></svg>'
    )
    return "".join(parts)


def call_lines(output: str) -> str:
    """The ``CALL:`` lines of the output, as the bundle's ``call-sequence.txt`` holds them."""
    return "\n".join(l for l in output.split("\n") if l.startswith("CALL: ")) + "\n"


class CallSequence(Diagram):
    name = "call-sequence"
    uri = "attachments/call-sequence.md"

    def draw(self, inputs: Inputs, result) -> str:
        calls = parse_calls(result.stdout, self.source)
        title = inputs.project.site.labels["x-calls-diagram"]
        return inputs.render(
            "call-sequence.md", source=self.source, digest=result.digest[:16], svg=sequence_svg(calls, title=title)
        )

    def bundle(self, inputs: Inputs) -> dict[str, bytes]:
        return {"call-sequence.txt": call_lines(inputs.result(self.source).stdout).encode()}


class NestedTraces(Diagram):
    name = "nested-traces"
    uri = "attachments/nested-traces.md"

    def draw(self, inputs: Inputs, result) -> str:
        levels = parse_nesting(result.stdout, self.source)
        labels = inputs.project.site.labels
        svg = nesting_svg(levels, labels["x-nesting-inner"], labels["x-nesting-box"], labels["x-nesting-diagram"])
        return inputs.render("nested-traces.md", source=self.source, levels=" ".join(map(str, levels)), svg=svg)


ATTACHMENTS = [CallSequence("experiments/debug_walkthrough.py"), NestedTraces("experiments/higher_order.py")]
