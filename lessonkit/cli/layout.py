"""What a release archive installs for ``import``, read from its own files and never by running
anything of it: the build backend and its tables in ``pyproject.toml`` (setuptools, hatch, flit,
pdm, poetry, maturin), ``setup.cfg``'s ``[options]``, setuptools' ``*.egg-info/top_level.txt``,
then the tree itself (the src layout, packages with ``__init__.py``, single-file modules).

Whether a package is pure Python is decided the same way: a build backend that only builds
compiled extensions is not; a module of the package that exists only as compiled source (``.pyx``,
``.c``, ``.rs``, …) makes every module that imports it unconditionally not importable from the
tree; the rest is importable as the archive holds it.
"""

from __future__ import annotations

import ast
import configparser
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

# Folders of an sdist that are never the installed package.
NOT_PACKAGES = {
    "docs", "doc", "examples", "example", "tests", "test", "testing", "benchmarks", "bench", "scripts",
    "tools", "tasks", "changelog", "downstream", "ci", "build", "dist", "src", "site", "venv",
}  # fmt: skip
# Single-file modules at the top of an sdist that are its build's, not the package's.
BUILD_MODULES = {"setup", "versioneer", "conftest", "noxfile", "fabfile", "tasks", "ez_setup", "distribute_setup"}
# Build backends (and build requirements) that exist to compile extension modules.
NATIVE_BACKENDS = ("maturin", "scikit_build_core", "mesonpy", "pymsbuild", "sipbuild", "enscons")
NATIVE_REQUIRES = {"maturin", "scikit-build-core", "scikit-build", "meson-python", "setuptools-rust", "sip"}
NATIVE_SOURCES = {".pyx", ".c", ".cc", ".cpp", ".cxx", ".rs", ".f", ".f90", ".m"}


@dataclass(frozen=True)
class Layout:
    """Where the importable code of an sdist tree is."""

    packages: dict[str, str]  # top-level import name -> the folder of the tree it is imported from ("" or "src")
    backend: str  # build-system build-backend as pyproject.toml names it ("" : none named)
    declared_by: str  # what named the packages, e.g. "[tool.hatch.build.targets.wheel] packages"
    native: tuple[str, ...] = field(default=())  # dotted modules that exist only as compiled source

    def not_pure(self) -> str | None:
        """Why the package cannot be imported from its tree as the archive holds it (None: it can,
        as far as its files show)."""
        if self.backend.startswith(NATIVE_BACKENDS):
            return f"its build backend {self.backend} compiles extension modules"
        return None


def _toml(path: Path) -> dict:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError):
        return {}


def _table(data: object, *keys: str) -> dict:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _requirement_name(req: str) -> str:
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
    return re.sub(r"[-_.]+", "-", m[1]).lower() if m else ""


Found = tuple[list[tuple[str | None, str]], str]  # (folder or None for "find it", name) pairs, what named them


def _declared(tree: Path) -> tuple[list[tuple[str | None, str]], str, str]:
    """(folder or None for "find it", top-level name) pairs the build configuration names, what
    named them, and the build backend. The first configuration that names packages wins, in the
    order of :data:`_READERS`; the folders the others say to search are collected on the way."""
    pyproject = _toml(tree / "pyproject.toml")
    named = _table(pyproject, "build-system").get("build-backend")
    backend = named if isinstance(named, str) else ""
    tool = _table(pyproject, "tool")
    where: list[str] = []
    for reader in _READERS:
        got = reader(tree, tool, where)
        if got:
            return [(b, n) for b, n in got[0] if b is None or _inside(tree, b)], got[1], backend
    # maturin: python-source is where the Python part lives
    maturin = _table(tool, "maturin")
    if isinstance(maturin.get("python-source"), str):
        where.append(maturin["python-source"])
    folders = [w.strip("/").removeprefix("./") for w in where]
    return [(w, "") for w in folders if _inside(tree, w)], "", backend


def _inside(tree: Path, folder: str) -> bool:
    """``folder`` (as a build configuration names it) is a folder of the archive's tree: not
    absolute, no ``..``, no link leading out of it. A configuration naming anything else is not
    followed: init reads only the archive."""
    import os

    if not folder:
        return True
    parts = PurePosixPath(folder).parts
    if folder.startswith(("/", "\\")) or ".." in parts or "\\" in folder:
        return False
    real, top = os.path.realpath(tree / folder), os.path.realpath(tree)
    return real == top or real.startswith(top + os.sep)


def _paths(values: list[str]) -> list[tuple[str | None, str]]:
    """``("src", "pkg")`` for each plain path ``src/pkg`` (or ``pkg.py``); patterns and ``..`` are skipped."""
    out: list[tuple[str | None, str]] = []
    for value in values:
        parts = PurePosixPath(value.strip("/")).parts
        if not parts or ".." in parts or any(c in value for c in "*?["):
            continue
        out.append(("/".join(parts[:-1]), parts[-1].removesuffix(".py")))
    return out


