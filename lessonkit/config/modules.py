"""A project's own Python modules, as its registration files name them: ``sourcemap/kinds.toml``
(block kinds) and ``sourcemap/attachments.toml`` (generated pages). Both hold exactly::

    modules = ["package.module", …]   # importable from the project root

:func:`read_modules` checks the file; :func:`import_project_module` imports one of its modules
from the project root and nowhere else; :func:`registered_objects` takes the objects a module
registers (``KIND``/``KINDS``, ``ATTACHMENT``/``ATTACHMENTS``). Every mistake is one line ``file:LINE: what — hint``,
located at the line that names the module.
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from lessonkit.config.environment import display_text
from lessonkit.config.files import MAX_CONFIG_BYTES, _type_name, read_text, read_toml, show
from lessonkit.errors import LessonError

MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}(\.[A-Za-z_][A-Za-z0-9_]{0,99}){0,9}$")


HINT = 'write `modules = ["package.module"]`, modules of the project importable from its root'


def quoted_line(text: str, value: str, default: int) -> int:
    """The first line of ``text`` holding ``value`` in quotes (else ``default``)."""
    for n, line in enumerate(text.split("\n"), 1):
        if f'"{value}"' in line or f"'{value}'" in line:
            return n
    return default


def read_modules(root: Path, label: str, hint: str) -> list[tuple[str, int]]:
    """``label`` (a file of the project): exactly ``modules = [names…]``, each a dotted module
    name, listed once. (name, line) pairs, in the file's order."""
    path = root / label
    data, lines = read_toml(path, label, hint)
    text = read_text(path, label, MAX_CONFIG_BYTES, hint)
    at = lines.get(("", "modules"), 1)
    if set(data) != {"modules"}:
        extra = sorted(set(data) - {"modules"})
        raise LessonError(
            f"unknown key `{extra[0]}`" if extra else "no `modules` key",
            path=label,
            line=lines.get(("", extra[0]), 1) if extra else 1,
            hint=hint,
        )
    modules = data["modules"]
    if not isinstance(modules, list):
        raise LessonError(
            f"`modules` is {_type_name(modules)}, not an array of module names", path=label, line=at, hint=hint
        )
    out: list[tuple[str, int]] = []
    for name in modules:
        if not isinstance(name, str):
            raise LessonError(
                f"`modules` holds {_type_name(name)} {show(name)}, not a module name", path=label, line=at, hint=hint
            )
        line = quoted_line(text, name, at)
        if not MODULE_NAME.fullmatch(name):
            raise LessonError(
                f"{show(name)} is not a module name",
                path=label,
                line=line,
                hint="dotted Python identifiers, e.g. `lessonkinds.note`",
            )
        if any(n == name for n, _ in out):
            raise LessonError(f"module `{name}` is listed twice", path=label, line=line, hint="list each module once")
        out.append((name, line))
    return out


# How long a project module may take to import (kinds.toml, attachments.toml): a module that does
# not finish by then is one located error. Bounded only where a timer signal can interrupt it (the
# main thread, Python code; a C call that never returns still hangs).
IMPORT_SECONDS = 60


class _Exited(BaseException):
    """A project module called ``os._exit`` while it was imported (see :func:`_guarded_import`)."""


class _Hung(BaseException):
    """A project module's import did not end within :data:`IMPORT_SECONDS`."""


@contextlib.contextmanager
def _guarded_import():
    """While a project module is imported: ``os._exit`` raises instead of ending the process (a
    module could end verify with exit code 0 and no output), and, in the main thread with no timer
    of its own running, SIGALRM after :data:`IMPORT_SECONDS` raises. The project's modules are
    trusted code: this is a guard against mistakes, not a sandbox (a module can still end or stop
    the process by other means, such as a signal or a C call)."""
    import posix
    import signal
    import threading

    def refuse(code: int = 0) -> None:
        raise _Exited(code)

    saved_exit = os._exit
    os._exit = posix._exit = refuse  # type: ignore[assignment]
    timed = threading.current_thread() is threading.main_thread() and signal.getitimer(signal.ITIMER_REAL)[0] == 0
    if timed:

        def hung(signum, frame) -> None:
            raise _Hung()

        previous = signal.signal(signal.SIGALRM, hung)
        signal.setitimer(signal.ITIMER_REAL, IMPORT_SECONDS)
    try:
        yield
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        os._exit = posix._exit = saved_exit


