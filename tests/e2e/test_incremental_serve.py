"""Incremental serve (``python -m lessonkit serve``) writes what a full build writes.

On a copy of the real project, the serve builder builds once; then each edit (plain prose,
a citation's ``Symbol``, an experiment script, a new real-source block, a lesson title)
is followed by the builder's rebuild, and the served site directory is compared with a
fresh full build in another process (same configuration and address): the same files,
byte for byte. The edits that do not change the navigation must be partial (the plan is
not ``full``), and an unrelated lesson's HTML file must not be rewritten (same inode and
mtime): proof that the rebuild was incremental, not a full build that happens to agree.

The livereload script is not in the files: MkDocs 1.6's server injects it into HTML
responses when it serves them (``LiveReloadServer._inject_js_into_html``).
"""

from __future__ import annotations

import ast
import hashlib
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT, block

URL = "http://127.0.0.1:8000/"
PARTS = ["docs", "experiments", "mini-autograd", "sourcemap", "overrides", "hooks", "templates", "lessonkit_ext"]
UNRELATED = "lessons/07-broadcasting/index.html"


def _digests(site: Path) -> dict[str, str]:
    return {
        p.relative_to(site).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(site.rglob("*"))
        if p.is_file()
    }


def _full_build(proj: Path, out: Path, env: dict[str, str]) -> None:
    code = (
        "import sys; from lessonkit.integrations.mkdocs.serve import Incremental; "
        "Incremental('mkdocs.yml', sys.argv[1], serve_url=sys.argv[2]).full()"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, str(out), URL],
        cwd=proj,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 0, r.stderr[-3000:]


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{path}: no {old!r}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")  # the first occurrence


@pytest.fixture(scope="module")
def project(tmp_path_factory, real_project):
    base = tmp_path_factory.mktemp("serve")
    proj = base / "proj"
    for part in PARTS:
        shutil.copytree(ROOT / part, proj / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "mkdocs.yml", proj / "mkdocs.yml")
    cache = base / "cache"
    if real_project.cache.is_dir():  # warm experiments; a fresh clone runs them once
        shutil.copytree(real_project.cache, cache, symlinks=True, ignore=shutil.ignore_patterns("repin"))
    env = {
        **os.environ,
        "LESSONKIT_CACHE": str(cache),
        "AUTOGRAD_SOURCE": str(real_project.tree.root),
        "NO_MKDOCS_2_WARNING": "1",
        "SOURCE_DATE_EPOCH": os.environ.get("SOURCE_DATE_EPOCH", "1764460800"),
    }
    return base, proj, env


def test_serve_rebuilds_equal_a_full_build_and_only_what_changed(project, monkeypatch):
    from lessonkit.integrations.mkdocs.serve import Incremental

    base, proj, env = project
    for key in ("LESSONKIT_CACHE", "AUTOGRAD_SOURCE", "NO_MKDOCS_2_WARNING", "SOURCE_DATE_EPOCH"):
        monkeypatch.setenv(key, env[key])
    monkeypatch.chdir(proj)  # as `nox -s serve`: paths in mkdocs.yml (the search dictionary) are relative
    logging.getLogger("mkdocs").setLevel(logging.INFO)
    served = base / "served"
    serve = Incremental(proj / "mkdocs.yml", served, serve_url=URL)
    serve.full()
    assert serve.last.full
    unrelated = served / UNRELATED
    before = unrelated.stat()

    docs = proj / "docs"
    edits = [
        # plain prose: that lesson and the search index
        (
            "prose",
            lambda: _edit(docs / "lessons/05-reverse-mode.md", "\n## ", "\n本段只为增量构建测试而加。\n\n## "),
            {"lessons/05-reverse-mode.md"},
        ),
        # a citation: the lesson, the cited file's source page (backlinks) and the symbol index
        (
            "citation",
            lambda: _edit(
                docs / "lessons/03-grad-call-chain.md", "Symbol: Node.new_root\n", "Symbol: Node.initialize_root\n"
            ),
            {"lessons/03-grad-call-chain.md", "source/autograd/tracer.py.md", "symbols.md"},
        ),
        # an experiment script: its key changes (it runs again), its code page, the bundle, its pages
        (
            "experiment",
            lambda: _edit(proj / "experiments/simple_grad.py", "\n", "\n# edited by the serve test\n"),
            {"code/experiments/simple_grad.py.md", "downloads/autograd-resources.zip"},
        ),
        # a source-browser-relevant block: a new citation of another symbol
        (
            "new block",
            lambda: _edit(
                docs / "lessons/12-gradient-check.md",
                "\n## ",
                "\n```real-source\nFile: autograd/tracer.py\nSymbol: find_top_boxed_args\nCommit: f53a217\n```\n\n## ",
            ),
            {"lessons/12-gradient-check.md", "source/autograd/tracer.py.md", "symbols.md"},
        ),
    ]
    for n, (name, apply, expected) in enumerate(edits):
        apply()
        serve.rebuild()
        assert not serve.last.full, f"{name}: fell back to a full build ({serve.last.why})"
        assert expected <= serve.last.outputs, f"{name}: rebuilt {sorted(serve.last.outputs)}"
        assert UNRELATED.replace("/index.html", ".md") not in serve.last.outputs
        after = unrelated.stat()
        assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns), (
            f"{name}: {UNRELATED} was rewritten"
        )
        fresh = base / f"full-{n}"
        _full_build(proj, fresh, env)
        a, b = _digests(served), _digests(fresh)
        assert sorted(a) == sorted(b), name
        assert [k for k in a if a[k] != b[k]] == [], name

    # a lesson title: the navigation of every page shows it, so everything is rebuilt
    _edit(docs / "lessons/09-why-reverse.md", "# 09 · ", "# 09 · （改）")
    serve.rebuild()
    assert serve.last.full and "title" in serve.last.why, serve.last
    fresh = base / "full-title"
    _full_build(proj, fresh, env)
    a, b = _digests(served), _digests(fresh)
    assert sorted(a) == sorted(b)
    assert [k for k in a if a[k] != b[k]] == []
    assert "（改）" in (served / "lessons/01-ad-and-graph/index.html").read_text(encoding="utf-8")  # in the nav

    # a save without a change rebuilds nothing
    serve.rebuild()
    assert serve.last.nothing

    # an author mistake: shown in an error box on its page and logged; the rest of the site is served,
    # and the graph is kept, so that the fix is a partial rebuild too
    _edit(docs / "lessons/12-gradient-check.md", "Symbol: find_top_boxed_args\n", "Symbol: find_top_boxed_argz\n")
    serve.rebuild_or_report()
    assert serve.graph is not None and not serve.last.full, serve.last
    page = (served / "lessons/12-gradient-check/index.html").read_text(encoding="utf-8")
    assert 'class="lk-block lk-error"' in page and "no symbol `find_top_boxed_argz` in autograd/tracer.py" in page
    _edit(docs / "lessons/12-gradient-check.md", "Symbol: find_top_boxed_argz\n", "Symbol: find_top_boxed_args\n")
    serve.rebuild_or_report()
    assert not serve.last.full and "lk-error" not in (served / "lessons/12-gradient-check/index.html").read_text()


