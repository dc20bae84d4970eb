"""verify --site: what ships is what lessonkit emitted.

A small project (one lesson: a real-source block, a teaching block, an experiment and a recorded
value) is built once; each attack then runs on a copy (a build of its own) or on the
built folder (and is undone): (a) raw HTML imitating an engine block, (b) a later hook that renames
code, (c) forged render-cache entries, (d) a forged experiment result. Each must fail with its
located line; the clean site passes, and the mutation check catches every one-character change of
the built HTML. One test checks the real site when the session has built it.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support import ROOT, TmpSite, block

from lessonkit.checks import record as site_record
from lessonkit.checks.tree import Doc
from lessonkit.pipeline.imitations import engine_html
from lessonkit.project import Project
from lessonkit.run.box import sandbox
from lessonkit.run.outcomes import _check
from lessonkit.run.runner import Job
from lessonkit.util import seal, store

LESSON = "lessons/05-reverse-mode.md"
PAGE = "site/lessons/05-reverse-mode/index.html"
HINT = "something after lessonkit changed the page (a hook, plugin or cache); rebuild with a clean cache"
TINY = """\
import json
import os
import re

print("grad = 6.0")
with open(os.environ["LESSONKIT_RECORD"], "w") as fh:
    json.dump({"grad": 6.0}, fh)
"""
SHAPE = """\
from _record import record

record.set("v", 2.5)
record.set("plot", {"x": [1, 10], "series": [{"name": "a", "y": [1, 2]}]})
"""
TEXT = (
    "# 反向传播\n\n"
    + block("real-source", "File: autograd/core.py", "Symbol: backward_pass", "Commit: f53a217")
    + "\n"
    + block("teaching-simplification", "Title: 字典版", body="def f(x):\n    return x\n")
    + "\n"
    + block("experiment", "File: experiments/tiny.py", "Purpose: 打印一个梯度")
    + "\n结果是 [[value: tiny grad]]。\n\n"
    + block(
        "snapshot",
        "Experiment: experiments/shape.py",
        "Title: 形状",
        body="对象 | 值\nv | @v\n手写 | 2.500000 {@v = 2.500000}",
    )
    + "\n"
    + block(
        "figure", "Experiment: experiments/shape.py", "Plot: plot", "Scale: loglog", "Caption: v = [[value: shape v]]"
    )
)
# What case (a) puts on the page: a REAL SOURCE block that names real lines but shows other code.
FAKE = (
    '<div class="lk-block lk-real-source"><div class="lk-head"><span class="lk-badge lk-badge-real">'
    '真实源码 REAL SOURCE</span><span class="lk-meta"><code>autograd/core.py</code> · <code>backward_pass'
    "</code> · <code>f53a217</code> · L23–L33</span></div><div class=\"language-python highlight\"><pre><code>"
    "def backward_pass(g, end_node):\n    return g\n</code></pre></div></div>"
)


def _clone(src: TmpSite, dest: Path) -> TmpSite:
    """A copy of a built project (its cache and seal key included) in another folder."""
    shutil.copytree(src.root, dest, symlinks=True)
    site = object.__new__(TmpSite)
    site.root, site.pinned_root, site.cache = dest, src.pinned_root, dest / ".cache"
    site.env = {**src.env, "LESSONKIT_CACHE": str(site.cache)}
    return site


def _built(site: TmpSite) -> subprocess.CompletedProcess:
    r = site.build()
    assert r.returncode == 0, r.stderr[-3000:]
    return r


def _site_verify(site: TmpSite, *args: str) -> subprocess.CompletedProcess:
    return site.run("-m", "lessonkit", "verify", "--site", "site", *args)


OFFLINE_DIFFERS = "the offline edition is not this site's"


def _errors(r: subprocess.CompletedProcess) -> list[str]:
    """verify's problem lines, without the offline edition's (made again from a folder whose pages a
    test changed, it differs too: tests/engine/test_offline.py and test_browser_offline.py hold it)."""
    return [
        line
        for line in r.stderr.splitlines()
        if line.startswith(("site/", "docs/", "site:")) and OFFLINE_DIFFERS not in line
    ]


def _hook(site: TmpSite, code: str) -> None:
    """A second hooks file, listed after lessonkit's."""
    (site.root / "late_hook.py").write_text(textwrap.dedent(code), encoding="utf-8")
    config = (site.root / "mkdocs.yml").read_text()
    config = config.replace("plugins: []", f"  - {site.root / 'late_hook.py'}\nplugins: []")
    (site.root / "mkdocs.yml").write_text(config)


@pytest.fixture(scope="module")
def built(tmp_path_factory, pinned_root) -> TmpSite:
    site = TmpSite(tmp_path_factory.mktemp("shipped") / "proj", pinned_root)
    site.script("tiny.py", TINY)
    site.script("shape.py", SHAPE)
    site.page(LESSON, TEXT)
    r = site.run("-m", "lessonkit", "verify", "--update-map")
    assert r.returncode == 0, r.stderr
    _built(site)
    return site


def test_the_clean_site_passes_and_every_change_of_its_html_is_caught(built):
    r = _site_verify(built, "--mutate")
    assert r.returncode == 0, r.stderr[-3000:]
    summary = next(line for line in r.stdout.splitlines() if line.startswith("site: "))
    record = json.loads(store.Store(built.cache, "site").get(site_record._key(built.root / "site")))
    pages = len(record["code_pages"])
    html = [f for f in record["files"] if f.endswith(".html")]
    assert len(record["files"]) > len(html) > 0  # every file of the folder is recorded, not only pages
    assert summary.startswith(
        f"site: {len(html)} HTML file(s) of site/, 5 engine block(s), {pages} source page(s) ("
    ), summary
    assert "0 problem(s)" in summary
    # one change in the real-source code, the output, the disclaimer, the figure's caption, a snapshot
    # cell, and in each source page
    assert f"site mutations: {5 + pages}/{5 + pages} caught (100%)" in r.stdout
    # the mutation check ran in another process meanwhile; its line comes where it always did
    assert [line.split(":")[0] for line in r.stdout.splitlines()] == ["verify", "site", "mutations", "site mutations"]


