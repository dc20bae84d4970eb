"""The layer table of docs/dev/architecture.md is the import-linter contract's, and no two folders of
lessonkit import each other (tools/layers.py, which `nox -s lint` runs with --check)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import layers  # noqa: E402


def test_the_checkout_agrees_with_its_contract_and_has_no_new_folder_cycle():
    assert layers.check(ROOT) == []


def _package(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


CONTRACT = """
[tool.importlinter]
root_package = "pkg"

[[tool.importlinter.contracts]]
name = "lessonkit layers"
type = "layers"
layers = ["pkg.top", "pkg.mid.one | pkg.mid.two", "pkg.base"]
"""


def test_the_table_lists_the_contracts_layers_lowest_first_with_each_modules_first_docstring_paragraph(tmp_path):
    _package(
        tmp_path,
        {
            "pyproject.toml": CONTRACT,
            "pkg/__init__.py": '"""The package."""\n',
            "pkg/top.py": '"""The top: it uses\nthe rest.\n\nMore that the table leaves out."""\n',
            "pkg/mid/__init__.py": '"""Middle."""\n',
            "pkg/mid/one.py": '"""One | with a bar."""\n',
            "pkg/mid/two.py": '"""Two."""\n',
            "pkg/base/__init__.py": '"""The base folder."""\n',
        },
    )
    got = layers.table(tmp_path, layers.contract_layers(tmp_path / "pyproject.toml"))
    assert got == (
        "| layer | module | what it holds |\n"
        "|---|---|---|\n"
        "| 1 | `base/` | The base folder. |\n"
        "| 2 | `mid/one.py` | One \\| with a bar. |\n"
        "|  | `mid/two.py` | Two. |\n"
        "| 3 | `top.py` | The top: it uses the rest. |"
    )


def test_the_table_is_rewritten_between_its_markers_only():
    doc = f"# x\n\nbefore\n{layers.LAYERS_START}\n| old |\n{layers.LAYERS_END}\nafter\n"
    assert (
        layers.with_table(doc, "| new |")
        == f"# x\n\nbefore\n{layers.LAYERS_START}\n| new |\n{layers.LAYERS_END}\nafter\n"
    )


def test_a_doc_without_markers_is_refused_with_one_line():
    with pytest.raises(SystemExit) as exc:
        layers.with_table("# x\n| a |\n", "| new |", "docs/x.md")
    assert str(exc.value) == (
        f"docs/x.md: no marker lines {layers.LAYERS_START!r} and {layers.LAYERS_END!r} — add them around the table"
    )


def test_folder_cycles_are_found_at_every_level_through_every_kind_of_import(tmp_path):
    _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "def f():\n    from pkg.b import inner\n",  # a function-level import
            "pkg/b/__init__.py": "",
            "pkg/b/inner.py": "from ..c import x\n",  # relative, two levels up
            "pkg/c.py": "import typing\nif typing.TYPE_CHECKING:\n    import pkg.a\nx = 1\n",
            "pkg/d/__init__.py": "",
            "pkg/d/one.py": "from pkg.d import two\n",
            "pkg/d/two.py": "from . import three\n",
            "pkg/d/three.py": "import pkg.d.one\nimport os\n",
            "pkg/e.py": "from pkg import c\n",  # imports into the cycle, is not part of it
        },
    )
    graph = layers.imports(layers.modules(tmp_path / "pkg", "pkg"), "pkg")
    assert graph["pkg.b.inner"] == {"pkg.c"}
    assert graph["pkg.e"] == {"pkg.c"}
    assert layers.folder_cycles(graph) == [("pkg.a", "pkg.b", "pkg.c"), ("pkg.d.one", "pkg.d.three", "pkg.d.two")]


def test_a_new_cycle_and_a_known_cycle_that_is_gone_each_fail_with_one_line():
    found = [("pkg.a", "pkg.b")]
    known = (("pkg.c", "pkg.d"),)
    assert layers.cycle_problems(found, known) == [
        "tools/layers.py: the folders pkg.a ⇄ pkg.b import each other — "
        "move the module that points back, or pass what it needs down as a value",
        "tools/layers.py: the cycle pkg.c ⇄ pkg.d is gone — remove it from KNOWN_CYCLES",
    ]
    assert layers.cycle_problems(found, (("pkg.a", "pkg.b"),)) == []
