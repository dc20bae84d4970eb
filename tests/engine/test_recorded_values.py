"""How a recorded value is written in a page: as Python writes it, so a list of strings shows its
quotes and a string alone shows its text."""

from __future__ import annotations

import pytest

from lessonkit.pipeline.recording import format_value


@pytest.mark.parametrize(
    "value, text",
    [
        ("parents", "parents"),
        (["parents", "vjp"], "['parents', 'vjp']"),
        ({"tuple": ["x"]}, "('x',)"),
        ({"names": ["a", "it's"]}, '{names: [\'a\', "it\'s"]}'),
        ([1, "1"], "[1, '1']"),
    ],
)
def test_strings_inside_a_container_keep_their_quotes(value, text):
    assert format_value(value) == text
