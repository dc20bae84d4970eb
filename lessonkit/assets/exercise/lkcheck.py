"""Runs one pytest test file the way ``python -m pytest FILE`` runs it, with the standard library
only: in a reader's browser (Pyodide), where pytest is not installed, for ``exercise`` blocks.

What it does as pytest does, for test files of a series' exercises:

* ``conftest.py`` of every folder from the root down to the test file's folder is imported first
  (its folder put first on ``sys.path``), then the test module under its base name, its folder
  first on ``sys.path``;
* the module's ``test_*`` functions are collected in the order they are defined; a
  ``@pytest.mark.parametrize`` makes one test per value, named ``test_x[value]``;
* a test's arguments are fixtures: the conftests' and the module's ``@pytest.fixture`` functions
  (function scope; a generator fixture is torn down after the test), ``request`` and ``monkeypatch``;
* outcomes: ``passed``; ``failed`` (the test raised); ``error`` (a fixture raised); ``skipped``
  (``pytest.skip`` or ``pytest.importorskip``).

While it runs, ``import pytest`` gives the small module below (``raises``, ``approx``, ``mark``,
``fixture``, ``skip``, ``fail``, ``importorskip``), so a test file needs no pytest. It is not
pytest: plugins, hooks other than fixtures, and assertion rewriting are not there; a failed
``assert`` is reported with its source line.

``run(test_file, root)`` returns one dict per test: ``name``, ``outcome``, ``message`` (the
exception's type and text, first line as pytest's report shows it), ``where`` (the frames of the
root's files, innermost last: file, line, text) and ``stdout``. ``python lkcheck.py FILE ROOT``
prints them as JSON.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import io
import json
import linecache
import math
import os
import re
import sys
import traceback
import types
from decimal import Decimal
from numbers import Complex
from typing import Any


class Skipped(BaseException):
    """``pytest.skip``: the test is skipped (a BaseException, as pytest's, so ``except Exception`` misses it)."""


class Failed(BaseException):
    """``pytest.fail``: the test fails with this message."""


def skip(reason: str = "") -> None:
    raise Skipped(reason)


def fail(reason: str = "") -> None:
    raise Failed(reason)


def importorskip(modname: str, minversion: str | None = None, reason: str | None = None, *, exc_type=None):
    """Skip when the module is not there (pytest 9: only ``ModuleNotFoundError`` unless ``exc_type``)."""
    try:
        __import__(modname)
    except exc_type or ModuleNotFoundError as exc:
        raise Skipped(reason or f"could not import {modname!r}: {exc}") from None
    return sys.modules[modname]


class _Raises:
    def __init__(self, expected, match):
        self.expected, self.match, self.value = expected, match, None

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if kind is None:
            name = getattr(self.expected, "__name__", repr(self.expected))
            raise Failed(f"DID NOT RAISE <class '{name}'>")
        if not issubclass(kind, self.expected):
            return False
        self.value = value
        if self.match is not None and not re.search(self.match, str(value)):
            raise AssertionError(f"Regex pattern did not match.\n Regex: {self.match!r}\n Input: {str(value)!r}")
        return True


def raises(expected, *args, match=None, **kwargs):
    if args:
        func, rest = args[0], args[1:]
        with _Raises(expected, match) as r:
            func(*rest, **kwargs)
        return r
    return _Raises(expected, match)


class approx:  # noqa: N801 - the name tests use
    """A number within tolerance: ``max(rel * |expected|, abs)``; only ``abs`` when only ``abs`` is given
    (defaults rel 1e-6, abs 1e-12), as pytest's ``approx`` of a scalar."""

    def __init__(self, expected, rel=None, abs=None):  # noqa: A002 - pytest's keyword
        self.expected, self.rel, self.abs = expected, rel, abs

    def tolerance(self) -> float:
        absolute = 1e-12 if self.abs is None else self.abs
        if self.rel is None and self.abs is not None:
            return absolute
        relative = (1e-6 if self.rel is None else self.rel) * _abs(self.expected)
        return max(relative, absolute)

    def __eq__(self, actual) -> bool:
        if actual == self.expected:
            return True
        if not (isinstance(self.expected, (Complex, Decimal)) and isinstance(actual, (Complex, Decimal))):
            return False
        if isinstance(self.expected, float) and math.isinf(self.expected):
            return False
        diff: Any = _abs(self.expected - actual)
        return diff <= self.tolerance()

    __hash__ = None  # type: ignore[assignment]

    def __ne__(self, actual) -> bool:
        return not self == actual

    def __repr__(self) -> str:
        try:
            return f"{self.expected} ± {self.tolerance():.1e}"
        except TypeError:
            return repr(self.expected)


_abs = abs


def fixture(func=None, **options):
    """``@pytest.fixture`` (function scope); ``@pytest.fixture(...)`` too."""
    if func is None:
        return lambda f: fixture(f, **options)
    func._lkcheck_fixture = True
    return func


class _Mark:
    def parametrize(self, argnames, argvalues, ids=None):
        names = [n.strip() for n in argnames.split(",")] if isinstance(argnames, str) else list(argnames)

        def mark(func):
            func.__dict__.setdefault("_lkcheck_params", []).insert(0, (names, list(argvalues), ids))
            return func

        return mark

    def __getattr__(self, name):  # skip, xfail, …: not supported, refused rather than ignored
        raise AttributeError(f"pytest.mark.{name} is not supported in the browser")


mark = _Mark()


class MonkeyPatch:
    def __init__(self):
        self._undo: list = []

    def setattr(self, target, name, value, raising=True):
        old = getattr(target, name, _MISSING)
        if old is _MISSING and raising:
            raise AttributeError(f"{target!r} has no attribute {name!r}")
        self._undo.append((target, name, old))
        setattr(target, name, value)

    def delattr(self, target, name, raising=True):
        if not hasattr(target, name):
            if raising:
                raise AttributeError(name)
            return
        self._undo.append((target, name, getattr(target, name)))
        delattr(target, name)

    def setitem(self, mapping, key, value):
        self._undo.append((mapping, key, mapping.get(key, _MISSING), "item"))
        mapping[key] = value

    def undo(self):
        for entry in reversed(self._undo):
            if len(entry) == 4:
                mapping, key, old, _ = entry
                if old is _MISSING:
                    mapping.pop(key, None)
                else:
                    mapping[key] = old
            else:
                target, name, old = entry
                if old is _MISSING:
                    if hasattr(target, name):
                        delattr(target, name)
                else:
                    setattr(target, name, old)
        self._undo.clear()


_MISSING = object()


class Request:
    def __init__(self, module, name):
        self.module, self.node_name = module, name


def _shim() -> types.ModuleType:
    mod = types.ModuleType("pytest", "lkcheck's stand-in for pytest")
    for name in ("skip", "fail", "importorskip", "raises", "approx", "fixture", "mark", "MonkeyPatch"):
        setattr(mod, name, globals()[name])
    mod.skip.Exception = Skipped
    mod.fail.Exception = Failed
    return mod


# ------------------------------------------------------------------------------- collection


def _param_id(value, argname: str, index: int) -> str:
    if isinstance(value, str):
        return value.encode("unicode_escape").decode("ascii") if not value.isascii() else value
    if isinstance(value, (bool, int, float, complex)) or value is None:
        return str(value)
    return f"{argname}{index}"


def _items(module) -> list[tuple[str, object, dict]]:
    """(name, function, parametrized arguments) of every test of the module, in pytest's order."""
    out: list[tuple[str, Any, dict]] = []
    for name, obj in list(vars(module).items()):
        if not (name.startswith("test") and inspect.isfunction(obj)) or getattr(obj, "_lkcheck_fixture", False):
            continue
        cases: list[tuple[list[str], dict]] = [([], {})]
        for names, values, ids in getattr(obj, "_lkcheck_params", []):
            more = []
            for id_parts, args in cases:
                for i, value in enumerate(values):
                    row = tuple(value) if len(names) > 1 else (value,)
                    if ids is not None:
                        part = str(ids[i])
                    else:
                        part = "-".join(_param_id(v, n, i) for n, v in zip(names, row))
                    more.append((id_parts + [part], {**args, **dict(zip(names, row))}))
            cases = more
        for id_parts, args in cases:
            out.append((name + (f"[{'-'.join(id_parts)}]" if id_parts else ""), obj, args))
    return out


def _load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _fixtures_of(module) -> dict:
    return {n: f for n, f in vars(module).items() if inspect.isfunction(f) and getattr(f, "_lkcheck_fixture", False)}


# ------------------------------------------------------------------------------- reporting


def _frames(tb, root: str) -> list[dict]:
    out = []
    for frame in traceback.extract_tb(tb):
        path = os.path.abspath(frame.filename)
        if path.startswith(root + os.sep):
            out.append(
                {
                    "file": os.path.relpath(path, root).replace(os.sep, "/"),
                    "line": frame.lineno,
                    "text": (frame.line or "").strip(),
                }
            )
    return out


def _assert_detail(tb) -> str:
    """For a bare ``assert``: the statement's line as written (pytest would also show the values)."""
    last = tb
    while last.tb_next is not None:
        last = last.tb_next
    frame = last.tb_frame
    line = linecache.getline(frame.f_code.co_filename, last.tb_lineno).strip()
    return line or "assert"


def _report(exc: BaseException, root: str) -> tuple[str, list[dict]]:
    where = _frames(exc.__traceback__, root)
    if isinstance(exc, AssertionError) and not str(exc):
        message = _assert_detail(exc.__traceback__)
    elif isinstance(exc, (Failed, Skipped)):
        message = str(exc)
    else:
        text = str(exc)
        message = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return message, where


# ------------------------------------------------------------------------------- running


def _call_fixture(name, fixtures, module, test_name, cache, teardown):
    if name in cache:
        return cache[name]
    value: Any
    if name == "request":
        value = Request(module, test_name)
    elif name == "monkeypatch":
        value = MonkeyPatch()
        teardown.append(value.undo)
    elif name in fixtures:
        func = fixtures[name]
        kwargs = {
            p: _call_fixture(p, fixtures, module, test_name, cache, teardown)
            for p in inspect.signature(func).parameters
        }
        value = func(**kwargs)
        if inspect.isgenerator(value):
            gen = value
            value = next(gen)
            teardown.append(lambda: next(gen, None))
    else:
        raise LookupError(f"fixture '{name}' not found")
    cache[name] = value
    return value


def _run_one(name, func, args, fixtures, module, root) -> dict:
    out = io.StringIO()
    result = {"name": name, "outcome": "passed", "message": "", "where": [], "stdout": ""}
    teardown: list = []
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        kwargs = dict(args)
        try:
            for p in inspect.signature(func).parameters:
                if p not in kwargs:
                    kwargs[p] = _call_fixture(p, fixtures, module, name, {}, teardown)
        except Skipped as exc:
            result.update(outcome="skipped", message=str(exc))
        except BaseException as exc:  # noqa: BLE001 - a fixture's error is the test's error
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            message, where = _report(exc, root)
            result.update(outcome="error", message=message, where=where)
        else:
            try:
                func(**kwargs)
            except Skipped as exc:
                result.update(outcome="skipped", message=str(exc))
            except BaseException as exc:  # noqa: BLE001 - whatever the reader's code raises fails the test
                if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                    raise
                message, where = _report(exc, root)
                result.update(outcome="failed", message=message, where=where)
        for undo in reversed(teardown):
            try:
                undo()
            except Exception as exc:  # noqa: BLE001
                if result["outcome"] == "passed":
                    message, where = _report(exc, root)
                    result.update(outcome="error", message=message, where=where)
    result["stdout"] = out.getvalue()
    return result


def run(test_file: str, root: str) -> list[dict]:
    """Run ``test_file`` (a file under the folder ``root``) as pytest would; see the module's text."""
    root = os.path.abspath(root)
    test_file = os.path.abspath(test_file)
    saved_path, saved_modules = list(sys.path), dict(sys.modules)
    sys.modules["pytest"] = _shim()
    linecache.clearcache()
    importlib.invalidate_caches()
    try:
        folders: list[str] = []
        folder = os.path.dirname(test_file)
        while True:
            folders.insert(0, folder)
            if folder == root or os.path.dirname(folder) == folder:
                break
            folder = os.path.dirname(folder)
        fixtures: dict = {}
        for folder in folders:
            conftest = os.path.join(folder, "conftest.py")
            if os.path.isfile(conftest):
                sys.path.insert(0, folder)
                sys.modules.pop("conftest", None)
                fixtures.update(_fixtures_of(_load(conftest, "conftest")))
        sys.path.insert(0, os.path.dirname(test_file))
        name = os.path.splitext(os.path.basename(test_file))[0]
        try:
            module = _load(test_file, name)
        except Exception as exc:  # noqa: BLE001 - pytest reports a module that does not import as an error
            message, where = _report(exc, root)
            return [{"name": name, "outcome": "error", "message": message, "where": where, "stdout": ""}]
        fixtures.update(_fixtures_of(module))
        return [_run_one(n, f, a, fixtures, module, root) for n, f, a in _items(module)]
    finally:
        sys.path[:] = saved_path
        for key in list(sys.modules):
            if key not in saved_modules:
                del sys.modules[key]
        sys.modules.update(saved_modules)


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1], sys.argv[2]), ensure_ascii=False, indent=1))
