"""docs/dev/pin-reference.md states every field of pin.toml as the code reads it, and its
examples are files the code accepts; the layout rules it lists name what lessonkit.cli.layout
reads."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import markdown
from selectolax.lexbor import LexborHTMLParser

from lessonkit.cli import layout
from lessonkit.config import files

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "dev" / "pin-reference.md"


def _page() -> LexborHTMLParser:
    text = DOC.read_text(encoding="utf-8")
    return LexborHTMLParser(markdown.markdown(text, extensions=["tables", "fenced_code"]))


def _fenced(lang: str) -> list[str]:
    return [node.text(deep=True) for node in _page().css(f"pre > code.language-{lang}")]


def _pin_table() -> list[tuple[str, str, bool]]:
    """(table, key, required) of each row of the first table of the page."""
    table = _page().css_first("table")
    rows = []
    for tr in table.css("tbody > tr"):
        cells = [td.text(deep=True).strip() for td in tr.css("td")]
        rows.append((cells[0].strip("[]"), cells[1], {"yes": True, "no": False}[cells[2]]))
    return rows


def test_the_pin_reference_lists_every_field_the_code_reads():
    assert _pin_table() == [(f.section, f.key, f.required) for f in files.PIN_FIELDS]


def test_every_pin_example_of_the_reference_is_accepted(tmp_path):
    examples = _fenced("toml")
    assert len(examples) == 2
    for n, text in enumerate(examples):
        path = tmp_path / f"pin{n}.toml"
        path.write_text(text, encoding="utf-8")
        fields = files.load_pin_fields(path, path.name)
        assert fields == {k: v for table in tomllib.loads(text).values() for k, v in table.items()}
    # the first pins a release archive alone, the second a commit and a checkout variable as well
    assert [sorted(tomllib.loads(text)["upstream"]) for text in examples] == [
        ["repo", "version"],
        ["commit", "repo", "version"],
    ]


def test_the_manifest_example_of_the_reference_is_accepted(tmp_path):
    (text,) = _fenced("text")
    path = tmp_path / "manifest.sha256"
    path.write_text(text, encoding="utf-8")
    manifest, lines = files.read_manifest(path, "manifest.sha256")
    assert list(manifest) == [".coveragerc", ".github/FUNDING.yml", ".github/workflows/main.yml"]
    assert list(lines.values()) == [1, 2, 3]


def test_the_reference_names_the_build_helpers_and_backends_the_layout_rules_use():
    doc = re.sub(r"\s+", " ", DOC.read_text(encoding="utf-8"))
    for name in ("setup.py", "versioneer.py"):
        assert name.removesuffix(".py") in layout.BUILD_MODULES and f"`{name}`" in doc
    for folder in ("tests", "docs", "examples", "scripts"):
        assert folder in layout.NOT_PACKAGES and f"`{folder}`" in doc
    for backend, words in (
        ("maturin", "maturin"),
        ("scikit_build_core", "scikit-build-core"),
        ("mesonpy", "meson-python"),
    ):
        assert backend in layout.NATIVE_BACKENDS and words in doc
