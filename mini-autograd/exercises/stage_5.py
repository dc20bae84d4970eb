"""练习 5（选做）· 前向模式（forward mode）。

阶段 4 的答案已经填好。前向模式不建需要反向遍历的图：每个节点在创建的那一刻就算出自己的
tangent（值沿输入方向的变化率），输出节点的 tangent 就是方向导数。`primitive` 已经改成按
Box 的节点类型建节点（`Node` 或 `JVPNode`），和 HIPS 的 node_constructor 一样。本阶段要写的
两处以 `raise NotImplementedError("练习 5：…")` 标出：

1. `JVPNode.__init__`：由父节点的 tangent 立即算出本节点的 tangent；
2. `make_jvp` 里的 `jvp`：以 tangent g 开始一次追踪，返回值与输出的 tangent。

检查：

    python -m pytest mini-autograd/exercises/test_stage_5.py

对照第 14 课「阶段 5」和第 08 课，以及 HIPS 的 core.JVPNode、core.make_jvp。
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
        return (lambda g: 0.0), end_value
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
        """参数与 Node.__init__ 相同；parents 是父节点（都是 JVPNode），每个都已有 tangent g。

        要做的：像 Node.__init__ 一样查 primitive_vjps（查不到时抛出同样的
        NotImplementedError），设 self.name = fun.__name__；然后立即算出 self.g：
        对每一对 (i, parent)（zip(argnums, parents)），makers[i](ans, *args) 给出一个
        closure，用它作用在 parent.g 上得到这一路的贡献，各路贡献用 add_outgrads 相加
        （从 None 开始）。标量的局部导数只是一个数，所以同一个 closure 既能把 cotangent
        往回送，也能把 tangent 往前推。
        """
        raise NotImplementedError("练习 5：JVPNode.__init__")

    @classmethod
    def new_root(cls, g):
        root = cls.__new__(cls)
        root.name, root.g = "input", g
        return root


def make_jvp(fun, x):
    """Return jvp(g): run fun on x moving with tangent g; give (fun(x), tangent of fun(x)).

    要做的：jvp(g) 用 trace(JVPNode.new_root(g), fun, x) 运行一次 fun。
    输出属于这一层（trace 返回的节点不是 None）：返回 (输出的值, 输出节点的 g)；
    否则返回 (输出本身, 0.0)。没有反向阶段：tangent 在前向时已经算好。
    """

    def jvp(g):
        raise NotImplementedError("练习 5：make_jvp 里的 jvp")

    return jvp


def deriv(fun):
    """d fun / dx by forward mode: one run with tangent 1."""

    def derivfun(x):
        return make_jvp(fun, x)(1.0)[1]

    return derivfun
