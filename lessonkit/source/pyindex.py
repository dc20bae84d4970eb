"""Exact symbol ranges in one Python file (1-based, inclusive, decorators included)."""

from __future__ import annotations

import ast
import difflib
import json
import re
import sys
from functools import cached_property

from lessonkit.errors import LessonError
from lessonkit.source import pysyntax
from lessonkit.source.pysyntax import Definition
from lessonkit.util.store import Store, digest
from lessonkit.util.text import line_span
from lessonkit.util.text import lines as text_lines

MISSING_SYMBOL = "missing-symbol"  # LessonError.code: the file has no such symbol or call
WHICH = "which"  # LessonError.code: `Which:` picks none or several of a symbol's definitions
FORMAT = "2"  # bump when the records of pysyntax.Definition change

SELECTOR = re.compile(r"^(?P<func>[A-Za-z_][\w.]*)\((?P<arg>.*)\)$", re.S)


def read_definitions(text: str) -> list[Definition]:
    """Every definition of a Python file (:mod:`lessonkit.source.pysyntax`): with :mod:`ast` where the
    running Python knows the grammar, else with libcst (imported only then)."""
    out = pysyntax.ast_definitions(text)
    if out is None:
        from lessonkit.source import pysyntax_cst

        out = pysyntax_cst.definitions(text)
    return out


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
    def all_definitions(self) -> list[Definition]:
        """Every definition of the file at any depth (see :mod:`lessonkit.source.pysyntax`)."""
        store = self.store
        key = digest("definitions", FORMAT, sys.version, self.rel, self.data)
        if store is not None:
            cached = store.get(key)
            if cached is not None:
                try:
                    return [Definition.from_json(d) for d in json.loads(cached)]
                except (ValueError, TypeError):
                    pass  # a damaged entry: parse again and overwrite it
        try:
            out = read_definitions(self.text)
        except pysyntax.Unparseable as exc:
            where = f"line {exc.line}" if exc.line else str(exc)  # no line: e.g. a NUL byte
            raise LessonError(
                f"{self.rel} is not parseable Python ({where})",
                hint="Symbol works only in Python files (of any Python 3 grammar); quote a body without Symbol",
            ) from None
        if store is not None:
            store.put(key, json.dumps([d.to_json() for d in out]))
        return out

    @cached_property
    def definitions(self) -> list[Definition]:
        """The symbols of the file's index: module-level defs, classes, assignments and calls, and
        the members of module-level classes (deeper ones are found by :meth:`find` all the same)."""
        return [d for d in self.all_definitions if d.listed]

    def find(self, symbol: str, which: str | None = None) -> Definition:
        """The one definition ``symbol`` names: a qualified name at any depth (``Outer.Inner.deep``,
        ``outer.inner``), or a call selector ``f(arg)``. ``which`` picks one of several definitions
        of the name: ``N`` (the N-th, in file order), ``@decorator`` (the one with that decorator),
        or text found in the line of its ``def``/``class``/assignment."""
        m = SELECTOR.match(symbol.strip())
        if m and not which:
            return self._find_call(m["func"], m["arg"])
        hits = [d for d in self.all_definitions if d.name == symbol and d.kind != "call"]
        if not hits:
            close = self.suggest(symbol)
            hint = (
                ("did you mean " + ", ".join(f"`{c}` (L{self._line(c)})" for c in close) + "?")
                if close
                else "Symbol names a def, class, assignment or type alias (dotted for members and nested "
                "definitions: `Outer.Inner.name`, `outer.inner`), or a call selector f(arg)"
            )
            raise LessonError(f"no symbol `{symbol}` in {self.rel}", hint=hint, code=MISSING_SYMBOL)
        if which is not None:
            return self._pick(symbol, hits, which)
        if len(hits) == 1:
            return hits[0]
        raise LessonError(
            f"symbol `{symbol}` is defined {len(hits)} times in {self.rel}",
            hint="candidates: " + self.candidates(hits) + "; pick one with `Which: N` (the N-th), "
            "`Which: @decorator` or `Which: TEXT` (found in the line of its def)",
        )

    def candidates(self, hits: list[Definition]) -> str:
        """The definitions of one name as a message lists them: lines, then what tells them apart."""

        def tells(d: Definition) -> str:
            parts = [f"@{x}" for x in d.decorators[:2]]
            if d.context:
                parts.append(f"under `{d.context}`")
            return f" ({', '.join(parts)})" if parts else ""

        return ", ".join(f"{k}. {line_span(d.start, d.end)}{tells(d)}" for k, d in enumerate(hits, 1))

    def _pick(self, symbol: str, hits: list[Definition], which: str) -> Definition:
        w = which.strip()
        if w.isascii() and w.isdigit() and len(w) <= 6:
            n = int(w)
            if 1 <= n <= len(hits):
                return hits[n - 1]
            raise LessonError(
                f"`Which: {which}` but `{symbol}` is defined {len(hits)} time(s) in {self.rel}",
                hint="candidates: " + self.candidates(hits),
                code=WHICH,
            )
        if w.startswith("@"):
            want = _squeeze(w[1:])
            picked = [d for d in hits if any(_squeeze(x) == want for x in d.decorators)]
            what = f"has the decorator `{w}`"
        else:
            picked = [d for d in hits if w in self.lines[d.line - 1]]
            what = f"has `{w}` in its first line"
        if len(picked) == 1:
            return picked[0]
        raise LessonError(
            f"`Which: {which}`: {'none' if not picked else len(picked)} of the {len(hits)} definition(s) of "
            f"`{symbol}` {what}",
            hint="candidates: " + self.candidates(hits),
            code=WHICH,
        )

    def suggest(self, symbol: str, n: int = 4) -> list[str]:
        """Names close to ``symbol``: whole names first (``backwards_pass`` → ``backward_pass``), then
        dotted members whose own name is it or close to it (``peek`` → ``peekable.peek``)."""
        names = sorted({d.name for d in self.all_definitions if d.kind != "call"})
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
        return next(d.start for d in self.all_definitions if d.name == name)

    def _find_call(self, func: str, arg: str) -> Definition:
        try:
            call = ast.parse(f"{func}({arg})", mode="eval").body
            assert isinstance(call, ast.Call)  # SELECTOR: a name, then one pair of parentheses
            first = call.args[0] if call.args else ast.parse(arg, mode="eval").body
            want = ast.unparse(first)  # a call copied whole from the source: its first argument
        except (SyntaxError, ValueError, RecursionError, MemoryError, AssertionError):
            raise LessonError(
                f"call selector `{func}({arg})` has an unparseable argument",
                hint=f"write it as the call reads in the source: `{func}(first_argument)`",
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
                    hint="a call selector `f(first_argument)` matches a call at module level "
                    "(not inside a def or class)",
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


_SPACES = re.compile(r"\s+")


def _squeeze(text: str) -> str:
    """A decorator as `Which:` compares it: without whitespace."""
    return _SPACES.sub("", text)
