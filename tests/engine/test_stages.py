"""The engine stage by stage, against the tiny pinned package (tinypin.py): the pin and its
configuration, parse, source selection (symbol ranges and selectors), resolve, render (through
Python-Markdown, as MkDocs calls it), verify, the error model and the caches.

Every stage is called in this process on a throwaway series pinned to the tiny sdist; the exact
ranges, lines and messages below were read off the tiny package's source (``tinypin.FILES``).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import markdown
import pytest
from tinypin import COMMIT, SOURCES, line_of, manifest, pin_toml

from lessonkit.checks import verify
from lessonkit.errors import LessonError
from lessonkit.pipeline.blocks import Block, BrokenBlock
from lessonkit.pipeline.parse import parse_page

LINE = re.compile(r"^(?P<path>[\w./-]+):(?P<line>\d+): (?P<what>.+) — (?P<hint>.+)$")


def fence(kind: str, *header: str, body: str | None = None) -> str:
    text = "```" + kind + "\n" + "\n".join(header) + "\n"
    if body is not None:
        text += "\n" + body.strip("\n") + "\n"
    return text + "```\n"


def resolve(tiny, *header: str, body: str | None = None):
    """One real-source block on a fresh page: (its excerpt or None, the problems as lines)."""
    project = tiny.project()
    page = tiny.page("p.md", "# t\n\n" + fence("real-source", *header, body=body))
    resolved, problems = project.resolve_page(project.parse(page))
    return (resolved[0].excerpt if resolved else None), [str(p) for p in problems]


# ---------------------------------------------------------------- the pin


def test_the_sdist_is_checked_extracted_and_then_taken_from_the_cache(tiny):
    first = tiny.project().tree
    assert (first.provider, first.cached, first.sdist_checked) == (
        "local archive LESSONKIT_SDIST (tiny-0.1.0.tar.gz)",
        False,
        True,
    )
    assert first.root == tiny.cache / "pin" / COMMIT
    files = sorted(p.relative_to(first.root).as_posix() for p in first.root.rglob("*") if p.is_file())
    assert files == sorted(SOURCES)  # PKG-INFO of the sdist is not part of the tree
    assert {rel: first.read(rel).decode() for rel in SOURCES} == SOURCES
    again = tiny.project().tree  # a new project object: the cache's tree, its sdist digest recorded
    assert (again.root, again.cached, again.sdist_checked) == (first.root, True, True)


def test_an_archive_with_another_sha256_is_one_line_at_the_pins_sha256(tiny):
    pin = tiny.root / "sourcemap" / "pin.toml"
    pin.write_text(pin_toml("0" * 64), encoding="utf-8")
    with pytest.raises(LessonError) as caught:
        _ = tiny.project().tree
    assert str(caught.value) == (
        f"sourcemap/pin.toml:8: {tiny.archive} has sha256 {tiny.sha256[:16]}…, the pin expects 0000000000000000… "
        "— this is not the pinned release archive; fetch it again from the package index"
    )
    assert pin.read_text(encoding="utf-8").splitlines()[7] == f'sha256 = "{"0" * 64}"'
    assert not (tiny.cache / "pin" / COMMIT).exists()  # nothing unchecked reaches the cache


def test_a_file_that_differs_from_the_manifest_is_one_line_at_the_manifest(tiny):
    digest = manifest().splitlines()[0][:64]
    (tiny.root / "sourcemap" / "manifest.sha256").write_text(manifest().replace(digest, "f" * 64), encoding="utf-8")
    with pytest.raises(LessonError) as caught:
        _ = tiny.project().tree
    assert str(caught.value) == (
        "sourcemap/manifest.sha256:1: content differs from the manifest: tiny/__init__.py (tree from local "
        "archive LESSONKIT_SDIST (tiny-0.1.0.tar.gz)) — the excerpts would not be verbatim; supply the pinned "
        "tiny 0.1.0 bytes (see the engine guide, 'The pin')"
    )


@pytest.mark.parametrize(
    "edit, expected",
    [
        (
            lambda t: t + '\n[sdist2]\nx = "1"\n',
            "sourcemap/pin.toml:12: unknown section [sdist2] — the pin has [upstream], [sdist] and [provider]",
        ),
        (
            lambda t: t.replace('version = "0.1.0"', 'version = "0.2.0"'),
            "sourcemap/pin.toml:9: `requirement = 'tiny==0.1.0'` pins another version than `version = '0.2.0'` "
            '— write requirement = "…==0.2.0"',
        ),
    ],
    ids=["unknown-section", "requirement-and-version-differ"],
)
def test_a_wrong_pin_toml_is_one_located_line(tiny, edit, expected):
    pin = tiny.root / "sourcemap" / "pin.toml"
    pin.write_text(edit(pin.read_text(encoding="utf-8")), encoding="utf-8")
    with pytest.raises(LessonError) as caught:
        _ = tiny.project().pin
    assert str(caught.value) == expected


# ---------------------------------------------------------------- parse


def test_parse_gives_blocks_with_their_fields_and_lines(tiny):
    text = "# t\n\nProse.\n\n" + fence("real-source", "File: tiny/core.py", "Symbol: backward", "Emphasize: 23")
    page = parse_page(text, "docs/p.md", kinds=tiny.project().kinds)
    [b] = page.items
    assert isinstance(b, Block)
    assert (b.kind, b.start, b.end) == ("real-source", 4, 8)  # 0-based lines of the opening and closing fence
    assert (b.get("File"), b.get("Symbol"), b.get("Emphasize"), b.body) == (
        "tiny/core.py",
        "backward",
        "23",
        None,
    )


def test_parse_reports_each_broken_block_at_its_line(tiny):
    text = (
        "# t\n\n"
        + fence("real-source", "File: tiny/core.py", "Symbol: backward", "Colour: red")
        + "\n"
        + fence("real-source", "Symbol: backward")
        + "\n"
        + fence("teaching-simplification", "File: x.py")
    )
    page = parse_page(text, "docs/p.md", kinds=tiny.project().kinds)
    assert all(isinstance(item, BrokenBlock) for item in page.items)
    assert [str(item.error) for item in page.items] == [
        "docs/p.md:6: unknown key `Colour` in a real-source block — allowed keys for real-source: File, Symbol, "
        "Which, Commit, Lines, Symbol-lines, Start-after, Start-at, End-before, End-at, Match, Emphasize, "
        "Docstring, Dedent, Tab-width, Recall",
        "docs/p.md:9: real-source block without `File` — add a `File: …` header line",
        "docs/p.md:14: teaching-simplification with `File` but neither `Symbol` nor a body — name the Symbol to "
        "show, or quote the lines as a body",
    ]


def test_a_block_inside_an_indented_code_block_is_text(tiny):
    text = "# t\n\n    ```real-source\n    File: nowhere.py\n    ```\n"
    assert parse_page(text, "docs/p.md", kinds=tiny.project().kinds).items == []


# ---------------------------------------------------------------- selection and resolve


@pytest.mark.parametrize(
    "file, symbol, start, end, first, last",
    [
        ("tiny/core.py", "REGISTRY", 3, 3, "REGISTRY = {}", "REGISTRY = {}"),
        ("tiny/core.py", "Node", 6, 15, "class Node:", '        return f"Node({self.value})"'),
        ("tiny/core.py", "Node.__repr__", 14, 15, "def __repr__(self):", '    return f"Node({self.value})"'),
        ("tiny/core.py", "backward", 18, 27, "def backward(out):", "    return out"),
        ("tiny/ops.py", "add", 14, 16, '@register("add")', "    return Node(a.value + b.value, ((a, 1.0), (b, 1.0)))"),
    ],
    ids=["assignment", "class", "method", "function", "decorated"],
)
def test_a_symbol_resolves_to_its_exact_range(tiny, file, symbol, start, end, first, last):
    ex, problems = resolve(tiny, f"File: {file}", f"Symbol: {symbol}")
    assert problems == []
    assert (ex.origin, ex.file, ex.symbol, ex.start, ex.end) == ("pinned", file, symbol, start, end)
    assert (ex.lines[0], ex.lines[-1], len(ex.lines)) == (first, last, end - start + 1)
    source = SOURCES[file].splitlines()
    assert source[start - 1].strip() == first.strip() and source[end - 1].strip() == last.strip()


def test_start_and_end_selectors_narrow_the_symbol(tiny):
    ex, problems = resolve(
        tiny, "File: tiny/core.py", "Symbol: backward", "Start-at: stack = [out]", "End-at: stack.append(parent)"
    )
    assert problems == [] and (ex.start, ex.end) == (line_of("tiny/core.py", "stack = [out]"), 26)
    assert (ex.lines[0], ex.lines[-1]) == ("stack = [out]", "        stack.append(parent)")
    ex, problems = resolve(
        tiny, "File: tiny/core.py", "Symbol: backward", "Start-after: while stack:", "End-before: return out"
    )
    assert problems == [] and (ex.start, ex.end) == (23, 26)
    assert ex.lines == (
        "node = stack.pop()",
        "for parent, local in node.parents:",
        "    parent.grad += local * node.grad",
        "    stack.append(parent)",
    )


def test_emphasis_and_a_hidden_docstring(tiny):
    ex, problems = resolve(tiny, "File: tiny/core.py", "Symbol: backward", "Lines: 18-27", "Emphasize: 23")
    assert problems == [] and ex.emphasize == (23,)
    ex, problems = resolve(tiny, "File: tiny/core.py", "Symbol: backward", "Docstring: hide")
    assert problems == [] and (ex.start, ex.end) == (18, 27)
    assert ex.lines[:2] == ("def backward(out):", "    out.grad = 1.0") and len(ex.lines) == 9


@pytest.mark.parametrize(
    "header, body, expected",
    [
        (
            ("File: tiny/cor.py", "Symbol: backward"),
            None,
            "docs/p.md:4: no file `tiny/cor.py` in the pinned tiny 0.1.0 tree — did you mean `tiny/core.py`, "
            "`tiny/ops.py`?",
        ),
        (
            ("File: tiny/core.py", "Symbol: register"),
            None,
            "docs/p.md:5: no symbol `register` in tiny/core.py — Symbol names a def, class, assignment or type alias "
            "(dotted for members and nested "
            "definitions: `Outer.Inner.name`, `outer.inner`), or a call selector f(arg)",
        ),
        (
            ("File: ../etc/passwd", "Symbol: x"),
            None,
            "docs/p.md:4: `../etc/passwd` has a `..` segment — paths may not leave the tree",
        ),
        (
            ("File: tiny/core.py", "Symbol: backward", "Commit: 1234567"),
            None,
            f"docs/p.md:6: `Commit: 1234567` is not the pinned commit — this site is pinned to 0123456 ({COMMIT})",
        ),
        (
            ("File: tiny/ops.py", "Symbol: add", "Lines: 1-3"),
            None,
            "docs/p.md:6: `Lines: 1-3`: line 1 is outside `add` in tiny/ops.py — `add` in tiny/ops.py is L14-16; "
            "`Symbol-lines` counts from the symbol's first line",
        ),
        (
            ("File: tiny/core.py", "Symbol: Node.__init__"),
            "    self.value = value\n    self.parent = parents",
            "docs/p.md:8: body is not verbatim: 'self.parent = parents' does not match the source — tiny/core.py "
            "(Node.__init__, L9-12) line 11 reads 'self.parents = parents'",
        ),
    ],
    ids=["missing-file", "missing-symbol", "dotdot-path", "wrong-commit", "stale-lines", "body-not-verbatim"],
)
def test_a_resolve_error_is_one_line_at_the_header_or_body_line(tiny, header, body, expected):
    ex, problems = resolve(tiny, *header, body=body)
    assert (ex, problems) == (None, [expected])
    m = LINE.match(expected)
    assert m and m["path"] == "docs/p.md"
    lines = tiny.page("p.md", "# t\n\n" + fence("real-source", *header, body=body)).read_text().splitlines()
    shown = lines[int(m["line"]) - 1]
    # the line named is the header the message is about, or the body line that differs
    assert shown in header or shown in (body or "").splitlines()


# ---------------------------------------------------------------- render


class Blocks(HTMLParser):
    """The engine blocks of a fragment: id, classes, badge text, meta text, links, line anchors, code."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[dict] = []
        self.stack: list[tuple[str, set[str]]] = []
        self.refs: list[dict] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = set((a.get("class") or "").split())
        self.stack.append((tag, classes))
        if "lk-block" in classes:
            self.blocks.append({"id": a.get("id"), "classes": classes, "badge": "", "meta": "", "links": [],
                                "lines": [], "code": ""})  # fmt: skip
        elif self.blocks and tag == "a" and "lk-link" in classes:
            self.blocks[-1]["links"].append((a.get("href"), None))
        elif self.blocks and tag == "a" and a.get("data-ln"):
            self.blocks[-1]["lines"].append((a.get("id"), int(a["data-ln"])))
        if "lk-ref" in classes:
            self.refs.append({"id": a.get("id"), "title": a.get("title"), "text": ""})

    def handle_endtag(self, tag):
        while self.stack and self.stack.pop()[0] != tag:
            pass

    def handle_data(self, data):
        inside = {c for _, cs in self.stack for c in cs}
        if self.refs and "lk-ref" in inside:
            self.refs[-1]["text"] += data
        if not self.blocks or "lk-block" not in inside:
            return
        b = self.blocks[-1]
        if "lk-badge" in inside:
            b["badge"] += data
        elif "lk-meta" in inside:
            b["meta"] += data
        elif "lk-link" in inside:
            href, _ = b["links"][-1]
            b["links"][-1] = (href, data)
        elif "code" in inside:
            b["code"] += data


