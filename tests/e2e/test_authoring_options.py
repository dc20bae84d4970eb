"""The authoring options: real-source selectors (``Lines`` alone, ``Start-after`` /
``Start-at`` / ``End-before`` / ``End-at``, ``Emphasize``, ``Docstring: hide``, ``Dedent``, an
optional ``Commit``), elided bodies, page sessions of inline experiments, errors while serving,
and maps that follow the source.

One small project holds a page with every option and a page session; it is verified, its map
written, mutated and built once (``options``). Bad values of every field are in the catalogue
(``tests/e2e/test_catalogue.py``); repin against autograd 1.8.0 is in ``tests/series/test_repin.py``.
"""

from __future__ import annotations

import json
import re
import textwrap
from html import unescape
from pathlib import Path

import pytest
from support import TmpSite, block

from lessonkit.checks import mutation
from lessonkit.run import runner as execute

pytestmark = pytest.mark.warm_cache  # the builds' subject is not the cache: start from a warm one

OPTIONS = "# 选项\n\n" + "\n".join(
    [
        block("real-source", "File: autograd/core.py", "Lines: 4-5"),  # 0: Lines alone (line 3)
        block(
            "real-source",
            "File: autograd/core.py",
            "Symbol: backward_pass",
            "Start-at: for node in",
            "End-before: return outgrad[0]",
            "Emphasize: 28, 30-31",
        ),  # 1
        block(
            "real-source", "File: autograd/core.py", "Start-after: class VJPNode(Node):", "End-at: self.vjp = vjpmaker"
        ),
        block(
            "real-source",
            "File: autograd/differential_operators.py",
            "Symbol: grad",
            "Docstring: hide",
            "Commit: f53a217",
        ),
        block("real-source", "File: autograd/core.py", "Symbol: VJPNode.__init__", "Dedent: none"),  # 4
        block(
            "real-source",
            "File: autograd/core.py",
            "Symbol: backward_pass",
            body="""\
            def backward_pass(g, end_node):
                outgrads = {end_node: (g, False)}
            ...
                    for parent, ingrad in zip(node.parents, ingrads):
                        outgrads[parent] = add_outgrads(outgrads.get(parent), ingrad)
            …
            """,
        ),  # 5
        block("real-source", "File: autograd/core.py", "Symbol: VJPNode.initialize_root", "Dedent: 2"),  # 6
        block("experiment", "File: experiments/shown.py", "Purpose: 脚本的摘录不进映射"),  # 7
    ]
)

SESSION = """\
# 会话

```experiment
Purpose: 第一块定义 x
Session: tape

import itertools
counter = itertools.count()
x = 2
print("x =", x, next(counter))
```

中间的正文。

```experiment
Purpose: 第二块用第一块的 x
Session: tape

y = x * 3
print("y =", y, next(counter), end="")
```

```experiment
Purpose: 第三块
Session: tape

print("x + y =", x + y, next(counter))
```
"""

# the blocks' first code lines on the session page
S1, S2, S3 = 7, 19, 27  # and the fences: 3, 15, 23


@pytest.fixture(scope="module")
def options(tmp_path_factory, pinned_root):
    base = tmp_path_factory.mktemp("options")
    site = TmpSite(base / "proj", pinned_root)
    site.script("shown.py", "def shown():\n    return 1\n\n\nprint(shown())\n")
    site.page("lessons/options.md", OPTIONS)
    site.page("lessons/session.md", SESSION)
    r = site.run("-m", "lessonkit", "verify", "--update-map")
    assert r.returncode == 0, r.stderr
    b = site.build()
    assert b.returncode == 0, b.stderr[-3000:]
    return site


def _html(site, page: str) -> str:
    return (site.root / "site" / "lessons" / page / "index.html").read_text(encoding="utf-8")


def _block(html: str, anchor: str) -> str:
    start = html.index(f'id="{anchor}"')
    start = html.rindex("<div", 0, start)
    depth = 0
    for m in re.finditer(r"<div\b|</div>", html[start:]):
        depth += 1 if m[0] == "<div" else -1
        if depth == 0:
            return html[start : start + m.end()]
    raise AssertionError(f"no end of #{anchor}")


def _text(html: str) -> str:
    return unescape(re.sub(r"<[^>]+>", "", html))


def _code(html: str) -> str:
    """The text of the code elements (what Material's copy buttons copy), one run after another."""
    return "".join(_text(c) for c in re.findall(r"<pre>(?:<span></span>)?<code>(.*?)</code></pre>", html, re.S))


