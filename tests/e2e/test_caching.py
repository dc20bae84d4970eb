"""The caches that make warm builds cheap never change what the site shows.

Every cache is keyed by content; these tests check that a hit returns what the work
would have produced, that a change of input is a miss, that damaged entries are
redone, and that code deferred past the search index changes neither the page nor
the index. Timing itself is measured by ``nox -s bench``, not here.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from pathlib import Path
from types import SimpleNamespace

import markdown
import pytest
from support import ROOT, block

from lessonkit.pipeline import markdown as mdext
from lessonkit.pipeline import mathml
from lessonkit.pipeline.render import Deferred
from lessonkit.run.runner import Job
from lessonkit.site import links as linkcheck
from lessonkit.source.pyindex import SourceFile
from lessonkit.util import store

EXTENSIONS = [
    "lessonkit.pipeline.markdown",
    "lessonkit.pipeline.mathml",
    "abbr",
    "admonition",
    "attr_list",
    "def_list",
    "footnotes",
    "md_in_html",
    "tables",
    "toc",
    "pymdownx.details",
    "pymdownx.superfences",
]


@pytest.fixture(autouse=True)
def _fresh_memory(monkeypatch):
    """Each test starts with an empty memory layer (the one process-wide cache of entries)."""
    monkeypatch.setattr(store, "_MEMORY", {})


# ---------------------------------------------------------------- the store itself


def test_store_roundtrip_memory_and_disk(tmp_path, monkeypatch):
    s = store.Store(tmp_path, "render")
    key = store.digest("a", "b")
    assert s.get(key) is None
    assert s.get_or_make(key, lambda: "value") == "value"
    assert (s.hits, s.misses) == (0, 1)
    assert store.decode_entry("render", key, (tmp_path / "render" / key).read_bytes(), tmp_path) == "value"
    monkeypatch.setattr(store, "_MEMORY", {})  # a new process: only the disk remains
    again = store.Store(tmp_path, "render")
    assert again.get_or_make(key, lambda: pytest.fail("recomputed a cached value")) == "value"
    assert (again.hits, again.misses) == (1, 0)
    assert list((tmp_path / "render").glob(".tmp-*")) == []


def test_the_memory_layer_keeps_each_cache_apart(tmp_path):
    """A record that describes its own cache (which archive its pinned tree came from) under the same
    key in two caches: one process reads each cache's own, from memory too."""
    first, second = store.Store(tmp_path / "a", "pin"), store.Store(tmp_path / "b", "pin")
    key = f"{'f' * 40}.sdist"
    first.put(key, "sha256 of the first archive")
    assert (second.get(key), second.holds(key)) == (None, False)
    second.put(key, "sha256 of the second archive")
    assert (first.get(key), second.get(key)) == ("sha256 of the first archive", "sha256 of the second archive")
    assert store.Store(None, "pin").get(key) is None  # a store without a disk layer has its own memory


def test_store_keys_separate_every_input():
    keys = {
        store.digest("ab", "c"),
        store.digest("a", "bc"),
        store.digest("abc"),
        store.digest("a", "b", "c"),
        store.digest(b"ab", "c"),
    }
    assert len(keys) == 4  # bytes and str of the same text are the same input; nothing else collides
    assert store.digest("x") == store.digest("x")


def test_damaged_store_entry_is_redone(tmp_path):
    s = store.Store(tmp_path, "render")
    key = store.digest("k")
    (tmp_path / "render").mkdir()
    (tmp_path / "render" / key).write_bytes(b"\xff\xfe not utf-8")
    assert s.get_or_make(key, lambda: "fresh") == "fresh"
    assert store.decode_entry("render", key, (tmp_path / "render" / key).read_bytes(), tmp_path) == "fresh"
    assert s.dropped == 1


def test_store_without_a_directory_only_remembers(tmp_path):
    s = store.Store(None, "render")
    assert s.get_or_make("k", lambda: "v") == "v"
    assert s.get("k") == "v"


