"""The `runnable` kind in a build: a snippet shown as code, run by the build in the experiment jail, its
output folded beneath as the recorded answer; the browser's runner (assets/exercise/lkrun.py) prints
the same for the same text; the teaching module it imports is carried byte for byte; `verify --site`
catches an edited answer and an edited snippet; an import the browser does not have is refused at
its line; the reference's example is a block of the page built here."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT, TmpSite, block

from lessonkit.source import pyodide
from lessonkit.util import markup

pytestmark = pytest.mark.warm_cache

MINI = ROOT / "mini-autograd" / "mini_autograd.py"
LKRUN = ROOT / "lessonkit" / "assets" / "exercise" / "lkrun.py"

EXAMPLE = block(
    "runnable",
    "Title: 这段代码打印什么？",
    body="""
    from mini_autograd import grad

    print(grad(lambda x: x * x * x)(2.0))
    """,
)
PLAIN = block(
    "runnable",
    "Title: 标准库",
    body="""
    names = ["add", "mul", "input"]
    for n, name in enumerate(reversed(names)):
        print(n, name)
    """,
)
PAGE = "# 运行\n\n先猜：\n\n" + EXAMPLE + "\n只用标准库：\n\n" + PLAIN


def _with_runtime(site: TmpSite, real_project) -> None:
    """The pinned runtime from the real project's cache (fetched there once), and Mini."""
    shutil.copy(ROOT / "sourcemap" / "pyodide.toml", site.root / "sourcemap" / "pyodide.toml")
    lock = pyodide.read_lock(ROOT)
    folder = pyodide.provide(lock, real_project.cache)
    shutil.copytree(folder, site.cache / "pyodide" / folder.name)
    (site.root / "mini-autograd").mkdir()
    shutil.copy(MINI, site.root / "mini-autograd" / "mini_autograd.py")


@pytest.fixture(scope="module")
def built(tmp_path_factory, pinned_root, warm_seed, real_project) -> TmpSite:
    site = TmpSite(tmp_path_factory.mktemp("runnable") / "proj", pinned_root)
    for kind in ("highlight", "links", "pages", "symbols", "templates", "seal"):
        if (warm_seed / kind).is_dir():
            shutil.copytree(warm_seed / kind, site.cache / kind)
    _with_runtime(site, real_project)
    site.page("r.md", PAGE)
    r = site.run("-m", "lessonkit", "verify", "--update-map")
    assert r.returncode == 0, r.stderr
    r = site.build()
    assert r.returncode == 0, r.stderr[-3000:]
    return site


def _page(site: TmpSite) -> Path:
    return site.root / "site" / "r" / "index.html"


def _blocks(site: TmpSite) -> list:
    tree = markup.parse(_page(site).read_text(encoding="utf-8"))
    return tree.css("div.lk-block.lk-runnable")


def test_the_page_shows_the_code_and_folds_the_output_the_build_recorded(built):
    one, two = _blocks(built)
    assert [b.attributes["id"] for b in (one, two)] == ["run-L5", "run-L15"]
    assert [b.css_first("details.lk-runnable-answer pre.lk-output").text() for b in (one, two)] == [
        "12.0\n",
        "0 input\n1 mul\n2 add\n",
    ]
    assert one.attributes["data-lk-code"] == "from mini_autograd import grad\n\nprint(grad(lambda x: x * x * x)(2.0))\n"
    assert one.css_first("td.code pre").text() == one.attributes["data-lk-code"]
    assert "open" not in one.css_first("details.lk-runnable-answer").attributes  # folded: the answer waits
    # the teaching module it imports, byte for byte; the stdlib snippet carries none
    (carried,) = one.css("pre.lk-ex-file")
    assert carried.attributes["data-lk-path"] == "mini-autograd/mini_autograd.py"
    assert carried.text() == MINI.read_text(encoding="utf-8")
    assert two.css("pre.lk-ex-file") == []
    # the runtime's size, measured from the files the site serves, before any run
    lock = pyodide.read_lock(ROOT)
    size = sum((built.root / "site" / pyodide.SITE_DIR / n).stat().st_size for n in lock.files)
    assert one.attributes["data-lk-size"] == f"{size / 1048576:.1f}"
    assert f"{size / 1048576:.1f} MB" in one.css_first("p.lk-ex-note").text()
    assert one.attributes["data-lk-csp"] == "wasm-unsafe-eval"