def _numbers(html: str, anchor: str) -> list[int]:
    return [int(n) for n in re.findall(rf'<a (?:tabindex="-1" )?href="#{re.escape(anchor)}-L(\d+)">', html)]


# ---------------------------------------------------------------- the page shows what was selected


def test_lines_alone_shows_those_lines(options):
    html = _block(_html(options, "options"), "src-core-py-L4")
    assert _numbers(html, "src-core-py-L4") == [4, 5]
    lines = _code(html).split("\n")[:-1]
    assert lines == [
        "from .tracer import Box, Node, getval, isbox, primitive, toposort, trace",
        "from .util import func, subval",
    ]
    assert "L4–L5" in html and "../../source/autograd/core.py/#L4-L5" in html


def test_patterns_in_a_symbol_and_emphasis(options):
    html = _block(_html(options, "options"), "src-backward_pass")
    assert _numbers(html, "src-backward_pass") == [27, 28, 29, 30, 31]
    assert html.count('<span class="hll">') == 3  # lines 28, 30 and 31 (pymdownx hl_lines; Material styles .hll)
    marked = re.findall(r'<span class="hll">(.*?)</span>\n', html)
    assert [_text(m).strip() for m in marked][0] == "outgrad = outgrads.pop(node)"


def test_patterns_in_the_file(options):
    html = _html(options, "options")
    anchor = re.search(r'id="(src-core-py-L36[^"]*)"', html)[1]
    assert _numbers(_block(html, anchor), anchor) == list(range(36, 46))
    assert "class VJPNode" not in _text(_block(html, anchor))


def test_docstring_hidden_with_an_elision_row(options):
    html = _block(_html(options, "options"), "src-grad")
    assert "Returns a function which computes the gradient" not in html
    assert _numbers(html, "src-grad") == [23, 24, *range(30, 37)]
    rows = re.findall(r'<div class="lk-elided"[^>]*>(.*?)</div>', html)
    assert [_text(r) for r in rows] == ["⋯ 省略 5 行 ⋯"]
    assert 'href="../../source/autograd/differential_operators.py/#L23-L36"' in rows[0]


def test_dedent_none_and_a_number(options):
    page = _html(options, "options")
    init = _code(_block(page, "src-VJPNode-__init__"))
    assert "    def __init__(self, value, fun" in init and "        self.parents = parents" in init
    root = _code(_block(page, "src-VJPNode-initialize_root"))
    assert "  def initialize_root(self):\n      self.parents = []" in root


def test_elided_body_runs_rows_and_copy(options):
    html = _block(_html(options, "options"), "src-backward_pass-2")
    runs = re.findall(r'<div class="lk-run" id="(src-backward_pass-2-r\d)">', html)
    assert runs == ["src-backward_pass-2-r1", "src-backward_pass-2-r2"]  # each its own copy target
    assert _numbers(html, "src-backward_pass-2") == [25, 26, 30, 31]
    rows = [_text(r) for r in re.findall(r'<div class="lk-elided"[^>]*>(.*?)</div>', html)]
    assert rows == ["⋯ 省略 3 行 ⋯", "⋯ 省略 1 行 ⋯"]
    for code in re.findall(r"<pre>(?:<span></span>)?<code>(.*?)</code></pre>", html, re.S):  # rows: not in code
        assert "省略" not in code and "lk-elided" not in code
    assert 'data-search-exclude="chrome"' in re.search(r'<div class="lk-elided"[^>]*>', html)[0]


# ---------------------------------------------------------------- the map, verify, mutation


def test_the_map_records_runs_elisions_and_emphasis_of_pinned_excerpts_only(options):
    data = json.loads((options.root / "sourcemap" / "excerpts.json").read_text())
    entries = {e["block"]: e for e in data["excerpts"] if e["page"] == "docs/lessons/options.md"}
    assert sorted(entries) == [0, 1, 2, 3, 4, 5, 6]  # block 7 shows experiments/shown.py: not recorded
    assert entries[0]["lines"] == [4, 5] and "runs" not in entries[0]
    assert entries[1]["lines"] == [27, 31] and entries[1]["emphasize"] == [28, 30, 31]
    assert entries[2]["lines"] == [36, 45]
    assert (entries[3]["runs"], entries[3]["elided"]) == ([[23, 24], [30, 36]], [[25, 29]])
    assert (entries[5]["runs"], entries[5]["elided"]) == ([[25, 26], [30, 31]], [[27, 29], [32, 32]])
    assert not [e for e in data["excerpts"] if e["page"] == "docs/lessons/session.md"]


