"""``experiment``: a script (a file under ``experiments/`` or the block's body) run by the
build; the page shows the code and this build's output."""

from __future__ import annotations

from html import escape
from pathlib import Path

from lessonkit.run import runner as execute
from lessonkit.run.box import sandbox
from lessonkit.errors import LessonError, Problem
from lessonkit.pipeline.parse import check_rel_path
from lessonkit.source.resolve import excerpt_of
from lessonkit.kinds.base import Kind, Resolved, slug


class Experiment(Kind):
    name = "experiment"
    label = "EXPERIMENT"
    fields = ("File", "Purpose", "Symbol", "Timeout", "Memory")
    required = ("Purpose",)
    citation = "script"

    def validate(self, b):
        out = []

        def bad(msg, key, hint):
            out.append(Problem(msg, b.path, b.line_of(key) if key else b.line, hint))

        if "File" in b.fields and b.body is not None:
            bad("experiment block with both `File` and a body", None, "give the script as a File or inline, not both")
        if "File" not in b.fields and b.body is None:
            bad(
                "experiment block with neither `File` nor a body",
                None,
                "add `File: experiments/….py`, or write the script as the body",
            )
        if "Symbol" in b.fields and "File" not in b.fields:
            bad(
                "`Symbol` needs `File` in an experiment block",
                "Symbol",
                "add `File: experiments/….py`, or remove `Symbol` from the inline script",
            )
        t = b.get("Timeout")
        if t and not (t.isascii() and t.isdigit() and 1 <= int(t) <= 600):
            bad(
                f"`Timeout: {t}` is not a whole number of seconds from 1 to 600",
                "Timeout",
                "for example `Timeout: 120`; without it the limit is 60 s",
            )
        return out

    def resolve(self, project, block):
        timeout, memory = int(block.get("Timeout") or execute.DEFAULT_TIMEOUT), sandbox.memory_of(block)
        if block.get("File"):
            try:
                rel = check_rel_path(block.get("File"))
            except LessonError as exc:
                raise exc.at(block.path, block.line_of("File"))
            if not rel.endswith(".py"):
                raise LessonError(
                    f"`{rel}` is not a Python script",
                    path=block.path,
                    line=block.line_of("File"),
                    hint="experiments are experiments/*.py files",
                )
            ex = excerpt_of(project.scripts, block)
            source = project.scripts.file(rel).data
            job = execute.Job(Path(rel).name, source, timeout, rel, memory)
        else:
            ex = None
            source = ("\n".join(block.body) + "\n").encode()
            name = f"{Path(block.path).stem.replace('-', '_')}_L{block.line}.py"
            job = execute.Job(name, source, timeout, f"{block.path}:{block.line}", memory)
        return Resolved(block, ex, None, job)

    def anchor(self, r, n):
        b = r.block
        return "exp-" + (
            slug(b.get("File").rsplit("/", 1)[-1].removesuffix(".py")) if b.get("File") else f"inline-L{b.line}"
        )

    def render(self, renderer, r, anchor, result):
        """Head, purpose, this build's output and provenance, then the script folded: readers
        come for the output, and a 100-line script before it hides it. The output sits in its own
        container with an id (``<anchor>-output``), so that Material gives its ``<pre>`` a copy
        target of its own instead of the script's."""
        b, ex = r.block, r.excerpt
        labels = renderer.labels
        if ex:
            meta = [f"<code>{escape(ex.file)}</code>"]
            if ex.symbol:
                meta.append(f"<code>{escape(ex.symbol)}</code>")
            links = [(labels["view-script"], renderer.links.script(ex.file))]
            summary = labels.html(
                "script-summary",
                script=escape(labels["script"]),
                file=f"<code>{escape(ex.file)}</code>",
                start=ex.start,
                end=ex.end,
            )
        else:
            meta, links = [escape(labels["inline-script"])], []
            summary = escape(labels["script"])
        code = renderer.code(*renderer.code_of(r), anchor)
        purpose = escape(labels["purpose"]) + escape(labels["colon"])
        purpose = f'<p class="lk-purpose"><strong>{purpose}</strong>{escape(b.get("Purpose"))}</p>'
        out = escape(result.stdout) if result.stdout else escape(labels["no-output"])
        notice = ""
        if result.truncated:
            limit = len(result.stdout.encode())
            notice = f'<p class="lk-truncated">{labels.html("truncated", bytes=result.truncated, limit=limit)}</p>'
        no_search = renderer.no_search
        # The folded script stays out of the search index too: the lesson's prose and excerpts name
        # what it uses, and its code page shows the whole file.
        return (
            f'<div class="lk-block lk-experiment" id="{anchor}">'
            + renderer.head(labels["experiment"], "exp", meta, links)
            + purpose
            + f'<div class="lk-output-label"{no_search}>{escape(labels["output"])}</div>'
            f'<div class="lk-output-wrap" id="{anchor}-output"><pre class="lk-output"><code>{out}</code></pre></div>'
            f'{notice}' + f'<p class="lk-provenance"{no_search}>{escape(renderer.provenance)} · '
            f'{escape(labels["exit-code"])} {result.exit_code}</p>'
            + f'<details class="lk-script"{no_search}><summary>{summary}</summary>{code}</details></div>'
        )

    def plain(self, r, project, result):
        code = list(r.excerpt.lines) if r.excerpt else list(r.block.body)
        out = (result.stdout if result else "").rstrip("\n").split("\n")
        return [
            "```python",
            f"# [EXPERIMENT] {r.job.label} — {r.block.get('Purpose')}",
            *code,
            "```",
            "",
            project.site.labels["output-plain"],
            "",
            "```text",
            *out,
            "```",
        ]

    def repin(self, block):
        return ("experiment",)


KIND = Experiment()