# ---------------------------------------------------------------- symbol tables, formulas, link scans


def test_cached_definitions_equal_parsed_ones(tmp_path, real_project):
    sf_plain = SourceFile("autograd/core.py", (real_project.tree.root / "autograd/core.py").read_bytes())
    expected = sf_plain.definitions
    symbols = store.Store(tmp_path, "symbols")
    first = SourceFile("autograd/core.py", sf_plain.data, symbols).definitions  # parsed, then stored
    entries = list((tmp_path / "symbols").iterdir())
    assert len(entries) == 1
    second = SourceFile("autograd/core.py", sf_plain.data, symbols).definitions  # from the store
    assert first == second == expected
    assert any(d.name == "backward_pass" and (d.start, d.end) == (25, 32) for d in second)
    entries[0].write_text("[[\"not\", \"a\", \"definition\"]]", encoding="utf-8")  # wrong shape
    store._MEMORY.clear()
    assert SourceFile("autograd/core.py", sf_plain.data, symbols).definitions == expected


def test_cached_formula_equals_converted_one(tmp_path):
    direct = mathml.to_mathml(r"\frac{\partial y}{\partial x}", "inline")
    formulas = store.Store(tmp_path, "mathml")
    assert mathml.to_mathml(r"\frac{\partial y}{\partial x}", "inline", store=formulas) == direct
    assert len(list((tmp_path / "mathml").iterdir())) == 1
    store._MEMORY.clear()
    assert mathml.to_mathml(r"\frac{\partial y}{\partial x}", "inline", store=formulas) == direct  # from disk
    block = mathml.to_mathml(r"\frac{\partial y}{\partial x}", "block", store=formulas)
    assert block != direct  # display is part of the key
    assert "<math" in direct and "mfrac" in direct


def test_link_scan_cache_follows_page_content(tmp_path):
    site = tmp_path / "site"
    (site / "a").mkdir(parents=True)
    (site / "index.html").write_text('<a href="a/">a</a> <a href="a/#x">x</a>', encoding="utf-8")
    (site / "a" / "index.html").write_text('<h1 id="x">x</h1>', encoding="utf-8")
    cache = tmp_path / "cache"
    assert linkcheck.check_site(site, cache=cache) == linkcheck.check_site(site) == []
    assert len(list((cache / "links").iterdir())) == 2
    (site / "a" / "index.html").write_text('<h1 id="y">y</h1>', encoding="utf-8")  # the anchor goes away
    found = [str(p) for p in linkcheck.check_site(site, cache=cache)]
    assert found == ["site/index.html: broken anchor: a/#x"]
    assert found == [str(p) for p in linkcheck.check_site(site)]


# ---------------------------------------------------------------- rendered blocks and deferred code


def _render(text: str, path: str, deferred: Deferred | None) -> tuple[str, list]:
    ctx = mdext.PageContext(path, 0, [], root=str(ROOT), source=text, deferred=deferred)
    md = markdown.Markdown(
        extensions=EXTENSIONS,
        extension_configs={"lessonkit.pipeline.markdown": {"root": str(ROOT), "context": lambda: ctx}},
    )
    return md.convert(text), ctx.problems


def _search_entries(html: str) -> list[dict]:
    from material.plugins.search.plugin import SearchIndex

    index = SearchIndex()
    page = SimpleNamespace(meta={}, content=html, toc=[], url="lessons/x/", title="x")
    index.add_entry_from_context(page)
    return index.entries


@pytest.fixture(scope="module")
def lesson05(real_project):
    path = "docs/lessons/05-reverse-mode.md"
    return path, (ROOT / path).read_text(encoding="utf-8")


