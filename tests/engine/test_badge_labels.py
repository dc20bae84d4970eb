"""Prose may not show the engine's badge as a label (as if an engine block followed), and the check
reads the label as a browser shows it: spaces of any kind and emphasis marks do not change it."""

from __future__ import annotations

import pytest

BADGES = ("真实源码 REAL SOURCE", "实验 EXPERIMENT")


@pytest.mark.parametrize(
    ("line", "following"),
    [
        ("## 真实源码  REAL SOURCE · autograd/core.py L6–L9", ""),
        ("## 真实源码\u00a0REAL SOURCE", ""),
        ("## 真实源码&nbsp;REAL SOURCE", ""),
        ("## 真实源码\tREAL SOURCE", ""),
        ("## 真实源码\u200bREAL SOURCE", ""),
        ("**真实源码** **REAL SOURCE**", ""),
        ("| 真实源码  REAL SOURCE | x |", ""),
        ("## 实验  EXPERIMENT", ""),
        ("## 真实源码 **REAL SOURCE**", ""),
        ("真实源码", "REAL SOURCE"),
    ],
)
def test_a_badge_a_browser_shows_as_the_label_is_one_whatever_spaces_or_marks_write_it(line, following):
    """A browser shows two spaces, a tab, a no-break space or a line break as one space, and no
    emphasis marks: each of these reads as the engine's badge, as the exact label does."""
    from lessonkit.pipeline.imitations import badge_labels

    found = badge_labels(line, "docs/a.md", 3, BADGES, following)
    assert [p.message.split(" as a label")[0] for p in found] == [
        f'prose shows the engine\'s badge "{"实验 EXPERIMENT" if "实验" in line else "真实源码 REAL SOURCE"}"'
    ]


@pytest.mark.parametrize(
    ("line", "following"),
    [("这一节的真实源码 REAL SOURCE 块", ""), ("实验结果说明", "下一行"), ("「真实源码 REAL SOURCE」块是什么", "")],
)
def test_the_badge_inside_a_sentence_is_prose(line, following):
    from lessonkit.pipeline.imitations import badge_labels

    assert badge_labels(line, "docs/a.md", 3, BADGES, following) == []
