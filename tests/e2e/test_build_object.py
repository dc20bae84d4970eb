"""The Build object without MkDocs: tokens, line offsets, render order,
links, and one page from plan to problems."""

from __future__ import annotations

import sys
from pathlib import Path

from support import block

from lessonkit.build import Build, PageFile, SiteLinks, line_offset, render_order
from lessonkit.errors import Problem
from lessonkit.site.tokens import fill_tokens, unknown_tokens


def test_fill_tokens_replaces_only_known_tokens():
    text = "v[[lessonkit:version]] · [[lessonkit:nope]] · [[lessonkit:version]]"
    assert fill_tokens(text, {"version": "1.9.1"}) == "v1.9.1 · [[lessonkit:nope]] · 1.9.1"


def test_unknown_tokens_are_located_in_the_source():
    problems = unknown_tokens(
        "<p>[[lessonkit:nope]]</p>", "# t\n\nsee [[lessonkit:nope]]\n", "docs/a.md", ["version", "commit"]
    )
    assert [str(p) for p in problems] == [
        "docs/a.md:3: unknown token `[[lessonkit:nope]]` — known tokens: commit, version"
    ]


def test_line_offset_counts_front_matter():
    raw = "---\ntitle: t\n---\n\n# t\n\nbody\n"
    assert line_offset(raw, "# t\n\nbody\n") == 4
    assert line_offset(raw, raw) == 0


def test_render_order_puts_experiment_pages_then_late_pages_last(real_project):
    root = real_project.root
    files = [
        PageFile("attachments/acceptance.md"),
        PageFile("a.md", str(root / "docs" / "a.md")),
        PageFile("b.md", str(root / "docs" / "b.md")),
        PageFile("c.md", str(root / "docs" / "c.md")),
        PageFile("d.md", str(root / "docs" / "d.md")),
    ]
    late = {"attachments/acceptance.md"}
    assert render_order(files, real_project, ["docs/b.md"], late) == [1, 3, 4, 2, 0]
    assert render_order(files, real_project, ["docs/b.md", "docs/d.md"], late) == [1, 3, 2, 4, 0]
    # pages with experiments: in the order their runs end, not in the order MkDocs lists them
    assert render_order(files, real_project, ["docs/d.md", "docs/b.md"], late) == [1, 3, 4, 2, 0]


def test_site_links_are_relative_and_absent_without_a_page(tmp_path):
    b = Build(tmp_path)
    b.urls = {
        "source/autograd/core.py.md": "source/autograd/core.py/",
        "code/experiments/x.py.md": "code/x/",
        "api.md": "api/",
    }
    b.api = {"autograd.core.make_vjp"}
    links = SiteLinks(b, "lessons/05/", lambda url, base: f"REL({url}|{base})")
    assert links.source("autograd/core.py", 3, 9) == "REL(source/autograd/core.py/|lessons/05/)#L3-L9"
    assert links.source("autograd/tracer.py", 3, 9) is None
    assert links.script("experiments/x.py") == "REL(code/x/|lessons/05/)"
    assert links.api("autograd/core.py", "make_vjp") == "REL(api/|lessons/05/)#autograd.core.make_vjp"
    assert links.api("autograd/core.py", "backward_pass") is None


def test_one_page_from_plan_to_problems(site, monkeypatch):
    monkeypatch.setenv("AUTOGRAD_SOURCE", str(site.pinned_root))
    monkeypatch.setenv("LESSONKIT_CACHE", str(site.cache))
    page = site.page(
        "lessons/01-a.md",
        "# 01 · t\n\nv[[lessonkit:version]]\n\n"
        + block("real-source", "File: autograd/core.py", "Symbol: backward_pass", "Commit: f53a217"),
    )
    logged: list[str] = []
    b = Build(site.root, log=logged.append, log_info=lambda s: None)
    b.start()
    plan = b.plan([site.root / "docs" / "index.md", page])
    assert plan.with_experiments == [] and "source/autograd/core.py.md" in {g.uri for g in plan.generated}
    md = b.page("lessons/01-a.md", str(page), page.read_text(encoding="utf-8"), links=None)
    assert "v1.9.1" in md and "```real-source" in md
    assert b.current.path == "docs/lessons/01-a.md" and b.current.line_offset == 0
    b.current.problems.append(Problem("x", "docs/lessons/01-a.md", 3))
    b.page_done()
    assert b.current is None and [str(p) for p in b.problems] == logged == ["docs/lessons/01-a.md:3: x"]
    b.cancel()


