"""The templates of generated pages (Jinja2): the project's own ``templates/`` over the engine's,
rendered in a sandbox that lets a template read plain data and nothing else."""

from __future__ import annotations

import re
import sys
from functools import cached_property
from pathlib import Path

from lessonkit.errors import LessonError
from lessonkit.util import text

ENGINE_TEMPLATES = Path(__file__).parents[1] / "templates"


# What a template may read: plain data. Values of these types, the fields and properties of
# dataclasses and named tuples, the items of mappings and sequences, the non-mutating methods
# of strings, mappings and sequences, and Jinja's own loop and namespace objects. Nothing else:
# no method of an engine object (``site.render``), no path (``pin.source.write_text``), no dunder.
_SCALARS = (str, int, float, bool, type(None))
_CONTAINERS = (dict, list, tuple, frozenset, set)
_METHODS = {
    str: {
        "capitalize",
        "casefold",
        "center",
        "count",
        "endswith",
        "find",
        "index",
        "isalnum",
        "isalpha",
        "isdigit",
        "islower",
        "isspace",
        "istitle",
        "isupper",
        "join",
        "ljust",
        "lower",
        "lstrip",
        "partition",
        "removeprefix",
        "removesuffix",
        "replace",
        "rfind",
        "rindex",
        "rjust",
        "rpartition",
        "rsplit",
        "rstrip",
        "split",
        "splitlines",
        "startswith",
        "strip",
        "swapcase",
        "title",
        "upper",
        "zfill",
    },
    dict: {"items", "keys", "values", "get"},
    list: {"count", "index"},
    tuple: {"count", "index"},
}


def _plain_value(value) -> bool:
    """Plain data: a scalar, a container, a dataclass instance (whose own attributes are checked
    again when read), or Jinja's undefined value."""
    import dataclasses

    import jinja2

    if isinstance(value, _SCALARS + _CONTAINERS + (jinja2.Undefined,)):
        return True
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def _jinja_objects() -> tuple[type, ...]:
    from jinja2.runtime import LoopContext
    from jinja2.utils import Namespace

    return (LoopContext, Namespace)


def _data_attribute(obj, attr: str, value) -> bool:
    """Whether a template may read ``obj.attr`` (whose value is ``value``)."""
    import dataclasses

    if attr.startswith("_"):
        return False
    if isinstance(obj, _jinja_objects()):  # loop.index, loop.last, ns.total, …
        return True
    if isinstance(obj, tuple) and attr in getattr(type(obj), "_fields", ()):
        return _plain_value(value)  # a named tuple's field
    for kind, names in _METHODS.items():
        if isinstance(obj, kind):
            return attr in names  # a non-mutating method of a string, mapping or sequence
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        field_or_property = attr in {f.name for f in dataclasses.fields(obj)} or isinstance(
            getattr(type(obj), attr, None), (property, cached_property)
        )
        return field_or_property and _plain_value(value)
    return False


class TooLarge(Exception):
    """A value or an output of a template beyond :data:`MAX_OUTPUT` (or a power beyond :data:`MAX_POWER`)."""


MAX_OUTPUT = 16 * 1024 * 1024  # characters a template may render (and items of a repetition)
MAX_POWER = 100
MAX_INT_BITS = 1 << 16  # bits of an integer a `*` or `**` of a template may make (about 19,700 digits)
MAX_CPU = 10.0  # seconds of its thread's CPU one rendering of a template may take


class _Budget:
    """The CPU bound of one rendering: a trace of the template's own frames (its module's globals
    hold the environment; macros too) that counts their lines and, every 1024 of them, compares the
    thread's CPU time with the deadline. A loop that writes nothing still runs lines."""

    def __init__(self, env) -> None:
        import time

        self.env, self.clock, self.n = env, time.thread_time, 0
        self.deadline = self.clock() + MAX_CPU

    def call(self, frame, event, arg):
        return self.line if frame.f_globals.get("environment") is self.env else None

    def line(self, frame, event, arg):
        self.n += 1
        if not self.n & 1023 and self.clock() > self.deadline:
            raise TooLarge(f"takes more than {MAX_CPU:g} s of CPU to render")
        return self.line


