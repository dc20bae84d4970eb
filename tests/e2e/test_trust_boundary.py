"""The trust boundary: a file of docs/ never stands in for a file the engine or the theme writes
(build and verify say so in one line naming both), and ``lessonkit verify --base REF`` lists every
trusted file (build configuration and code) that differs from a git revision, in a real repository."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import site  # noqa: F401 (fixture)

from lessonkit.config import checks
from lessonkit.errors import LessonError
from lessonkit.integrations.mkdocs import boundary

HINT = (
    "a file of docs/ may not stand in for a file the engine or the theme writes: give yours another name "
    "and link to it by that name"
)


def material_stylesheet() -> str:
    """The site path of Material's own stylesheet (its name carries a content hash)."""
    import material

    folder = Path(material.__file__).parent / "templates"
    return next(p.relative_to(folder).as_posix() for p in sorted(folder.glob("assets/stylesheets/main.*.min.css")))


def test_docs_files_that_replace_engine_or_theme_files_are_named_with_their_owner(tmp_path):
    root = tmp_path
    theme = tmp_path / "theme"
    (theme / "assets" / "images").mkdir(parents=True)
    (theme / "assets" / "images" / "favicon.png").write_bytes(b"png")
    (theme / "main.html").write_text("template, never copied")
    (root / "overrides" / "assets").mkdir(parents=True)
    (root / "overrides" / "assets" / "own.js").write_text("")
    for rel in (
        "assets/lessonkit.css",
        "assets/images/favicon.png",
        "assets/own.js",
        "search/search_index.json",
        "sitemap.xml",
        "downloads/bundle.zip",
        "assets/images/mine.png",  # a file of the series' own: fine
        "main.html",  # the theme's template is rendered, not copied: fine
        "assets/lessonkit.md",  # a page becomes its own .html: fine
    ):
        (root / "docs" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "docs" / rel).write_text("x")
    written = checks.written_files(
        root, [root / "overrides", theme], ("404.html", "sitemap.xml"), {"downloads/bundle.zip": "the engine's bundle"}
    )
    assert [str(p) for p in checks.replaced_files(root, written)] == [
        f"docs/assets/images/favicon.png: would replace theme/assets/images/favicon.png "
        f"(both are site/assets/images/favicon.png) — {HINT}",
        f"docs/assets/lessonkit.css: would replace lessonkit/assets/lessonkit.css (both are site/assets/lessonkit.css) "
        f"— {HINT}",
        f"docs/assets/own.js: would replace overrides/assets/own.js (both are site/assets/own.js) — {HINT}",
        f"docs/downloads/bundle.zip: would replace the engine's bundle (both are site/downloads/bundle.zip) — {HINT}",
        "docs/search/search_index.json: would replace the search plugin's index (site/search/) (both are "
        f"site/search/search_index.json) — {HINT}",
        f"docs/sitemap.xml: would replace the theme's sitemap.xml (both are site/sitemap.xml) — {HINT}",
    ]


def test_pages_of_docs_at_a_page_the_engine_writes_are_named_too(tmp_path):
    from lessonkit.attachments import ENGINE_PAGE_OWNERS

    for rel in ("symbols.md", "source/index.md", "code/x.md", "sources.md", "lessons/symbols.md"):
        (tmp_path / "docs" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "docs" / rel).write_text("# x\n")
    assert [str(p).split(" — ")[0] for p in checks.replaced_files(tmp_path, {}, ENGINE_PAGE_OWNERS)] == [
        "docs/code/x.md: would replace the engine's code pages (site/code/) (the engine writes the page code/x.md "
        "itself)",
        "docs/source/index.md: would replace the engine's source browser (site/source/) (the engine writes the page "
        "source/index.md itself)",
        "docs/symbols.md: would replace the engine's symbol index page (the engine writes the page symbols.md itself)",
    ]


def test_the_theme_folders_are_found_as_mkdocs_finds_them(tmp_path):
    from mkdocs.theme import Theme

    dirs, statics = boundary.theme_dirs(tmp_path, "theme:\n  name: material\n  custom_dir: overrides\n")
    real = Theme(name="material", custom_dir=str(tmp_path / "overrides"))
    assert [str(d) for d in dirs] == [str(Path(d)) for d in real.dirs]
    assert set(statics) == set(real.static_templates)


