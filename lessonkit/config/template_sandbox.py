"""The sandbox the templates of generated pages render in: what a template may read (plain data,
nothing with a method of the engine or a path) and the bounds of one rendering (the characters it
writes, the items it repeats, the powers it takes, the CPU it spends), each a located error of
:func:`lessonkit.config.templates.render`, never run."""

from __future__ import annotations

import re
from functools import cached_property

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


class Budget:
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


def sandbox_class():
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


def printed_size(value, what: str = "a value printed") -> None:
    """Bound what writing ``value`` as text makes (``{{ value }}``, ``|string``, ``|tojson``,
    ``|pprint``): its strings summed through its containers, each reference counted where it
    appears (a list of 64 references to one long string prints it 64 times), before the one long
    call that would write it."""
    size, seen, stack = 0, 0, [value]
    while stack:
        v = stack.pop()
        seen += 1
        if isinstance(v, str):
            size += len(v) + 2
        elif isinstance(v, dict):
            stack += [*v.keys(), *v.values()]
            size += 2 * len(v)
        elif isinstance(v, (list, tuple, set, frozenset)):
            stack += list(v)
            size += 2 * len(v)
        else:
            size += 24
        if size > MAX_OUTPUT or seen > MAX_OUTPUT // 8:
            raise TooLarge(f"{what} longer than {MAX_OUTPUT} characters")


def bounded_concat(parts) -> str:
    """``environment.concat``: what a block of ``{% set %}`` or a macro renders, joined within bounds."""
    return "".join(_bounded_parts(parts, "a `{% set %}` block or a macro's output: a value"))


def bounded_template_class():
    """Jinja's template class whose compiled code joins values through bounded functions: ``~``
    (``str_join``/``markup_join``, module globals of the compiled template); the environment's
    ``concat`` (:func:`bounded_concat`) bounds blocks and macros."""
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


# Checks of filters that make long values (see guard_filters).
def _wordwrap(value, w=79, *args, **kwargs):
    text_value = str(value)
    wrap = kwargs.get("wrapstring", args[1] if len(args) > 1 else None)
    step = w if isinstance(w, int) and w > 0 else 1
    lines = len(text_value) // step + len(text_value.split()) + text_value.count("\n") + 1
    _bounded(len(text_value) + lines * len(wrap if isinstance(wrap, str) else "\n"), "`wordwrap`: a value")
    return value


def _replace(value, old="", new="", count=None):
    if isinstance(old, str) and isinstance(new, str):
        _check_str_method(str(value), "replace", (old, new) + (() if count is None else (count,)), {})
    return value


def _printed(name: str):
    def check(value, *args, **kwargs):
        printed_size(value, f"`{name}`: a value")
        return value

    return check


def _grows(name: str, factor: int):  # escaping writes each character as up to `factor` of them
    def check(value, *args, **kwargs):
        printed_size(value, f"`{name}`: a value")
        _bounded(len(value) * factor if isinstance(value, str) else 0, f"`{name}`: a value")
        return value

    return check


def guard_filters(env) -> None:
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

    checks = {
        "string": _printed("string"),
        "tojson": _printed("tojson"),
        "pprint": _printed("pprint"),
        "list": _printed("list"),
        "urlencode": _grows("urlencode", 3),
        "e": _grows("e", 6),
        "escape": _grows("escape", 6),
        "forceescape": _grows("forceescape", 6),
        "center": width,
        "wordwrap": _wordwrap,
        "replace": _replace,
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
