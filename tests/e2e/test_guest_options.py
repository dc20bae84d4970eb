"""A guest turns on one course feature by its option: `site_style: true` adds lessonkit's site-wide
stylesheet and script to every page, and nothing else; a course cannot turn it off."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

from lessonkit.integrations.mkdocs.guest import SITE_STYLE

CONFIG = """site_name: A guest site
theme:
  name: material
plugins:
  - search
{plugin}
nav:
  - index.md
  - Guide: guide/usage.md
"""
PAGES = {
    "index.md": "# Home\n\nSome text with `code`.\n\n```python\nprint('not a lessonkit block')\n```\n",
    "guide/usage.md": "# Usage\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n[Home](../index.md)\n",
}


def _build(tmp: Path, name: str, plugin: str) -> dict[str, bytes]:
    proj = tmp / name
    for rel, text in PAGES.items():
        (proj / "docs" / rel).parent.mkdir(parents=True, exist_ok=True)
        (proj / "docs" / rel).write_text(text, encoding="utf-8")
    (proj / "mkdocs.yml").write_text(CONFIG.format(plugin=plugin), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LESSONKIT_")}
    env.update(NO_MKDOCS_2_WARNING="1", SOURCE_DATE_EPOCH="1764460800", LESSONKIT_CACHE=str(tmp / "cache"))
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict"], cwd=proj, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    site = proj / "site"
    return {p.relative_to(site).as_posix(): p.read_bytes() for p in site.rglob("*") if p.is_file()}


def _without_site_style(html: str) -> tuple[str, list[str]]:
    """The page without the <link> to lessonkit.css and the <script> of lessonkit.js, and those two."""
    tree = LexborHTMLParser(html)
    found = [n.html for n in tree.css('link[href$="assets/lessonkit.css"], script[src$="assets/lessonkit.js"]')]
    for markup in found:
        assert html.count(markup) == 1
        html = html.replace(markup, "")
    return html, found


def _lines(html: str) -> list[str]:
    return [line for line in html.split("\n") if line.strip()]


def test_site_style_on_a_guest_adds_the_stylesheet_script_and_font_to_every_page_and_nothing_else(tmp_path):
    plain = _build(tmp_path, "plain", "  - lessonkit")
    styled = _build(tmp_path, "styled", "  - lessonkit:\n      site_style: true")

    added = sorted(set(styled) - set(plain))
    assert added == sorted(SITE_STYLE)
    assert set(plain) - set(styled) == set()
    assert all(styled[uri] == SITE_STYLE[uri].read_bytes() for uri in added)
    pages = sorted(uri for uri in plain if uri.endswith(".html"))
    assert pages == ["404.html", "guide/usage/index.html", "index.html"]
    for uri in plain:
        if uri in pages:
            rest, found = _without_site_style(styled[uri].decode("utf-8"))
            depth = "../" * uri.count("/") if uri != "404.html" else "/"
            assert found == [
                f'<link rel="stylesheet" href="{depth}assets/lessonkit.css">',
                f'<script src="{depth}assets/lessonkit.js"></script>',
            ], uri
            # the theme's loop over extra_css and extra_javascript writes each with its own indented lines
            assert _lines(rest) == _lines(plain[uri].decode("utf-8")), uri
        else:  # the search index, the sitemap, Material's assets: byte for byte
            assert styled[uri] == plain[uri], uri


def test_a_course_cannot_turn_its_site_style_off(tmp_path):
    proj = tmp_path / "course"
    (proj / "docs").mkdir(parents=True)
    (proj / "docs" / "index.md").write_text("# Home\n", encoding="utf-8")
    (proj / "mkdocs.yml").write_text(
        "site_name: x\ntheme:\n  name: material\n  font: false\nplugins:\n  - lessonkit:\n      course: true\n"
        "      site_style: false\n",
        encoding="utf-8",
    )
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", LESSONKIT_CACHE=str(tmp_path / "cache"))
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict"], cwd=proj, env=env, capture_output=True, text=True
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR")]
    assert errors == [
        "ERROR   -  mkdocs.yml: plugins.lessonkit.site_style is false, but a course's generated pages (source "
        "browser, symbol index, attachments) need lessonkit's site-wide stylesheet and script — remove "
        "`site_style: false`, or remove `course: true` (a guest)"
    ]
