"""Every definition of a Python file, read with a parser that knows every Python grammar.

The pinned code may use syntax newer than the interpreter that runs the build (``type`` aliases and
type parameters of 3.12, the f-strings of 3.12, ``except*`` of 3.11, …). The standard library's
:mod:`ast` only reads the grammar of the Python it ships with, so symbols would depend on the
machine. libcst's native parser reads Python 3.0 through 3.14 whatever runs it; this module turns
its tree into plain :class:`Definition` records, so nothing else sees libcst.

Line numbers are 1-based and inclusive, counted as :func:`lessonkit.util.text.lines` counts them.
A definition starts at its first decorator and ends at the last line of its last statement (a
comment after the body is not part of it), as :mod:`ast`'s ``lineno``/``end_lineno`` say.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

# where a definition stands, besides directly in a module or class body: the statement it is under
CONTEXTS = ("if", "else", "try", "except", "finally", "with", "for", "while", "def")


@dataclass(frozen=True)
class Definition:
    name: str  # qualified: "backward_pass", "VJPNode.__init__", "Outer.Inner.deep", "defvjp(anp.multiply)"
    kind: str  # "def", "class", "assign", "type", "call"
    start: int  # first line, decorators included
    end: int
    # What tells several definitions of one name apart (see `Which:` in the annotation reference):
    line: int = 0  # the line of `def`/`class`/the statement itself (after the decorators)
    decorators: tuple[str, ...] = ()  # each decorator's expression, as written, without `@`
    context: str = ""  # "" directly in a module or class body, else the enclosing statement (CONTEXTS)
    # The docstring of a def or class: its lines, or None; `doc_shared`: it shares a line with code.
    doc: tuple[int, int] | None = None
    doc_shared: bool = False
    listed: bool = True  # in the symbol index: module level, class members, module-level calls

    def to_json(self) -> list:
        return [
            self.name,
            self.kind,
            self.start,
            self.end,
            self.line,
            list(self.decorators),
            self.context,
            list(self.doc) if self.doc else None,
            self.doc_shared,
            self.listed,
        ]

    @classmethod
    def from_json(cls, row: list) -> "Definition":
        name, kind, start, end, line, decorators, context, doc, doc_shared, listed = row
        return cls(
            str(name),
            str(kind),
            int(start),
            int(end),
            int(line),
            tuple(str(d) for d in decorators),
            str(context),
            (int(doc[0]), int(doc[1])) if doc else None,
            bool(doc_shared),
            bool(listed),
        )


class Unparseable(Exception):
    """The text is not Python of any grammar libcst knows; ``line`` where it stopped (0: unknown)."""

    def __init__(self, message: str, line: int = 0):
        super().__init__(message)
        self.line = line


def ast_definitions(text: str) -> list[Definition] | None:
    """Every def, class, assignment and ``type`` alias of the file at any depth, and the calls made
    at module level, in the order they start (a class before its members), read with :mod:`ast`;
    None when the running Python does not know the file's grammar (then
    :func:`lessonkit.source.pysyntax_cst.definitions` reads it, with the same records for any file
    both can read: a test holds them equal)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    walk = _AstWalk(text)
    walk.body(tree.body, prefix="", scope="module", context="", listed=True)
    return walk.out


_SPACE = re.compile(r"\s+")


def normal(code: str) -> str:
    """An expression as the call selector compares it: as :func:`ast.unparse` writes it where the
    running Python can parse it (a generator expression, the only argument of a call, is read in
    parentheses), else with its whitespace collapsed."""
    for text in (code.strip(), f"({code.strip()})"):
        try:
            return ast.unparse(ast.parse(text, mode="eval").body)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    return squeeze(code)


def squeeze(code: str) -> str:
    """Source text with every run of whitespace one space (a decorator as the records keep it)."""
    return _SPACE.sub(" ", code.strip())


