"""Every word the engine shows a reader, by key: English defaults that a project replaces in
``[labels]`` of ``sourcemap/site.toml`` (the engine itself names no language and no project).

A label may hold placeholders, ``{name}``; the default names the ones the engine fills in, and a
project's text may use those and no others (checked when site.toml is read)::

    [labels]
    line-ref = "第 {span} 行"         # default "line {span}": {span} is "28" or "30–31"
    not-cited = "本文件没有被任何课程引用；仍可完整浏览。"

A project's own kinds and templates may have labels of their own: their keys start with ``x-``
(``x-note = "注"``). Asking for a label that is neither a default nor in site.toml is a located
error (:class:`Labels`), never a ``KeyError``.
"""

from __future__ import annotations

import hashlib
import re
from html import escape

from lessonkit.errors import LessonError

CONFIG = "sourcemap/site.toml"
PLACEHOLDER = re.compile(r"\{([a-z][a-z0-9_]*)\}")
OWN = "x-"  # the prefix of a project's own label keys
CONTROL = re.compile(r"[\x00-\x1f\x7f]")

# The defaults. `from-*` name where the pinned tree came from (the provider kind); `{detail}` is
# the archive, variable or remote the provider used.
LABELS = {
    # block badges and chrome
    "real-source": "REAL SOURCE",
    "teaching-simplification": "TEACHING SIMPLIFICATION",
    "experiment": "EXPERIMENT",
    "snapshot": "STATE SNAPSHOT",
    "purpose": "Purpose",
    "output": "Output of this build",
    "script": "Script",
    "source": "source",
    "exit-code": "exit code",
    "colon": ": ",  # between a label and its value ("Purpose: …")
    "list-separator": ", ",  # between the links of a list in one cell or line
    "annotation-error": "Annotation error",
    "view-source": "View in the source browser",
    "permalink": "Upstream",  # the link to the pinned commit's file on its forge
    "view-script": "View script",
    "view-file": "View file",
    "inline-script": "inline script",
    "script-summary": "{script} ({file}, L{start}–L{end})",
    "no-output": "(no output)",
    "truncated": "Output too long: {bytes} more bytes not shown (limit {limit} bytes).",
    "output-plain": "Output:",
    "varies": "The author declares that this varies from run to run: {what}.",  # experiment `Varies`
    "varies-output": "the output",  # `Varies: output`, in that sentence
    "fragment": "(a range of lines)",  # a cited range that is not a whole symbol, in tables
    "fragment-plain": "fragment",  # the same in the plain-text copy of a real-source block
    "elided": "⋯ {n} lines omitted ⋯",  # the row that stands for left-out lines of an excerpt
    "elided-title": "Every line in the source browser",  # the tooltip of its link
    # a recalled excerpt (real-source `Recall: yes`): the link to the symbol's first full showing
    "recall-lesson": "full source: lesson {n}",
    "recall-page": "full source: {page}",
    "recall-full": "The whole {symbol}",  # the summary of the expandable full version
    "session": "session {name} · block {n} of {total}",  # an experiment block of a page session
    "not-verbatim": "The following is not {upstream} verbatim source.",
    # no claim about tests: a series whose teaching code has tests says so in its own [labels]
    "teaching-file": "This is the series' own teaching implementation, quoted verbatim from {file} of this repository.",
    "based-on": "based on {target}",
    "provenance": " ({commit}, {source}: {provider})",
    "run-record": "recorded by this build's run",
    "cell-recorded": "{script}: recorded {key}",
    "cell-checked": " (typed by hand, checked against the recording)",
    "value-title": "{script}, recorded by this build's run: {key}",
    "line-ref": "line {span}",
    # figures
    "figure-source": " (drawn from this build's run of {script})",
    "figure-plain": "[Figure: {title}, drawn from the recording of {script}]",
    "figure-root": "root",
    "figure-upstream": "upstream g",
    "figure-result": "gradient",
    "figure-sum-step": "sum(axis={axis}, keepdims={keepdims})",
    "figure-after-layer": "after layer {n}",
    "figure-trace": "trace {trace}",
    # source browser, symbol index, the cited-source list of a lesson
    "cited-by": "Cited by: ",
    "cited-by-aria": "Blocks that cite this line",
    "cite-prose": " (prose)",
    "browse-file": "Browse the whole file",
    "col-symbol": "Symbol",
    "col-lines": "Lines",
    "col-type": "Type",
    "col-cited-in": "Cited in",
    "col-location": "Location",
    "col-this-page": "This page",
    "col-citing-pages": "Pages citing it",
    "jump-to-block": "Jump to the block",
    "cited-heading": "Source cited on this page",
    "cited-intro": "The build generates this table from every verified block of this page.",
    "not-cited": "No lesson cites this file; it can still be browsed in full.",
    # the acceptance record
    "col-page": "Page",
    "total": "Total",
    "not-run": "not run",
    "timed-out": " (timed out)",
    # where the pinned tree came from
    "from-index": "sdist {detail} from the Python package index",
    "from-archive": "local archive ({detail})",
    "from-checkout": "local checkout ({detail})",
    "from-git": "git ({detail})",
    "from-other": "{detail}",
    # the course PDF (`[[lessonkit:course-pdf]]`): a Markdown link when the build made it, else a note
    "course-pdf": "[The whole course as one PDF]({path}) ({size})",
    "pdf-contents": "Contents",  # the heading of the PDF's printed table of contents
    "course-pdf-off": (
        "This edition of the site comes without the course PDF; a page printed from the browser has the same layout."
    ),
    # the offline edition (`[[lessonkit:offline-edition]]`): the link ({size} filled by the build), and
    # what stands in its place in the edition itself
    "offline-edition": (
        "[The offline edition]({path}) ({size}, a zip): unzip it and open `index.html` in a browser; links, "
        "search, formulas and figures work without a network"
    ),
    "offline-here": "You are reading the offline edition: every page is on your disk, and none requests anything.",
    # API pages (mkdocstrings)
    "api-call": "Called as",
    "api-source": "Source",
    "api-lessons": "Cited by",
    # exercise blocks: the editor, its buttons, and the words its script shows ({…} filled there)
    "exercise": "EXERCISE",
    "exercise-offline": (
        "Runs in this browser from the offline edition's own files: the first run reads the Python runtime "
        "(Pyodide, {size} MB) from this folder, once, and nothing is requested or sent anywhere. The checks are "
        "the site's; packages outside Python's standard library (NumPy among them) are not part of it, so the "
        "checks that need them are skipped here."
    ),
    "exercise-note": (
        "Runs in this browser with Pyodide {version} (Python {python}): the first run downloads {size} MB from "
        "this site, and nothing is sent anywhere. The checks are those of {tests}; packages outside Python's "
        "standard library (NumPy among them) are not part of it, so the checks that need them are skipped here."
    ),
    "exercise-editor": "{file}, editable",
    "exercise-keys": "In the editor, Tab indents; press Esc first to move on with Tab.",
    "exercise-run": "Run the checks",
    "exercise-stop": "Stop",
    "exercise-reset": "Reset",
    "exercise-reference": "Reference: {file}",
    "exercise-checks": "The files that check it: {files}",
    "exercise-loading": "Loading Python ({size} MB, once) …",
    "exercise-running": "Running the checks …",
    "exercise-summary": "{passed} passed, {failed} failed, {error} errors, {skipped} skipped",
    "exercise-passed": "passed",
    "exercise-failed": "failed",
    "exercise-error": "error",
    "exercise-skipped": "skipped",
    "exercise-restored": "Your last edit, kept in this browser, is restored; Reset brings back the starting file.",
    "exercise-stopped": "Stopped.",
    "exercise-broken": "The checks could not run: {reason}",
    "exercise-time": "{seconds} s",
    # runnable blocks: a snippet run in the browser, its recorded output folded beneath
    "runnable": "RUNNABLE",
    "run-note": (
        "Run runs this code in this browser (Python compiled to WebAssembly): the first run downloads {size} MB "
        "from this site, and nothing is sent anywhere. Guess what it prints first, then compare."
    ),
    "run-run": "Run",
    "run-running": "Running …",
    "run-stopped": "Stopped.",
    "run-broken": "The code could not run: {reason}",
    "run-stdout": "Printed in this browser:",
    "run-stderr": "Errors:",
    "run-answer": "The answer: what this code printed when the site was built",
    "run-modules": "The modules it imports: {files}",
}