def _sandbox():
    """The template environment class: Jinja's immutable sandbox, restricted to plain data."""
    import jinja2
    from jinja2.exceptions import SecurityError
    from jinja2.runtime import Macro
    from jinja2.sandbox import ImmutableSandboxedEnvironment
    from jinja2.utils import Namespace

    class DataOnlyEnvironment(ImmutableSandboxedEnvironment):
        def is_safe_attribute(self, obj, attr, value):
            if isinstance(obj, jinja2.Undefined):
                obj._fail_with_undefined_error()  # `'cycler' is undefined`, not an attribute of it
            return _data_attribute(obj, attr, value) and super().is_safe_attribute(obj, attr, value)

        intercepted_binops = frozenset(["*", "**", "+", "%"])

        def call_binop(self, context, operator, left, right):
            """`*`, `**`, `+` and `%` within bounds: a template makes no value larger than its output may be."""
            _check_binop(operator, left, right)
            return super().call_binop(context, operator, left, right)

        def call(__self, __context, __obj, *args, **kwargs):  # noqa: N805 - Jinja's own signature
            """A string method that makes a longer string (``center``, ``zfill``, ``replace``, ``join``, …)
            is called only when what it makes stays within :data:`MAX_OUTPUT`."""
            owner = getattr(__obj, "__self__", None)
            if isinstance(owner, str):
                _check_str_method(owner, getattr(__obj, "__name__", ""), args, kwargs)
            return super().call(__context, __obj, *args, **kwargs)

        def wrap_str_format(self, value):
            return None  # str.format is a method like any other: not plain data

        def unsafe_undefined(self, obj, attribute):
            raise SecurityError(f"{type(obj).__name__} attribute `{attribute}` is not plain data")

        def is_safe_callable(self, obj):
            if obj in (self.globals.get("range"), dict, Namespace) or isinstance(obj, (*_jinja_objects(), Macro)):
                return True  # Jinja's own helpers, and the template's own macros
            owner = getattr(obj, "__self__", None)
            plain_method = isinstance(owner, tuple(_METHODS) + _jinja_objects())
            name = getattr(obj, "__name__", "_")
            return plain_method and _data_attribute(owner, name, obj) and super().is_safe_callable(obj)

    return DataOnlyEnvironment


def _check_binop(operator: str, left, right) -> None:
    """`*`, `**`, `+` and `%` of a template, bounded before they are computed."""
    if operator == "**" and isinstance(right, (int, float)) and right > MAX_POWER:
        raise TooLarge(f"a power above {MAX_POWER} (`** {right}`)")
    if operator in ("*", "**") and isinstance(left, int) and isinstance(right, int) and right > 0:
        bits = left.bit_length() * right if operator == "**" else left.bit_length() + right.bit_length()
        if bits > MAX_INT_BITS:  # squaring a number again and again: the product's digits double each time
            raise TooLarge(f"an integer of more than {MAX_INT_BITS} bits (`{operator}`)")
    if operator == "%" and isinstance(left, str):
        _check_printf(left)
    sized = (str, list, tuple)
    if operator == "*":
        for seq, n in ((left, right), (right, left)):
            if isinstance(seq, sized) and isinstance(n, int) and len(seq) * n > MAX_OUTPUT:
                raise TooLarge(f"a repetition longer than {MAX_OUTPUT} items")
    if operator == "+" and isinstance(left, sized) and isinstance(right, sized):
        if len(left) + len(right) > MAX_OUTPUT:
            raise TooLarge(f"a value longer than {MAX_OUTPUT} items")


_WIDTH = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\d*)(?:\.(\d+))?")


def _check_printf(fmt: str) -> None:
    """``'%1000000000s' % x``: no width or precision beyond :data:`MAX_OUTPUT`."""
    for width, precision in _WIDTH.findall(fmt):
        for digits in (width, precision):
            if len(digits) > 9 or (digits and int(digits) > MAX_OUTPUT):
                raise TooLarge(f"a `%` format wider than {MAX_OUTPUT} characters")


def _bounded(size: int, what: str) -> None:
    if size > MAX_OUTPUT:
        raise TooLarge(f"{what} longer than {MAX_OUTPUT} characters")


def _check_str_method(s: str, name: str, args: tuple, kwargs: dict) -> None:
    """What a string method would make, bounded before it is made."""
    first = args[0] if args else next(iter(kwargs.values()), None)
    if name in ("center", "ljust", "rjust", "zfill") and isinstance(first, int):
        _bounded(first, f"`{name}({first})`: a value")
    elif name == "replace" and len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str):
        count = len(s) + 1 if args[0] == "" else s.count(args[0])
        if len(args) > 2 and isinstance(args[2], int) and args[2] >= 0:
            count = min(count, args[2])
        _bounded(len(s) + count * (len(args[1]) - len(args[0])), "`replace`: a value")
    elif name == "join" and first is not None:
        _bounded_join([v if isinstance(v, str) else "" for v in _bounded_items(first)], s)
    elif name == "expandtabs":
        _bounded(len(s) * (first if isinstance(first, int) else 8), "`expandtabs`: a value")