def _compiled_part(spec, name: str) -> str | None:
    """The file of module ``name`` or of one of its packages (from the top-level package's ``spec``,
    found without importing anything) that is not Python source: a sourceless ``.pyc``, an extension
    module. None when every part is a ``.py`` file or a namespace package (or cannot be found: the
    import reports that)."""
    import importlib.machinery

    parts = name.split(".")
    for n in range(len(parts)):
        if n:
            where = list(spec.submodule_search_locations or [])
            try:
                spec = importlib.machinery.PathFinder.find_spec(".".join(parts[: n + 1]), where) if where else None
            except (ImportError, ValueError, OSError):
                spec = None
        if spec is None:
            return None
        if spec.origin and spec.has_location and not spec.origin.endswith(".py"):
            return spec.origin
    return None


def import_project_module(root: Path, name: str, label: str, line: int, what: str) -> ModuleType:
    """Import module ``name`` of ``label`` (at ``line``) from the project root.

    Refuses (before importing anything) a module whose top-level package is not in the project
    root, such as a module of the standard library; any failure of the module itself, ``SystemExit``
    included, is one located error. ``what`` names the module in messages ("kind", "attachment")."""
    import importlib
    import importlib.machinery
    import sys

    top = name.split(".")[0]
    real_root = os.path.realpath(root)
    try:
        spec = importlib.machinery.PathFinder.find_spec(top, [real_root])
    except (ImportError, ValueError, OSError):
        spec = None
    origin = (spec.origin or (list(spec.submodule_search_locations or [""])[0])) if spec else ""
    if spec is None or not origin or not os.path.realpath(origin).startswith(real_root + os.sep):
        raise LessonError(
            f"cannot import {what} module `{name}`: ModuleNotFoundError: no `{top}.py` or `{top}/` in the project root",
            path=label,
            line=line,
            hint=f"{what} modules are the project's own, importable from its root",
        )
    compiled = _compiled_part(spec, name)
    if compiled:
        raise LessonError(
            f"cannot import {what} module `{name}`: `{os.path.relpath(compiled, real_root)}` is compiled code, "
            "which nobody can review",
            path=label,
            line=line,
            hint=f"{what} modules are Python source (`.py`) of the project",
        )
    loaded = sys.modules.get(top)  # already imported: from the Python installation it would not be ours
    where = os.path.realpath(getattr(loaded, "__file__", None) or "/") if loaded is not None else ""
    installed = {os.path.realpath(p) + os.sep for p in (sys.prefix, sys.base_prefix)}
    if loaded is not None and (where == "/" or any(where.startswith(p) for p in installed)):
        raise LessonError(
            f"module `{name}` has the name of a module lessonkit already uses",
            path=label,
            line=line,
            hint="rename the module",
        )
    if loaded is not None and not where.startswith(real_root + os.sep):  # another project's module of that name
        for key in [k for k in sys.modules if k == top or k.startswith(top + ".")]:
            del sys.modules[key]
    # first on sys.path while it imports, even where the root is on it already: an editable install
    # of the engine (a path line) puts the repository root last, behind every installed module
    sys.path.insert(0, real_root)
    bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # the build writes nothing there
    try:
        with _guarded_import():
            return importlib.import_module(name)
    except KeyboardInterrupt:
        raise
    except (_Exited, _Hung) as exc:
        why = (
            f"it called os._exit({exc.args[0]}) while it was imported, which would end lessonkit at once"
            if isinstance(exc, _Exited)
            else f"its import did not end within {IMPORT_SECONDS} s"
        )
        raise LessonError(
            f"cannot import {what} module `{name}`: {why}",
            path=label,
            line=line,
            hint="the module must be importable from the project root",
        ) from None
    except BaseException as exc:  # an author's module: any failure, SystemExit included, at its line
        raise LessonError(
            f"cannot import {what} module `{name}`: {type(exc).__name__}: {display_text(str(exc), 200)}",
            path=label,
            line=line,
            hint="the module must be importable from the project root",
        ) from None
    finally:
        sys.dont_write_bytecode = bytecode
        with contextlib.suppress(ValueError):
            sys.path.remove(real_root)  # the first one: the entry added above