def _flit(tree: Path, tool: dict, where: list[str]) -> Found | None:
    """flit: ``[tool.flit.module] name`` (the module is found at the top or under ``src/``)."""
    flit = _table(tool, "flit", "module").get("name")
    if isinstance(flit, str) and flit:
        return [(None, flit.split(".")[0])], "[tool.flit.module] name"
    return None


def _hatch(tree: Path, tool: dict, where: list[str]) -> Found | None:
    """hatch: the wheel target's ``packages`` / ``only-include`` (``src/pkg``)."""
    wheel = _table(tool, "hatch", "build", "targets", "wheel")
    for key in ("packages", "only-include"):
        got = _paths(_strings(wheel.get(key)) or _strings(_table(tool, "hatch", "build").get(key)))
        if got:
            return got, f"[tool.hatch.build.targets.wheel] {key}"
    return None


def _setuptools(tree: Path, tool: dict, where: list[str]) -> Found | None:
    """setuptools in ``pyproject.toml``: ``packages``/``py-modules`` (under ``package-dir``), else
    the folders ``packages.find`` searches."""
    st = _table(tool, "setuptools")
    package_dir = _table(st, "package-dir").get("")
    base = package_dir.strip("/") if isinstance(package_dir, str) else None
    names = [p.split(".")[0] for p in _strings(st.get("packages"))] + _strings(st.get("py-modules"))
    if names:
        return [(base, n) for n in dict.fromkeys(names)], "[tool.setuptools] packages"
    where += _strings(_table(st, "packages", "find").get("where"))
    return None


def _setup_cfg(tree: Path, tool: dict, where: list[str]) -> Found | None:
    """``setup.cfg [options]``: ``packages``/``py_modules`` (under ``package_dir``), else the
    folders ``[options.packages.find] where`` names."""
    cfg = configparser.RawConfigParser()
    try:
        cfg.read(tree / "setup.cfg", encoding="utf-8")
    except (configparser.Error, OSError, UnicodeDecodeError):
        cfg = configparser.RawConfigParser()

    def option(section: str, key: str) -> list[str]:
        raw = cfg.get(section, key, fallback="")
        return [v.strip() for v in re.split(r"[\n,]", raw) if v.strip()]

    base = None
    for entry in option("options", "package_dir"):
        key, _, value = entry.partition("=")
        if not key.strip() and value.strip():
            base = value.strip().strip("/")
    names = [p.split(".")[0] for p in option("options", "packages") if not p.startswith("find")]
    names += option("options", "py_modules")
    if names:
        return [(base, n) for n in dict.fromkeys(names)], "setup.cfg [options] packages"
    where += option("options.packages.find", "where")
    return None


def _egg_info(tree: Path, tool: dict, where: list[str]) -> Found | None:
    """setuptools' own record of what it installs: ``*.egg-info/top_level.txt``."""
    tops = sorted(tree.glob("*.egg-info/top_level.txt")) + sorted(tree.glob("*/*.egg-info/top_level.txt"))
    for top in tops:
        base = top.parent.parent.relative_to(tree).as_posix().strip(".")
        got: list[tuple[str | None, str]] = [
            (base, n.strip()) for n in top.read_text(encoding="utf-8", errors="replace").split() if n.strip()
        ]
        if got:
            return got, f"{top.relative_to(tree).as_posix()}"
    return None


def _pdm(tree: Path, tool: dict, where: list[str]) -> Found | None:
    """pdm: ``includes``, else ``package-dir`` (a folder to search)."""
    pdm = _table(tool, "pdm", "build")
    got = _paths(_strings(pdm.get("includes")))
    if got:
        return got, "[tool.pdm.build] includes"
    if isinstance(pdm.get("package-dir"), str):
        where.append(pdm["package-dir"])
    return None


def _poetry(tree: Path, tool: dict, where: list[str]) -> Found | None:
    """poetry: ``packages = [{include = "pkg", from = "src"}]``."""
    found: list[tuple[str | None, str]] = []
    for item in _table(tool, "poetry").get("packages") or []:
        if isinstance(item, dict) and isinstance(item.get("include"), str) and "*" not in item["include"]:
            frm = item.get("from")
            found.append(
                (frm.strip("/") if isinstance(frm, str) else "", item["include"].split("/")[0].removesuffix(".py"))
            )
    return (found, "[tool.poetry] packages") if found else None


_READERS = (_flit, _hatch, _setuptools, _setup_cfg, _egg_info, _pdm, _poetry)


def _is_package(folder: Path) -> bool:
    """A folder with ``__init__.py``, or a namespace package: Python files in it or in its
    sub-packages (``jaraco/functools/__init__.py``), and no ``setup.py`` of its own."""
    return (folder / "__init__.py").is_file() or (
        folder.is_dir()
        and not (folder / "setup.py").exists()
        and (any(folder.glob("*.py")) or any(folder.glob("*/__init__.py")))
    )


def _where(tree: Path, base: str | None, name: str) -> str | None:
    """The folder ``name`` (a package or a module) is imported from: ``base`` when given, else
    the top of the tree, else ``src``."""
    for folder in [base] if base is not None else ["", "src"]:
        here = tree / folder if folder else tree
        if _is_package(here / name) or (here / f"{name}.py").is_file():
            return folder
    return None