def _bounded_parts(parts, what: str) -> list:
    """The pieces a template joins into one value (``~``, a ``{% set %}`` block, a macro's output),
    read once, their total length bounded before they are joined."""
    out, size = [], 0
    for part in parts:
        size += len(part) if isinstance(part, str) else len(str(part))
        _bounded(size, what)
        out.append(part)
    return out


def _bounded_template_class():
    """Jinja's template class whose compiled code joins values through bounded functions: ``~``
    (``str_join``/``markup_join``, module globals of the compiled template) and what a block of
    ``{% set %}`` or a macro renders (``environment.concat``, bounded in :func:`environment`)."""
    import jinja2
    from jinja2 import runtime

    def str_join(seq):
        return runtime.str_join(_bounded_parts(seq, "`~`: a value"))

    def markup_join(seq):
        return runtime.markup_join(_bounded_parts(seq, "`~`: a value"))

    class BoundedTemplate(jinja2.Template):
        @classmethod
        def _from_namespace(cls, environment, namespace, globals):
            namespace["str_join"], namespace["markup_join"] = str_join, markup_join
            return super()._from_namespace(environment, namespace, globals)

    return BoundedTemplate


def _bounded_join(items, sep: str = "") -> str:
    out, size = [], 0
    for n, item in enumerate(items):
        size += len(item) + (len(sep) if n else 0) if isinstance(item, str) else 0
        _bounded(size, "`join`: a value")
        out.append(item)
    return sep.join(out)


def _guard_filters(env) -> None:
    """Jinja's filters that make long values or many items, bounded before they make them."""
    import jinja2
    from jinja2.utils import _PassArg

    def width(value, w=80, *args, **kwargs):
        _bounded(w if isinstance(w, int) else 0, f"`center({w})`: a value")
        return value

    def indent(value, w=4, *args, **kwargs):
        pad = w if isinstance(w, int) else len(str(w))
        _bounded(len(str(value)) + (str(value).count("\n") + 1) * pad, "`indent`: a value")
        return value

    def count(name: str):
        def check(value, n=0, *args, **kwargs):
            _bounded(n if isinstance(n, int) else 0, f"`{name}({n})`: a list")
            return value

        return check

    def printf(value, *args, **kwargs):
        if isinstance(value, str):
            _check_printf(value)
        return value

    def join(value, d="", attribute=None):
        items = _bounded_items(value)  # a generator is read once: the filter gets the list
        if attribute is None and isinstance(d, str):
            _bounded_join([v if isinstance(v, str) else str(v) for v in items], d)
        return items

    def wordwrap(value, w=79, *args, **kwargs):
        text_value = str(value)
        wrap = kwargs.get("wrapstring", args[1] if len(args) > 1 else None)
        step = w if isinstance(w, int) and w > 0 else 1
        lines = len(text_value) // step + len(text_value.split()) + text_value.count("\n") + 1
        _bounded(len(text_value) + lines * len(wrap if isinstance(wrap, str) else "\n"), "`wordwrap`: a value")
        return value

    def replace(value, old="", new="", count=None):
        if isinstance(old, str) and isinstance(new, str):
            _check_str_method(str(value), "replace", (old, new) + (() if count is None else (count,)), {})
        return value

    checks = {
        "center": width,
        "wordwrap": wordwrap,
        "replace": replace,
        "indent": indent,
        "batch": count("batch"),
        "slice": count("slice"),
        "format": printf,
        "join": join,
    }
    passes = {
        _PassArg.eval_context: jinja2.pass_eval_context,
        _PassArg.environment: jinja2.pass_environment,
        _PassArg.context: jinja2.pass_context,
    }
    for name, check in checks.items():
        original = env.filters[name]
        passed = _PassArg.from_obj(original)

        def guarded(*args, _original=original, _check=check, _skip=int(passed is not None), **kwargs):
            value = _check(*args[_skip:], **kwargs)  # the value the filter gets (a generator read into a list)
            return _original(*args[:_skip], value, *args[_skip + 1 :], **kwargs)

        env.filters[name] = passes[passed](guarded) if passed is not None else guarded


def _bounded_items(value) -> list:
    out = []
    for n, item in enumerate(value):
        if n >= MAX_OUTPUT:
            raise TooLarge(f"`join`: more than {MAX_OUTPUT} items")
        out.append(item)
    return out