def test_a_docs_stylesheet_in_place_of_the_engines_stops_build_and_verify(site):  # noqa: F811
    """The red team's case: docs/assets/lessonkit.css replaced the engine's stylesheet (CSS
    `content:` rules then forged output on every page); and Material's own stylesheet."""
    ours = site.root / "docs" / "assets" / "lessonkit.css"
    ours.parent.mkdir(parents=True)
    ours.write_text(".lk-output::after { content: 'forged' }\n")
    theirs = material_stylesheet()
    (site.root / "docs" / theirs).parent.mkdir(parents=True, exist_ok=True)
    (site.root / "docs" / theirs).write_text("body { display: none }\n")
    expected = [
        f"docs/assets/lessonkit.css: would replace lessonkit/assets/lessonkit.css (both are site/assets/lessonkit.css) "
        f"— {HINT}",
        f"docs/{theirs}: would replace material/templates/{theirs} (both are site/{theirs}) — {HINT}",
    ]
    built = site.build()
    assert built.returncode == 1 and "Traceback" not in built.stderr
    errors = [line.split("-  ", 1)[1] for line in built.stderr.splitlines() if line.startswith("ERROR")]
    assert errors == expected, built.stderr[-3000:]
    assert not (site.root / "site" / "assets" / "lessonkit.css").exists()
    checked = site.verify()
    assert checked.returncode == 1
    assert checked.stderr.splitlines()[:2] == expected, checked.stderr


# ---------------------------------------------------------------- verify --base, in a real repository


def git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org"}
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.org", GIT_CONFIG_GLOBAL=os.devnull)
    r = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, env=env, check=True)
    return r.stdout


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


BASE_YML = """\
site_name: t
theme:
  name: material
  custom_dir: overrides
hooks:
  - hooks/h.py
extra_css:
  - css/extra.css
markdown_extensions:
  - localext
  - toc:
      slugify: !!python/object/apply:pymdownx.slugs.slugify
        kwds: {case: lower}
"""


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    write(
        root,
        {
            "mkdocs.yml": BASE_YML,
            "hooks/h.py": "x = 1\n",
            "localext.py": "def makeExtension(**kw):\n    pass\n",
            "docs/index.md": "# t\n",
            "docs/css/extra.css": "body {}\n",
            "docs/js/later.js": "// not named yet\n",
            "docs/assets/mine.png": "png\n",
            "experiments/e.py": "print(1)\n",
            "experiments/kind.py": "KINDS = []\n",
            "sourcemap/kinds.toml": 'modules = ["lessonkit_ext.kinds"]\n',
            "lessonkit_ext/__init__.py": "",
            "lessonkit_ext/kinds.py": "KINDS = []\n",
            "templates/t.md": "t\n",
            "tools/a.py": "a = 1\n",
            "lessonkit/x.py": "x = 1\n",
            "overrides/main.html": "{% extends 'base.html' %}\n",
            "requirements.txt": "a==1\n",
        },
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root


def test_untrusted_changes_are_not_listed(repo):
    write(repo, {"docs/index.md": "# changed\n", "experiments/e.py": "print(2)\n", "templates/t.md": "u\n"})
    write(repo, {"docs/assets/new.png": "png\n", "sourcemap/site.toml": "[upstream]\n"})
    (repo / "docs" / "assets" / "mine.png").unlink()
    assert boundary.changed_trusted(repo, "main") == []


def test_every_kind_of_trusted_change_is_listed(repo):
    write(repo, {"hooks/h.py": "x = 2\n", "docs/css/extra.css": "body { color: red }\n", "requirements.txt": "a==2\n"})
    (repo / "tools" / "a.py").unlink()  # deleted
    git(repo, "mv", "lessonkit/x.py", "lessonkit/y.py")  # renamed
    write(repo, {".github/workflows/new.yml": "on: push\n"})  # added, not yet tracked
    write(repo, {"localext.py": "def makeExtension(**kw):\n    return 1\n"})  # a Markdown extension module
    write(repo, {"overrides/partials/footer.html": "<footer></footer>\n"})  # added to custom_dir
    write(repo, {"sourcemap/pyodide.toml": 'version = "1.0.0"\n'})  # the lock of the browser's Python
    assert boundary.changed_trusted(repo, "main") == [
        ".github/workflows/new.yml",
        "docs/css/extra.css",
        "hooks/h.py",
        "lessonkit/x.py",
        "lessonkit/y.py",
        "localext.py",
        "overrides/partials/footer.html",
        "requirements.txt",
        "sourcemap/pyodide.toml",
        "tools/a.py",
    ]


def test_files_that_become_trusted_are_listed(repo):
    """Unchanged files become build code or style when mkdocs.yml or kinds.toml starts naming them."""
    write(repo, {"mkdocs.yml": BASE_YML + "extra_javascript:\n  - js/later.js\n"})
    write(repo, {"sourcemap/kinds.toml": 'modules = ["lessonkit_ext.kinds", "experiments.kind"]\n'})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "pr")
    assert boundary.changed_trusted(repo, "main~1") == ["docs/js/later.js", "experiments/kind.py", "mkdocs.yml"]