class _AstWalk:
    """:class:`_Walk` over :mod:`ast`'s tree: the same records, for the grammar the running Python knows."""

    def __init__(self, text: str):
        self.text = text
        self.lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")  # as ast counts them
        self.out: list[Definition] = []

    def body(self, statements, prefix: str, scope: str, context: str, listed: bool) -> None:
        for stmt in statements:
            self.statement(stmt, prefix, scope, context, listed)

    def statement(self, stmt, prefix: str, scope: str, context: str, listed: bool) -> None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.definition(stmt, prefix, scope, context, listed)
        elif isinstance(stmt, ast.If):
            self.body(stmt.body, prefix, scope, "if", False)
            other = stmt.orelse
            while other:
                if (
                    len(other) == 1
                    and isinstance(other[0], ast.If)
                    and self.lines[other[0].lineno - 1].lstrip().startswith("elif")
                ):
                    self.body(other[0].body, prefix, scope, "if", False)
                    other = other[0].orelse
                else:
                    self.body(other, prefix, scope, "else", False)
                    other = []
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            self.body(stmt.body, prefix, scope, "try", False)
            for handler in stmt.handlers:
                self.body(handler.body, prefix, scope, "except", False)
            self.body(stmt.orelse, prefix, scope, "else", False)
            self.body(stmt.finalbody, prefix, scope, "finally", False)
        elif isinstance(stmt, (ast.With, ast.AsyncWith, ast.For, ast.AsyncFor, ast.While)):
            word = "with" if isinstance(stmt, (ast.With, ast.AsyncWith)) else "while"
            if isinstance(stmt, (ast.For, ast.AsyncFor)):
                word = "for"
            self.body(stmt.body, prefix, scope, word, False)
            self.body(getattr(stmt, "orelse", []), prefix, scope, "else", False)
        else:
            self.small(stmt, prefix, scope, context, listed)

    def small(self, stmt, prefix: str, scope: str, context: str, listed: bool) -> None:
        if scope == "def":
            return
        start, end = stmt.lineno, stmt.end_lineno or stmt.lineno
        if isinstance(stmt, ast.Assign):
            names = [n for t in stmt.targets for n in _ast_names(t)]
        elif isinstance(stmt, ast.AnnAssign):
            names = _ast_names(stmt.target)
        elif type(stmt).__name__ == "TypeAlias":
            name = getattr(stmt, "name", None)
            if isinstance(name, ast.Name):
                self.out.append(
                    Definition(prefix + name.id, "type", start, end, start, (), context, None, False, listed)
                )
            return
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and scope == "module" and not context:
            call = stmt.value
            if call.args:
                name = f"{ast.unparse(call.func)}({ast.unparse(call.args[0])})"
                self.out.append(Definition(name, "call", start, end, start, (), "", None, False, True))
            return
        else:
            return
        for n in names:
            self.out.append(Definition(prefix + n, "assign", start, end, start, (), context, None, False, listed))

    def definition(self, node, prefix: str, scope: str, context: str, listed: bool) -> None:
        decorators = tuple(squeeze(ast.get_source_segment(self.text, d) or ast.unparse(d)) for d in node.decorator_list)
        start = min([d.lineno for d in node.decorator_list] + [node.lineno])
        kind = "class" if isinstance(node, ast.ClassDef) else "def"
        doc, shared = self.docstring(node)
        name = prefix + node.name
        end = node.end_lineno or node.lineno
        self.out.append(Definition(name, kind, start, end, node.lineno, decorators, context, doc, shared, listed))
        members_listed = listed and kind == "class" and scope == "module" and not context
        self.body(node.body, name + ".", "class" if kind == "class" else "def", "", members_listed)

    def docstring(self, node) -> tuple[tuple[int, int] | None, bool]:
        first = node.body[0]
        if not (
            isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)
        ):
            return None, False
        end = first.end_lineno or first.lineno
        after = node.body[1].lineno if len(node.body) > 1 else None
        line = self.lines[first.lineno - 1]
        before = line.encode()[: first.col_offset].decode("utf-8", "replace")  # col_offset counts bytes
        return (first.lineno, end), bool(before.strip()) or after == end


def _ast_names(target) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple):
        return [e.id for e in target.elts if isinstance(e, ast.Name)]
    return []
