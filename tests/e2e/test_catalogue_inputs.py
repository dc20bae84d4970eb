"""Catalogue: every input gives a located error or a correct result: numbers, text and files at their limits.

The same contract as ``test_catalogue.py`` (exact ``path:line: what — hint`` lines, no
traceback, the exact exit status, an untouched project, no partial cache entry), for the
inputs found by attacking the engine and the rest of each class:

* numbers too long for ``int()`` in every number field (``Lines``, ``Timeout``, ``Memory``,
  ``Precision``, a line reference's offset, a record key's index, a command's line);
* figure, snapshot and value data of any shape (one build and one verify of one project,
  which must report the same lines);
* ``SOURCE_DATE_EPOCH`` out of what a zip file holds, negative, not a number;
* file names outside ``A-Z a-z 0-9 . _ -`` and links in the folders the boxes, the code
  pages and the bundle copy; a problem without a file named by the command's argument;
* control and bidi characters shown as escapes in every problem line;
* ids on a page given twice; a tab in a block (the build and verify agree);
* and results that must be right: a form feed (and every other character ``str.splitlines``
  splits at) in a cited file or a page, Markdown escaping of hostile names, a page of 8000
  indented paragraphs verified in linear time.
"""

from __future__ import annotations

import json
import os
import re
import time
import zipfile
from html import unescape

import markdown
import pytest
from support import TmpSite, block
from test_catalogue import (
    Ctx,
    Expect,
    P,
    assert_contract,
    check_after,
    fence,
    rs,
    run_build,
    run_cli_inprocess,
    snapshot,
)

from lessonkit.errors import Problem
from lessonkit.kinds import KINDS
from lessonkit.pipeline.parse import parse_page
from lessonkit.source import refs as sourceref
from lessonkit.util.text import lines as text_lines
from lessonkit.util.text import md_code, md_text, md_url

pytestmark = pytest.mark.warm_cache  # the builds' subject is not the cache: start from a warm one

CASES: dict = {}
SRC = ("File: autograd/core.py", "Symbol: backward_pass", "Commit: f53a217")
LONG = "9" * 5000  # Python refuses int() of more than 4300 digits


def case(name: str, mode: str = "cli"):
    def deco(fn):
        assert name not in CASES
        CASES[name] = (mode, fn)
        return fn

    return deco


# ---------------------------------------------------------------- numbers too long for int()


@case("lines-with-thousands-of-digits")
def _(ctx):
    ctx.page(rs("File: autograd/core.py", "Symbol: backward_pass", "Commit: f53a217", f"Lines: 1-{LONG}"))
    return [Expect(P, 7, f"`Lines: 1-{LONG}` is not a range `a-b` with 1 ≤ a ≤ b")]


@case("timeout-with-thousands-of-digits")
def _(ctx):
    ctx.page(fence("experiment", "Purpose: p", f"Timeout: {LONG}", body="print(1)"))
    return [Expect(P, 5, f"`Timeout: {LONG}` is not a whole number of seconds from 1 to 600")]


@case("memory-with-thousands-of-digits")
def _(ctx):
    ctx.page(fence("experiment", "Purpose: p", f"Memory: {LONG} GiB", body="print(1)"))
    return [Expect(P, 5, f"`Memory: {LONG} GiB` is not a size", "for example `Memory: 3 GiB`")]


@case("memory-with-a-long-fraction")
def _(ctx):
    ctx.page(fence("experiment", "Purpose: p", f"Memory: 1.{LONG} GiB", body="print(1)"))
    return [Expect(P, 5, f"`Memory: 1.{LONG} GiB` is not a size")]


@case("precision-with-thousands-of-digits")
def _(ctx):
    ctx.site.script("rec.py", "from _record import record\nrecord.set('x', 1.0)\n")
    ctx.page(fence("snapshot", "Experiment: experiments/rec.py", f"Precision: {LONG}", body="a | b\nx | @x"))
    return [Expect(P, 5, f"`Precision: {LONG}` is not a number of decimals from 0 to 12")]