def test_verify_with_the_map_passes(options):
    r = options.run("-m", "lessonkit", "verify")
    assert r.returncode == 0, r.stderr
    assert "0 problem(s)" in r.stdout


def test_mutation_catches_a_change_in_every_shown_run(options, monkeypatch):
    monkeypatch.setenv("AUTOGRAD_SOURCE", str(options.pinned_root))
    report = mutation.run(options.project(), {"docs/lessons/options.md"})
    assert report.problems == [] and report.ok, [o.detail for o in report.outcomes if not o.caught]
    by_block: dict[int, list[int]] = {}
    for o in report.outcomes:
        by_block.setdefault(o.block, []).append(o.mutation.line)
    assert {k: len(v) for k, v in by_block.items()} == {0: 1, 1: 1, 2: 1, 3: 2, 4: 1, 5: 2, 6: 1}
    assert 23 <= by_block[3][0] <= 24 and 30 <= by_block[3][1] <= 36  # one change inside each run
    assert 25 <= by_block[5][0] <= 26 and 30 <= by_block[5][1] <= 31
    assert all("sha256 differs" in o.detail or "resolve: error" in o.detail for o in report.outcomes)


def test_editing_an_experiment_script_never_makes_verify_fail(options, tmp_path):
    script = options.root / "experiments" / "shown.py"
    before = script.read_text()
    try:
        script.write_text("# a comment line on top\n" + before)  # its excerpt moves and changes
        r = options.run("-m", "lessonkit", "verify")
        assert r.returncode == 0, r.stderr
        assert "stale" not in r.stdout + r.stderr
    finally:
        script.write_text(before)


def test_a_broken_excerpt_is_one_problem_not_two(options):
    page = options.root / "docs" / "lessons" / "options.md"
    before = page.read_text()
    try:
        page.write_text(before.replace("Lines: 4-5", "Lines: 4-500"))
        r = options.run("-m", "lessonkit", "verify")
        assert r.returncode == 1
        lines = [l for l in r.stderr.splitlines() if not l.startswith("verify: ")]
        assert lines == [
            "docs/lessons/options.md:5: `Lines: 4-500` runs past the end of autograd/core.py (416 lines) — "
            "check the range against the source browser"
        ]
    finally:
        page.write_text(before)


def test_a_real_change_is_still_a_stale_map(options):
    page = options.root / "docs" / "lessons" / "options.md"
    before = page.read_text()
    try:
        page.write_text(before.replace("Emphasize: 28, 30-31", "Emphasize: 28"))
        r = options.run("-m", "lessonkit", "verify")
        assert r.returncode == 1
        assert (
            "docs/lessons/options.md:8: the excerpt map is stale: emphasize changed "
            "(recorded autograd/core.py L27-31, now autograd/core.py L27-31)"
        ) in r.stderr
    finally:
        page.write_text(before)


# ---------------------------------------------------------------- page sessions


def test_session_blocks_show_their_own_output(options):
    html = _html(options, "session")
    outputs = re.findall(r'<pre class="lk-output"><code>(.*?)</code></pre>', html, re.S)
    assert [unescape(o) for o in outputs] == ["x = 2 0\n", "y = 6 1", "x + y = 8 2\n"]
    assert html.count("会话 tape · 第 1/3 块") == 1 and "会话 tape · 第 3/3 块" in html


def _session_jobs(site, text):
    page = site.page("s.md", text)
    project = site.project()
    return project, [project.resolve(b).job for b in project.parse(page).blocks]


def test_session_keys_cover_the_blocks_before(site, monkeypatch):
    monkeypatch.setenv("AUTOGRAD_SOURCE", str(site.pinned_root))
    project, jobs = _session_jobs(site, SESSION)
    keys = [project.runner.key(j) for j in jobs]
    results = project.runner.start(jobs).results()
    assert project.runner.stats == {"ran": 1, "cached": 0}  # three blocks, one interpreter, one box
    assert [results[k].stdout for k in keys] == ["x = 2 0\n", "y = 6 1", "x + y = 8 2\n"]

    # an edit to block 3: blocks 1-2 keep their keys and cached outputs; the session runs once, up to 3
    project, jobs = _session_jobs(site, SESSION.replace('"x + y =", x + y', '"x * y =", x * y'))
    again = [project.runner.key(j) for j in jobs]
    assert again[:2] == keys[:2] and again[2] != keys[2]
    results = project.runner.start(jobs).results()
    assert project.runner.stats == {"ran": 1, "cached": 2}
    assert [(results[k].cached, results[k].stdout) for k in again] == [
        (True, "x = 2 0\n"),
        (True, "y = 6 1"),
        (False, "x * y = 12 2\n"),
    ]

    # an edit to block 1 changes every key
    project, jobs = _session_jobs(site, SESSION.replace("x = 2", "x = 5"))
    assert all(project.runner.key(j) not in (*keys, *again) for j in jobs)


