"""lessonkit keeps no process-wide mutable state but what :mod:`lessonkit.util.shared` lists.

A build's state lives in its :class:`lessonkit.build.Build`, which the MkDocs adapter keeps with
the configuration it was made for. Everything else that outlives a build must be listed, with its
reason, in ``lessonkit.util.shared.STATE``. The audit finds, in every module of the package:

* from the source (``ast``): a module-level name or class attribute that code rebinds
  (``global X``, ``module.X = …``, ``Class.X = …``, ``cls.X = …``) or changes in place
  (``X[k] = …``, ``X.append(…)``, ``del X[k]``, ``cls.X.update(…)`` …), functions memoised with
  ``lru_cache``/``cache``, and context variables;
* from the imported modules: module-level objects with state of their own (instances that are
  not frozen dataclasses or plain values), memoised callables and context variables.

Constant tables (a dict or set filled at import and never changed) are not state and are not
listed. The list must be exact: an entry for state that no longer exists fails as well.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import logging
import pkgutil
import re
import types
from contextvars import ContextVar
from pathlib import Path

import pytest

import lessonkit
from lessonkit.util import shared

PACKAGE = Path(lessonkit.__file__).resolve().parent
# run as a script inside each sandbox box, and imported only by experiments inside their boxes
NOT_IMPORTED = {"lessonkit.run.box._boot", "lessonkit.run.box.lessonkit_record"}
MUTATORS = {
    "append",
    "appendleft",
    "extend",
    "insert",
    "add",
    "update",
    "clear",
    "pop",
    "popitem",
    "setdefault",
    "remove",
    "discard",
    "sort",
    "reverse",
    "difference_update",
    "intersection_update",
    "symmetric_difference_update",
    "__setitem__",
    "__delitem__",
}
MEMOISERS = {"lru_cache", "cache"}


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(tree: ast.Module, module: str, is_package: bool) -> dict[str, str]:
    """Local name -> qualified lessonkit name, for what this module imports from lessonkit."""
    base = module.split(".") if is_package else module.split(".")[:-1]
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                pkg = ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))
            else:
                pkg = node.module or ""
            if pkg.split(".")[0] != "lessonkit":
                continue
            for alias in node.names:
                out[alias.asname or alias.name] = f"{pkg}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "lessonkit" and alias.asname:
                    out[alias.asname] = alias.name
    return out


def _decorator_name(node: ast.expr) -> str:
    node = node.func if isinstance(node, ast.Call) else node
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


class _Scanner(ast.NodeVisitor):
    """The state one module's source creates or changes, as ``{qualified name: why}``."""

    def __init__(self, module: str, tree: ast.Module, is_package: bool):
        self.module = module
        self.imports = _imports(tree, module, is_package)
        self.top = set()  # module-level names
        for node in tree.body:
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, (ast.AnnAssign, ast.AugAssign))
                else []
            )
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        self.top.add(n.id)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.top.add(node.name)
        self.found: dict[str, str] = {}
        self.class_stack: list[str] = []
        self.local_stack: list[set[str]] = []
        self.global_stack: list[set[str]] = []
        self.visit(tree)

    # -- where a name refers to
    def _owner(self, node: ast.expr) -> str | None:
        """The qualified name of the module-level object or class attribute ``node`` denotes, if any."""
        if isinstance(node, ast.Name):
            locals_ = self.local_stack[-1] if self.local_stack else set()
            if node.id in locals_ and node.id not in (self.global_stack[-1] if self.global_stack else set()):
                return None
            if node.id in self.imports:
                return self.imports[node.id]
            if node.id in self.top:
                return f"{self.module}.{node.id}"
            return None
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "cls" and self.class_stack:
                return f"{self.module}.{self.class_stack[-1]}.{node.attr}"
            owner = self._owner(node.value)
            if owner is None:
                return None
            return f"{owner}.{node.attr}"
        return None

    def _record(self, name: str | None, why: str) -> None:
        if name is not None and self.local_stack:  # changes made by code, not the module's own setup
            self.found.setdefault(name, why)

    # -- scopes
    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.class_stack.append(node.name)
        self.generic_visit(node)
        self.class_stack.pop()

    def _function(self, node) -> None:
        for d in getattr(node, "decorator_list", []):
            if _decorator_name(d) in MEMOISERS:
                where = ".".join([self.module, *self.class_stack, node.name])
                self.found.setdefault(where, "memoised function")
        args = node.args
        params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
        params |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        assigned = {
            n.id
            for n in ast.walk(node)
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)) and n is not node
        }
        declared = {name for n in ast.walk(node) if isinstance(n, ast.Global) for name in n.names}
        self.local_stack.append((params | assigned) - declared)
        self.global_stack.append(declared)
        for stmt in node.body if isinstance(node.body, list) else [node.body]:
            self.visit(stmt)
        self.local_stack.pop()
        self.global_stack.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    # -- changes
    def visit_Global(self, node: ast.Global) -> None:
        for name in node.names:
            self._record(f"{self.module}.{name}", "rebound in a function")

    def _target(self, t: ast.expr) -> None:
        if isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                self._target(e)
        elif isinstance(t, ast.Subscript):
            self._record(self._owner(t.value), "changed in place")
        elif isinstance(t, ast.Attribute):
            if isinstance(t.value, ast.Name) and t.value.id == "self":
                return
            self._record(self._owner(t), "set from code")

    def visit_Assign(self, node: ast.Assign) -> None:
        for t in node.targets:
            self._target(t)
        self._module_value(node.targets, node.value)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._target(node.target)
        if node.value is not None:
            self._module_value([node.target], node.value)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._target(node.target)
        if isinstance(node.target, ast.Name):
            self._record(self._owner(node.target), "changed in place")
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for t in node.targets:
            self._target(t)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr in MUTATORS:
            self._record(self._owner(f.value), "changed in place")
        self.generic_visit(node)

    def _module_value(self, targets, value: ast.expr) -> None:
        """``X = ContextVar(…)`` or ``f = lru_cache(…)(g)`` at module level."""
        if self.local_stack or not isinstance(value, ast.Call):
            return
        name = _decorator_name(value.func if isinstance(value.func, ast.Call) else value)
        if name in MEMOISERS | {"ContextVar"}:
            for t in targets:
                if isinstance(t, ast.Name):
                    self.found.setdefault(f"{self.module}.{t.id}", "memoised function or context variable")