class Labels(dict):
    """The labels of one project: defaults, then site.toml. ``labels[key]`` for a key that
    neither defines is a located :class:`LessonError` pointing at site.toml."""

    def __init__(self, values=(), line: int = 1):
        super().__init__(values)
        self.line = line  # the `[labels]` line of site.toml (for the missing-key error)

    def __missing__(self, key):
        own = str(key).startswith(OWN)
        raise LessonError(
            f"no label `{key}` in `[labels]`",
            path=CONFIG,
            line=self.line,
            hint=f'add `{key} = "…"` under [labels]'
            if own
            else f"labels of a project's own kinds and templates start with `{OWN}`; known: lessonkit/config/labels.py",
        )

    def fill(self, name: str, /, **values) -> str:
        """The label's text with its placeholders filled in (plain text)."""
        return PLACEHOLDER.sub(lambda m: str(values[m[1]]) if m[1] in values else m[0], self[name])

    def html(self, name: str, /, **markup) -> str:
        """The label as HTML: its text escaped, placeholders filled with ``markup`` (already HTML)."""
        return PLACEHOLDER.sub(lambda m: str(markup[m[1]]) if m[1] in markup else m[0], escape(self[name]))

    @property
    def fingerprint(self) -> str:
        """A digest of every label (for cache keys of HTML that shows labels)."""
        return hashlib.sha256(repr(sorted(self.items())).encode()).hexdigest()[:16]