def test_the_browsers_runner_prints_what_the_build_recorded(built, tmp_path):
    """lkrun.py (what the worker runs in Pyodide) under CPython, on the page's own text and files."""
    for b in _blocks(built):
        files = {p.attributes["data-lk-path"]: p.text() for p in b.css("pre.lk-ex-file")}
        root = tmp_path / b.attributes["id"]
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
        folders = sorted({rel.rsplit("/", 1)[0] for rel in files})
        probe = (
            "import json, sys\nsys.path.insert(0, sys.argv[1])\nimport lkrun\n"
            "print(json.dumps(lkrun.run(sys.argv[2], sys.argv[3], json.loads(sys.argv[4]))))"
        )
        r = subprocess.run(
            [
                sys.executable,
                "-I",
                "-B",  # no bytecode next to the engine's assets (the site ships that folder)
                "-c",
                probe,
                str(LKRUN.parent),
                b.attributes["data-lk-code"],
                str(root),
                json.dumps(folders),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert r.returncode == 0, r.stderr
        ran = json.loads(r.stdout)
        assert ran == {"stdout": b.css_first("pre.lk-output").text(), "stderr": "", "status": 0}


def test_verify_site_passes_and_catches_an_edited_answer_or_snippet(built):
    r = built.run("-m", "lessonkit", "verify", "--site", "site")
    assert r.returncode == 0, r.stderr[-3000:]
    page = _page(built)
    html = page.read_text(encoding="utf-8")
    edits = {
        "answer": (
            html.replace("<code>12.0\n</code>", "<code>12.5\n</code>", 1),
            "site/r/index.html: experiment output of docs/r.md:5 differs from this build's recorded run "
            "(line 1: '12.5' instead of '12.0')",
        ),
        "snippet": (
            html.replace("(lambda x: x * x * x)(2.0))\n\"", "(lambda x: x * x)(2.0))\n\"", 1),
            "site/r/index.html: runnable block #run-L5 (docs/r.md:5) is not the markup lessonkit wrote",
        ),
    }
    for name, (edited, want) in edits.items():
        assert edited != html, name
        page.write_text(edited, encoding="utf-8")
        try:
            r = built.run("-m", "lessonkit", "verify", "--site", "site")
        finally:
            page.write_text(html, encoding="utf-8")
        assert r.returncode == 1, name
        lines = [
            line
            for line in r.stderr.splitlines()
            if line.startswith("site/r/index.html: ") and "changed after" not in line
        ]
        assert len(lines) == 1 and lines[0].startswith(want), (name, r.stderr[-2000:])


def test_the_reference_example_is_a_block_built_here():
    reference = (ROOT / "docs" / "dev" / "annotation-reference.md").read_text(encoding="utf-8")
    section = reference[reference.index("\n## runnable\n") :]
    section = section[: section.index("\n## ", 1)]
    (example,) = [part.split("```", 1)[0] for part in section.split("```runnable\n")[1:]]
    assert "```runnable\n" + example + "```\n" in PAGE


@pytest.mark.parametrize(
    "body, line, name",
    [
        ("import numpy as np\nprint(np.ones(2))", 6, "numpy"),
        ("import math\n\nfrom autograd import grad\nprint(grad(math.sin)(0.0))", 8, "autograd"),
        ("import mini_autograd\nimport mini_autograd.helpers\nimport scipy.linalg", 8, "scipy"),
    ],
)
def test_an_import_the_browser_does_not_have_is_refused_at_its_line(site, real_project, body, line, name):
    _with_runtime(site, real_project)
    page = site.page("a.md", "# A\n\n" + block("runnable", "Title: t", body=body))
    assert site.problems([page]) == [
        f"docs/a.md:{line}: the snippet imports `{name}`, which the browser's Python does not have (it has the "
        "standard library and this repository's teaching modules) — show code that needs it with an experiment "
        "block: it runs at build time with the pinned tree"
    ]


def test_other_mistakes_are_one_located_line(site, real_project):
    page = site.page("a.md", "# A\n\n" + block("runnable", "Title: t", body="print(1)"))
    assert site.problems([page]) == [
        "docs/a.md:3: a runnable block needs the browser runtime, and this project pins none — add "
        "sourcemap/pyodide.toml (see the engine guide, `exercise`), or show the code as an experiment"
    ]
    _with_runtime(site, real_project)
    page = site.page("a.md", "# A\n\n" + block("runnable", "Title: t", body="x = 1\nprint(x +)"))
    assert site.problems([page]) == [
        "docs/a.md:7: the snippet is not Python: invalid syntax — a runnable block's body is the code the reader runs"
    ]
    page = site.page("a.md", "# A\n\n" + block("runnable", "Title: t"))
    assert site.problems([page]) == [
        "docs/a.md:3: a runnable block without code — write the snippet as the block's body"
    ]


@pytest.mark.parametrize(
    "code, want",
    [
        ("print('a')\nraise ValueError('no')\n", ("a\n", "ValueError: no", 1)),
        ("import sys\nprint('b')\nsys.exit(3)\n", ("b\n", "", 3)),
    ],
)
def test_the_browsers_runner_shows_a_failure_as_python_would(tmp_path, code, want):
    probe = (
        "import json, sys\nsys.path.insert(0, sys.argv[1])\nimport lkrun\n"
        "print(json.dumps(lkrun.run(sys.argv[2], sys.argv[3], [])))"
    )
    r = subprocess.run(
        [sys.executable, "-I", "-B", "-c", probe, str(LKRUN.parent), code, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    ran = json.loads(r.stdout)
    stdout, last, status = want
    assert ran["stdout"] == stdout and ran["status"] == status
    if last:
        lines = ran["stderr"].splitlines()
        assert lines[0] == "Traceback (most recent call last):" and lines[-1] == last
        assert '  File "<snippet>", line 2, in <module>' in lines and "lkrun" not in ran["stderr"]
    else:
        assert ran["stderr"] == ""
