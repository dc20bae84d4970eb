"""``lessonkit init DEST --package NAME==VERSION [--lang en|zh]``: a new series that builds and
verifies as created.

The release archive (sdist) of ``NAME==VERSION`` comes from the package index (``--sdist PATH``
for a local one): its bytes are checked against the sha256 the index lists before anything opens
them, and nothing of it is built or run. Its sha256 and the sha256 of every file are pinned (``sourcemap/pin.toml``,
``sourcemap/manifest.sha256``); the index page, one lesson with a real-source block of a public
function of the package and an experiment that imports the pinned package are written, with the
templates ``lessonkit new`` uses for the next lessons. Nothing is written unless all of it can be.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import tomllib
from pathlib import Path

from lessonkit.cli.example import Example, pick_example
from lessonkit.cli.release import Release, acquire_release
from lessonkit.errors import LessonError
from lessonkit.source import pin

HINT = "e.g. lessonkit init my-series --package more-itertools==10.5.0"
REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]{0,99})==([0-9][A-Za-z0-9.+!-]{0,40})$")


def init(
    dest: Path,
    requirement: str,
    lang: str = "en",
    sdist: Path | None = None,
    repo: str | None = None,
    notes: list[str] | None = None,
) -> list[Path]:
    """Write a new series into ``dest`` (which must not exist or be empty); the files written.
    ``notes``: receives what the author should know about the series written (one line each)."""
    m = REQUIREMENT.fullmatch(requirement.strip())
    if not m:
        raise LessonError(f"--package {requirement!r} is not NAME==VERSION", path="--package", hint=HINT)
    if lang not in ("en", "zh"):
        raise LessonError(f"--lang {lang!r} is not en or zh", path="--lang", hint="use --lang en or --lang zh")
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise LessonError(f"{dest} exists and is not an empty folder", path="DEST", hint="give a new folder")
    name, version = m.groups()
    work = Path(tempfile.mkdtemp(prefix="lessonkit-init-"))
    try:
        release = acquire_release(name, version, work, sdist, repo)
        example = pick_example(release)
        if example.no_import and notes is not None:
            notes.append(
                f"note: the first experiment reads {example.file} from the pinned tree instead of importing "
                f"{example.module}: {example.no_import}"
            )
        files = _files(release, example, lang)
        dest.mkdir(parents=True, exist_ok=True)
        written = []
        for rel, text in files.items():
            path = dest / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            written.append(path)
        pin.write_manifest(release.tree, dest / "sourcemap" / "manifest.sha256")
        written.append(dest / "sourcemap" / "manifest.sha256")
        written += _write_maps(dest, release)
        return written
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _write_maps(dest: Path, release: Release) -> list[Path]:
    """The excerpt and reference maps of the new pages, made as ``lessonkit verify --update-map``
    makes them, on the tree just extracted (its manifest was made from it; the build provides its own)."""
    from lessonkit.checks import living, verify
    from lessonkit.project import Project

    pinned = pin.load_pin(dest / "sourcemap")
    tree = pin.PinnedTree(release.tree, f"sdist {release.archive.name}", pinned)
    project = Project(dest, provided=tree)
    report = verify.check(project)
    if report.problems:  # the engine cannot read what init wrote: a defect of init, said plainly
        raise LessonError("the new series does not verify:\n" + "\n".join(map(str, report.problems)))
    verify.write_map(project, report)
    made = [project.sourcemap / verify.MAP_NAME, living.write_ref_map(project, report)]
    return [dest / p.relative_to(project.root) for p in made]  # as dest is given (the project's root is absolute)


WORDS = Path(__file__).with_name("words.toml")
# The pages the engine generates (acceptance record, source browser, symbol index, …) in Chinese:
# a Chinese series gets its own copies in templates/, as it gets every label in site.toml.
TEMPLATES_ZH = Path(__file__).with_name("templates-zh")


def _words() -> dict[str, dict[str, str]]:
    with WORDS.open("rb") as f:
        return tomllib.load(f)


def _files(release: Release, ex: Example, lang: str) -> dict[str, str]:
    licence = release.licence or _words()[lang]["no-licence"]
    t = {k: v.format(name=release.name, version=release.version, symbol=ex.symbol, module=ex.module,
                     package=ex.package, licence=licence, nn="{{ nn }}")  # `nn`: filled in by `lessonkit new`
         for k, v in _words()[lang].items()}  # fmt: skip
    env = re.sub(r"\W", "_", release.name).upper()
    short = release.sha256[:7]
    pin_toml = (
        f"# The one {release.name} this series is pinned to: the release archive on the package index.\n"
        "# The archive records no commit; its sha256 identifies the tree. Every real-source block is\n"
        "# checked against manifest.sha256 (the sha256 of every file of the archive but PKG-INFO).\n"
        "[upstream]\n"
        f'repo = "{release.repo}"\n'
        f'version = "{release.version}"\n\n'
        "[sdist]\n"
        f'filename = "{release.archive.name}"\n'
        f'sha256 = "{release.sha256}"\n'
        f'requirement = "{release.name}=={release.version}"\n'
        f'root = "{release.root}"\n'
    )
    folder = "/".join(filter(None, (ex.base, ex.package)))
    site_toml = (
        "# What this series is about, for the pages lessonkit generates.\n"
        "[upstream]\n"
        f'name = "{release.name}"\n'
        f'label = "{release.name}"\n'
        + (f'package = "{folder}/"\n' if (release.tree / folder).is_dir() else "")
        + (
            "\n[experiments]\n"
            f'path = "{ex.base}"  # the package is under {ex.base}/: experiments import it from there\n'
            if ex.base
            else ""
        )
    )
    if lang == "zh":
        site_toml += "\n[labels]\n" + "".join(f'{k} = "{v}"\n' for k, v in _words()["zh-labels"].items())
    search = "      lang: zh\n" if lang == "zh" else ""
    mkdocs_yml = (
        f"site_name: {t['site']}\n"
        "# The published address, from the environment: `SITE_URL=https://…/ lessonkit build`. Without\n"
        "# it the site has no canonical links and its sitemap no addresses (rather than a made-up host).\n"
        'site_url: !ENV [SITE_URL, ""]\n'
        "docs_dir: docs\n"
        "site_dir: site\n"
        "strict: true\n"
        f"copyright: {json.dumps(t['copyright'], ensure_ascii=False)}\n\n"
        "theme:\n"
        "  name: material\n"
        "  custom_dir: overrides  # the footer and the line below each page (last change, error report)\n"
        f"  language: {lang}\n"
        "  font: false  # no fonts from another host\n\n"
        "extra:\n"
        f"  upstream_repo: {release.repo}\n"
        "  # this series' own repository, from the environment: `LESSONKIT_REPO_URL=https://… lessonkit build`\n"
        '  project_repo: !ENV [LESSONKIT_REPO_URL, ""]\n\n'
        "# `lessonkit serve` and `mkdocs serve` rebuild when these change too.\n"
        "watch:\n"
        "  - experiments\n"
        "  - sourcemap\n\n"
        "plugins:\n"
        "  - search" + (":\n" + search if search else "\n") + "  - lessonkit:\n      course: true\n\n"
        "nav:\n"
        "  - index.md\n"
        f"  - {t['lessons']}:\n"
        "      - lessons/01-first-look.md\n"
        f"  - {t['reference']}:\n"
        "      - symbols.md\n"
        "      - source/index.md\n"
        "      - attachments/acceptance.md\n\n"
        "not_in_nav: |\n"
        "  /source/**\n"
        "  /code/**\n"
    )
    index = f"# {t['site']}\n\n{t['home']}\n\n{t['home-more']}\n\n- [{t['title']}](lessons/01-first-look.md)\n"
    question = "question-class" if ex.kind == "class" else "question" if ex.returns else "question-effect"
    lesson_tpl = (
        "# {{ nn }} · {{ title }}\n\n"
        f"## {t['goal']} {{#goal}}\n\n{t['goal-text']}\n\n"
        f"## {t['source']} {{#source}}\n\n{t['source-text' if ex.kind == 'function' else 'source-text-class']}\n\n"
        "```real-source\n"
        f"File: {ex.file}\n"
        f"Symbol: {ex.symbol}\n"
        "Commit: {{ short }}\n"
        "```\n\n"
        f"## {t['experiment']} {{#experiment}}\n\n"
        "```experiment\n"
        "File: experiments/{{ script }}\n"
        f"Purpose: {t['purpose-source' if ex.no_import else 'purpose']}\n"
        "```\n\n"
        f"## {t['self-test']} {{#self-test}}\n\n"
        f"1. {t[question]}\n"
    )
    experiment_tpl = (  # its docstring and what it prints (shown on the page) in the series' language
        f'"""{t["ex-doc"]}"""\n\n'
        "import os\n"
        "from pathlib import Path\n\n"
        f"import {ex.module} as module\n\n"
        f'root = Path(os.environ["{env}_PINNED_ROOT"]).resolve()\n'
        "here = Path(module.__file__).resolve()\n"
        f'assert root in here.parents, f"{t["ex-not-pinned"]}"\n'
        f'print("{t["ex-from"]}", here.relative_to(root).as_posix())\n'
        f'print("{t["ex-callable"]}", callable(module.{ex.symbol}))\n'
        f"assert callable(module.{ex.symbol})\n"
    )
    if ex.no_import:  # importing it would fail here: the experiment reads the pinned source instead
        experiment_tpl = (
            f'"""{t["ex-doc-source"]}"""\n\n'
            "import ast\n"
            "import os\n"
            "from pathlib import Path\n\n"
            f'root = Path(os.environ["{env}_PINNED_ROOT"]).resolve()\n'
            f'path = root / "{ex.file}"\n'
            "tree = ast.parse(path.read_bytes())\n"
            "names = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}\n"
            f'print("{t["ex-read"]}", path.relative_to(root).as_posix())\n'
            f'print("{t["ex-defines"]}", "{ex.symbol}" in names)\n'
            f'assert "{ex.symbol}" in names\n'
        )

    def fill(text: str, **values: str) -> str:
        return re.sub(r"\{\{ (\w+) \}\}", lambda m: values.get(m.group(1), m.group(0)), text)

    script = "lesson01_first_look.py"
    pages = {f"templates/{p.name}": p.read_text(encoding="utf-8") for p in sorted(TEMPLATES_ZH.glob("*.md"))}
    theme = Path(__file__).with_name("overrides")  # @@key@@: the series' words
    overrides = {
        f"overrides/{p.relative_to(theme).as_posix()}": re.sub(
            r"@@([a-z-]+)@@", lambda m: t[m[1]], p.read_text(encoding="utf-8")
        )
        for p in sorted(theme.rglob("*.html"))
    }
    return {
        "mkdocs.yml": mkdocs_yml,
        ".gitignore": ".cache/\nsite/\nsite-repin/\n__pycache__/\n",
        "sourcemap/pin.toml": pin_toml,
        "sourcemap/site.toml": site_toml,
        "docs/index.md": index,
        "docs/lessons/01-first-look.md": fill(lesson_tpl, nn="01", title=t["title"], short=short, script=script),
        f"experiments/{script}": fill(experiment_tpl, nn="01"),
        "templates/new-lesson.md": lesson_tpl,
        "templates/new-experiment.py": experiment_tpl,
        **(pages if lang == "zh" else {}),
        **overrides,
    }
