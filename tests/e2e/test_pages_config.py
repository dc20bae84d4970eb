"""site.toml ``[pages]``: the lessons' folder, the API page, the pages whose plain text the
bundle holds and the pages for the series' authors are the project's to name. A throwaway series
keeps its lessons in ``chapters/`` and a tour page in the bundle; the build, ``verify --site`` and
``lessonkit new`` follow it."""

from __future__ import annotations

import shutil
import zipfile

import pytest
from support import ROOT, TmpSite, block

pytestmark = pytest.mark.warm_cache  # the builds' subject is not the cache: start from a warm one

REAL = block(
    "real-source",
    "File: autograd/core.py",
    "Symbol: backward_pass",
    "Commit: f53a21734fdfae636f448744d9097d8d35a643a0",
)
PAGES = '\n[pages]\nlessons = "chapters/"\nbundle-text = ["tour.md"]\n'
NAV = "nav:\n  - index.md\n  - tour.md\n  - Chapters:\n      - chapters/01-first.md\n      - chapters/03-third.md\n"


def _series(site: TmpSite) -> None:
    toml = site.root / "sourcemap" / "site.toml"
    toml.write_text(toml.read_text(encoding="utf-8") + PAGES, encoding="utf-8")
    config = site.root / "mkdocs.yml"
    config.write_text(config.read_text(encoding="utf-8") + NAV, encoding="utf-8")
    site.page("chapters/01-first.md", f"# 第一章\n\n{REAL}\n")
    site.page("chapters/03-third.md", "# 第三章\n\n正文。\n")
    site.page("tour.md", f"# 导览\n\n导览正文。\n\n{REAL}\n")


def test_a_series_names_its_lessons_folder_and_its_bundle_pages(site):
    _series(site)
    r = site.build()
    assert r.returncode == 0, r.stderr[-3000:]
    chapter = (site.root / "site" / "chapters" / "01-first" / "index.html").read_text(encoding="utf-8")
    tour = (site.root / "site" / "tour" / "index.html").read_text(encoding="utf-8")
    # a lesson (in chapters/) lists the source it cites; another page citing the same source does not
    assert 'id="cited-source"' in chapter and "lk-cited-list" in chapter
    assert 'id="cited-source"' not in tour
    with zipfile.ZipFile(site.root / "site" / "downloads" / "autograd-resources.zip") as zf:
        names = zf.namelist()
        assert "autograd-resources/attachments/tour.md" in names
        text = zf.read("autograd-resources/attachments/tour.md").decode("utf-8")
    assert text.startswith("# 导览\n") and "def backward_pass(g, end_node):" in text
    assert not any(n.endswith("/01-first.md") for n in names)  # a lesson's plain text is not listed
    v = site.verify("--site", "site")
    assert v.returncode == 0, v.stdout + v.stderr


def test_new_writes_into_the_lessons_folder_and_after_the_lesson_before_it(site):
    _series(site)
    shutil.copytree(ROOT / "templates", site.root / "templates")  # the series' new-lesson templates
    r = site.run("-m", "lessonkit", "new", "02", "第二章", "second")
    assert r.returncode == 0, r.stderr
    assert "created docs/chapters/02-second.md" in r.stdout
    assert (site.root / "docs" / "chapters" / "02-second.md").is_file()
    assert not (site.root / "docs" / "lessons").exists()
    nav = (site.root / "mkdocs.yml").read_text(encoding="utf-8").split("nav:\n", 1)[1]
    assert nav.splitlines() == [
        "  - index.md",
        "  - tour.md",
        "  - Chapters:",
        "      - chapters/01-first.md",
        "      - chapters/02-second.md",
        "      - chapters/03-third.md",
    ]


def test_pages_for_authors_are_not_listed_among_the_pages_citing_a_line(site):
    """A page named in ``[pages] authors`` cites a symbol as every page may; the source browser and
    the symbol index list the lesson and the tour citing it, not the authors' page."""
    _series(site)
    toml = site.root / "sourcemap" / "site.toml"
    toml.write_text(toml.read_text(encoding="utf-8") + 'authors = ["guide.md"]\n', encoding="utf-8")
    config = site.root / "mkdocs.yml"
    config.write_text(config.read_text(encoding="utf-8") + "  - guide.md\n", encoding="utf-8")
    site.page("guide.md", f"# 作者指南\n\n{REAL}\n")
    r = site.build()
    assert r.returncode == 0, r.stderr[-3000:]
    core = (site.root / "site" / "source" / "autograd" / "core.py" / "index.html").read_text(encoding="utf-8")
    cited = core.split('id="cited-backward_pass"', 1)[1].split("</tr>", 1)[0]
    symbols = (site.root / "site" / "symbols" / "index.html").read_text(encoding="utf-8")
    row = symbols.split("<code>backward_pass</code>", 1)[1].split("</tr>", 1)[0]
    for html in (cited, row):
        assert "第一章" in html and "导览" in html and "作者指南" not in html and "guide/" not in html, html
    assert "L25–L32" in row and "L25–L25" not in core
    v = site.verify("--site", "site")
    assert v.returncode == 0, v.stdout + v.stderr
