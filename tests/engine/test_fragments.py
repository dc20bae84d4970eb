"""The blocks' extension with `fragments` (what Zensical runs for `lessonkit build --engine zensical`):
each marker word becomes its finished HTML, in place, and nothing else of the page changes."""

from __future__ import annotations

import json

import pytest
from markdown import Markdown

from lessonkit.errors import LessonError
from lessonkit.pipeline.markdown import fragment_marker

NONCE = "0123456789abcdef"


def _convert(tmp_path, text: str, fragments: dict[str, str]) -> str:
    path = tmp_path / "fragments.json"
    path.write_text(json.dumps(fragments), encoding="utf-8")
    md = Markdown(
        extensions=["lessonkit.pipeline.markdown"],
        extension_configs={"lessonkit.pipeline.markdown": {"root": str(tmp_path), "fragments": str(path)}},
    )
    return md.convert(text)


def test_a_marker_alone_in_its_paragraph_becomes_the_block_and_an_inline_one_stays_in_its_line(tmp_path):
    block, inline = fragment_marker(NONCE, 0), fragment_marker(NONCE, 1)
    assert block == "lkfragment0123456789abcdefn0z"
    html = _convert(
        tmp_path,
        f"# Title\n\nBefore.\n\n{block}\n\nSee {inline} here.\n\n```real-source\nnot a block: rendered ahead\n```\n",
        {block: '<div class="lk-block">B</div>', inline: '<a class="lk-ref" href="x/">r</a>'},
    )
    assert html == (
        '<h1>Title</h1>\n<p>Before.</p>\n<div class="lk-block">B</div>\n'
        '<p>See <a class="lk-ref" href="x/">r</a> here.</p>\n'
        "<p><code>real-source\nnot a block: rendered ahead</code></p>"
    )


def test_a_marker_the_fragments_file_does_not_hold_is_an_error_not_text(tmp_path):
    with pytest.raises(LessonError, match=r"lkfragment0123456789abcdefn7z: no such fragment in .*fragments\.json"):
        _convert(tmp_path, f"{fragment_marker(NONCE, 7)}\n", {})