@case("figure-precision-with-thousands-of-digits")
def _(ctx):
    ctx.site.script("rec.py", "from _record import record\nrecord.set('x', 1.0)\n")
    ctx.page(fence("figure", "Experiment: experiments/rec.py", "Graph: g", f"Precision: {LONG}"))
    return [Expect(P, 6, f"`Precision: {LONG}` is not a number of decimals from 0 to 12")]


@case("line-reference-offset-with-thousands-of-digits")
def _(ctx):
    ctx.page(f"# t\n\nsee [[line: core.py::backward_pass +{LONG}]] here\n")
    return [Expect(P, 3, f"cannot read the source reference '[[core.py::backward_pass +{LONG[:40]}")]


@case("run-line-with-thousands-of-digits")
def _(ctx):
    ctx.page("# t\n")
    ctx.args, ctx.code = ["run", f"docs/p.md:{LONG}"], 2
    return [Expect("docs/p.md", LONG, "no such experiment", "give a script such as")]  # LONG: the line as printed


# ---------------------------------------------------------------- SOURCE_DATE_EPOCH


EPOCH_HINT = "give whole seconds since 1970 (for example 1764460800) up to 4354819199 (2107-12-31), or unset it"
EPOCH_CASES = {
    "after-2107": ("99999999999", "99999999999 is after 2107, the last date a zip file can hold"),
    "one-second-after-2107": ("4354819200", "4354819200 is after 2107, the last date a zip file can hold"),
    "negative": ("-5", "'-5' is a negative number"),
    "not-a-number": ("soon", "'soon' is not a whole number of seconds"),
    "a-fraction": ("1.5", "'1.5' is not a whole number of seconds"),
    "thousands-of-digits": (LONG, "is not a whole number of seconds"),
}


def _epoch_case(value, message):
    def setup(ctx):
        ctx.env["SOURCE_DATE_EPOCH"] = value
        ctx.page("# t\n")
        return [Expect("SOURCE_DATE_EPOCH", None, message, EPOCH_HINT)]

    return setup


for _name, (_value, _msg) in EPOCH_CASES.items():
    case(f"source-date-epoch-{_name}", mode="build")(_epoch_case(_value, _msg))


# ---------------------------------------------------------------- names and links in the project

NAME_HINT = "rename it with letters A–Z a–z, digits and . _ - only"
XSS = "xss<img src=x onerror=alert(1)>.py"


@case("script-name-with-html")
def _(ctx):
    ctx.site.script(XSS, "print(1)\n")
    ctx.page("# t\n")
    return [Expect(f"experiments/{XSS}", None, "has the character '<' in its name", NAME_HINT)]


@case("script-name-with-html-in-the-build", mode="build")
def _(ctx):
    ctx.site.script(XSS, "print(1)\n")
    ctx.page("# t\n")
    return [Expect(f"experiments/{XSS}", None, "has the character '<' in its name", NAME_HINT)]


@case("script-name-with-a-backtick")
def _(ctx):
    ctx.site.script("a`b.py", "print(1)\n")
    ctx.page("# t\n")
    return [Expect("experiments/a`b.py", None, "has the character '`' in its name", NAME_HINT)]


@case("page-name-with-a-space")
def _(ctx):
    ctx.site.page("my page.md", "# t\n")
    return [Expect("docs/my page.md", None, "has the character ' ' in its name", NAME_HINT)]


@case("folder-name-not-ascii")
def _(ctx):
    ctx.site.page("课程/a.md", "# t\n")
    return [Expect("docs/课程", None, "has the character '课' in its name", NAME_HINT)]


@case("script-name-with-a-bidi-override")
def _(ctx):
    ctx.site.script("a\u202eyp.txt", "x\n")
    ctx.page("# t\n")
    return [Expect("experiments/a\\u202eyp.txt", None, "has the character '\\u202e' in its name", NAME_HINT)]


@case("experiments-link-outside", mode="build")
def _(ctx):
    (ctx.tmp / "secret.txt").write_text("TOP SECRET\n")
    (ctx.site.root / "experiments" / "notes.md").symlink_to(ctx.tmp / "secret.txt")
    ctx.page("# t\n")
    ctx.after = lambda: _nothing_secret(ctx)
    return [
        Expect(
            "experiments/notes.md", None, "is a link that leads outside the project", "replace the link with the file"
        )
    ]


