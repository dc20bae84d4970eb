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

import ast
import hashlib
import json
import re
import shutil
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from email.parser import HeaderParser
from importlib import metadata
from pathlib import Path

from lessonkit.cli import layout
from lessonkit.config import files as config
from lessonkit.errors import LessonError
from lessonkit.source import fetch, pin

HINT = "e.g. lessonkit init my-series --package more-itertools==10.5.0"
REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]{0,99})==([0-9][A-Za-z0-9.+!-]{0,40})$")


normalise = fetch.normalise_name


@dataclass(frozen=True)
class Release:
    name: str  # as the requirement spells it
    version: str
    archive: Path
    sha256: str
    root: str  # the archive's top folder
    tree: Path  # extracted, PKG-INFO removed
    repo: str
    licence: str | None = None  # as the release's metadata states it (None: it states none)
    requires: tuple[str, ...] = ()  # the distributions it needs at run time (Requires-Dist without a marker)


@dataclass(frozen=True)
class Example:
    package: str  # the import name, e.g. more_itertools
    file: str  # tree path of the module, e.g. more_itertools/recipes.py
    symbol: str  # a public top-level function of it
    module: str  # its dotted module name
    base: str = ""  # the folder of the tree it is imported from: "" (the top) or "src"
    returns: bool = True  # it returns a value (the self-test asks where; else what it does)
    kind: str = "function"  # or "class" (a package without a public function of the right size)
    # why importing it from the pinned tree would fail here ("" : it imports); the first
    # experiment then reads its source from the pinned tree instead
    no_import: str = ""


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
        release = _release(name, version, work, sdist, repo)
        example = _example(release)
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


def _from_index(name: str, version: str, dest: Path) -> Path:
    """The release archive of ``name==version`` from the package index: its sha256 taken from the
    index's listing and checked on the bytes as they arrive, before anything opens them."""
    try:
        listed = fetch.find_sdist(name, version)
    except LessonError as exc:
        raise LessonError(
            f"cannot find the release archive of {name}=={version} on the package index: {exc.problem.message}",
            path="--package",
            hint="is it a released version with a source archive (sdist)? offline? give one with --sdist PATH",
        ) from None
    if listed.sha256 is None:
        raise LessonError(
            f"{listed.page} lists {listed.filename} without its sha256, so its bytes cannot be checked",
            path="--package",
            hint="use an index that publishes hashes (PEP 503 #sha256= or PEP 691 hashes; PyPI does), "
            "or check the archive yourself and give it with --sdist PATH",
        )
    dest.mkdir(parents=True, exist_ok=True)
    try:
        return fetch.download_checked(listed, listed.sha256, dest)
    except LessonError as exc:
        if exc.code == fetch.HASH_MISMATCH:
            raise LessonError(
                f"{exc.problem.message}, the index lists {listed.sha256[:16]}… for {listed.filename}: "
                "the archive was not opened, unpacked or built",
                path="--package",
                hint="the index or the connection to it served other bytes; check PIP_INDEX_URL and pip.conf",
            ) from None
        raise LessonError(
            f"cannot download {listed.filename} from the package index: {exc.problem.message}",
            path="--package",
            hint="offline? give the release archive with --sdist PATH",
        ) from None


def _release(name: str, version: str, work: Path, sdist: Path | None, repo: str | None) -> Release:
    if sdist is None:
        archive = _from_index(name, version, work / "dl")
    else:
        archive = sdist
        if not archive.is_file():
            raise LessonError(f"{archive} is not a file", path="--sdist", hint="give the path of a .tar.gz sdist")
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    try:
        root = fetch.archive_root(archive)
        info = fetch.read_member(archive, f"{root}/PKG-INFO") if root else None
        meta = HeaderParser().parsestr(info.decode("utf-8", "replace")) if info is not None else None
    except LessonError as exc:
        raise LessonError(
            f"cannot read {archive.name}: {exc.problem.message}", path="--sdist", hint="is it a .tar.gz or .zip sdist?"
        ) from None
    if not root or not root.lower().startswith((name.lower() + "-", normalise(name) + "-")):
        raise LessonError(
            f"{archive.name} does not hold a {name}-{version}/ folder", path="--package", hint="not a release archive"
        )
    tree = fetch.extract_sdist(archive, work, root)
    requires = _requires(meta, tree)
    return Release(name, version, archive, digest, root, tree, repo or _repo(meta, name), _licence(meta), requires)


def _requires(meta, tree: Path) -> tuple[str, ...]:
    """The distributions the release needs at run time, whatever the environment: its metadata's
    ``Requires-Dist`` (else ``[project] dependencies`` of its pyproject.toml) without a marker (an
    extra's, or one for some Pythons or platforms; what the package then imports unconditionally
    is checked by :func:`lessonkit.cli.layout.missing_imports`)."""
    values = list(meta.get_all("Requires-Dist") or []) if meta is not None else []
    if not values:
        try:
            with (tree / "pyproject.toml").open("rb") as f:
                deps = tomllib.load(f).get("project", {}).get("dependencies", [])
            values = [d for d in deps if isinstance(d, str)] if isinstance(deps, list) else []
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError, AttributeError):
            values = []
    names = []
    for value in values:
        requirement, _, marker = value.partition(";")
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
        if m and not marker.strip():
            names.append(m[1])
    return tuple(dict.fromkeys(names))


