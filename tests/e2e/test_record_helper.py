"""lessonkit's record helper, ``lessonkit_record``: standard library only, in every experiment's
box (and key), in the bundle next to the scripts that import it, and the base of this series'
``experiments/_record.py``."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import zipfile

import pytest
from support import ROOT

from lessonkit.attachments import script_job
from lessonkit.run import jobs, runner
from lessonkit.run.runner import RECORD_HELPER

pytestmark = pytest.mark.warm_cache  # the builds' subject is not the cache: start from a warm one

REC = (
    "from lessonkit_record import record\n\n"
    "record.set('answer', 6 * 7)\nrecord.append('rows', {'n': 1})\nprint('done')\n"
)


def _standalone(code: str, tmp_path, **env) -> subprocess.CompletedProcess:
    """``code`` run by hand, the helper on the path (as the bundle has it next to the scripts)."""
    return subprocess.run(
        [sys.executable, "-B", "-c", code],
        cwd=tmp_path,
        env={"PATH": os.environ.get("PATH", "/usr/bin"), "PYTHONPATH": str(RECORD_HELPER.parent), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_helper_is_standard_library_only_and_reads_what_the_runner_reads():
    text = RECORD_HELPER.read_text(encoding="utf-8")
    imported = set(re.findall(r"^(?:import|from) ([\w.]+)", text, re.M))
    assert imported == {"__future__", "atexit", "json", "math", "os", "re", "sys"}
    namespace: dict = {}
    exec(compile(text, str(RECORD_HELPER), "exec"), namespace)  # noqa: S102 (lessonkit's own file)
    assert namespace["LIMIT"] == jobs.RECORD_LIMIT and namespace["ENV"] == "LESSONKIT_RECORD"


def test_the_helper_names_no_series_of_its_own():
    """Every series' bundle ships the helper beside its scripts: it speaks of no one series (an
    author pass found a tabulate series' bundle telling its readers about autograd's nodes)."""
    text = RECORD_HELPER.read_text(encoding="utf-8").lower()
    words = ("autograd", "hips", "micrograd", "experiments/_record.py", "this lesson series")
    assert [w for w in words if w in text] == []


def test_a_recording_is_written_where_lessonkit_record_says(tmp_path):
    out = tmp_path / "rec.json"
    r = _standalone(REC, tmp_path, LESSONKIT_RECORD=str(out))
    assert (r.returncode, r.stdout, r.stderr) == (0, "done\n", "")
    assert out.read_text(encoding="utf-8") == '{"answer":42,"rows":[{"n":1}]}'
    r = _standalone(REC, tmp_path)  # by hand (a reader, from the bundle): the same output, nothing more
    assert (r.returncode, r.stdout, r.stderr) == (0, "done\n", "")


def test_a_subclass_encodes_objects_of_its_own_and_one_recorder_writes(tmp_path):
    code = (
        "import lessonkit_record\n"
        "class Point:\n    def __init__(self, x, y): self.x, self.y = x, y\n"
        "def point(value, names):\n"
        "    if not isinstance(value, Point):\n        return NotImplemented\n"
        "    return {'point': lessonkit_record.encode([value.x, value.y], names)}  # nested values: encoded\n"
        "class Mine(lessonkit_record.Recorder):\n    encoders = (point,)\n"
        "mine = Mine()\n"
        "mine.set('p', {'a': Point(1, 2.5), 'b': [Point(0, float('inf'))]})\n"
        "print(mine.dumps())\n"
        "try:\n    lessonkit_record.record.set('q', 1)\nexcept ValueError as e:\n    print(e)\n"
        "try:\n    lessonkit_record.encode(Point(1, 1))\nexcept TypeError as e:\n    print(e)\n"
    )
    r = _standalone(code, tmp_path, LESSONKIT_RECORD=str(tmp_path / "r.json"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        '{"p":{"a":{"point":[1,2.5]},"b":[{"point":[0,{"float":"inf"}]}]}}',
        "another Recorder already records this process: record everything through one",
        "cannot record a Point: record its fields instead",
    ]


def test_the_helper_keeps_a_tuple_apart_from_a_list(tmp_path):
    code = (
        "from lessonkit_record import record, encode\n"
        "record.set('v', {'l': [1, 2], 't': (1, 2), 'one': (3,), 'none': (), 'nested': [(1, [2, (3,)])]})\n"
        "record.append('rows', (1, 'a'))\n"
        "print(encode(((float('nan'),),)))\n"
    )
    out = tmp_path / "r.json"
    r = _standalone(code, tmp_path, LESSONKIT_RECORD=str(out))
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout == "{'tuple': [{'tuple': [{'float': 'nan'}]}]}\n"
    assert json.loads(out.read_text(encoding="utf-8")) == {
        "rows": [{"tuple": [1, "a"]}],
        "v": {
            "l": [1, 2],
            "nested": [{"tuple": [1, [2, {"tuple": [3]}]]}],
            "none": {"tuple": []},
            "one": {"tuple": [3]},
            "t": {"tuple": [1, 2]},
        },
    }


def test_encoding_an_encoded_value_gives_it_back(tmp_path):
    """A recorder may encode parts first and record them later (this series' does): encode is
    idempotent, tuples, NumPy values, nodes and non-finite floats included."""
    code = (
        "import json, numpy as np\n"
        "from lessonkit_record import encode\n"
        "n = object()\n"
        "v = {'t': (1, (2,)), 'l': [1, (2, 3)], 's': np.float64(0.5), 'a': np.arange(2.0), 'f': float('inf'),\n"
        "     'n': n, 'd': {'x': ()}}\n"
        "once = encode(v, names={n: 'R'})\n"
        "print(json.dumps(once, sort_keys=True))\n"
        "print(encode(once) == once, encode(encode(once)) == once)\n"
    )
    r = _standalone(code, tmp_path)
    assert (r.returncode, r.stderr) == (0, ""), r.stderr
    assert r.stdout.splitlines() == [
        '{"a": {"array": [0.0, 1.0], "dtype": "float64", "shape": [2]}, "d": {"x": {"tuple": []}}, '
        '"f": {"float": "inf"}, "l": [1, {"tuple": [2, 3]}], "n": {"node": "R"}, '
        '"s": {"dtype": "float64", "scalar": 0.5}, "t": {"tuple": [1, {"tuple": [2]}]}}',
        "True True",
    ]


def test_every_box_holds_the_helper_and_every_key_names_it(site, tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOGRAD_SOURCE", str(site.pinned_root))
    site.script("rec.py", REC)
    project = site.project()
    job = script_job(project, "experiments/rec.py")
    spec = project.runner.spec(job)
    helper = ("project/.lessonkit/lessonkit_record.py", hashlib.sha256(RECORD_HELPER.read_bytes()).hexdigest())
    assert helper in spec.files
    assert dict(spec.env)["PYTHONPATH"].split(os.pathsep)[-1] == "{box}/project/.lessonkit"
    result = project.runner.run(job)
    assert (result.exit_code, result.stdout, result.record) == (0, "done\n", {"answer": 42, "rows": [{"n": 1}]})
    changed = tmp_path / "lessonkit_record.py"  # another version of the helper: another key for every script
    changed.write_bytes(RECORD_HELPER.read_bytes() + b"\n# changed\n")
    monkeypatch.setattr(runner, "RECORD_HELPER", changed)
    other = site.project()
    assert other.runner.key(script_job(other, "experiments/rec.py")) != project.runner.key(job)


def test_a_value_recorded_through_the_helper_is_on_the_page_and_the_helper_in_the_bundle(site):
    site.script("rec.py", REC)
    site.page("a.md", "# a\n\n答案是 [[value: rec answer]]。\n")
    r = site.build()
    assert r.returncode == 0, r.stderr[-3000:]
    html = (site.root / "site" / "a" / "index.html").read_text(encoding="utf-8")
    assert re.search(r">42</[a-z]+>。", html), html[-2000:]
    with zipfile.ZipFile(site.root / "site" / "downloads" / "autograd-resources.zip") as z:
        names = z.namelist()
        assert z.read("autograd-resources/experiments/lessonkit_record.py") == RECORD_HELPER.read_bytes()
        readme = z.read("autograd-resources/README.md").decode("utf-8")
    assert "autograd-resources/mini-autograd/lessonkit_record.py" not in names  # only where a script imports it
    assert "`experiments/lessonkit_record.py`" in readme


def test_the_series_recorder_builds_on_the_helper():
    text = (ROOT / "experiments" / "_record.py").read_text(encoding="utf-8")
    assert "import lessonkit_record\n" in text and "class Recorder(lessonkit_record.Recorder):" in text
    assert "\ndef write(" not in text and "LIMIT" not in text  # the protocol is the helper's, once


def test_the_series_recorder_keeps_its_encoding(pinned_root, tmp_path):
    """Boxes and named nodes as before the helper moved into lessonkit."""
    code = (
        "import numpy as np\nfrom autograd.tracer import Node\nfrom autograd import grad\nfrom _record import record\n"
        "boxes = []\n"
        "def f(x):\n    boxes.append(x)\n    return x * x\n"
        "grad(f)(np.float64(3.0))\n"
        "class N(Node):\n    def __init__(self): pass\n"
        "n = N()\n"
        "record.set('b', boxes[0])\nrecord.set('n', {'a': n}, names={n: 'M'})\n"
        "try:\n    record.set('bad', n)\nexcept ValueError as e:\n    print(e)\n"
        "print(record.dumps())\n"
    )
    r = subprocess.run(
        [sys.executable, "-B", "-c", code],
        cwd=tmp_path,
        env={
            "PATH": os.environ.get("PATH", "/usr/bin"),
            "PYTHONPATH": os.pathsep.join([str(pinned_root), str(ROOT / "experiments"), str(RECORD_HELPER.parent)]),
            "LESSONKIT_RECORD": str(tmp_path / "r.json"),
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    first, second = r.stdout.splitlines()
    assert first == "a N without a name: pass names={node: 'label'}"
    assert json.loads(second) == {
        "b": {"box": "ArrayBox", "trace": 0, "value": {"dtype": "float64", "scalar": 3.0}},
        "n": {"a": {"node": "M"}},
    }