def _nothing_secret(ctx):
    site = ctx.site.root / "site"
    for p in site.rglob("*") if site.exists() else ():
        if p.is_file():
            data = p.read_bytes()
            assert b"TOP SECRET" not in data, p
            if p.suffix == ".zip":
                with zipfile.ZipFile(p) as zf:
                    assert not any(b"TOP SECRET" in zf.read(n) for n in zf.namelist()), p


@case("experiments-link-inside")
def _(ctx):
    (ctx.site.root / "experiments" / "copy.py").symlink_to(ctx.site.root / "experiments" / "_record.py")
    ctx.page("# t\n")
    return [Expect("experiments/copy.py", None, "is a link to `experiments/_record.py`", "replace it with a copy")]


@case("mini-file-is-a-link")
def _(ctx):
    (ctx.site.root / "mini-autograd").mkdir()
    (ctx.site.root / "mini-autograd" / "m.py").symlink_to(ctx.tmp / "m.py")
    (ctx.tmp / "m.py").write_text("x = 1\n")
    ctx.page("# t\n")
    return [Expect("mini-autograd/m.py", None, "is a link that leads outside the project")]


@case("experiments-fifo")
def _(ctx):
    os.mkfifo(ctx.site.root / "experiments" / "pipe.md")
    ctx.page("# t\n")
    return [Expect("experiments/pipe.md", None, "is not a regular file", "remove it from experiments/")]


# ---------------------------------------------------------------- problems name their argument


@case("run-script-with-dotdot")
def _(ctx):
    ctx.page("# t\n")
    ctx.args = ["run", "../x.py"]
    return [Expect("../x.py", None, "`../x.py` has a `..` segment", "paths may not leave the tree")]


@case("new-title-empty")
def _(ctx):
    ctx.page("# t\n")
    ctx.args = ["new", "15", "  "]
    return [Expect("TITLE", None, "the title is empty")]


@case("new-slug-not-words")
def _(ctx):
    ctx.page("# t\n")
    ctx.args = ["new", "15", "t", "My_Topic"]
    return [Expect("SLUG", None, "slug `My_Topic` is not lowercase-words-with-dashes")]


# ---------------------------------------------------------------- what a problem line shows


@case("bidi-override-in-a-symbol")
def _(ctx):
    ctx.page(rs("File: autograd/core.py", "Symbol: back\u202eward_pass", "Commit: f53a217"))
    return [Expect(P, 5, "no symbol `back\\u202eward_pass` in autograd/core.py")]


@case("form-feed-in-a-body-shows")
def _(ctx):
    ctx.page(rs(*SRC, body="outgrads = {end_node: (g, False)}\f"))
    return [
        Expect(
            P,
            8,
            "body is not verbatim: 'outgrads = {end_node: (g, False)}\\x0c' does not match the source",
            "line 26 reads 'outgrads = {end_node: (g, False)}'",
        )
    ]


# ---------------------------------------------------------------- ids


@case("heading-id-of-a-block")
def _(ctx):
    ctx.page("# t\n\n## 反向 {#src-backward_pass}\n\n" + block("real-source", *SRC))
    return [
        Expect(
            P,
            3,
            "the id `src-backward_pass` is also the id of the real-source block on line 5",
            "give this element another id",
        )
    ]


@case("html-id-of-a-code-line")
def _(ctx):
    ctx.page("# t\n\n" + block("real-source", *SRC) + '\n<span id="src-backward_pass-L27"></span>\n')
    return [Expect(P, 9, "the id `src-backward_pass-L27` is also the id of line 27 of the real-source block on line 3")]


@case("id-given-twice")
def _(ctx):
    ctx.page("# t\n\n## a {#same}\n\n## b { #same .wide }\n\n`{#not-an-id}`\n")
    return [Expect(P, 5, "the id `same` is given twice on this page (first on line 3)", "give each element its own id")]


