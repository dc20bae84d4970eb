"""Parity with the peers: what Sphinx's `literalinclude` and pymdownx's `snippets` can select, asked
of a `real-source` block over fixture files of the same shapes as theirs (a Python module with
classes, decorated methods and repeated markers; a text file with named sections).

Every case records one outcome:

- ``same``: the block shows the lines the peer's documented option shows;
- ``better``: the block shows what the peer shows, or refuses where the peer silently does
  something a reader cannot see (the reason says which);
- ``refused``: by design, the block refuses with one located line what the peer accepts (the
  reason says why), so nothing on a page is text the pinned file does not hold.

The cases are this project's own data, written from the peers' documented options; a change in
the engine that loses a selection fails here with the case's name.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from lessonkit.errors import LessonError
from lessonkit.kinds import KINDS
from lessonkit.pipeline.parse import parse_page
from lessonkit.source.resolve import Tree, excerpt_of

SHAPES = textwrap.dedent(
    '''\
    """Shapes for the parity cases."""

    import math


    class Circle:
        """A circle."""

        def __init__(self, r):
            self.r = r

        @property
        def area(self):
            return math.pi * self.r**2

        @area.setter
        def area(self, value):
            self.r = math.sqrt(value / math.pi)

        class Meta:
            def describe(self):
                return "round"


    def unit():
        # start here
        c = Circle(1.0)
        # start here
        return c


    def scaled(k):
        def inner(c):
            return Circle(c.r * k)

        return inner
    '''
)

NOTES = textwrap.dedent(
    """\
    intro
    # --8<-- [start:setup]
    pip install shapes
    # --8<-- [end:setup]
    middle
    # --8<-- [start:use]
        run first
        run second
    # --8<-- [end:use]
    # --8<-- [start:use]
    again
    # --8<-- [end:use]
    --8<-- "other.md"
    outro
    """
)

TABS = "def f(xs):\n\tfor x in xs:\n\t\tyield x\t# doubled\n\treturn\n"  # indented with tabs

FILES = {"shapes.py": SHAPES, "notes.md": NOTES, "tabs.py": TABS}


@dataclass(frozen=True)
class Case:
    peer: str  # "literalinclude" or "snippets"
    name: str  # what the peer is asked, in its own terms
    file: str
    header: tuple[str, ...]
    outcome: str  # "same", "better" or "refused"
    spans: tuple[tuple[int, int], ...] = ()  # expected shown runs (file lines), when it resolves
    shown: tuple[str, ...] = ()  # expected shown text, when the case is about the text
    problem: str = ""  # the start of the expected located line, when it is refused
    why: str = ""  # for "better" and "refused": the reason


CASES = [
    # -- Sphinx literalinclude --------------------------------------------------------------------
    Case("literalinclude", "whole file", "shapes.py", (), "same", spans=((1, 36),)),
    Case("literalinclude", ":lines: 6-10", "shapes.py", ("Lines: 6-10",), "same", spans=((6, 10),)),
    Case("literalinclude", ":lines: 26-", "shapes.py", ("Lines: 26-",), "same", spans=((26, 36),)),
    Case("literalinclude", ":lines: -3", "shapes.py", ("Lines: -3",), "same", spans=((1, 3),)),
    Case(
        "literalinclude",
        ":lines: 1,3",
        "shapes.py",
        ("Lines: 1, 3",),
        "better",
        spans=((1, 1), (3, 3)),
        why="the left-out line is an omission row and each run keeps its own numbers; the peer joins them",
    ),
    Case(
        "literalinclude",
        ":lines: 30-40 (past the end)",
        "shapes.py",
        ("Lines: 30-40",),
        "refused",
        problem="d.md:3: `Lines: 30-40` runs past the end of shapes.py (36 lines)",
        why="the peer warns and shows what exists; a range past the end is a stale reference",
    ),
    Case("literalinclude", ":pyobject: Circle", "shapes.py", ("Symbol: Circle",), "same", spans=((6, 22),)),
    Case(
        "literalinclude",
        ":pyobject: Circle.Meta.describe",
        "shapes.py",
        ("Symbol: Circle.Meta.describe",),
        "same",
        spans=((21, 22),),
    ),
    Case(
        "literalinclude",
        ":pyobject: Circle.area (getter and setter)",
        "shapes.py",
        ("Symbol: Circle.area",),
        "better",
        problem="d.md:3: symbol `Circle.area` is defined 2 times in shapes.py — candidates: 1. L12-14 (@property), "
        "2. L16-18 (@area.setter)",
        why="the peer takes one of the two silently; the block names both and `Which` picks one",
    ),
    Case(
        "literalinclude",
        ":pyobject: Circle.area, the setter",
        "shapes.py",
        ("Symbol: Circle.area", "Which: @area.setter"),
        "better",
        spans=((16, 18),),
        why="the peer cannot pick the setter",
    ),
    Case(
        "literalinclude",
        ":pyobject: scaled.inner (a function in a function)",
        "shapes.py",
        ("Symbol: scaled.inner",),
        "same",
        spans=((33, 34),),
    ),
    Case(
        "literalinclude",
        ":pyobject: Square (missing)",
        "shapes.py",
        ("Symbol: Square",),
        "same",
        problem="d.md:3: no symbol `Square` in shapes.py",
    ),
    Case(
        "literalinclude",
        ":pyobject: Circle.__init__ + :lines: 2 (relative to the object)",
        "shapes.py",
        ("Symbol: Circle.__init__", "Symbol-lines: 2"),
        "same",
        spans=((10, 10),),
    ),
    Case(
        "literalinclude",
        ":start-after: # start here (the marker occurs twice)",
        "shapes.py",
        ("Start-after: # start here",),
        "refused",
        problem="d.md:3: `Start-after: # start here` matches 2 lines of shapes.py (L26, L28)",
        why="the peer takes the first silently; a second marker added upstream would move the excerpt unseen",
    ),
    Case(
        "literalinclude",
        ":start-after: # start here, first match",
        "shapes.py",
        ("Start-after: # start here", "Match: first"),
        "same",
        spans=((27, 36),),
    ),
    Case(
        "literalinclude",
        ":start-at: c = Circle(1.0) :end-at: return c",
        "shapes.py",
        ("Start-at: c = Circle(1.0)", "End-at: return c"),
        "same",
        spans=((27, 29),),
    ),
    Case(
        "literalinclude",
        ":start-at: def unit :end-before: def scaled",
        "shapes.py",
        ("Start-at: def unit", "End-before: def scaled"),
        "better",
        spans=((25, 29),),
        why="the blank lines at the ends of the excerpt are left out; the peer shows them",
    ),
    Case(
        "literalinclude",
        ":end-before: nothing like it",
        "shapes.py",
        ("End-before: nothing like it",),
        "same",
        problem="d.md:3: `End-before: nothing like it` matches no line of shapes.py",
    ),
    Case(
        "literalinclude",
        ":lineno-match:",
        "shapes.py",
        ("Lines: 9-10",),
        "better",
        spans=((9, 10),),
        why="a block always shows the file's own line numbers; the peer needs the option",
    ),
    Case(
        "literalinclude",
        ":dedent: 4",
        "shapes.py",
        ("Lines: 9-10", "Dedent: 4"),
        "same",
        shown=("def __init__(self, r):", "    self.r = r"),
    ),
    Case(
        "literalinclude",
        ":dedent: (automatic)",
        "shapes.py",
        ("Lines: 9-10",),
        "same",
        shown=("def __init__(self, r):", "    self.r = r"),
    ),
    Case(
        "literalinclude",
        ":dedent: 8 (more than the first line's indent)",
        "shapes.py",
        ("Lines: 9-10", "Dedent: 8"),
        "refused",
        problem="d.md:4: `Dedent: 8`",
        why="the peer strips code characters with a warning; a block never shows text the file does not hold",
    ),
    Case(
        "literalinclude",
        ":emphasize-lines: 2 (counted in the shown block)",
        "shapes.py",
        ("Lines: 9-10", "Emphasize: 10"),
        "better",
        spans=((9, 10),),
        why="the numbers are the file's, as the page shows them, and repin rewrites them when lines move",
    ),
    Case(
        "literalinclude",
        ":prepend: / :append:",
        "shapes.py",
        ("Prepend: import shapes",),
        "refused",
        problem="d.md:3: unknown key `Prepend` in a real-source block",
        why="an excerpt holds only the pinned file's lines; added text belongs in the prose or a teaching block",
    ),
    Case(
        "literalinclude",
        ":diff: other.py",
        "shapes.py",
        ("Diff: other.py",),
        "refused",
        problem="d.md:3: unknown key `Diff` in a real-source block",
        why="a series pins one version; two versions are compared by `lessonkit repin`, not on a page",
    ),
    Case(
        "literalinclude",
        ":encoding: latin-1",
        "shapes.py",
        ("Encoding: latin-1",),
        "refused",
        problem="d.md:3: unknown key `Encoding` in a real-source block",
        why="pinned files are read as UTF-8 only, so the bytes checked are the bytes shown",
    ),
    Case(
        "literalinclude",
        ":tab-width: 4",
        "tabs.py",
        ("Tab-width: 4",),
        "same",
        spans=((1, 4),),
        shown=("def f(xs):", "    for x in xs:", "        yield x # doubled", "    return"),
    ),
    Case(
        "literalinclude",
        ":tab-width: 8 with :dedent: 8",
        "tabs.py",
        ("Lines: 2-3", "Tab-width: 8", "Dedent: 8"),
        "same",
        spans=((2, 3),),
        shown=("for x in xs:", "        yield x # doubled"),
    ),
    Case(
        "literalinclude",
        ":dedent: 4 on tab-indented lines (no :tab-width:)",
        "tabs.py",
        ("Lines: 2-3", "Dedent: 4"),
        "better",
        problem="d.md:4: `Dedent: 4` but L2 is indented with tabs, and `Dedent` removes spaces — add `Tab-width: N`",
        why="the peer removes the first 4 characters whatever they are, cutting into the code after a tab; "
        "a cut is only ever of spaces",
    ),
    # -- pymdownx.snippets ------------------------------------------------------------------------
    Case("snippets", '--8<-- "notes.md"', "notes.md", (), "same", spans=((1, 14),)),
    Case("snippets", '--8<-- "notes.md:3:3"', "notes.md", ("Lines: 3",), "same", spans=((3, 3),)),
    Case("snippets", '--8<-- "notes.md:13" (to the end)', "notes.md", ("Lines: 13-",), "same", spans=((13, 14),)),
    Case(
        "snippets",
        '--8<-- "notes.md:1:1,14:14"',
        "notes.md",
        ("Lines: 1, 14",),
        "better",
        spans=((1, 1), (14, 14)),
        why="the left-out lines are an omission row with their count; the peer joins the ranges",
    ),
    Case(
        "snippets",
        '--8<-- "notes.md:setup" (a named section)',
        "notes.md",
        ("Start-after: [start:setup]", "End-before: [end:setup]"),
        "same",
        spans=((3, 3),),
        shown=("pip install shapes",),
    ),
    Case(
        "snippets",
        '--8<-- "notes.md:use" (a section defined twice)',
        "notes.md",
        ("Start-after: [start:use]", "End-before: [end:use]"),
        "refused",
        problem="d.md:3: `Start-after: [start:use]` matches 2 lines of notes.md (L6, L10)",
        why="which section is meant must be said (`Match: first`), not left to the order of the file",
    ),
    Case(
        "snippets",
        '--8<-- "notes.md:use", dedent_subsections, first section',
        "notes.md",
        ("Start-after: [start:use]", "End-before: [end:use]", "Match: first"),
        "same",
        spans=((7, 8),),
        shown=("run first", "run second"),
    ),
    Case(
        "snippets",
        '--8<-- "notes.md:missing" (no such section)',
        "notes.md",
        ("Start-after: [start:missing]",),
        "better",
        problem="d.md:3: `Start-after: [start:missing]` matches no line of notes.md",
        why="the peer includes nothing unless check_paths is on; the block names the closest line",
    ),
    Case(
        "snippets",
        '--8<-- "absent.md" (no such file)',
        "absent.md",
        (),
        "better",
        problem="d.md:2: no file `absent.md` in t",
        why="the peer includes nothing unless check_paths is on",
    ),
    Case(
        "snippets",
        '--8<-- "notes.md:12:20" (past the end)',
        "notes.md",
        ("Lines: 12-20",),
        "refused",
        problem="d.md:3: `Lines: 12-20` runs past the end of notes.md (14 lines)",
        why="the peer cuts the range at the end; a range past the end is a stale reference",
    ),
    Case(
        "snippets",
        '--8<-- "notes.md:5:3" (backwards)',
        "notes.md",
        ("Lines: 5-3",),
        "refused",
        problem="d.md:3: `Lines: 5-3` is not a range `a-b` with 1 ≤ a ≤ b",
        why="a backwards range is a typo",
    ),
    Case(
        "snippets",
        '--8<-- "https://example.org/notes.md" (a URL)',
        "https://example.org/notes.md",
        (),
        "refused",
        problem="d.md:2: ",
        why="excerpts come from the pinned, hash-checked tree, never from the network",
    ),
    Case(
        "snippets",
        '--8<-- "../notes.md" (outside the base path)',
        "../notes.md",
        (),
        "refused",
        problem="d.md:2: ",
        why="a path may not leave the pinned tree",
    ),
    Case(
        "snippets",
        'a line `--8<-- "other.md"` inside the included file',
        "notes.md",
        ("Lines: 13",),
        "better",
        spans=((13, 13),),
        shown=('--8<-- "other.md"',),
        why="the page shows the pinned file's line as it is; the peer would replace it with another file",
    ),
]


def _block(case: Case) -> str:
    return "\n".join(["```real-source", f"File: {case.file}", *case.header, "```", ""])


def _resolve(tmp_path: Path, case: Case):
    for name, text in FILES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    page = parse_page(_block(case), "d.md", kinds=KINDS)
    if page.problems:
        return [str(p) for p in page.problems]
    try:
        return excerpt_of(Tree(tmp_path, "pinned", label="t"), page.blocks[0])
    except LessonError as err:
        return [str(err)]


@pytest.mark.parametrize("case", CASES, ids=[f"{c.peer}: {c.name}" for c in CASES])
def test_a_peer_selection_resolves_or_is_refused_by_design(tmp_path, case):
    got = _resolve(tmp_path, case)
    if case.problem:
        assert isinstance(got, list) and len(got) == 1, got
        assert got[0].startswith(case.problem), got[0]
        assert " — " in got[0], f"no hint: {got[0]}"
        return
    assert not isinstance(got, list), got
    if case.spans:
        assert got.spans == case.spans
    if case.shown:
        assert got.lines == case.shown


def test_every_case_records_its_outcome_and_a_reason_where_it_differs():
    for case in CASES:
        assert case.outcome in ("same", "better", "refused"), case.name
        assert bool(case.why) == (case.outcome != "same"), case.name
        assert case.problem or case.spans or case.shown, case.name
        assert case.outcome != "refused" or case.problem, case.name
    counts = Counter((c.peer, c.outcome) for c in CASES)
    assert counts == {
        ("literalinclude", "same"): 16,
        ("literalinclude", "better"): 7,
        ("literalinclude", "refused"): 6,
        ("snippets", "same"): 5,
        ("snippets", "better"): 4,
        ("snippets", "refused"): 5,
    }
