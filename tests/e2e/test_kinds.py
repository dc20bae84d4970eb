"""The kind registry: every stage consults it, unknown kinds are located
errors, and a kind defined only in tests/ (tests/e2e/sample_kinds.py, registered through the
project's sourcemap/kinds.toml) builds, verifies, renders and repins."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support import block

from lessonkit import kinds, repin
from lessonkit.errors import LessonError
from lessonkit.kinds import KINDS
from lessonkit.pipeline.blocks import Block
from lessonkit.pipeline.parse import parse_page
from lessonkit.pipeline.render import anchors

pytestmark = pytest.mark.warm_cache  # the builds' subject is not the cache: start from a warm one

HERE = Path(__file__).resolve().parent


def _with_sample_kinds(site) -> None:
    shutil.copy(HERE / "sample_kinds.py", site.root / "sample_kinds.py")
    (site.root / "sourcemap" / "kinds.toml").write_text('modules = ["sample_kinds"]\n', encoding="utf-8")


SIG = block("signature", "File: autograd/core.py", "Symbol: make_vjp")
PAGE = "# 签名\n\n`grad` 定义在 [[line-of: autograd/core.py::make_vjp]]。\n\n" + SIG


def test_builtin_registry_lists_the_kinds():
    assert list(kinds.KINDS) == [
        "real-source",
        "teaching-simplification",
        "experiment",
        "snapshot",
        "figure",
        "line",
        "value",
        "exercise",
        "output",
        "runnable",
    ]
    assert [k.label for k in kinds.KINDS.fenced.values()] == [
        "REAL SOURCE",
        "TEACHING",
        "EXPERIMENT",
        "SNAPSHOT",
        "FIGURE",
        "EXERCISE",
        "OUTPUT",
        "RUNNABLE",
    ]
    assert list(kinds.KINDS.inline) == ["line", "value"]


def test_unknown_kind_is_a_located_error_not_a_fall_through():
    b = Block("signatur", "docs/a.md", 7, {}, None, None, 0, 0, 1)
    with pytest.raises(LessonError) as exc:
        kinds.KINDS.of(b)
    assert str(exc.value) == (
        "docs/a.md:7: unknown block kind `signatur` — known kinds: real-source, teaching-simplification, experiment, "
        "snapshot, figure, exercise, output, runnable"
    )


def test_registry_refuses_duplicates_and_bad_kinds():
    with pytest.raises(ValueError, match="registered twice"):
        kinds.KINDS.with_kinds([kinds.KINDS["experiment"]])
    with pytest.raises(TypeError):
        kinds.Registry([object()])


def test_registered_kind_parses_with_its_own_fields():
    import sample_kinds

    reg = kinds.KINDS.with_kinds(sample_kinds.KINDS)
    page = parse_page(
        "x\n\n" + block("signature", "File: a.py", "Symbol: f", "Commit: f53a217"), "docs/a.md", kinds=reg
    )
    assert [str(p) for p in page.problems] == [
        "docs/a.md:6: unknown key `Commit` in a signature block — allowed keys for signature: File, Symbol"
    ]
    page = parse_page(block("signature", "File: a.py"), "docs/a.md", kinds=reg)
    assert [str(p) for p in page.problems] == [
        "docs/a.md:1: signature block without `Symbol` — add a `Symbol: …` header line"
    ]
    page = parse_page(block("signatur", "File: a.py"), "docs/a.md", kinds=reg)
    assert [str(p) for p in page.problems] == ["docs/a.md:1: unknown block kind `signatur` — did you mean `signature`?"]
    assert (
        parse_page(block("signature", "File: a.py", "Symbol: f"), "docs/a.md", kinds=KINDS).items == []
    )  # not registered


def test_inline_references_are_found_in_prose_only():
    import sample_kinds

    reg = kinds.KINDS.with_kinds(sample_kinds.KINDS)
    text = (
        "见 [[line-of: a.py::f]] 与 `[[line-of: b.py::g]]`\n\n    [[line-of: code.py::h]]\n\n"
        "```\n[[line-of: c.py::i]]\n```\n<!--\n[[line-of: d.py::j]]\n-->\n[[line-off: e.py::k]]\n"
    )
    page = parse_page(text, "docs/a.md", kinds=reg)
    assert [(i.ref.argument, i.ref.line, i.col) for i in page.inline] == [("a.py::f", 1, 2)]
    assert [str(p) for p in page.problems] == [
        "docs/a.md:11: unknown inline block kind `line-off` — did you mean `line-of`?"
    ]


def test_anchor_counts_per_kind(real_project):
    text = "\n".join(block("teaching-simplification", "Title: t", body=f"x = {n}") for n in range(2))
    page = parse_page(text, "docs/a.md", kinds=KINDS)
    assert anchors([real_project.resolve(b) for b in page.blocks]) == ["teach-1", "teach-2"]


def test_sample_kind_builds_verifies_renders_and_repins(site, monkeypatch):
    _with_sample_kinds(site)
    site.page("a.md", PAGE)
    v = site.verify()
    assert v.returncode == 0, v.stderr
    assert "verify: 2 page(s)" in v.stdout and "0 problem(s)" in v.stdout
    b = site.build()
    assert b.returncode == 0, b.stderr
    html = (site.root / "site" / "a" / "index.html").read_text(encoding="utf-8")
    project = site.project()
    line = next(d.start for d in project.pinned.file("autograd/core.py").definitions if d.name == "make_vjp")
    assert '<div class="lk-block lk-signature" id="sig-make_vjp">' in html
    assert "<p><code>def make_vjp(fun, x):</code></p>" in html
    assert f'<a class="lk-line-of" href="../source/autograd/core.py/#L{line}-L{line}">第 {line} 行</a>' in html
    # repin against the same tree: the signature's excerpt is compared like any real source
    monkeypatch.setenv("AUTOGRAD_SOURCE", str(site.pinned_root))
    with repin.acquire(str(site.pinned_root), project.cache, project.pin, None) as target:
        report = repin.build_report(project, target)
    assert [(i.page, i.kind, i.label, i.status) for i in report.items] == [
        ("docs/a.md", "real-source", "autograd/core.py::make_vjp", "unchanged")
    ]


def test_sample_kind_errors_are_located(site):
    _with_sample_kinds(site)
    site.page(
        "a.md",
        "# 签名\n\n[[line-of: autograd/core.py::nope]]\n\n"
        + block("signature", "File: autograd/core.py", "Symbol: grad", body="x"),
    )
    b = site.build()
    assert b.returncode != 0
    assert (
        "docs/a.md:9: a signature block has no body — remove the body; the signature is read from the pinned "
        "source" in b.stderr
    )
    assert (
        "docs/a.md:3: `nope` is not defined in autograd/core.py — name a function or class of the pinned file"
        in b.stderr
    )


def test_kinds_config_errors_are_located(site):
    (site.root / "sourcemap" / "kinds.toml").write_text('modules = ["no_such_kinds"]\n', encoding="utf-8")
    v = site.verify()
    assert v.returncode != 0
    assert "sourcemap/kinds.toml:1: cannot import kind module `no_such_kinds`: ModuleNotFoundError" in v.stderr


def test_a_project_module_is_imported_from_the_project_root_even_when_the_root_is_last_on_sys_path(
    tmp_path, monkeypatch
):
    """The editable install (flit_core) puts the repository root at the end of sys.path: a module
    of the project root must still win over an installed one of the same name earlier on it."""
    import sys

    from lessonkit.config.modules import import_project_module

    installed, project = tmp_path / "installed", tmp_path / "project"
    for folder, where in ((installed, "installed"), (project, "project")):
        folder.mkdir()
        (folder / "lk_shadowed_mod.py").write_text(f"WHERE = {where!r}\n", encoding="utf-8")
    monkeypatch.setattr(sys, "path", [str(installed), *sys.path, str(project)])
    monkeypatch.delitem(sys.modules, "lk_shadowed_mod", raising=False)
    module = import_project_module(project, "lk_shadowed_mod", "sourcemap/kinds.toml", 1, "kind")
    assert module.WHERE == "project"
    assert sys.path[0] == str(installed) and sys.path[-1] == str(project)  # sys.path as it was
    sys.modules.pop("lk_shadowed_mod", None)


def test_a_kind_module_that_ends_the_process_at_import_is_one_line_not_a_silent_exit(site):
    """kinds.toml modules are trusted code; still, `os._exit(0)` while verify imports one must not
    end verify with exit code 0 and no output."""
    (site.root / "sourcemap" / "kinds.toml").write_text('modules = ["quitter"]\n', encoding="utf-8")
    (site.root / "quitter.py").write_text("import os\nos._exit(0)\n", encoding="utf-8")
    site.page("p.md", "# t\n")
    r = site.run("-m", "lessonkit", "verify", timeout=120)
    assert r.returncode == 1
    assert [line for line in r.stderr.splitlines() if line.startswith("sourcemap/")] == [
        "sourcemap/kinds.toml:1: cannot import kind module `quitter`: it called os._exit(0) while it was imported, "
        "which would end lessonkit at once — the module must be importable from the project root"
    ]


def test_a_kind_module_that_hangs_at_import_is_stopped_after_the_bound(tmp_path):
    import subprocess
    import sys

    (tmp_path / "sleeper.py").write_text("while True:\n    pass\n", encoding="utf-8")
    code = (
        "import sys; from pathlib import Path; from lessonkit.config import modules\n"
        "from lessonkit.errors import LessonError\n"
        "modules.IMPORT_SECONDS = 1\n"
        "try:\n    modules.import_project_module(Path(sys.argv[1]), 'sleeper', 'sourcemap/kinds.toml', 1, 'kind')\n"
        "except LessonError as exc:\n    print(exc)\n"
    )
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert r.stdout == (
        "sourcemap/kinds.toml:1: cannot import kind module `sleeper`: its import did not end within 1 s — the "
        "module must be importable from the project root\n"
    ), r.stderr
