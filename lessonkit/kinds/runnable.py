"""``runnable``: a snippet the page shows as code, with a Run button that runs it in the reader's
browser (the Pyodide of the ``exercise`` block), and the output the build recorded for it folded
beneath (the answer to "what does this print?")::

    ```runnable
    Title: 这段代码打印什么？

    from mini_autograd import grad

    print(grad(lambda x: x * x * x)(2.0))
    ```

The build runs the body in the experiment jail exactly as an inline ``experiment`` block (the same
job, so the same driver, cache and located tracebacks): the folded answer is that run's stdout,
and ``verify --site`` compares it and the shown code with this build's run like an experiment's.
The browser runs the same text with the standard library and the modules of the series' teaching
folders (``[repository] teaching``) that it imports, whose files the block carries byte for byte;
a snippet that imports anything else (NumPy, the pinned package) is refused at the line of the
import: such code is an experiment.

Nothing runs until the reader presses Run: the block's root is of the class ``lk-exercise`` too
(the class of the blocks the browser's Python runs), so ``lessonkit.js`` loads
``assets/exercise/exercise.js`` on its page and no other, and the stylesheet draws it as an
exercise, with no rule of its own: a page without such a block gets no byte more. The script
loads the runtime (whose size the block states) on the first Run. The root asks the page's policy
for WebAssembly and ``blob:`` workers as an exercise does (:data:`lessonkit.kinds.exercise.CSP_NEED`).
"""

from __future__ import annotations

import ast
import json
import sys
from dataclasses import dataclass
from html import escape

from lessonkit.errors import LessonError, Problem
from lessonkit.kinds.base import Kind, Resolved
from lessonkit.kinds.exercise import CSP_NEED
from lessonkit.kinds.experiment import inline_job
from lessonkit.run.box import sandbox
from lessonkit.source import pyodide

# The words the script shows (filled in the browser), passed to it as JSON on the block.
SCRIPT_LABELS = ("exercise-loading", "run-running", "run-stopped", "run-broken", "run-stdout", "run-stderr")
TIMEOUT = 60  # seconds, in the jail (the browser stops a run after exercise.js's limit)


@dataclass(frozen=True)
class RunnableResolved(Resolved):
    modules: tuple[tuple[str, str], ...] = ()  # (path, text) of the teaching modules the snippet imports


