"""Mini autograd: a tiny scalar automatic differentiation engine (standard library only).

A teaching companion to HIPS/autograd: the names follow HIPS so the two read
side by side, but the code is an independent and much smaller implementation.
Lesson 14 builds it in six stages (mini-autograd/exercises/): a Box and one
primitive; the graph and the backward pass; sums over shared paths; trace
levels, so that grad of grad works; forward mode; vectors.
Scope: Python floats, and in reverse mode Vec, a one-dimensional vector of floats
(a Python list) with arithmetic, broadcasting against floats and length-1 vectors,
and vsum; no NumPy, no higher dimensions.
"""

import math
import operator
from contextlib import contextmanager

# -------------------- graph objects --------------------


class Node:
    """Reverse mode: one recorded primitive call, its parent nodes and one local VJP per parent."""

    __slots__ = ("name", "parents", "vjps")

    def __init__(self, fun, ans, args, argnums, parents):
        makers = primitive_vjps.get(fun)
        if makers is None:
            raise NotImplementedError(f"no VJP registered for {fun.__name__}")
        self.name = fun.__name__  # only for printing
        self.parents = parents    # tuple of nodes, one per boxed argument
        self.vjps = tuple(makers[i](ans, *args) for i in argnums)  # g -> contribution to that parent

    @classmethod
    def new_root(cls):
        root = cls.__new__(cls)
        root.name, root.parents, root.vjps = "input", (), ()
        return root


class Box:
    """A float being traced: its value, the node that produced it and the number of its trace."""

    __slots__ = ("value", "node", "trace")

    def __init__(self, value, node, trace=0):
        self.value = value
        self.node = node
        self.trace = trace

    def __repr__(self):
        return f"Box({self.value!r}, node={self.node.name}, trace={self.trace})"

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


def find_top_boxes(args):
    """The positions of the Box arguments of the highest trace (the latest started one), and that trace."""
    top = max((a.trace for a in args if isinstance(a, Box)), default=-1)
    return [i for i, a in enumerate(args) if isinstance(a, Box) and a.trace == top], top


def primitive(raw):
    """Wrap a float function so that calls with Box arguments are recorded."""

    def wrapped(*args):
        argnums, trace = find_top_boxes(args)
        if not argnums:
            return raw(*args)
        values = tuple(a.value if i in argnums else a for i, a in enumerate(args))
        ans = wrapped(*values)  # boxes of earlier traces are still in values: recorded on their trace
        parents = tuple(args[i].node for i in argnums)
        node_type = type(args[argnums[0]].node)  # Node, or JVPNode in forward mode
        return Box(ans, node_type(wrapped, ans, values, argnums, parents), trace)

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

# The rules use Mini's own operations (cos, not math.cos): on boxes of an earlier
# trace they are recorded too, which is what makes grad of grad work.
# The four binary rules sum a broadcast operand's cotangent back to its shape (stage 6);
# for two floats unbroadcast returns g itself.
defvjp(add,
       lambda ans, x, y: lambda g: unbroadcast(g, x),
       lambda ans, x, y: lambda g: unbroadcast(g, y))
defvjp(sub,
       lambda ans, x, y: lambda g: unbroadcast(g, x),
       lambda ans, x, y: lambda g: unbroadcast(-g, y))
defvjp(mul,
       lambda ans, x, y: lambda g: unbroadcast(g * y, x),
       lambda ans, x, y: lambda g: unbroadcast(g * x, y))
defvjp(div,
       lambda ans, x, y: lambda g: unbroadcast(g / y, x),
       lambda ans, x, y: lambda g: unbroadcast(-g * x / (y * y), y))
defvjp(neg, lambda ans, x: lambda g: -g)
defvjp(power,
       lambda ans, x, y: lambda g: g * y * x ** (y - 1),
       lambda ans, x, y: lambda g: g * ans * log(x))
defvjp(sin, lambda ans, x: lambda g: g * cos(x))
defvjp(cos, lambda ans, x: lambda g: -g * sin(x))
defvjp(exp, lambda ans, x: lambda g: g * ans)
defvjp(log, lambda ans, x: lambda g: g / x)
defvjp(tanh, lambda ans, x: lambda g: g * (1.0 - ans * ans))

# -------------------- vectors (stage 6) --------------------


class Vec:
    """A one-dimensional vector of floats. Arithmetic is elementwise; a float, or a Vec of
    length 1, is broadcast against a longer Vec (as NumPy spreads a size-1 axis)."""

    __slots__ = ("data",)

    def __init__(self, data):
        self.data = [float(v) for v in data]

    def __repr__(self):
        return f"Vec({self.data!r})"

    def __len__(self):
        return len(self.data)

    def _zip(self, other, op, swap=False):
        if isinstance(other, (int, float)):
            other = Vec([other])
        if not isinstance(other, Vec):
            return NotImplemented          # a Box: let its operator record the call
        a, b = (other, self) if swap else (self, other)
        n = max(len(a), len(b))
        if len(a) not in (1, n) or len(b) not in (1, n):
            raise ValueError(f"cannot broadcast lengths {len(a)} and {len(b)}")
        return Vec(op(a.data[i if len(a) > 1 else 0], b.data[i if len(b) > 1 else 0]) for i in range(n))

    def __add__(self, other): return self._zip(other, operator.add)
    def __radd__(self, other): return self._zip(other, operator.add, swap=True)
    def __sub__(self, other): return self._zip(other, operator.sub)
    def __rsub__(self, other): return self._zip(other, operator.sub, swap=True)
    def __mul__(self, other): return self._zip(other, operator.mul)
    def __rmul__(self, other): return self._zip(other, operator.mul, swap=True)
    def __truediv__(self, other): return self._zip(other, operator.truediv)
    def __rtruediv__(self, other): return self._zip(other, operator.truediv, swap=True)
    def __neg__(self): return Vec(-v for v in self.data)


