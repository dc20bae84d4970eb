"""The exercises' checks are real.

For every stage N of mini-autograd/exercises/:

* Mini itself (`MINI_EXERCISE_TARGET=reference`) passes every check of every stage;
* the skeleton `stage_N.py` as shipped fails every check of `test_stage_N.py`, each one at a
  `raise NotImplementedError("练习 N：…")` spot of that stage;
* the skeleton completed with the code the next stage starts from (`stage_{N+1}.py`, and Mini
  for the last stage) in place of its spots passes every check: the given code and the checks
  agree, and the solution the lesson shows is the one the reader is asked to write.

Each run is one pytest subprocess over all stages (about a second each).
"""

import ast
import importlib.util
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

EXERCISES = Path(__file__).resolve().parent.parent / "exercises"
MINI = EXERCISES.parent / "mini_autograd.py"
STAGES = sorted(int(m.group(1)) for p in EXERCISES.iterdir() if (m := re.fullmatch(r"stage_(\d+)\.py", p.name)))
HIPS = importlib.util.find_spec("autograd") is not None


def units(source: str) -> dict:
    """Top-level functions and the methods of top-level classes: {name: ast node}."""
    out = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef):
            out[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    out[f"{node.name}.{item.name}"] = item
    return out


def spot_stages(node) -> set:
    """The N of every `raise NotImplementedError("练习 N：…")` inside node."""
    found = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Raise) and isinstance(sub.exc, ast.Call) and sub.exc.args:
            func, arg = sub.exc.func, sub.exc.args[0]
            if getattr(func, "id", None) == "NotImplementedError" and isinstance(arg, ast.Constant):
                m = re.match(r"练习 (\d+)：", str(arg.value))
                if m:
                    found.add(int(m.group(1)))
    return found


def spots(source: str) -> dict:
    """{unit name: the stages its spots name} for every unit with a spot."""
    return {name: s for name, node in units(source).items() if (s := spot_stages(node))}


def lines_of(source: str, node) -> tuple:
    start = min([node.lineno] + [d.lineno for d in node.decorator_list])
    return start, node.end_lineno


def completed(stage: int) -> str:
    """stage_N.py with each spot replaced by the same unit of the code the next stage starts from."""
    source = (EXERCISES / f"stage_{stage}.py").read_text(encoding="utf-8")
    nxt = EXERCISES / f"stage_{stage + 1}.py"
    solution = (nxt if nxt.is_file() else MINI).read_text(encoding="utf-8")
    theirs = units(solution)
    lines = source.split("\n")
    mine = units(source)
    for name in sorted(spots(source), key=lambda n: -mine[n].lineno):  # bottom up: line numbers hold
        assert name in theirs and not spot_stages(theirs[name]), f"{name} of stage {stage} has no solution"
        a, b = lines_of(source, mine[name])
        c, d = lines_of(solution, theirs[name])
        lines[a - 1 : b] = solution.split("\n")[c - 1 : d]
    return "\n".join(lines)


def run_checks(tmp_path: Path, target: str | None) -> dict:
    """Run every stage's checks in a subprocess: {(stage, test): (outcome, message)}."""
    report = tmp_path / "report.xml"
    env = {k: v for k, v in os.environ.items() if k != "MINI_EXERCISE_TARGET"}
    if target is not None:
        env["MINI_EXERCISE_TARGET"] = target
    files = [str(EXERCISES / f"test_stage_{n}.py") for n in STAGES]
    r = subprocess.run(
        [sys.executable, "-B", "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}", *files],
        cwd=EXERCISES,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert report.is_file(), r.stdout[-2000:] + r.stderr[-2000:]
    out = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        stage = int(re.search(r"test_stage_(\d+)$", case.get("classname")).group(1))
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            child = case.find(tag)
            if child is not None:
                outcome, message = tag, (child.get("message") or "") + "\n" + (child.text or "")
                break
        out[(stage, case.get("name"))] = (outcome, message)
    assert out, r.stdout[-2000:]
    return out


def test_every_stage_has_its_checks_and_its_spots():
    assert STAGES == list(range(1, len(STAGES) + 1)) and len(STAGES) >= 4
    for n in STAGES:
        assert (EXERCISES / f"test_stage_{n}.py").is_file()
        found = spots((EXERCISES / f"stage_{n}.py").read_text(encoding="utf-8"))
        assert found, f"stage_{n}.py has no spot to fill in"
        assert all(s == {n} for s in found.values()), (n, found)
    assert not spots(MINI.read_text(encoding="utf-8"))


def test_mini_passes_every_check(tmp_path):
    results = run_checks(tmp_path, "reference")
    assert {stage for stage, _ in results} == set(STAGES)
    bad = {k: v for k, v in results.items() if v[0] != "passed" and not (v[0] == "skipped" and not HIPS)}
    assert not bad, bad


def test_each_skeleton_fails_every_check_of_its_stage(tmp_path):
    results = run_checks(tmp_path, None)
    for (stage, test), (outcome, message) in results.items():
        if outcome == "skipped" and not HIPS:
            continue
        assert outcome == "failure", (stage, test, outcome, message[-500:])
        assert "NotImplementedError" in message and f"练习 {stage}：" in message, (stage, test, message[-500:])


def test_each_skeleton_completed_with_the_next_stage_passes(tmp_path):
    folder = tmp_path / "completed"
    folder.mkdir()
    for n in STAGES:
        text = completed(n)
        assert not spots(text)
        (folder / f"stage_{n}.py").write_text(text, encoding="utf-8")
    results = run_checks(tmp_path, str(folder))
    bad = {k: v for k, v in results.items() if v[0] != "passed" and not (v[0] == "skipped" and not HIPS)}
    assert not bad, bad