@case("ids-twice-in-the-build", mode="build")
def _(ctx):
    ctx.page(
        "# t\n\n## a {#same}\n\n## b {#same}\n\n"
        + block("real-source", *SRC)
        + "\n<div id=\"src-backward_pass\"></div>\n"
    )
    return [
        Expect(P, 5, "the id `same` is given twice on this page (first on line 3)"),
        Expect(P, 13, "the id `src-backward_pass` is also the id of the real-source block on line 7"),
    ]


@case("tab-in-a-block-in-the-build", mode="build")
def _(ctx):
    ctx.page(rs(*SRC, body="for node in toposort(end_node):\n\toutgrad = outgrads.pop(node)"))
    return [Expect(P, 9, "tab character in an annotation block", "indent with spaces")]


@case("tab-in-a-header-in-the-build", mode="build")
def _(ctx):
    ctx.page(rs("File:\tautograd/core.py", "Symbol: backward_pass", "Commit: f53a217"))
    return [Expect(P, 4, "tab character in an annotation block")]


# ---------------------------------------------------------------- the runner


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input(name, site, tmp_path, monkeypatch):
    mode, setup = CASES[name]
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    ctx = Ctx(site, scratch, mode=mode)
    expected = setup(ctx)
    before = snapshot(site.root)
    outcome = run_cli_inprocess(ctx, monkeypatch) if mode == "cli" else run_build(ctx)
    assert_contract(outcome, expected, before, ctx)
    check_after(ctx, monkeypatch)


# ---------------------------------------------------------------- figure, snapshot and value data of any shape


def _nested(depth: int):
    value = 1
    for _ in range(depth):
        value = [value]
    return value


RECORDS = {  # key: what the experiment records under it
    "nolabel": {"nodes": [{"id": 0, "kind": "root", "fun": None, "parents": []}]},
    "noid": {"nodes": [{"label": "a", "kind": "root", "fun": None, "parents": []}]},
    "badid": {"nodes": [{"id": 3, "label": "a", "kind": "root", "fun": None, "parents": []}]},
    "cycle": {
        "nodes": [
            {"id": 0, "label": "a", "kind": "vjp", "fun": "f", "parents": [1]},
            {"id": 1, "label": "b", "kind": "vjp", "fun": "g", "parents": [0]},
        ]
    },
    "selfloop": {"nodes": [{"id": 0, "label": "a", "kind": "vjp", "fun": "f", "parents": [0]}]},
    "dangling": {"nodes": [{"id": 0, "label": "a", "kind": "root", "fun": None, "parents": [5]}]},
    "parents-text": {"nodes": [{"id": 0, "label": "a", "kind": "root", "fun": None, "parents": "0"}]},
    "label-list": {"nodes": [{"id": 0, "label": ["a"], "kind": "root", "fun": None, "parents": []}]},
    "huge": {
        "nodes": [
            {"id": i, "label": str(i), "kind": "vjp", "fun": "f", "parents": [i - 1] if i else []} for i in range(3000)
        ]
    },
    "nonodes": {"nodes": []},
    "graph-list": [1, 2],
    "pair": {
        "nodes": [
            {"id": 0, "label": "R", "kind": "root", "fun": None, "parents": []},
            {"id": 1, "label": "M", "kind": "vjp", "fun": "multiply", "parents": [0, 0]},
        ]
    },
    "twins": {
        "nodes": [
            {"id": 0, "label": "R", "kind": "root", "fun": None, "parents": []},
            {"id": 1, "label": "M", "kind": "vjp", "fun": "f", "parents": [0]},
            {"id": 2, "label": "M", "kind": "vjp", "fun": "g", "parents": [0]},
        ]
    },
    "calls-too-many": [{"from": "M", "ingrad": 1.0}, {"from": "M", "ingrad": 2.0}, {"from": "M", "ingrad": 3.0}],
    "calls-m": [{"from": "M", "ingrad": 1.0}],
    "calls-nobody": [{"from": "Q", "ingrad": 1.0}],
    "notes-deep": {"M": _nested(55)},
    "ragged": {"g_in": [[1, 2], [3]], "sums": []},
    "bc-text": {"g_in": [["a", "b"]], "sums": []},
    "bc-3d": {"g_in": [[[1]]], "sums": []},
    "bc-shape-lies": {"g_in": [1, 2], "sums": [{"out_shape": [3], "out": [1, 2], "axis": 0, "keepdims": False}]},
    "bc-no-axis": {"g_in": [1, 2], "sums": [{"out_shape": [], "out": 3, "keepdims": False}]},
    "bc-wide": {"g_in": list(range(100)), "sums": []},
    "nest-empty": [],
    "nest-pair": [["ArrayBox", 1, 2]],
    "nest-trace": [["ArrayBox", "one"], ["float", None]],
    "alive-huge": {"VJPNode": [10**9]},
    "alive-bool": {"VJPNode": [True, 2]},
    "alive-none": {"n": 4},
    "alive-uneven": {"JVPNode": [2, 2, 2], "VJPNode": [3], "n": 4},
    "deep": _nested(60),
    "float-int": {"float": 5},
    "items": [10, 20],
}