def shape(value):
    """() for a float, (n,) for a Vec of length n; a Box has the shape of its value."""
    while isinstance(value, Box):
        value = value.value
    return (len(value),) if isinstance(value, Vec) else ()


@primitive
def vsum(x):
    """The sum of a Vec's elements (a float is its own sum)."""
    return math.fsum(x.data) if isinstance(x, Vec) else x


defvjp(vsum, lambda ans, x: lambda g: g * Vec([1.0] * shape(x)[0]) if shape(x) else g)


class FloatSpace:
    """The vector space of floats: floats are immutable, so mut_add is add."""

    def zeros(self):
        return 0.0

    def add(self, x, y):
        return x + y

    def mut_add(self, x, y):
        return x + y


class VecSpace:
    """The vector space of Vecs of one length."""

    def __init__(self, n):
        self.n = n

    def zeros(self):
        return Vec([0.0] * self.n)

    def add(self, x, y):
        return x + y                          # a new Vec: neither argument changes

    def mut_add(self, x, y):
        """Add y into x in place and return x (x must be a Vec no one else holds)."""
        if isinstance(x, Box) or isinstance(y, Box):
            return x + y                      # boxes are immutable: record an ordinary add
        for i, v in enumerate(y.data):
            x.data[i] += v
        return x


def vspace(value):
    """The vector space a value (or a Box's value) lives in."""
    n = shape(value)
    return VecSpace(n[0]) if n else FloatSpace()


def unbroadcast(g, target):
    """Sum the cotangent g back to the shape of target, undoing the forward broadcast."""
    if shape(g) == shape(target):
        return g
    if shape(target) == ():
        return vsum(g)                        # a float was spread over every element
    return vsum(g) * Vec([1.0])               # a length-1 Vec was spread over every element


def accumulate(prev, g):
    """HIPS's add_outgrads: prev is None or (cotangent, mutable); return the new pair.

    The first contribution is stored as it is, flagged False: the rule that made it may have
    handed the same object to another parent too. The first sum is a new object, flagged True;
    later contributions are added into it in place."""
    if prev is None:
        return add_outgrads(None, g), False
    prev_g, mutable = prev
    if mutable:
        return vspace(g).mut_add(prev_g, g), True
    return add_outgrads(prev_g, g), True


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
    """Push the cotangent g from end_node back to the root; return the root's total.

    Each entry of outgrads is (cotangent, mutable), as in HIPS (stage 6): see accumulate."""
    outgrads = {end_node: (g, False)}
    for node in toposort(end_node):
        outgrad = outgrads.pop(node)      # complete: every child was handled earlier
        for parent, vjp in zip(node.parents, node.vjps):
            outgrads[parent] = accumulate(outgrads.get(parent), vjp(outgrad[0]))
    return outgrad[0]                     # the last node in the order is the root


# -------------------- traces and the user API --------------------


class TraceStack:
    """The number of the trace being started: one more than the innermost trace still running."""

    def __init__(self):
        self.top = -1

    @contextmanager
    def new_trace(self):
        self.top += 1
        try:
            yield self.top
        finally:
            self.top -= 1


trace_stack = TraceStack()


def trace(start_node, fun, x):
    """Run fun on x boxed in a new trace; return (its output's value, its node or None)."""
    with trace_stack.new_trace() as t:
        end = fun(Box(x, start_node, t))
        if isinstance(end, Box) and end.trace == t:
            return end.value, end.node
        return end, None                  # the output does not depend on this trace's input


def make_vjp(fun, x):
    """Run fun once on a boxed x; return (vjp, value of fun(x))."""
    end_value, end_node = trace(Node.new_root(), fun, x)
    if end_node is None:
        return (lambda g: vspace(x).zeros()), end_value
    return (lambda g: backward_pass(g, end_node)), end_value


def grad(fun):
    """d fun / dx for a function of one float returning one float."""

    def gradfun(x):
        vjp, _ = make_vjp(fun, x)
        return vjp(1.0)

    return gradfun


# -------------------- forward mode --------------------


class JVPNode:
    """Forward mode: no parents and no closures; the tangent of the value, computed at once."""

    __slots__ = ("name", "g")

    def __init__(self, fun, ans, args, argnums, parents):
        makers = primitive_vjps.get(fun)
        if makers is None:
            raise NotImplementedError(f"no VJP registered for {fun.__name__}")
        self.name = fun.__name__
        self.g = None
        for i, parent in zip(argnums, parents):
            # a scalar's local derivative is one number, so the VJP rule also pushes a tangent forward
            self.g = add_outgrads(self.g, makers[i](ans, *args)(parent.g))

    @classmethod
    def new_root(cls, g):
        root = cls.__new__(cls)
        root.name, root.g = "input", g
        return root


def make_jvp(fun, x):
    """Return jvp(g): run fun on x moving with tangent g; give (fun(x), tangent of fun(x))."""

    def jvp(g):
        end_value, end_node = trace(JVPNode.new_root(g), fun, x)
        if end_node is None:
            return end_value, 0.0
        return end_value, end_node.g

    return jvp


def deriv(fun):
    """d fun / dx by forward mode: one run with tangent 1."""

    def derivfun(x):
        return make_jvp(fun, x)(1.0)[1]

    return derivfun
