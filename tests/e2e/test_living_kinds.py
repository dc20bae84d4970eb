"""Living lessons in the build: the `line`, `value`, `snapshot` and
`figure` kinds in a small project, verify and the scans of docs/ prose."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from prose_numbers import PROSE_NUMBERS
from support import ROOT, block

pytestmark = pytest.mark.warm_cache  # the builds' subject is not the cache: start from a warm one

EXP = ROOT / "experiments"

SNAP = block(
    "snapshot",
    "Experiment: experiments/multiple_paths.py",
    "Title: 第 4 步：两个 3 相加",
    "Label: 实验观察",
    "Precision: 3",
    body="""
             对象 | 值 | 说明
             `x * x` 的梯度 | @xx.grad | 生成
             同一个值 | @xx.grad = 6.0 | 手写并比对
             公式 | $x + x$ {@xx.grad = 6.0} | 公式照写
             分支 | `vs.add(prev_g, g)` | 手写
             """,
)
FIG = block(
    "figure",
    "Experiment: experiments/multiple_paths.py",
    "Graph: xx.graph",
    "Title: x·x 的计算图",
    "Caption: 乘法节点 M 的两个参数都是 R",
)
REAL = block("real-source", "File: autograd/core.py", "Symbol: backward_pass", "Commit: f53a217")

PAGE = (
    "# 活的课程\n\n"
    '见 [[line: core.py::backward_pass "outgrad = outgrads.pop(node)"]]，'
    '以及 [[line: core.py::backward_pass "for parent, ingrad" .. "outgrads[parent]"|file]]；'
    "梯度是 [[value: multiple_paths xx.grad]]。\n\n" + SNAP + "\n" + FIG
)


def _site(site, page=PAGE, name="a.md"):
    shutil.copy(EXP / "multiple_paths.py", site.root / "experiments" / "multiple_paths.py")
    site.page(name, page)
    return site


def _html(site, name="a"):
    return (site.root / "site" / name / "index.html").read_text(encoding="utf-8")


def test_the_four_kinds_are_registered():
    from lessonkit import kinds

    fenced = list(kinds.KINDS.fenced)
    assert fenced == [
        "real-source",
        "teaching-simplification",
        "experiment",
        "snapshot",
        "figure",
        "exercise",
        "output",
        "runnable",
    ]
    assert list(kinds.KINDS.inline) == ["line", "value"]


@pytest.mark.parametrize(
    "text, args",
    [
        (
            '见 [[line: core.py::backward_pass "outgrads[parent]"]] 与 [[value: m a.b|3]]',
            ['core.py::backward_pass "outgrads[parent]"', "m a.b|3"],
        ),
        (r'[[line: a.py::f "say \"]]\" now" .. "b"]]', [r'a.py::f "say \"]]\" now" .. "b"']),
        ('[[line: a.py::f]] `[[line: b.py::g]]`', ["a.py::f"]),
        # a double-backtick span holding one backtick is still one span: nothing in it is a reference
        ('``a ` [[line: b.py::g]]`` then [[line: a.py::f]]', ["a.py::f"]),
        ('a lone ` backtick, then [[line: a.py::f]]', ["a.py::f"]),
    ],
)
def test_inline_pattern_allows_brackets_inside_quotes(text, args):
    from lessonkit.kinds import KINDS
    from lessonkit.pipeline.parse import parse_page

    page = parse_page(text, "docs/a.md", kinds=KINDS)
    assert [i.ref.argument for i in page.inline] == args and page.problems == []


def test_an_unclosed_inline_reference_is_a_located_error():
    from lessonkit.kinds import KINDS
    from lessonkit.pipeline.parse import parse_page

    page = parse_page('x\n见 [[line: a.py::f "outgrads[parent]]] 后文', "docs/a.md", kinds=KINDS)
    assert page.inline == []
    assert [str(p) for p in page.problems] == [
        'docs/a.md:2: the inline `line` reference is not closed — end it with ]] on the same line '
        '(close every "quote"; write \\" for a quote inside one)'
    ]


def test_build_renders_each_kind(site):
    _site(
        site,
        PAGE + "\n" + REAL + '\n再看 [[line: core.py::backward_pass "outgrad = outgrads.pop(node)" |L]]'
        '，以及 [[line: core.py::add_outgrads "vs.add(prev_g, g)"]]。\n',
    )
    r = site.build()
    assert r.returncode == 0, r.stderr
    html = _html(site)
    refs = re.findall(r'<a class="lk-ref"[^>]*>[^<]*</a>', html)
    assert refs == [
        '<a class="lk-ref" id="ref-1" href="#src-backward_pass-L28" title="autograd/core.py · backward_pass · '
        'outgrad = outgrads.pop(node)">第 28 行</a>',
        '<a class="lk-ref" id="ref-2" href="#src-backward_pass-L30" title="autograd/core.py · backward_pass · '
        'for parent, ingrad in zip(node.parents, ingrads): / outgrads[parent] = add_outgrads(outgrads.get(parent), '
        'ingrad)">core.py:30–31</a>',
        '<a class="lk-ref" id="ref-3" href="#src-backward_pass-L28" title="autograd/core.py · backward_pass · '
        'outgrad = outgrads.pop(node)">L28</a>',
        '<a class="lk-ref" id="ref-4" href="../source/autograd/core.py/#L199" title="autograd/core.py · '
        'add_outgrads · return vs.add(prev_g, g), True">第 199 行</a>',
    ]
    assert 'id="src-backward_pass-L28"' in html  # the excerpt's line anchor the references land on
    assert '<span class="lk-value" title="experiments/multiple_paths.py 本次构建的运行记录：xx.grad">6.0</span>' in html
    rows = re.findall(r"<tr>.*?</tr>", html.split('id="snapshot-1"')[1].split("</table>")[0])
    assert rows == [
        "<tr><th>对象</th><th>值</th><th>说明</th></tr>",
        '<tr><td><code>x * x</code> 的梯度</td><td class="lk-generated" title="experiments/multiple_paths.py 的记录 '
        'xx.grad">6.0</td><td>生成</td></tr>',
        '<tr><td>同一个值</td><td class="lk-checked" title="experiments/multiple_paths.py 的记录 xx.grad（手写值，'
        '已与记录比对）">6.0</td><td>手写并比对</td></tr>',
        '<tr><td>公式</td><td class="lk-checked" title="experiments/multiple_paths.py 的记录 xx.grad（手写值，'
        '已与记录比对）"><span class="lk-math" data-search-exclude="math">'
        '<math xmlns="http://www.w3.org/1998/Math/MathML" display="inline">'
        '<mrow><mi>x</mi><mo>&#x0002B;</mo><mi>x</mi></mrow></math></span><span class="lk-math-text">x+x</span>'
        "</td><td>公式照写</td></tr>",
        "<tr><td>分支</td><td><code>vs.add(prev_g, g)</code></td><td>手写</td></tr>",
    ]
    assert (
        '<span class="lk-badge lk-badge-snap" data-search-exclude="chrome">状态快照 STATE SNAPSHOT · 实验观察</span>'
    ) in html
    fig = html.split('<figure class="lk-figure" id="figure-1">')[1].split("</figure>")[0]
    assert fig.startswith('<svg xmlns="http://www.w3.org/2000/svg" class="lk-fig"')
    assert re.findall(r"<text [^>]*>([^<]*)</text>", fig) == ["R", "根节点", "M", "multiply"]
    assert fig.endswith(
        '<figcaption>乘法节点 M 的两个参数都是 R<span class="lk-fig-source" '
        'data-search-exclude="chrome">（图由本次构建运行 <code>experiments/multiple_paths.py</code> '
        "的记录绘制）</span></figcaption>"
    )
    src = (site.root / "site" / "source" / "autograd" / "core.py" / "index.html").read_text(encoding="utf-8")
    # one row per symbol, one link per page and cited range: ref-3 names the same line as ref-1
    assert re.findall(r'<tr id="cited-[^"]+" class="lk-cite-group">.*?</tr>', src) == [
        '<tr id="cited-backward_pass" class="lk-cite-group"><td><a href="#L25-L32"><code>backward_pass</code></a></td>'
        '<td><ul class="lk-cite-ranges"><li><a href="#L25-L32">L25–L32</a>：'
        '<a href="../../../a/#src-backward_pass">活的课程</a></li>'
        '<li><a href="#L28">L28</a>：<a href="../../../a/#ref-1">活的课程（正文）</a></li>'
        '<li><a href="#L30-L31">L30–L31</a>：<a href="../../../a/#ref-2">活的课程（正文）</a></li></ul></td></tr>',
        '<tr id="cited-add_outgrads" class="lk-cite-group"><td><a href="#L199"><code>add_outgrads</code></a></td>'
        '<td><ul class="lk-cite-ranges"><li><a href="#L199">L199</a>：'
        '<a href="../../../a/#ref-4">活的课程（正文）</a></li></ul></td></tr>',
    ]
    # the first line of each range carries a gutter marker, a link to its symbol's row
    assert re.findall(
        r'<span id="L(\d+)" class="lk-line lk-cited"><a class="lk-ln" href="#L\1" tabindex="-1" '
        r'aria-hidden="true"></a><a class="lk-cite-mark" href="#([^"]+)" aria-label="([^"]+)"',
        src,
    ) == [
        ("25", "cited-backward_pass", "引用此处的块：活的课程"),
        ("28", "cited-backward_pass", "引用此处的块：活的课程（正文）"),
        ("30", "cited-backward_pass", "引用此处的块：活的课程（正文）"),
        ("199", "cited-add_outgrads", "引用此处的块：活的课程（正文）"),
    ]
    acc = (site.root / "site" / "attachments" / "acceptance" / "index.html").read_text(encoding="utf-8")
    living = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", acc.split('id="living"')[1].split("</table>")[0]))
    assert living.endswith(  # the engine's own page template (English); the counts use site.toml's prose columns
        "Snapshot tables 1 Snapshot values generated from a recording 1 "
        "Snapshot values typed by hand, checked against a recording 2 Snapshot values typed by hand, not checked 1 "
        "Share generated or checked 75.0 % (target ≥ 90 %) Figures drawn from a recording 1 "
        "Recorded values in the prose 1 Source line references in the prose 4 "
    )


BAD = [
    (
        '[[line: core.py::backward_pass "no such text"]]',
        "docs/a.md:3: 'no such text' does not occur in `backward_pass` (autograd/core.py L25-32) — quote the line "
        "verbatim",
    ),
    (
        '[[line: core.py::backward_pass "outgrads"]]',
        "docs/a.md:3: 'outgrads' occurs in 3 lines of `backward_pass` (autograd/core.py L25-32) — quote more of the "
        "line you mean (L26: 'outgrads = {end_node: (g, False)}'; L28: 'outgrad = outgrads.pop(node)'; "
        "L31: 'outgrads[parent] = add_outgrads(outgrads.get(parent), ingrad')",
    ),
    (
        "[[value: multiple_paths xx.nope]]",
        "docs/a.md:3: experiments/multiple_paths.py recorded no `xx.nope` (no `nope` under xx) — there: R_vjp, calls, "
        "edge_counts, grad, graph, order, outgrads, parents_types, seed, toposort",
    ),
    (
        "[[value: multiple_pathz xx.grad]]",
        "docs/a.md:3: there is no experiments/multiple_pathz.py — did you mean experiments/multiple_paths.py?",
    ),
]


@pytest.mark.parametrize("prose, message", BAD)
def test_inline_mistakes_are_located_errors(site, prose, message):
    _site(site, "# 错误\n\n见 " + prose + "。\n")
    r = site.verify()
    assert r.returncode == 1
    assert r.stderr.splitlines()[0] == message, r.stderr


def test_snapshot_mistakes_are_located_at_the_row(site):
    bad = block(
        "snapshot",
        "Experiment: experiments/multiple_paths.py",
        body="""
                对象 | 值
                梯度 | @xx.grad = 7.0
                未知 | @xx.sead
                """,
    )
    _site(
        site,
        "# 错误\n\n"
        + bad
        + "\n"
        + block("figure", "Experiment: experiments/nothing.py", "Graph: g")
        + "\n"
        + block("figure", "Experiment: experiments/multiple_paths.py", "Graph: xx.grad"),
    )
    r = site.verify()
    assert r.returncode == 1
    assert r.stderr.splitlines()[:1] == [
        "docs/a.md:12: there is no experiments/nothing.py — create the experiment first"
    ]
    (site.root / "docs" / "a.md").write_text(
        "# 错误\n\n" + bad + "\n" + block("figure", "Experiment: experiments/multiple_paths.py", "Graph: xx.grad"),
        encoding="utf-8",
    )
    r = site.verify()
    assert r.stderr.splitlines()[:3] == [
        "docs/a.md:7: snapshot cell says '7.0' but experiments/multiple_paths.py recorded `xx.grad` = 6.0 — fix the "
        "hand-written value, or write `@xx.grad` to show the recorded one",
        "docs/a.md:8: experiments/multiple_paths.py recorded no `xx.sead` (no `sead` under xx) — there: R_vjp, calls, "
        "edge_counts, grad, graph, order, outgrads, parents_types, seed, toposort",
        "docs/a.md:13: `xx.grad` in experiments/multiple_paths.py's recording is not a recorded graph (record.graph): "
        "it is an object without a list of `nodes` — `Graph:` names a recorded graph (record.graph)",
    ]
    b = site.build()
    assert b.returncode == 1 and "docs/a.md:7: snapshot cell says '7.0'" in b.stderr and "Traceback" not in b.stderr


GRAPH = """\
import autograd.numpy as np
from autograd.tracer import trace_stack, new_box
from autograd.core import VJPNode
from _record import record