def test_deferred_code_gives_the_same_page_and_search_index(lesson05):
    path, text = lesson05
    direct, problems = _render(text, path, None)
    assert problems == []
    deferred = Deferred("t3st", {})
    early, problems = _render(text, path, deferred)
    assert problems == []
    code = [h for h in deferred.html.values() if not h.startswith("<math")]  # and the formulas
    assert len(code) == direct.count('<table class="highlighttable">') > 5
    assert early.count("<span") * 4 < direct.count("<span")  # what the search index parses is small
    filled, missing = deferred.fill(early)
    assert missing == []
    assert filled == direct
    assert _search_entries(early) == _search_entries(direct)
    assert any("def backward_pass(g, end_node):" in e["text"] for e in _search_entries(early))


def test_fill_reports_a_slot_that_went_missing():
    d = Deferred("n", {})
    page = "<p>a</p>" + d.slot("x = 1\n", "<pre>HIGHLIGHTED</pre>")
    assert d.fill(page) == ("<p>a</p><pre>HIGHLIGHTED</pre>", [])
    assert d.fill("<p>rewritten by someone</p>") == ("<p>rewritten by someone</p>", ["lk-defer-n-0"])


def test_block_code_is_highlighted_once_and_keyed_by_what_it_shows(site, monkeypatch):
    site.page(
        "p.md",
        "# t\n\n"
        + block(
            "real-source",
            "File: autograd/core.py",
            "Symbol: backward_pass",
            "Commit: f53a21734fdfae636f448744d9097d8d35a643a0",
        ),
    )
    text = (site.root / "docs" / "p.md").read_text(encoding="utf-8")
    monkeypatch.setenv("AUTOGRAD_SOURCE", str(site.pinned_root))
    monkeypatch.setenv("LESSONKIT_CACHE", str(site.cache))
    calls = []
    real = mdext.Highlight.highlight

    def counting(self, src, *a, **k):
        calls.append(src)
        return real(self, src, *a, **k)

    monkeypatch.setattr(mdext.Highlight, "highlight", counting)

    def render(t):
        ctx = mdext.PageContext("docs/p.md", 0, [], root=str(site.root), source=t)
        config = {"root": str(site.root), "context": lambda: ctx}
        return markdown.Markdown(
            extensions=EXTENSIONS, extension_configs={"lessonkit.pipeline.markdown": config}
        ).convert(t)

    first = render(text)
    assert len(calls) == 1 and calls[0].startswith("def backward_pass(g, end_node):")
    store._MEMORY.clear()  # a new process: the disk entry answers
    assert render(text) == first and len(calls) == 1
    render(text.replace("Symbol: backward_pass", "Symbol: VJPNode"))  # other lines: a miss
    assert len(calls) == 2 and calls[1].startswith("class VJPNode(Node):")
    assert len(list((site.cache / "render").iterdir())) == 2


# ---------------------------------------------------------------- experiments start in the background


def test_started_jobs_report_what_must_run_and_give_run_all_results(site, monkeypatch):
    monkeypatch.setenv("AUTOGRAD_SOURCE", str(site.pinned_root))
    runner = site.project().runner
    jobs = [Job("a.py", b"print('a')\n", 60, "a.py"), Job("b.py", b"print('b')\n", 60, "b.py")]
    pending = runner.start(jobs)
    assert pending.to_run == 2
    first = pending.results()
    assert [r.stdout for r in first.values()] == ["a\n", "b\n"]
    again = site.project().runner.start(jobs)  # a new build: both are in the cache now
    assert again.to_run == 0
    assert {k: r.stdout for k, r in again.results().items()} == {k: r.stdout for k, r in first.items()}
    assert json.loads(next((site.cache / "experiments").glob("*.json")).read_text())["exit_code"] == 0


def test_a_job_asked_for_while_in_flight_runs_once(site, monkeypatch):
    monkeypatch.setenv("AUTOGRAD_SOURCE", str(site.pinned_root))
    runner = site.project().runner
    job = Job("slow.py", b"import time\ntime.sleep(0.5)\nprint('done')\n", 60, "slow.py")
    pending = runner.start([job])
    direct = runner.run(job)  # a page that needs it while it runs in the background
    assert direct.stdout == "done\n"
    assert list(pending.results().values()) == [direct]
    assert runner.stats == {"ran": 1, "cached": 0}