def convert(tiny, text: str) -> str:
    md = markdown.Markdown(
        extensions=["lessonkit.pipeline.markdown", "pymdownx.highlight", "pymdownx.superfences"],
        extension_configs={"lessonkit.pipeline.markdown": {"root": str(tiny.root)}},
    )
    return md.convert(text)


def test_a_real_source_block_renders_the_pinned_lines_with_their_numbers(tiny):
    html = convert(tiny, "# T\n\n" + fence("real-source", "File: tiny/ops.py", "Symbol: mul"))
    p = Blocks()
    p.feed(html)
    [b] = p.blocks
    assert b["id"] == "src-mul" and {"lk-block", "lk-real-source"} <= b["classes"]
    assert b["badge"] == "REAL SOURCE"
    assert b["meta"] == "tiny/ops.py · mul · 0123456 · L19–L21"
    assert b["links"] == [(f"https://github.com/example/tiny/blob/{COMMIT}/tiny/ops.py#L19-L21", "Upstream")]
    assert b["lines"] == [("src-mul-L19", 19), ("src-mul-L20", 20), ("src-mul-L21", 21)]
    assert b["code"] == "".join(SOURCES["tiny/ops.py"].splitlines(keepends=True)[18:21])


def test_an_inline_line_reference_renders_the_line_number(tiny):
    html = convert(tiny, 'See [[line: core.py::backward "node = stack.pop()"]].\n')
    p = Blocks()
    p.feed(html)
    assert p.refs == [{"id": "ref-1", "title": "tiny/core.py · backward · node = stack.pop()", "text": "line 23"}]
    assert line_of("tiny/core.py", "node = stack.pop()") == 23


