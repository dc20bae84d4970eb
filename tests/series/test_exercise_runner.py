"""The checks an `exercise` block runs in the reader's browser (lessonkit/assets/exercise/lkcheck.py,
standard library only, run there by Pyodide) give the outcome real pytest gives, test by test.

For every stage of mini-autograd/exercises/, both run in CPython on the same copied tree, with the
stage's file as the reader may have it: as shipped (every check fails), Mini itself in its place
(every check passes), and with exactly one unfinished function completed (some pass, some fail), a
syntax error (every check errors). HIPS autograd is not in the browser: there, and in the runs
that model it here, the checks that compare with it are skipped, by both.
"""

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXERCISES = ROOT / "mini-autograd" / "exercises"
MINI = ROOT / "mini-autograd" / "mini_autograd.py"
LKCHECK = ROOT / "lessonkit" / "assets" / "exercise" / "lkcheck.py"
STAGES = sorted(int(m[1]) for p in EXERCISES.iterdir() if (m := re.fullmatch(r"stage_(\d+)\.py", p.name)))


def _units(source: str) -> dict:
    out = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef):
            out[node.name] = node
        elif isinstance(node, ast.ClassDef):
            out.update({f"{node.name}.{n.name}": n for n in node.body if isinstance(n, ast.FunctionDef)})
    return out


def _has_spot(node) -> bool:
    return any(
        isinstance(s, ast.Raise) and "练习" in ast.unparse(s) and "NotImplementedError" in ast.unparse(s)
        for s in ast.walk(node)
    )


# One unfinished function per stage, completed alone, and the checks that then pass (the others fail).
FIXES = {
    1: ("primitive", {"test_plain_floats_are_not_recorded"}),
    2: ("toposort", {"test_toposort_children_before_parents_each_once"}),
    3: ("add_outgrads", "every check that runs"),
    4: ("find_top_boxes", {"test_find_top_boxes_picks_the_highest_trace"}),
    5: ("make_jvp", {"test_an_output_without_the_input_has_tangent_zero"}),
    6: ("unbroadcast", {"test_unbroadcast_sums_what_broadcasting_spread"}),
}


def one_function_fixed(stage: int, name: str) -> str:
    """stage_N.py with its unfinished unit ``name`` replaced by the same unit of the code the next
    stage starts from (Mini for the last stage)."""
    source = (EXERCISES / f"stage_{stage}.py").read_text(encoding="utf-8")
    nxt = EXERCISES / f"stage_{stage + 1}.py"
    solution = (nxt if nxt.is_file() else MINI).read_text(encoding="utf-8")
    mine, theirs = _units(source), _units(solution)
    assert _has_spot(mine[name]) and not _has_spot(theirs[name]), (stage, name)
    lines, sol = source.split("\n"), solution.split("\n")
    a, b = mine[name].lineno, mine[name].end_lineno
    c, d = theirs[name].lineno, theirs[name].end_lineno
    lines[a - 1 : b] = sol[c - 1 : d]
    return "\n".join(lines)


def _tree(tmp: Path, files: dict[int, str]) -> Path:
    """A copy of the exercises as the browser holds them: the stage files replaced by ``files``."""
    root = tmp / "tree"
    if root.exists():
        shutil.rmtree(root)
    ex = root / "mini-autograd" / "exercises"
    ex.mkdir(parents=True)
    shutil.copy(MINI, root / "mini-autograd" / "mini_autograd.py")
    for p in EXERCISES.iterdir():
        if p.is_file() and p.suffix == ".py":
            shutil.copy(p, ex / p.name)
    for n, text in files.items():
        (ex / f"stage_{n}.py").write_text(text, encoding="utf-8")
    return root


def _env(tmp: Path, hips: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("MINI_EXERCISE_TARGET", "PYTHONPATH")}
    if not hips:  # as in the browser: `import autograd` fails
        block = tmp / "no-hips" / "autograd"
        block.mkdir(parents=True, exist_ok=True)
        (block / "__init__.py").write_text(
            "raise ModuleNotFoundError(\"No module named 'autograd'\", name='autograd')\n"
        )
        env["PYTHONPATH"] = str(tmp / "no-hips")
    return env