def f(x):
    return x * x

with trace_stack.new_trace() as t:
    start = new_box(3.0, t, VJPNode.new_root())
    with record.capture() as cap:
        cap.root(start._node, t, 3.0)
        end = f(start)
    record.graph("g", cap, end, labels={start._node: "x", end._node: "y"})
print("ok")
"""


def test_a_changed_experiment_changes_the_figure_in_the_built_page(site):
    site.script("g.py", GRAPH)
    site.page("a.md", "# 图\n\n" + block("figure", "Experiment: experiments/g.py", "Graph: g", "Caption: 计算图"))
    r = site.build()
    assert r.returncode == 0, r.stderr
    before = re.findall(r"<text [^>]*>([^<]*)</text>", _html(site))
    site.script("g.py", GRAPH.replace("return x * x", "return np.sin(x) * x"))
    r = site.build()
    assert r.returncode == 0, r.stderr
    after = re.findall(r"<text [^>]*>([^<]*)</text>", _html(site))
    assert before == ["x", "根节点", "y", "multiply"]
    assert after == ["x", "根节点", "sin", "y", "multiply"]


# -- docs/ prose: no hand-typed source line numbers, and the numbers left ----------------------

DOCS = ROOT / "docs"
# A source line number typed by hand: 第 28 行, 第 30–31 行, core.py:28, L28, L30–L31 (or L30–31).
LINE_NUMBER = re.compile(r"第\s*\d+\s*(?:[–\-~～到至]\s*\d+\s*)?行|\b[\w./-]+\.py:\d+|\bL\d+(?:\s*[–\-]\s*L?\d+)?\b")
# Non-source uses of 「第 N 行」, each with its reason. A match is allowed only on the page named.
NOT_SOURCE_LINES = [
    (
        "lessons/11-operator-composition.md",
        r"第 \d+ 行 \$\(",
        "a row of the Jacobian matrix J_F, followed by its entries in a formula: not a line of a file",
    ),
    (
        "lessons/13-custom-primitive.md",
        r"表中第 [\d–]+ 行",
        "rows of the call table shown just above on the same page: not a line of a file",
    ),
]


def prose_lines(text: str):
    """(line number, prose) of a page: outside fenced blocks (but inside snapshot tables, which are
    prose), with inline code, HTML comments and inline references (`[[line: …]]`, `[[value: …]]`,
    checked by verify) blanked out."""
    from lessonkit.kinds import INLINE

    fence, table = None, False
    text = re.sub(r"<!--.*?-->", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    for n, line in enumerate(text.split("\n"), 1):
        s = line.lstrip()
        mark = re.match(r"(`{3,}|~{3,})\s*(\S*)", s)
        if fence is None and mark:
            fence, table = mark.group(1), mark.group(2).strip("{.}") == "snapshot"
            continue
        if fence is not None:
            if s.startswith(fence) and not s[len(fence) :].strip():
                fence = None
                continue
            if not table:
                continue

            # checked cells (`@key = v`, `text {@key = v}`) are compared with the run by the build;
            # a number the text shows is checked too when the note's value `v` states the same number
            def blank_checked(m):
                checked = [float(v) for v in NUMBER.findall(m.group(3))]
                return NUMBER.sub(
                    lambda k: " " * len(k.group(0)) if float(k.group(0)) in checked else k.group(0), m.group(1)
                ) + m.group(2)

            line = re.sub(r"([^|]*?)(\{@[^{}=]*=([^{}]*)\})", blank_checked, line)
            line = re.sub(r"\{@[^{}]*\}|`?@[\w.-]+`?(?:\s*=\s*[^|]*)?", lambda m: " " * len(m.group(0)), line)
        line = INLINE.sub(lambda m: " " * len(m.group(0)), line)
        yield n, re.sub(r"(`+)(?:(?!\1).)+?\1", lambda m: " " * len(m.group(0)), line)


def test_prose_scan_finds_the_hand_typed_forms():
    page = (
        "见第 28 行与第 30–31 行，core.py:28，L28–L29。\n`第 9 行` 与 [[line: core.py::grad]] 不算。\n"
        "```\n第 7 行\n```\n```snapshot\nExperiment: experiments/x.py\n\n对象 | 值 | 说明\n"
        "R | @a.b = L30 | 见 L31\n```\n"
    )
    hits = [(n, m.group(0)) for n, line in prose_lines(page) for m in LINE_NUMBER.finditer(line)]
    assert hits == [(1, "第 28 行"), (1, "第 30–31 行"), (1, "core.py:28"), (1, "L28–L29"), (10, "L31")]


def test_docs_prose_has_no_hand_typed_source_line_numbers():
    found = []
    for path in sorted(DOCS.rglob("*.md")):
        rel = path.relative_to(DOCS).as_posix()
        for n, line in prose_lines(path.read_text(encoding="utf-8")):
            for m in LINE_NUMBER.finditer(line):
                allowed = [
                    why
                    for page, pattern, why in NOT_SOURCE_LINES
                    if page == rel and any(a.start() <= m.start() < a.end() for a in re.finditer(pattern, line))
                ]
                if not allowed:
                    found.append(f"docs/{rel}:{n}: {m.group(0)!r} — write [[line: FILE::SYMBOL \"fragment\"]]")
    assert found == []


# A number with a decimal point or an exponent in lesson prose is an observation unless it is one
# of these (context pattern around the number, reason). Numbers inside $formulas$ are the author's
# derivation; a snapshot row checks them with {@key = v}.
NUMBER = re.compile(r"(?<![\w.])-?\d+\.\d+(?:e-?\d+)?(?![\w.])|(?<![\w.])\d+e-?\d+(?![\w.])")
NOT_FROM_A_RUN = [
    (r"(?:Python|NumPy|autograd|Material|MkDocs|版本)\s*{n}", "a version number"),
    (r"{n}\s*(?:节|小节)|§\s*{n}|\[{n}[\s\]]|^\s*\|\s*{n}\s*\||^#+\s*{n}\s", "a section or step number of a lesson"),
    (
        r"(?:x|x_0|x0|输入|传入的|在|点|at)\s*[=＝]?\s*{n}",
        "the input the author chooses (the experiment uses the same literal)",
    ),
    (r"\({n}\)", "the input of a call written in prose, e.g. grad(f)(3.0)"),
    (r"(?:阈值|容差|tol|rtol|atol|步长|h\s*=)\s*{n}", "a threshold or step size chosen by the author"),
]


def numbers_left(root: Path = DOCS) -> list[tuple[str, int, str, str | None]]:
    """Every decimal number in lesson prose outside formulas: (page, line, number, reason or None)."""
    out = []
    for path in sorted((root / "lessons").glob("*.md")):
        rel = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        raw = text.split("\n")
        listed = [(t, reason) for page, t, reason in PROSE_NUMBERS if page == rel]
        for n, line in prose_lines(text):
            line = re.sub(r"\$[^$]+\$", lambda m: " " * len(m.group(0)), line)
            for m in NUMBER.finditer(line):
                num = m.group(0)
                why = next(
                    (
                        reason
                        for pattern, reason in NOT_FROM_A_RUN
                        if any(
                            a.start() <= m.start() < a.end()
                            for a in re.finditer(pattern.format(n=re.escape(num)), line)
                        )
                    ),
                    None,
                )
                why = why or next(
                    (
                        reason
                        for t, reason in listed
                        if any(
                            a.start() <= m.start() < a.start() + len(t) for a in re.finditer(re.escape(t), raw[n - 1])
                        )
                    ),
                    None,
                )
                out.append((f"docs/{rel}", n, num, why))
    return out


def test_numbers_left_in_prose_each_have_a_reason():
    """Lists the numbers left in lesson prose and why each is not from a run (run with -s to read it)."""
    left = numbers_left()
    for page, n, num, why in left:
        print(f"{page}:{n}: {num} — {why or 'OBSERVED: write [[value: experiment key]]'}")
    assert [f"{p}:{n}: {num}" for p, n, num, why in left if why is None] == []


def test_prose_numbers_entries_each_name_one_place():
    """Each (page, text, reason) of tests/series/prose_numbers.py occurs exactly once in its page."""
    wrong = []
    for page, t, reason in PROSE_NUMBERS:
        path = DOCS / page
        count = path.read_text(encoding="utf-8").count(t) if path.is_file() else -1
        if count != 1 or not reason.strip():
            wrong.append(f"docs/{page}: {t!r} occurs {count} times (reason {reason!r})")
    assert wrong == []


def test_numbers_left_classifies_by_context(tmp_path):
    (tmp_path / "lessons").mkdir()
    (tmp_path / "lessons" / "01.md").write_text(
        "在 x = 1.5 处，梯度是 6.0；见 5.3 节，Python 3.12；公式 $y = 2.0$ 不算；[[value: m a]]。\n", encoding="utf-8"
    )
    assert numbers_left(tmp_path) == [
        ("docs/lessons/01.md", 1, "1.5", "the input the author chooses (the experiment uses the same literal)"),
        ("docs/lessons/01.md", 1, "6.0", None),
        ("docs/lessons/01.md", 1, "5.3", "a section or step number of a lesson"),
        ("docs/lessons/01.md", 1, "3.12", "a version number"),
    ]
    # in a snapshot row, a number shown beside a note that checks the same number is checked; others are not
    (tmp_path / "lessons" / "01.md").write_text(
        "```snapshot\nExperiment: experiments/m.py\n\n对象 | 值 | 说明\n"
        "g | 6.0 {@a.g = 6.000000} | 实验观察\nh | 2.0 {@a.h = 3.0} | 合计 1.0\n```\n",
        encoding="utf-8",
    )
    assert [(n, num, why) for _, n, num, why in numbers_left(tmp_path)] == [(6, "2.0", None), (6, "1.0", None)]


# -- repin ----------------------------------------------------------------------------------

from test_repin import _report, _seed, sdists  # noqa: E402,F401,F811  (the 1.8.0 sdist, fetched once)


def test_repin_classifies_prose_references_and_rebuilds_recorded_values(site, monkeypatch, sdists):  # noqa: F811
    _seed(site, sdists("1.8.0"))
    _site(
        site,
        "# 重新固定\n\n"
        '见 [[line: core.py::backward_pass "outgrad = outgrads.pop(node)"]]，'
        '[[line: tracer.py::Box "type_mappings = {}"]]，'
        '[[line: tracer.py::primitive "is_ufunc = isinstance(f_raw, np.ufunc)"]]，'
        "梯度 [[value: multiple_paths xx.grad]]。\n\n" + SNAP + "\n" + FIG,
    )
    report = _report(site, monkeypatch, "1.8.0")
    rows = [
        (i.line, i.kind, i.status, i.detail)
        for i in report.items
        if i.kind in ("prose-ref", "snapshot", "figure", "value")
    ]
    assert rows == [
        (3, "prose-ref", "unchanged", ""),
        (3, "prose-ref", "moved", "第 157 行 → 第 109 行 (rendered from the content: no edit needed)"),
        (
            3,
            "prose-ref",
            "missing",
            "第 48 行 names nothing at the target: 'is_ufunc = isinstance(f_raw, np.ufunc)' "
            "does not occur in `primitive` (autograd/tracer.py L36-58)",
        ),
        (3, "value", "unchanged", ""),
        (5, "snapshot", "unchanged", ""),
        (18, "figure", "unchanged", ""),
    ]
    text = "\n".join(repin.summary_lines(report))
    assert "prose refs:  1 unchanged, 1 moved, 1 missing" in text
    assert "recorded:    3 unchanged" in text
    assert "  :3     moved     prose-ref   tracer.py::Box \"type_mappings = {}\" — 第 157 行 → 第 109 行" in text


from lessonkit import repin  # noqa: E402


def test_snapshot_cells_may_hold_inline_references(site):
    ref = '[[line: core.py::backward_pass "outgrad = outgrads.pop(node)"|file]]'
    table = block(
        "snapshot",
        "Experiment: experiments/multiple_paths.py",
        body=f"""
                  对象 | 值 | 说明
                  `outgrad` | @xx.grad | 在 {ref} 取出，等于 [[value: multiple_paths xx.grad]]
                  """,
    )
    _site(site, "# 表\n\n" + table)
    r = site.run("-m", "lessonkit", "render", "docs/a.md")
    assert r.returncode == 0, r.stderr
    assert (
        '<td>在 <span class="lk-ref" title="autograd/core.py · backward_pass · outgrad = '
        'outgrads.pop(node)">core.py:28</span> 取出，等于 '
        '<span class="lk-value" title="experiments/multiple_paths.py '
        '本次构建的运行记录：xx.grad">6.0</span></td>'
    ) in r.stdout
    bad = table.replace("outgrads.pop(node)", "outgrads.popp(node)")
    site.page("a.md", "# 表\n\n" + bad)
    v = site.verify()
    assert v.stderr.splitlines()[0] == (
        "docs/a.md:7: 'outgrad = outgrads.popp(node)' does not occur in `backward_pass` (autograd/core.py L25-32) — "
        "closest lines: L27: 'for node in toposort(end_node):'; L28: 'outgrad = outgrads.pop(node)'; "
        "L31: 'outgrads[parent] = add_outgrads(outgrads.get(parent), ingrad'"
    )


def test_snapshot_title_references_are_checked(site):
    table = block(
        "snapshot",
        "Experiment: experiments/multiple_paths.py",
        "Title: 第一对 (R, [[value: multiple_paths xx.calls.9.ingrad]])",
        body="""
                  对象 | 值 | 说明
                  `outgrad` | @xx.grad | 最终梯度
                  """,
    )
    _site(site, "# 表\n\n" + table)
    v = site.verify()
    assert v.returncode != 0 and v.stderr.splitlines()[0].startswith(
        "docs/a.md:5: experiments/multiple_paths.py recorded no `xx.calls.9.ingrad`"
    ), v.stderr
    site.page("a.md", "# 表\n\n" + table.replace("xx.calls.9.ingrad", "xx.calls.0.ingrad"))
    assert site.verify().returncode == 0


def test_a_checked_cell_that_shows_a_value_shows_the_numbers_it_checks(site):
    """``8.0 {@xx.grad = 6.0}`` would show 8.0 with the marker of a cell checked against the run;
    a cell that shows more than the value it checks (``(6.0, 6.0)``) or words is the author's."""
    snap = block(
        "snapshot",
        "Experiment: experiments/multiple_paths.py",
        body="""
                对象 | 值
                两个贡献 | (6.0, 6.0) {@xx.grad = 6.0}
                说明 | 六 {@xx.grad = 6.0}
                显示 | 8.0 {@xx.grad = 6.0}
                """,
    )
    _site(site, "# 快照\n\n" + snap)
    r = site.verify()
    assert r.returncode == 1
    assert r.stderr.splitlines()[:1] == [
        "docs/a.md:9: snapshot cell '8.0' checks `xx.grad` = 6.0 but shows 8.0 in its text: a checked cell shows no "
        "other number where a reader would take it for the checked value — show 6.0, put other numbers in code or a "
        "formula, or write `@xx.grad` (the recorded value)"
    ]


def test_a_figure_caption_shows_the_value_of_this_build_from_a_warm_cache(site):
    """The caption's `[[value: …]]` is an input of the figure's HTML: a warm build with another
    recorded value shows the new one (the render cache's key holds the rendered caption)."""
    site.script("g.py", GRAPH)
    site.script("v.py", 'from _record import record\nrecord.set("x", 1.5)\n')
    site.page(
        "a.md", "# 图\n\n" + block("figure", "Experiment: experiments/g.py", "Graph: g", "Caption: x = [[value: v x]]")
    )
    assert site.build().returncode == 0
    assert re.search(r"<figcaption>x = <span[^>]*>1.500000</span>", _html(site))
    site.script("v.py", 'from _record import record\nrecord.set("x", 2.5)\n')
    r = site.build()
    assert r.returncode == 0, r.stderr
    assert re.search(r"<figcaption>x = <span[^>]*>2.500000</span>", _html(site))
    r = site.run("-m", "lessonkit", "verify", "--no-map", "--site", "site")
    assert r.returncode == 0, r.stderr