E = "experiments/shapes.py"
GRAPH_HINT = "`Graph:` names a recorded graph (record.graph)"


def _graph(key, why):
    return (f"Graph: {key}",), f"`{key}` in {E}'s recording is not a recorded graph (record.graph): {why}", GRAPH_HINT


DATA = {  # page: (figure headers | snapshot body | prose, expected message, part of the hint); line 4 is the shape's
    "nolabel": _graph("nolabel", "node 0 has no `label`"),
    "noid": _graph("noid", "node 0 has no `id`"),
    "badid": _graph("badid", "node 0 has the id 3 (ids are 0, 1, 2… in the order of the nodes)"),
    "cycle": _graph("cycle", "its edges form a cycle: node 0 → node 1 → node 0"),
    "selfloop": _graph("selfloop", "its edges form a cycle: node 0 → node 0"),
    "dangling": _graph("dangling", "node 0 names the parent 5, which is not a node of the graph (0–0)"),
    "parents-text": _graph("parents-text", "the parents of node 0 are not a list of node ids"),
    "label-list": _graph("label-list", "the label of node 0 is a list, not text"),
    "huge": _graph("huge", "it has 3000 nodes (a figure shows at most 200)"),
    "nonodes": _graph("nonodes", "it has no nodes"),
    "graph-list": _graph("graph-list", "it is a list without a list of `nodes`"),
    "edge-labels-too-many": (
        ("Graph: pair", "Edge-labels: calls-too-many"),
        f"`calls-too-many` in {E}'s recording is not one value per edge: node `M` has 2 edges, and more values",
        "`Edge-labels:` names one value per edge",
    ),
    "edge-labels-nobody": (
        ("Graph: pair", "Edge-labels: calls-nobody"),
        f"`calls-nobody` in {E}'s recording is not about nodes of the graph: no node is labelled `Q`",
        "`Edge-labels:`",
    ),
    "edge-labels-twins": (
        ("Graph: twins", "Edge-labels: calls-m"),
        f"`calls-m` in {E}'s recording is not about nodes of the graph: 2 nodes are labelled `M`",
        "`Edge-labels:`",
    ),
    "notes-deep": (
        ("Graph: pair", "Notes: notes-deep"),
        "the recorded value is nested more than 50 levels deep: too deep to show",
        "name a part of it with a longer key",
    ),
    "ragged": (
        ("Broadcast: ragged",),
        f"`ragged` in {E}'s recording is not an object with `g_in` and `sums`: "
        "`g_in` has rows of different lengths (2, 1)",
        "`Broadcast:` names an object with `g_in` and `sums`",
    ),
    "bc-text": (
        ("Broadcast: bc-text",),
        "`g_in` is not an array of numbers of at most two dimensions",
        "`Broadcast:`",
    ),
    "bc-3d": (("Broadcast: bc-3d",), "`g_in` is not an array of numbers of at most two dimensions", "`Broadcast:`"),
    "bc-shape-lies": (
        ("Broadcast: bc-shape-lies",),
        "the `out_shape` of sum 0 is [3], but its `out` has the shape [2]",
        "`Broadcast:`",
    ),
    "bc-no-axis": (("Broadcast: bc-no-axis",), "sum 0 has no `axis`", "`Broadcast:`"),
    "bc-wide": (
        ("Broadcast: bc-wide",),
        "`g_in` has the shape (100,) (a figure shows at most 40 columns, 400 cells)",
        "`Broadcast:`",
    ),
    "nest-empty": (
        ("Nested: nest-empty",),
        f"`nest-empty` in {E}'s recording is not a chain [[type, trace], …]: it is an empty chain",
        "`Nested:`",
    ),
    "nest-pair": (("Nested: nest-pair",), "level 0 is not a pair [type, trace]", "`Nested:`"),
    "nest-trace": (("Nested: nest-trace",), "the trace of level 0 is text, not a number or null", "`Nested:`"),
    "alive-huge": (
        ("Alive: alive-huge",),
        "`VJPNode` counts 1000000000 (counts are whole numbers from 0 to 200)",
        "`Alive:` names a dict {mode: [live nodes after each layer]}",
    ),
    "alive-bool": (("Alive: alive-bool",), "`VJPNode` counts True (counts are whole numbers from 0 to 200)", "Alive"),
    "alive-none": (("Alive: alive-none",), "it is an object without a list of counts", "`Alive:`"),
    "alive-uneven": (
        ("Alive: alive-uneven",),
        "the modes count different numbers of layers (`JVPNode`: 3, `VJPNode`: 1)",
        "`Alive:`",
    ),
}
SNAPSHOTS = {  # page: (body, line of the problem from the fence, message, hint)
    "snapshot-deep": ("a | b\nx | @deep", 7, "the recorded value is nested more than 50 levels deep", "longer key"),
    "snapshot-index-too-long": (
        f"a | b\nx | @items.{LONG}",
        7,
        f"{E} recorded no `items.{LONG}` (no `{LONG}` under items)",
        "there: indexes 0–1",
    ),
    "snapshot-float-int": ("a | b\nx | @float-int = 6", 7, f"cell says '6' but {E} recorded `float-int` = 5", ""),
}
VALUES = {  # page: (prose, message)
    "value-deep": ("[[value: shapes deep]]", "the recorded value is nested more than 50 levels deep"),
    "value-index-too-long": (f"[[value: shapes items.{LONG}]]", f"recorded no `items.{LONG}`"),
}
GOOD = {  # drawn, and the figure holds what the data says
    "good-pair": (("Graph: pair", "Edge-labels: calls-m"), ["R", "M", "multiply", "1.0"]),
}


