"""This series' two diagrams, drawn from what two experiments print in this build.

* ``call-sequence``: ``grad``'s calls as a tree read from top to bottom (one row per call, in
  call order, indented under its caller), from the ``CALL: <depth> <name>`` lines of
  ``experiments/debug_walkthrough.py`` (the bundle also gets the lines themselves,
  ``call-sequence.txt``);
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


def call_tree(calls: list[tuple[int, str]], max_depth: int = 9) -> list[tuple[int, int | None, str]]:
    """The recorded calls that are drawn, in call order: ``(level, caller, name)``, where
    ``caller`` is the index of the calling row (None for a call from the user's code) and
    ``level`` its depth in the drawn tree.

    Filtered frames (``<lambda>``, comprehensions) and calls deeper than ``max_depth`` are not
    drawn but still end the calls above them: a call's caller is the nearest *kept* call on the
    stack at a smaller depth, so ``unbroadcast`` called from a VJP lambda inside ``backward_pass``
    hangs under ``backward_pass``, not under ``toposort``, which returned before."""
    rows: list[tuple[int, int | None, str]] = []
    frames: dict[int, int] = {}  # recorded depth -> row of the kept call open at that depth
    for d, n in calls:
        for k in [k for k in frames if k >= d]:
            del frames[k]
        if NOISE.search(n) or d > max_depth:
            continue
        caller = frames[max(frames)] if frames else None
        rows.append((0 if caller is None else rows[caller][0] + 1, caller, n))
        frames[d] = len(rows) - 1
    return rows


SEQ_STYLE = (
    "<style>"
    ".lk-seq{color:var(--md-default-fg-color,#222)}"
    ".lk-seq-fun{fill:currentColor}"
    ".lk-seq-mod{fill:var(--lk-ln-fg,#5c5f66)}"
    ".lk-seq-edge{stroke:currentColor;stroke-width:1;fill:none}"
    ".lk-seq-arrow{fill:currentColor}"
    "</style>"
)


def sequence_svg(calls: list[tuple[int, str]], max_depth: int = 9, title: str = "call sequence diagram") -> str:
    """The recorded calls as a figure that reads from top to bottom: one row per call, in the
    order the calls happened, indented under its caller (:func:`call_tree`), with an arrow from
    the caller's line to the callee; each row names the function, then its module. Narrow enough
    for the text column (the depth is bounded by ``max_depth``). ``title`` is the figure's
    accessible name and ``<title>`` (``[labels] calls-diagram``)."""
    rows = call_tree(calls, max_depth)
    indent, row, top, left, char = 18, 24, 14, 14, 7.3  # char: the width of one character at 12 px
    labels = []
    for _, _, name in rows:
        mod = _module(name)
        fun = _short(name[len(mod) + 1 :] if name.startswith(mod + ".") else name)
        labels.append((fun, mod))
    width = left + max(
        (lv * indent + (len(f) + len(m) + 2) * char for (lv, _, _), (f, m) in zip(rows, labels, strict=True)), default=0
    )
    width = int(width) + 16
    height = top + row * max(len(rows), 1) + 8
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="lk-diagram lk-seq" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(title)}" font-size="12" '
        f'font-family="ui-monospace, SFMono-Regular, Menlo, monospace"><title>{escape(title)}</title>{SEQ_STYLE}',
        '<defs><marker id="lk-seq-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="lk-seq-arrow"/></marker></defs>',
    ]
    ys = [top + row * i + row // 2 for i in range(len(rows))]
    xs = [left + level * indent for level, _, _ in rows]
    for i, (_, caller, _) in enumerate(rows):  # caller's stem down to the row, then across to it
        if caller is None:
            continue
        x0 = xs[caller] + 4
        parts.append(
            f'<path d="M{x0},{ys[caller] + 6} V{ys[i]} H{xs[i] - 3}" class="lk-seq-edge" '
            'marker-end="url(#lk-seq-arrow)"/>'
        )
    for i, (fun, mod) in enumerate(labels):
        parts.append(
            f'<text x="{xs[i] + 2}" y="{ys[i] + 4}"><tspan class="lk-seq-fun">{escape(fun)}</tspan>'
            f'<tspan class="lk-seq-mod" dx="{2 * char:.1f}">{escape(mod)}</tspan></text>'
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
        f'font-family="ui-monospace, SFMono-Regular, Menlo, monospace"><title>{escape(title)}</title>'
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
