"""lessonkit as a guest on other people's MkDocs sites: ``plugins: - lessonkit`` (no ``course``)
changes nothing it was not asked to.

Each site is a real third-party MkDocs site from an sdist on the package index (pinned by
sha256, kept in the test cache ``.cache/guest-sites``, never in git): the pymdown-extensions
documentation (Material, its own Markdown extensions and helper module), the
mkdocs-print-site-plugin documentation (with its print-site plugin, which copies every page
into one print page) and the mkdocs-glightbox demo (with its glightbox plugin, which rewrites
every image). A site is built without and with the plugin: every file written must be byte
for byte the same (SOURCE_DATE_EPOCH fixes the sitemap dates). Then one page gets a real-source
block: only that page (and what copies every page: the search index, the print page) changes,
the block shows the pinned lines, and the one stylesheet it brings is scoped to blocks.

What a site needs to build offline here (a plugin that is not installed, a module the sdist
lacks) is changed the same way for both builds; each change is listed with its site. An
end-to-end test (builds real sites, about a minute of CPU; the sdists come from the index once).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import tinycss2
from selectolax.lexbor import LexborHTMLParser
from support import ROOT

from lessonkit.integrations.mkdocs.guest import BLOCKS_CSS, STYLESHEET
from lessonkit.source.fetch import index_download, safe_extract

CACHE = ROOT / ".cache" / "guest-sites"
BLOCK = "```real-source\nFile: autograd/tracer.py\nSymbol: Box\nCommit: f53a217\n```\n"


@dataclass(frozen=True)
class Site:
    project: str  # on the package index
    filename: str
    sha256: str
    config: str  # the site's mkdocs.yml, in the sdist
    docs: str  # its docs_dir, relative to the config's folder
    offline: tuple[tuple[str, str], ...]  # (text, replacement) of the config: what builds here, both builds
    plugin: tuple[str, str]  # (text, replacement) that adds `- lessonkit` to its plugins
    page: str  # the page that gets a block (docs-relative)
    page_html: str  # the file it is written to
    copies: tuple[str, ...] = ()  # files that hold every page's content (search index, print page)
    pythonpath: tuple[str, ...] = ()  # folders of the sdist the config imports from
    env: tuple[tuple[str, str], ...] = ()


SITES = [
    Site(
        "pymdown-extensions",
        "pymdown_extensions-10.16.tar.gz",
        "71dac4fca63fabeffd3eb9038b756161a33ec6e8d230853d3cecf562155ab3de",
        "pymdown_extensions-10.16/mkdocs.yml",
        "docs/src/markdown",
        (
            # plugins that are not installed here (git history, minifier)
            (
                "  - search:\n  - git-revision-date-localized:\n      fallback_to_build_date: true\n"
                "  - minify:\n      minify_html: true\n",
                "  - search\n",
            ),
            ("  - tools.collapse_code:\n      expand_text: ''\n      collapse_text: ''\n", ""),  # not in the sdist
            ("      check_paths: true\n", "      check_paths: false\n"),  # SECURITY.md is not in the sdist
        ),
        ("plugins:\n  - search\n", "plugins:\n  - search\n  - lessonkit\n"),
        "extensions/caret.md",
        "extensions/caret/index.html",
        copies=("search/search_index.json",),
        pythonpath=("tools",),
    ),
    Site(
        "mkdocs-print-site-plugin",
        "mkdocs_print_site_plugin-2.9.tar.gz",
        "fb7f749a73e606e97bec7f871d9fa55ea76ba6d806d7ce124c814ac2327f537a",
        "mkdocs_print_site_plugin-2.9/mkdocs.yml",
        "docs",
        (
            (  # plugins that are not installed here (charts, git history)
                "    - charts\n    - git-revision-date-localized:\n        type: timeago\n"
                "        timezone: Europe/Amsterdam\n        locale: en\n        fallback_to_build_date: false\n"
                "        enable_creation_date: true\n",
                "",
            ),
            ("mkdocs_charts_plugin.fences.fence_vegalite", "pymdownx.superfences.fence_code_format"),
        ),
        ("plugins:\n    - search\n", "plugins:\n    - search\n    - lessonkit\n"),
        "options.md",
        "options.html",
        copies=("search/search_index.json", "print_page.html"),
    ),
    Site(
        "mkdocs-glightbox",
        "mkdocs_glightbox-0.5.3.tar.gz",
        "e5af2b6d04494358d34e0c50f493a8fde88da5daac50a86227c2495b616b7a83",
        "mkdocs_glightbox-0.5.3/demo-mkdocs/mkdocs.yml",
        "docs",
        (),
        ("plugins:\n  - glightbox:\n", "plugins:\n  - lessonkit\n  - glightbox:\n"),
        "taiwan/sea.md",
        "taiwan/sea/index.html",
        env=(("GOOGLE_ANALYTICS_KEY", "G-TEST"),),
    ),
]


def _sdist(site: Site) -> Path:
    """The site's sdist from the test cache, downloaded once (checked against its sha256)."""
    archive = CACHE / site.filename
    if not archive.is_file():
        CACHE.mkdir(parents=True, exist_ok=True)
        index_download(site.project, site.filename, site.sha256, CACHE)
    return archive


