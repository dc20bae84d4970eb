"""The libcst reader of :mod:`lessonkit.source.pysyntax`: every Python 3 grammar, whatever Python
runs the build (imported only for a file the running Python cannot read)."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from lessonkit.source.pysyntax import Definition, Unparseable, normal, squeeze


def definitions(text: str) -> list[Definition]:
    """:func:`lessonkit.source.pysyntax.definitions`, read with libcst whatever the running Python."""
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        raise Unparseable(str(exc).splitlines()[0][:100], exc.raw_line) from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise Unparseable(str(exc).splitlines()[0][:80] if str(exc) else type(exc).__name__) from None
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    walk = _Walk(module, wrapper.resolve(PositionProvider))
    walk.body(module.body, prefix="", scope="module", context="", listed=True)
    return walk.out


class _Walk:
    def __init__(self, module: cst.Module, positions):
        self.module = module
        self.pos = positions
        self.out: list[Definition] = []

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def lines(self, node: cst.CSTNode) -> tuple[int, int]:
        r = self.pos[node]
        return r.start.line, r.end.line

    def body(self, statements, prefix: str, scope: str, context: str, listed: bool) -> None:
        """The statements of a module, class or function body (``scope``), or of a block under a
        compound statement (``context``) that stands in one."""
        for stmt in statements:
            self.statement(stmt, prefix, scope, context, listed)

    def statement(self, stmt, prefix: str, scope: str, context: str, listed: bool) -> None:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            self.definition(stmt, prefix, scope, context, listed)
        elif isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                self.small(small, prefix, scope, context, listed)
        elif isinstance(stmt, cst.If):
            self.block(stmt.body, prefix, scope, "if")
            other = stmt.orelse
            while other is not None:
                if isinstance(other, cst.If):  # elif
                    self.block(other.body, prefix, scope, "if")
                    other = other.orelse
                else:
                    self.block(other.body, prefix, scope, "else")
                    other = None
        elif isinstance(stmt, (cst.Try, cst.TryStar)):
            self.block(stmt.body, prefix, scope, "try")
            for handler in stmt.handlers:
                self.block(handler.body, prefix, scope, "except")
            if stmt.orelse is not None:
                self.block(stmt.orelse.body, prefix, scope, "else")
            if stmt.finalbody is not None:
                self.block(stmt.finalbody.body, prefix, scope, "finally")
        elif isinstance(stmt, (cst.With, cst.For, cst.While)):
            word = {cst.With: "with", cst.For: "for", cst.While: "while"}[type(stmt)]
            self.block(stmt.body, prefix, scope, word)
            orelse = getattr(stmt, "orelse", None)
            if orelse is not None:
                self.block(orelse.body, prefix, scope, "else")

    def block(self, suite, prefix: str, scope: str, context: str) -> None:
        if isinstance(suite, cst.SimpleStatementSuite):  # `if x: y = 1` on one line
            for small in suite.body:
                self.small(small, prefix, scope, context, False)
        else:
            self.body(suite.body, prefix, scope, context, False)

    def small(self, small, prefix: str, scope: str, context: str, listed: bool) -> None:
        start, end = self.lines(small)
        if scope == "def":
            return  # a function's local variables are not symbols
        if isinstance(small, cst.Assign):
            names = [n for t in small.targets for n in _names(t.target)]
        elif isinstance(small, cst.AnnAssign):
            names = _names(small.target)
        elif isinstance(small, cst.TypeAlias):
            self.add(prefix + small.name.value, "type", start, end, start, (), context, None, False, listed)
            return
        elif (
            isinstance(small, cst.Expr)
            and isinstance(small.value, cst.Call)
            and scope == "module"
            and not context
            and _positional(small.value)
        ):
            call = small.value
            arg = _positional(call)[0]
            name = f"{normal(self.code(call.func))}({normal(arg.star + self.code(arg.value))})"
            self.add(name, "call", start, end, start, (), "", None, False, True)
            return
        else:
            return
        for n in names:
            self.add(prefix + n, "assign", start, end, start, (), context, None, False, listed)

    def definition(self, node, prefix: str, scope: str, context: str, listed: bool) -> None:
        first, end = self.lines(node)
        decorators = tuple(squeeze(self.code(d.decorator)) for d in node.decorators)
        start = min([self.lines(d)[0] for d in node.decorators] + [first])
        kind = "class" if isinstance(node, cst.ClassDef) else "def"
        doc, shared = self.docstring(node)
        name = prefix + node.name.value
        self.add(name, kind, start, end, first, decorators, context, doc, shared, listed)
        inner = "class" if kind == "class" else "def"
        # members of a module-level class are listed (the symbol index); deeper ones are not
        members_listed = listed and kind == "class" and scope == "module" and not context
        if isinstance(node.body, cst.IndentedBlock):
            self.body(node.body.body, name + ".", inner, "", members_listed)
        else:  # `class A: x = 1` on one line
            for small in node.body.body:
                self.small(small, name + ".", inner, "", members_listed)

    def docstring(self, node) -> tuple[tuple[int, int] | None, bool]:
        body = node.body
        if isinstance(body, cst.SimpleStatementSuite):  # `def f(): "doc"` on one line
            smalls, line_node = body.body, None
        else:
            if not body.body or not isinstance(body.body[0], cst.SimpleStatementLine):
                return None, False
            smalls, line_node = body.body[0].body, body.body[0]
        first = smalls[0] if smalls else None
        if not (isinstance(first, cst.Expr) and _is_text(first.value)):
            return None, False
        a, b = self.lines(first.value)
        shared = line_node is None or len(smalls) > 1
        if not shared and isinstance(body, cst.IndentedBlock) and len(body.body) > 1:
            shared = self.lines(body.body[1])[0] == b
        return (a, b), shared

    def add(self, name, kind, start, end, line, decorators, context, doc, shared, listed) -> None:
        self.out.append(Definition(name, kind, start, end, line, decorators, context, doc, shared, listed))


def _is_text(value) -> bool:
    """A string literal that Python takes as a docstring: not bytes, not an f-string."""
    if isinstance(value, cst.SimpleString):
        return "b" not in value.prefix.lower()
    if isinstance(value, cst.ConcatenatedString):
        return _is_text(value.left) and _is_text(value.right)
    return False


def _names(target) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, cst.Tuple):
        return [e.value.value for e in target.elements if isinstance(e.value, cst.Name)]
    return []


def _positional(call: cst.Call) -> list:
    """The positional arguments of a call (``*rest`` included, as :mod:`ast` counts them)."""
    return [a for a in call.args if a.keyword is None and a.star != "**"]
