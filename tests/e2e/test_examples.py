"""The second project, examples/micrograd-lessons, built from configuration alone.

A copy of the example, alone (its hooks file is its own one-line re-export of
lessonkit.integrations.mkdocs.hooks), is built strict, verified,
mutation-checked (100 %) and repinned to its own release, with every cache under the
test's tmp. The pinned sdist is downloaded once per session from the package index, as
the main project's is; its sha256 is checked by the pin like any provider's.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lessonkit.errors import LessonError
from lessonkit.site import csp
from lessonkit.source import fetch
from lessonkit.source import pin as pinning

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "micrograd-lessons"


@pytest.fixture(scope="session")
def micrograd_sdist(tmp_path_factory) -> Path:
    """The pinned micrograd sdist, downloaded once per session with the pin's own provider."""
    pin = pinning.load_pin(EXAMPLE / "sourcemap")
    dest = tmp_path_factory.mktemp("micrograd-sdist")
    try:
        fetch.index_download(pin.name, pin.sdist_filename, pin.sdist_sha256, dest)
    except LessonError as exc:
        pytest.skip(f"the package index is unreachable: {exc.problem.message}")
    return dest / pin.sdist_filename


@pytest.fixture
def example(tmp_path, micrograd_sdist):
    """(project dir, env): a copy of the example, with nothing of this repository beside it."""
    proj = tmp_path / "examples" / "micrograd-lessons"
    shutil.copytree(EXAMPLE, proj, ignore=shutil.ignore_patterns("site", ".cache", "__pycache__"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LESSONKIT_", "AUTOGRAD_"))}
    env.update(
        LESSONKIT_SDIST=str(micrograd_sdist),
        LESSONKIT_CACHE=str(tmp_path / "cache"),
        NO_MKDOCS_2_WARNING="1",
        SOURCE_DATE_EPOCH="1764460800",
        PYTHONDONTWRITEBYTECODE="1",
    )
    return proj, env


def _run(proj: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=proj, env=env, capture_output=True, text=True, timeout=600)


def test_the_micrograd_example_builds_verifies_mutates_and_repins_to_itself(example):
    proj, env = example
    before = {p.relative_to(proj): p.read_bytes() for p in proj.rglob("*") if p.is_file()}

    build = _run(proj, env, "-m", "mkdocs", "build", "--strict")
    assert build.returncode == 0, build.stderr[-3000:]
    assert "Traceback" not in build.stderr
    assert (
        "lessonkit: pinned 0.1.0 (5bb6392) from local archive LESSONKIT_SDIST (micrograd-0.1.0.tar.gz)" in build.stderr
    )
    site = proj / "site"
    lesson = (site / "lessons" / "01-mul-and-backward" / "index.html").read_text(encoding="utf-8")
    # every page, the 404 page and the source browser's included, starts its head with its policy
    written = sorted(site.rglob("*.html"))
    assert len(written) > 5 and (site / "404.html") in written and any("source" in p.parts for p in written)
    assert [str(x) for p in written for x in csp.problems(p.read_text(encoding="utf-8"), str(p))] == []
    # the engine's stylesheet, script and math font, which the example's mkdocs.yml does not name
    assert "lessonkit.css" not in (EXAMPLE / "mkdocs.yml").read_text(encoding="utf-8")
    engine_css = (ROOT / "lessonkit" / "assets" / "lessonkit.css").read_bytes()
    assert (site / "assets" / "lessonkit.css").read_bytes() == engine_css
    assert (site / "assets" / "fonts" / "STIXTwoMath-Regular.woff2").is_file()
    assert 'href="../../assets/lessonkit.css"' in lesson and 'src="../../assets/lessonkit.js"' in lesson
    assert "dd/da = -12.0  (2ab = 2*2*(-3))" in lesson and "dd/db = 4.0  (a^2 = 4)" in lesson
    assert "TinyValue gives the same: True" in lesson
    assert "[micrograd 0.1.0 · pinned tree]" in lesson
    text = html.unescape(re.sub(r"<[^>]+>", "", lesson))  # the excerpts, as highlighted code
    assert "def __mul__(self, other):" in text and "def backward(self):" in text and "class Neuron(Module):" in text
    assert (site / "source" / "micrograd" / "engine.py" / "index.html").is_file()
    assert (site / "source" / "micrograd" / "nn.py" / "index.html").is_file()
    symbols = (site / "symbols" / "index.html").read_text(encoding="utf-8")
    assert "Value.__mul__" in symbols and "Neuron" in symbols
    assert (site / "downloads" / "micrograd-resources.zip").is_file()
    # the engine names no other project: `autograd` appears only inside micrograd's own engine.py
    named = sorted(
        str(p.relative_to(site))
        for p in site.rglob("*.html")
        if re.search("autograd", p.read_text(encoding="utf-8"), re.I)
    )
    assert named == ["source/micrograd/engine.py/index.html"]
    # the example's own words ([labels] and templates/ of the example), not the autograd series'
    badges = re.findall(r'<span class="lk-badge lk-badge-\w+"[^>]*>([^<]*)</span>', lesson)
    assert sorted(set(badges)) == ["原样源码 REAL SOURCE", "实验 EXPERIMENT", "教学简化版 TEACHING SIMPLIFICATION"]
    assert "以下不是 karpathy/micrograd 的原样源码。" in lesson and "本篇用到的源码" in lesson
    engine = (site / "source" / "micrograd" / "engine.py" / "index.html").read_text(encoding="utf-8")
    assert "引用处：" in engine and "课程引用的范围" in engine and "被引用：" not in engine
    assert "<h1" in symbols and "符号索引" in symbols
    acceptance = (site / "attachments" / "acceptance" / "index.html").read_text(encoding="utf-8")
    assert "构建验收记录" in acceptance and "合计" in acceptance and "本次构建验收记录" not in acceptance
    assert "本地发布包 LESSONKIT_SDIST" in acceptance  # where the tree came from, in the example's words

    verify = _run(proj, env, "-m", "lessonkit", "verify")
    assert verify.returncode == 0, verify.stderr
    first, site_line = verify.stdout.splitlines()  # the build just wrote site/: a plain verify checks it too
    assert re.fullmatch(
        r"verify: 2 page\(s\), 3 real-source, 1 teaching-simplification, 1 experiment, 0 snapshot, 0 figure, "
        r"0 exercise, 0 output, 0 runnable block\(s\), 0 inline reference\(s\) "
        r"against micrograd 0\.1\.0 \(5bb6392, [^;]+\); 0 problem\(s\) in [\d.]+ s",
        first,
    )
    assert site_line.startswith("site: ") and "; 0 problem(s) in " in site_line, site_line

    mutate = _run(proj, env, "-m", "lessonkit", "mutate")
    assert mutate.returncode == 0, mutate.stdout + mutate.stderr
    assert re.search(r"^mutations: 3/3 caught \(100%\)", mutate.stdout, re.M), mutate.stdout

    repin = _run(proj, env, "-m", "lessonkit", "repin", "0.1.0", "--html", str(proj.parent / "repin.html"))
    assert repin.returncode == 0, repin.stdout + repin.stderr
    lines = repin.stdout.splitlines()
    assert lines[0] == (
        "repin: micrograd 0.1.0 (5bb6392) → micrograd 0.1.0 (5bb6392), "
        "from sdist micrograd-0.1.0.tar.gz from the Python package index"
    )
    assert (
        "  sdist micrograd-0.1.0.tar.gz  sha256 "
        "81797b796bef809fb1ac3fd83a7e01e007aecb8d056fba07c0e24931e043845d" in lines
    )
    assert "real source: 3 unchanged" in lines and "based-on:    1 unchanged" in lines
    assert "experiments: 1 unchanged" in lines
    assert re.match(r"repin: nothing beyond moves \(0 moved\); every experiment prints the same; ", lines[-2])
    assert "Repin report: micrograd 0.1.0 (5bb6392) → micrograd 0.1.0 (5bb6392)" in (
        proj.parent / "repin.html"
    ).read_text(encoding="utf-8")
    assert not any((Path(env["LESSONKIT_CACHE"]) / "repin" / ".staging").iterdir())

    after = {
        p.relative_to(proj): p.read_bytes()
        for p in proj.rglob("*")
        if p.is_file() and "site" not in p.relative_to(proj).parts[:1]
    }
    assert after == before  # nothing of the project is modified by build, verify, mutate or repin


def test_new_in_the_example_starts_from_the_engines_templates_and_builds(example):
    """The example has no templates/new-lesson.md or new-experiment.py: `lessonkit new` takes the
    engine's (English), which name the example's project and package, and the result builds,
    runs and verifies as created."""
    proj, env = example
    assert not (proj / "templates" / "new-lesson.md").exists()
    new = _run(proj, env, "-m", "lessonkit", "new", "02", "A second lesson", "second")
    assert new.returncode == 0, new.stdout + new.stderr
    assert new.stdout.splitlines()[:2] == [
        "created docs/lessons/02-second.md",
        "created experiments/lesson02_second.py",
    ]
    page = (proj / "docs" / "lessons" / "02-second.md").read_text(encoding="utf-8")
    assert page.startswith("# 02 · A second lesson\n")
    purpose = "Purpose: show that micrograd is imported from the pinned tree\n"
    assert "File: experiments/lesson02_second.py\n" + purpose in page
    assert "      - lessons/02-second.md" in (proj / "mkdocs.yml").read_text(encoding="utf-8")
    script = (proj / "experiments" / "lesson02_second.py").read_text(encoding="utf-8")
    assert "import micrograd\n" in script and 'os.environ["MICROGRAD_PINNED_ROOT"]' in script
    assert "PINNED_VERSION" not in script  # its output is the same under every pin (repin can apply it)
    build = _run(proj, env, "-m", "mkdocs", "build", "--strict")
    assert build.returncode == 0, build.stderr[-3000:]
    lesson = (proj / "site" / "lessons" / "02-second" / "index.html").read_text(encoding="utf-8")
    assert "micrograd from the pinned tree: micrograd/__init__.py" in lesson
    verify = _run(proj, env, "-m", "lessonkit", "verify", "--mutate", "--site", "site")
    assert verify.returncode == 0, verify.stdout + verify.stderr