def _not_installed(names: tuple[str, ...]) -> list[str]:
    """The distributions of ``names`` this environment lacks."""
    missing = []
    for name in names:
        try:
            metadata.distribution(name)
        except (metadata.PackageNotFoundError, ValueError):
            missing.append(name)
    return missing


def _licence(meta) -> str | None:
    """The licence the release's metadata states: ``License-Expression`` (an SPDX expression), else
    a one-line ``License``, else the last part of a ``License ::`` classifier; None: it states none."""
    if meta is None:
        return None
    expression = (meta.get("License-Expression") or "").strip()
    if expression:
        return expression
    text = (meta.get("License") or "").strip()
    if text and "\n" not in text and len(text) <= 80 and text.upper() != "UNKNOWN":
        return text
    for value in meta.get_all("Classifier") or []:
        parts = [part.strip() for part in value.split("::")]
        if parts[0] == "License" and len(parts) > 1 and parts[-1] not in ("OSI Approved", "Other/Proprietary License"):
            return parts[-1]
    return None


def _repo(meta, name: str) -> str:
    """The source repository the release's metadata names (Project-URL, Home-page), else its index page."""
    urls = []
    if meta is not None:
        for value in meta.get_all("Project-URL") or []:
            label, _, url = value.partition(",")
            urls.append((label.strip().lower(), url.strip()))
        if meta.get("Home-page"):
            urls.append(("homepage", meta["Home-page"].strip()))
    for preferred in ("source", "repository", "source code", "code", "homepage", "home"):
        for label, url in urls:
            if label == preferred and config.REPO.fullmatch(url.rstrip("/")):
                return url.rstrip("/")
    for _, url in urls:
        if re.match(r"https://(github\.com|gitlab\.com|codeberg\.org)/", url) and config.REPO.fullmatch(
            url.rstrip("/")
        ):
            return url.rstrip("/")
    return f"https://pypi.org/project/{normalise(name).replace('_', '-')}"


def _example(release: Release) -> Example:
    """A public function of the package for the first lesson (else a public class): a top-level
    definition of 3–40 lines (a class: 3–60), from the modules the distribution installs for
    ``import`` (:func:`lessonkit.cli.layout.read_layout`: its build configuration, else its tree),
    public modules before private ones (``_hooks.py``), the package's own ``__init__`` last,
    shallow modules first; never from the sdist's build helpers, tests, docs or examples, nor from
    a module whose import needs a module the tree holds only as compiled source. The example is
    imported from the folder its package is in (``src`` for the src layout)."""
    found = layout.read_layout(release.tree, release.name)
    why = found.not_pure()
    if why:
        raise LessonError(
            f"{release.root} is not a pure-Python package: {why}",
            path="--package",
            hint="lessonkit init pins pure-Python packages; write the first lesson by hand (docs/dev/pin-reference.md)",
        )
    parsed: dict[str, tuple[ast.Module, bool] | None] = {}
    unparsable: set[str] = set()  # modules this Python cannot parse (newer syntax): they cannot be imported here

    def read(module: str) -> tuple[ast.Module, bool] | None:
        """The parsed source of a dotted module of the package, and whether it is a package."""
        if module not in parsed:
            top = module.split(".")[0]
            base = release.tree / found.packages[top] if found.packages.get(top) else release.tree
            path = base.joinpath(*module.split("."))
            parsed[module] = None
            for file, is_package in ((path / "__init__.py", True), (path.with_suffix(".py"), False)):
                if top in found.packages and file.is_file():
                    try:
                        parsed[module] = (ast.parse(file.read_bytes()), is_package)
                    except (SyntaxError, ValueError):
                        unparsable.add(module)
                    break
        return parsed[module]

    candidates = []
    blocked: list[tuple[str, str]] = []
    for package, base in found.packages.items():
        top = release.tree / base if base else release.tree
        files = sorted((top / package).rglob("*.py")) if (top / package).is_dir() else [top / f"{package}.py"]
        for path in files:
            parts = path.relative_to(top).parts
            module = _module_name(parts)
            if module is None:
                continue
            got = read(module)
            shown = _showable(got[0]) if got else []
            if not shown:
                continue
            needs = layout.native_import(found, module, read)
            if needs:
                blocked.append((module, needs))
                continue
            functions = [n for n in shown if isinstance(n, ast.FunctionDef)]
            # the module's first function that returns a value, else its first function, else its first class
            node = next((n for n in functions if _returns_a_value(n)), functions[0] if functions else shown[0])
            rel = "/".join(filter(None, (base, *parts)))
            private = any(p.startswith("_") and p != "__init__.py" for p in parts)
            first = (not functions, private, parts[-1] == "__init__.py", len(parts), rel)
            kind = "function" if isinstance(node, ast.FunctionDef) else "class"
            returns = isinstance(node, ast.FunctionDef) and _returns_a_value(node)
            candidates.append((first, node.name, package, module, base, kind, returns))
    if not candidates:
        if blocked:
            module, needs = blocked[0]
            raise LessonError(
                f"{release.root} is not a pure-Python package: importing {module} needs {needs}, which the "
                "archive holds only as compiled source",
                path="--package",
                hint="lessonkit init pins pure-Python packages; write the first lesson by hand "
                "(docs/dev/pin-reference.md)",
            )
        names = ", ".join(found.packages) or "none"
        raise LessonError(
            f"{release.root} has no public top-level function or class of 3–40 lines in its packages ({names})",
            path="--package",
            hint="write the first lesson by hand: docs/dev/pin-reference.md, 'Start a series by hand'",
        )
    first, symbol, package, module, base, kind, returns = sorted(candidates)[0]
    why = _why_not_importable(release, found, module, read, unparsable)
    return Example(package, first[-1], symbol, module, base, returns, kind, why)


