"""One key for one box: a warm build gives what a cold build gives.

An experiment's key is the digest of its complete box specification
(:class:`lessonkit.run.box.spec.BoxSpec`), the same object the launcher runs. Each case below
changes one input that an earlier key left out, runs the job cold with the first setting, then
with the second against the same cache (the warm run), and compares that with a cold run of
the second setting in an empty cache: equal, and never served from the first setting's entry.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import shutil
import textwrap
from pathlib import Path

import pytest
from support import TmpSite

from lessonkit.run import outcomes
from lessonkit.run import runner as execute
from lessonkit.run.box import jail as jails
from lessonkit.run.box import sandbox, spec
from lessonkit.run.runner import Job, Runner
from lessonkit.source.pin import load_pin


@pytest.fixture
def site(tmp_path, pinned_root) -> TmpSite:
    s = TmpSite(tmp_path / "proj", pinned_root)
    s.page("p.md", "# t\n")
    return s


def runner(site: TmpSite, cache: Path, **options) -> Runner:
    pin = load_pin(site.root / "sourcemap")
    args = {
        "env_prefix": "AUTOGRAD",
        **execute.pin_args(pin, site.root),
        **options,
    }
    version = args.pop("pinned_version", pin.version)
    return Runner(site.pinned_root, version, pin.manifest_digest, site.root / "experiments", cache, **args)


def job(source: str, timeout: int = 30) -> Job:
    return Job("k.py", textwrap.dedent(source).encode(), timeout, "docs/p.md:3")


def shown(result) -> tuple:
    return (result.ok, result.exit_code, result.timed_out, result.stdout, result.record)


def warm_equals_cold(site, tmp_path, first: dict, second: dict, j: Job, j2: Job | None = None):
    """Run ``j`` cold with ``first``, then warm with ``second`` on the same cache, then cold with
    ``second`` on an empty one; the warm run must equal the cold one and must not be a hit."""
    shared = tmp_path / "shared"
    a = runner(site, shared, **first).run(j)
    assert not a.cached
    warm = runner(site, shared, **second).run(j2 or j)
    cold = runner(site, tmp_path / "cold", **second).run(j2 or j)
    assert not warm.cached, "served the first setting's result"
    assert shown(warm) == shown(cold)
    return a, warm


def test_the_env_prefix_of_site_toml_is_in_the_key(site, tmp_path):
    j = job("import os\nprint(sorted(k for k in os.environ if k.endswith('_PINNED_ROOT')))\n")
    a, warm = warm_equals_cold(site, tmp_path, {"env_prefix": "AUTOGRAD"}, {"env_prefix": "OTHER"}, j)
    assert (a.stdout, warm.stdout) == ("['AUTOGRAD_PINNED_ROOT']\n", "['OTHER_PINNED_ROOT']\n")


def test_the_pins_version_string_is_in_the_key(site, tmp_path):
    j = job("import os\nprint(os.environ['AUTOGRAD_PINNED_VERSION'])\n")
    a, warm = warm_equals_cold(site, tmp_path, {}, {"pinned_version": "1.9.1.post7"}, j)
    assert (a.stdout, warm.stdout) == ("1.9.1\n", "1.9.1.post7\n")


@pytest.mark.parametrize("field", ["pin_commit", "pin_sdist_sha256"])
def test_the_pins_commit_and_sdist_sha256_are_in_the_key(site, tmp_path, field):
    """The box does not show them, but a result is of one pin: another commit or archive digest
    (a pin.toml edited to name another release) is another key."""
    j = job("print('same')\n")
    a, warm = warm_equals_cold(site, tmp_path, {}, {field: "0" * 64 if field == "pin_sdist_sha256" else "1" * 40}, j)
    assert a.stdout == warm.stdout == "same\n"


def test_the_jail_is_in_the_key(site, tmp_path):
    """A result made without a jail (``LESSONKIT_SANDBOX=copy``) is never served to a jailed build,
    nor the other way round: the box differs, and a script can tell."""
    jailed = sandbox.jail()
    if not jailed.isolated:
        pytest.skip(f"no jail works here ({jailed.why})")
    j = job("import os\nprint(os.path.isdir('/lessonkit-box'), os.getuid() == 1000)\n")
    copy = jails.Jail("copy", "", "test")
    a, warm = warm_equals_cold(site, tmp_path, {"jail": jailed}, {"jail": copy}, j)
    assert (a.stdout, warm.stdout) == ("True True\n", f"False {os.getuid() == 1000}\n")
    back = runner(site, tmp_path / "shared", jail=jailed).run(j)
    assert (back.cached, back.stdout) == (True, "True True\n")


def test_the_timeout_is_in_the_key(site, tmp_path):
    """A pass under `Timeout: 30` is not served to a block that says `Timeout: 1`, which fails."""
    source = "import time\ntime.sleep(2)\nprint('slow')\n"
    a, warm = warm_equals_cold(site, tmp_path, {}, {}, job(source, 30), job(source, 1))
    assert (a.ok, a.stdout) == (True, "slow\n")
    assert (warm.ok, warm.timed_out) == (False, True)


def test_the_engine_code_that_shapes_output_is_in_the_key(site, tmp_path, monkeypatch):
    """The files whose code runs a box or turns its output into the result (sanitising,
    normalising, the record's reading, the launcher) are in the engine digest, and the digest in
    every key: editing one of them runs every experiment again."""
    named = {spec.PACKAGE / rel for rel in spec.ENGINE}
    for obj in (sandbox.sanitise, Runner.normalise, outcomes.read_record, jails.plan, spec.BoxSpec):
        assert Path(inspect.getsourcefile(obj)).resolve() in named, obj
    assert jails.BOOT.resolve() in named
    copies = []
    for rel in spec.ENGINE:
        dst = tmp_path / "engine" / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(spec.PACKAGE / rel, dst)
        copies.append(dst)
    before = spec.engine_digest(tuple(copies))
    assert before == spec.engine()
    sanitiser = tmp_path / "engine" / "run/box/sandbox.py"
    sanitiser.write_text(sanitiser.read_text().replace("_VISIBLE.update({0x7F:", "_VISIBLE.update({0x7E:"))
    assert spec.engine_digest(tuple(copies)) != before
    j = job("print('x')\n")
    first = runner(site, tmp_path / "c").run(j)
    monkeypatch.setattr(execute, "engine", lambda: spec.engine_digest(tuple(copies)))
    again = runner(site, tmp_path / "c").run(j)
    assert again.key != first.key and not again.cached


def test_a_sibling_script_not_named_literally_is_not_in_the_box(site, tmp_path):
    """``open("rt" + "_" + "b.py")`` names no script: the box holds none but the helpers and those
    a script names, so a warm run after editing rt_b.py gives what a cold run gives."""
    site.script("rt_b.py", "VALUE = 1\n")
    j = job(
        """
        import os
        here = os.environ["PYTHONPATH"].split(os.pathsep)[1]
        name = "rt" + "_" + "b.py"
        path = os.path.join(here, name)
        print(open(path).read().strip() if os.path.exists(path) else "absent")
        """
    )
    shared = tmp_path / "shared"
    first = runner(site, shared).run(j)
    assert (first.ok, first.stdout) == (True, "absent\n"), first.stderr[-1500:]
    assert [p for p, _ in runner(site, shared).spec(j).files if p.startswith("project/")] == [
        "project/.lessonkit/lessonkit_record.py",  # lessonkit's record helper, in every box
        *(f"project/experiments/{p.name}" for p in sorted((site.root / "experiments").glob("_*.py"))),
    ]
    site.script("rt_b.py", "VALUE = 2\n")
    warm = runner(site, shared).run(j)
    cold = runner(site, tmp_path / "cold").run(j)
    assert shown(warm) == shown(cold) and warm.stdout == first.stdout


def test_a_script_that_lists_its_folder_holds_and_keys_every_script(site, tmp_path):
    site.script("rt_b.py", "VALUE = 1\n")
    j = job(
        """
        import glob, os
        here = os.environ["PYTHONPATH"].split(os.pathsep)[1]
        print([open(p).read().strip() for p in sorted(glob.glob(os.path.join(here, "rt_*.py")))])
        """
    )
    shared = tmp_path / "shared"
    assert runner(site, shared).run(j).stdout == "['VALUE = 1']\n"
    site.script("rt_b.py", "VALUE = 2\n")
    warm = runner(site, shared).run(j)
    assert (warm.cached, warm.stdout) == (False, "['VALUE = 2']\n")


def test_every_field_of_the_spec_is_in_the_key(site, tmp_path):
    """Changing any one field of a BoxSpec changes its key (the key is the digest of all of them)."""
    s = runner(site, tmp_path / "c").spec(job("print(1)\n"))
    changed = {
        "jail": ("copy", ""),
        "argv": (*s.argv, "-X"),
        "env": (*s.env, ("EXTRA", "1")),
        "cwd": "{box}",
        "files": s.files[:-1],
        "timeout": s.timeout + 1,
        "memory": s.memory + 1,
        "fsize": s.fsize + 1,
        "nproc": s.nproc + 1,
        "output": (s.output[0] + 1, *s.output[1:]),
        "pin": (*s.pin[:-1], "x"),
        "tools": (*s.tools, ("x", "1")),
        "engine": "0" * 64,
    }
    assert set(changed) == {f.name for f in dataclasses.fields(s)}
    keys = {name: dataclasses.replace(s, **{name: value}).key for name, value in changed.items()}
    assert len(set(keys.values()) | {s.key}) == len(changed) + 1
