"""The foundation contract: symbol forms, fragments, clear errors, the pin, experiments."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from support import COMMIT, block

from lessonkit.errors import LessonError
from lessonkit.kinds import KINDS
from lessonkit.pipeline.parse import parse_page
from lessonkit.source.pin import check_tree, load_pin
from lessonkit.source.providers import provide
from lessonkit.source.resolve import Tree, excerpt_of

ROOT = Path(__file__).resolve().parents[2]
LINE = re.compile(r"^docs/[\w/.-]+\.md:\d+: .+ — .+$")


def one(site, *header, body=None):
    """Resolve a single real-source block in a fresh page; return (excerpt, problems)."""
    page = site.page("p.md", "# t\n\n" + block("real-source", *header, body=body))
    project = site.project()
    old = os.environ.get("AUTOGRAD_SOURCE")
    os.environ["AUTOGRAD_SOURCE"] = str(site.pinned_root)
    try:
        parsed = project.parse(page)
        resolved, problems = project.resolve_page(parsed)
    finally:  # the next test (and the real site's build) sees the environment it was given
        if old is None:
            del os.environ["AUTOGRAD_SOURCE"]
        else:
            os.environ["AUTOGRAD_SOURCE"] = old
    return (resolved[0].excerpt if resolved else None), [str(p) for p in problems]


# ---------------------------------------------------------------- symbol forms


@pytest.mark.parametrize(
    "file, symbol, start, end, first",
    [
        ("autograd/core.py", "backward_pass", 25, 32, "def backward_pass(g, end_node):"),
        ("autograd/core.py", "VJPNode", 35, 49, "class VJPNode(Node):"),
        (
            "autograd/core.py",
            "VJPNode.__init__",
            38,
            45,
            "def __init__(self, value, fun, args, kwargs, parent_argnums, parents):",
        ),
        ("autograd/core.py", "primitive_vjps", 52, 52, "primitive_vjps = {}"),
        ("autograd/tracer.py", "Box.type_mappings", 157, 157, "type_mappings = {}"),
        ("autograd/differential_operators.py", "grad", 23, 36, "@unary_to_nary"),
        ("autograd/numpy/numpy_vjps.py", "defvjp(anp.multiply)", 79, 83, "defvjp("),
        (
            "autograd/numpy/numpy_vjps.py",
            "defvjp(anp.exp)",
            163,
            163,
            "defvjp(anp.exp, lambda ans, x: lambda g: ans * g)",
        ),
    ],
)
def test_symbol_forms_resolve_to_exact_ranges(site, file, symbol, start, end, first):
    ex, problems = one(site, f"File: {file}", f"Symbol: {symbol}", "Commit: f53a217")
    assert problems == []
    assert (ex.start, ex.end, ex.lines[0]) == (start, end, first)
    real = (site.pinned_root / file).read_text().splitlines()[start - 1 : end]
    assert [l.strip() for l in ex.lines] == [l.strip() for l in real]


def test_fragment_keeps_true_line_numbers(site):
    ex, problems = one(
        site,
        "File: autograd/core.py",
        "Symbol: backward_pass",
        "Commit: f53a217",
        body="""
        for parent, ingrad in zip(node.parents, ingrads):
            outgrads[parent] = add_outgrads(outgrads.get(parent), ingrad)
    """,
    )
    assert problems == []
    assert (ex.start, ex.end) == (30, 31)
    assert ex.lines == (
        "for parent, ingrad in zip(node.parents, ingrads):",
        "    outgrads[parent] = add_outgrads(outgrads.get(parent), ingrad)",
    )


def test_body_without_symbol_must_occur_once(site):
    ex, problems = one(
        site,
        "File: autograd/core.py",
        "Commit: " + COMMIT,
        body="""
        outgrads = {end_node: (g, False)}
    """,
    )
    assert problems == [] and (ex.start, ex.end) == (26, 26)
    _, problems = one(
        site, "File: autograd/core.py", "Commit: f53a217", body='argnums = kwargs.get("argnums", count())'
    )
    assert len(problems) == 1 and "occurs 2 times" in problems[0]


def test_one_character_change_in_a_fragment_fails_at_its_line(site):
    _, problems = one(
        site,
        "File: autograd/core.py",
        "Symbol: backward_pass",
        "Commit: f53a217",
        body="""
        for node in toposort(end_node):
            outgrad = outgrads.pop(nodes)
    """,
    )
    # page: line 1 "# t", 2 blank, 3 fence, 4-6 header, 7 blank, 8-9 body
    assert problems == [
        "docs/p.md:9: body is not verbatim: 'outgrad = outgrads.pop(nodes)' does not match the "
        "source — autograd/core.py (backward_pass, L25-32) line 28 reads "
        "'outgrad = outgrads.pop(node)'"
    ]


def test_fragment_outside_its_symbol(site):
    _, problems = one(
        site, "File: autograd/core.py", "Symbol: VJPNode", "Commit: f53a217", body="outgrads = {end_node: (g, False)}"
    )
    assert len(problems) == 1
    assert problems[0].startswith("docs/p.md:8: body is not inside `VJPNode` — it is at autograd/core.py L26, outside")


# ---------------------------------------------------------------- clear errors


@pytest.mark.parametrize(
    "header, expected",
    [
        (
            ["File: autograd/cor.py", "Symbol: x", "Commit: f53a217"],
            "docs/p.md:4: no file `autograd/cor.py` in the pinned autograd 1.9.1 tree — "
            "did you mean `autograd/core.py`",
        ),
        (
            ["File: autograd/core.py", "Symbol: backwards_pass", "Commit: f53a217"],
            "docs/p.md:5: no symbol `backwards_pass` in autograd/core.py — did you mean `backward_pass` (L25)",
        ),
        (
            ["File: autograd/core.py", "Symbol: backward_pass", "Commit: 1234567"],
            "docs/p.md:6: `Commit: 1234567` is not the pinned commit — this site is pinned to f53a217",
        ),
        (
            ["File: autograd/core.py", "Symbol: backward_pass", "Commit: f53a217", "Lines: 24-32"],
            "docs/p.md:7: `Lines: 24-32`: line 24 is outside `backward_pass` in autograd/core.py — "
            "`backward_pass` in autograd/core.py is L25-32",
        ),
        (
            ["File: autograd/numpy/numpy_vjps.py", "Symbol: defvjp(anp.multiplyy)", "Commit: f53a217"],
            "docs/p.md:5: no top-level call `defvjp(anp.multiplyy)` in autograd/numpy/numpy_vjps.py — candidates: "
            "defvjp(anp.multiply) (L79)",
        ),
        (
            ["File: ../autograd/core.py", "Symbol: grad", "Commit: f53a217"],
            "docs/p.md:4: `../autograd/core.py` has a `..` segment — paths may not leave the tree",
        ),
        (["File: /etc/passwd", "Commit: f53a217"], "docs/p.md:4: `/etc/passwd` is an absolute path"),
        (["File: /etc/passwd", "Symbol: x", "Commit: f53a217"], "docs/p.md:4: `/etc/passwd` is an absolute path"),
        (
            ["File: autograd", "Symbol: x", "Commit: f53a217"],
            "docs/p.md:4: `autograd` is a directory in the pinned autograd 1.9.1 tree",
        ),
    ],
)
def test_author_mistakes_give_one_located_line(site, header, expected):
    _, problems = one(site, *header)
    assert len(problems) == 1, problems
    assert problems[0].startswith(expected), problems[0]
    assert LINE.match(problems[0]) or problems[0].count(":") >= 2


def test_missing_purpose(site):
    site.page("e.md", "# e\n\n" + block("experiment", "File: experiments/x.py"))
    assert site.problems() == ["docs/e.md:3: experiment block without `Purpose` — add a `Purpose: …` header line"]


def test_ambiguous_selector_lists_candidates(tmp_path):
    (tmp_path / "m.py").write_text("defvjp(f, a)\nx = 1\ndefvjp(f, b)\ndefvjp(g, c)\n")
    tree = Tree(tmp_path, "pinned", label="t")
    b = parse_page(
        block("real-source", "File: m.py", "Symbol: defvjp(f)", "Commit: f53a217"), "d.md", kinds=KINDS
    ).blocks[0]
    with pytest.raises(LessonError) as err:
        excerpt_of(tree, b)
    assert str(err.value) == (
        "d.md:3: call selector `defvjp(f)` is ambiguous: 2 calls in m.py — candidates: "
        "L1, L3; quote the one you mean as a body under a Symbol-less block"
    )


def test_all_problems_of_a_page_in_one_run(site):
    site.page(
        "a.md",
        "# a\n\n"
        + block("real-source", "File: autograd/core.py", "Symbol: nope", "Commit: f53a217")
        + "\n"
        + block("real_source", "File: x")
        + "\n"
        + block("experiment", "Purpose: p"),
    )
    r = site.verify()
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert [l.split(":")[0:2] for l in lines[:-1]] == [["docs/a.md", "5"], ["docs/a.md", "9"], ["docs/a.md", "13"]]
    assert "Traceback" not in r.stderr + r.stdout


# ---------------------------------------------------------------- the pin


def test_tampered_pinned_file_fails_the_manifest_check(tmp_path, pinned_root):
    copy = tmp_path / "tree"
    shutil.copytree(pinned_root, copy)
    core = copy / "autograd" / "core.py"
    core.write_text(core.read_text().replace("outgrads.pop(node)", "outgrads.pop(node) "))
    pin = load_pin(ROOT / "sourcemap")
    with pytest.raises(LessonError) as err:
        check_tree(copy, pin)
    assert "content differs from the manifest: autograd/core.py" in str(err.value)


def test_extra_file_in_tree_is_refused(tmp_path, pinned_root):
    copy = tmp_path / "tree"
    shutil.copytree(pinned_root, copy)
    (copy / "autograd" / "evil.py").write_text("x = 1\n")
    with pytest.raises(LessonError, match="not in the manifest: autograd/evil.py"):
        check_tree(copy, load_pin(ROOT / "sourcemap"))


def test_git_provider_with_a_local_repository(tmp_path, pinned_root, monkeypatch):
    """A git remote at the pinned commit provides the tree (here a repository made in the test)."""
    repo = tmp_path / "remote"
    shutil.copytree(pinned_root, repo)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "pin"], check=True)
    subprocess.run(git + ["config", "uploadpack.allowAnySHA1InWant", "true"], check=True)
    head = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    pin = load_pin(ROOT / "sourcemap")
    pin = type(pin)(**{**pin.__dict__, "commit": head})
    monkeypatch.delenv("AUTOGRAD_SOURCE", raising=False)
    monkeypatch.setenv("LESSONKIT_GIT_REMOTE", str(repo))
    tree = provide(pin, tmp_path / "cache")
    assert tree.provider == f"git clone of {repo} at {head[:7]}"
    assert (tree.root / "autograd" / "core.py").read_bytes() == (pinned_root / "autograd" / "core.py").read_bytes()
    # the second time, the cache answers
    again = provide(pin, tmp_path / "cache")
    assert again.cached and again.provider == f"git clone of {repo} at {head[:7]}"


def test_sdist_provider_checks_hash_and_extracts(tmp_path, real_project, monkeypatch):
    archive = real_project.cache / "pin" / "autograd-1.9.1.tar.gz"
    if not archive.exists():
        pytest.skip("the pin came from a checkout, not the sdist")
    monkeypatch.delenv("AUTOGRAD_SOURCE", raising=False)
    monkeypatch.setenv("LESSONKIT_SDIST", str(archive))
    tree = provide(real_project.pin, tmp_path / "cache")
    assert tree.provider == "local archive LESSONKIT_SDIST (autograd-1.9.1.tar.gz)"
    assert not (tree.root / "PKG-INFO").exists()


# ---------------------------------------------------------------- experiments


def test_hanging_experiment_is_stopped_by_its_timeout(site):
    site.page("h.md", "# h\n\n" + block("experiment", "Purpose: hang", "Timeout: 2", body="while True:\n    pass"))
    r = site.build()
    assert r.returncode != 0
    assert "docs/h.md:3: experiment docs/h.md:3 did not finish within 2 s and was stopped" in r.stderr
    assert "Traceback" not in r.stderr


def test_failing_experiment_fails_the_build(site):
    site.script("boom.py", "print('before')\nraise SystemExit('the claim is wrong')\n")
    site.page("f.md", "# f\n\n" + block("experiment", "File: experiments/boom.py", "Purpose: 失败"))
    r = site.build()
    assert r.returncode != 0
    assert "docs/f.md:3: experiment experiments/boom.py failed with exit code 1: the claim is wrong" in r.stderr
    assert "Traceback" not in r.stderr


def test_second_build_reuses_cached_outputs(site):
    site.script("ok.py", "from _provenance import announce\nannounce()\nprint(2 * 3)\n")
    site.page("o.md", "# o\n\n" + block("experiment", "File: experiments/ok.py", "Purpose: 缓存"))
    first = site.build()
    assert first.returncode == 0, first.stderr
    assert "1 experiment(s): 1 run" in first.stderr
    html = (site.root / "site" / "o" / "index.html").read_text()
    assert "[autograd 1.9.1 · pinned tree]\n6" in html
    second = site.build()
    assert second.returncode == 0
    assert "1 experiment(s): 0 run (0.0 s CPU), 1 from cache" in second.stderr
    # a changed script runs again
    site.script("ok.py", "from _provenance import announce\nannounce()\nprint(2 * 4)\n")
    third = site.build()
    assert "1 experiment(s): 1 run" in third.stderr
    assert "[autograd 1.9.1 · pinned tree]\n8" in (site.root / "site" / "o" / "index.html").read_text()


def test_built_page_shows_real_lines_permalink_and_badge(site):
    site.page(
        "r.md", "# r\n\n" + block("real-source", "File: autograd/core.py", "Symbol: backward_pass", "Commit: f53a217")
    )
    r = site.build()
    assert r.returncode == 0, r.stderr
    html = (site.root / "site" / "r" / "index.html").read_text()
    assert f'href="https://github.com/HIPS/autograd/blob/{COMMIT}/autograd/core.py#L25-L32"' in html
    assert '<a tabindex="-1" href="#src-backward_pass-L25">25</a>' in html
    assert '<a tabindex="-1" href="#src-backward_pass-L32">32</a>' in html
    assert "REAL SOURCE" in html and 'id="src-backward_pass"' in html


def test_a_commit_line_of_a_series_pinned_to_a_release_archive_names_the_archives_sha256():
    """A release archive records no commit: the pin's id is its sha256, and the problem says so
    instead of calling that a commit."""
    from lessonkit.source.resolve import check_commit

    b = parse_page(block("real-source", "File: m.py", "Symbol: f", "Commit: 1234567"), "d.md", kinds=KINDS).blocks[0]
    sha = "9667a038e9d6ecba37995e26cb2f59ec6420b6ad"
    with pytest.raises(LessonError) as err:
        check_commit(b, sha, known=False)
    assert str(err.value) == (
        "d.md:4: `Commit: 1234567` is not the pinned tree — the pinned release archive records no commit; "
        "its sha256 starts 9667a03 (write that, or remove the line)"
    )
    ok = parse_page(block("real-source", "File: m.py", "Symbol: f", "Commit: 9667A03"), "d.md", kinds=KINDS).blocks[0]
    check_commit(ok, sha, known=False)  # a prefix, in either case: no problem
