"""The authoring guide cannot go stale: its examples are live blocks, and following
it literally gives a lesson that builds and verifies the first time."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lessonkit.kinds import KINDS
from lessonkit.pipeline.parse import parse_page

pytestmark = pytest.mark.warm_cache  # the builds' subject is not the cache: start from a warm one

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "authoring.md"
EXAMPLE = re.compile(r"^````markdown\n(.*?)\n````\n\n(.*?)(?=\n\n|\Z)", re.S | re.M)


def examples() -> list[tuple[str, str]]:
    text = GUIDE.read_text(encoding="utf-8")
    out = []
    for m in re.finditer(r"^````markdown\n(.*?)\n````\n", text, re.S | re.M):
        shown = m.group(1)
        rest = text[m.end() :].lstrip("\n")
        out.append((shown, rest[: len(shown)]))
    return out


def test_every_example_is_followed_by_the_same_live_block():
    pairs = examples()
    assert len(pairs) >= 9
    for shown, live in pairs:
        assert live == shown


def test_guide_covers_every_form():
    blocks = parse_page(GUIDE.read_text(encoding="utf-8"), "docs/authoring.md", kinds=KINDS).blocks
    symbols = {b.get("Symbol") for b in blocks if b.kind == "real-source"}
    assert {"backward_pass", "Box.__init__", "primitive_vjps", "defvjp(anp.multiply)"} <= symbols
    assert any(b.kind == "real-source" and b.body and b.get("Symbol") for b in blocks)  # fragment
    assert any(b.kind == "real-source" and b.body and not b.get("Symbol") for b in blocks)  # body only
    assert any(b.get("Lines") for b in blocks)
    assert any(b.get("Based-on") for b in blocks)
    assert any(b.kind == "experiment" and b.get("Timeout") for b in blocks)
    assert any(b.kind == "experiment" and b.body and not b.get("File") for b in blocks)  # inline
    # every field of real-source and experiment has a live example
    from lessonkit.kinds import experiment, real_source

    for kind in (real_source.KIND, experiment.KIND):
        used = {k for b in blocks if b.kind == kind.name for k in b.fields}
        assert set(kind.fields) <= used, f"{kind.name}: no live example of {set(kind.fields) - used}"
    assert any(b.kind == "real-source" and b.body and any(l.strip() in ("...", "…") for l in b.body) for b in blocks)
    assert any(b.kind == "real-source" and "Commit" not in b.fields for b in blocks)
    assert len({b.session for b in blocks if b.session}) == 1 and sum(1 for b in blocks if b.session) == 3


def test_a_lesson_written_from_the_guide_builds_and_verifies_first_time(site):
    body = "\n\n".join(shown for shown, _ in examples())
    for script in sorted(set(re.findall(r"^Experiment: (experiments/\w+\.py)$", body, re.M))):  # what they draw from
        shutil.copy(ROOT / script, site.root / script)
    # the guide's Recall example recalls make_vjp, which the course shows in full earlier
    earlier = "```real-source\nFile: autograd/core.py\nSymbol: make_vjp\n```\n"
    site.page("lessons/14-earlier.md", "# 14 · 前一课\n\n" + earlier)
    site.page("lessons/15-from-guide.md", "# 15 · 照着指南写的一课\n\n" + body + "\n")
    v = site.verify()
    assert v.returncode == 0, v.stderr
    b = site.build()
    assert b.returncode == 0, b.stderr
    html = (site.root / "site" / "lessons" / "15-from-guide" / "index.html").read_text()
    blocks = parse_page(body, "docs/lessons/15-from-guide.md", kinds=KINDS).blocks
    kinds = [b.kind for b in blocks]
    assert kinds.count("real-source") == 17 and kinds.count("experiment") == 6
    assert html.count("lk-block lk-real-source") == 17 and html.count("lk-block lk-experiment") == 6
    assert "grad = 6.0" in html and "d2f(1.0) = 6.0" in html and "⋯ 省略 3 行 ⋯" in html


def test_error_table_quotes_real_messages():
    text = GUIDE.read_text(encoding="utf-8")
    table = text[text.index("## 常见错误与修正") : text.index("## 发布")]
    code = "".join(p.read_text() for p in sorted((ROOT / "lessonkit").rglob("*.py")))
    rows = re.findall(r"^\| `` (.+?) `` \|", table, re.M)
    assert len(rows) >= 20
    for row in rows:
        pieces = [p.strip() for p in re.split(r"`|…| — |/", row) if len(p.strip()) >= 8]
        # a piece such as "real-source block without" is built from "{kind} block without"
        plain = re.sub(r"\{[^}]*\}|\d+", "", code)
        found = [
            p
            for p in pieces
            if p in code or p.split(" ", 1)[-1] in code or re.sub(r"\d+", "", p).split(" L")[0] in plain
        ]
        assert found, row


def test_nox_new_scaffolds_a_lesson_that_builds_and_verifies(tmp_path):
    proj = tmp_path / "proj"
    parts = ("docs", "experiments", "mini-autograd", "sourcemap", "hooks", "templates", "overrides", "lessonkit_ext")
    for name in parts:
        shutil.copytree(ROOT / name, proj / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "mkdocs.yml", proj / "mkdocs.yml")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "LESSONKIT_CACHE": str(ROOT / ".cache")}
    r = subprocess.run(
        [sys.executable, "-m", "lessonkit", "new", "15", "新的一课", "new-topic"],
        cwd=proj,
        env=env,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert "created docs/lessons/15-new-topic.md" in r.stdout
    assert "- lessons/15-new-topic.md" in (proj / "mkdocs.yml").read_text()
    v = subprocess.run([sys.executable, "-m", "lessonkit", "verify"], cwd=proj, env=env, capture_output=True, text=True)
    assert v.returncode == 0, v.stderr
    b = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict"],
        cwd=proj,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert b.returncode == 0, b.stderr[-3000:]
    assert "grad(x*x)(3.0) = 6.0" in (proj / "site" / "lessons" / "15-new-topic" / "index.html").read_text()


def test_a_broken_link_in_the_written_site_fails_the_build_located(site):
    """The link check reads the pages as MkDocs writes them (in another process where a core is
    spare): a link MkDocs does not check itself (raw HTML) still fails `mkdocs build`, reported at
    the source line that wrote it. A nav entry for a page that does not exist breaks a link on
    every page: one line, at the line of mkdocs.yml that names it, not one per page."""
    site.page("a.md", '# a\n\n<a href="../nowhere/">哪里也不是</a> <a href="#nothing">无</a>\n')
    site.page("b.md", "# b\n")
    config = site.root / "mkdocs.yml"
    config.write_text(config.read_text() + "nav:\n  - index.md\n  - a.md\n  - b.md\n  - gone.md\n")
    b = site.build()
    assert b.returncode != 0
    ours = [ln for ln in b.stderr.splitlines() if ln.startswith("ERROR")]
    assert ours == [
        "ERROR   -  mkdocs.yml:25: broken link: /gone.md (on 46 pages) — link to a page or file the site has (a "
        "page's .md path, relative to the page)",
        "ERROR   -  docs/a.md:3: broken link: ../nowhere/ — link to a page or file the site has (a page's .md "
        "path, relative to the page)",
        "ERROR   -  docs/a.md:3: broken anchor: #nothing — link to a heading or block anchor the target page has",
    ], b.stderr
    assert "Traceback" not in b.stderr


def test_the_prose_reference_map_ignores_moved_prose_and_says_what_changed(site):
    """sourcemap/prose-refs.json records what each `[[line:]]` names and the pinned lines it shows,
    not where it stands on its page: prose written above a reference needs no map update. A
    reference that names other lines is stale, with the recorded and the current lines."""
    ref = '[[line: core.py::backward_pass "outgrads = {end_node: (g, False)}"]]'
    page = site.page("a.md", f"# a\n\n见 {ref}。\n")
    r = site.run("-m", "lessonkit", "verify", "--update-map")
    assert r.returncode == 0, r.stderr
    refs = json.loads((site.root / "sourcemap" / "prose-refs.json").read_text(encoding="utf-8"))["refs"]
    assert refs == [
        {
            "page": "docs/a.md",
            "ref": 1,
            "argument": ref[8:-2],
            "file": "autograd/core.py",
            "symbol": "backward_pass",
            "lines": [26, 26],
            "text": ["    outgrads = {end_node: (g, False)}"],
        }
    ]
    page.write_text(f"# a\n\n一段新的文字。\n\n另一段。\n\n见 {ref}。\n", encoding="utf-8")
    r = site.run("-m", "lessonkit", "verify")
    assert r.returncode == 0, r.stderr
    moved = '[[line: core.py::backward_pass "for node in toposort(end_node):"]]'
    page.write_text(f"# a\n\n见 {moved}。\n", encoding="utf-8")
    r = site.run("-m", "lessonkit", "verify")
    assert r.returncode == 1
    assert [line for line in r.stderr.splitlines() if line.startswith("docs/")] == [
        "docs/a.md:3: the prose reference map is stale (recorded "
        '[[line: core.py::backward_pass "outgrads = {end_node: (g, False)}"]], now '
        '[[line: core.py::backward_pass "for node in toposort(end_node):"]]) — run `lessonkit verify '
        "--update-map` to record the new state"
    ]