@pytest.fixture(scope="module")
def data_site(tmp_path_factory, pinned_root):
    base = tmp_path_factory.mktemp("data")
    s = TmpSite(base / "proj", pinned_root)
    s.script(
        "shapes.py",
        "import json\nfrom _record import record\n"
        + "".join(f"record.set({k!r}, json.loads({json.dumps(json.dumps(v))}))\n" for k, v in RECORDS.items())
        + "print('recorded')\n",
    )
    for name, (headers, _, _) in DATA.items():
        s.page(f"{name}.md", "# t\n\n" + block("figure", f"Experiment: {E}", *headers))
    for name, (body, _, _, _) in SNAPSHOTS.items():
        s.page(f"{name}.md", "# t\n\n" + block("snapshot", f"Experiment: {E}", body=body))
    for name, (prose, _) in VALUES.items():
        s.page(f"{name}.md", f"# t\n\n{prose}\n")
    for name, (headers, _) in GOOD.items():
        s.page(f"{name}.md", "# t\n\n" + block("figure", f"Experiment: {E}", *headers))
    before = snapshot(s.root)
    ctx = Ctx(s, base, mode="build")
    return {"site": s, "ctx": ctx, "build": run_build(ctx), "before": before}


def _expected() -> list[Expect]:
    out = []
    for name, (headers, msg, hint) in DATA.items():
        field = next(
            (n for n, h in enumerate(headers) if h.split(":")[0] in ("Edge-labels", "Notes")), 0
        )  # the header that names the wrong data
        out.append(Expect(f"docs/{name}.md", 5 + field, msg, hint))
    for name, (_, line, msg, hint) in SNAPSHOTS.items():
        out.append(Expect(f"docs/{name}.md", line, msg, hint))
    for name, (_, msg) in VALUES.items():
        out.append(Expect(f"docs/{name}.md", 3, msg))
    return out


