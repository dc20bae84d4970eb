"""``exercise``: a file of this repository the reader edits in the page and checks with its pytest
file, run in the reader's browser by Pyodide (the npm package pinned in ``sourcemap/pyodide.toml``)::

    ```exercise
    File: mini-autograd/exercises/stage_1.py
    Tests: mini-autograd/exercises/test_stage_1.py
    Reference: mini-autograd/mini_autograd.py
    ```

The page holds the files byte for byte: the starting ``File`` in the editor, the ``Tests`` file and
every ``conftest.py`` from the repository's root down to its folder (as pytest loads them), and the
``Reference`` (folded, offered once the reader has run the checks). Run writes them, with the
editor's text in place of ``File``, into the browser's own file system and runs the test file with
``lessonkit/assets/exercise/lkcheck.py``: the outcome of each test is what
``python -m pytest TESTS`` reports for the same file (``tests/test_exercise_runner.py``).

Nothing runs until the reader presses Run: ``lessonkit.js`` loads ``assets/exercise/exercise.js``
only on a page with such a block, and that loads the runtime (``assets/pyodide/``, whose size the
block states, measured from the files) on the first Run. The block's root carries
``data-lk-csp="wasm-unsafe-eval"``: the page needs that source expression in ``script-src`` of its
Content Security Policy (WebAssembly compilation) and ``blob:`` in ``worker-src`` (the checks'
worker is made from a ``blob:`` URL so that it inherits the page's policy), and no other
(:data:`CSP_NEEDS`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from html import escape
from pathlib import PurePosixPath

from lessonkit.errors import LessonError, Problem
from lessonkit.kinds.base import Kind, Resolved, slug
from lessonkit.source import pyodide

# What an engine block may ask its page's Content-Security-Policy for, with `data-lk-csp` on its
# root element (of class `lk-block`, which raw HTML in a page may not make: the input checks refuse
# the engine's classes), and the sources each request adds, by directive: the one place both are
# written (the build's and verify's policy, :func:`lessonkit.site.csp.extras`, read it). The
# exercise block runs Python compiled to WebAssembly in a worker made from a blob: URL, so that the
# worker inherits this page's policy (a worker loaded from its own URL gets the policy of that
# response's headers, which a static host does not send: none).
CSP_NEED = "wasm-unsafe-eval"  # what this block's root asks for
CSP_NEEDS: dict[str, tuple[tuple[str, str], ...]] = {
    CSP_NEED: (("script-src", "'wasm-unsafe-eval'"), ("worker-src", "blob:")),
}
# The words the script shows (filled in the browser), passed to it as JSON on the block.
SCRIPT_LABELS = (
    "exercise-loading",
    "exercise-running",
    "exercise-summary",
    "exercise-passed",
    "exercise-failed",
    "exercise-error",
    "exercise-skipped",
    "exercise-restored",
    "exercise-stopped",
    "exercise-broken",
    "exercise-time",
)


@dataclass(frozen=True)
class ExerciseResolved(Resolved):
    files: tuple[tuple[str, str], ...] = ()  # (path, text): the starting file first, then the tests, conftests
    reference: tuple[str, str] | None = None


class Exercise(Kind):
    name = "exercise"
    label = "EXERCISE"
    fields = ("Title", "File", "Tests", "Reference")
    required = ("File", "Tests")
    citation = None

    def validate(self, b):
        out = []
        for key in ("File", "Tests", "Reference"):
            v = b.get(key)
            if v and not v.endswith(".py"):
                out.append(Problem(f"`{key}: {v}` is not a Python file", b.path, b.line_of(key), "name a .py file"))
        tests = b.get("Tests")
        if tests and not PurePosixPath(tests).name.startswith("test_"):
            out.append(
                Problem(
                    f"`Tests: {tests}` is not a pytest test file",
                    b.path,
                    b.line_of("Tests"),
                    "name the test_*.py file whose checks the reader runs",
                )
            )
        if b.body is not None:
            out.append(Problem("an exercise block has no body", b.path, b.body_line, "name the files in its header"))
        return out

    def resolve(self, project, block):
        if pyodide.read_lock(project.root) is None:
            raise LessonError(
                "an exercise block needs the browser runtime, and this project pins none",
                path=block.path,
                line=block.line,
                hint=f"add {pyodide.LOCK} (see the engine guide, `exercise`)",
            )

        def read(key: str, value: str) -> tuple[str, str]:
            try:
                sf = project.repo.file(value)
            except LessonError as exc:
                raise exc.at(block.path, block.line_of(key)) from None
            return sf.rel, sf.text

        files = [read("File", block.get("File")), read("Tests", block.get("Tests"))]
        folder = PurePosixPath(files[1][0]).parent
        for parent in reversed([folder, *folder.parents]):
            conftest = (parent / "conftest.py").as_posix()
            if (project.root / conftest).is_file():
                files.append(read("Tests", conftest))
        if files[0][0] == files[1][0]:
            raise LessonError(
                "`File` and `Tests` name the same file",
                path=block.path,
                line=block.line_of("Tests"),
                hint="File is the reader's starting file, Tests the test file that checks it",
            )
        reference = read("Reference", block.get("Reference")) if block.get("Reference") else None
        return ExerciseResolved(block, files=tuple(files), reference=reference)

    def anchor(self, r, n):
        return f"exercise-{slug(PurePosixPath(r.block.get('File')).stem)}"

    def render(self, renderer, r, anchor, result):
        assert isinstance(r, ExerciseResolved)
        labels, project = renderer.labels, renderer.project
        lock = pyodide.read_lock(project.root)
        assert lock is not None  # resolve() refused a project without one
        folder = pyodide.provide(lock, project.cache)
        size = pyodide.download_bytes(folder, lock)
        python = json.loads((folder / "pyodide-lock.json").read_text(encoding="utf-8"))["info"]["python"]
        (file, start), (tests, _) = r.files[0], r.files[1]
        title = r.block.get("Title")
        meta = [escape(title)] if title else []
        meta.append(f"<code>{escape(file)}</code>")
        links = [(labels["view-file"], renderer.links.script(file))]
        no_search = renderer.no_search
        words = {k: labels[k] for k in SCRIPT_LABELS}
        note = labels.html(
            "exercise-note",
            version=escape(lock.version),
            python=escape(python),
            size=f"{size / 1048576:.1f}",
            tests=f"<code>python -m pytest {escape(tests)}</code>",
        )
        support = "".join(
            f'<pre class="lk-ex-file" tabindex="0" data-lk-path="{escape(path)}">\n{escape(text, quote=False)}</pre>'
            for path, text in r.files[1:]
        )
        checks = labels.html("exercise-checks", files=", ".join(f"<code>{escape(p)}</code>" for p, _ in r.files[1:]))
        reference = ""
        if r.reference is not None:
            ref_path, ref_text = r.reference
            summary = labels.html("exercise-reference", file=f"<code>{escape(ref_path)}</code>")
            reference = (
                f'<details class="lk-ex-reference" hidden{no_search}><summary>{summary}</summary>'
                f'<pre class="lk-ex-file" tabindex="0" data-lk-path="{escape(ref_path)}">\n'
                f"{escape(ref_text, quote=False)}</pre></details>"
            )
        hint_id = f"{anchor}-keys"
        return (
            f'<div class="lk-block lk-exercise" id="{anchor}" data-lk-csp="{CSP_NEED}" '
            f'data-lk-file="{escape(file)}" data-lk-tests="{escape(tests)}" data-lk-size="{size / 1048576:.1f}" '
            f'data-lk-labels="{escape(json.dumps(words, ensure_ascii=False, sort_keys=True))}">'
            + renderer.head(labels["exercise"], "exercise", meta, links)
            + f'<p class="lk-ex-note"{no_search}>{note}</p>'
            + f'<div class="lk-ex-editor"{no_search}><pre class="lk-ex-lines" aria-hidden="true"></pre>'
            f'<textarea class="lk-ex-code" spellcheck="false" autocapitalize="off" autocomplete="off" wrap="off" '
            f'aria-label="{escape(labels.fill("exercise-editor", file=file))}" aria-describedby="{hint_id}">\n'
            f"{escape(start, quote=False)}</textarea></div>"
            + f'<p class="lk-ex-keys" id="{hint_id}"{no_search}>{escape(labels["exercise-keys"])}</p>'
            + f'<div class="lk-ex-bar"{no_search}>'
            f'<button type="button" class="lk-ex-button lk-ex-primary" data-lk-action="run">'
            f"{escape(labels['exercise-run'])}</button> "
            f'<button type="button" class="lk-ex-button" data-lk-action="stop" hidden>{escape(labels["exercise-stop"])}'
            "</button> "
            f'<button type="button" class="lk-ex-button" data-lk-action="reset">{escape(labels["exercise-reset"])}'
            "</button>"
            "</div>"
            + f'<div class="lk-ex-result" role="status" aria-live="polite"{no_search}></div>'
            + reference
            + f'<details class="lk-ex-checks"{no_search}><summary>{checks}</summary>{support}</details>'
            + "</div>"
        )

    def plain(self, r, project, result):
        assert isinstance(r, ExerciseResolved)
        (file, _), (tests, _) = r.files[0], r.files[1]
        return [f"> [{project.site.labels['exercise']}] `{file}` · `python -m pytest {tests}`"]


KIND = Exercise()