def test_prewarm_process_fills_what_the_page_asks_for(site, monkeypatch):
    """A cold build hands the code of its experiment pages, their formulas and the math font's
    subset to another process; rendering then finds all of it in the caches, under the keys it
    asks for."""
    site.page(
        "p.md",
        "# t\n\n求导 $\\frac{dy}{dx}$：\n\n"
        + block(
            "real-source", "File: autograd/tracer.py", "Symbol: Box", "Commit: f53a21734fdfae636f448744d9097d8d35a643a0"
        ),
    )
    monkeypatch.setenv("AUTOGRAD_SOURCE", str(site.pinned_root))
    monkeypatch.setenv("LESSONKIT_CACHE", str(site.cache))
    from lessonkit.checks import verify
    from lessonkit.site import pages

    project = site.project()
    plan = dataclasses.replace(pages.prewarm_plan(verify.check(project), ["docs/p.md"]), font=["docs/p.md"])
    assert [(anchor, shown.file, shown.start, full) for anchor, shown, full in plan.code] == [
        ("src-Box", "autograd/tracer.py", 156, None)
    ]
    proc = pages.start_prewarm(project, plan)
    proc.join(120)
    assert proc.exitcode == 0
    n_py = sum(1 for f in project.pin.manifest if f.endswith(".py"))
    assert len(list((site.cache / "symbols").iterdir())) == n_py  # every pinned Python file's symbols
    monkeypatch.setattr(mdext.Highlight, "highlight", lambda *a, **k: pytest.fail("highlighted again"))
    monkeypatch.setattr(mathml, "convert", lambda *a, **k: pytest.fail("converted again"))
    text = (site.root / "docs" / "p.md").read_text(encoding="utf-8")
    ctx = mdext.PageContext("docs/p.md", 0, [], source=text, project=site.project())  # the build's project
    config = {"root": str(site.root), "context": lambda: ctx}
    html = markdown.Markdown(extensions=EXTENSIONS, extension_configs={"lessonkit.pipeline.markdown": config}).convert(
        text
    )
    assert 'id="src-Box"' in html and '<span class="nc">Box</span>' in html and "<mfrac>" in html
    from lessonkit.site import mathfont

    monkeypatch.setattr(mathfont, "subset", lambda *a, **k: pytest.fail("subset again"))
    font = mathfont.project_font(site.cache, [text])  # as Build.math_font asks for it
    assert font.startswith(b"wOF2") and len(font) < 20_000


# ---------------------------------------------------------------- tokens resolved after the experiments


def test_bundle_tokens_are_filled_and_an_unknown_token_is_located(site):
    site.page("index.md", "# 首页\n\n资源包 [[lessonkit:bundle-size]]，sha256 `[[lessonkit:bundle-sha256]]`。\n")
    r = site.build()
    assert r.returncode == 0, r.stderr[-2000:]
    html = (site.root / "site" / "index.html").read_text(encoding="utf-8")
    assert "[[lessonkit:" not in html
    import hashlib

    data = (site.root / "site" / "downloads" / "autograd-resources.zip").read_bytes()
    assert f"<code>{hashlib.sha256(data).hexdigest()}</code>" in html
    site.page("index.md", "# 首页\n\n正文。\n\n资源包 [[lessonkit:bundle-sha]]。\n")
    r = site.build()
    assert r.returncode != 0
    lines = [l for l in r.stderr.splitlines() if "unknown token" in l]
    assert len(lines) == 1
    assert (
        lines[0]
        .split("-  ", 1)[-1]
        .startswith(
            "docs/index.md:5: unknown token `[[lessonkit:bundle-sha]]` — known tokens: bundle-sha256, bundle-size,"
        )
    )
    assert "Traceback" not in r.stderr