def test_unreadable_pages_are_one_error_each(tmp_path):
    (tmp_path / "docs").mkdir()
    bad = tmp_path / "docs" / "bad.md"
    bad.write_bytes(b"\xef\xbb\xbf# t\n")
    b = Build(tmp_path)
    try:
        b.read_pages([bad])
    except Exception as exc:  # LessonError
        assert str(exc) == "docs/bad.md:1: file starts with a UTF-8 byte-order mark — save it as UTF-8 without BOM"
    else:
        raise AssertionError("no error")
    assert Path(tmp_path / "docs" / "bad.md").read_bytes().startswith(b"\xef\xbb\xbf")


def test_a_prewarm_bug_is_one_warning_line_and_no_traceback(monkeypatch, capsys, tmp_path):
    """A NameError in the prewarm child printed a full traceback while the
    build stayed green. The worker contains it: one line; the build does the work itself."""
    from lessonkit.site import pages

    def broken(project, plan):
        raise NameError("name 'x' is not defined")

    monkeypatch.setattr(pages, "prewarm", broken)
    monkeypatch.setattr(pages.sandbox, "helper_process", lambda: None)
    monkeypatch.setattr(pages, "Project", lambda root, cache: None)
    pages._prewarm_worker(str(tmp_path), str(tmp_path / "cache"), pages.Prewarm([], []))
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "lessonkit: warning: the prewarm process stopped (NameError: name 'x' is not defined); "
        "the build does its work itself\n"
    )


def _two_experiment_pages(site, monkeypatch):
    monkeypatch.setenv("AUTOGRAD_SOURCE", str(site.pinned_root))
    monkeypatch.setenv("LESSONKIT_CACHE", str(site.cache))
    site.script("one.py", "print(1 + 1)\n")
    site.script("two.py", "print(2 + 2)\n")
    a = site.page("a.md", "# a\n\n" + block("experiment", "File: experiments/one.py", "Purpose: p"))
    b = site.page("b.md", "# b\n\n" + block("experiment", "File: experiments/two.py", "Purpose: p"))
    return [site.root / "docs" / "index.md", a, b]


def _prestarted(site, monkeypatch):
    """(the pages, a Build whose experiments prestart began, those runs)."""
    paths = _two_experiment_pages(site, monkeypatch)
    b = Build(site.root, log=lambda s: None, log_info=lambda s: None)
    b.start()
    b.prestart()
    assert b.early.pending is None and b.prewarm is not None  # a cold build: the prewarm works meanwhile
    b.start_experiments()  # on_pre_build
    return paths, b, b.early.pending


def test_every_run_cached_but_nothing_highlighted_the_prewarm_takes_the_source_pages(site, monkeypatch):
    """A fresh clone whose experiments ran before the build (the noxfile's prefill): the build
    would render everything on one core, so the prewarm takes every page's code and the source
    pages, from the end of the render order; a build with those caches filled starts none."""
    import shutil

    from lessonkit.site import pages

    paths = _two_experiment_pages(site, monkeypatch)
    b = Build(site.root, log=lambda s: None, log_info=lambda s: None)
    b.start()
    b.plan(paths)
    b.results()  # every run is in the cache now
    b.cancel()
    for kind in ("highlight", "render"):  # what its own (cold build's) prewarm may have done
        shutil.rmtree(site.cache / kind, ignore_errors=True)
    # and what this test process remembers of them (the stores' memory layer is shared by every
    # project of a process: an earlier test may have highlighted the same pinned files)
    from lessonkit.util import store as stores

    kept = {k: v for k, v in stores._MEMORY.items() if k[1] not in ("highlight", "render")}
    monkeypatch.setattr(stores, "_MEMORY", kept)
    project = site.project()
    files = pages.unhighlighted(project)
    assert len(files) == len(sum(pages.browser_files(project, []), [])) > 0  # nothing highlighted yet
    warm = Build(site.root, log=lambda s: None, log_info=lambda s: None)
    warm.start()
    warm.prestart()
    assert warm.early.pending is None and not project.runner.uncached(warm.early.jobs)
    assert warm.prewarm is not None  # not a cold build, but a cold render cache
    warm.prewarm.join(120)
    assert warm.prewarm.exitcode == 0
    assert pages.unhighlighted(site.project()) == []  # every source page's file
    assert len(list((site.cache / "render").iterdir())) == 2  # both experiment scripts' code
    warm.cancel()
    again = Build(site.root, log=lambda s: None, log_info=lambda s: None)
    again.start()
    again.prestart()
    assert again.prewarm is None and again.prewarm_planned
    shutil.rmtree(site.cache / "highlight")  # a few hundred lines alone are not worth a process
    assert not pages.worth_prewarming(project, [f for f in files if f[0] == "repo"])