def imported(tree: ast.AST) -> list[tuple[str, int]]:
    """The top-level module names a parsed snippet imports (absolute imports), with their lines."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name.split(".")[0], node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            out.append(((node.module or "").split(".")[0] if node.level == 0 else "." * node.level, node.lineno))
    return out


class Runnable(Kind):
    name = "runnable"
    label = "RUNNABLE"
    fields = ("Title",)
    required = ()
    citation = "script"  # its output has an id, as an experiment's (no script page lists it)

    def validate(self, b):
        if b.body is None or not any(line.strip() for line in b.body):
            return [Problem("a runnable block without code", b.path, b.line, "write the snippet as the block's body")]
        return []

    def teaching_module(self, project, name: str) -> str | None:
        """``folder/name.py`` of a teaching folder (on the jail's and the browser's path), if any."""
        for folder in project.site.teaching:
            rel = f"{folder}/{name}.py"
            if (project.root / rel).is_file():
                return rel
        return None

    def resolve(self, project, block):
        if pyodide.read_lock(project.root) is None:
            raise LessonError(
                "a runnable block needs the browser runtime, and this project pins none",
                path=block.path,
                line=block.line,
                hint=f"add {pyodide.LOCK} (see the engine guide, `exercise`), or show the code as an experiment",
            )
        code = "\n".join(block.body) + "\n"
        try:
            tree = ast.parse(code)
        except SyntaxError as exc:
            raise LessonError(
                f"the snippet is not Python: {exc.msg}",
                path=block.path,
                line=block.body_line + (exc.lineno or 1) - 1,
                hint="a runnable block's body is the code the reader runs",
            ) from None
        modules: list[tuple[str, str]] = []
        todo = [(name, block.body_line + line - 1) for name, line in imported(tree)]
        seen: set[str] = set()
        while todo:
            name, at = todo.pop(0)
            if name in seen or name in sys.stdlib_module_names:
                continue
            seen.add(name)
            rel = self.teaching_module(project, name)
            if rel is None:
                raise LessonError(
                    f"the snippet imports `{name}`, which the browser's Python does not have "
                    "(it has the standard library and this repository's teaching modules)",
                    path=block.path,
                    line=at,
                    hint="show code that needs it with an experiment block: it runs at build time with the pinned tree",
                )
            sf = project.repo.file(rel)
            modules.append((sf.rel, sf.text))
            try:
                todo += [(n, at) for n, _ in imported(ast.parse(sf.text))]
            except SyntaxError:
                pass  # the jail's run reports it, at the snippet's import
        job = inline_job(block, TIMEOUT, sandbox.DEFAULT_MEMORY)
        return RunnableResolved(block, None, None, job, modules=tuple(modules))

    def anchor(self, r, n):
        return f"run-L{r.block.line}"

    def render(self, renderer, r, anchor, result):
        assert isinstance(r, RunnableResolved)
        labels, project, no_search = renderer.labels, renderer.project, renderer.no_search
        lock = pyodide.read_lock(project.root)
        assert lock is not None  # resolve() refused a project without one
        folder = pyodide.provide(lock, project.cache)
        size = f"{pyodide.download_bytes(folder, lock) / 1048576:.1f}"
        title = r.block.get("Title")
        meta = ([escape(title)] if title else []) + [escape(labels["inline-script"])]
        links = [(labels["view-file"], renderer.links.script(path)) for path, _ in r.modules]
        words = {k: labels[k] for k in SCRIPT_LABELS}
        code = "\n".join(r.block.body or ()) + "\n"
        note = labels.html("run-note", size=size)
        out = escape(result.stdout) if result.stdout else escape(labels["no-output"])
        modules = ""
        if r.modules:
            files = labels.html("run-modules", files=", ".join(f"<code>{escape(p)}</code>" for p, _ in r.modules))
            modules = (
                f'<details class="lk-ex-checks"{no_search}><summary>{files}</summary>'
                + "".join(
                    f'<pre class="lk-ex-file" tabindex="0" data-lk-path="{escape(p)}">\n{escape(t, quote=False)}</pre>'
                    for p, t in r.modules
                )
                + "</details>"
            )
        return (
            f'<div class="lk-block lk-exercise lk-runnable" id="{anchor}" data-lk-csp="{CSP_NEED}" '
            f'data-lk-size="{size}" '
            f'data-lk-code="{escape(code)}" '
            f'data-lk-labels="{escape(json.dumps(words, ensure_ascii=False, sort_keys=True))}">'
            + renderer.head(labels["runnable"], "run", meta, links)
            + renderer.shown(r, anchor)
            + f'<p class="lk-ex-note"{no_search}>{note}</p>'
            + f'<div class="lk-ex-bar"{no_search}>'
            f'<button type="button" class="lk-ex-button lk-ex-primary" data-lk-action="run">'
            f"{escape(labels['run-run'])}</button> "
            f'<button type="button" class="lk-ex-button" data-lk-action="stop" hidden>{escape(labels["exercise-stop"])}'
            "</button></div>"
            + f'<div class="lk-ex-result" role="status" aria-live="polite"{no_search}></div>'
            + f'<details class="lk-ex-reference lk-runnable-answer"{no_search}>'
            f'<summary>{escape(labels["run-answer"])}</summary>'
            f'<div class="lk-output-wrap" id="{anchor}-output"><pre class="lk-output"><code>{out}</code></pre></div>'
            f'<p class="lk-provenance">{escape(renderer.provenance)} · '
            f"{escape(labels['exit-code'])} {result.exit_code}</p></details>" + modules + "</div>"
        )

    def plain(self, r, project, result):
        out = (result.stdout if result else "").rstrip("\n").split("\n")
        title = r.block.get("Title")
        return [
            "```python",
            f"# [{project.site.labels['runnable']}] {r.job.label}" + (f" — {title}" if title else ""),
            *(r.block.body or ()),
            "```",
            "",
            project.site.labels["output-plain"],
            "",
            "```text",
            *out,
            "```",
        ]


KIND = Runnable()