def test_the_mutation_check_beside_the_site_check_fails_verify_if_its_process_gives_no_result():
    """`verify --mutate --site` runs the mutation check in a helper process; one that ends without
    sending its result (killed, out of memory) is a failure with one line, never a pass."""
    import multiprocessing

    from lessonkit.cli import verify as cli

    ctx = multiprocessing.get_context("spawn")
    ours, theirs = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=os._exit, args=(9,), daemon=True)
    proc.start()
    theirs.close()
    out = io.StringIO()
    with contextlib.redirect_stderr(out):
        assert cli._mutation_result(proc, ours) == 1
    assert out.getvalue() == (
        "lessonkit verify: the mutation check's process ended without a result (exit code 9) — "
        "run `lessonkit mutate` to see it alone\n"
    )


SPLIT = """
import os, sys
from pathlib import Path
from lessonkit.checks import mutation, verify
from lessonkit.project import Project
from lessonkit.site import shipped

project = Project(Path("."))
first = shipped.SiteCheck(project, verify.check(project), Path("site")).run()  # the site check alone
assert not first.problems
counts = (first.files, first.blocks, first.code_pages, first.lines)


def one_pass(split):
    # verify's: the site check and its mutations in one pass over the pages (a new check object)
    check = shipped.SiteCheck(project, verify.check(project), Path("site"))
    rep, mutated = mutation.check_site(check, True, split)
    assert (rep.problems, (rep.files, rep.blocks, rep.code_pages, rep.lines)) == ([], counts)
    return check, mutated


check, alone = one_pass(False)
pages = sorted({o.file for o in alone.outcomes})
helper = mutation._start_share(check, [], lambda c, rel: None)  # only whether a helper can start here
if helper is not None:
    assert mutation._share_result(*helper) == {}
beside = one_pass(True)[1]
mutation._share_worker = lambda check, share, work, conn: os._exit(9)  # the forked helper dies at once
redone = one_pass(True)[1]
print(len(alone.outcomes), len(pages), helper is not None, alone == beside, alone == redone, alone.ok)
"""


def test_the_site_check_and_its_mutations_split_over_two_processes_give_the_same_outcomes(built):
    """verify's one pass (each page checked, then mutated, by one process) gives every other page
    to a forked copy of verify: the counts and outcomes are the ones one process finds, in the
    same order; a helper that dies without a result costs time, not checks."""
    r = built.run("-c", SPLIT)
    assert r.returncode == 0, r.stderr[-3000:]
    n, pages, forked, same, redone, ok = r.stdout.split()
    assert int(n) > int(pages) >= 2  # so that each process has pages
    assert forked == str((os.cpu_count() or 1) >= 2)
    assert (same, redone, ok) == ("True", "True", "True")


