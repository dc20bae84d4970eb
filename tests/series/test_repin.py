"""Repin: what every excerpt and experiment becomes under another autograd.

The 1.8.0 and 1.9.0 tests fetch the real sdists from the package index once and
keep them under the project cache (``.cache/repin/sdist``); they skip only when
the index cannot be reached. The facts they assert were read off the real diffs
against the pinned 1.9.1 tree:

* 1.8.0: ``core.py`` is identical (``backward_pass`` unchanged at L25-32);
  ``tracer.Box`` has the same text at L108-131 instead of L156-179 (moved);
  ``tracer.primitive`` lost the ufunc dispatch (changed); ``trace_primitives_map``
  does not exist anywhere (missing); ``tests/test_ufunc_dispatch.py`` is not in
  the sdist (missing file).
* 1.9.0: only ``numpy_vjps.py``, ``numpy_jvps.py``, ``pyproject.toml`` and a test
  differ: ``grad_np_sum`` lost ``**kwargs`` (changed, same lines);
  ``forward_grad_np_var`` is 3 lines higher (moved, L176-185 → L173-182);
  ``tracer.py`` and ``core.py`` are identical.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from support import COMMIT, block

from lessonkit import repin
from lessonkit.cli.main import main as cli
from lessonkit.errors import LessonError
from lessonkit.source.pin import load_pin, sha256_file

ROOT = Path(__file__).resolve().parents[2]
SHIFT = "# three comment lines\n# inserted at the top\n# shift every line of core.py by 3\n"


# ---------------------------------------------------------------- helpers


def _index_unreachable() -> str | None:
    url = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple/").rstrip("/") + "/autograd/"
    try:
        with urllib.request.urlopen(url, timeout=20) as r:
            r.read(1)
        return None
    except OSError as exc:
        return f"{url}: {exc}"


@pytest.fixture(scope="session")
def sdists(real_project):
    """fetch(version) -> the cached sdist under the project cache, or a skip when the index is unreachable."""

    def fetch(version: str) -> Path:
        try:
            return repin.fetch_sdist(version, real_project.cache, "autograd")[0]
        except LessonError as exc:
            reason = _index_unreachable()
            if reason:
                pytest.skip(f"the package index is unreachable ({reason}); cannot fetch autograd {version}: {exc}")
            raise

    return fetch


def _seed(site, archive: Path) -> None:
    """Give a throwaway project the already downloaded sdist (as its own cache would hold it)."""
    store = site.cache / "repin" / "sdist"
    store.mkdir(parents=True, exist_ok=True)
    for p in (archive, archive.with_name(archive.name + ".sha256")):
        shutil.copy(p, store / p.name)


def _report(site, monkeypatch, spec: str, commit: str | None = None) -> repin.RepinReport:
    monkeypatch.setenv("AUTOGRAD_SOURCE", str(site.pinned_root))
    project = site.project()
    with repin.acquire(spec, project.cache, project.pin, commit) as target:
        return repin.build_report(project, target)


def _lines_of(text: str, needle: str) -> int:
    return next(n for n, l in enumerate(text.split("\n"), 1) if needle in l)


def _git_repo(path: Path) -> str:
    git = ["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "tree"], check=True)
    subprocess.run(git + ["config", "uploadpack.allowAnySHA1InWant", "true"], check=True)
    return subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()


def _shifted(tmp_path: Path, pinned_root: Path, name: str = "shifted") -> Path:
    tree = tmp_path / name
    shutil.copytree(pinned_root, tree)
    core = tree / "autograd" / "core.py"
    core.write_text(SHIFT + core.read_text())
    return tree


def _env_without_source(site) -> dict[str, str]:
    return {k: v for k, v in site.env.items() if k != "AUTOGRAD_SOURCE"}


EXPERIMENTS = {
    "same.py": "from _provenance import announce\nannounce()\nfrom autograd import grad\n"
    "print(grad(lambda x: x * x)(3.0))\n",
    "has_map.py": "from _provenance import announce\nannounce()\nimport autograd.tracer as t\n"
    "print('trace_primitives_map' in vars(t))\n",
    "uses_map.py": "from _provenance import announce\nannounce()\n"
    "from autograd.tracer import trace_primitives_map\nprint(len(trace_primitives_map) > 0)\n",
}


def _experiments(site) -> str:
    text = ""
    for name, source in EXPERIMENTS.items():
        site.script(name, source)
        text += block("experiment", f"File: experiments/{name}", "Purpose: 比较输出") + "\n"
    return text


# ---------------------------------------------------------------- real releases from the package index


def test_release_1_8_0_classifications(site, monkeypatch, sdists):
    _seed(site, sdists("1.8.0"))
    c = "Commit: f53a217"
    site.page(
        "lesson.md",
        "# 第一课\n\n"
        + "\n".join(
            [
                block("real-source", "File: autograd/core.py", "Symbol: backward_pass", c, "Lines: 25-32"),
                block("real-source", "File: autograd/tracer.py", "Symbol: Box", c, "Lines: 156-179"),
                block("real-source", "File: autograd/tracer.py", "Symbol: primitive", c),
                block(
                    "real-source",
                    "File: autograd/tracer.py",
                    "Symbol: primitive",
                    c,
                    body="f_wrapped.fun = f_raw\nf_wrapped._is_autograd_primitive = True\n"
                    "trace_primitives_map[f_raw] = f_wrapped\nreturn f_wrapped",
                ),
                block("real-source", "File: autograd/tracer.py", "Symbol: trace_primitives_map", c),
                block(
                    "real-source",
                    "File: tests/test_ufunc_dispatch.py",
                    "Symbol: test_grad_through_dataarray_binary_ufunc",
                    c,
                ),
                block("teaching-simplification", "Based-on: autograd/tracer.py::Box", body="class Box: ..."),
            ]
        )
        + "\n"
        + _experiments(site),
    )
    report = _report(site, monkeypatch, "1.8.0")

    t = report.target
    assert (t.kind, t.version, t.commit) == ("sdist", "1.8.0", None)
    assert t.sdist["filename"] == "autograd-1.8.0.tar.gz" and t.sdist["root"] == "autograd-1.8.0"
    assert t.sdist["sha256"] == sha256_file(site.cache / "repin" / "sdist" / "autograd-1.8.0.tar.gz")

    src = lambda label: [i for i in report.items if i.kind == "real-source" and i.label == label]  # noqa: E731
    [bp] = src("autograd/core.py::backward_pass")
    assert (bp.status, bp.old, bp.new, bp.line) == ("unchanged", (25, 32), (25, 32), 3)
    [box] = src("autograd/tracer.py::Box")
    assert (box.status, box.old, box.new) == ("moved", (156, 179), (108, 131))
    assert box.detail == "L156-179 → L108-131 (a `Lines:` locator to rewrite)"
    prim, frag = src("autograd/tracer.py::primitive")
    assert prim.status == "changed" and (prim.old, prim.new) == ((43, 98), (36, 58))
    assert "-    def f_wrapped(*args, called_by_autograd_dispatcher=False, **kwargs):" in prim.diff
    assert "+    def f_wrapped(*args, **kwargs):" in prim.diff
    assert frag.status == "changed" and frag.old == (95, 98) and "no longer occur verbatim" in frag.detail
    assert "-    trace_primitives_map[f_raw] = f_wrapped" in frag.diff
    [gone] = src("autograd/tracer.py::trace_primitives_map")
    assert gone.status == "missing"
    assert gone.detail == "no symbol `trace_primitives_map` in autograd/tracer.py of the target"
    [nofile] = src("tests/test_ufunc_dispatch.py::test_grad_through_dataarray_binary_ufunc")
    assert nofile.status == "missing" and "no file `tests/test_ufunc_dispatch.py`" in nofile.detail
    based = [i for i in report.items if i.kind == "based-on"][0]
    assert (based.status, based.new) == ("moved", (108, 131))

    exps = {i.label: i for i in report.items if i.kind == "experiment"}
    assert exps["experiments/same.py"].status == "unchanged"
    assert exps["experiments/has_map.py"].status == "differs"
    assert "-True" in exps["experiments/has_map.py"].diff and "+False" in exps["experiments/has_map.py"].diff
    assert exps["experiments/uses_map.py"].status == "fails"
    assert report.exit_code == 1

    out = "\n".join(repin.summary_lines(report))
    assert "sha256 " + t.sdist["sha256"] in out and 'docs/lesson.md  "第一课" — revisit' in out
    html = repin.render_html(report)
    assert "Repin report: autograd 1.9.1 (f53a217) → autograd 1.8.0" in html and t.sdist["sha256"] in html


def test_release_1_9_0_by_command_line(site, sdists):
    _seed(site, sdists("1.9.0"))
    c = "Commit: f53a217"
    page = site.page(
        "l.md",
        "# 一课\n\n"
        + "\n".join(
            [
                block("real-source", "File: autograd/core.py", "Symbol: backward_pass", c),
                block("real-source", "File: autograd/tracer.py", "Symbol: Box", c),
                block("real-source", "File: autograd/tracer.py", "Symbol: primitive", c),
                block("real-source", "File: autograd/numpy/numpy_vjps.py", "Symbol: grad_np_sum", c, "Lines: 443-445"),
                block(
                    "real-source",
                    "File: autograd/numpy/numpy_jvps.py",
                    "Symbol: forward_grad_np_var",
                    c,
                    "Lines: 176-185",
                ),
            ]
        )
        + "\n"
        + _experiments(site),
    )
    text = page.read_text()
    html = site.root / "out" / "report.html"
    r = site.run("-m", "lessonkit", "repin", "1.9.0", "--html", str(html), "--diffs")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    out = r.stdout
    assert "sdist autograd-1.9.0.tar.gz  sha256 5352ea2940cc7cf8ffa97a53171ec1cc538b4d32bb9c9fbfda40940cef0e79a9" in out
    assert "commit: unknown (an sdist does not record its commit" in out
    assert "real source: 3 unchanged, 1 moved, 1 changed" in out
    assert "experiments: 3 unchanged" in out
    n = _lines_of(text, "Symbol: grad_np_sum") - 2  # the opening fence
    # `Lines` beside a Symbol selects lines of it: at the target they are looked for by their text
    assert (
        f":{n:<5} changed   real-source autograd/numpy/numpy_vjps.py::grad_np_sum — the quoted lines L443-445 "
        "no longer occur verbatim in `grad_np_sum` (now L443-445)"
    ) in out
    assert "-def grad_np_sum(ans, x, axis=None, keepdims=False, dtype=None, **kwargs):" in out  # --diffs
    assert "+def grad_np_sum(ans, x, axis=None, keepdims=False, dtype=None):" in out
    n = _lines_of(text, "Symbol: forward_grad_np_var") - 2
    assert (
        f":{n:<5} moved     real-source autograd/numpy/numpy_jvps.py::forward_grad_np_var — L176-185 → L173-182" in out
    )
    assert "repin: 1 block(s) and 0 experiment(s) need attention" in out
    assert html.is_file() and "grad_np_sum" in html.read_text()
    # --apply moves the pin; the changed block is one line for the author, and verify is green at 1.9.0
    r = site.run("-m", "lessonkit", "repin", "1.9.0", "--apply", "--commit", "1" * 40, "--html", str(html))
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stdout + r.stderr
    todo = r.stdout[r.stdout.index("for the author:") :].splitlines()
    assert todo[0] == f"for the author: 1 item(s) need an edit or a review at autograd 1.9.0 ({'1' * 7}):"
    assert todo[1].startswith(f"docs/l.md:{_lines_of(text, 'Symbol: grad_np_sum') - 2}: real-source ")
    assert "    +def grad_np_sum(ans, x, axis=None, keepdims=False, dtype=None):" in todo
    assert not any(l.startswith("verify at") for l in todo)  # `Lines` by number shows the new code at once
    assert load_pin(site.root / "sourcemap").version == "1.9.0"
    v = subprocess.run(
        [sys.executable, "-m", "lessonkit", "verify"],
        cwd=site.root,
        env=_env_without_source(site),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert v.returncode == 0, v.stdout + v.stderr
    assert "against autograd 1.9.0 (1111111, " in v.stdout


# ---------------------------------------------------------------- local trees (no network)


def _apply_a_shift(site, tmp_path, pinned_root):
    """Report, then apply, a tree where only core.py's lines moved; return (page, commit)."""
    tree = _shifted(tmp_path, pinned_root)
    head = _git_repo(tree)  # a checkout whose commit the maintainer names with --commit
    c = "Commit: f53a217"
    page = site.page(
        "a.md",
        "# 课\n\n"
        + "\n".join(
            [
                block("real-source", "File: autograd/core.py", "Symbol: backward_pass", c, "Lines: 25-32"),
                block(
                    "real-source",
                    "File: autograd/core.py",
                    "Symbol: backward_pass",
                    c,
                    "Lines: 30-31",
                    body="for parent, ingrad in zip(node.parents, ingrads):\n"
                    "    outgrads[parent] = add_outgrads(outgrads.get(parent), ingrad)",
                ),
                block("real-source", "File: autograd/core.py", "Symbol: make_vjp", c),
                block("real-source", "File: autograd/tracer.py", "Symbol: trace", c, "Lines: 13-21"),
                block("teaching-simplification", "Based-on: autograd/core.py::make_vjp", body="def make_vjp(): ..."),
                block("experiment", "File: experiments/same.py", "Purpose: 不变"),
            ]
        ),
    )
    site.script("same.py", EXPERIMENTS["same.py"])
    html = tmp_path / "r.html"
    r = site.run("-m", "lessonkit", "repin", str(tree), "--html", str(html))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "real source: 1 unchanged, 3 moved" in r.stdout and "based-on:    1 moved" in r.stdout
    assert "repin: nothing beyond moves (4 moved)" in r.stdout
    assert (site.root / "sourcemap" / "pin.toml").read_text() == (ROOT / "sourcemap" / "pin.toml").read_text()

    r = site.run("-m", "lessonkit", "repin", str(tree), "--apply", "--commit", head, "--html", str(html))
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"applied: pinned to autograd 1.9.1 ({head[:7]})" in r.stdout
    return page, head, tree


