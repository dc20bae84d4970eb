"""No module of lessonkit/ over 500 lines (tools/modsize.py, which `nox -s lint` runs)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import modsize  # noqa: E402


def _write(root: Path, rel: str, lines: int) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"x{n} = {n}\n" for n in range(lines)), encoding="utf-8")


def test_the_checkout_has_no_module_over_the_limit():
    assert modsize.problems(ROOT) == []


def test_a_module_over_the_limit_is_one_line_with_its_path_and_line_count(tmp_path):
    _write(tmp_path, "lessonkit/__init__.py", 3)
    _write(tmp_path, "lessonkit/stage/fits.py", 500)
    _write(tmp_path, "lessonkit/stage/long.py", 501)
    assert modsize.problems(tmp_path, exempt={}) == [
        "lessonkit/stage/long.py:501: 501 lines, over the limit of 500 for a module of lessonkit/ — "
        "split it by what its code does into modules with names that say so"
    ]


def test_an_exempt_module_may_be_long_until_it_is_not(tmp_path):
    _write(tmp_path, "lessonkit/box/boot.py", 900)
    _write(tmp_path, "lessonkit/box/short.py", 10)
    exempt = {"lessonkit/box/boot.py": "standalone", "lessonkit/box/short.py": "was long", "lessonkit/gone.py": "x"}
    assert modsize.problems(tmp_path, exempt=exempt) == [
        "lessonkit/box/short.py:10: 10 lines, within the limit of 500 — remove it from EXEMPT in tools/modsize.py",
        "tools/modsize.py: EXEMPT names lessonkit/gone.py, which does not exist — remove it",
    ]


def test_the_command_prints_each_problem_on_stderr_and_exits_1(tmp_path, monkeypatch, capsys):
    _write(tmp_path, "lessonkit/big.py", 600)
    monkeypatch.setattr(modsize, "ROOT", tmp_path)
    monkeypatch.setattr(modsize, "EXEMPT", {})
    assert modsize.main([]) == 1
    out, err = capsys.readouterr()
    assert (out, err) == (
        "",
        "lessonkit/big.py:600: 600 lines, over the limit of 500 for a module of lessonkit/ — "
        "split it by what its code does into modules with names that say so\n",
    )
    # the real command on this checkout: nothing to say
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "modsize.py")], capture_output=True, text=True)
    assert (run.returncode, run.stdout, run.stderr) == (0, "", "")