def test_data_of_any_shape_is_a_located_error_in_the_build(data_site):
    ctx, outcome = data_site["ctx"], data_site["build"]
    assert_contract(outcome, _expected(), data_site["before"], ctx)


def test_data_of_any_shape_verify_says_what_the_build_says(data_site, monkeypatch):
    ctx = Ctx(data_site["site"], data_site["ctx"].tmp, mode="cli")
    outcome = run_cli_inprocess(ctx, monkeypatch)
    assert sorted(outcome.problems) == sorted(data_site["build"].problems)
    assert_contract(outcome, _expected(), data_site["before"], ctx)


def test_well_formed_data_is_drawn(data_site):
    s = data_site["site"]
    html = (s.root / "site" / "good-pair" / "index.html").read_text(encoding="utf-8")
    svg = re.search(r"<svg [^>]*class=\"lk-fig\".*?</svg>", html, re.S)[0]
    texts = [unescape(t) for t in re.findall(r"<text [^>]*>([^<]*)</text>", svg)]
    root = s.project().site.labels["figure-root"]
    assert texts == ["1.0", "R", root, "M", "multiply"]  # the label of M's edge 0, then the nodes
    assert svg.count('class="lk-edge"') == 2  # x * x: two edges R → M


# ---------------------------------------------------------------- one definition of a line

SEPARATORS = ["\f", "\v", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]  # str.splitlines splits at these


@pytest.mark.parametrize("sep", SEPARATORS, ids=[f"U+{ord(c):04X}" for c in SEPARATORS])
def test_a_separator_in_a_cited_file_shifts_no_line(tmp_path, pinned_root, sep):
    """ast counts lines at \\n only: the excerpt, its `Lines:` and the page's line numbers must too.
    The Mini function `f` is L4-L5 (two lines); with splitlines it would be shown short, one line off."""
    s = TmpSite(tmp_path / "proj", pinned_root)
    (s.root / "mini-autograd").mkdir()
    source = f"x = 1  # a{sep}b\n\n\ndef f(a):\n    return a  # c{sep}d\n\n\ny = 2\n"
    (s.root / "mini-autograd" / "m.py").write_text(source, encoding="utf-8")
    page = (
        f"# t\n\nline 3{sep}still line 3\n"
        + block("teaching-simplification", "File: mini-autograd/m.py", "Symbol: f")
        + f"\nprose{sep}more [[line: core.py::backward_pass \"outgrads = {{end_node\"]]\n"
    )
    s.page("a.md", page)
    assert s.problems() == []
    ex = s.project().resolve(s.project().parse(s.root / "docs" / "a.md").blocks[0]).excerpt
    assert (ex.start, ex.end, ex.lines) == (4, 5, ("def f(a):", f"    return a  # c{sep}d"))
    # the page: every reader counts its lines as the parser does
    parsed = parse_page(page, "docs/a.md", kinds=KINDS)
    assert [(b.line, b.body_line) for b in parsed.blocks] == [(4, None)]
    assert [n for n, _ in sourceref.scan(page)] == [item.ref.line for item in parsed.inline] == [9]
    assert text_lines(source) == source.split("\n")[:-1]