def test_render_without_a_problem_list_raises_every_problem_located(tiny):
    with pytest.raises(LessonError) as caught:
        convert(tiny, "# T\n\n" + fence("real-source", "File: tiny/ops.py", "Symbol: div"))
    assert str(caught.value) == (
        "<markdown>:5: no symbol `div` in tiny/ops.py — Symbol names a def, class, assignment or type alias "
        "(dotted for members and nested "
        "definitions: `Outer.Inner.name`, `outer.inner`), or a call selector f(arg)"
    )


# ---------------------------------------------------------------- verify and the error model


def test_verify_finds_nothing_on_a_correct_page(tiny):
    tiny.page("a.md", "# A\n\n" + fence("real-source", "File: tiny/core.py", "Symbol: Node.__init__"))
    assert verify.check(tiny.project(), None).problems == []


def test_verify_reports_every_problem_of_every_page_once_in_page_order(tiny):
    tiny.page(
        "a.md",
        "# A\n\n"
        + fence("real-source", "File: tiny/ops.py", "Symbol: add", "Lines: 1-3")
        + "\n"
        + fence("real-source", "File: tiny/core.py", "Symbol: Node.__init__", body="    self.grad = 1.0"),
    )
    tiny.page("b.md", "# B\n\n" + fence("real-source", "File: tiny/core.py", "Symbol: nope"))
    problems = [str(p) for p in verify.check(tiny.project(), None).problems]
    assert problems == [
        "docs/a.md:6: `Lines: 1-3`: line 1 is outside `add` in tiny/ops.py — `add` in tiny/ops.py is L14-16; "
        "`Symbol-lines` counts from the symbol's first line",
        "docs/a.md:13: body is not verbatim: 'self.grad = 1.0' does not match the source — tiny/core.py "
        "(Node.__init__, L9-12) line 12 reads 'self.grad = 0.0'",
        "docs/b.md:5: no symbol `nope` in tiny/core.py — Symbol names a def, class, assignment or type alias "
        "(dotted for members and nested "
        "definitions: `Outer.Inner.name`, `outer.inner`), or a call selector f(arg)",
    ]
    for line in problems:  # the error model: `path:LINE: what — hint`, one line, no traceback
        assert LINE.match(line) and "\n" not in line and "Traceback" not in line