def test_apply_a_line_shift_rewrites_pin_locators_and_map(site, tmp_path, pinned_root):
    page, head, tree = _apply_a_shift(site, tmp_path, pinned_root)
    text = page.read_text()
    assert "Lines: 28-35" in text and "Lines: 33-34" in text and "Lines: 13-21" in text
    assert "Lines: 25-32" not in text and "f53a217" not in text
    assert text.count(f"Commit: {head[:7]}") == 4
    pin = load_pin(site.root / "sourcemap")
    assert (pin.commit, pin.version, pin.sdist_sha256) == (head, "1.9.1", "none")
    assert pin.manifest["autograd/core.py"] == sha256_file(tree / "autograd" / "core.py")
    assert ".git/HEAD" not in pin.manifest
    toml = (site.root / "sourcemap" / "pin.toml").read_text()
    assert "# commit: given with --commit; not checked against the tree" in toml
    assert '"lines": [\n    28,\n    35\n   ]' in (site.root / "sourcemap" / "excerpts.json").read_text()
    # afterwards verify, with the excerpt map, passes from the build cache alone
    v = subprocess.run(
        [sys.executable, "-m", "lessonkit", "verify"],
        cwd=site.root,
        env=_env_without_source(site),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert v.returncode == 0, v.stdout + v.stderr
    assert f"against autograd 1.9.1 ({head[:7]}, " in v.stdout and f"local checkout {tree}" in v.stdout


def test_applied_site_builds(site, tmp_path, pinned_root):
    page, head, _ = _apply_a_shift(site, tmp_path, pinned_root)
    b = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict"],
        cwd=site.root,
        env=_env_without_source(site),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert b.returncode == 0, b.stderr
    built = (site.root / "site" / "a" / "index.html").read_text()
    assert f"https://github.com/HIPS/autograd/blob/{head}/autograd/core.py#L28-L35" in built


def test_apply_needs_a_commit_and_moves_the_pin_past_a_change_with_a_line_for_the_author(site, tmp_path, pinned_root):
    tree = _shifted(tmp_path, pinned_root)
    page = site.page(
        "a.md",
        "# 课\n\n"
        + block("real-source", "File: autograd/core.py", "Symbol: backward_pass", "Commit: f53a217", "Lines: 25-32"),
    )
    text = page.read_text()
    html = str(tmp_path / "r.html")
    r = site.run("-m", "lessonkit", "repin", str(tree), "--apply", "--html", html)
    assert r.returncode == 1
    assert r.stderr.strip().count("\n") == 0 and "Traceback" not in r.stderr
    assert r.stderr.startswith("repin: --apply needs the commit of autograd 1.9.1")
    core = tree / "autograd" / "core.py"
    core.write_text(core.read_text().replace("outgrads.pop(node)", "outgrads.pop(node, None)"))
    r = site.run("-m", "lessonkit", "repin", str(tree), "--html", html)
    assert r.returncode == 1 and "+    g = outgrads.pop(node, None)" not in r.stdout  # diffs only with --diffs …
    assert "outgrads.pop(node, None)" in Path(html).read_text()  # … and always in the HTML
    assert page.read_text() == text
    r = site.run("-m", "lessonkit", "repin", str(tree), "--apply", "--commit", "a" * 40, "--html", html)
    assert r.returncode == 1 and "Traceback" not in r.stderr  # the pin moved; the block waits for the author
    todo = r.stdout[r.stdout.index("for the author:") :].splitlines()
    assert todo[0] == f"for the author: 1 item(s) need an edit or a review at autograd 1.9.1 ({'a' * 7}):"
    assert todo[1].startswith("docs/a.md:3: real-source autograd/core.py::backward_pass is changed at autograd 1.9.1")
    assert "    +        outgrad = outgrads.pop(node, None)" in todo  # the new text, for the author
    assert load_pin(site.root / "sourcemap").commit == "a" * 40
    assert page.read_text() == text.replace("Commit: f53a217", "Commit: aaaaaaa")


def test_identical_tree_keeps_the_pinned_commit(site, monkeypatch, tmp_path, pinned_root):
    tree = tmp_path / "same"
    shutil.copytree(pinned_root, tree)
    site.page(
        "a.md", "# 课\n\n" + block("real-source", "File: autograd/core.py", "Symbol: backward_pass", "Commit: f53a217")
    )
    report = _report(site, monkeypatch, str(tree))
    assert report.target.commit == COMMIT and "byte-identical" in report.target.commit_note
    assert [i.status for i in report.items] == ["unchanged"] and report.exit_code == 0
    assert report.prose == [] and not any(report.files.values())


def test_git_commit_target(site, monkeypatch, tmp_path, pinned_root):
    tree = _shifted(tmp_path, pinned_root, "remote")
    head = _git_repo(tree)
    site.page(
        "a.md",
        "# 课\n\n"
        + block("real-source", "File: autograd/core.py", "Symbol: backward_pass", "Commit: f53a217", "Lines: 25-32")
        + "\n版本 1.9.1，commit `f53a217`。\n",
    )
    monkeypatch.setenv("LESSONKIT_GIT_REMOTE", str(tree))
    report = _report(site, monkeypatch, head)
    t = report.target
    assert (t.kind, t.commit, t.version) == ("git", head, "1.9.1") and t.origin.startswith("git clone of")
    item = report.items[0]
    assert (item.status, item.old, item.new) == ("moved", (25, 32), (28, 35))
    assert report.files == {"changed": ["autograd/core.py"], "only-pin": [], "only-target": []}
    assert [(p, n) for p, n, _ in report.prose] == [("docs/a.md", 10)]  # the commit changes, the version does not


@pytest.mark.parametrize(
    "argv, message",
    [
        (["abc1234"], "repin: `abc1234` looks like an abbreviated commit id — give the full 40-digit id"),
        (["0" * 40], f"repin: `{'0' * 40}` is a commit id, but LESSONKIT_GIT_REMOTE is not set"),
        (["./no/such/tree"], "repin: `./no/such/tree` is not a directory"),
        (["not a target"], "repin: `not a target` is neither a released version, a 40-digit commit nor a directory"),
        ([".", "--commit", "f53a217"], "repin: `--commit f53a217` is not a full 40-digit commit id"),
        (["docs"], "repin: local checkout"),  # a directory that is not an autograd tree
    ],
)
def test_operator_errors_are_one_line(site, monkeypatch, capsys, argv, message):
    monkeypatch.setenv("AUTOGRAD_SOURCE", str(site.pinned_root))
    monkeypatch.delenv("LESSONKIT_GIT_REMOTE", raising=False)
    monkeypatch.chdir(site.root)
    assert cli(["--root", str(site.root), "repin", *argv]) == 1
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    "symbol, code",
    [
        ("gone", "missing-symbol"),  # no such definition
        ("f(9)", "missing-symbol"),  # no such top-level call
        ("g(1)", "missing-symbol"),  # no call of g at all
        ("twice", None),  # defined twice: it exists, but not as one definition ("changed" in a repin)
    ],
)
def test_repin_classifies_by_error_code_not_message_text(symbol, code):
    from lessonkit.source.pyindex import MISSING_SYMBOL, SourceFile

    text = b"def f(x):\n    return x\n\nf(1)\n\ndef twice():\n    pass\n\ndef twice():\n    pass\n"
    sf = SourceFile("pkg/m.py", text)
    with pytest.raises(LessonError) as info:
        sf.find(symbol)
    assert info.value.code == code
    assert (info.value.code == MISSING_SYMBOL) == (code == "missing-symbol")
    assert info.value.at("docs/x.md", 3).code == code  # locating an error keeps its code