def test_a_session_traceback_names_the_page_line(site, monkeypatch):
    monkeypatch.setenv("AUTOGRAD_SOURCE", str(site.pinned_root))
    text = SESSION.replace('print("y =", y, next(counter), end="")', "z = y / 0")
    project, jobs = _session_jobs(site, text)
    results = project.runner.start(jobs).results()
    first, second, third = (results[project.runner.key(j)] for j in jobs)
    assert first.ok and first.stdout == "x = 2 0\n"
    assert not second.ok and f'File "docs/s.md", line {S2 + 1}, in <module>\n    z = y / 0\n' in second.stderr
    assert str(execute.failure(second, jobs[1], jobs[1].timeout).at("docs/s.md", 15)) == (
        f"docs/s.md:15: experiment docs/s.md:15 failed with exit code 1 at docs/s.md:{S2 + 1}:     z = y / 0 |"
        "         ~~^~~ | ZeroDivisionError: division by zero — run it by hand: lessonkit run docs/s.md:15"
    )
    assert str(execute.failure(third, jobs[2], jobs[2].timeout).at("docs/s.md", 23)) == (
        "docs/s.md:23: experiment docs/s.md:23 did not run: its session stopped at the block at docs/s.md:15 — "
        "the blocks of a session run in order in one interpreter; fix that block first"
    )
    assert project.runner.stats["ran"] == 1


def test_an_inline_traceback_names_the_page_line(site, monkeypatch):
    monkeypatch.setenv("AUTOGRAD_SOURCE", str(site.pinned_root))
    text = "# t\n\n" + block("experiment", "Purpose: p", body="x = 1\n\ndef f():\n    return x / 0\n\nf()")
    project, [job] = _session_jobs(site, text)
    result = project.runner.run(job)
    assert not result.ok
    assert 'File "docs/s.md", line 11, in <module>\n    f()\n' in result.stderr
    assert 'File "docs/s.md", line 9, in f\n    return x / 0\n' in result.stderr
    assert "lessonkit" not in result.stderr  # no frame of the driver
    msg = execute.failure(result, job, job.timeout).problem.message
    assert msg.startswith("experiment docs/s.md:3 failed with exit code 1 at docs/s.md:9: ")


def test_a_session_timeout_is_the_whole_sessions(site, monkeypatch):
    monkeypatch.setenv("AUTOGRAD_SOURCE", str(site.pinned_root))
    slow = "import time\ntime.sleep(1.5)\nprint('slept')"
    text = "# t\n\n" + "\n".join(
        [
            block("experiment", "Purpose: a", "Session: slow", "Timeout: 2", body=slow),
            block("experiment", "Purpose: b", "Session: slow", body=slow),
            block("experiment", "Purpose: c", "Session: slow", body="print('never')"),
        ]
    )
    project, jobs = _session_jobs(site, text)
    assert {j.timeout for j in jobs} == {2}
    done = project.runner.start(jobs).results()
    results = [done[project.runner.key(j)] for j in jobs]
    assert results[0].ok and results[0].stdout == "slept\n"
    assert results[1].timed_out
    assert execute.failure(results[1], jobs[1], 2).problem.message.endswith("did not finish within 2 s and was stopped")
    assert results[2].problem == "session: docs/s.md:13"


# ---------------------------------------------------------------- errors while serving

SERVE = """\
import logging, sys
from pathlib import Path
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s", stream=sys.stderr)
from lessonkit.integrations.mkdocs.serve import Incremental
b = Incremental("mkdocs.yml", sys.argv[1], serve_url="http://127.0.0.1:8000/")
b.full()
print("served", b.graph is not None)
page = Path("docs/bad.md")
page.write_text(page.read_text().replace("Symbol: backwards_pass", "Symbol: backward_pass"))
b.rebuild()
print("rebuilt", b.last.full, b.last.why)
"""

BAD = "# 坏页\n\n" + "\n".join(
    [
        block("real-source", "File: autograd/core.py", "Symbol: backwards_pass"),
        block("experiment", "Purpose: 失败", body="x = 1\nraise SystemError('boom')"),
    ]
)


