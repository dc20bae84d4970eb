"""Property tests: the annotation parser and the verify path fail only in their own way.

Whatever the Markdown, ``parse_page`` returns blocks and ``BrokenBlock`` items whose
error is a located :class:`LessonError`, and ``Project.resolve_page`` (what verify and
the build use) reports problems instead of raising. Every problem prints as one line
``path:line: …`` inside the page.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lessonkit.errors import LessonError
from lessonkit.kinds import KINDS
from lessonkit.pipeline.blocks import Block, BrokenBlock
from lessonkit.pipeline.parse import parse_page

PATH = "docs/x.md"
SETTINGS = settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# Value pools: the first entries are ordinary, the rest hostile. Hypothesis prefers small
# draws, so the default of every choice below is the nearly right block that reaches the
# deeper stages (resolution against the pinned tree), and the hostile values come mixed in.
KNOWN_FENCES = ["```real-source", "```experiment", "```teaching-simplification"]
ODD_FENCES = [
    "~~~real-source",
    "````real-source",
    "```real_source",
    "```Real Source",
    "```{.real-source}",
    "```experiments",
    "```python",
    "```",
    "~~~",
    "````",
    "   ```real-source",
    "\t```experiment",
    "```real-source extra words",
    "``` real-source",
    "```teaching_simplification",
    "```real-source`",
]
FILES = [
    "autograd/core.py",
    "autograd/tracer.py",
    "autograd/numpy/numpy_vjps.py",
    "autograd/cor.py",
    "examples/__init__.py",
    "examples/gmm.png",
    "README.md",
    "autograd",
    "autograd/",
    "../etc/passwd",
    "/etc/passwd",
    "C:\\x.py",
    "https://example.org/x.py",
    "autograd//core.py",
    "./autograd/core.py",
    "autograd/core.py/x",
    "a" * 300,
    "autograd/" + "b" * 260 + ".py",
    "\x00",
    "ü/ß.py",
]
REPO_FILES = [
    "mini-autograd/mini_autograd.py",
    "mini-autograd/engine.py",
    "mini-autograd/../x.py",
    "mini-autograd/" + "c" * 300,
    "autograd/core.py",
]
SCRIPTS = [
    "experiments/simple_grad.py",
    "experiments/_provenance.py",
    "experiments/nope.py",
    "experiments/x.txt",
    "experiments/../setup.py",
    "experiments/" + "d" * 300 + ".py",
    "/etc/passwd",
]
SYMBOLS = [
    "backward_pass",
    "VJPNode",
    "VJPNode.__init__",
    "primitive_vjps",
    "defvjp(anp.multiply)",
    "defvjp(anp.exp)",
    "Box.type_mappings",
    "grad",
    "main",
    "defvjp(",
    "defvjp()",
    "defvjp(((((",
    "defvjp(" + "(" * 200 + ")",
    "f(" + "[" * 120 + "]" * 120 + ")",
    "f(\x00)",
    "f(lambda: (yield))",
    "a.b.c.d",
    "nope",
    "class",
    "def f():",
    "x = 1",
    "defvjp(a, b)",
    "ü",
]
LINES = ["25-32", "1-1", "0-3", "32-25", "9999999999999999999-9999999999999999999", "١-٢", "a-b", "3", "-"]
COMMITS = [
    "f53a217",
    "f53a21734fdfae636f448744d9097d8d35a643a0",
    "1234567",
    "F53A217",
    "main",
    "f53a2",
    "f53a21734fdfae636f448744d9097d8d35a643a0ff",
]
TIMEOUTS = ["10", "1", "600", "0", "601", "²", "٣", "1e3", "-5", "99999999999999999999"]
BASED_ON = [
    "autograd/core.py::backward_pass",
    "autograd/tracer.py::Box",
    "autograd/core.py::nope",
    "autograd/cor.py::x",
    "autograd/core.py::defvjp(",
    "::",
    "a::b::c",
    "autograd/core.py::",
    "../x::y",
    "examples/gmm.png::x",
    "README.md::x",
    "a" * 300 + "::x",
]
KEYS = [
    "File",
    "Symbol",
    "Commit",
    "Lines",
    "Timeout",
    "Purpose",
    "Title",
    "Based-on",
    "Fiel",
    "file",
    "X-Other",
    "Based_on",
]
PLAIN = st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1, max_size=15)
VALUES = st.one_of(
    *(st.sampled_from(v) for v in (FILES, SYMBOLS, LINES, COMMITS, TIMEOUTS, BASED_ON)), st.text(max_size=20)
)
REAL_LINES = [
    "    for node in toposort(end_node):",
    "        outgrad = outgrads.pop(node)",
    "def backward_pass(g, end_node):",
    "    outgrads = {end_node: (g, False)}",
    "    return outgrad[0]",
    'argnums = kwargs.get("argnums", count())',
    "class VJPNode(Node):",
    "print(1)",
    "import sys",
    "raise SystemExit(1)",
    "    pass",
    "\tx = 1",
    "",
]
body_line = st.one_of(st.sampled_from(REAL_LINES), st.text(max_size=30))
header_line = st.one_of(
    st.builds(lambda k, v: f"{k}: {v}", st.sampled_from(KEYS), VALUES),
    st.builds(lambda k, v: f"{k}:{v}", st.sampled_from(KEYS), VALUES),
    st.sampled_from(["File", "File:", ": x", "Lines 1-2", "  Symbol: grad"]),
)
closing = st.sampled_from(["```", "````", "   ```", "``` ", "~~~", "```x", ""])


def maybe(draw, p_skip: int = 3) -> bool:
    """True mostly (the default, 0, means yes)."""
    return draw(st.integers(0, p_skip)) < p_skip


@st.composite
def nearly_right(draw, kind: str) -> tuple[list[str], bool]:
    """Header lines of a block that is right or close to it, and whether it wants a body."""
    pick = lambda pool: draw(st.sampled_from(pool))  # noqa: E731
    h: list[tuple[str, str]] = []
    if kind == "real-source":
        h += [("File", pick(FILES)), ("Commit", pick(COMMITS))]
        if maybe(draw):
            h.append(("Symbol", pick(SYMBOLS)))
        if not maybe(draw):
            h.append(("Lines", pick(LINES)))
        want_body = not maybe(draw) or not any(k == "Symbol" for k, _ in h)
    elif kind == "experiment":
        h.append(("Purpose", draw(PLAIN)))
        want_body = maybe(draw, 1)
        if not want_body:
            h.append(("File", pick(SCRIPTS)))
            if not maybe(draw):
                h.append(("Symbol", pick(SYMBOLS)))
        if not maybe(draw):
            h.append(("Timeout", pick(TIMEOUTS)))
    else:
        if not maybe(draw):
            h.append(("Title", draw(PLAIN)))
        if maybe(draw, 1):
            h.append(("Based-on", pick(BASED_ON)))
        want_body = maybe(draw)
        if not want_body:
            h += [("File", pick(REPO_FILES)), ("Symbol", pick(["Value", "Value.backward", *SYMBOLS]))]
    order = draw(st.permutations(h))
    return [f"{k}: {v}" for k, v in order], want_body


@st.composite
def block_text(draw) -> str:
    opener = draw(st.sampled_from(KNOWN_FENCES)) if maybe(draw) else draw(st.sampled_from(ODD_FENCES))
    kind = opener.strip().lstrip("`~")
    if kind in [k.strip("`") for k in KNOWN_FENCES] and maybe(draw):
        headers, want_body = draw(nearly_right(kind))
    else:
        headers, want_body = draw(st.lists(header_line, max_size=6)), draw(st.booleans())
    parts = [opener, *headers]
    if want_body:
        parts += [""] + draw(st.lists(body_line, min_size=1, max_size=6))
    if maybe(draw, 9):  # mostly closed
        parts.append(draw(closing))
    return "\n".join(parts)


@st.composite
def page_text(draw) -> str:
    pieces = draw(
        st.lists(st.one_of(block_text(), st.text(max_size=40), st.sampled_from(["", "# 标题", "正文"])), max_size=6)
    )
    return "\n".join(pieces)


def _check_parsed(text: str):
    page = parse_page(text, PATH, kinds=KINDS)
    n_lines = text.count("\n") + 1
    for item in page.items:
        assert isinstance(item, (Block, BrokenBlock))
        if isinstance(item, BrokenBlock):
            assert isinstance(item.error, LessonError)
            assert item.error.problems
        assert 0 <= item.start <= item.end < n_lines
    for p in page.problems:
        assert p.path == PATH and p.line is not None and 1 <= p.line <= n_lines, p
        assert len(str(p).splitlines()) == 1, repr(str(p))
    return page


@SETTINGS
@given(st.text())
def test_parse_arbitrary_text(text):
    _check_parsed(text)


@SETTINGS
@given(page_text())
def test_parse_fragments(text):
    _check_parsed(text)
    # the same blocks inside a list (indented) on a page with front matter (offset): true lines
    indented = "\n".join("    " + line for line in text.split("\n"))
    page = parse_page(indented, PATH, line_offset=5, kinds=KINDS)
    for p in page.problems:
        assert p.line is not None and 6 <= p.line <= indented.count("\n") + 6
        assert len(str(p).splitlines()) == 1, repr(str(p))


@SETTINGS
@given(page_text())
def test_resolve_page_raises_only_lesson_problems(real_project, text):
    """The verify path: every block resolves or becomes located problems; nothing else escapes."""
    page = _check_parsed(text)
    resolved, problems = real_project.resolve_page(page)  # any other exception fails the test
    n_lines = text.count("\n") + 1
    done = {id(r.block) for r in resolved}
    for b in page.blocks:  # each block resolves, or has a problem inside its own lines
        assert id(b) in done or any(b.line <= p.line <= b.line + b.end - b.start for p in problems), b
    for p in problems:
        assert p.path == PATH and p.line is not None and 1 <= p.line <= n_lines, p
        assert len(str(p).splitlines()) == 1, repr(str(p))
        assert " — " in str(p), f"no hint: {p}"
    for r in resolved:
        if r.excerpt is not None:
            assert r.excerpt.start <= r.excerpt.end


VALID = {  # a block of each kind that resolves; one of its values is then replaced
    "real-source": ({"File": "autograd/core.py", "Commit": "f53a217", "Symbol": "backward_pass"}, None),
    "experiment": ({"Purpose": "p", "Timeout": "10"}, "print(1)"),
    "teaching-simplification": ({"Title": "t", "Based-on": "autograd/core.py::backward_pass"}, "x = 1"),
}
POOL = {
    "File": FILES + REPO_FILES + SCRIPTS,
    "Symbol": SYMBOLS,
    "Commit": COMMITS,
    "Lines": LINES,
    "Timeout": TIMEOUTS,
    "Based-on": BASED_ON,
    "Purpose": ["p"],
    "Title": ["t"],
}


@st.composite
def one_bad_value(draw) -> str:
    kind = draw(st.sampled_from(sorted(VALID)))
    fields, body = VALID[kind]
    fields = dict(fields)
    key = draw(st.sampled_from(["File", "Symbol", "Commit", "Lines", "Timeout", "Based-on", "Purpose", "Title"]))
    fields[key] = draw(st.one_of(st.sampled_from(POOL[key]), st.text(max_size=12)))
    text = "# t\n\n```" + kind + "\n" + "\n".join(f"{k}: {v}" for k, v in fields.items()) + "\n"
    if body is not None:
        text += "\n" + body + "\n"
    return text + "```\n"


@settings(SETTINGS, max_examples=500)
@given(one_bad_value())
def test_one_bad_value_in_a_good_block(real_project, text):
    """Each header value of each kind, however odd: one located problem line, or a resolved block."""
    page = _check_parsed(text)
    resolved, problems = real_project.resolve_page(page)
    assert len(resolved) + len(problems) >= 1
    for p in problems:
        assert p.path == PATH and p.line is not None and 3 <= p.line <= text.count("\n"), p
        assert len(str(p).splitlines()) == 1, repr(str(p))
        assert " — " in str(p), f"no hint: {p}"