# ---------------------------------------------------------------- the real-source selectors (Start-after, End-at, ...)


def test_release_1_8_0_selectors(site, monkeypatch, sdists):
    """Every selector against autograd 1.8.0: where the text only moved (tracer.Box, numpy_vjps'
    repeat_to_match_shape) the excerpt is "moved", whatever selects it (a start pattern too); where
    it changed (tracer.primitive without its docstring) "changed"; identical files "unchanged"."""
    _seed(site, sdists("1.8.0"))
    session = [
        block(
            "experiment", "Purpose: 会话一", "Session: s", body="from autograd import grad\ng = grad(lambda x: x * x)"
        ),
        block("experiment", "Purpose: 会话二", "Session: s", body="print(g(3.0))"),
    ]
    site.page(
        "sel.md",
        "# 选择\n\n"
        + "\n".join(
            [
                block("real-source", "File: autograd/tracer.py", "Lines: 162-165"),
                block("real-source", "File: autograd/tracer.py", "Start-at: class Box:", "End-before: __nonzero__ ="),
                block(
                    "real-source",
                    "File: autograd/tracer.py",
                    "Symbol: Box",
                    "Start-after: def __bool__",
                    "End-at: return bool(self._value)",
                ),
                block("real-source", "File: autograd/tracer.py", "Symbol: Box.__init__", "Emphasize: 163, 165"),
                block(
                    "real-source",
                    "File: autograd/numpy/numpy_vjps.py",
                    "Symbol: repeat_to_match_shape",
                    "Docstring: hide",
                ),
                block(
                    "real-source",
                    "File: autograd/tracer.py",
                    "Symbol: Box",
                    body="class Box:\n...\n    def __bool__(self):\n        return bool(self._value)\n...",
                ),
                block("real-source", "File: autograd/tracer.py", "Symbol: Box.__init__", "Dedent: none"),
                block("real-source", "File: autograd/tracer.py", "Symbol: primitive", "Docstring: hide"),
                block("real-source", "File: autograd/core.py", "Symbol: backward_pass", "Start-at: for node in"),
                block("real-source", "File: autograd/differential_operators.py", "Symbol: grad", "Docstring: hide"),
                *session,
            ]
        ),
    )
    report = _report(site, monkeypatch, "1.8.0")
    fences = [b.line for b in site.project().parse(site.root / "docs" / "sel.md").blocks]
    rows = [(i.line, i.status, i.old, i.new, i.detail, i.emphasize) for i in report.items if i.kind == "real-source"]
    assert [r[0] for r in rows] == fences[:10]
    assert [r[1:4] for r in rows] == [
        ("moved", (162, 165), (114, 117)),
        ("moved", (156, 168), (108, 120)),
        ("moved", (168, 168), (120, 120)),
        ("moved", (162, 165), (114, 117)),
        ("moved", (416, 427), (412, 423)),
        ("moved", (156, 168), (108, 120)),
        ("moved", (162, 165), (114, 117)),
        ("changed", (43, 98), (36, 58)),
        ("unchanged", (27, 32), (27, 32)),
        ("unchanged", (23, 36), (23, 36)),
    ]
    assert rows[0][4] == "L162-165 → L114-117 (a `Lines:` locator to rewrite)"
    assert rows[1][4] == "L156-168 → L108-120" and rows[2][4] == "L168 → L120"
    assert rows[3][4:] == ("L162-165 → L114-117 (`Emphasize:` to rewrite)", "115, 117")
    assert rows[4][4] == "L416-427 → L412-423 (runs L416, L419-427 → L412, L415-423)"
    assert rows[5][4] == "L156-168 → L108-120 (runs L156, L167-168 → L108, L119-120)"
    assert "-    is_ufunc = isinstance(f_raw, np.ufunc)" in "\n".join(
        next(i for i in report.items if i.line == fences[7]).diff
    )
    exps = [i for i in report.items if i.kind == "experiment"]
    assert [(i.line, i.status) for i in exps] == [(fences[10], "unchanged"), (fences[11], "unchanged")]


