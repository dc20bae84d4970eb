"""``lessonkit init``: a new series for a package of the index, as a new author makes it — a fresh
virtual environment, ``pip install`` of this repository, ``lessonkit init``, ``mkdocs build
--strict`` and ``lessonkit verify --mutate``, all passing on the files as created."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lessonkit.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "more-itertools==10.5.0"  # pure Python; its sdist is more-itertools-10.5.0.tar.gz


def _uv() -> str | None:
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        return shutil.which("uv")


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory) -> Path:
    """A new environment with only this repository installed (its declared dependencies, no lock)."""
    venv = tmp_path_factory.mktemp("author") / "venv"
    uv = _uv()
    if uv:
        subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
        install = [uv, "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), str(ROOT)]
    else:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        install = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(ROOT)]
    r = subprocess.run(install, capture_output=True, text=True, timeout=900)
    if r.returncode:
        pytest.skip(f"cannot install the project from the package index: {r.stderr.strip()[-300:]}")
    return venv


def test_a_new_author_starts_a_series_from_the_index(fresh_venv, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LESSONKIT_", "AUTOGRAD_", "PYTHON"))}
    env.update(NO_MKDOCS_2_WARNING="1", SOURCE_DATE_EPOCH="1764460800")
    bin_dir = fresh_venv / "bin"
    series = tmp_path / "my-series"

    def run(*args: str, cwd: Path = tmp_path) -> subprocess.CompletedProcess:
        return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)

    made = run(str(bin_dir / "lessonkit"), "init", str(series), "--package", PACKAGE, "--lang", "en")
    assert made.returncode == 0, made.stderr
    assert (
        made.stdout.splitlines()[-1] == f"next: cd {series} && lessonkit build && lessonkit verify --mutate --site site"
    )
    yml = (series / "mkdocs.yml").read_text(encoding="utf-8")
    assert (
        "plugins:\n  - search\n  - lessonkit:\n      course: true\n" in yml
        and "markdown_extensions" not in yml
        and "hooks" not in yml
    )
    built = run(str(bin_dir / "mkdocs"), "build", "--strict", cwd=series)
    assert built.returncode == 0, built.stderr
    assert "lessonkit: 1 experiment(s): 1 run" in built.stderr
    # a long step says it has started, once (not a terminal: no counter)
    assert built.stderr.count("lessonkit: running 1 experiment(s) in the background …") == 1
    checked = run(str(bin_dir / "lessonkit"), "verify", "--mutate", "--site", "site", cwd=series)
    assert checked.returncode == 0, checked.stderr
    assert re.search(r"^verify: 2 page\(s\), 1 real-source, .* 0 problem\(s\)", checked.stdout, re.M), checked.stdout
    assert "mutations: 1/1 caught (100%)" in checked.stdout
    assert re.search(
        r"^site: \d+ HTML file\(s\) of site/, 2 engine block\(s\), .*; 0 problem\(s\)", checked.stdout, re.M
    )
    # the page shows the pinned function and the experiment's output from this build
    page = (series / "site" / "lessons" / "01-first-look" / "index.html").read_text(encoding="utf-8")
    assert "lk-real-source" in page and "more_itertools/more.py" in page
    assert "more_itertools.more from the pinned tree: more_itertools/more.py" in page
    # an English series names nothing of the first series, nor Chinese text
    for path in sorted((series / "site").rglob("*.html")):
        text = path.read_text(encoding="utf-8")
        for word in ("NumPy", "numpy", "autograd", "jieba"):
            assert word not in text, (path, word)
        assert not re.search(r"[\u4e00-\u9fff]", text), path
    # the next lesson: `lessonkit new` from the templates init wrote, verified as created
    nxt = run(str(bin_dir / "lessonkit"), "new", "02", "A second look", "second-look", cwd=series)
    assert nxt.returncode == 0, nxt.stderr
    assert "lessons/02-second-look.md" in (series / "mkdocs.yml").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--package", "more-itertools"], "--package: --package 'more-itertools' is not NAME==VERSION — e.g. "),
        (["--package", "x==1", "--lang", "fr"], None),  # argparse refuses the choice
    ],
)
def test_init_refuses_bad_arguments_in_one_line(tmp_path, capsys, args, message):
    with pytest.raises(SystemExit) if message is None else _nothing():
        rc = main(["init", str(tmp_path / "s"), *args])
        assert rc == 1
        err = capsys.readouterr().err.strip()
        assert err.startswith(message) and "\n" not in err
    assert not (tmp_path / "s").exists()


def test_experiment_progress_counts_on_a_terminal():
    """On a terminal the counter rewrites one line and ends it when the last job is done."""
    import io
    from concurrent.futures import Future

    from lessonkit.build import Build
    from lessonkit.run.jobs import Pending

    class Tty(io.StringIO):
        def isatty(self):
            return True

    futures = {k: Future() for k in "abc"}
    pending = Pending(futures, pool=None, to_run=3, signals=None)
    out, logged = Tty(), []
    b = Build.__new__(Build)
    b.log_info = logged.append
    saved, sys.stderr = sys.stderr, out
    try:
        b._progress(pending)
        for f in futures.values():
            f.set_result(None)
    finally:
        sys.stderr = saved
    assert logged == []
    assert out.getvalue() == "".join(f"\r\x1b[Klessonkit: experiments {n}/3 …" for n in (1, 2, 3)) + "\n"


def test_init_refuses_a_folder_that_is_not_empty(tmp_path, capsys):
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "notes.txt").write_text("mine\n", encoding="utf-8")
    assert main(["init", str(tmp_path / "s"), "--package", "more-itertools==10.5.0"]) == 1
    assert (
        capsys.readouterr().err.strip()
        == f"DEST: {tmp_path / 's'} exists and is not an empty folder — give a new folder"
    )
    assert (tmp_path / "s" / "notes.txt").read_text(encoding="utf-8") == "mine\n"


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _sdist(tmp_path: Path, files: dict[str, str]) -> Path:
    """A release archive ``srcpkg-0.1.tar.gz`` holding ``files`` under ``srcpkg-0.1/``."""
    import tarfile

    tree = tmp_path / "srcpkg-0.1"
    for rel, text in {"PKG-INFO": "Metadata-Version: 2.1\nName: srcpkg\nVersion: 0.1\n", **files}.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text, encoding="utf-8")
    archive = tmp_path / "srcpkg-0.1.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(tree, arcname="srcpkg-0.1")
    return archive


SRC_LAYOUT = {
    # the sdist's own build helpers come first in file order; they are never the example
    "setup.py": "def setup_kwargs():\n    name = 'srcpkg'\n    return {'name': name}\n",
    "versioneer.py": "def get_root():\n    root = '.'\n    return root\n",
    "src/srcpkg.egg-info/top_level.txt": "srcpkg\n",
    "src/srcpkg/__init__.py": "from srcpkg.shapes import area\n",
    # the module's first function returns nothing (a nested function's return does not count)
    "src/srcpkg/shapes.py": (
        "def register(shape):\n    def key():\n        return shape\n    REGISTRY.append(key)\n\n"
        'def area(w, h):\n    """The area of a w by h rectangle."""\n    return w * h\n\nREGISTRY = []\n'
    ),
}


def test_init_picks_the_package_not_the_build_helpers_and_imports_a_src_layout_from_src(tmp_path, capsys):
    """A package under src/ (the src layout): the lesson shows a function of the package (not of
    setup.py or versioneer.py), site.toml says `[experiments] path = "src"`, and the experiment
    imports the package from the pinned tree's src/ folder in the build; verify --site passes."""
    archive = _sdist(tmp_path / "dist", SRC_LAYOUT)
    series = tmp_path / "s"
    assert main(["init", str(series), "--package", "srcpkg==0.1", "--sdist", str(archive), "--lang", "en"]) == 0
    lesson = (series / "docs" / "lessons" / "01-first-look.md").read_text(encoding="utf-8")
    assert "File: src/srcpkg/shapes.py\nSymbol: area\n" in lesson  # the function that returns a value
    assert "1. Which line of `area` returns its result?\n" in lesson
    site_toml = (series / "sourcemap" / "site.toml").read_text(encoding="utf-8")
    assert 'package = "src/srcpkg/"\n' in site_toml and '[experiments]\npath = "src"' in site_toml
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LESSONKIT_", "AUTOGRAD_"))}
    env.update(NO_MKDOCS_2_WARNING="1", LESSONKIT_SDIST=str(archive), LESSONKIT_CACHE=str(tmp_path / "cache"))

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, *args], cwd=series, env=env, capture_output=True, text=True, timeout=600)

    built = run("-m", "mkdocs", "build", "--strict")
    assert built.returncode == 0, built.stderr[-2000:]
    page = (series / "site" / "lessons" / "01-first-look" / "index.html").read_text(encoding="utf-8")
    assert "srcpkg.shapes from the pinned tree: src/srcpkg/shapes.py" in page
    checked = run("-m", "lessonkit", "verify", "--site", "site")
    assert checked.returncode == 0, checked.stderr[-2000:]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_function_that_returns_nothing_gets_a_question_about_what_it_changes(tmp_path, lang):
    files = {
        "srcpkg.egg-info/top_level.txt": "srcpkg\n",
        "srcpkg/__init__.py": "REGISTRY = []\n\n\ndef register(x):\n    REGISTRY.append(x)\n    REGISTRY.sort()\n",
    }
    archive = _sdist(tmp_path / "dist", files)
    series = tmp_path / "s"
    assert main(["init", str(series), "--package", "srcpkg==0.1", "--sdist", str(archive), "--lang", lang]) == 0
    lesson = (series / "docs" / "lessons" / "01-first-look.md").read_text(encoding="utf-8")
    assert "File: srcpkg/__init__.py\nSymbol: register\n" in lesson
    question = {
        "en": "1. `register` returns nothing: what does it change, and where?\n",
        "zh": "1. `register` 不返回值：它改变了什么，在哪一行？\n",
    }
    assert question[lang] in lesson and "returns its result" not in lesson and "返回结果" not in lesson


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            '"lib"',
            "sourcemap/site.toml:2: `path` in `[experiments]` names `lib`, which holds no Python file of the "
            "pinned tree",
        ),
        ('"../src"', "sourcemap/site.toml:2: `path` in `[experiments]` "),
        ("3", "sourcemap/site.toml:2: `path` in `[experiments]` "),
    ],
)
def test_a_wrong_experiments_path_is_one_located_line(tmp_path, value, message):
    archive = _sdist(tmp_path / "dist", SRC_LAYOUT)
    series = tmp_path / "s"
    assert main(["init", str(series), "--package", "srcpkg==0.1", "--sdist", str(archive), "--lang", "en"]) == 0
    (series / "sourcemap" / "site.toml").write_text(f"[experiments]\npath = {value}\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LESSONKIT_", "AUTOGRAD_"))}
    env.update(LESSONKIT_SDIST=str(archive), LESSONKIT_CACHE=str(tmp_path / "cache"))
    r = subprocess.run(
        [sys.executable, "-m", "lessonkit", "verify"], cwd=series, env=env, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 1
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(message) and " — " in lines[0], r.stderr


def test_init_prints_the_paths_as_given_and_ignores_what_the_commands_write(tmp_path, capsys, monkeypatch):
    """An absolute DEST is printed as given (not relative to the working folder); the .gitignore
    lists every folder lessonkit writes into the series: the cache, the site and repin's report."""
    archive = _sdist(tmp_path / "dist", SRC_LAYOUT)
    series = tmp_path / "abs" / "s"
    monkeypatch.chdir(tmp_path / "dist")
    assert main(["init", str(series), "--package", "srcpkg==0.1", "--sdist", str(archive), "--lang", "en"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"created {series}/mkdocs.yml"
    assert all(line.startswith(f"created {series}/") for line in out[:-1]), out
    assert (series / ".gitignore").read_text(encoding="utf-8") == ".cache/\nsite/\nsite-repin/\n__pycache__/\n"


@pytest.mark.parametrize(
    ("title", "slug"),
    [
        ("Three: a / b", "three-a-b"),
        ("Sorting, fast and slow (part 2)", "sorting-fast-and-slow-part-2"),
        ("第三课", "lesson-03"),
    ],
)
def test_new_without_a_slug_takes_it_from_the_title_and_says_so(tmp_path, capsys, monkeypatch, title, slug):
    archive = _sdist(tmp_path / "dist", SRC_LAYOUT)
    series = tmp_path / "s"
    assert main(["init", str(series), "--package", "srcpkg==0.1", "--sdist", str(archive), "--lang", "en"]) == 0
    monkeypatch.setenv("LESSONKIT_SDIST", str(archive))
    monkeypatch.setenv("LESSONKIT_CACHE", str(tmp_path / "cache"))
    capsys.readouterr()
    assert main(["--root", str(series), "new", "03", title]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"slug: {slug} (from the title; give a SLUG after the title for another)"
    assert out[1] == f"created docs/lessons/03-{slug}.md"
    assert (series / "docs" / "lessons" / f"03-{slug}.md").is_file()
    assert f"      - lessons/03-{slug}.md" in (series / "mkdocs.yml").read_text(encoding="utf-8")


def test_a_chinese_series_gets_every_label_and_the_engine_pages_in_chinese(tmp_path, capsys, monkeypatch):
    """`--lang zh`: site.toml sets every label of the engine, templates/ holds Chinese copies of the
    generated pages (acceptance record, source browser, symbol index, …), and the built pages
    show none of the engine's English; without jieba, init says in one line how to get it."""
    import importlib.util
    import tomllib

    from lessonkit.config.labels import LABELS

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "jieba" else real_find_spec(n, *a))
    archive = _sdist(tmp_path / "dist", SRC_LAYOUT)
    series = tmp_path / "s"
    assert main(["init", str(series), "--package", "srcpkg==0.1", "--sdist", str(archive), "--lang", "zh"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-2] == (
        "note: Chinese search needs jieba to split words: pip install 'lessonkit[zh]' "
        "(without it the search index is built without Chinese word segmentation)"
    )
    with (series / "sourcemap" / "site.toml").open("rb") as f:
        labels = tomllib.load(f)["labels"]
    assert set(labels) == set(LABELS)
    engine_pages = ["acceptance.md", "bundle-readme.md", "code-page.md", "repo-map.md", "source-index.md"]
    engine_pages += ["source-page.md", "symbols.md"]
    assert sorted(p.name for p in (series / "templates").iterdir()) == sorted(
        engine_pages + ["new-experiment.py", "new-lesson.md"]
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LESSONKIT_", "AUTOGRAD_"))}
    env.update(NO_MKDOCS_2_WARNING="1", LESSONKIT_SDIST=str(archive), LESSONKIT_CACHE=str(tmp_path / "cache"))
    built = _python(series, env, "mkdocs", "build", "--strict")
    assert built.returncode == 0, built.stderr[-2000:]
    site = series / "site"
    titles = {
        "attachments/acceptance/index.html": "本次构建的验收记录",
        "source/index.html": "源码浏览",
        "symbols/index.html": "符号索引",
        "lessons/01-first-look/index.html": "01 · 初读 <code>area</code>",
    }
    english = ["Acceptance record", "Source browser", "Symbol index", "exit code", "package index", "Jump to the"]
    english += ["The build generates", "namespaces; the script", "Output of this build", "Checked:", "Cited by"]
    english += ["Upstream:", "Made with", "Source excerpts from", "not stated in"]
    english += ["from the pinned tree", "is callable"]  # what the first experiment prints
    for page, title in titles.items():
        html = (site / page).read_text(encoding="utf-8")
        assert re.search(r"<h1 id=\"[^\"]*\">" + re.escape(title), html), page
        for words in english:
            assert words not in html, (page, words)
    assert "源码节选取自 srcpkg 0.1，许可证（据其包元数据）：未注明。" in html  # the footer
    lesson = (site / "lessons/01-first-look/index.html").read_text(encoding="utf-8")
    assert "srcpkg.shapes 来自固定源码树： src/srcpkg/shapes.py" in lesson and "area 可以调用： True" in lesson
    assert (series / "templates/new-experiment.py").read_text(encoding="utf-8").startswith('"""第 {{ nn }} 篇的实验')
    assert "上游仓库：<a" in html and "用 MkDocs 与 Material for MkDocs 构建" in html
    missing = (site / "404.html").read_text(encoding="utf-8")  # Material's own says "Not found"
    assert "<h1>404 · 页面不存在</h1>" in missing and "Not found" not in missing and ">回到首页</a>" in missing
    acceptance = (site / "attachments/acceptance/index.html").read_text(encoding="utf-8")
    assert "本地发布包（" in acceptance and "| 退出码 |" not in acceptance and ">退出码<" in acceptance
    checked = _python(series, env, "lessonkit", "verify", "--site", "site")
    assert checked.returncode == 0, checked.stderr[-2000:]


def _python(series: Path, env: dict[str, str], module: str, *args: str) -> subprocess.CompletedProcess:
    """``python -m MODULE ARGS`` in the series' folder (this interpreter, its installed lessonkit)."""
    return subprocess.run(
        [sys.executable, "-m", module, *args], cwd=series, env=env, capture_output=True, text=True, timeout=600
    )


@pytest.mark.parametrize(
    ("headers", "licence"),
    [
        ("License-Expression: BSD-3-Clause\nLicense-File: LICENSE.txt\n", "BSD-3-Clause"),
        ("License: MIT\nClassifier: License :: OSI Approved :: MIT License\n", "MIT"),
        ("Classifier: License :: OSI Approved :: Apache Software License\n", "Apache Software License"),
        ("License: UNKNOWN\nClassifier: Programming Language :: Python\n", None),
        ("", None),
    ],
)
def test_the_licence_is_the_one_the_release_metadata_states(headers, licence):
    from email.parser import HeaderParser

    from lessonkit.cli.release import _licence

    assert _licence(HeaderParser().parsestr("Metadata-Version: 2.4\nName: x\n" + headers)) == licence


def test_a_new_series_deploys_with_its_address_footer_and_page_facts(tmp_path):
    """SITE_URL and LESSONKIT_REPO_URL reach the pages of a new series: canonical links, the
    sitemap's addresses (checked under the site's path, the 404 page's links too), the footer with
    the upstream repository and the licence the metadata states, and below each page its date and
    where to report an error; verify --site passes on it."""
    pkg_info = "Metadata-Version: 2.4\nName: srcpkg\nVersion: 0.1\nLicense-Expression: BSD-3-Clause\n"
    archive = _sdist(tmp_path / "dist", {**SRC_LAYOUT, "PKG-INFO": pkg_info})
    series = tmp_path / "s"
    assert main(["init", str(series), "--package", "srcpkg==0.1", "--sdist", str(archive), "--lang", "en"]) == 0
    yml = (series / "mkdocs.yml").read_text(encoding="utf-8")
    assert 'site_url: !ENV [SITE_URL, ""]\n' in yml and '  project_repo: !ENV [LESSONKIT_REPO_URL, ""]\n' in yml
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LESSONKIT_", "AUTOGRAD_"))}
    env.update(NO_MKDOCS_2_WARNING="1", LESSONKIT_SDIST=str(archive), LESSONKIT_CACHE=str(tmp_path / "cache"))
    env.update(SITE_URL="https://example.net/srcpkg/", LESSONKIT_REPO_URL="https://github.com/me/srcpkg-lessons")
    env.update(SOURCE_DATE_EPOCH="1764460800")
    built = _python(series, env, "mkdocs", "build", "--strict")
    assert built.returncode == 0, built.stderr[-2000:]
    site = series / "site"
    page = (site / "lessons" / "01-first-look" / "index.html").read_text(encoding="utf-8")
    assert '<link rel="canonical" href="https://example.net/srcpkg/lessons/01-first-look/">' in page
    sitemap = (site / "sitemap.xml").read_text(encoding="utf-8")
    assert "<loc>https://example.net/srcpkg/lessons/01-first-look/</loc>" in sitemap
    footer = re.sub(r"\s+", " ", page[page.index('<div class="md-copyright">') :].split("</footer>")[0])
    assert (
        '<div class="md-copyright__highlight">Source excerpts from srcpkg 0.1, licence as its package metadata '
        "states it: BSD-3-Clause.</div>"
    ) in footer
    assert 'Upstream: <a href="https://pypi.org/project/srcpkg" rel="noopener">https://pypi.org/project/srcpkg</a>' in (
        footer
    )
    assert 'This series: <a href="https://github.com/me/srcpkg-lessons" rel="noopener">' in footer
    facts = re.sub(r"\s+", " ", re.search(r'<aside class="lk-page-facts">.*?</aside>', page, re.S)[0])
    assert '<span>Last changed: <time datetime="2025-11-30">2025-11-30</time></span>' in facts
    assert (
        '<span>Found an error? <a href="https://github.com/me/srcpkg-lessons/issues/new?title=Error%20on%20'
        'lessons/01-first-look.md" rel="noopener">Report it</a> (<code>lessons/01-first-look.md</code>)</span>'
    ) in facts
    missing = (site / "404.html").read_text(encoding="utf-8")
    assert 'href="/srcpkg/assets/' in missing  # checked under /srcpkg/
    assert "<h1>404 · This page does not exist</h1>" in missing and "Not found" not in missing
    assert '<a href="https://example.net/srcpkg/">Back to the home page</a>, or search' in missing
    checked = _python(series, env, "lessonkit", "verify", "--site", "site")
    assert checked.returncode == 0, checked.stderr[-2000:]


def test_a_package_that_needs_what_is_not_installed_gets_an_experiment_that_reads_its_source(tmp_path, capsys):
    """A release whose metadata requires a distribution this environment lacks would fail to
    import in the build: init says so in one note, and the first experiment reads the pinned
    module's source instead; the series builds and verifies as created."""
    pkg_info = "Metadata-Version: 2.1\nName: srcpkg\nVersion: 0.1\nRequires-Dist: lessonkit-absent-dist>=1\n"
    pkg_info += 'Requires-Dist: pytest; extra == "test"\n'  # an extra's requirement does not count,
    pkg_info += 'Requires-Dist: lessonkit-absent-old; python_version < "3.8"\n'  # nor one for other Pythons
    archive = _sdist(tmp_path / "dist", {**SRC_LAYOUT, "PKG-INFO": pkg_info})
    series = tmp_path / "s"
    assert main(["init", str(series), "--package", "srcpkg==0.1", "--sdist", str(archive), "--lang", "en"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-2] == (
        "note: the first experiment reads src/srcpkg/shapes.py from the pinned tree instead of importing "
        "srcpkg.shapes: srcpkg needs lessonkit-absent-dist, not installed here (pip install lessonkit-absent-dist)"
    )
    script = (series / "experiments" / "lesson01_first_look.py").read_text(encoding="utf-8")
    assert "import srcpkg" not in script and 'path = root / "src/srcpkg/shapes.py"\n' in script
    lesson = (series / "docs" / "lessons" / "01-first-look.md").read_text(encoding="utf-8")
    assert "Purpose: Read srcpkg.shapes in the pinned tree and check that it defines area\n" in lesson
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LESSONKIT_", "AUTOGRAD_"))}
    env.update(NO_MKDOCS_2_WARNING="1", LESSONKIT_SDIST=str(archive), LESSONKIT_CACHE=str(tmp_path / "cache"))
    built = _python(series, env, "mkdocs", "build", "--strict")
    assert built.returncode == 0, built.stderr[-2000:]
    page = (series / "site" / "lessons" / "01-first-look" / "index.html").read_text(encoding="utf-8")
    assert "srcpkg.shapes read from the pinned tree: src/srcpkg/shapes.py" in page
    assert "area is defined there: True" in page
    checked = _python(series, env, "lessonkit", "verify", "--site", "site")
    assert checked.returncode == 0, checked.stderr[-2000:]


def test_a_package_that_reads_its_own_metadata_on_import_gets_an_experiment_that_reads_its_source(tmp_path):
    init_py = "from importlib.metadata import version\n\n__version__ = version('srcpkg')\n"
    archive = _sdist(tmp_path / "dist", {**SRC_LAYOUT, "src/srcpkg/__init__.py": init_py})
    series = tmp_path / "s"
    notes: list[str] = []
    from lessonkit.cli.init import init

    init(series, "srcpkg==0.1", "en", archive, None, notes)
    assert notes == [
        "note: the first experiment reads src/srcpkg/shapes.py from the pinned tree instead of importing "
        "srcpkg.shapes: srcpkg reads the installed package's metadata when imported (edit the experiment to "
        "import it once srcpkg 0.1 is installed here)"
    ]
    script = (series / "experiments" / "lesson01_first_look.py").read_text(encoding="utf-8")
    assert "import srcpkg" not in script and "PINNED_VERSION" not in script
    # guarded by try, the lookup does not stop the import: the experiment imports the package
    guarded = (
        "try:\n    from importlib.metadata import version\n    __version__ = version('srcpkg')\nexcept Exception:\n"
    )
    guarded += "    __version__ = '0'\n"
    archive = _sdist(tmp_path / "dist2", {**SRC_LAYOUT, "src/srcpkg/__init__.py": guarded})
    notes.clear()
    init(tmp_path / "s2", "srcpkg==0.1", "en", archive, None, notes)
    assert notes == []
    assert "import srcpkg.shapes as module\n" in (tmp_path / "s2" / "experiments" / "lesson01_first_look.py").read_text(
        encoding="utf-8"
    )


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (
            {
                "pyproject.toml": '[build-system]\nbuild-backend = "maturin"\n',
                "srcpkg/__init__.py": SRC_LAYOUT["src/srcpkg/shapes.py"],
            },
            "--package: srcpkg-0.1 is not a pure-Python package: its build backend maturin compiles extension "
            "modules — lessonkit init pins pure-Python packages; write the first lesson by hand "
            "(docs/dev/pin-reference.md)",
        ),
        (
            {
                "srcpkg/__init__.py": "from srcpkg._speedups import area\n",
                "srcpkg/_speedups.pyx": "def area(w, h):\n    return w * h\n",
                "srcpkg/shapes.py": "from ._speedups import area\n\n\ndef double(x):\n    y = x * 2\n    return y\n",
            },
            "--package: srcpkg-0.1 is not a pure-Python package: importing srcpkg.shapes needs srcpkg._speedups, "
            "which the archive holds only as compiled source — lessonkit init pins pure-Python packages; write the "
            "first lesson by hand (docs/dev/pin-reference.md)",
        ),
    ],
)
def test_init_refuses_a_package_that_needs_compiling_in_one_line(tmp_path, capsys, files, message):
    archive = _sdist(tmp_path / "dist", files)
    series = tmp_path / "s"
    assert main(["init", str(series), "--package", "srcpkg==0.1", "--sdist", str(archive)]) == 1
    assert capsys.readouterr().err.strip() == message
    assert not series.exists()


def test_an_optional_compiled_speedup_does_not_stop_the_pure_python_modules(tmp_path):
    """A compiled module imported under try (with a pure-Python fallback) does not count."""
    files = {
        "srcpkg/__init__.py": (
            "try:\n    from srcpkg._speedups import area\nexcept ImportError:\n    from srcpkg._native import area\n"
        ),
        "srcpkg/_speedups.c": "/* compiled */\n",
        "srcpkg/_native.py": "def area(w, h):\n    a = w * h\n    return a\n",
    }
    archive = _sdist(tmp_path / "dist", files)
    from lessonkit.cli.init import init

    init(tmp_path / "s", "srcpkg==0.1", "en", archive)
    lesson = (tmp_path / "s" / "docs" / "lessons" / "01-first-look.md").read_text(encoding="utf-8")
    assert "File: srcpkg/_native.py\nSymbol: area\n" in lesson


def test_a_package_whose_init_this_python_cannot_parse_gets_an_experiment_that_reads_its_source(tmp_path):
    """``type X = …`` (Python 3.12) in the package's __init__: under 3.11 importing the package
    fails, so the first experiment reads the module's source; under 3.12+ it imports it."""
    from lessonkit.cli.init import init

    archive = _sdist(tmp_path / "dist", {**SRC_LAYOUT, "src/srcpkg/__init__.py": "type Size = int\n"})
    notes: list[str] = []
    init(tmp_path / "s", "srcpkg==0.1", "en", archive, None, notes)
    script = (tmp_path / "s" / "experiments" / "lesson01_first_look.py").read_text(encoding="utf-8")
    if sys.version_info < (3, 12):
        assert notes == [
            "note: the first experiment reads src/srcpkg/shapes.py from the pinned tree instead of importing "
            f"srcpkg.shapes: srcpkg uses syntax that Python 3.{sys.version_info[1]} cannot parse"
        ]
        assert "import srcpkg" not in script
    else:
        assert notes == [] and "import srcpkg.shapes as module\n" in script


def test_a_package_that_imports_a_module_this_environment_lacks_gets_an_experiment_that_reads_its_source(tmp_path):
    """An import its metadata does not declare (or declares for some Pythons only) is found in the
    source: the package's own modules are followed from the example's, imports under try or if
    (TYPE_CHECKING) do not count; the module is looked up here by name, never imported."""
    from lessonkit.cli.init import init

    shapes = "import json\nfrom . import units\n\n\ndef area(w, h):\n    a = w * h\n    return a\n"
    units = "import lessonkit_absent_module.sub\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
    units += "    import lessonkit_absent_typing\ntry:\n    import lessonkit_absent_optional\nexcept ImportError:\n"
    units += "    pass\n"
    files = {**SRC_LAYOUT, "src/srcpkg/shapes.py": shapes, "src/srcpkg/units.py": units}
    notes: list[str] = []
    init(tmp_path / "s", "srcpkg==0.1", "en", _sdist(tmp_path / "dist", files), None, notes)
    assert notes == [
        "note: the first experiment reads src/srcpkg/shapes.py from the pinned tree instead of importing "
        "srcpkg.shapes: importing it imports lessonkit_absent_module, which this environment does not have "
        "(install the distributions that provide them)"
    ]