def test_generated_section_goes_before_a_closing_footer_of_links():
    from lessonkit.site.citations import add_section

    page = "# t\n\n正文。\n\n---\n\n[← 04 · x](04-x.md) · [06 · y →](06-y.md)\n"
    assert (
        add_section(page, "\n\n## 列表\n")
        == "# t\n\n正文。\n\n\n## 列表\n\n---\n\n[← 04 · x](04-x.md) · [06 · y →](06-y.md)\n"
    )
    assert add_section("# t\n\n正文。\n", "\n\n## 列表\n") == "# t\n\n正文。\n\n\n## 列表\n"
    rule_then_prose = "# t\n\n---\n\n结尾的话，没有链接。\n"
    assert add_section(rule_then_prose, "\n## L\n") == rule_then_prose + "\n## L\n"
    assert add_section(page, "") == page


A_PAGE = '<h1 id="{}">x</h1> <script src="https://cdn.example/x.js"></script>'


def _small_site(site: Path) -> None:
    (site / "a").mkdir(parents=True)
    links = '<a href="a/">a</a> <a href="a/#x">x</a> <a href="gone.html">g</a>'
    (site / "index.html").write_text(links, encoding="utf-8")
    (site / "a" / "index.html").write_text(A_PAGE.format("x"), encoding="utf-8")
    (site / "404.html").write_text('<p id="top"><a href="#top">top</a></p>', encoding="utf-8")


def test_the_link_scanner_process_finds_what_check_site_finds(tmp_path, monkeypatch):
    """Pages handed over as they are written, pages it was not told about (404.html), a page
    rewritten after its scan (a/index.html: its anchor goes away): the same problems as the
    check of the finished site, found by the scanner process, not by the fallback here."""
    site, cache = tmp_path / "site", tmp_path / "cache"
    _small_site(site)
    scanner = linkcheck.SiteScanner(site, cache=cache)
    scanner.written(site / "index.html")
    scanner.written(site / "a" / "index.html")
    scanner.written(tmp_path / "elsewhere.html")  # not under the site: ignored
    assert scanner._proc is not None and scanner._proc.is_alive()
    deadline = time.monotonic() + 60
    while len(list((cache / "links").glob("[0-9a-f]*"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)  # until both pages are scanned (each scan lands in the cache)
    (site / "a" / "index.html").write_text(A_PAGE.format("y"), encoding="utf-8")  # same size, new time
    check_site = linkcheck.check_site
    monkeypatch.setattr(linkcheck, "check_site", lambda *a, **k: pytest.fail("checked here, not by the scanner"))
    found = [str(p) for p in scanner.finish()]
    assert (
        found
        == [str(p) for p in check_site(site)]
        == [
            "site/a/index.html: loads a resource from another host: https://cdn.example/x.js",
            "site/index.html: broken anchor: a/#x",
            "site/index.html: broken link: gone.html",
        ]
    )
    assert scanner._proc is None  # finished and joined


def test_a_link_scanner_that_dies_costs_time_not_the_check(tmp_path):
    site = tmp_path / "site"
    _small_site(site)
    scanner = linkcheck.SiteScanner(site)
    scanner.written(site / "index.html")
    scanner._proc.kill()
    scanner._proc.join()
    assert [str(p) for p in scanner.finish()] == [str(p) for p in linkcheck.check_site(site)]
    assert len(linkcheck.check_site(site)) == 2  # the resource and gone.html


# ---------------------------------------------------------------- the theme's compiled templates


def _theme_env(tmp_path, cache_dir):
    import jinja2

    from lessonkit.integrations.mkdocs import themecache

    if not (tmp_path / "t").exists():
        (tmp_path / "t").mkdir()
        page = "<h1>{{ title | upper }}</h1>{% for x in xs %}<i>{{ x }}</i>{% endfor %}"
        (tmp_path / "t" / "page.html").write_text(page)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(tmp_path / "t")))
    env.bytecode_cache = themecache.TemplateCache(cache_dir)
    return env


