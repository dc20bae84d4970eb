"""A guest turns on one course feature by its option, and gets that feature and nothing else:
`site_style` (lessonkit's site-wide stylesheet and script on every page), `source_browser`,
`symbol_index`, `acceptance`, `bundle` (their pages or file, made from the pages that use blocks)
and `offline_check` (the build fails on a request to another host). A course cannot turn one off.

The feature builds share one small site with a pinned block (the real pin), built once per variant
for the whole module; each test compares a variant's written files with the plain guest's."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from selectolax.lexbor import LexborHTMLParser
from support import ROOT

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


# ---------------------------------------------------------------- the course features, one by one

FEATURE_CONFIG = """site_name: A guest site
theme:
  name: material
{font}markdown_extensions:
  - attr_list
plugins:
  - search
{plugin}
nav:
  - index.md
  - Guide: guide/usage.md
"""
BLOCK = "```real-source\nFile: autograd/tracer.py\nSymbol: Box\nCommit: f53a217\n```\n"
FEATURE_PAGES = {
    "index.md": "# Home\n\nSome text with `code`.\n\n```python\nprint('not a lessonkit block')\n```\n",
    "guide/usage.md": "# Usage\n\nThe tracer's box:\n\n" + BLOCK + "\n[Home](../index.md)\n",
}
NO_FONTS = "  font: false\n"
VARIANTS = {
    "plain": "  - lessonkit",
    "source_browser": "  - lessonkit:\n      source_browser: true",
    "symbol_index": "  - lessonkit:\n      source_browser: true\n      symbol_index: true",
    "acceptance": "  - lessonkit:\n      acceptance: true",
    "bundle": "  - lessonkit:\n      bundle: true",
    "offline_check": "  - lessonkit:\n      offline_check: true",
}


class Guests:
    """The feature site, built once per variant (:data:`VARIANTS`) and kept for the module."""

    def __init__(self, tmp: Path, pinned_root: Path):
        self.tmp, self.pinned_root = tmp, pinned_root
        self.built: dict[str, dict[str, bytes]] = {}

    def project(self, name: str, plugin: str, font: str = NO_FONTS) -> Path:
        proj = self.tmp / name
        for rel, text in FEATURE_PAGES.items():
            (proj / "docs" / rel).parent.mkdir(parents=True, exist_ok=True)
            (proj / "docs" / rel).write_text(text, encoding="utf-8")
        (proj / "sourcemap").mkdir()
        for file in ("pin.toml", "manifest.sha256", "site.toml"):
            shutil.copy(ROOT / "sourcemap" / file, proj / "sourcemap" / file)
        toml = proj / "sourcemap" / "site.toml"  # the series' own pages are not this site's
        toml.write_text(
            re.sub(r"(?ms)^\[(?:search|pages)\]\n.*?(?=^\[|\Z)", "", toml.read_text(encoding="utf-8")),
            encoding="utf-8",
        )
        (proj / "experiments").mkdir()
        for helper in sorted((ROOT / "experiments").glob("_*.py")):
            shutil.copy(helper, proj / "experiments" / helper.name)
        (proj / "mkdocs.yml").write_text(FEATURE_CONFIG.format(font=font, plugin=plugin), encoding="utf-8")
        return proj

    def run(self, proj: Path) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LESSONKIT_") or k == "LESSONKIT_SANDBOX"}
        env.update(
            NO_MKDOCS_2_WARNING="1",
            SOURCE_DATE_EPOCH="1764460800",
            LESSONKIT_CACHE=str(self.tmp / "cache"),
            AUTOGRAD_SOURCE=str(self.pinned_root),
        )
        return subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "--strict"], cwd=proj, env=env, capture_output=True, text=True
        )

    def files(self, variant: str) -> dict[str, bytes]:
        if variant not in self.built:
            proj = self.project(variant, VARIANTS[variant])
            done = self.run(proj)
            assert done.returncode == 0, done.stderr[-3000:]
            site = proj / "site"
            self.built[variant] = {
                p.relative_to(site).as_posix(): p.read_bytes() for p in site.rglob("*") if p.is_file()
            }
        return self.built[variant]

    def diff(self, variant: str, base: str = "plain") -> tuple[list[str], list[str]]:
        """(files the variant adds, files both have that differ); it removes none."""
        one, other = self.files(base), self.files(variant)
        assert set(one) - set(other) == set()
        return sorted(set(other) - set(one)), sorted(u for u in one if one[u] != other[u])


@pytest.fixture(scope="module")
def guests(tmp_path_factory, pinned_root) -> Guests:
    return Guests(tmp_path_factory.mktemp("guests"), pinned_root)


def _errors(done: subprocess.CompletedProcess) -> list[str]:
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    return [line for line in done.stderr.splitlines() if line.startswith("ERROR")]


def _page(files: dict[str, bytes], uri: str) -> LexborHTMLParser:
    return LexborHTMLParser(files[uri].decode("utf-8"))


def _search_added(plain: dict[str, bytes], other: dict[str, bytes], changed: str = "") -> list[str]:
    """The pages whose entries ``other``'s search index adds to ``plain``'s, which it otherwise keeps
    (but for the entries of the page ``changed``)."""

    def docs(files):
        out: dict[str, list] = {}
        for doc in json.loads(files["search/search_index.json"])["docs"]:
            out.setdefault(doc["location"].split("#")[0], []).append(doc)
        return out

    one, two = docs(plain), docs(other)
    assert {k: v for k, v in one.items() if k != changed} == {k: two[k] for k in one if k != changed}
    return sorted(set(two) - set(one))


def _with_site_style(tree: LexborHTMLParser, depth: str) -> bool:
    links = [n.attributes.get("href") for n in tree.css('link[rel="stylesheet"]')]
    scripts = [n.attributes.get("src") for n in tree.css("script[src]")]
    return f"{depth}assets/lessonkit.css" in links and f"{depth}assets/lessonkit.js" in scripts


def test_source_browser_adds_the_source_pages_and_links_the_blocks_into_them(guests, pinned_root):
    added, changed = guests.diff("source_browser")
    package = sorted(
        p.relative_to(pinned_root).as_posix()
        for p in (pinned_root / "autograd").rglob("*.py")
        if "__pycache__" not in p.parts
    )
    pages = [f"source/{f}/index.html" for f in package] + ["source/index.html"]
    pages += [f"code/experiments/{h.name}/index.html" for h in sorted((ROOT / "experiments").glob("_*.py"))]
    assert added == sorted([*pages, *SITE_STYLE])
    # the page with the block (its links now lead into the browser) and the search index, which
    # holds the index of the source browser (the source pages stay out of it); nothing else
    assert changed == ["guide/usage/index.html", "search/search_index.json"]
    files = guests.files("source_browser")
    assert _search_added(guests.files("plain"), files, "guide/usage/") == ["source/"]
    block = _page(files, "guide/usage/index.html")
    hrefs = [a.attributes.get("href") for a in block.css(".lk-block a")]
    assert "../../source/autograd/tracer.py/#L156-L179" in hrefs
    source = _page(files, "source/autograd/tracer.py/index.html")
    line = source.css_first('[id="L156"]')
    assert line is not None and "class Box" in line.text()
    assert _with_site_style(source, "../../../")
    assert not _with_site_style(block, "../../")  # the guest's own pages keep the blocks' stylesheet only


def test_symbol_index_adds_its_page_listing_the_cited_symbols_linked_into_the_source_browser(guests):
    added, changed = guests.diff("symbol_index", base="source_browser")
    assert (added, changed) == (["symbols/index.html"], [])
    files = guests.files("symbol_index")
    index = _page(files, "symbols/index.html")
    rows = [[td.text(strip=True) for td in tr.css("td")] for tr in index.css("article tbody tr")]
    assert rows == [["Box", "L156–L179", "Usage"]]
    hrefs = [a.attributes.get("href") for a in index.css("article a")]
    assert hrefs == ["../source/autograd/tracer.py/", "../source/autograd/tracer.py/#L156", "../guide/usage/#src-Box"]
    assert _page(files, "source/autograd/tracer.py/index.html").css_first('[id="L156"]') is not None
    assert _page(files, "guide/usage/index.html").css_first('[id="src-Box"]') is not None
    assert _with_site_style(index, "../")


def test_acceptance_adds_the_acceptance_page_of_the_pages_that_use_blocks(guests):
    added, changed = guests.diff("acceptance")
    assert added == sorted(["attachments/acceptance/index.html", *SITE_STYLE])
    assert changed == ["search/search_index.json"]  # the page is searchable, as in a course
    assert _search_added(guests.files("plain"), guests.files("acceptance")) == ["attachments/acceptance/"]
    page = _page(guests.files("acceptance"), "attachments/acceptance/index.html")
    rows = [[c.text(strip=True) for c in tr.css("td")] for tr in page.css("article tbody tr")]
    assert ["docs/guide/usage.md", "1", "0", "0", "0", "0", "0", "0", "0"] in rows  # one real-source block, checked
    assert _with_site_style(page, "../../")


def test_bundle_adds_the_zip_of_the_code_folders_and_nothing_else(guests):
    added, changed = guests.diff("bundle")
    assert (added, changed) == (["downloads/autograd-resources.zip"], [])
    with zipfile.ZipFile(io.BytesIO(guests.files("bundle")["downloads/autograd-resources.zip"])) as z:
        names = z.namelist()
        assert "autograd-resources/README.md" in names
        for helper in sorted((ROOT / "experiments").glob("_*.py")):
            assert z.read(f"autograd-resources/experiments/{helper.name}") == helper.read_bytes()


def test_offline_check_passes_a_site_without_requests_to_other_hosts_unchanged(guests):
    assert guests.diff("offline_check") == ([], [])


def test_offline_check_fails_on_a_request_to_another_host_one_line_each(guests):
    proj = guests.project("fonts", VARIANTS["offline_check"], font="")  # Material's web fonts are on
    done = guests.run(proj)
    lines = _errors(done)
    found = []
    for line in lines:
        head, _, hint = line.partition(" — ")
        assert hint == "ship the file with the site (readers may not reach that host) (offline_check)"
        page, what, url = head.removeprefix("ERROR   -  ").split(": ", 2)
        assert what == "loads a resource from another host"
        found.append((page, url.split("/")[2]))
    hosts = ("fonts.gstatic.com", "fonts.googleapis.com")
    pages = ("site/404.html", "site/guide/usage/index.html", "site/index.html")
    assert sorted(found) == sorted((page, host) for page in pages for host in hosts)
    assert (done.stdout + done.stderr).splitlines().count(
        f"lessonkit: {len(found)} request(s) to another host in the written site (offline_check)"
    ) == 1  # MkDocs' abort


def test_symbol_index_without_the_source_browser_is_one_error_naming_both(guests):
    proj = guests.project("symbols-alone", "  - lessonkit:\n      symbol_index: true")
    line = (proj / "mkdocs.yml").read_text(encoding="utf-8").split("\n").index("  - lessonkit:") + 1
    assert _errors(guests.run(proj)) == [
        f"ERROR   -  mkdocs.yml:{line}: plugins.lessonkit.symbol_index is true, but plugins.lessonkit.source_browser "
        "is not: the symbol index links each symbol into the source browser — add `source_browser: true`, or "
        "remove `symbol_index: true`"
    ]


def test_a_course_cannot_turn_a_feature_off(tmp_path):
    proj = tmp_path / "course"
    (proj / "docs").mkdir(parents=True)
    (proj / "docs" / "index.md").write_text("# Home\n", encoding="utf-8")
    (proj / "mkdocs.yml").write_text(
        "site_name: x\ntheme:\n  name: material\n  font: false\nplugins:\n  - lessonkit:\n      course: true\n"
        "      bundle: false\n",
        encoding="utf-8",
    )
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", LESSONKIT_CACHE=str(tmp_path / "cache"))
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict"], cwd=proj, env=env, capture_output=True, text=True
    )
    assert _errors(done) == [
        "ERROR   -  mkdocs.yml:6: plugins.lessonkit.bundle is false, but a course has every course feature (its "
        "generated pages and its checks rely on each other) — remove `bundle: false`, or remove `course: true` "
        "(a guest, whose options each turn one on)"
    ]


def test_a_feature_without_the_pin_is_one_line_naming_the_option(guests):
    proj = guests.project("no-pin", VARIANTS["bundle"])
    shutil.rmtree(proj / "sourcemap")
    (proj / "docs" / "guide" / "usage.md").write_text("# Usage\n", encoding="utf-8")  # no block either
    assert _errors(guests.run(proj)) == [
        "ERROR   -  mkdocs.yml: plugins.lessonkit.bundle needs the series' build: sourcemap/pin.toml: does not "
        "exist — sourcemap/pin.toml names the pin (see the engine guide, 'The pin')"
    ]
