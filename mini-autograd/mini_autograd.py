"""Mini autograd: a tiny scalar reverse-mode AD engine (standard library only).

A teaching companion to HIPS/autograd: the names follow HIPS so the two read
side by side, but the code is an independent and much smaller implementation.
Scope: Python floats only; no arrays, no broadcasting, no nested tracing (so no
higher-order derivatives) and no forward mode.
"""

import math
import operator

# -------------------- graph objects --------------------


class Node:
    """One recorded primitive call: the parent nodes and one local VJP per parent."""

    __slots__ = ("name", "parents", "vjps")

    def __init__(self, name, parents, vjps):
        self.name = name        # primitive name, only for printing
        self.parents = parents  # tuple of Node, one per boxed argument
        self.vjps = vjps        # tuple of closures g -> contribution to that parent

    @classmethod
    def new_root(cls):
        return cls("input", (), ())


class Box:
    """A float being traced: its value plus the node that produced it."""

    __slots__ = ("value", "node")

    def __init__(self, value, node):
        self.value = value
        self.node = node

    def __repr__(self):
        return f"Box({self.value!r}, node={self.node.name})"

    def __neg__(self): return neg(self)
    def __add__(self, other): return add(self, other)
    def __radd__(self, other): return add(other, self)
    def __sub__(self, other): return sub(self, other)
    def __rsub__(self, other): return sub(other, self)
    def __mul__(self, other): return mul(self, other)
    def __rmul__(self, other): return mul(other, self)
    def __truediv__(self, other): return div(self, other)
    def __rtruediv__(self, other): return div(other, self)
    def __pow__(self, other): return power(self, other)
    def __rpow__(self, other): return power(other, self)


# -------------------- primitives and their local VJPs --------------------

primitive_vjps = {}


def defvjp(fun, *vjpmakers):
    """Register one maker per argument: maker(ans, *args) returns g -> g * d ans/d arg."""
    primitive_vjps[fun] = vjpmakers


def primitive(raw):
    """Wrap a float function so that calls with Box arguments are recorded."""

    def wrapped(*args):
        argnums = [i for i, a in enumerate(args) if isinstance(a, Box)]
        if not argnums:
            return raw(*args)
        values = tuple(a.value if isinstance(a, Box) else a for a in args)
        ans = raw(*values)
        makers = primitive_vjps.get(wrapped)
        if makers is None:
            raise NotImplementedError(f"no VJP registered for {raw.__name__}")
        parents = tuple(args[i].node for i in argnums)
        vjps = tuple(makers[i](ans, *values) for i in argnums)
        return Box(ans, Node(raw.__name__, parents, vjps))

    wrapped.__name__ = raw.__name__
    wrapped.raw = raw
    return wrapped


add = primitive(operator.add)
sub = primitive(operator.sub)
mul = primitive(operator.mul)
div = primitive(operator.truediv)
neg = primitive(operator.neg)
power = primitive(operator.pow)
sin, cos, exp, log, tanh = map(primitive, (math.sin, math.cos, math.exp, math.log, math.tanh))

defvjp(add, lambda ans, x, y: lambda g: g, lambda ans, x, y: lambda g: g)
defvjp(sub, lambda ans, x, y: lambda g: g, lambda ans, x, y: lambda g: -g)
defvjp(mul, lambda ans, x, y: lambda g: g * y, lambda ans, x, y: lambda g: g * x)
defvjp(div, lambda ans, x, y: lambda g: g / y, lambda ans, x, y: lambda g: -g * x / (y * y))
defvjp(neg, lambda ans, x: lambda g: -g)
defvjp(power,
       lambda ans, x, y: lambda g: g * y * x ** (y - 1),
       lambda ans, x, y: lambda g: g * ans * math.log(x))
defvjp(sin, lambda ans, x: lambda g: g * math.cos(x))
defvjp(cos, lambda ans, x: lambda g: -g * math.sin(x))
defvjp(exp, lambda ans, x: lambda g: g * ans)
defvjp(log, lambda ans, x: lambda g: g / x)
defvjp(tanh, lambda ans, x: lambda g: g * (1.0 - ans * ans))

# -------------------- reverse pass --------------------


def toposort(end_node):
    """Return all nodes reachable from end_node, each one before its parents."""
    finished, seen = [], set()
    stack = [(end_node, False)]
    while stack:
        node, parents_done = stack.pop()
        if parents_done:
            finished.append(node)          # all parents already finished
        elif node not in seen:
            seen.add(node)
            stack.append((node, True))
            stack.extend((p, False) for p in node.parents)
    return finished[::-1]


def add_outgrads(prev_g, g):
    """Sum the cotangents reaching one node; None means nothing arrived yet."""
    return g if prev_g is None else prev_g + g


def backward_pass(g, end_node):
    """Push the cotangent g from end_node back to the root; return the root's total."""
    outgrads = {end_node: g}
    for node in toposort(end_node):
        outgrad = outgrads.pop(node)      # complete: every child was handled earlier
        for parent, vjp in zip(node.parents, node.vjps):
            outgrads[parent] = add_outgrads(outgrads.get(parent), vjp(outgrad))
    return outgrad                        # the last node in the order is the root


# -------------------- user API --------------------


_tracing = False  # one trace at a time; HIPS instead stacks levels in TraceStack


def make_vjp(fun, x):
    """Run fun once on a boxed x; return (vjp, value of fun(x))."""
    global _tracing
    if _tracing:
        raise NotImplementedError("nested tracing (e.g. grad of grad) is out of scope")
    start_node = Node.new_root()
    _tracing = True
    try:
        end = fun(Box(x, start_node))
    finally:
        _tracing = False
    if not isinstance(end, Box):          # the output never touched x
        return (lambda g: 0.0), end
    return (lambda g: backward_pass(g, end.node)), end.value


def grad(fun):
    """d fun / dx for a function of one float returning one float."""

    def gradfun(x):
        vjp, _ = make_vjp(fun, x)
        return vjp(1.0)

    return gradfun