def test_compiled_forms_of_a_listed_module_are_trusted_files_too(repo):
    """Python imports a sourceless ``.pyc`` or an extension module where the ``.py`` would be: a
    listed module in either form (or its package's ``__init__``) is build code a maintainer reviews."""
    write(repo, {"sourcemap/kinds.toml": 'modules = ["lessonkit_ext.kinds", "experiments.rt", "pkg.sub.mod"]\n'})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "list")
    write(repo, {"experiments/rt.pyc": "compiled\n", "pkg/__init__.cpython-311-x86_64-linux-gnu.so": "elf\n"})
    write(repo, {"pkg/sub/mod.abi3.so": "elf\n", "lessonkit_ext/kinds.pyc": "compiled\n"})
    git(repo, "add", "-f", "-A")
    git(repo, "commit", "-q", "-m", "compiled")
    assert boundary.changed_trusted(repo, "main~1") == [
        "experiments/rt.pyc",
        "lessonkit_ext/kinds.pyc",
        "pkg/__init__.cpython-311-x86_64-linux-gnu.so",
        "pkg/sub/mod.abi3.so",
    ]


def test_a_listed_module_that_is_compiled_code_is_refused_before_it_runs(tmp_path):
    import py_compile

    from lessonkit.config import modules

    (tmp_path / "experiments").mkdir()
    source = tmp_path / "src.py"
    source.write_text("open('ran', 'w').close()\n", encoding="utf-8")
    py_compile.compile(str(source), cfile=str(tmp_path / "experiments" / "rt.pyc"))
    with pytest.raises(LessonError) as exc:
        modules.import_project_module(tmp_path, "experiments.rt", "sourcemap/kinds.toml", 1, "kind")
    assert str(exc.value) == (
        "sourcemap/kinds.toml:1: cannot import kind module `experiments.rt`: `experiments/rt.pyc` is compiled "
        "code, which nobody can review — kind modules are Python source (`.py`) of the project"
    )
    assert not (tmp_path / "ran").exists() and not Path("ran").exists()


