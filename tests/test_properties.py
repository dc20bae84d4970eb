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
from lessonkit.parse import Block, BrokenBlock, parse_page

PATH = "docs/x.md"
SETTINGS = settings(max_examples=200, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

FENCES = ["```real-source", "```experiment", "```teaching-simplification", "~~~real-source", "````real-source",
          "```real_source", "```Real Source", "```{.real-source}", "```experiments", "```python", "```",
          "~~~", "````", "   ```real-source", "\t```experiment", "```real-source extra words", "``` real-source",
          "```teaching_simplification", "```real-source`"]
KNOWN_FENCES = ["```real-source", "```experiment", "```teaching-simplification"]
FILES = ["autograd/core.py", "autograd/tracer.py", "autograd/numpy/numpy_vjps.py", "autograd/cor.py",
         "examples/__init__.py", "examples/gmm.png", "README.md", "autograd", "autograd/", "../etc/passwd",
         "/etc/passwd", "C:\\x.py", "https://example.org/x.py", "autograd//core.py", "./autograd/core.py",
         "mini-autograd/engine.py", "mini-autograd/../x.py", "experiments/simple_grad.py", "experiments/nope.py",
         "experiments/_provenance.py", "a" * 300, "autograd/core.py/x", "\x00", "\u2028", "ü/ß.py"]
SYMBOLS = ["backward_pass", "VJPNode", "VJPNode.__init__", "primitive_vjps", "defvjp(anp.multiply)",
           "defvjp(anp.exp)", "defvjp(", "defvjp()", "defvjp(((((", "defvjp(" + "(" * 200 + ")", "f(\x00)",
           "a.b.c.d", "Box.type_mappings", "grad", "nope", "", "class", "def f():", "x = 1", "defvjp(a, b)"]
LINES = ["25-32", "1-1", "0-3", "32-25", "9999999999999999999-9999999999999999999", "١-٢", "a-b", "3", "-"]
COMMITS = ["f53a217", "f53a21734fdfae636f448744d9097d8d35a643a0", "1234567", "F53A217", "main", "", "f53a2"]
KEYS = ["File", "Symbol", "Commit", "Lines", "Timeout", "Purpose", "Title", "Based-on", "Fiel", "file",
        "X-Other", "Commit ", "Based_on"]
TIMEOUTS = ["1", "60", "600", "0", "601", "²", "٣", "1e3", "-5", " 7"]
BASED_ON = [f"{f}::{s}" for f in FILES[:6] for s in SYMBOLS[:8]] + ["::", "a::b::c", "autograd/core.py::"]
VALUES = st.one_of(st.sampled_from(FILES), st.sampled_from(SYMBOLS), st.sampled_from(LINES),
                   st.sampled_from(COMMITS), st.sampled_from(TIMEOUTS), st.sampled_from(BASED_ON),
                   st.text(max_size=20))
# the values each key usually gets: blocks that are nearly right reach the deeper stages
VALUE_OF = {
    "File": st.one_of(st.sampled_from(FILES[:3]), st.sampled_from(FILES)), "Symbol": st.sampled_from(SYMBOLS), "Commit": st.sampled_from(COMMITS),
    "Lines": st.sampled_from(LINES), "Timeout": st.sampled_from(TIMEOUTS), "Based-on": st.sampled_from(BASED_ON),
    "Purpose": st.text(max_size=15), "Title": st.text(max_size=15),
}
ALLOWED = {
    "real-source": ["File", "Symbol", "Commit", "Lines"],
    "teaching-simplification": ["Title", "Based-on", "File", "Symbol"],
    "experiment": ["File", "Purpose", "Symbol", "Timeout"],
}
REAL_LINES = ["def backward_pass(g, end_node):", "    outgrads = {end_node: (g, False)}",
              "    for node in toposort(end_node):", "        outgrad = outgrads.pop(node)",
              "    return outgrad[0]", 'argnums = kwargs.get("argnums", count())', "class VJPNode(Node):",
              "print(1)", "import sys", "raise SystemExit(1)", "    pass", "\tx = 1", ""]

header_line = st.one_of(
    st.builds(lambda k, v: f"{k}: {v}", st.sampled_from(KEYS), VALUES),
    st.builds(lambda k, v: f"{k}:{v}", st.sampled_from(KEYS), VALUES),
    st.sampled_from(["File", "File:", ": x", "Lines 1-2", "  Symbol: grad"]),
)
body_line = st.one_of(st.sampled_from(REAL_LINES), st.text(max_size=30))
closing = st.sampled_from(["```", "~~~", "````", "   ```", "``` ", "```x", ""])


@st.composite
def nearly_right_headers(draw, kind: str) -> list[str]:
    keys = draw(st.lists(st.sampled_from(ALLOWED[kind]), unique=True, max_size=4))
    if kind == "real-source" and draw(st.integers(0, 3)):
        keys = ["File", "Commit"] + [k for k in keys if k not in ("File", "Commit")]
        return [f"File: {draw(VALUE_OF['File'])}", f"Commit: {draw(st.sampled_from(COMMITS[:2]))}"] + \
            [f"{k}: {draw(VALUE_OF[k])}" for k in keys[2:]]
    if kind == "experiment" and draw(st.integers(0, 3)):
        keys = ["Purpose"] + [k for k in keys if k != "Purpose"]
    return [f"{k}: {draw(VALUE_OF[k])}" for k in keys]


@st.composite
def block_text(draw) -> str:
    opener = draw(st.one_of(st.sampled_from(KNOWN_FENCES), st.sampled_from(KNOWN_FENCES), st.sampled_from(FENCES)))
    kind = opener.strip().lstrip("`~")
    if kind in ALLOWED and draw(st.integers(0, 4)):
        headers = draw(nearly_right_headers(kind))
    else:
        headers = draw(st.lists(header_line, max_size=6))
    parts = [opener, *headers]
    if draw(st.booleans()):
        parts.append("")
        parts += draw(st.lists(body_line, max_size=6))
    if draw(st.integers(0, 9)):  # mostly closed
        parts.append(draw(closing))
    return "\n".join(parts)


@st.composite
def page_text(draw) -> str:
    pieces = draw(st.lists(st.one_of(block_text(), st.text(max_size=40), st.sampled_from(["", "# 标题", "正文"])),
                           max_size=6))
    return "\n".join(pieces)


def _check_parsed(text: str):
    page = parse_page(text, PATH)
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
    page = parse_page(indented, PATH, line_offset=5)
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
