"""Exact symbol ranges in one Python file (1-based, inclusive, decorators included)."""

from __future__ import annotations

import ast
import difflib
import json
import re
import sys
from dataclasses import astuple, dataclass
from functools import cached_property

from lessonkit.errors import LessonError
from lessonkit.util.store import Store, digest
from lessonkit.util.text import line_span, lines as text_lines

MISSING_SYMBOL = "missing-symbol"  # LessonError.code: the file has no such symbol or call

SELECTOR = re.compile(r"^(?P<func>[A-Za-z_][\w.]*)\((?P<arg>.*)\)$", re.S)


@dataclass(frozen=True)
class Definition:
    name: str  # qualified: "backward_pass", "VJPNode.__init__", "defvjp(anp.multiply)"
    kind: str  # "def", "class", "assign", "call"
    start: int
    end: int


class SourceFile:
    """One text file, parsed at most once.

    :meth:`of` shares instances by content (a cache listed in :mod:`lessonkit.util.shared`), so a
    file's ``ast`` and symbol table survive MkDocs ``serve`` rebuilds until the bytes change.
    ``store``, when given, keeps symbol tables on disk by content, for the next process.
    """

    _shared: "dict[tuple[str, bytes], SourceFile]" = {}

    @classmethod
    def of(cls, rel: str, data: bytes, store: "Store | None" = None) -> "SourceFile":
        import hashlib

        key = (rel, hashlib.sha256(data).digest())
        sf = cls._shared.get(key)
        if sf is None:
            if len(cls._shared) > 4096:
                cls._shared.clear()
            sf = cls._shared[key] = cls(rel, data, store)
        elif sf.store is None:  # entries are found by content: any project's disk layer will do
            sf.store = store
        return sf

    def __init__(self, rel: str, data: bytes, store: "Store | None" = None):
        self.rel = rel
        self.data = data
        self.store = store
        try:
            self.text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise LessonError(
                f"{rel} is not valid UTF-8 (byte {exc.start})", hint="only text files can be excerpted"
            ) from None
        self.lines = text_lines(self.text)  # as ast counts them (not str.splitlines: \f, \x85, U+2028…)

    @cached_property
    def module(self) -> ast.Module:
        try:
            return ast.parse(self.text, filename=self.rel)
        except SyntaxError as exc:
            where = f"line {exc.lineno}" if exc.lineno else exc.msg  # no line: e.g. a NUL byte
            raise LessonError(
                f"{self.rel} is not parseable Python ({where})",
                hint="Symbol works only in Python files; quote a body without Symbol",
            ) from None
        except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, absurd nesting
            raise LessonError(
                f"{self.rel} is not parseable Python ({str(exc).splitlines()[0][:80]})",
                hint="Symbol works only in Python files; quote a body without Symbol",
            ) from None

    @cached_property
    def definitions(self) -> list[Definition]:
        store = self.store
        if store is None:
            return self._definitions()
        key = digest("definitions", sys.version, self.rel, self.data)
        cached = store.get(key)
        if cached is not None:
            try:
                return [Definition(*d) for d in json.loads(cached)]
            except (ValueError, TypeError):
                pass  # a damaged entry: parse again and overwrite it
        out = self._definitions()
        store.put(key, json.dumps([astuple(d) for d in out]))
        return out

    def _definitions(self) -> list[Definition]:
        out: list[Definition] = []
        for node in self.module.body:
            out += _defs(node, "")
            if isinstance(node, ast.ClassDef):
                for member in node.body:
                    out += _defs(member, node.name + ".")
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and node.value.args:
                call = node.value
                out.append(
                    Definition(
                        f"{ast.unparse(call.func)}({ast.unparse(call.args[0])})", "call", node.lineno, _end(node)
                    )
                )
        return out

    @cached_property
    def top_level(self) -> list[Definition]:
        return [d for d in self.definitions if "." not in d.name.split("(")[0] or d.kind == "call"]

    def find(self, symbol: str) -> Definition:
        m = SELECTOR.match(symbol.strip())
        if m:
            return self._find_call(m["func"], m["arg"])
        hits = [d for d in self.definitions if d.name == symbol and d.kind != "call"]
        if len(hits) == 1:
            return hits[0]
        if not hits:
            close = self.suggest(symbol)
            hint = (
                ("did you mean " + ", ".join(f"`{c}` (L{self._line(c)})" for c in close) + "?")
                if close
                else "Symbol names a module-level def/class/assignment, a dotted member, or a call selector f(arg)"
            )
            raise LessonError(f"no symbol `{symbol}` in {self.rel}", hint=hint, code=MISSING_SYMBOL)
        raise LessonError(
            f"symbol `{symbol}` is defined {len(hits)} times in {self.rel}",
            hint="candidates: "
            + ", ".join(line_span(d.start, d.end) for d in hits)
            + "; quote the lines you mean as a body without Symbol",
        )

    def suggest(self, symbol: str, n: int = 4) -> list[str]:
        """Names close to ``symbol``: whole names first (``backwards_pass`` → ``backward_pass``), then
        dotted members whose own name is it or close to it (``peek`` → ``peekable.peek``)."""
        names = sorted({d.name for d in self.definitions if d.kind != "call"})
        members: dict[str, list[str]] = {}
        for name in names:
            if "." in name:
                members.setdefault(name.rsplit(".", 1)[1], []).append(name)
        own = symbol.rsplit(".", 1)[-1]
        out = difflib.get_close_matches(symbol, names, n=n, cutoff=0.6)
        out += members.get(own, [])
        for close in difflib.get_close_matches(own, list(members), n=n, cutoff=0.75):
            out += members[close]
        return list(dict.fromkeys(c for c in out if c != symbol))[:n]

    def _line(self, name: str) -> int:
        return next(d.start for d in self.definitions if d.name == name)

    def _find_call(self, func: str, arg: str) -> Definition:
        try:
            want = ast.unparse(ast.parse(arg, mode="eval").body)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            raise LessonError(
                f"call selector `{func}({arg})` has an unparseable argument",
                hint="write it as in the source, e.g. defvjp(anp.multiply)",
            ) from None
        calls = [d for d in self.definitions if d.kind == "call" and d.name.split("(", 1)[0] == func]
        hits = [d for d in calls if d.name == f"{func}({want})"]
        if len(hits) == 1:
            return hits[0]
        if not hits:
            if not calls:
                raise LessonError(
                    f"no top-level call of `{func}` in {self.rel}",
                    code=MISSING_SYMBOL,
                    hint="a call selector matches module-level calls such as defvjp(anp.exp)",
                )
            names = [d.name for d in calls]
            close = difflib.get_close_matches(f"{func}({want})", names, n=5, cutoff=0.5) or names[:5]
            raise LessonError(
                f"no top-level call `{func}({want})` in {self.rel}",
                code=MISSING_SYMBOL,
                hint="candidates: " + ", ".join(f"{c} (L{next(d.start for d in calls if d.name == c)})" for c in close),
            )
        raise LessonError(
            f"call selector `{func}({want})` is ambiguous: {len(hits)} calls in {self.rel}",
            hint="candidates: "
            + ", ".join(line_span(d.start, d.end) for d in hits)
            + "; quote the one you mean as a body under a Symbol-less block",
        )


def _defs(node: ast.stmt, prefix: str) -> list[Definition]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        start = min([d.lineno for d in node.decorator_list] + [node.lineno])
        kind = "class" if isinstance(node, ast.ClassDef) else "def"
        return [Definition(prefix + node.name, kind, start, _end(node))]
    targets = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign):
        targets = [node.target]
    names = []
    for t in targets:
        if isinstance(t, ast.Name):
            names.append(t.id)
        elif isinstance(t, ast.Tuple):
            names += [e.id for e in t.elts if isinstance(e, ast.Name)]
    return [Definition(prefix + n, "assign", node.lineno, _end(node)) for n in names]


def _end(node: ast.stmt) -> int:
    """The last line of a parsed statement (``ast.parse`` always sets ``end_lineno``)."""
    return node.end_lineno if node.end_lineno is not None else node.lineno