def test_the_theme_templates_are_compiled_once_and_a_damaged_entry_is_compiled_again(tmp_path, monkeypatch):
    cache = tmp_path / "templates"
    first = _theme_env(tmp_path, cache).get_template("page.html").render(title="a", xs=[1, 2])
    assert first == "<h1>A</h1><i>1</i><i>2</i>"
    (entry,) = cache.iterdir()
    again = _theme_env(tmp_path, cache)
    monkeypatch.setattr(again, "compile", lambda *a, **k: pytest.fail("compiled again"))
    assert again.get_template("page.html").render(title="a", xs=[1, 2]) == first  # from the cache
    monkeypatch.undo()
    good = entry.read_bytes()
    for damaged in (good[:-7], good[:40] + bytes([good[40] ^ 1]) + good[41:], b"", good[32:]):
        entry.write_bytes(damaged)
        assert _theme_env(tmp_path, cache).get_template("page.html").render(title="a", xs=[1, 2]) == first
        assert entry.read_bytes() == good  # compiled again and replaced
    (tmp_path / "t" / "page.html").write_text("<h2>{{ title }}</h2>")  # the template changed: its new code
    assert _theme_env(tmp_path, cache).get_template("page.html").render(title="a") == "<h2>a</h2>"


def test_an_unwritable_template_cache_only_costs_time(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    env = _theme_env(tmp_path, blocked / "templates")
    assert env.get_template("page.html").render(title="x", xs=[]) == "<h1>X</h1>"


def test_compiled_templates_live_with_python_bytecode_when_it_is_kept_apart(tmp_path, monkeypatch):
    import sys

    from lessonkit.integrations.mkdocs import themecache

    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "pyc"))
    assert themecache.folder(tmp_path / "cache") == tmp_path / "pyc" / "lessonkit-templates"
    monkeypatch.setattr(sys, "pycache_prefix", None)
    assert themecache.folder(tmp_path / "cache") == tmp_path / "cache" / "templates"


def test_deferred_formulas_give_every_page_the_same_page_and_search_index(real_project):
    """Formulas wait with the code: every page of docs/ fills back to the page a build without
    the wait writes, and the search index reads the same entries from the early page."""
    held = 0
    for page in sorted((ROOT / "docs").rglob("*.md")):
        path = page.relative_to(ROOT).as_posix()
        text = page.read_text(encoding="utf-8")
        if "$" not in text:
            continue
        direct, problems = _render(text, path, None)
        deferred = Deferred("m4th", {})
        early, problems_early = _render(text, path, deferred)
        assert problems_early == problems, path
        held += sum(1 for h in deferred.html.values() if h.startswith("<math"))
        filled, missing = deferred.fill(early)
        assert (filled, missing) == (direct, []), path
        assert _search_entries(early) == _search_entries(direct), path
    assert held > 100  # every formula of the lessons waits


def test_formulas_stay_out_of_the_search_index(lesson05):
    """A formula's MathML text flattened ("v¯=∂L∂v") never reaches the index, not from the page that
    waits for its formulas nor from one that carries them (a site without the wait): the index gets
    the formula as one line of text instead ("2x=6", "v̄=∂L/∂v")."""
    path, text = lesson05
    direct, _ = _render(text, path, None)
    early, _ = _render(text, path, Deferred("m4th", {}))
    assert direct.count('data-search-exclude="math"') > 20
    for html in (direct, early):
        entries = _search_entries(html)
        joined = "".join(e["title"] + e["text"] for e in entries)
        assert not re.search(r"\u00af|∂\w+∂", joined) and "2x=6" in joined, path
        assert any("反向模式从" in e["text"].replace("\u200b", "") for e in entries)