def test_apply_rewrites_lines_alone_and_emphasize(site, tmp_path, pinned_root):
    """A shift of core.py by 3 lines: `Lines:` alone and `Emphasize:` follow the text."""
    tree = _shifted(tmp_path, pinned_root)
    head = _git_repo(tree)
    page = site.page(
        "a.md",
        "# 课\n\n"
        + block("real-source", "File: autograd/core.py", "Lines: 25-27", "Emphasize: 26")
        + "\n"
        + block("real-source", "File: autograd/core.py", "Symbol: backward_pass", "Emphasize: 28, 30-31"),
    )
    html = tmp_path / "r.html"
    r = site.run("-m", "lessonkit", "repin", str(tree), "--apply", "--commit", head, "--html", str(html))
    assert r.returncode == 0, r.stdout + r.stderr
    text = page.read_text()
    assert "Lines: 28-30\nEmphasize: 29\n" in text and "Emphasize: 31, 33-34\n" in text
    # AUTOGRAD_SOURCE (kept in pin.toml's [provider]) names the old tree, as the apply's note says:
    # the build cache has the new one
    v = subprocess.run(
        [sys.executable, "-m", "lessonkit", "verify"],
        cwd=site.root,
        env=_env_without_source(site),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert v.returncode == 0, v.stdout + v.stderr