def _checked(text: str, changes) -> str:
    for old, new in changes:
        assert text.count(old) == 1, old  # the sdist is the pinned one: every change applies once
        text = text.replace(old, new)
    return text


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


class Built:
    def __init__(self, site: Site, tmp: Path, pinned_root: Path):
        self.site = site
        tree = tmp / "src"
        safe_extract(_sdist(site), tree, site.config.split("/")[0])
        self.config = tree / site.config
        self.folder = self.config.parent
        self.text = _checked(self.config.read_text(encoding="utf-8"), site.offline)
        self.tmp = tmp
        self.env = {
            **os.environ,
            "SOURCE_DATE_EPOCH": "1700000000",
            "NO_MKDOCS_2_WARNING": "1",
            "LESSONKIT_CACHE": str(tmp / "cache"),
            "AUTOGRAD_SOURCE": str(pinned_root),
            **dict(site.env),
        }
        if site.pythonpath:  # a copy of only the helper folders (not the sdist's own package)
            extra = tmp / "pythonpath"
            for name in site.pythonpath:
                shutil.copytree(tree / site.config.split("/")[0] / name, extra / name)
            self.env["PYTHONPATH"] = str(extra)

    def build(self, name: str, config_text: str) -> subprocess.CompletedProcess:
        config = self.folder / f"{name}.mkdocs.yml"
        config.write_text(config_text, encoding="utf-8")
        out = self.tmp / name
        return subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "-f", str(config), "-d", str(out)],
            cwd=self.folder,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=600,
        )

    def site_files(self, name: str, config_text: str) -> dict[str, bytes]:
        r = self.build(name, config_text)
        assert r.returncode == 0, r.stderr[-3000:]
        return _files(self.tmp / name)


def _classes(tokens) -> list[str]:
    """The class names of a compound selector's tokens (``.name``)."""
    out = []
    for prev, tok in zip([None, *tokens], tokens, strict=False):
        if tok.type == "ident" and prev is not None and prev.type == "literal" and prev.value == ".":
            out.append(tok.value)
    return out


def _selector_scoped(tokens) -> bool:
    """Whether a complex selector (tinycss2 tokens) can only match a block's element or one inside
    it: a compound with an ``lk-`` class, followed only by descendant or child combinators (or
    the subject itself has an ``lk-`` class)."""
    compounds: list[tuple[str, list]] = [(" ", [])]  # (the combinator before it, its tokens)
    pending = None
    for tok in tokens:
        if tok.type in ("whitespace", "comment"):
            pending = pending or " "
        elif tok.type == "literal" and tok.value in (">", "+", "~"):
            pending = tok.value
        else:
            if pending is not None and compounds[-1][1]:
                compounds.append((pending, []))
            pending = None
            compounds[-1][1].append(tok)
    scoped = False
    for combinator, compound in compounds:
        if combinator in ("+", "~"):
            scoped = False  # a sibling of a block's element is not inside it
        if any(c.startswith("lk-") for c in _classes(compound)):
            scoped = True
    return scoped