def test_verify_base_prints_one_line_each_and_fails_before_reading_the_project(repo):
    write(repo, {"hooks/h.py": "x = 2\n"})
    (repo / "tools" / "a.py").unlink()
    git(repo, "checkout", "-q", "-b", "pr")
    git(repo, "commit", "-q", "-am", "pr")
    r = subprocess.run(
        [sys.executable, "-m", "lessonkit", "--root", str(repo), "verify", "--base", "main"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 1
    assert r.stderr.splitlines() == [
        "hooks/h.py: trusted file changed since main — a maintainer must review it",
        "tools/a.py: trusted file changed since main — a maintainer must review it",
        "verify --base main: 2 trusted file(s) changed; the other checks did not run (they would run the changed code)",
    ]
    bad = subprocess.run(
        [sys.executable, "-m", "lessonkit", "--root", str(repo), "verify", "--base", "no-such-branch"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 1
    assert bad.stderr.splitlines() == [
        "--base: `no-such-branch` is not a commit of this repository — give the branch or commit the change is "
        "compared with (fetch it first, e.g. origin/main)"
    ]


def test_verify_base_with_no_trusted_change_runs_the_usual_checks(site):  # noqa: F811
    git(site.root, "init", "-q", "-b", "main")
    git(site.root, "add", "-A")
    git(site.root, "commit", "-q", "-m", "base")
    site.page("second.md", "# 二\n")
    r = site.verify("--base", "main")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("verify: 2 page(s)"), r.stdout


def test_the_workflow_checks_the_trusted_files_of_every_pull_request():
    import yaml
    from support import ROOT

    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "site.yml").read_text(encoding="utf-8"))
    steps = workflow["jobs"]["build"]["steps"]
    assert steps[0] == {"uses": "actions/checkout@v4", "with": {"fetch-depth": 0}}  # the base branch is there
    step = next(s for s in steps if "verify --base" in s.get("run", ""))
    assert step["run"] == '.nox/lessonkit/bin/python -m lessonkit verify --base "origin/$BASE_REF"'
    assert step["env"] == {"BASE_REF": "${{ github.base_ref }}"}  # never expanded into the script itself
    assert step["if"] == "${{ !cancelled() && github.event_name == 'pull_request' }}"


def test_a_deleted_module_that_the_configuration_named_is_listed(repo):
    """A module named at the base (a Markdown extension of mkdocs.yml) and deleted since, with the
    name dropped from mkdocs.yml as well: both changes are listed."""
    (repo / "localext.py").unlink()
    write(repo, {"mkdocs.yml": BASE_YML.replace("  - localext\n", "")})
    assert boundary.changed_trusted(repo, "main") == ["localext.py", "mkdocs.yml"]


def test_a_docs_file_at_the_path_of_a_generated_source_page_stops_build_and_verify(site):  # noqa: F811
    """site/source/autograd/core.py/ is the folder of the engine's page of autograd/core.py: a
    docs/source/autograd/core.py would be copied there first (the build then ended in a
    FileExistsError). It is one line, in the build and in verify."""
    evil = site.root / "docs" / "source" / "autograd" / "core.py"
    evil.parent.mkdir(parents=True)
    evil.write_text("print('not the pinned source')\n")
    expected = [
        "docs/source/autograd/core.py: would replace the engine's source browser (site/source/) (the engine writes "
        f"the pages under site/source/ itself) — {HINT}"
    ]
    built = site.build()
    assert built.returncode == 1 and "Traceback" not in built.stderr, built.stderr[-3000:]
    errors = [line.split("-  ", 1)[1] for line in built.stderr.splitlines() if line.startswith("ERROR")]
    assert errors == expected, built.stderr[-3000:]
    checked = site.verify()
    assert checked.returncode == 1 and "Traceback" not in checked.stderr
    assert checked.stderr.splitlines()[:1] == expected, checked.stderr


def test_code_python_runs_for_where_it_is_is_trusted(repo):
    """A module at the project's root runs in every process (`sitecustomize.py`) or replaces the
    standard library's (`argparse.py`: the root is first on sys.path for `python -m`); pytest runs
    every conftest and test file. Each is build code a maintainer reviews; a `.py` deeper down is not."""
    write(repo, {"sitecustomize.py": "x = 1\n", "argparse.py": "x = 1\n", "json/__init__.py": "x = 1\n"})
    write(repo, {"docs/conftest.py": "x = 1\n", "mini/tests/test_m.py": "x = 1\n", "hook.pth": "import os\n"})
    write(repo, {"experiments/e2.py": "print(3)\n", "docs/snippets/s.py": "x = 1\n"})
    assert boundary.changed_trusted(repo, "main") == [
        "argparse.py",
        "docs/conftest.py",
        "hook.pth",
        "json/__init__.py",
        "mini/tests/test_m.py",
        "sitecustomize.py",
    ]