def scan_source(source: str, module: str, is_package: bool = False) -> dict[str, str]:
    return _Scanner(module, ast.parse(source), is_package).found


_PLAIN = (
    str,
    bytes,
    int,
    float,
    complex,
    bool,
    type(None),
    re.Pattern,
    Path,
    logging.Logger,
    types.ModuleType,
    type,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    range,
)


def _has_state(value, seen=()) -> bool:
    """An object whose own attributes can change: not a plain value, container or frozen dataclass."""
    if id(value) in seen:
        return False
    if hasattr(value, "cache_info") or isinstance(value, ContextVar):
        return True
    if isinstance(value, (_PLAIN, dict, list, set, frozenset, tuple)):  # containers: see the source scan
        if isinstance(value, (tuple, frozenset)):
            return any(_has_state(v, (*seen, id(value))) for v in value)
        return False
    if type(value).__module__ in ("__future__", "typing", "builtins"):
        return False
    if dataclasses.is_dataclass(value) and type(value).__dataclass_params__.frozen:
        return any(_has_state(getattr(value, f.name), (*seen, id(value))) for f in dataclasses.fields(value))
    return bool(getattr(value, "__dict__", None)) or bool(getattr(type(value), "__slots__", ()))


def _sources():
    for path in sorted(PACKAGE.rglob("*.py")):
        if "__pycache__" not in path.parts:
            yield path, _module_name(path)