def real_pytest(tmp: Path, root: Path, env: dict) -> dict:
    """{(stage, test id): (outcome, first line of the message)} from pytest's own report."""
    report = tmp / "report.xml"
    files = [str(root / "mini-autograd" / "exercises" / f"test_stage_{n}.py") for n in STAGES]
    r = subprocess.run(
        [
            sys.executable,
            "-B",
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--rootdir={root}",
            f"--junitxml={report}",
            *files,
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert report.is_file(), r.stdout[-2000:] + r.stderr[-2000:]
    out = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        stage = int(re.search(r"test_stage_(\d+)$", case.get("classname"))[1])
        outcome, message = "passed", ""
        for tag, name in (("failure", "failed"), ("error", "error"), ("skipped", "skipped")):
            child = case.find(tag)
            if child is not None:
                outcome, message = name, (child.get("message") or "").split("\n")[0]
                break
        out[(stage, case.get("name"))] = (outcome, message)
    return out


def lkcheck(root: Path, env: dict) -> dict:
    out = {}
    for n in STAGES:
        test = root / "mini-autograd" / "exercises" / f"test_stage_{n}.py"
        r = subprocess.run(
            [sys.executable, "-B", str(LKCHECK), str(test), str(root)],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )
        assert r.returncode == 0, r.stderr[-2000:]
        for row in json.loads(r.stdout):
            out[(n, row["name"])] = (row["outcome"], row["message"].split("\n")[0])
    return out


def same_report(tmp: Path, files: dict[int, str], hips: bool) -> dict:
    """Both runners on one tree: the same tests, the same outcome for each; the same message where
    pytest does not rewrite it (a test that raised an exception other than a failed `assert`; pytest
    words a fixture's error its own way). Returns the outcomes."""
    root = _tree(tmp, files)
    env = _env(tmp, hips)
    theirs, ours = real_pytest(tmp, root, env), lkcheck(root, env)
    assert sorted(ours) == sorted(theirs)
    assert {k: v[0] for k, v in ours.items()} == {k: v[0] for k, v in theirs.items()}
    for key, (outcome, message) in theirs.items():
        if outcome == "failed" and not message.startswith(("assert", "AssertionError", "Failed")):
            assert ours[key][1] == message, key
    return {k: v[0] for k, v in ours.items()}


def shipped() -> dict[int, str]:
    return {n: (EXERCISES / f"stage_{n}.py").read_text(encoding="utf-8") for n in STAGES}


def test_the_stages_as_shipped_fail_every_check_as_in_pytest(tmp_path):
    outcomes = same_report(tmp_path, shipped(), hips=False)
    assert set(outcomes.values()) == {"failed", "skipped"}
    assert len(outcomes) == 85 and {s for s, _ in outcomes} == set(STAGES)  # the six stages: 70 + 15 checks


def test_mini_in_place_of_every_stage_passes_every_check_as_in_pytest(tmp_path):
    reference = MINI.read_text(encoding="utf-8")
    outcomes = same_report(tmp_path, {n: reference for n in STAGES}, hips=False)
    assert set(outcomes.values()) == {"passed", "skipped"}
    if __import__("importlib").util.find_spec("autograd") is not None:  # the HIPS comparisons run too
        assert set(same_report(tmp_path, {n: reference for n in STAGES}, hips=True).values()) == {"passed"}


def test_one_function_fixed_passes_exactly_its_checks_as_in_pytest(tmp_path):
    files = {n: one_function_fixed(n, FIXES[n][0]) for n in FIXES}
    outcomes = same_report(tmp_path, files, hips=False)
    for n, (name, expected) in FIXES.items():
        passed = {t for (s, t), o in outcomes.items() if s == n and o == "passed"}
        ran = {t for (s, t), o in outcomes.items() if s == n and o != "skipped"}
        assert passed == (ran if expected == "every check that runs" else expected), (n, name)
        assert passed and all(outcomes[(n, t)] == "failed" for t in ran - passed)


def test_a_syntax_error_errors_every_check_as_in_pytest(tmp_path):
    files = shipped()
    files[1] = files[1].replace("class Box:", "class Box(:", 1)
    outcomes = same_report(tmp_path, files, hips=False)
    assert {o for (s, _), o in outcomes.items() if s == 1} == {"error"}  # the fixture cannot load the file


@pytest.mark.parametrize("fixture_kind", ["plain", "generator"])
def test_fixtures_and_monkeypatch_are_undone_after_each_test(tmp_path, fixture_kind):
    """A module of its own: a generator fixture is torn down, monkeypatch undone, parametrize ids named."""
    folder = tmp_path / "t"
    folder.mkdir()
    body = "    yield 5\n    log.append('down')\n" if fixture_kind == "generator" else "    return 5\n"
    (folder / "conftest.py").write_text(f"import pytest\nlog = []\n\n@pytest.fixture\ndef five():\n{body}")
    (folder / "test_m.py").write_text(
        "import math\nimport pytest\nimport conftest\n\n"
        "def test_patch(monkeypatch, five):\n"
        "    monkeypatch.setattr(math, 'pi', 3)\n    assert math.pi == 3 and five == 5\n\n"
        "def test_after():\n    assert math.pi != 3\n\n"
        "@pytest.mark.parametrize('a,b', [(1, 2), (2, 2)])\ndef test_pair(a, b):\n    assert a == b\n\n"
        "def test_raises():\n    with pytest.raises(ValueError, match='x+'):\n        raise ValueError('axxb')\n\n"
        "def test_approx():\n    assert 0.1 + 0.2 == pytest.approx(0.3) and 1.0 != pytest.approx(1.1, abs=0.05)\n"
    )
    env = _env(tmp_path, True)
    r = subprocess.run(
        [sys.executable, "-B", str(LKCHECK), str(folder / "test_m.py"), str(folder)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=folder,
    )
    rows = {row["name"]: (row["outcome"], row["message"]) for row in json.loads(r.stdout)}
    assert rows == {
        "test_patch": ("passed", ""),
        "test_after": ("passed", ""),
        "test_pair[1-2]": ("failed", "assert a == b"),
        "test_pair[2-2]": ("passed", ""),
        "test_raises": ("passed", ""),
        "test_approx": ("passed", ""),
    }
