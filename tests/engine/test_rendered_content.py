"""What Markdown makes of a page is checked as a browser reads it: text that no input check takes
for a tag (``<b<script>``: a tag named ``b<script`` to the HTML parser) comes out of Markdown as
an escaped ``&lt;b`` and a real element, which the check of the rendered content refuses at the
line of the page that writes it."""

from __future__ import annotations

import markdown
import pytest

from lessonkit.checks import rendered
from lessonkit.kinds import KINDS
from lessonkit.pipeline.parse import parse_page

HINT = (
    "a lesson's content may not carry elements that run, load or embed, nor event attributes, "
    "however the Markdown writes them; remove it"
)


@pytest.mark.parametrize(
    "text, message",
    [
        ('<b<script>window.location.replace("https://evil.example")</script>', "has a <script> element"),
        ("text <p<img src=x onerror=alert(1)> more", "has an event attribute `onerror` on a <img>"),
        ('<i<iframe src="//evil.example/"></iframe>', "has a <iframe> element"),
        ('<x<link rel="stylesheet" href="//evil.example/a.css">', "has a <link> element"),
        ('<q<base href="//evil.example/">', "has a <base> element"),
        ("[read on](javascript:alert(1))", "has a `javascript:` URL in `href` of a <a>"),
        ("![chart](data:image/svg+xml;base64,PHN2Zy8+)", "has a `data:` URL in `src` of a <img>"),
    ],
)
def test_what_markdown_makes_of_text_the_input_check_passed_is_refused(text, message):
    source = f"# 标题\n\n前文\n\n{text}\n"
    html = markdown.markdown(source, extensions=["attr_list", "md_in_html"])
    assert rendered.problems(html, "docs/a.md", source) == [
        rendered.Problem(f"the page's content {message}", "docs/a.md", 5, HINT)
    ]


def test_the_tag_shaped_text_passes_the_input_check_so_only_the_rendered_check_sees_it():
    page = parse_page('# t\n\n<b<script>alert("x")</script>\n', "docs/a.md", kinds=KINDS)
    assert page.engine_html == []


def test_ordinary_content_passes():
    source = (
        "# t\n\n**粗体** [链接](#a) `code`\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
        "<details><summary>答案</summary>x</details>\n"
    )
    assert rendered.problems(markdown.markdown(source, extensions=["tables", "md_in_html"]), "docs/a.md", source) == []