@dataclass(frozen=True)
class Registration:
    """What a registration file's modules define, for :func:`registered_objects` and its messages:
    ``one``/``many`` the module attributes (``KIND``/``KINDS``), ``types`` what each object must be
    an instance of, ``plural`` and ``type_name`` how messages name them, ``example`` a constructor
    call (``MyKind()``) and ``instance_note`` what an instance is."""

    label: str
    what: str
    one: str
    many: str
    types: tuple[type, ...]
    plural: str
    type_name: str
    example: str
    instance_note: str


def registered_objects(root: Path, name: str, line: int, reg: Registration) -> list[Any]:
    """Import module ``name`` (listed at ``line`` of ``reg.label``) from the project root and return
    the objects it registers: ``reg.many`` (a list or tuple) if it defines it, else ``[reg.one]``.
    A module that defines neither, a ``many`` that is not a list, or an object of another type is
    one located error at ``line``."""
    module = import_project_module(root, name, reg.label, line, reg.what)
    many, one = getattr(module, reg.many, None), getattr(module, reg.one, None)

    def error(what: str, hint: str) -> LessonError:
        return LessonError(what, path=reg.label, line=line, hint=hint)

    if many is not None and not isinstance(many, (list, tuple)):
        raise error(
            f"`{reg.many}` of module `{name}` is {_type_name(many)}, not a list of {reg.plural}",
            f"write `{reg.many} = [{reg.example}, …]`",
        )
    found = list(many) if many is not None else ([one] if one is not None else [])
    if not found:
        raise error(
            f"module `{name}` defines neither {reg.one} nor {reg.many}",
            f"add `{reg.one} = {reg.example}` at the end of the module",
        )
    for obj in found:
        if not isinstance(obj, reg.types):
            raise error(
                f"module `{name}` lists {show(obj)}, which is not {reg.type_name} instance",
                f"write `{reg.one} = {reg.example}` ({reg.instance_note})",
            )
    return found


def raised_at(root: Path, exc: BaseException, path: str, line: int) -> tuple[str, int]:
    """Where a project module's code raised ``exc``: the deepest line of its traceback that is in
    one of the project's own files (relative to ``root``), else ``(path, line)``."""
    real_root = os.path.realpath(root) + os.sep
    tb = exc.__traceback__
    while tb is not None:
        file = os.path.realpath(tb.tb_frame.f_code.co_filename)
        if file.startswith(real_root):
            path, line = Path(file).relative_to(real_root).as_posix(), tb.tb_lineno
        tb = tb.tb_next
    return path, line


def _line(obj: Any) -> int | None:
    line = getattr(obj, "line", None)
    return line if isinstance(line, int) else None


def guard_methods(obj: Any, methods: tuple[str, ...], root: Path, label: str, module: str, line: int) -> None:
    """Make every call of ``obj.<method>`` for ``methods`` report an exception of the project's
    code as one located :class:`LessonError` (a LessonError it raises passes unchanged): at the
    line of the project's file that raised it, naming the method, the block or reference it was
    called for (when an argument has ``path`` and ``line``) and the registration at ``line`` of
    ``label``. The project's modules are trusted code: this turns their mistakes into lines, it is
    not a sandbox."""
    import functools

    what = f"{type(obj).__name__}" if not getattr(obj, "name", "") else f"`{obj.name}`"

    def guarded(method: str, bound):
        @functools.wraps(bound)
        def call(*args, **kwargs):
            try:
                return bound(*args, **kwargs)
            except LessonError:
                raise
            except Exception as exc:
                at = next((a for a in args if isinstance(getattr(a, "path", None), str) and _line(a)), None)
                during = f" for {at.path}:{at.line}" if at is not None else ""
                path, where = raised_at(root, exc, label, line)
                raise LessonError(
                    f"kind {what} failed in {method}(){during}: {type(exc).__name__}: {display_text(str(exc), 200)}",
                    path=path,
                    line=where,
                    hint=f"a mistake in module `{module}` ({label}:{line} registers it)",
                ) from None

        return call

    for method in methods:
        bound = getattr(obj, method, None)
        if callable(bound):
            with contextlib.suppress(AttributeError):  # a class with __slots__ keeps its own methods
                object.__setattr__(obj, method, guarded(method, bound))