def test_a_form_feed_in_a_cited_file_builds_the_right_lines(tmp_path, pinned_root):
    s = TmpSite(tmp_path / "proj", pinned_root)
    cfg = s.root / "sourcemap" / "site.toml"
    (s.root / "mini-autograd").mkdir()
    (s.root / "mini-autograd" / "m.py").write_text("x = 1\f\n\n\ndef f(a):\n    return a\n", encoding="utf-8")
    assert "mini-autograd" in cfg.read_text(encoding="utf-8")
    s.page("a.md", "# t\n\n" + block("teaching-simplification", "File: mini-autograd/m.py", "Symbol: f"))
    r = s.build()
    assert r.returncode == 0, r.stderr[-3000:]
    html = (s.root / "site" / "a" / "index.html").read_text(encoding="utf-8")
    assert "L4–L5" in html and 'id="teach-1-L4"' in html and 'id="teach-1-L5"' in html
    code = (s.root / "site" / "code" / "mini-autograd" / "m.py" / "index.html").read_text(encoding="utf-8")
    assert "def" in code[code.index('id="L4"') : code.index('id="L5"')]  # the code page numbers the same lines


# ---------------------------------------------------------------- Markdown escaping of names

HOSTILE = [
    "xss<img src=x onerror=alert(1)>.py",
    "a`b`c",
    "``",
    " lead and trail ",
    "x](javascript:alert(1))",
    "&lt;script&gt;",
    "__init__",
    "*a* _b_ [c] \\d",
    "| pipe |",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_markdown_shows_an_escaped_value_as_it_is(text):
    md = markdown.Markdown(extensions=["tables"])
    html = md.convert(f"{md_code(text)}\n")
    assert "<img" not in html and "<script" not in html
    assert unescape(re.fullmatch(r"<p><code>(.*)</code></p>", html, re.S)[1]) == text.strip()  # Markdown strips
    url = md_url("../code/" + text + ".md#L3")
    html = markdown.Markdown(extensions=["tables"]).convert(f"[{md_text(text)}]({url})\n")
    link = re.fullmatch(r'<p><a href="([^"]*)">(.*)</a></p>', html, re.S)
    assert link, html
    assert unescape(link[2]) == text  # literal text: no markup, no tag
    assert link[1].endswith("#L3") and "(" not in link[1] and " " not in link[1]


# ---------------------------------------------------------------- problem lines


@pytest.mark.parametrize(
    "raw,shown",
    [
        ("\u202e", "\\u202e"),
        ("\u2066", "\\u2066"),
        ("\x1b[31m", "\\x1b[31m"),
        ("\f", "\\f"),
        ("\u2028", "\\u2028"),
        ("\x85", "\\x85"),
        ("\udcff", "\\udcff"),
        ("\u200b", "\\u200b"),
        ("正文 é", "正文 é"),
    ],
)
def test_a_problem_line_shows_hidden_characters_as_escapes(raw, shown):
    line = str(Problem(f"a{raw}b", f"docs/{raw}.md", 3, f"h{raw}"))
    assert line == f"docs/{shown}.md:3: a{shown}b — h{shown}"
    assert line.isprintable()


# ---------------------------------------------------------------- time


def test_8000_indented_paragraphs_in_one_list_item_verify_in_linear_time(site):
    """Finding the container of each indented line walked back over every earlier line (43 s)."""
    site.page(
        "a.md",
        "# t\n\n- item\n\n"
        + "".join(f"    paragraph {k} of the item\n\n" for k in range(8000))
        + block("real-source", *SRC),
    )
    t0 = time.perf_counter()
    assert site.problems() == []
    assert time.perf_counter() - t0 < 5.0  # linear: about 0.1 s; the quadratic walk took 10 s and more


def test_the_bundle_dates_its_entries_from_source_date_epoch(tmp_path, pinned_root):
    s = TmpSite(tmp_path / "proj", pinned_root)
    s.page("a.md", "# t\n")
    for value, when in (("1764460800", (2025, 11, 30, 0, 0, 0)), ("0", (1980, 1, 1, 0, 0, 0))):
        s.env["SOURCE_DATE_EPOCH"] = value
        r = s.build()
        assert r.returncode == 0, r.stderr[-2000:]
        (bundle,) = [z for z in (s.root / "site").rglob("*.zip") if "-offline" not in z.name]  # not the offline edition
        with zipfile.ZipFile(bundle) as zf:
            assert {i.date_time for i in zf.infolist()} == {when}