def _holder(name: str) -> str:
    """``name`` cut at the first object that is neither a module nor a class: ``m.OBJ.attr`` is
    state of ``m.OBJ``, while ``m.Class.attr`` and ``m.module.X`` stay as they are."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:n]))
        except ImportError:
            continue
        for i in range(n, len(parts)):
            if not isinstance(obj, (type, types.ModuleType)):
                return ".".join(parts[:i])
            obj = getattr(obj, parts[i], None)
        return name
    return name


def audit() -> dict[str, str]:
    """Every piece of process-wide state in lessonkit: ``{qualified name: why it was found}``."""
    found: dict[str, str] = {}
    for path, module in _sources():
        tree_found = scan_source(path.read_text(encoding="utf-8"), module, path.name == "__init__.py")
        for name, why in tree_found.items():
            found.setdefault(name if module in NOT_IMPORTED else _holder(name), why)
        if module in NOT_IMPORTED:
            continue
        mod = importlib.import_module(module)
        top = _Scanner(module, ast.parse(path.read_text(encoding="utf-8")), path.name == "__init__.py").top
        for name in sorted(top):
            value = getattr(mod, name, None)
            if isinstance(value, type) or callable(value) and not hasattr(value, "cache_info"):
                continue
            if _has_state(value):
                found.setdefault(f"{module}.{name}", f"a {type(value).__name__} object with state")
    return found


def test_every_module_of_the_package_is_audited():
    modules = {m.name for m in pkgutil.walk_packages(lessonkit.__path__, "lessonkit.")}
    assert modules <= {module for _, module in _sources()} | {"lessonkit"}
    assert "lessonkit.integrations.mkdocs.hooks" in modules and "lessonkit.kinds.snapshot" in modules


def test_process_wide_state_is_exactly_what_lessonkit_shared_lists():
    found = audit()
    listed = dict(shared.STATE)
    unlisted = {k: v for k, v in found.items() if k not in listed}
    gone = sorted(set(listed) - set(found))
    assert not unlisted, f"process-wide state not listed in lessonkit/util/shared.py: {unlisted}"
    assert not gone, f"lessonkit/util/shared.py lists state that no longer exists: {gone}"


def test_each_listed_state_says_what_it_is_and_why_it_may_outlive_a_build():
    assert len(shared.STATE) == len(dict(shared.STATE))  # one entry per name
    for name, (kind, reason) in shared.STATE:
        assert kind in shared.KINDS, name
        assert len(reason) >= 40 and reason.endswith("."), name
    caches = [name for name, (kind, _) in shared.STATE if kind == "cache"]
    assert "lessonkit.util.store._MEMORY" in caches and "lessonkit.source.pyindex.SourceFile._shared" in caches
    assert [name for name, (kind, _) in shared.STATE if kind == "session"] == [
        "lessonkit.integrations.mkdocs.hooks.SESSION"
    ]


SAMPLE = """
from functools import lru_cache
from contextvars import ContextVar
from . import other
from .pyindex import SourceFile

TABLE = {"a": 1}          # a constant table: read only
SEEN = set()
COUNTS = {}
FLAG = [False]
CURRENT = ContextVar("x")
LATEST = None


def read(key):
    TABLE = {}             # a local of the same name: not the module's
    TABLE[key] = 1
    return TABLE


def remember(key):
    SEEN.add(key)
    COUNTS[key] = COUNTS.get(key, 0) + 1
    FLAG[0] = True


def install(store):
    global LATEST
    LATEST = store
    other.STORE = store
    SourceFile.store = store


class Files:
    _shared = {}
    limit = 3

    @classmethod
    def of(cls, key):
        cls._shared[key] = key
        return cls.limit

    def keep(self, key):
        self.mine = key


@lru_cache(maxsize=1)
def version():
    return "1"
"""


def test_the_audit_finds_each_kind_of_process_wide_state():
    assert scan_source(SAMPLE, "lessonkit.sample") == {
        "lessonkit.sample.SEEN": "changed in place",
        "lessonkit.sample.COUNTS": "changed in place",
        "lessonkit.sample.FLAG": "changed in place",
        "lessonkit.sample.CURRENT": "memoised function or context variable",
        "lessonkit.sample.LATEST": "rebound in a function",
        "lessonkit.other.STORE": "set from code",
        "lessonkit.pyindex.SourceFile.store": "set from code",
        "lessonkit.sample.Files._shared": "changed in place",
        "lessonkit.sample.version": "memoised function",
    }


@pytest.mark.parametrize(
    "value, stateful",
    [
        ({"a": 1}, False),  # containers are judged by the source scan
        ((1, "a", re.compile("x")), False),
        (dataclasses.make_dataclass("F", [("a", int)], frozen=True)(1), False),
        (dataclasses.make_dataclass("M", [("a", int)])(1), True),
        (ContextVar("v"), True),
        (type("Registry", (), {"__init__": lambda self: setattr(self, "items", {})})(), True),
    ],
)
def test_objects_with_state_are_told_from_plain_values(value, stateful):
    assert _has_state(value) is stateful
