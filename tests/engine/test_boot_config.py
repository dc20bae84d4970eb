"""How the runner hands a box's launcher its configuration (``jail.encode_config``, read by
``_boot.py`` without json), and how the launcher reads bubblewrap's ``--info-fd`` answer."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from lessonkit.run.box import jail as jails


def _boot():
    """The launcher as a module (lessonkit never imports it: it runs as a script)."""
    spec = importlib.util.spec_from_file_location("lessonkit_boot_under_test", jails.BOOT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_launcher_reads_what_the_runner_encodes_and_encodes_the_same_way():
    boot = _boot()
    cfg = {
        "argv": ["/usr/bin/python3", "-B", "x.py"],
        "env": {"LANG": "C.UTF-8", "HOME": "/lessonkit-box/work"},
        "plan": [["ro", "/usr", "/usr"], ["tmpfs", "/tmp", 0o1777, 64 << 20]],
        "stderr": None,
        "seed": ["/run/lessonkit/work", "/lessonkit-box/work"],
        "root_build": True,
        "memory": 1 << 30,
    }
    arg = jails.encode_config(cfg)
    assert arg.isascii() and "\x00" not in arg and "\n" not in arg  # one argv string
    assert boot.decode(arg) == cfg
    assert boot.encode(cfg) == arg


@pytest.mark.parametrize("arg", ["", "not base64 at all!", jails.encode_config({"a": 1})[:-4], "WwBd"])
def test_a_configuration_that_cannot_be_read_fails_the_box_with_one_line(arg):
    r = subprocess.run([sys.executable, "-I", "-S", str(jails.BOOT), arg], capture_output=True, text=True, timeout=30)
    assert (r.returncode, r.stdout, r.stderr) == (125, "", "lessonkit-box: the box's configuration cannot be read\n")


def test_bubblewraps_info_names_the_child_pid():
    boot = _boot()
    assert boot.child_pid(b'{\n    "child-pid": 4242\n}\n') == 4242
    assert boot.child_pid(b'{"child-pid":7,"cgroup-namespace":4026531835}') == 7
    for info in (b"", b"{}", b'{"child-pid": -1}', b'{"child-pid": "12"}', b'{"child-pid" 12}', b'{"child-pid": 0}'):
        with pytest.raises(ValueError):
            boot.child_pid(info)
