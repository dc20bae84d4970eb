"""Recall instead of repeat: no symbol longer than 8 lines is shown in full more than
twice in the whole course. A full showing is a real-source block whose excerpt is a whole symbol in
one run (no body, or a body equal to the whole symbol; see :mod:`lessonkit.checks.recall`); later
mentions use ``Recall: yes``, an elided body or a range."""

from __future__ import annotations

from lessonkit.checks import recall, verify

LONG = 8  # lines: a symbol longer than this is "long"
MOST = 2  # full showings of one long symbol in the whole course


def repeated(report) -> dict[tuple[str, str], list[str]]:
    """(file, symbol) -> the pages showing it in full, for long symbols shown in full too often."""
    out = {}
    for key, showings in recall.full_showings(report).items():
        first = next(r for r in report.resolved[showings[0].page] if r.block.ordinal == showings[0].ordinal)
        size = first.excerpt.end - first.excerpt.start + 1
        if size > LONG and len(showings) > MOST:
            out[key] = [f"{s.page}:{s.line}" for s in showings]
    return out


def test_no_long_symbol_is_shown_in_full_more_than_twice(real_project):
    report = verify.check(real_project)
    assert report.problems == []
    too_often = repeated(report)
    assert too_often == {}, "\n".join(f"{f} {s}: {', '.join(pages)}" for (f, s), pages in sorted(too_often.items()))