def _module_name(parts: tuple[str, ...]) -> str | None:
    """The dotted module a package file is imported as, or None for a file that is no module of
    the installed package: tests, build helpers, ``__main__``, names that are not identifiers."""
    if any(p.startswith((".", "test")) or p in layout.NOT_PACKAGES for p in parts[1:-1]):
        return None
    if parts[-1].startswith("test") or parts[-1] in ("__main__.py", "conftest.py"):
        return None
    if not all(p.isidentifier() for p in (*parts[:-1], parts[-1][:-3])):
        return None  # not importable by that name (a folder such as `some-data/`)
    return ".".join(parts)[:-3].removesuffix(".__init__")


def _showable(tree: ast.Module) -> list[ast.FunctionDef | ast.ClassDef]:
    """A module's public, undecorated top-level functions of 3–40 lines and classes of 3–60."""
    return [
        node
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.ClassDef))
        and not node.name.startswith("_")
        and not node.decorator_list
        and 3 <= (node.end_lineno or node.lineno) - node.lineno + 1 <= (40 if isinstance(node, ast.FunctionDef) else 60)
    ]


def _why_not_importable(release: Release, found: layout.Layout, module: str, read, unparsable: set[str]) -> str:
    """Why importing ``module`` from the pinned tree would fail in this environment, as far as the
    archive's files show ("" : it would not): a required distribution or an imported module this
    environment lacks, syntax this Python cannot parse, or a lookup of the package's own installed
    metadata at import time. Nothing of the archive is run to find out."""
    missing = _not_installed(release.requires)
    if missing:
        return f"{release.name} needs {', '.join(missing)}, not installed here (pip install {' '.join(missing)})"
    reached, _ = layout.import_closure(found, module, read)
    newer = sorted(reached & unparsable)
    if newer:
        return f"{newer[0]} uses syntax that Python {sys.version_info[0]}.{sys.version_info[1]} cannot parse"
    absent = layout.missing_imports(found, module, read)
    if absent:
        return (
            f"importing it imports {', '.join(absent)}, which this environment does not have "
            "(install the distributions that provide them)"
        )
    reads = next((m for m in sorted(reached) if _reads_own_metadata(read(m))), None)
    if reads:
        return (
            f"{reads} reads the installed package's metadata when imported (edit the experiment to import "
            f"it once {release.name} {release.version} is installed here)"
        )
    return ""


METADATA_MODULES = ("importlib.metadata", "importlib_metadata", "pkg_resources")
METADATA_CALLS = {"version", "distribution", "metadata", "get_distribution", "require", "packages_distributions"}


def _reads_own_metadata(got: tuple[ast.Module, bool] | None) -> bool:
    """Whether a module calls ``importlib.metadata`` (or ``pkg_resources``) at its top level outside
    ``try``: importing it from a tree that is not installed then fails."""
    if got is None:
        return False
    body = got[0].body
    imported = any(
        isinstance(node, ast.ImportFrom)
        and (node.module or "").startswith(METADATA_MODULES)
        or isinstance(node, ast.Import)
        and any(a.name.startswith(METADATA_MODULES) for a in node.names)
        for node in body
    )
    if not imported:
        return False
    for node in body:
        if isinstance(node, (ast.Try, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If)):
            continue
        for call in ast.walk(node):
            if isinstance(call, ast.Call):
                func = call.func
                name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
                if name in METADATA_CALLS:
                    return True
    return False


def _returns_a_value(fn: ast.FunctionDef) -> bool:
    """Whether ``fn`` itself (not a function or class inside it) has a ``return`` with a value."""
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Return) and node.value is not None:
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))
    return False


# ---------------------------------------------------------------- the files of the new series

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
