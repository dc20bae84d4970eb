"""``experiment``: a script (a file under ``experiments/`` or the block's body) run by the
build; the page shows the code and this build's output."""

from __future__ import annotations

import os
import re
from html import escape
from pathlib import Path

from lessonkit.errors import MISSING_SCRIPT, LessonError, Problem
from lessonkit.kinds.base import Kind, Resolved, slug
from lessonkit.pipeline.blocks import check_rel_path
from lessonkit.run import runner as execute
from lessonkit.run import session as drive
from lessonkit.run.box import sandbox
from lessonkit.source.resolve import excerpt_of
from lessonkit.util.text import whole_number

VARIES_KEY = re.compile(r"^[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+)*$")  # a record key (lessonkit_record.KEY)
OUTPUT = "output"  # `Varies: output`: the printed output


def varies_items(value: str) -> list[str]:
    """The items of a ``Varies`` field (empty ones dropped): ``output`` and record keys whose values
    vary from run to run on purpose (``lessonkit verify --rerun`` leaves them out)."""
    return [v.strip() for v in value.split(",") if v.strip()]


def varies_problem(value: str) -> str | None:
    """Why a ``Varies`` value is not a list of ``output`` and record keys (None: it is)."""
    items = varies_items(value)
    if not items:
        return "is empty"
    bad = next((v for v in items if v != OUTPUT and not VARIES_KEY.match(v)), None)
    return None if bad is None else f"names `{bad}`, which is neither `output` nor a record key"


class Experiment(Kind):
    name = "experiment"
    label = "EXPERIMENT"
    fields = ("File", "Purpose", "Symbol", "Timeout", "Memory", "Session", "Varies")
    required = ("Purpose",)
    citation = "script"
    sessions = True  # inline blocks with the same `Session:` run in one interpreter, in page order

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
        varies = b.get("Varies")
        if varies is not None:
            why = varies_problem(varies)
            if why:
                bad(
                    f"`Varies: {varies}` {why}",
                    "Varies",
                    "list what varies from run to run on purpose: `output`, and record keys such as `timing.total`",
                )
        name = b.get("Session")
        if name is not None and "File" in b.fields:
            bad(
                "`Session` is for inline experiments",
                "Session",
                "a script of experiments/ runs on its own; write the session's code as the blocks' bodies",
            )
        elif name is not None and not SESSION.match(name):
            bad(
                f"`Session: {name}` is not a session name",
                "Session",
                "letters, digits, `_` and `-`, at most 40 characters, e.g. `Session: tape`",
            )
        t = b.get("Timeout")
        if t and not 1 <= (whole_number(t, 3) or 0) <= 600:
            bad(
                f"`Timeout: {t}` is not a whole number of seconds from 1 to 600",
                "Timeout",
                "for example `Timeout: 120`; without it the limit is 60 s",
            )
        return out

    def resolve(self, project, block):
        timeout = whole_number(block.get("Timeout"), 3) or execute.DEFAULT_TIMEOUT
        memory = sandbox.memory_of(block)
        if block.get("File"):
            try:
                rel = check_rel_path(block.get("File"))
            except LessonError as exc:
                raise exc.at(block.path, block.line_of("File")) from None
            if not rel.endswith(".py"):
                raise LessonError(
                    f"`{rel}` is not a Python script",
                    path=block.path,
                    line=block.line_of("File"),
                    hint="experiments are experiments/*.py files",
                )
            try:
                ex = excerpt_of(project.scripts, block)
            except LessonError as exc:
                if not os.path.isfile(
                    project.root / rel
                ):  # one mistake, however many places name the script (a name too long: False)
                    raise exc.about(MISSING_SCRIPT + rel) from None
                raise
            source = project.scripts.file(rel).data
            job = execute.Job(Path(rel).name, source, timeout, rel, memory)
        else:
            ex, job = None, inline_job(block, timeout, memory)
        return Resolved(block, ex, None, job)

    def session_problems(self, blocks):
        """`Timeout` and `Memory` are the session's: given on its first block only."""
        first = blocks[0]
        return [
            (
                b,
                Problem(
                    f"`{key}` on a later block of session `{b.get('Session')}`",
                    b.path,
                    b.line_of(key),
                    f"give it on the session's first block (line {first.line}): it limits the whole session",
                ),
            )
            for b in blocks[1:]
            for key in ("Timeout", "Memory")
            if key in b.fields
        ]

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
            if b.session:
                n, total = b.session_index + 1, len(b.session)
                meta.append(escape(labels.fill("session", name=b.get("Session"), n=n, total=total)))
            summary = escape(labels["script"])
        code = renderer.shown(r, anchor)
        purpose = escape(labels["purpose"]) + escape(labels["colon"])
        purpose = f'<p class="lk-purpose"><strong>{purpose}</strong>{escape(b.get("Purpose"))}</p>'
        out = escape(result.stdout) if result.stdout else escape(labels["no-output"])
        notice = ""
        if result.truncated:
            limit = len(result.stdout.encode())
            notice = f'<p class="lk-truncated">{labels.html("truncated", bytes=result.truncated, limit=limit)}</p>'
        varies = b.get("Varies")
        if varies:
            shown = labels["list-separator"].join(
                labels["varies-output"] if v == OUTPUT else v for v in varies_items(varies)
            )
            notice += f'<p class="lk-varies">{labels.html("varies", what=escape(shown))}</p>'
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
        code = r.excerpt.text_lines("# " + project.site.labels["elided"]) if r.excerpt else list(r.block.body)
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


SESSION = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


def inline_job(block, timeout: int, memory: int) -> execute.Job:
    """The run of an inline block: a driver (:mod:`lessonkit.run.session`) that compiles the code
    under the page's name at its page lines. In a session the driver runs every block up to this
    one; its key is a digest of them (an edit to a block changes the keys of that block and the
    ones after it only). Before the session's last block the job names the session's whole run,
    which runs instead: one interpreter, one box, the first block's ``Timeout`` and ``Memory``."""
    stem = Path(block.path).stem.replace("-", "_")
    if not block.session:
        code = [(block.body_line, "\n".join(block.body) + "\n")]
        name, labels = f"{stem}_L{block.line}.py", [f"{block.path}:{block.line}"]
    else:
        code = [(p.body_line, "\n".join(p.body) + "\n") for p in block.session]
        name = f"{stem}_session_{block.get('Session').replace('-', '_')}.py"
        labels = [f"{block.path}:{p.line}" for p in block.session]
        first = {k: (v, at) for k, v, at in block.session[0].fields}
        timeout = int(first["Timeout"][0]) if "Timeout" in first else execute.DEFAULT_TIMEOUT
        if "Memory" in first:
            try:
                memory = sandbox.parse_memory(first["Memory"][0])
            except LessonError as exc:
                raise exc.at(block.path, first["Memory"][1]) from None

    def upto(n: int, **more) -> execute.Job:
        parts = tuple(code[:n])
        reads = "".join(c for _, c in parts).encode()
        source = drive.driver(block.path, list(parts))
        at = tuple(labels[:n])
        return execute.Job(name, source, timeout, at[-1], memory, parts, at, reads=reads, **more)

    whole = upto(len(code), prefixes=tuple(upto(n) for n in range(1, len(code))))
    n = block.session_index + 1
    return whole if n == len(code) else upto(n, whole=whole)


KIND = Experiment()
