"""练习 3 · 共享路径上的累加。

阶段 2 的答案已经填好（toposort、backward_pass、make_vjp）。现在让同一个值被用到不止一次：
`x * x` 的乘法节点两个参数槽都来自 x，`sin(x) * exp(x)` 里 x 有两个子节点。每条边都要把
自己的贡献送回去，它们在父节点上相加。本阶段要写的一处以
`raise NotImplementedError("练习 3：…")` 标出：

1. `add_outgrads`：第二份（以及之后每一份）贡献到达同一个节点时，把它加到已有的总和上。

检查：

    python -m pytest mini-autograd/exercises/test_stage_3.py

对照第 14 课「阶段 3」，以及 HIPS 的 core.add_outgrads。
"""

import math
import operator

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
        parents = tuple(args[i].node for i in argnums)
        return Box(ans, Node(wrapped, ans, values, argnums, parents))

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
defvjp(add, lambda ans, x, y: lambda g: g, lambda ans, x, y: lambda g: g)
defvjp(sub, lambda ans, x, y: lambda g: g, lambda ans, x, y: lambda g: -g)
defvjp(mul, lambda ans, x, y: lambda g: g * y, lambda ans, x, y: lambda g: g * x)
defvjp(div, lambda ans, x, y: lambda g: g / y, lambda ans, x, y: lambda g: -g * x / (y * y))
defvjp(neg, lambda ans, x: lambda g: -g)
defvjp(power,
       lambda ans, x, y: lambda g: g * y * x ** (y - 1),
       lambda ans, x, y: lambda g: g * ans * log(x))
defvjp(sin, lambda ans, x: lambda g: g * cos(x))
defvjp(cos, lambda ans, x: lambda g: -g * sin(x))
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
    """Sum the cotangents reaching one node; None means nothing arrived yet.

    要做的：prev_g 是这个节点此前收到的总和（还没有任何贡献时是 None），g 是新到的一份。
    返回加上 g 之后的总和。第一份贡献的情形已经写好（阶段 2 的临时版本也是这样做的）。
    """
    if prev_g is None:
        return g
    raise NotImplementedError("练习 3：add_outgrads 的第二份贡献")


def backward_pass(g, end_node):
    """Push the cotangent g from end_node back to the root; return the root's total."""
    outgrads = {end_node: g}
    for node in toposort(end_node):
        outgrad = outgrads.pop(node)      # complete: every child was handled earlier
        for parent, vjp in zip(node.parents, node.vjps):
            outgrads[parent] = add_outgrads(outgrads.get(parent), vjp(outgrad))
    return outgrad                        # the last node in the order is the root


# -------------------- user API --------------------


def make_vjp(fun, x):
    """Run fun once on a boxed x; return (vjp, value of fun(x))."""
    start_node = Node.new_root()
    end = fun(Box(x, start_node))
    if not isinstance(end, Box):          # the output never touched x
        return (lambda g: 0.0), end
    return (lambda g: backward_pass(g, end.node)), end.value


def grad(fun):
    """d fun / dx for a function of one float returning one float."""

    def gradfun(x):
        vjp, _ = make_vjp(fun, x)
        return vjp(1.0)

    return gradfun
