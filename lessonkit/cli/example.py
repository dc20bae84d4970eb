"""What the first lesson of a new series shows: a public top-level function (or class) of the pinned
release, of a size a lesson can cite, from a module its first experiment can import (else read from
the pinned tree, with the reason)."""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass

from lessonkit.cli import layout
from lessonkit.cli.release import Release, not_installed
from lessonkit.errors import LessonError


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


def pick_example(release: Release) -> Example:
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
    missing = not_installed(release.requires)
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