def _scan(tree: Path, bases: list[str], distribution: str = "") -> dict[str, str]:
    """The importable top-level names of the tree itself: packages with ``__init__.py`` and
    single-file modules, in ``src/`` (the src layout) or at the top, and the namespace package the
    distribution's name starts with (``jaraco`` of ``jaraco.functools``, ``sphinxcontrib`` of
    ``sphinxcontrib-applehelp``)."""
    found: dict[str, str] = {}
    prefix = re.sub(r"[-_.]+", "_", distribution).lower()
    for base in bases:
        here = tree / base if base else tree
        if not here.is_dir():
            continue
        for entry in sorted(here.iterdir()):
            name = entry.name.removesuffix(".py")
            if not name.isidentifier() or name.startswith(("_", ".")) or name.lower() in NOT_PACKAGES:
                continue
            if entry.is_dir() and (entry / "__init__.py").is_file():
                found.setdefault(name, base)
            elif entry.is_dir() and prefix.startswith(name.lower() + "_") and _is_package(entry):
                found.setdefault(name, base)
            elif (
                entry.suffix == ".py" and entry.is_file() and name not in BUILD_MODULES and not name.startswith("test")
            ):
                found.setdefault(name, base)
        if found:
            return found
    return found


def read_layout(tree: Path, distribution: str) -> Layout:
    """The import names of the release tree at ``tree`` and where each is, from its own files."""
    declared, by, backend = _declared(tree)
    packages: dict[str, str] = {}
    for base, name in declared:
        if name and name.isidentifier():
            folder = _where(tree, base, name)
            if folder is not None:
                packages.setdefault(name, folder)
    # a package named like tests or docs that the configuration lists beside the real ones (setuptools'
    # find: picks up tests/ when nothing excludes it) is not what an author reads first
    kept = {n: b for n, b in packages.items() if n.lower() not in NOT_PACKAGES and not n.startswith("test")}
    packages = kept or packages
    if not packages:
        bases = [b for b, n in declared if not n and b is not None] + ["src", ""]
        packages = _scan(tree, list(dict.fromkeys(bases)), distribution)
        guess = re.sub(r"[-_.]+", "_", distribution).lower()
        if guess in packages:  # the distribution's own name first
            packages = {guess: packages[guess], **packages}
        by = "the tree (packages and modules at the top" + (" and under src/)" if "src" in bases else ")")
    return Layout(packages, backend, by, _native_modules(tree, packages))


def _native_modules(tree: Path, packages: dict[str, str]) -> tuple[str, ...]:
    """Dotted names of the modules of ``packages`` that the tree holds only as compiled source."""
    out = []
    for name, base in packages.items():
        root = (tree / base if base else tree) / name
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            if path.suffix in NATIVE_SOURCES and not path.with_suffix(".py").exists():
                rel = path.relative_to(tree / base if base else tree).with_suffix("")
                out.append(".".join(rel.parts))
    return tuple(out)


def unconditional_imports(module: str, source: ast.Module, is_package: bool) -> set[str]:
    """Dotted names ``module`` imports at its top level outside ``try`` and ``if`` (those that a
    failed import would stop), relative imports made absolute."""
    out: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in source.body:
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                if node.level - 1 >= len(parts):
                    continue
                base = ".".join(parts[: len(parts) - (node.level - 1)])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            out.add(target)
            out |= {f"{target}.{alias.name}" for alias in node.names}
    return out


def import_closure(layout: Layout, module: str, read) -> tuple[set[str], set[str]]:
    """What importing ``module`` (its packages' ``__init__`` first) reaches, following the
    package's own unconditional imports: (the package's modules, the top-level names of other
    packages it imports). ``read`` gives the parsed source of a dotted module of the package and
    whether it is a package (None: the tree holds no such Python file)."""
    seen: set[str] = set()
    outside: set[str] = set()
    parts = module.split(".")
    todo = [module] + [".".join(parts[:i]) for i in range(1, len(parts))]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        got = read(name)
        if got is None:
            continue
        tree, is_package = got
        for target in unconditional_imports(name, tree, is_package):
            top = target.split(".")[0]
            if top in layout.packages:
                todo.append(target)
            elif top:
                outside.add(top)
    return seen, outside


def native_import(layout: Layout, module: str, read) -> str | None:
    """The compiled-only module that importing ``module`` would need (see :func:`import_closure`);
    None when there is none."""
    reached, _ = import_closure(layout, module, read)
    return next((name for name in sorted(reached) if name in set(layout.native)), None)


def missing_imports(layout: Layout, module: str, read) -> list[str]:
    """The top-level modules outside the package that importing ``module`` needs unconditionally
    and that neither the standard library nor this environment provides (looked up by name, not
    imported)."""
    import importlib.util
    import sys

    _, outside = import_closure(layout, module, read)
    missing = []
    for top in sorted(outside):
        if top in sys.stdlib_module_names or top == "__future__":
            continue
        try:
            found = importlib.util.find_spec(top) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(top)
    return missing
