"""Whole-site properties: reproducible builds, the bundle, the acceptance record, the API page."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from support import ROOT, build_real_site

from lessonkit.checks import verify
from lessonkit.project import Project
from lessonkit.run.runner import RECORD_HELPER


def _digests(site: Path) -> dict[str, str]:
    return {
        p.relative_to(site).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(site.rglob("*"))
        if p.is_file()
    }


def test_a_build_with_empty_caches_is_byte_identical(built_site, tmp_path, real_project):
    """Nothing a cache holds (experiment output, highlighted code, symbol tables, formulas,
    link scans, the theme's compiled templates) changes the site: a build that redoes all of
    it writes the same bytes. Only the provided pinned tree is carried over, so its origin
    label stays the same. No bytecode folder apart (an empty PYTHONPYCACHEPREFIX is unset):
    the templates are compiled into this cache too."""
    cache = tmp_path / "cache"
    shutil.copytree(real_project.cache / "pin", cache / "pin", symlinks=True)
    again = tmp_path / "again"
    r = build_real_site(again, LESSONKIT_CACHE=str(cache), PYTHONPYCACHEPREFIX="", PYTHONDONTWRITEBYTECODE="1")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "0 from cache" in r.stderr  # every experiment ran again
    assert sorted(p.name for p in cache.iterdir()) == [
        "experiments",
        "highlight",
        "jieba",
        "links",
        "mathfont",
        "mathml",
        "pages",
        "pin",
        "pyodide",
        "render",
        "seal",
        "site",
        "symbols",
        "templates",
    ]
    assert all(p.suffix == ".jinja" for p in (cache / "templates").iterdir())
    a, b = _digests(built_site), _digests(again)
    assert sorted(a) == sorted(b)
    differing = [k for k in a if a[k] != b[k]]
    assert differing == []


def test_docs_and_experiments_untouched_by_the_build(built_site):
    r = subprocess.run(
        ["git", "status", "--porcelain", "--", "docs", "experiments", "sourcemap"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        pytest.skip("not a git checkout")
    assert r.stdout == ""


def test_bundle_is_linked_with_its_real_sha256_and_size(built_site):
    data = (built_site / "downloads" / "autograd-resources.zip").read_bytes()
    home = (built_site / "index.html").read_text()
    assert hashlib.sha256(data).hexdigest() in home
    assert f"{len(data) / 1024:.1f} KiB" in home
    assert "[[lessonkit:" not in home


def test_bundle_runs_outside_the_site(built_site, tmp_path):
    """Unzipped in an empty folder, with the installed autograd (no pinned tree given)."""
    with zipfile.ZipFile(built_site / "downloads" / "autograd-resources.zip") as zf:
        names = zf.namelist()
        assert names == sorted(names)
        assert {zi.date_time for zi in zf.infolist()} == {(2025, 11, 30, 0, 0, 0)}
        assert all(n.startswith("autograd-resources/") for n in names), names[:5]  # one top folder
        zf.extractall(tmp_path)
    tmp_path = tmp_path / "autograd-resources"
    names = [n.removeprefix("autograd-resources/") for n in names]
    helper = "experiments/lessonkit_record.py"  # lessonkit's record helper, which _record.py builds on
    assert helper in names and (tmp_path / helper).read_bytes() == RECORD_HELPER.read_bytes()
    assert "`experiments/lessonkit_record.py`" in (tmp_path / "README.md").read_text(encoding="utf-8")
    for rel in names:
        if rel.endswith(".py") and rel.startswith(("experiments/", "mini-autograd/")) and rel != helper:
            assert (tmp_path / rel).read_bytes() == (ROOT / rel).read_bytes(), rel
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AUTOGRAD_PINNED_ROOT", "AUTOGRAD_SOURCE")}
    scripts = sorted(
        p for p in (tmp_path / "experiments").glob("*.py") if not p.name.startswith("_") and p.name != Path(helper).name
    )
    assert len(scripts) >= 15
    for script in scripts:
        r = subprocess.run(
            [sys.executable, "-B", str(script.relative_to(tmp_path))],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )
        assert r.returncode == 0, (script.name, r.stderr[-1500:])
        assert r.stdout.splitlines()[0] == "[autograd 1.9.1 · installed copy]", script.name
    t = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "mini-autograd"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert t.returncode == 0, t.stdout[-1500:]
    assert " passed" in t.stdout


def test_acceptance_record_counts_equal_verify(built_site, real_project):
    report = verify.check(Project(ROOT))
    html = (built_site / "attachments" / "acceptance" / "index.html").read_text()
    totals = re.search(
        r"<strong>合计</strong></td>\s*<td><strong>(\d+)</strong></td>\s*<td><strong>(\d+)</strong>"
        r"</td>\s*<td><strong>(\d+)</strong>",
        html,
    )
    assert totals, "totals row not found"
    assert tuple(map(int, totals.groups())) == (
        report.count("real-source"),
        report.count("teaching-simplification"),
        report.count("experiment"),
    )


def test_api_entry_comes_from_the_pinned_tree(built_site, pinned_root):
    html = (built_site / "api" / "index.html").read_text()
    assert 'id="autograd.differential_operators.grad"' in html
    text = re.sub(r"<[^>]+>", "", html)
    assert "grad(fun, x)" in text
    import ast

    module = ast.parse((pinned_root / "autograd" / "differential_operators.py").read_text())
    grad = next(n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "grad")
    first = " ".join(ast.get_docstring(grad).replace("`", "").split()[:12])
    assert first in " ".join(text.split())


def test_autorefs_and_api_title_links(built_site):
    l03 = (built_site / "lessons" / "03-grad-call-chain" / "index.html").read_text()
    assert re.search(r'href="[./]*api/#autograd\.differential_operators\.grad"', l03)  # a [REAL SOURCE] title
    l11 = (built_site / "lessons" / "11-operator-composition" / "index.html").read_text()
    assert re.search(r'href="[./]*api/#autograd\.differential_operators\.jacobian"', l11)  # an autoref in prose


def test_lesson_lists_the_source_it_cited(built_site):
    html = (built_site / "lessons" / "05-reverse-mode" / "index.html").read_text()
    section = html[html.index('id="cited-source"') :]
    assert "backward_pass" in section and "source/autograd/core.py/#L25" in section
    # the generated list comes before the lesson's own previous/next line, which stays last
    assert html.index('id="cited-source"') < html.index(">← 04 · tracer.py")


def test_every_experiment_gives_the_same_output_twice(built_site, real_project):
    """Outputs that could differ between runs (addresses, timings, orders) are stable: each
    experiment's result in the build cache (the run `built_site`'s build used, or an earlier one)
    equals a new run of it now."""
    report = verify.check(real_project)
    jobs = {real_project.runner.key(r.job): r.job for rs in report.resolved.values() for r in rs if r.job}
    from concurrent.futures import ThreadPoolExecutor

    def twice(job):
        earlier = real_project.runner.cached(job)
        assert earlier is not None, f"{job.label}: the build left no result in the cache"
        return job.label, earlier, real_project.runner._execute(job)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for label, a, b in pool.map(twice, jobs.values()):
            assert a.ok and b.ok, label
            assert a.stdout == b.stdout, label


# What a clean build may print: lessonkit's own lines and MkDocs' summary.
QUIET_LOG = re.compile(
    r"INFO    -  (lessonkit: .*|Cleaning site directory|Building documentation to directory: .*"
    r"|Documentation built in [0-9.]+ seconds)"
)


def test_the_build_log_holds_only_lessonkit_and_mkdocs_lines(built_site):
    """No dependency noise: jieba's dictionary lines, mkdocstrings' "Formatting signatures
    requires either Black or Ruff" (the API reference's signatures are shown as written)."""
    log = (built_site.parent / "build.log").read_text(encoding="utf-8").splitlines()
    assert [line for line in log if not QUIET_LOG.fullmatch(line)] == []
    assert any(line.startswith("INFO    -  Documentation built in ") for line in log)


