"""The trust boundary of a series, as its ``mkdocs.yml`` draws it.

Trusted (build configuration, reviewed like CI configuration): ``mkdocs.yml`` and every project
file it names as code or style (hooks, ``theme.custom_dir``, ``extra_css``, ``extra_javascript``,
the modules of plugins, Markdown extensions and ``!!python/…`` tags), the modules
``sourcemap/kinds.toml`` and ``sourcemap/attachments.toml`` name, and :data:`TRUSTED`. Everything
else a contribution may change (``docs/``, ``experiments/``, ``sourcemap/`` data, ``templates/``,
the Mini folder) is untrusted: build and verify check it fully.

:func:`changed_trusted` lists the trusted files that differ from a git revision
(``lessonkit verify --base REF``); :func:`theme_dirs` gives the theme folders MkDocs would copy
files from, for :func:`lessonkit.config.checks.written_files`, without loading the configuration
(which imports every plugin)."""

from __future__ import annotations

import fnmatch
import importlib.metadata
import importlib.util
import re
import subprocess
from pathlib import Path, PurePosixPath

from lessonkit.config.modules import read_modules
from lessonkit.errors import LessonError

# Project files trusted whatever mkdocs.yml says (patterns of project-relative paths).
TRUSTED = (
    "mkdocs.yml",
    "noxfile.py",
    "pyproject.toml",
    "requirements*.txt",
    ".ci/*",
    ".github/*",
    "lessonkit/*",
    "lessonkit_ext/*",
    "hooks/*",
    "overrides/*",
    "tools/*",
    "sourcemap/pyodide.toml",  # a lock of code that runs in the reader's browser
)
MODULE_LISTS = ("sourcemap/kinds.toml", "sourcemap/attachments.toml")


class _Tagged:
    """A value of ``mkdocs.yml`` behind a YAML tag (``!ENV``, ``!!python/name:…``): not evaluated."""

    def __init__(self, tag: str):
        self.tag = tag


def read_config(text: str) -> dict:
    """``mkdocs.yml`` as data: tags are kept as :class:`_Tagged`, never evaluated or imported."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    def tagged(loader, suffix, node):
        return _Tagged(node.tag)

    Loader.add_multi_constructor("!", tagged)
    Loader.add_multi_constructor("tag:yaml.org,2002:python/", tagged)
    try:
        data = yaml.load(text, Loader=Loader)  # noqa: S506 (a SafeLoader that evaluates no tag)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise LessonError(
            f"cannot read mkdocs.yml: {getattr(exc, 'problem', None) or exc}",
            path="mkdocs.yml",
            line=mark.line + 1 if mark is not None else None,
            hint="fix the YAML",
        ) from None
    return data if isinstance(data, dict) else {}


def _names(value) -> list[str]:
    """The names of a list of MkDocs plugins or Markdown extensions (strings or one-key maps)."""
    out: list[str] = []
    for item in value if isinstance(value, list) else [value] if value else []:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            out += [k for k in item if isinstance(k, str)]
    return out


def _tags(value) -> list[str]:
    if isinstance(value, _Tagged):
        return [value.tag]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tags(v)]
    if isinstance(value, list):
        return [t for v in value for t in _tags(v)]
    return []


# What Python imports a module from besides its source: a sourceless `.pyc` beside it, an extension module.
_MODULE_SUFFIXES = (".py", ".pyc", ".so", ".*.so", ".pyd", ".*.pyd")


def _module_files(dotted: str) -> list[str]:
    """The project files (patterns) that would be the module ``dotted`` or one of its parent packages
    (``a/b.py``, ``a/b/__init__.py``, ``a.py``, ``a/__init__.py``, and the compiled forms Python imports
    as well: ``a/b.pyc``, ``a/b.cpython-311-x86_64-linux-gnu.so``, …), whether or not the tree has them
    (a file added there would be imported in place of an installed module)."""
    parts = [p for p in dotted.split(".") if p.isidentifier()]
    return [
        stem + suffix
        for n in range(1, len(parts) + 1)
        for stem in ("/".join(parts[:n]), "/".join(parts[:n]) + "/__init__")
        for suffix in _MODULE_SUFFIXES
    ]


def _entry_point_module(group: str, name: str) -> str | None:
    for ep in importlib.metadata.entry_points(group=group):
        if ep.name == name:
            return ep.value.split(":", 1)[0]
    return None


def trusted_patterns(root: Path, text: str | None, module_lists: dict[str, str | None]) -> list[str]:
    """The trusted files of a project tree (patterns of project-relative paths): :data:`TRUSTED`
    and what ``mkdocs.yml`` (its ``text``) and the module lists (path → text) name."""
    out = list(TRUSTED)
    config = read_config(text) if text is not None else {}
    docs = str(config.get("docs_dir") or "docs").strip("/")
    for hook in _names(config.get("hooks")):
        out.append(PurePosixPath(hook).as_posix())
    theme = config.get("theme")
    custom = theme.get("custom_dir") if isinstance(theme, dict) else None
    if isinstance(custom, str) and custom.strip("/"):
        out.append(PurePosixPath(custom).as_posix().strip("/") + "/*")
    for option in ("extra_css", "extra_javascript"):
        for entry in config.get(option) or []:
            path = entry.get("path") if isinstance(entry, dict) else entry
            if isinstance(path, str) and "://" not in path and not path.startswith("//"):
                out.append(f"{docs}/{PurePosixPath(path.lstrip('/')).as_posix()}")
    modules = [_entry_point_module("mkdocs.plugins", n) or n for n in _names(config.get("plugins"))]
    modules += _names(config.get("markdown_extensions"))
    for tag in _tags(config):
        _, _, name = tag.partition("python/")
        name = name.split(":", 1)[1] if ":" in name else ""
        modules += [name, name.rpartition(".")[0]]
    for label, listed in module_lists.items():
        if listed is not None:
            modules += _listed_modules(root, label, listed)
    for dotted in modules:
        if dotted:
            out += _module_files(dotted.split(":", 1)[0])
    return out


def _listed_modules(root: Path, label: str, text: str) -> list[str]:
    """The module names a ``kinds.toml``/``attachments.toml`` text lists (its problems are verify's)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / label).parent.mkdir(parents=True)
        (Path(tmp) / label).write_text(text, encoding="utf-8")
        try:
            return [name for name, _ in read_modules(Path(tmp), label, "")]
        except LessonError:
            return []


# Code Python runs because of where it is: a module or package at the project's root (the root is
# on `sys.path` for `python -m …` and through the editable install's `.pth`, so a root
# `sitecustomize.py` runs in every process and a root `argparse.py` replaces the standard library's),
# a `.pth` file, and what pytest collects (`conftest.py`, `test_*.py`, `*_test.py`) anywhere.
_PLACED_CODE = re.compile(
    r"^[^/]+\.(?:py|pyc|pyd|so|pth)$"
    r"|^[^/]+/__init__\.(?:py|pyc|pyd|so|[^/]+\.so)$"
    r"|^[^/]+\.[^/]+\.so$"
    r"|(?:^|/)(?:conftest\.py|test_[^/]*\.py|[^/]*_test\.py)$"
)


def is_trusted(path: str, patterns: list[str]) -> bool:
    return _PLACED_CODE.search(path) is not None or any(path == p or fnmatch.fnmatchcase(path, p) for p in patterns)


def _git(root: Path, *args: str) -> str:
    try:
        r = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LessonError(f"git failed: {exc}", path="--base", hint="run verify --base in a git checkout") from None
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["?"])[-1]
        raise LessonError(f"git {args[0]}: {last}", path="--base", hint="give a revision of this repository")
    return r.stdout


