"""Mistakes in an `exercise` block are one located line each, found by `verify` before any build."""

from __future__ import annotations

import shutil

from support import ROOT, block

from lessonkit.kinds import exercise


def _files(site) -> None:
    folder = site.root / "mini-autograd" / "ex"
    folder.mkdir(parents=True)
    (folder / "stage.py").write_text("def f():\n    raise NotImplementedError\n", encoding="utf-8")
    (folder / "test_stage.py").write_text("def test_f():\n    assert True\n", encoding="utf-8")


def _page(site, *header: str, body: str | None = None):
    return site.page("a.md", "# A\n\n" + block("exercise", *header, body=body))


def test_a_project_without_the_runtime_lock_is_told_where_to_pin_it(site):
    _files(site)
    page = _page(site, "File: mini-autograd/ex/stage.py", "Tests: mini-autograd/ex/test_stage.py")
    assert site.problems([page]) == [
        "docs/a.md:3: an exercise block needs the browser runtime, and this project pins none — add "
        "sourcemap/pyodide.toml (see the engine guide, `exercise`)"
    ]


def test_each_field_mistake_is_one_line_at_its_field(site):
    _files(site)
    shutil.copy(ROOT / "sourcemap" / "pyodide.toml", site.root / "sourcemap" / "pyodide.toml")
    ok = _page(site, "File: mini-autograd/ex/stage.py", "Tests: mini-autograd/ex/test_stage.py")
    assert site.problems([ok]) == []
    page = _page(site, "File: mini-autograd/ex/stage.py", "Tests: mini-autograd/ex/stage.py")
    assert site.problems([page]) == [
        "docs/a.md:5: `Tests: mini-autograd/ex/stage.py` is not a pytest test file — name the test_*.py file "
        "whose checks the reader runs"
    ]
    page = _page(site, "File: mini-autograd/ex/stag.py", "Tests: mini-autograd/ex/test_stage.py")
    (problem,) = site.problems([page])
    assert problem.startswith("docs/a.md:4: no file `mini-autograd/ex/stag.py` in this repository")
    page = _page(site, "File: mini-autograd/ex/stage.py", "Tests: mini-autograd/ex/test_stage.py", body="x = 1")
    assert site.problems([page]) == ["docs/a.md:7: an exercise block has no body — name the files in its header"]


def test_the_block_asks_its_page_for_wasm_compilation_only():
    assert exercise.CSP_NEEDS == {"wasm-unsafe-eval": (("script-src", "'wasm-unsafe-eval'"), ("worker-src", "blob:"))}


def test_the_policy_reads_what_a_block_asks_for_from_the_one_mapping():
    """The request a block writes on its root and the sources it stands for are written in one place,
    which the build's and verify's policy read."""
    from lessonkit.site import csp

    assert csp.NEEDS is exercise.CSP_NEEDS and exercise.CSP_NEED in exercise.CSP_NEEDS
    tree = csp._parse(f'<div class="lk-block lk-exercise" data-lk-csp="{exercise.CSP_NEED}"></div>')
    assert csp.extras(tree) == {"script-src": ("'wasm-unsafe-eval'",), "worker-src": ("blob:",)}