def test_home_page_links_every_lesson_attachment_and_the_bundle(built_site):
    html = (built_site / "index.html").read_text()
    hrefs = set(re.findall(r'href="([^"#]*)', html))
    lessons = sorted(p.stem for p in (ROOT / "docs" / "lessons").glob("[0-9][0-9]-*.md"))
    assert len(lessons) == 14
    for stem in lessons:
        assert f"lessons/{stem}/" in hrefs, stem
    for page in (
        "repo-map",
        "theory",
        "design-review",
        "self-test",
        "call-sequence",
        "nested-traces",
        "mini-readme",
        "acceptance",
    ):
        assert f"attachments/{page}/" in hrefs, page
    assert "walkthrough/" in hrefs
    assert "downloads/autograd-resources.zip" in hrefs


def test_acceptance_record_counts_the_living_facts_and_meets_the_target(built_site):
    """At least 90 % of the snapshot values are generated from a recording or checked
    against one, every lesson shows a figure drawn from this build's runs (at least 13
    of the 14), and the acceptance page prints the counts the build computed."""
    acc = re.sub(
        r"\s+", " ", re.sub(r"<[^>]+>", " ", (built_site / "attachments" / "acceptance" / "index.html").read_text())
    )
    generated = int(re.search(r"快照中由记录生成的值 (\d+)", acc)[1])
    checked = int(re.search(r"快照中手写、已与记录比对的值 (\d+)", acc)[1])
    hand = int(re.search(r"快照中手写、未比对的值 (\d+)", acc)[1])
    share = float(re.search(r"生成或比对的比例 ([\d.]+) %", acc)[1])
    assert share == round(100 * (generated + checked) / (generated + checked + hand), 1)
    assert share >= 90.0
    lessons = sorted(
        p.parent.name for p in (built_site / "lessons").glob("*/index.html") if 'class="lk-figure"' in p.read_text()
    )
    assert len(lessons) >= 13, lessons