class UnsafeTemplate(Exception):
    """A name in ``templates/`` that is not a regular file strictly inside it (a symbolic link, a
    device, a folder): raised by :class:`_ProjectLoader`, reported by :func:`render` where the
    template that named it asked for it."""


def project_loader(folder: Path):
    """A Jinja loader of the project's ``templates/``: it reads a name only when every part of its
    path below ``folder`` is a real folder or, last, a regular file (no symbolic link anywhere, the
    file opened with ``O_NOFOLLOW``, its real path inside ``folder``); any other name that exists
    raises :class:`UnsafeTemplate`. A name that does not exist falls through to the engine's."""
    import os
    import stat

    import jinja2
    from jinja2.loaders import split_template_path

    class ProjectLoader(jinja2.BaseLoader):
        def get_source(self, environment, template):
            parts = split_template_path(template)  # refuses `..`; TemplateNotFound
            try:
                top = os.lstat(folder)
            except OSError:
                raise jinja2.TemplateNotFound(template) from None
            if not stat.S_ISDIR(top.st_mode):
                raise UnsafeTemplate("`templates` is not a folder (a symbolic link?)")
            path = folder
            for i, part in enumerate(parts):
                path = path / part
                try:
                    st = os.lstat(path)
                except FileNotFoundError:
                    raise jinja2.TemplateNotFound(template) from None
                except OSError as exc:
                    raise UnsafeTemplate(f"`templates/{template}` cannot be read: {exc.strerror}") from None
                last = i == len(parts) - 1
                if stat.S_ISLNK(st.st_mode):
                    raise UnsafeTemplate(f"`templates/{'/'.join(parts[: i + 1])}` is a symbolic link")
                if not (stat.S_ISREG(st.st_mode) if last else stat.S_ISDIR(st.st_mode)):
                    kind = "not a regular file" if last else "not a folder"
                    raise UnsafeTemplate(f"`templates/{'/'.join(parts[: i + 1])}` is {kind}")
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
            except OSError as exc:
                raise UnsafeTemplate(f"`templates/{template}` cannot be opened: {exc.strerror}") from None
            with os.fdopen(fd, "rb") as f:
                st = os.fstat(f.fileno())
                real = Path(os.path.realpath(path))
                if not stat.S_ISREG(st.st_mode) or not real.is_relative_to(Path(os.path.realpath(folder))):
                    raise UnsafeTemplate(f"`templates/{template}` is not a regular file inside templates/")
                data = f.read()
            try:
                source = data.decode("utf-8")
            except UnicodeDecodeError:
                raise UnsafeTemplate(f"`templates/{template}` is not UTF-8 text") from None
            mtime = st.st_mtime_ns

            def uptodate() -> bool:
                try:
                    return os.lstat(path).st_mtime_ns == mtime
                except OSError:
                    return False

            return source, str(path), uptodate

    loader = ProjectLoader()
    loader.folder = folder  # type: ignore[attr-defined]  # for render(): where a project template's frame is
    return loader


def environment(root: Path):
    """Templates of the project (``templates/``) before the engine's (``lessonkit/templates/``),
    rendered in a sandbox (:func:`_sandbox`): ``templates/`` is contributed content, so a template
    reads plain data only and calls nothing but the filters below and the non-mutating methods of
    strings, mappings and sequences; anything else is a located error, never run."""
    import jinja2

    loader = jinja2.ChoiceLoader([project_loader(root / "templates"), jinja2.FileSystemLoader(ENGINE_TEMPLATES)])
    # `{#id}` is Markdown's heading-id syntax, so Jinja2 comments are written {#-- … --#}
    env = _sandbox()(
        loader=loader,
        keep_trailing_newline=True,
        autoescape=False,  # the templates are Markdown: values go in through the filters below
        undefined=jinja2.StrictUndefined,
        comment_start_string="{#--",
        comment_end_string="--#}",
    )
    # Only plain-data helpers: no cycler, joiner or lipsum (objects with methods and module globals).
    env.globals = {"range": env.globals["range"], "dict": dict, "namespace": env.globals["namespace"]}
    # One escaping function per Markdown context (lessonkit.util.text): {{ file | code }} is a code
    # span, {{ name | mdtext }} literal text, {{ path | url }} a link destination.
    env.filters.update(code=text.md_code, mdtext=text.md_text, url=text.md_url)
    _guard_filters(env)
    env.template_class = _bounded_template_class()
    env.concat = lambda parts: "".join(_bounded_parts(parts, "a `{% set %}` block or a macro's output: a value"))
    return env