def test_prestart_starts_the_experiments_and_plan_takes_them_over(site, monkeypatch):
    paths, b, started = _prestarted(site, monkeypatch)
    assert started.to_run == 2
    b.plan(paths)  # MkDocs lists the same pages: the running experiments are the build's
    assert b.pending is started and b.early is None and b.extra is None
    outputs = sorted(r.stdout.strip() for r in b.results().values())
    assert outputs == ["2", "4"] and b.project.runner.stats["ran"] == 2


def test_plan_with_other_pages_shares_the_prestarted_runs(site, monkeypatch):
    paths, b, started = _prestarted(site, monkeypatch)
    b.plan(paths[:2])  # MkDocs left out b.md (say, exclude_docs): plan again, from its own list
    assert b.pending is not started and b.extra is started
    assert b.pending.to_run == 2  # counts the runs prestart began (a cold build: prewarm starts)
    assert [r.stdout.strip() for r in b.results().values()] == ["2"]
    assert b.extra is None and b.project.runner.stats["ran"] == 2  # one.py ran once, not twice


def test_prestart_leaves_a_broken_page_to_plan(site, monkeypatch):
    monkeypatch.setenv("AUTOGRAD_SOURCE", str(site.pinned_root))
    monkeypatch.setenv("LESSONKIT_CACHE", str(site.cache))
    bad = site.root / "docs" / "bad.md"
    bad.write_bytes(b"\xef\xbb\xbf# t\n")
    b = Build(site.root, log=lambda s: None, log_info=lambda s: None)
    b.start()
    b.prestart()  # no error here: plan() reports it, located, once
    assert b.early is None and b.texts == {}
    try:
        b.plan([site.root / "docs" / "index.md", bad])
    except Exception as exc:  # LessonError
        assert str(exc) == "docs/bad.md:1: file starts with a UTF-8 byte-order mark — save it as UTF-8 without BOM"
    else:
        raise AssertionError("no error")
    b.cancel()


def test_experiments_read_the_builds_bytecode_folder_and_write_nothing_there(site, tmp_path):
    prefix = tmp_path / "pycache"
    prefix.mkdir()
    site.script(
        "flags.py",
        "import sys\nprint(sys.pycache_prefix, sys.flags.dont_write_bytecode)\nimport json, colorsys\n",
    )
    site.env["PYTHONDONTWRITEBYTECODE"] = ""  # the build process writes its own bytecode there
    r = site.run("-X", f"pycache_prefix={prefix}", "-m", "lessonkit", "run", "experiments/flags.py")
    assert r.returncode == 0, r.stderr
    assert f"{prefix} 1" in r.stdout  # the box's Python looks there, with -B
    written = {p.name for p in prefix.rglob("*.pyc")}
    assert f"runner.{sys.implementation.cache_tag}.pyc" in written
    assert not any(n.startswith("colorsys.") for n in written)  # imported only in the box: not written


def test_verify_mutate_runs_the_mutation_check_in_the_same_process(site, monkeypatch):
    site.page(
        "a.md",
        "# a\n\n" + block("real-source", "File: autograd/core.py", "Symbol: backward_pass", "Commit: f53a217"),
    )
    r = site.verify("--mutate")
    assert r.returncode == 1  # --no-map: the mutation check needs the excerpt map
    mapped = site.run("-m", "lessonkit", "verify", "--update-map")
    assert mapped.returncode == 0, mapped.stderr
    r = site.verify("--mutate")
    assert r.returncode == 0, r.stderr
    assert "0 problem(s)" in r.stdout and "mutations: 1/1 caught (100%)" in r.stdout


def test_verify_mutate_skips_the_mutation_check_when_verify_fails(site):
    site.page("a.md", "# a\n\n" + block("real-source", "File: autograd/core.py", "Symbol: nope", "Commit: f53a217"))
    r = site.verify("--mutate")
    assert r.returncode == 1 and "mutations:" not in r.stdout + r.stderr