def _unscoped_rules(rules) -> list[str]:
    out = []
    for rule in rules:
        if rule.type == "qualified-rule":
            selectors: list[list] = [[]]
            for tok in rule.prelude:
                if tok.type == "literal" and tok.value == ",":
                    selectors.append([])
                else:
                    selectors[-1].append(tok)
            out += [tinycss2.serialize(s).strip() for s in selectors if not _selector_scoped(s)]
        elif rule.type == "at-rule" and rule.lower_at_keyword == "media" and rule.content is not None:
            out += _unscoped_rules(tinycss2.parse_rule_list(rule.content, skip_comments=True, skip_whitespace=True))
        elif rule.type == "at-rule":
            out.append("@" + rule.at_keyword)  # @font-face, @import …: not a block's
        elif rule.type == "error":
            out.append(f"parse error: {rule.message}")
    return out


def test_the_blocks_stylesheet_is_scoped_to_blocks():
    rules = tinycss2.parse_stylesheet(BLOCKS_CSS.read_text(encoding="utf-8"), skip_comments=True, skip_whitespace=True)
    assert len(rules) > 20 and _unscoped_rules(rules) == []
    # the checker itself: what would restyle the host site is found
    probe = ":root { --x: 1 } .md-grid { max-width: 1400px } .lk-block + p { margin: 0 } @font-face { font-family: x }"
    found = _unscoped_rules(tinycss2.parse_stylesheet(probe, skip_comments=True, skip_whitespace=True))
    assert found == [":root", ".md-grid", ".lk-block + p", "@font-face"]


@pytest.mark.parametrize("site", SITES, ids=[s.project for s in SITES])
def test_a_guest_changes_nothing_it_was_not_asked_to(site, tmp_path, pinned_root):
    built = Built(site, tmp_path, pinned_root)
    without = built.site_files("without", built.text)
    with_plugin = built.site_files("with", _checked(built.text, [site.plugin]))
    assert len(without) > 10 and site.page_html in without
    assert sorted(with_plugin) == sorted(without)  # no page, stylesheet, zip or script added
    assert [p for p in without if with_plugin[p] != without[p]] == []  # every file byte for byte

    # one real-source block on one page: that page changes, and what copies every page
    (built.folder / "sourcemap").mkdir()
    for name in ("pin.toml", "manifest.sha256"):
        shutil.copy(ROOT / "sourcemap" / name, built.folder / "sourcemap" / name)
    page = built.folder / site.docs / site.page
    page.write_text(page.read_text(encoding="utf-8").rstrip("\n") + "\n\n" + BLOCK, encoding="utf-8")
    block = built.site_files("block", _checked(built.text, [site.plugin]))
    assert sorted(set(block) - set(without)) == [STYLESHEET]
    assert block[STYLESHEET] == BLOCKS_CSS.read_bytes()
    changed = sorted(p for p in without if block[p] != without[p])
    assert changed == sorted([site.page_html, *site.copies])

    # the block shows the pinned lines, verified, and its page alone links the stylesheet
    html = LexborHTMLParser(block[site.page_html].decode("utf-8"))
    blocks = html.css("div.lk-block.lk-real-source")
    assert len(blocks) == 1 and html.css("div.lk-error") == []
    meta = blocks[0].css_first(".lk-meta").text()
    lines = re.fullmatch(r"autograd/tracer\.py · Box · f53a217 · L(\d+)–L(\d+)", meta)
    assert lines is not None, meta
    start, end = int(lines[1]), int(lines[2])
    pinned = (pinned_root / "autograd" / "tracer.py").read_text(encoding="utf-8").split("\n")
    code = blocks[0].css_first("td.code code").text()
    assert code.rstrip("\n").split("\n") == pinned[start - 1 : end]
    assert pinned[start - 1].startswith("class Box")
    depth = site.page_html.count("/")
    links = [a.attributes["href"] for a in html.css('head link[rel="stylesheet"]')]
    assert links[-1] == "../" * depth + STYLESHEET and links[:-1] == [
        a.attributes["href"]
        for a in LexborHTMLParser(without[site.page_html].decode()).css('head link[rel="stylesheet"]')
    ]
    for path, data in block.items():
        if path.endswith(".html") and path != site.page_html:
            assert b"lessonkit-blocks.css" not in data, path


