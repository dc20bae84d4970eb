"""A project's own block kinds (``sourcemap/kinds.toml``): a kind that leaves out a method it must
define is one line at its registration, and an exception its code raises is one line at the line of
the project's file that raised it, naming the block it was called for; never a traceback."""

from __future__ import annotations

import sys

import pytest

from lessonkit.checks import verify
from lessonkit.errors import LessonError

PARTIAL = '''\
from lessonkit import Kind, Resolved


class Note(Kind):
    name = "note"
    label = "NOTE"
    fields = ("Text",)

    def resolve(self, project, block):
        return Resolved(block)


KIND = Note()
'''

BROKEN = '''\
from lessonkit import Kind, Resolved


class Note(Kind):
    name = "note"
    label = "NOTE"
    fields = ("Text",)
    citation = None

    def resolve(self, project, block):
        words = {"a": 1}
        return Resolved(block, job=None) if words[block.get("Text")] else None

    def render(self, renderer, r, anchor, result):
        return f'<div class="lk-block lk-note" id="{anchor}"><p>note</p></div>'

    def plain(self, r, project, result):
        return ["note"]


KIND = Note()
'''


@pytest.fixture
def with_kind(tiny):
    def write(module: str):
        tiny.write("notekinds.py", module)
        tiny.write("sourcemap/kinds.toml", '# the series\' kinds\nmodules = ["notekinds"]\n')
        tiny.page("n.md", "# n\n\n```note\nText: b\n```\n")
        return tiny

    yield write
    sys.modules.pop("notekinds", None)


def test_a_kind_without_render_and_plain_is_one_line_at_its_registration(with_kind):
    tiny = with_kind(PARTIAL)
    with pytest.raises(LessonError) as err:
        _ = tiny.project().kinds
    assert str(err.value) == (
        "sourcemap/kinds.toml:2: kind `note` of module `notekinds` does not define render(), plain() — "
        "a Kind defines resolve(), render(), plain(); see the engine guide, 'Block kinds of your own'"
    )


def test_an_exception_in_a_kinds_code_is_one_line_where_it_was_raised(with_kind):
    tiny = with_kind(BROKEN)
    problems = [str(p) for p in verify.check(tiny.project(), None).problems]
    assert problems == [
        "notekinds.py:12: kind `note` failed in resolve() for docs/n.md:3: KeyError: ?b? — "
        "a mistake in module `notekinds` (sourcemap/kinds.toml:2 registers it)"
    ]