def test_a_verify_whose_pinned_tree_came_from_elsewhere_expects_the_builds_provenance(built):
    """The build's tree came through AUTOGRAD_SOURCE; verify's comes through LESSONKIT_SOURCE (the
    same hash-checked bytes). The pages say where the build's came from, and that is what verify
    expects of them: no problem."""
    env = {k: v for k, v in built.env.items() if k != "AUTOGRAD_SOURCE"}
    env["LESSONKIT_SOURCE"] = str(built.pinned_root)
    r = subprocess.run(
        [sys.executable, "-m", "lessonkit", "verify", "--site", "site"],
        cwd=built.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert "local checkout (LESSONKIT_SOURCE)" in r.stdout  # verify's own tree came from elsewhere
    html = (built.root / PAGE).read_text(encoding="utf-8")
    assert "AUTOGRAD_SOURCE" in html and "LESSONKIT_SOURCE" not in html


def test_raw_html_imitating_a_block_is_a_located_error(built, tmp_path):
    site = _clone(built, tmp_path / "a")
    site.page(LESSON, TEXT + "\n" + FAKE + "\n")
    line = TEXT.count("\n") + 2
    want = f"docs/{LESSON}:{line}: raw HTML uses the engine class lk-block — write a real-source block instead"
    r = site.build()
    assert r.returncode != 0 and want in r.stderr, r.stderr[-3000:]
    r = site.verify()
    assert r.returncode == 1 and want in r.stderr.splitlines(), r.stderr


def test_active_content_and_a_badge_as_a_label_fail_the_build_at_their_lines(built, tmp_path):
    site = _clone(built, tmp_path / "active")
    site.page(LESSON, TEXT + "\n**真实源码 REAL SOURCE** `autograd/core.py`\n\n<img src=x\n  onerror=alert(1)>\n")
    line = TEXT.count("\n") + 2
    want = [
        f"docs/{LESSON}:{line}: prose shows the engine's badge \"真实源码 REAL SOURCE\" as a label, as if an engine "
        "block followed — write the annotation block instead; to name a kind of block, write its badge inside a "
        "sentence or in quotes (「…」)",
        f"docs/{LESSON}:{line + 3}: raw HTML has an event attribute `onerror`, which runs code in the reader's "
        "browser — remove it: a page shows code, output and figures through annotation blocks, which the build checks",
    ]
    r = site.build()
    assert r.returncode != 0 and all(f"ERROR   -  {w}" in r.stderr.splitlines() for w in want), r.stderr[-3000:]
    r = site.verify()
    assert r.returncode == 1 and r.stderr.splitlines()[:2] == want, r.stderr


def test_an_imitation_added_after_lessonkit_is_not_an_engine_block(built, tmp_path):
    site = _clone(built, tmp_path / "a2")
    _hook(
        site,
        f"""\
        def on_page_content(html, page, config, files):
            return html + {FAKE!r} if page.file.src_uri == {LESSON!r} else html
        """,
    )
    _built(site)
    r = _site_verify(site)
    assert r.returncode == 1
    written = (site.root / PAGE).read_text(encoding="utf-8")

    def at(text: str) -> str:  # each is reported at the line of the written page where it is
        return f"{PAGE}:{written[: written.index(text)].count(chr(10)) + 1}"

    assert _errors(r)[:-1] == [
        f"{PAGE}: an element claims to be a REAL SOURCE block (autograd/core.py L23–L33) that lessonkit did not "
        "emit; its code is not the pinned source (line 23: 'def backward_pass(g, end_node):' instead of '') — raw "
        "HTML or a plugin imitates an engine block; write a real-source block in the Markdown instead"
    ]


def test_a_later_hook_that_renames_code_is_caught(built, tmp_path):
    site = _clone(built, tmp_path / "b")
    _hook(
        site,
        """\
        def on_post_page(output, page, config):
            return output.replace('<span class="n">outgrads</span>', '<span class="n">LATE_HOOK_outgrads</span>')
        """,
    )
    _built(site)
    assert "LATE_HOOK_outgrads" in (site.root / PAGE).read_text(encoding="utf-8")
    r = _site_verify(site)
    assert r.returncode == 1
    line = "line 26: 'LATE_HOOK_outgrads = {end_node: (g, False)}' instead of 'outgrads = {end_node: (g, False)}'"
    assert _errors(r)[:-1] == [
        f"{PAGE}: real-source block autograd/core.py L25–L32 differs from the pinned source ({line}) — {HINT}",
        "site/source/autograd/core.py/index.html: the source page of autograd/core.py differs from the pinned "
        f"source ({line}; 3 line(s) differ) — {HINT}",
    ]


def test_a_source_page_whose_code_holds_more_than_the_file_is_caught(built, tmp_path):
    """The code element of a source page is the file's text (its copy button copies it): a row of
    citations put back into it, or a line-number link back in the Tab order, is reported."""
    site = _clone(built, tmp_path / "b2")
    _hook(
        site,
        """\
        def on_post_page(output, page, config):
            if page.file.src_uri != "source/autograd/core.py.md":
                return output
            line = '<span id="L25" class="lk-line lk-cited">'
            output = output.replace(line, '<span class="lk-cites">Cited by: 05</span>' + line)
            return output.replace('<a class="lk-ln" href="#L30" tabindex="-1" ', '<a class="lk-ln" href="#L30" ')
        """,
    )
    _built(site)
    page = (site.root / "site/source/autograd/core.py/index.html").read_text(encoding="utf-8")
    assert "Cited by: 05" in page and '<a class="lk-ln" href="#L30" aria-hidden' in page
    r = _site_verify(site)
    assert r.returncode == 1
    assert _errors(r)[:-1] == [
        "site/source/autograd/core.py/index.html: the source page of autograd/core.py differs from the pinned "
        f"source (line 24: 'Cited by: 05' instead of ''; 2 line(s) differ) — {HINT}",
    ]


def _forge_render(cache: Path, with_key: bool) -> int:
    """Rename `outgrads` in every highlighted block of the render cache, with the entry's digest
    recomputed; with the cache's key, its seal too (what only code with the build's rights can)."""
    n = 0
    for entry in (cache / "render").iterdir():
        head, _, data = entry.read_bytes().partition(b"\n")
        if b'<span class="n">outgrads</span>' not in data:
            continue
        data = data.replace(b'<span class="n">outgrads</span>', b'<span class="n">FORGED_outgrads</span>')
        if with_key:
            entry.write_bytes(store.encode_entry("render", entry.name, data.decode(), cache))
        else:
            fmt, _, mark = head.split(b" ")
            digest = store._entry_digest("render", entry.name, data).encode()
            entry.write_bytes(b" ".join([fmt, digest, mark]) + b"\n" + data)
        n += 1
    return n


def test_a_forged_render_cache_entry_is_made_again_not_shipped(built, tmp_path):
    site = _clone(built, tmp_path / "c1")
    assert _forge_render(site.cache, with_key=False)
    r = _built(site)
    assert "has a right digest but not this cache's seal (it was rewritten outside lessonkit)" in r.stderr
    assert "FORGED_outgrads" not in (site.root / PAGE).read_text(encoding="utf-8")
    assert _site_verify(site).returncode == 0


def test_a_sealed_forged_render_cache_entry_is_caught(built, tmp_path):
    site = _clone(built, tmp_path / "c2")
    assert _forge_render(site.cache, with_key=True)
    _built(site)
    assert "FORGED_outgrads" in (site.root / PAGE).read_text(encoding="utf-8")
    r = _site_verify(site)
    assert r.returncode == 1
    line = "line 26: 'FORGED_outgrads = {end_node: (g, False)}' instead of 'outgrads = {end_node: (g, False)}'"
    assert _errors(r)[:-1] == [
        f"{PAGE}: real-source block autograd/core.py L25–L32 differs from the pinned source ({line}) — {HINT}"
    ]


def _result(cache: Path) -> Path:
    """The cache entry of the run of experiments/tiny.py."""
    for entry in (cache / "experiments").iterdir():
        if json.loads(entry.read_text()).get("stdout") == "grad = 6.0\n":
            return entry
    raise AssertionError("no cached result of experiments/tiny.py")


def _forge_result(entry: Path, with_key: bool) -> None:
    """Another output in a cached result, its digest recomputed; with the cache's key, its seal too."""
    data = json.loads(entry.read_text())
    data["stdout"] = "8.0 (forged cache entry)\n"
    del data["check"]
    mark = data.pop("seal")
    data["check"] = _check(data)
    data["seal"] = seal.seal(entry.parents[1], b"experiment", data["check"].encode()) if with_key else mark
    entry.write_text(json.dumps(data))


def test_a_forged_experiment_result_runs_again_not_shipped(built, tmp_path):
    site = _clone(built, tmp_path / "d1")
    _forge_result(_result(site.cache), with_key=False)
    r = _built(site)
    assert (
        "lessonkit: the cached result of experiments/tiny.py has a right digest but not this cache's seal (it was "
        "rewritten outside lessonkit); it is run again, not used"
    ) in r.stderr
    page = (site.root / PAGE).read_text(encoding="utf-8")
    assert "grad = 6.0" in page and "forged" not in page
    assert _site_verify(site).returncode == 0


@pytest.fixture
def undo(built):
    """Files of the built project a test changes, restored afterwards."""
    kept: dict[Path, bytes] = {}

    def keep(path: Path) -> Path:
        kept.setdefault(path, path.read_bytes())
        return path

    yield keep
    for path, data in kept.items():
        path.write_bytes(data)


def test_an_experiment_output_changed_after_the_build_is_caught(built, undo):
    page = undo(built.root / PAGE)
    page.write_text(page.read_text(encoding="utf-8").replace("grad = 6.0", "8.0 (forged cache entry)", 1))
    r = _site_verify(built)
    assert r.returncode == 1
    assert _errors(r)[:-1] == [
        f"{PAGE}: changed after the build that wrote the folder — build the site again (`lessonkit build`) before "
        "`verify --site`",
        f"{PAGE}: experiment output of experiments/tiny.py differs from this build's recorded run (line 1: "
        f"'8.0 (forged cache entry)' instead of 'grad = 6.0') — {HINT}",
    ]


def test_a_result_sealed_again_after_the_build_is_caught(built, undo):
    _forge_result(undo(_result(built.cache)), with_key=True)
    r = _site_verify(built)
    assert r.returncode == 1
    assert _errors(r)[:-1] == [
        f"{PAGE}: the run of experiment block #exp-tiny in the build cache is not the one the build that wrote site/ "
        "showed: its cache entry changed after the build — build the site again (`lessonkit build`) before "
        "`verify --site`",
        f"{PAGE}: experiment output of experiments/tiny.py differs from this build's recorded run (line 1: "
        f"'grad = 6.0' instead of '8.0 (forged cache entry)') — {HINT}",
    ]


def test_the_real_site_passes(built_site, real_project):
    from lessonkit.checks import verify

    r = subprocess.run(
        [sys.executable, "-m", "lessonkit", "verify", "--site", str(built_site)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "SOURCE_DATE_EPOCH": "1764460800"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    report = verify.check(real_project)
    blocks = sum(len(rs) for rs in report.resolved.values())
    summary = next(line for line in r.stdout.splitlines() if line.startswith("site: "))
    assert f" of {built_site}/, {blocks} engine block(s), " in summary and "; 0 problem(s) in " in summary, summary


def test_a_box_reads_neither_the_seal_key_nor_writes_the_cache(site, tmp_path):
    if not sandbox.namespaces_available():
        pytest.skip("user namespaces are not available here: without them a box can read the key (README)")
    cache = tmp_path / "cache"  # outside the project: the jail's minimal root does not hold it at all
    project = Project(site.root, cache=cache)
    key = seal.key_path(cache)
    script = f"""\
import os
import re
try:
    print("read", open({str(key)!r}).read()[:8])
except OSError as exc:
    print("hidden", type(exc).__name__)
try:
    open(os.path.join({str(cache)!r}, "experiments-planted"), "w")
except OSError as exc:
    print("cannot write", exc.errno in (2, 30))  # not there (the jail), or read-only
"""
    result = project.runner.run(Job("probe.py", script.encode(), 60, "probe.py"))
    assert key.is_file() and (key.stat().st_mode & 0o777) == 0o600
    assert result.stdout == "hidden FileNotFoundError\ncannot write True\n", result.stderr


def test_the_seal_key_is_private_made_once_and_replaced_when_not_private(tmp_path):
    seal.forget()
    first = seal.key(tmp_path)
    path = seal.key_path(tmp_path)
    assert (path.stat().st_mode & 0o777, path.parent.stat().st_mode & 0o777) == (0o600, 0o700)
    seal.forget()
    assert seal.key(tmp_path) == first  # read again, not made again
    path.chmod(0o644)  # someone else may have read it
    seal.forget()
    assert seal.key(tmp_path) != first and path.stat().st_mode & 0o777 == 0o600
    seal.forget()


def test_a_store_entry_rewritten_without_the_key_is_dropped(tmp_path, caplog):
    s = store.Store(tmp_path, "render")
    key = store.digest("entry")
    s.put(key, "<code>x</code>")
    store.forget_memory()
    path = tmp_path / "render" / key
    head, _, _ = path.read_bytes().partition(b"\n")
    fmt, _, mark = head.split(b" ")
    forged = b"<code>forged</code>"
    path.write_bytes(b" ".join([fmt, store._entry_digest("render", key, forged).encode(), mark]) + b"\n" + forged)
    assert store.read_entry("render", key, path.read_bytes(), tmp_path) == (None, "unsealed")
    with caplog.at_level("WARNING", logger="lessonkit.cache"):
        assert s.get(key) is None
    assert not path.exists() and s.unsealed == 1
    assert "has a right digest but not this cache's seal" in caplog.text
    path.write_bytes(store.encode_entry("render", key, "<code>sealed</code>", tmp_path))
    assert s.get(key) == "<code>sealed</code>"


def test_the_pinned_trees_provider_record_keeps_the_format_every_version_reads(tmp_path):
    """Its key holds no code version: a lessonkit before the seal reads the same file (and would
    remove the cached tree if it found the record damaged)."""
    data = store.encode_entry("pin", f"{'0' * 40}.provider", "sdist x.tar.gz", tmp_path)
    head = data.split(b"\n", 1)[0].split(b" ")
    assert head[0] == b"lk-store-1" and len(head) == 2


@pytest.mark.parametrize(
    "line, problem",
    [
        (
            '<div class="lk-block lk-real-source">',
            "raw HTML uses the engine class lk-block — write a real-source block instead",
        ),
        (
            "<span class='lk-badge lk-badge-teach'>x</span>",
            "raw HTML uses the engine class lk-badge — write a teaching-simplification block instead",
        ),
        (
            '<pre class=lk-output>8.0</pre>',
            "raw HTML uses the engine class lk-output — write an experiment block instead",
        ),
        (
            '<div class="lk&#45;snapshot">',
            "raw HTML uses the engine class lk-snapshot — write a snapshot block instead",
        ),
        (
            "结果 **6.0**{: .lk-value }",
            "an attribute list `{: … }` uses the engine class lk-value — write a [[value: …]] reference instead",
        ),
        (
            '<span style="color:red">真实源码 REAL SOURCE</span>',
            "raw HTML shows the engine's badge \"真实源码 REAL SOURCE\" outside a block — write the annotation block "
            "instead; only the engine shows its badges",
        ),
        ('写 `<div class="lk-block">` 没用', None),
        ('<div class="note">真实源码 REAL SOURCE 的含义</div>', None),
    ],
)
def test_raw_html_with_the_engines_classes_or_badges(line, problem):
    got = [str(p) for p in engine_html(line, "docs/x.md", 7, ("真实源码 REAL SOURCE",))]
    assert got == ([f"docs/x.md:7: {problem}"] if problem else [])


def test_engine_classes_in_code_blocks_and_comments_are_text(site):
    site.page(
        "x.md",
        "# x\n\n```html\n<div class=\"lk-block\">\n```\n\n    <span class=\"lk-badge\">\n\n"
        "<!--\n<div class=\"lk-output\">\n-->\n\n<p class=\"lk-disclaimer\">不是</p>\n",
    )
    assert site.problems() == [
        "docs/x.md:13: raw HTML uses the engine class lk-disclaimer — write a teaching-simplification block instead"
    ]


def test_the_page_is_read_as_a_browser_builds_it():
    doc = Doc(
        "<p x=a'b>t</p><div title=\">\" class=\"lk-block\">c</div><DIV CLASS=\"lk&#45;badge\">b</DIV>"
        "<script>var s = '<div class=\"lk-block\">';</script><!--> <div class=\"lk-head\">x</div> -->"
        "<p>&lt;x&gt;</p><template><i class=\"lk-value\">v</i></template><svg><title><b>q</b></title></svg>"
    )
    body = [(doc.name(i), doc.classes(i), doc.end(i) - i - 1) for i in range(doc.top(), len(doc))]
    assert body == [
        ("p", [], 0),
        ("div", ["lk-block"], 0),
        ("div", ["lk-badge"], 0),
        ("script", [], 0),
        ("div", ["lk-head"], 0),  # `<!-->` is a whole comment: what follows is markup
        ("p", [], 0),
        ("template", [], 1),
        ("i", ["lk-value"], 0),
        ("svg", [], 2),
        ("title", [], 1),
        ("b", [], 0),
    ]
    assert [doc.name(i) for i in doc.raw] == ["script", "title"]
    body_index = doc.parent[doc.top()]
    assert doc.text(body_index) == "tcb x --><x>v"


def test_a_new_cache_gets_its_key_on_first_use(tmp_path):
    """A build on an empty cache seals with the key the next build reads (not one of its own process)."""
    seal.forget()
    cache = tmp_path / "new" / "cache"
    mark = seal.seal(cache, b"x")
    seal.forget()
    assert seal.key_path(cache).is_file() and seal.seal(cache, b"x") == mark
    seal.forget()


# The shapes a real-source block takes besides one run of code: a recall (its lines, a link to the
# first full showing, the whole symbol folded below), an excerpt elided into runs, a hidden
# docstring, kept indentation and emphasized lines.
SHAPES = "lessons/02-shapes.md"
SHAPES_PAGE = "site/lessons/02-shapes/index.html"
SHAPES_TEXT = (
    "# 形状\n\n"
    + block(
        "real-source",
        "File: autograd/core.py",
        "Symbol: make_vjp",
        "Recall: yes",
        "Start-at: start_node = VJPNode.new_root()",
        "End-at: if end_node is None:",
    )
    + "\n"
    + block(
        "real-source",
        "File: autograd/core.py",
        "Symbol: backward_pass",
        body="""\
        def backward_pass(g, end_node):
            outgrads = {end_node: (g, False)}
        ...
                for parent, ingrad in zip(node.parents, ingrads):
                    outgrads[parent] = add_outgrads(outgrads.get(parent), ingrad)
        ...
        """,
    )
    + "\n"
    + block("real-source", "File: autograd/differential_operators.py", "Symbol: grad", "Docstring: hide")
    + "\n"
    + block("real-source", "File: autograd/core.py", "Symbol: VJPNode.initialize_root", "Dedent: none")
    + "\n"
    + block("real-source", "File: autograd/core.py", "Symbol: backward_pass", "Emphasize: 28, 30-31")
)
# code runs: 1 (lesson 01) + 2 (recall: its lines, the whole symbol) + 2 (elided) + 2 (docstring) + 1 + 1
SHAPE_RUNS = 9


@pytest.fixture(scope="module")
def shapes(tmp_path_factory, pinned_root) -> TmpSite:
    site = TmpSite(tmp_path_factory.mktemp("shapes") / "proj", pinned_root)
    site.page("lessons/01-full.md", "# 全貌\n\n" + block("real-source", "File: autograd/core.py", "Symbol: make_vjp"))
    site.page(SHAPES, SHAPES_TEXT)
    r = site.run("-m", "lessonkit", "verify", "--update-map")
    assert r.returncode == 0, r.stderr
    _built(site)
    return site


def test_recalls_elisions_hidden_docstrings_and_indentation_pass_and_every_run_is_mutated(shapes):
    r = _site_verify(shapes, "--mutate")
    assert r.returncode == 0, r.stderr[-3000:]
    summary = next(line for line in r.stdout.splitlines() if line.startswith("site: "))
    assert "0 problem(s)" in summary, summary
    record = json.loads(store.Store(shapes.cache, "site").get(site_record._key(shapes.root / "site")))
    n = SHAPE_RUNS + len(record["code_pages"])
    assert f"site mutations: {n}/{n} caught (100%)" in r.stdout


def _shapes_hook(shapes: TmpSite, tmp_path: Path, code: str) -> list[str]:
    site = _clone(shapes, tmp_path / "s")
    _hook(site, code)
    _built(site)
    r = _site_verify(site)
    assert r.returncode == 1
    return _errors(r)[:-1]


def test_a_changed_line_of_a_recalls_full_version_is_caught(shapes, tmp_path):
    # `return vspace(x).zeros()` (L16) is only in the folded whole symbol, not in the recalled lines
    errors = _shapes_hook(
        shapes,
        tmp_path,
        """\
        def on_post_page(output, page, config):
            if "02-shapes" not in page.file.src_uri:
                return output
            return output.replace('<span class="n">zeros</span>', '<span class="n">ones</span>')
        """,
    )
    assert errors == [
        f"{SHAPES_PAGE}: the full version of real-source block autograd/core.py L11–L13 differs from the pinned "
        f"source (line 16: 'return vspace(x).ones()' instead of 'return vspace(x).zeros()') — {HINT}",
    ]


def test_a_changed_run_of_an_elided_excerpt_is_caught(shapes, tmp_path):
    errors = _shapes_hook(
        shapes,
        tmp_path,
        """\
        def on_post_page(output, page, config):
            if "02-shapes" not in page.file.src_uri:
                return output
            return output.replace('<span class="n">ingrad</span><span class="p">)</span>',
                                  '<span class="n">ingrad</span><span class="p">]</span>')
        """,
    )
    line = (
        "line 31: 'outgrads[parent] = add_outgrads(outgrads.get(parent), ingrad]' instead of "
        "'outgrads[parent] = add_outgrads(outgrads.get(parent), ingrad)'"
    )
    assert errors == [  # the second run of the elided excerpt, and the emphasized whole symbol
        f"{SHAPES_PAGE}: real-source block autograd/core.py L30–L31 differs from the pinned source ({line}) — {HINT}",
        f"{SHAPES_PAGE}: real-source block autograd/core.py L25–L32 differs from the pinned source ({line}) — {HINT}",
    ]


def test_a_recall_without_its_link_or_showing_other_line_numbers_is_caught(shapes, tmp_path):
    errors = _shapes_hook(
        shapes,
        tmp_path,
        """\
        def on_post_page(output, page, config):
            if "02-shapes" not in page.file.src_uri:
                return output
            output = output.replace("完整源码见第 01 篇", "")
            return output.replace('>16</a>', '>61</a>', 1)
        """,
    )
    assert len(errors) == 3, errors
    head = "真实源码 REAL SOURCEautograd/core.py · make_vjp · f53a217 · L11–L13"
    assert errors[0] == (
        f"{SHAPES_PAGE}: real-source block autograd/core.py L11–L13: its head reads '{head} 在站内源码…' instead of "
        f"'{head}完整源码见第…' — {HINT}"
    )
    # the full version's line 16 numbered 61: it names another pinned line, and the numbers are wrong
    assert errors[1] == (
        f"{SHAPES_PAGE}: the full version of real-source block autograd/core.py L11–L13 differs from the pinned "
        "source (line 16: 'return vspace(x).zeros()' instead of "
        f"'vjps = [vjpmaker(argnum, *args) for argnum in argnums]') — {HINT}"
    )
    assert errors[2] == (
        f"{SHAPES_PAGE}: real-source block autograd/core.py L11–L13 (its full version): its line numbers read "
        f"10–22 (61 where 16 belongs) instead of 10–22 — {HINT}"
    )


# -- what a reader sees, not only the text (imitations of engine markup by CSS and structure) --------------

ADDED = "something after lessonkit added it (a hook, plugin or extra_javascript); remove it and rebuild"
SOURCE_PAGE = "site/source/autograd/core.py/index.html"
HIDES = "a `hidden` attribute: text a reader does not see, or sees and nothing compares"


def test_text_kept_but_hidden_and_text_shown_but_not_compared_are_caught(built, tmp_path):
    """The real text stays in the page, where a text comparison finds it, but a reader does not see
    it (a <template>, `hidden`); what the reader sees instead is where no text is compared (a
    "line number" span, an <xmp>), or nothing is (a source page's line without its first name)."""
    site = _clone(built, tmp_path / "hidden")
    _hook(
        site,
        f"""\
        def on_post_page(output, page, config):
            if page.file.src_uri == {LESSON!r}:
                token = '<span class="n">outgrads</span>'
                output = output.replace(
                    token, '<template>' + token + '</template><span class="linenos">FORGED_outgrads</span>', 1
                )
                i = output.index('class="lk-output"')
                output = output[:i] + output[i:].replace(
                    "grad = 6.0", "<span hidden>grad = 6.0</span><xmp>8.0 (FORGED)</xmp>", 1
                )
                output = output.replace('class="lk-disclaimer"', 'class="lk-disclaimer" hidden', 1)
            elif page.file.src_uri == "source/autograd/core.py.md":
                i = output.index('<span id="L26"')
                j = output.index('<span class="n">outgrads</span>', i)
                forged = '<span hidden><span class="n">outgrads</span></span>'  # the reader sees only ` = …`
                output = output[:j] + forged + output[j + len('<span class="n">outgrads</span>') :]
            return output
        """,
    )
    _built(site)
    r = _site_verify(site)
    assert r.returncode == 1
    assert _errors(r)[:-1] == [  # the page's markup as the parser serializes it (`hidden=""`)
        f"{PAGE}: real-source block autograd/core.py L25–L32 differs from the pinned source (line 26: "
        "'outgradsFORGED_outgrads = {end_node: (g, False)}' instead of 'outgrads = {end_node: (g, False)}') — "
        f"{HINT}",
        f"{PAGE}: teaching-simplification block #teach-1 is not the markup lessonkit wrote ({HIDES}): "
        "'<p class=\"lk-disclaimer\" hidden=\"\">以下不是 HIPS/autograd verbat…' where lessonkit wrote "
        f"'<p class=\"lk-disclaimer\">以下不是 HIPS/autograd verbatim source。…' — {HINT}",
        f"{PAGE}: experiment block #exp-tiny (experiments/tiny.py) is not the markup lessonkit wrote ({HIDES}): "
        "'<span hidden=\"\">grad = 6.0</span><xmp>8.0 (FORGED)</xmp>\\n</c…' where lessonkit wrote 'grad = "
        f"6.0\\n</code></pre></div><p class=\"lk-provenance\">Pytho…' — {HINT}",
        f"{SOURCE_PAGE}: the source page of autograd/core.py is not the markup lessonkit wrote ({HIDES}): "
        "'<span hidden=\"\"><span class=\"n\">outgrads</span></span> <span…' where lessonkit wrote "
        f"'<span class=\"n\">outgrads</span> <span class=\"o\">=</span> <sp…' — {HINT}",
    ]


def test_scripts_frames_and_values_added_after_lessonkit_are_caught(built, tmp_path):
    """A script (no engine class or badge in it), an event attribute and a frame added to a page; a
    REAL SOURCE imitation in a snapshot's hand-written cell; another value in a figure's caption."""
    site = _clone(built, tmp_path / "added")
    _hook(
        site,
        f"""\
        def on_post_page(output, page, config):
            if page.file.src_uri != {LESSON!r}:
                return output
            output = output.replace("</body>", "<script>document.title = 1</script></body>", 1)
            output = output.replace("<body ", '<body onload="void 0" ', 1)
            output = output.replace("<article", '<iframe src="data:text/html;base64,PGI+"></iframe><article', 1)
            output = output.replace("<td>手写</td>", "<td>" + {FAKE!r} + "</td>", 1)
            source = '</span><span class="lk-fig-source"'
            return output.replace("2.500000" + source, "1.500000" + source)
        """,
    )
    _built(site)
    r = _site_verify(site)
    assert r.returncode == 1
    written = (site.root / PAGE).read_text(encoding="utf-8")

    def at(text: str) -> str:  # each is reported at the line of the written page where it is
        return f"{PAGE}:{written[: written.index(text)].count(chr(10)) + 1}"

    assert _errors(r)[:-1] == [
        f"{PAGE}: an element claims to be a REAL SOURCE block (autograd/core.py L23–L33) that lessonkit did not "
        "emit; its code is not the pinned source (line 23: 'def backward_pass(g, end_node):' instead of '') — raw "
        "HTML or a plugin imitates an engine block; write a real-source block in the Markdown instead",
        f"{PAGE}: figure block #figure-1 (experiments/shape.py) is not the markup lessonkit wrote: '1.500000</span>"
        "<span class=\"lk-fig-source\">（图由本次构建运行 <code>e…' where lessonkit wrote '2.500000</span><span "
        f"class=\"lk-fig-source\">（图由本次构建运行 <code>e…' — {HINT}",
        f"{at('<body onload')}: an event attribute `onload` on a <body>, which runs code in the reader's browser "
        f"— {ADDED}",
        f"{at('<iframe')}: a <iframe> element, which embeds another document in the page — {ADDED}",
        f"{at('<iframe')}: a `data:` URL in `src` of a <iframe> — {ADDED}",
        f"{at('<script>document.title')}: an inline <script> that Material's templates do not write — {ADDED}",
    ]


def test_scripts_and_styles_changed_before_or_after_the_record_are_caught(built, tmp_path):
    """Material's bundle changed while the pages are written (the record then holds the changed
    file: it is no longer the copy of the theme's file), lessonkit's script after the record."""
    site = _clone(built, tmp_path / "files")
    _hook(
        site,
        """\
        import glob, os
        from mkdocs.plugins import event_priority

        def on_post_page(output, page, config):
            for path in glob.glob(os.path.join(config["site_dir"], "assets/javascripts/bundle.*.min.js")):
                if not open(path).read().endswith(";/*early*/"):
                    with open(path, "a") as fh:
                        fh.write(";/*early*/")
            return output

        @event_priority(-1000)
        def on_post_build(config):
            with open(os.path.join(config["site_dir"], "assets/lessonkit.js"), "a") as fh:
                fh.write(";/*late*/")
        """,
    )
    _built(site)
    r = _site_verify(site)
    assert r.returncode == 1
    bundle = next((site.root / "site/assets/javascripts").glob("bundle.*.min.js")).name
    import material

    theme = Path(material.__file__).parent / "templates" / "assets" / "javascripts" / bundle
    assert _errors(r)[:-1] == [
        "site/assets/lessonkit.js: changed after the build that wrote the folder — build the site again (`lessonkit "
        "build`) before `verify --site`",
        f"site/assets/javascripts/{bundle}: it is not the copy of {theme} it was (a hook or plugin changed it, or "
        "its source changed after the build) — build the site again (`lessonkit build`) before `verify --site`",
        f"site/assets/lessonkit.js: it is not the copy of {ROOT / 'lessonkit/assets/lessonkit.js'} it was (a hook "
        "or plugin changed it, or its source changed after the build) — build the site again (`lessonkit build`) "
        "before `verify --site`",
    ]


def test_a_plain_verify_checks_the_built_site_of_this_checkout(built, undo):
    """`lessonkit verify` with no --site reads site/ when a build of this project recorded it."""
    page = undo(built.root / PAGE)
    page.write_text(page.read_text(encoding="utf-8").replace("grad = 6.0", "grad = 7.0", 1))
    r = built.run("-m", "lessonkit", "verify")
    assert r.returncode == 1
    assert _errors(r)[:2] == [
        f"{PAGE}: changed after the build that wrote the folder — build the site again (`lessonkit build`) before "
        "`verify --site`",
        f"{PAGE}: experiment output of experiments/tiny.py differs from this build's recorded run (line 1: "
        f"'grad = 7.0' instead of 'grad = 6.0') — {HINT}",
    ]


def test_a_plain_verify_says_when_it_did_not_check_a_site(built, tmp_path):
    copy = _clone(built, tmp_path / "proj")
    summary = lambda r: next(line for line in r.stdout.splitlines() if line.startswith("verify: "))  # noqa: E731
    r = copy.run("-m", "lessonkit", "verify")  # a copy: no build of this folder is recorded
    assert r.returncode == 0, r.stderr
    assert summary(r).endswith(
        "; site/ not checked: no successful build of this project recorded it in this cache "
        "(`lessonkit build`, then `lessonkit verify`)"
    ), summary(r)
    shutil.rmtree(copy.root / "site")
    r = copy.run("-m", "lessonkit", "verify")
    assert r.returncode == 0, r.stderr
    assert summary(r).endswith("; site/ not checked: there is no site/ (`lessonkit build` writes it)"), summary(r)


def test_a_fifo_or_folder_in_place_of_the_seal_key_or_an_entry_is_not_waited_on(tmp_path):
    """Nothing in the cache is read unless it is a regular file: a FIFO would block the reader."""
    cache = tmp_path / "cache"
    (cache / "seal").mkdir(parents=True, mode=0o700)
    os.mkfifo(cache / "seal" / "key", 0o600)
    (cache / "render").mkdir()
    os.mkfifo(cache / "render" / store.digest("fifo"))
    (cache / "render" / store.digest("folder")).mkdir()
    code = (
        "import sys; from pathlib import Path; from lessonkit.util import seal, store\n"
        "cache = Path(sys.argv[1]); key = seal.key(cache)\n"
        "s = store.Store(cache, 'render')\n"
        "print(len(key), s.get(store.digest('fifo')), s.get(store.digest('folder')))\n"
    )
    r = subprocess.run([sys.executable, "-c", code, str(cache)], capture_output=True, text=True, timeout=30)
    assert (r.returncode, r.stdout) == (0, "32 None None\n"), r.stderr
    assert (cache / "seal" / "key").is_file()  # the FIFO was replaced by a key


def test_a_verify_on_a_cache_with_fifos_in_place_of_the_key_and_a_result_ends(built, tmp_path):
    copy = _clone(built, tmp_path / "proj")
    key = seal.key_path(copy.cache)
    key.unlink()
    os.mkfifo(key, 0o600)
    result = _result(copy.cache)
    result.unlink()
    os.mkfifo(result, 0o600)
    r = copy.run("-m", "lessonkit", "verify", timeout=120)
    assert r.returncode == 0, r.stderr
    assert key.is_file() and not key.is_symlink()


def test_included_files_are_checked_alike_by_build_and_verify_at_their_own_lines(site):
    """Files pymdownx.snippets pulls in (`--8<--`, its `auto_append`), whatever their suffix and
    although MkDocs builds no page of them, get the Markdown input checks in build and verify."""
    config = site.root / "mkdocs.yml"
    config.write_text(
        config.read_text(encoding="utf-8")
        + "  - pymdownx.snippets:\n      base_path: [docs]\n      check_paths: true\n"
        + "      auto_append: [includes/abbr.md]\nexclude_docs: |\n  /includes/\n",
        encoding="utf-8",
    )
    site.page("includes/abbr.md", "*[VJP]: vector-Jacobian product\n\n<script>alert(1)</script>\n")
    site.page("includes/part.txt", "一段说明。\n<img src=x onerror=alert(2)>\n")
    site.page("a.md", '# 甲\n\n--8<-- "includes/part.txt"\n\n正文。\n')
    expected = [
        "docs/includes/abbr.md:3: raw HTML has a <script> element, which runs code in the reader's browser",
        "docs/includes/part.txt:2: raw HTML has an event attribute `onerror`, which runs code in the reader's browser",
    ]

    def lines(r):
        shown = (line.removeprefix("ERROR   -  ") for line in r.stderr.splitlines())  # MkDocs' log prefix
        return sorted(line.split(" — ")[0] for line in shown if line.startswith("docs/includes/"))

    b = site.build()
    v = site.run("-m", "lessonkit", "verify")
    assert (b.returncode, lines(b)) == (1, expected), b.stderr[-3000:]
    assert (v.returncode, lines(v)) == (1, expected), v.stderr[-3000:]


def test_a_page_whose_policy_a_later_hook_changed_is_reported_on_its_own_line(built, tmp_path):
    """A hook after lessonkit's last step (priority -200) drops the lesson's policy, adds a script to a
    source page and loosens the 404 page's policy: `verify --site` names each page and what is wrong."""
    site = _clone(built, tmp_path / "csp")
    _hook(
        site,
        f"""\
        import re
        from mkdocs.plugins import event_priority

        @event_priority(-200)
        def on_post_page(output, page, config):
            if page.file.src_uri == {LESSON!r}:
                return re.sub('<meta http-equiv="Content-Security-Policy"[^>]*>', "", output)
            if page.file.dest_uri == "source/autograd/core.py/index.html":
                return output.replace("</body>", "<script>alert(1)</script></body>")
            return output

        @event_priority(-200)
        def on_post_template(output, template_name, config):
            return output.replace("script-src 'self'", "script-src 'self' 'unsafe-inline'")
        """,
    )
    _built(site)
    r = _site_verify(site)
    assert r.returncode == 1
    rebuild = "a hook or plugin after lessonkit changed the page or its policy; remove it and rebuild"
    source = "site/source/autograd/core.py/index.html"
    errors = _errors(r)
    assert re.match(rf"^{re.escape(source)}:\d+: an inline <script> that Material", errors[2]), errors[2]
    # the script's own line is located (its number follows the source page's length); the rest is exact
    assert [re.sub(r"^(site/[^:]+):\d+: ", r"\1: ", e) for e in errors[:-1]] == [
        f"site/404.html: `script-src` allows 'unsafe-inline', which lets code or styles the build did not emit "
        f"run — {rebuild}",
        f"{PAGE}: the page has no Content-Security-Policy <meta> — {rebuild}",
        f"{source}: an inline <script> that Material's templates do not write — something after lessonkit added it "
        "(a hook, plugin or extra_javascript); remove it and rebuild",
        f"{source}: an inline <script> of the page (hash 'sha256-bhHHL3z2vDgxUt0W3dWQOrprscmda2Y5pLsLg4GF+pI=') "
        f"is not allowed by the policy: the browser refuses it — {rebuild}",
    ]


def test_a_plain_verify_does_not_check_a_site_older_than_the_lessons_and_says_so(built, tmp_path):
    copy = _clone(built, tmp_path / "proj")
    assert _built(copy).returncode == 0
    script = copy.root / "experiments" / "tiny.py"
    script.write_text(script.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    r = copy.run("-m", "lessonkit", "verify")
    assert r.returncode == 0, r.stderr
    summary = next(line for line in r.stdout.splitlines() if line.startswith("verify: "))
    assert summary.endswith(
        "; site/ not checked: experiments/tiny.py changed after the build that wrote it "
        "(`lessonkit build`, then `lessonkit verify`)"
    ), summary


def test_an_included_slice_is_checked_as_the_page_includes_it(site):
    """A `--8<--` name with lines (`:2:3`, `:5,1:1`) or a section (`:name`) pulls only those lines
    into the page: they are checked as the page gets them (dedented when the configuration says
    so), each problem at its line of the file; the lines it leaves out are not the page's."""
    config = site.root / "mkdocs.yml"
    config.write_text(
        config.read_text(encoding="utf-8")
        + "  - pymdownx.snippets:\n      base_path: [docs]\n      dedent_subsections: true\n"
        + "exclude_docs: |\n  /includes/\n",
        encoding="utf-8",
    )
    site.page(
        "includes/part.html",
        "<p>一</p>\n<img src=x onerror=alert(2)>\n<p>二</p>\n<script>unused()</script>\n<b>三</b>\n",
    )
    site.page(
        "includes/sec.txt",
        "<script>outside()</script>\n"
        "--8<-- [start:used]\n"
        "    <iframe src=x></iframe>\n"
        "--8<-- [end:used]\n"
        "<object data=x></object>\n",
    )
    site.page("a.md", '# 甲\n\n--8<-- "includes/part.html:2:3"\n\n--8<-- "includes/sec.txt:used"\n\n正文。\n')
    got = [p.split(" — ")[0] for p in site.problems() if p.startswith("docs/includes/")]
    assert got == [
        "docs/includes/part.html:2: raw HTML has an event attribute `onerror`, which runs code in the reader's browser",
        "docs/includes/sec.txt:3: raw HTML has a <iframe> element, which embeds another document in the page "
        "(nothing checks what it shows)",
    ]
    # the same file included whole by another page: every line of it is that page's
    site.page("b.md", '# 乙\n\n--8<-- "includes/part.html"\n')
    got = [p.split(" — ")[0] for p in site.problems() if p.startswith("docs/includes/part")]
    assert [p.split(":")[1] for p in got] == ["2", "4"]  # each problem once


def test_a_slice_of_another_page_is_checked_as_the_including_page_gets_it(site):
    """A page's lines pulled into another page (`a.md:5:5`) are read anew: a line inside a fence
    there is code, here it is prose, so its raw HTML is a problem at its line of the page it is in."""
    config = site.root / "mkdocs.yml"
    config.write_text(
        config.read_text(encoding="utf-8") + "  - pymdownx.snippets:\n      base_path: [docs]\n", encoding="utf-8"
    )
    site.page("a.md", "# 甲\n\n```html\n<p>例</p>\n<style>.lk-real-source{display:none}</style>\n```\n")
    assert site.problems() == []  # in a.md it is code
    site.page("b.md", '# 乙\n\n--8<-- "a.md:5:5"\n')
    got = [p.split(" — ")[0] for p in site.problems()]
    assert got == [
        "docs/a.md:5: raw HTML has a <style> element, which restyles the page (it can hide text or draw other "
        "text over a block)"
    ]