def test_a_block_without_a_pin_is_one_located_line(tmp_path, pinned_root):
    site = SITES[2]  # the smallest
    built = Built(site, tmp_path, pinned_root)
    page = built.folder / site.docs / site.page
    text = page.read_text(encoding="utf-8").rstrip("\n")
    page.write_text(text + "\n\n" + BLOCK, encoding="utf-8")
    r = built.build("nopin", _checked(built.text, [site.plugin]))
    assert r.returncode != 0
    errors = [line for line in r.stderr.splitlines() if line.startswith("ERROR")]
    assert errors == [  # MkDocs names the page it was reading, then lessonkit's one line
        f"ERROR   -  Error reading page '{site.page}':",
        f"ERROR   -  {site.docs}/{site.page}:{text.count(chr(10)) + 3}: a lessonkit block needs what is missing here: "
        "sourcemap/pin.toml: does not exist — sourcemap/pin.toml names the pin (see the engine guide, 'The pin')",
    ]
    assert "Traceback" not in r.stderr


def test_a_guest_page_runs_its_experiment_and_leaves_the_formulas_of_others(tmp_path, pinned_root):
    """On a small Material site of its own shape (pages in ``pages/``, web fonts, arithmatex for
    formulas, a wiki-style ``[[…]]`` link): an experiment block runs in this build and shows its
    output; the page without a block keeps its formula and its ``[[…]]`` text as the site renders them."""
    (tmp_path / "pages").mkdir()
    (tmp_path / "experiments").mkdir()
    (tmp_path / "sourcemap").mkdir()
    for name in ("pin.toml", "manifest.sha256"):
        shutil.copy(ROOT / "sourcemap" / name, tmp_path / "sourcemap" / name)
    (tmp_path / "experiments" / "sum.py").write_text(
        "import autograd\nprint('autograd', autograd.__name__, 20 + 22)\n", encoding="utf-8"
    )
    (tmp_path / "pages" / "index.md").write_text("# Home\n\n$$a^2$$\n\nSee [[wiki: page]].\n", encoding="utf-8")
    (tmp_path / "pages" / "run.md").write_text(
        "# Run\n\n```experiment\nFile: experiments/sum.py\nPurpose: a sum\n```\n", encoding="utf-8"
    )
    config = (
        "site_name: guest\ndocs_dir: pages\ntheme:\n  name: material\n"
        "markdown_extensions:\n  - pymdownx.arithmatex:\n      generic: true\nplugins:\n  - search\n"
    )
    env = {
        **os.environ,
        "SOURCE_DATE_EPOCH": "1700000000",
        "NO_MKDOCS_2_WARNING": "1",
        "LESSONKIT_CACHE": str(tmp_path.parent / f"{tmp_path.name}-cache"),
        "AUTOGRAD_SOURCE": str(pinned_root),
    }
    built = {}
    for name, text in (("without", config), ("with", config + "  - lessonkit\n")):
        (tmp_path / "mkdocs.yml").write_text(text, encoding="utf-8")
        r = subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "-d", str(tmp_path / name)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert r.returncode == 0, r.stderr[-3000:]
        built[name] = _files(tmp_path / name)
    without, with_plugin = built["without"], built["with"]
    assert with_plugin["index.html"] == without["index.html"]
    index = LexborHTMLParser(with_plugin["index.html"].decode())
    assert index.css_first(".arithmatex").text() == "\\[a^2\\]" and "[[wiki: page]]" in index.body.text()
    page = LexborHTMLParser(with_plugin["run/index.html"].decode())
    blocks = page.css("div.lk-block.lk-experiment")
    assert len(blocks) == 1 and page.css(".lk-error") == []
    assert blocks[0].css_first("pre.lk-output code").text() == "autograd autograd 42\n"
    assert sorted(set(with_plugin) - set(without)) == [STYLESHEET]