def test_serve_shows_problems_on_their_pages_and_keeps_serving(site):
    site.page("good.md", "# 好页\n\n" + block("real-source", "File: autograd/core.py", "Symbol: backward_pass"))
    site.page("bad.md", BAD)
    out = site.root.parent / "served"
    r = site.run("-c", SERVE, str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.splitlines()[0] == "served True"
    assert r.stdout.splitlines()[1].startswith("rebuilt False blocks:bad.md")  # a partial rebuild: the graph was kept
    resolve = "docs/bad.md:5: no symbol `backwards_pass` in autograd/core.py — did you mean `backward_pass` (L25)?"
    run = (
        "docs/bad.md:8: experiment docs/bad.md:8 failed with exit code 1 at docs/bad.md:12:   "
        'File "docs/bad.md", line 12, in <module> |     raise SystemError(\'boom\') | SystemError: boom — '
        "run it by hand: lessonkit run docs/bad.md:8"
    )
    logged = [l.split(" ", 1)[1] for l in r.stderr.splitlines() if l.startswith("ERROR ")]
    assert logged[:2] == [resolve, run] and "each shown in an error box on its page" in logged[2]
    assert logged[3:] == [run, logged[2].replace("2 annotation", "1 annotation")]  # the rebuild: the run still fails
    assert (out / "good" / "index.html").is_file()
    # the same lines: in the build that fails, and (for the block that does not resolve) in verify
    page = site.root / "docs" / "bad.md"
    page.write_text(BAD)
    built = site.build()
    assert built.returncode == 1 and "Traceback" not in built.stderr
    errors = [l.split("-  ", 1)[1] for l in built.stderr.splitlines() if l.startswith("ERROR")]
    assert errors[:2] == [resolve, run]
    v = site.verify()
    assert v.returncode == 1 and v.stderr.splitlines()[0] == resolve


def test_serve_error_boxes(site):
    site.page("bad.md", BAD)
    out = site.root.parent / "served"
    code = SERVE.split("print(")[0]  # the first build only
    r = site.run("-c", code, str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    html = (out / "bad" / "index.html").read_text(encoding="utf-8")
    boxes = re.findall(r'<div class="lk-block lk-error"(?: id="([^"]+)")?>(.*?)</div>', html, re.S)
    assert [a for a, _ in boxes] == ["", "exp-inline-L8"]  # a block that does not resolve has no id yet
    assert "no symbol `backwards_pass`" in unescape(boxes[0][1]) and "SystemError: boom" in unescape(boxes[1][1])


def test_commit_may_be_left_out_but_is_checked_when_given(site):
    site.page("c.md", "# c\n\n" + block("real-source", "File: autograd/core.py", "Symbol: backward_pass"))
    assert site.problems() == []
    site.page(
        "c.md", "# c\n\n" + block("real-source", "File: autograd/core.py", "Symbol: backward_pass", "Commit: 1234567")
    )
    assert [p.split(" — ")[0] for p in site.problems()] == ["docs/c.md:6: `Commit: 1234567` is not the pinned commit"]


def test_guide_reference_lists_every_field():
    """docs/dev/annotation-reference.md has an entry for every field of real-source and experiment."""
    from lessonkit.kinds import experiment, real_source

    text = (Path(__file__).resolve().parents[2] / "docs" / "dev" / "annotation-reference.md").read_text()
    for kind in (real_source.KIND, experiment.KIND):
        for key in kind.fields:
            assert re.search(rf"^#+ `{re.escape(key)}`", text, re.M), f"{kind.name}: no entry for `{key}`"


def test_elision_lines_with_indentation_are_elisions(site):
    site.page(
        "e.md",
        "# e\n\n"
        + block(
            "real-source",
            "File: autograd/core.py",
            "Symbol: backward_pass",
            body=textwrap.dedent(
                """\
                def backward_pass(g, end_node):
                    ...
                    return outgrad[0]
                """
            ),
        ),
    )
    project = site.project()
    [b] = project.parse(site.root / "docs" / "e.md").blocks
    ex = project.resolve(b).excerpt
    assert (ex.spans, ex.elided) == (((25, 25), (32, 32)), ((26, 31),))
    assert ex.text == "def backward_pass(g, end_node):\n…\n    return outgrad[0]\n"


def test_run_of_a_session_block_by_hand(site):
    site.page("s.md", SESSION)
    r = site.run("-m", "lessonkit", "run", "docs/s.md:15")
    assert (r.returncode, r.stdout, r.stderr) == (0, "== docs/s.md:15\ny = 6 1", "")
