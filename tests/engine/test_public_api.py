"""The public API of ``lessonkit``: the names a series' kinds and attachments and a tool that
drives a build import from the package itself, loaded on first use (PEP 562)."""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import subprocess
import sys

import pytest
from support import ROOT

import lessonkit

API = {
    "Kind": "lessonkit.kinds.base",
    "InlineKind": "lessonkit.kinds.base",
    "Resolved": "lessonkit.kinds.base",
    "InlineRef": "lessonkit.pipeline.blocks",
    "Attachment": "lessonkit.attachments.base",
    "Diagram": "lessonkit.attachments.base",
    "Inputs": "lessonkit.attachments.base",
    "script_job": "lessonkit.attachments.base",
    "Problem": "lessonkit.errors",
    "LessonError": "lessonkit.errors",
    "Project": "lessonkit.project",
    "Build": "lessonkit.build",
}


def test_every_public_name_is_the_object_of_its_module():
    assert lessonkit.__all__ == list(API)
    for name, module in API.items():
        assert getattr(lessonkit, name) is getattr(importlib.import_module(module), name), name
    assert set(API) <= set(dir(lessonkit))
    from lessonkit import Attachment, Diagram, Kind, LessonError  # the form a series' module uses

    assert issubclass(Diagram, Attachment) and Kind.__module__ == "lessonkit.kinds.base"
    assert str(LessonError("what", path="a.md", line=3, hint="fix")) == "a.md:3: what — fix"


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError) as err:
        lessonkit.Nothing  # noqa: B018
    assert str(err.value) == "module 'lessonkit' has no attribute 'Nothing'"
    from lessonkit import build  # submodules still import as submodules

    assert build.Build is lessonkit.Build


def _fresh(code: str) -> list[str]:
    r = subprocess.run(
        [sys.executable, "-S", "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    return r.stdout.split()


def test_importing_the_package_loads_nothing_and_a_name_loads_only_its_module():
    """``-S``: no site-packages, as the prefill runs; the names load the standard library only."""
    listed = "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in ('lessonkit', 'markdown', 'jinja2'))))"
    assert _fresh("import sys, lessonkit\n" + listed) == ["lessonkit"]
    assert _fresh("import sys, lessonkit\nlessonkit.LessonError\n" + listed) == [
        "lessonkit",
        "lessonkit.errors",
        "lessonkit.util",
        "lessonkit.util.text",
    ]
    loaded = _fresh("import sys, lessonkit\nlessonkit.Diagram, lessonkit.Kind, lessonkit.Project\n" + listed)
    assert "lessonkit.project" in loaded and not [m for m in loaded if m.split(".")[0] != "lessonkit"]


def test_the_docstring_names_only_what_exists():
    words = set(re.findall(r"``([a-z_.]+)``", lessonkit.__doc__)) - {"lessonkit"}
    assert {"config", "source", "run", "kinds", "pipeline", "attachments", "site", "build", "cli"} <= words
    missing = [w for w in sorted(words) if importlib.util.find_spec(f"lessonkit.{w}") is None]
    assert missing == []


def test_the_prefill_s_page_check_needs_the_standard_library_only(tiny):
    """The noxfile's prefill lists a new clone's experiments before the lock is installed: its page
    check (`verify.check(..., installed=False)`) runs on the standard library alone, without the
    raw-HTML and include checks the build then makes (HTML parser, PyYAML, libcst absent)."""
    tiny.page("a.md", '# A\n\n<b class="x">bold</b>\n\n```real-source\nFile: tiny/core.py\nSymbol: Node\n```\n')
    code = (
        "import sys\n"
        f"sys.path.append({str(ROOT)!r})\n"
        "from pathlib import Path\n"
        "from lessonkit.project import Project\n"
        "from lessonkit.checks import verify\n"
        f"p = Project(Path({str(tiny.root)!r}), cache=Path({str(tiny.cache)!r}))\n"
        "r = verify.check(p, p.pages(), installed=False)\n"
        "print(len(r.problems), len(r.resolved))\n"
        "third = {'selectolax', 'tinycss2', 'yaml', 'libcst'}\n"
        "print(' '.join(sorted({m.split('.')[0] for m in sys.modules} & third)))\n"
    )
    r = subprocess.run(
        [sys.executable, "-S", "-I", "-c", code],
        cwd=tiny.root,
        env={**os.environ, **tiny.env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split("\n")[:2] == ["0 2", ""]