# ---------------------------------------------------------------- caches


def test_the_pinned_tree_is_taken_from_the_cache_until_its_entry_is_damaged(tiny):
    first = tiny.project().tree
    assert first.cached is False
    assert tiny.project().tree.cached is True
    (first.root / "tiny" / "ops.py").write_text("def add(a, b):\n    return 0\n", encoding="utf-8")
    again = tiny.project().tree  # a changed file of the cached tree: the archive is extracted again
    assert again.cached is False and again.read("tiny/ops.py").decode() == SOURCES["tiny/ops.py"]


def test_a_store_entry_is_read_back_and_a_damaged_one_is_dropped_and_made_again(tiny):
    from lessonkit.util.store import Store, forget_memory

    store = Store(tiny.cache, "symbols")
    made = []
    assert store.get_or_make("k1", lambda: made.append(1) or "value one") == "value one"
    forget_memory()  # the next read is the disk's
    assert Store(tiny.cache, "symbols").get_or_make("k1", lambda: made.append(2) or "other") == "value one"
    assert made == [1]
    entry = tiny.cache / "symbols" / "k1"
    data = entry.read_bytes()
    entry.write_bytes(data[:-1] + b"X")  # the value changed, its digest in the header not
    forget_memory()
    fresh = Store(tiny.cache, "symbols")
    assert fresh.get_or_make("k1", lambda: made.append(3) or "value one") == "value one"
    assert (made, fresh.dropped, fresh.misses, entry.read_bytes()) == ([1, 3], 1, 1, data)