def test_pin_prefetch_needs_only_the_standard_library(tmp_path, pinned_root):
    """`python -S -m lessonkit.source.providers ROOT` provides the pinned tree before anything is installed: no
    site-packages, so an import of a third-party module anywhere on that path fails here."""
    env = {**os.environ, "LESSONKIT_CACHE": str(tmp_path / "cache"), "AUTOGRAD_SOURCE": str(pinned_root)}
    r = subprocess.run(
        [sys.executable, "-S", "-m", "lessonkit.source.providers", str(ROOT)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stderr == ""
    env["LESSONKIT_CACHE"] = "relative/cache"  # a problem is one located line, not a traceback
    r = subprocess.run(
        [sys.executable, "-S", "-m", "lessonkit.source.providers", str(ROOT)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 1
    assert r.stderr.startswith("LESSONKIT_CACHE") and "Traceback" not in r.stderr, r.stderr


def test_prefill_runs_the_builds_experiments_into_its_cache_with_the_standard_library(site):
    """noxfile.py runs `python -I -m lessonkit.cli.prefill ROOT numpy` while the lock installs. It needs
    only the standard library (`-S` here: no site-packages; the boxes' own interpreter has NumPy),
    and what it stores is what the build reads: every experiment from the cache, none run again."""
    site.script("ok.py", "from _provenance import announce\nannounce()\nprint(2 * 3)\n")
    site.page("o.md", "# o\n\n" + block("experiment", "File: experiments/ok.py", "Purpose: 预填"))
    site.page("p.md", "# p\n\n" + block("experiment", "Purpose: 内联", body="print(6 * 7)\n"))

    def prefill(*flags: str) -> subprocess.CompletedProcess:
        # noxfile.py gives the prefill the build's bytecode folder with -X (-I ignores
        # PYTHONPYCACHEPREFIX): the folder is in every key, so without it no key would match
        prefix = ["-X", f"pycache_prefix={sys.pycache_prefix}"] if sys.pycache_prefix else []
        return subprocess.run(
            [sys.executable, *flags, *prefix, "-m", "lessonkit.cli.prefill", str(site.root), "json"],
            cwd=ROOT,  # with -S the checkout is how lessonkit is found; -I finds it through site-packages
            env=site.env,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )

    r = prefill("-S")  # no site-packages: NumPy's version is "missing", so these keys are not the build's
    assert (r.returncode, r.stderr) == (0, ""), r.stderr[-2000:]
    assert len(list((site.cache / "experiments").glob("*.json"))) == 2
    r = prefill("-I")  # as noxfile.py runs it
    assert (r.returncode, r.stderr) == (0, ""), r.stderr[-2000:]
    assert len(list((site.cache / "experiments").glob("*.json"))) == 4
    first = site.build()
    assert first.returncode == 0, first.stderr[-2000:]
    assert "2 experiment(s): 0 run (0.0 s CPU), 2 from cache" in first.stderr
    assert "[autograd 1.9.1 · pinned tree]\n6" in (site.root / "site" / "o" / "index.html").read_text()
    site.page("q.md", "# q\n\n" + block("experiment", "Purpose: 错", body="raise SystemExit('no')\n"))
    r = prefill("-I")
    assert (r.returncode, r.stderr) == (0, "")  # a failing experiment is the build's to report
    assert len(list((site.cache / "experiments").glob("*.json"))) == 4  # and is never cached


def test_a_waiting_prefill_runs_nothing_before_its_line_and_starts_nothing_after_finish(site):
    """The noxfile starts the prefill with `--wait` before anything is installed: it checks the pages,
    then runs experiments only once stdin says the dependencies are in ("installed"); a second line
    ("finish": the build starts now) stops it from starting more, and the build runs the rest."""
    for n in range(3):
        site.script(f"e{n}.py", f"print({n} * 7)\n")
        site.page(f"e{n}.md", f"# e{n}\n\n" + block("experiment", f"File: experiments/e{n}.py", "Purpose: 等待"))
    prefix = ["-X", f"pycache_prefix={sys.pycache_prefix}"] if sys.pycache_prefix else []
    command = [sys.executable, "-I", *prefix, "-m", "lessonkit.cli.prefill", "--wait", str(site.root), "json"]

    def prefill(lines: str) -> subprocess.CompletedProcess:
        return subprocess.run(command, cwd=ROOT, env=site.env, input=lines, capture_output=True, text=True, timeout=300)

    entries = lambda: sorted((site.cache / "experiments").glob("*.json"))  # noqa: E731
    r = prefill("")  # the installer ended without saying the dependencies are in
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith("prefill: stdin ended before its line 'installed' — "), r.stderr
    assert entries() == []
    r = prefill("installed\nfinish\n")  # the build starts at once: only what already runs ends
    assert (r.returncode, r.stderr) == (0, ""), r.stderr[-2000:]
    ran = len(entries())
    assert ran <= min(3, os.cpu_count() or 1)
    first = site.build()
    assert first.returncode == 0, first.stderr[-2000:]
    assert f"3 experiment(s): {3 - ran} run" in first.stderr and f", {ran} from cache" in first.stderr
    shutil.rmtree(site.cache / "experiments")
    # now exactly as noxfile.py starts it: its RUN_PREFILL snippet, from the checkout
    tree = ast.parse((ROOT / "noxfile.py").read_text(encoding="utf-8"))
    snippet = next(
        n.value.value
        for n in tree.body
        if isinstance(n, ast.Assign) and [getattr(t, "id", "") for t in n.targets] == ["RUN_PREFILL"]
    )
    command = [sys.executable, "-I", *prefix, "-c", snippet, str(ROOT), "--wait", str(site.root), "json"]
    with open(site.root / "prefill.err", "w+") as err:
        proc = subprocess.Popen(
            command, cwd=ROOT, env=site.env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err, text=True
        )
        assert proc.stdin is not None
        proc.stdin.write("installed\n")  # and no "finish" (stdin stays open): it runs them all, and ends
        proc.stdin.flush()
        code = proc.wait(timeout=300)
        proc.stdin.close()
        err.seek(0)
        assert (code, err.read()) == (0, "")
    assert len(entries()) == 3
    again = site.build()
    assert "3 experiment(s): 0 run (0.0 s CPU), 3 from cache" in again.stderr, again.stderr[-2000:]


def test_an_experiment_key_holds_the_scripts_it_names_and_every_helper(site):
    """Editing one script changes its key and the keys of scripts that name it, not the others';
    a helper (``_*.py``) is in every key, as is everything for a script that lists files."""
    from lessonkit.attachments import script_job

    site.script("a.py", "print(1)\n")
    site.script("b.py", "import a\n")
    site.script("c.py", "print(3)\n")
    site.script("d.py", "import glob\nprint(glob.glob('*.py'))\n")

    def keys():
        project = site.project()
        return {n: project.runner.key(script_job(project, f"experiments/{n}.py")) for n in "abcd"}

    k0 = keys()
    assert len(set(k0.values())) == 4
    site.script("a.py", "print(2)\n")
    k1 = keys()
    assert [n for n in "abcd" if k1[n] != k0[n]] == ["a", "b", "d"]
    site.script("c.py", "print(4)\n")
    k2 = keys()
    assert [n for n in "abcd" if k2[n] != k1[n]] == ["c", "d"]
    (site.root / "experiments" / "_helper.py").write_text("X = 1\n", encoding="utf-8")
    k3 = keys()
    assert [n for n in "abcd" if k3[n] != k2[n]] == ["a", "b", "c", "d"]