def defaults() -> Labels:
    return Labels(LABELS)


def problem(key: str, value: object) -> tuple[str, str] | None:
    """What is wrong with ``key = value`` under ``[labels]`` (message, hint), or None."""
    if key not in LABELS and not key.startswith(OWN):
        import difflib

        close = difflib.get_close_matches(key, list(LABELS), n=1, cutoff=0.7)
        return (
            f"unknown key `{key}` in `[labels]`",
            f"did you mean `{close[0]}`?"
            if close
            else f"known labels: see lessonkit/config/labels.py; a project's own labels start with `{OWN}`",
        )
    if not isinstance(value, str):
        return f"label `{key}` is not text", 'for example `experiment = "EXPERIMENT"`'
    bad = CONTROL.search(value)
    if bad:
        return (
            f"label `{key}` contains the control character U+{ord(bad[0]):04X}",
            "a label is one line of text (tables and badges show it as is)",
        )
    if key in LABELS:
        allowed = set(PLACEHOLDER.findall(LABELS[key]))
        extra = sorted(set(PLACEHOLDER.findall(value)) - allowed)
        if extra:
            shown = ", ".join("{" + a + "}" for a in sorted(allowed)) or "none"
            return (
                f"label `{key}` has the placeholder {{{extra[0]}}}, which the engine does not fill in",
                f"placeholders of `{key}`: {shown}",
            )
    return None


PROVIDERS = [  # provider text (pin.py, English for logs) -> label key of site.toml [labels], detail
    (re.compile(r"^sdist (\S+) from the Python package index$"), "from-index"),
    (re.compile(r"^local archive (\S+)"), "from-archive"),
    (re.compile(r"^local checkout \((.*)\)$"), "from-checkout"),
    (re.compile(r"^git clone of (\S+)"), "from-git"),
]


def provider_text(provider: str, labels: dict[str, str]) -> str:
    """Where the pinned tree came from, in the project's words (``[labels] from-*``)."""
    for pattern, key in PROVIDERS:
        m = pattern.match(provider)
        if m:
            return labels[key].replace("{detail}", m[1])
    return labels["from-other"].replace("{detail}", provider)