def changed_trusted(root: Path, base: str) -> list[str]:
    """The trusted files that differ between the revision ``base`` and the working tree: added,
    modified, deleted or renamed (either side trusted), and those that became trusted because
    ``mkdocs.yml`` or a module list now names them. Project-relative paths, sorted."""
    root = Path(root).resolve()
    _git(root, "rev-parse", "--show-toplevel")  # a git checkout
    try:
        _git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{base}^{{commit}}")
    except LessonError:
        raise LessonError(
            f"`{base}` is not a commit of this repository",
            path="--base",
            hint="give the branch or commit the change is compared with (fetch it first, e.g. origin/main)",
        ) from None

    def at_base(rel: str) -> str | None:
        try:
            return _git(root, "show", f"{base}:./{rel}")
        except LessonError:
            return None

    def now(rel: str) -> str | None:
        p = root / rel
        return p.read_text(encoding="utf-8") if p.is_file() else None

    old = trusted_patterns(root, at_base("mkdocs.yml"), {m: at_base(m) for m in MODULE_LISTS})
    new = trusted_patterns(root, now("mkdocs.yml"), {m: now(m) for m in MODULE_LISTS})
    out: set[str] = set()
    diff = _git(root, "diff", "--name-status", "-z", "-M", "--relative", base, "--", ".").split("\0")
    items = [x for x in diff if x]
    i = 0
    while i < len(items):
        status = items[i]
        if status[:1] in ("R", "C"):
            before, after = items[i + 1], items[i + 2]
            i += 3
        else:
            before = after = items[i + 1]
            i += 2
        if is_trusted(before, old) or is_trusted(after, new):
            out.add(after if status[:1] != "D" else before)
            if status[:1] == "R" and is_trusted(before, old):
                out.add(before)
    untracked = _git(root, "ls-files", "-z", "--others", "--exclude-standard").split("\0")
    out |= {rel for rel in untracked if rel and is_trusted(rel, new)}
    tracked = [rel for rel in _git(root, "ls-files", "-z").split("\0") if rel]
    for rel in tracked:  # unchanged, but now named as code or style
        if is_trusted(rel, new) and not is_trusted(rel, old):
            out.add(rel)
    return sorted(out)


def theme_dirs(root: Path, text: str) -> tuple[list[Path], tuple[str, ...]]:
    """The folders MkDocs reads the theme from (``custom_dir``, the named theme and the themes it
    extends, MkDocs' own templates) and the theme's static templates, found through the
    ``mkdocs.themes`` entry points as MkDocs finds them; the theme's modules are not imported."""
    import yaml

    config = read_config(text)
    theme = config.get("theme")
    theme = theme if isinstance(theme, dict) else {"name": theme}
    dirs: list[Path] = []
    custom = theme.get("custom_dir")
    if isinstance(custom, str) and custom:
        dirs.append(root / custom)
    statics: set[str] = set()
    name = theme.get("name")
    seen = set()
    while isinstance(name, str) and name not in seen:
        seen.add(name)
        module = _entry_point_module("mkdocs.themes", name)
        spec = importlib.util.find_spec(module) if module else None
        if spec is None or not spec.submodule_search_locations:
            break
        folder = Path(list(spec.submodule_search_locations)[0])
        dirs.append(folder)
        try:
            meta = yaml.safe_load((folder / "mkdocs_theme.yml").read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError):
            meta = {}
        statics |= set(meta.get("static_templates") or [])
        name = meta.get("extends")
    spec = importlib.util.find_spec("mkdocs")
    if spec is not None and spec.submodule_search_locations:
        dirs.append(Path(list(spec.submodule_search_locations)[0]) / "templates")
    return dirs, tuple(sorted(statics | {"404.html", "sitemap.xml"}))