def _template_line(exc: BaseException, filename: str | None) -> int | None:
    """The line of the template ``filename`` where a runtime error was raised (Jinja maps the
    traceback's frames to template lines), else the error's own line."""
    line = getattr(exc, "lineno", None)
    tb = exc.__traceback__
    while tb is not None:
        if filename and tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def project_source(env, name: str) -> str | None:
    """The text of the project's template ``name`` (``templates/``), or None when the engine's
    template of that name is the one used."""
    folder = getattr(getattr(env.loader, "loaders", [None])[0], "folder", None)
    filename = env.get_template(name).filename  # compiled once: render() has loaded it
    if folder is None or filename is None or not Path(filename).is_relative_to(folder):
        return None
    return env.loader.loaders[0].get_source(env, name)[0]


UNSAFE_HINT = "a template of templates/ is a regular file inside templates/, never a symbolic link: copy the text in"


def _project_frame(env, exc: BaseException, name: str, filename: str | None) -> tuple[str, int | None]:
    """Where in the project's ``templates/`` a render error was raised: the innermost frame of a
    project template (``templates/<file>``, its line), else the rendered template's line."""
    folder = getattr(getattr(env.loader, "loaders", [None])[0], "folder", None)
    tb = exc.__traceback__
    found: tuple[str, int | None] | None = None
    while tb is not None:
        code = tb.tb_frame.f_code.co_filename
        if folder is not None and Path(code).is_relative_to(folder) and not code.endswith(".py"):
            found = (f"templates/{Path(code).relative_to(folder).as_posix()}", tb.tb_lineno)
        tb = tb.tb_next
    return found or (f"templates/{name}", _template_line(exc, filename))


def render(env, name: str, **data) -> str:
    import jinja2

    try:
        template = env.get_template(name)
    except UnsafeTemplate as exc:
        raise LessonError(f"template `{name}`: {exc}", path=f"templates/{name}", hint=UNSAFE_HINT) from None
    except jinja2.TemplateNotFound:
        raise LessonError(f"no template `{name}`", path="templates", hint="add templates/" + name) from None
    except jinja2.TemplateSyntaxError as exc:
        raise LessonError(
            f"template `{name}`: TemplateSyntaxError: {exc.message}",
            path=f"templates/{name}",
            line=exc.lineno,
            hint="check the template's Jinja syntax",
        ) from None
    traced = sys.gettrace()  # a debugger's or coverage's trace is left alone (no CPU bound then)
    try:
        if traced is None:
            sys.settrace(_Budget(env).call)
        out, size = [], 0
        for chunk in template.generate(**data):
            size += len(chunk)
            if size > MAX_OUTPUT:
                raise TooLarge(f"renders more than {MAX_OUTPUT} characters")
            out.append(chunk)
        return "".join(out)
    except TooLarge as exc:
        path, line = _project_frame(env, exc, name, template.filename)
        raise LessonError(
            f"template `{name}`: {exc}",
            path=path,
            line=line,
            hint="a generated page is the size of its data: check the template's loops and repetitions",
        ) from None
    except UnsafeTemplate as exc:
        path, line = _project_frame(env, exc, name, template.filename)
        raise LessonError(f"template `{name}`: {exc}", path=path, line=line, hint=UNSAFE_HINT) from None
    except RecursionError as exc:
        path, line = _project_frame(env, exc, name, template.filename)
        raise LessonError(
            f"template `{name}`: the template calls itself without end (a macro, an include or an import)",
            path=path,
            line=line,
            hint="end the recursion: a macro, include or import must not reach itself again",
        ) from None
    except jinja2.exceptions.SecurityError as exc:
        raise LessonError(
            f"template `{name}`: {exc}",
            path=f"templates/{name}",
            line=_template_line(exc, template.filename),
            hint="a template reads plain data only (values, fields, items, filters); it calls no method and "
            "reaches no object of the engine",
        ) from None
    except jinja2.TemplateError as exc:
        raise LessonError(
            f"template `{name}`: {exc.__class__.__name__}: {exc}",
            path=f"templates/{name}",
            line=_template_line(exc, template.filename),
            hint="check the template against the data the engine passes",
        ) from None
    except (ArithmeticError, LookupError, MemoryError, TypeError, ValueError) as exc:  # raised by a filter or method
        path, line = _project_frame(env, exc, name, template.filename)
        raise LessonError(
            f"template `{name}`: {exc.__class__.__name__}: {text.visible(str(exc)[:200])}",
            path=path,
            line=line,
            hint="check the values the template passes to its filters and methods",
        ) from None
    finally:
        if traced is None:
            sys.settrace(None)
