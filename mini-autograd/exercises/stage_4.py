"""练习 4 · 用 trace 编号支持嵌套（grad 套 grad）。

阶段 3 的答案已经填好。阶段 3 的引擎把所有 Box 一视同仁：`grad(lambda x: grad(lambda y: x * y)(1.0))(2.0)`
里，内层的 x * y 同时拿到外层的 x 和内层的 y，把它们连进同一张图，结果是 0.0 而不是 1。
本阶段给每个 Box 一个 trace 编号（Box 的第三个字段，默认 0），每次开始追踪领取一个编号，
一次 primitive 调用只处理编号最大的那些 Box。要写的四处以
`raise NotImplementedError("练习 4：…")` 标出：

1. `find_top_boxes`：挑出 trace 编号最大（最近开始的那一层）的 Box；
2. `primitive` 里的 `wrapped`：只拆这一层，其余的交给递归调用；
3. `TraceStack.new_trace`：领取和归还编号；
4. `trace`：在新编号下装箱、运行函数、判断输出是否属于这一层。

`make_vjp` 已经改成调用 `trace`。检查：

    python -m pytest mini-autograd/exercises/test_stage_4.py

对照第 14 课「阶段 4」和第 10 课，以及 HIPS 的 tracer.find_top_boxed_args、tracer.primitive、
tracer.TraceStack、tracer.trace。
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
    """The positions of the Box arguments of the highest trace (the latest started one), and that trace.

    要做的：返回 (positions, top)。top 是 args 中所有 Box 的 trace 的最大值（没有 Box 时是 -1，
    和 HIPS 的 find_top_boxed_args 一样），positions 是 trace 等于 top 的那些 Box 的位置（列表，
    从小到大）。trace 更小的 Box 不算在内：在这一层眼里它们和常数一样。
    """
    raise NotImplementedError("练习 4：find_top_boxes")


def primitive(raw):
    """Wrap a float function so that calls with Box arguments are recorded."""

    def wrapped(*args):
        """要做的：在阶段 1 的 wrapped 上改三处。
        - argnums, trace = find_top_boxes(args)：只认 trace 编号最大的 Box；
        - values：只把 argnums 位置上的 Box 换成 value；其余参数（包括 trace 更小的 Box）原样保留；
        - ans = wrapped(*values)，而不是 raw(*values)：values 里剩下的 Box 由这次递归调用
          记录到它们自己的 trace 上；
        - 返回 Box(ans, Node(wrapped, ans, values, argnums, parents), trace)。
        阶段 1 的写法是：
            argnums = [i for i, a in enumerate(args) if isinstance(a, Box)]
            if not argnums:
                return raw(*args)
            values = tuple(a.value if isinstance(a, Box) else a for a in args)
            ans = raw(*values)
            parents = tuple(args[i].node for i in argnums)
            return Box(ans, Node(wrapped, ans, values, argnums, parents))
        """
        raise NotImplementedError("练习 4：primitive 的 wrapped")

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
        """要做的：进入时 self.top 加一，并把新的 self.top 交给 with 语句（yield）；
        离开时减一——fun 里抛出异常也要减回去（try/finally）。"""
        raise NotImplementedError("练习 4：TraceStack.new_trace")


trace_stack = TraceStack()


def trace(start_node, fun, x):
    """Run fun on x boxed in a new trace; return (its output's value, its node or None).

    要做的：在 `with trace_stack.new_trace() as t:` 里把 x 装进 Box(x, start_node, t)，调用 fun。
    结果是 Box 且它的 trace 等于 t：返回 (结果的 value, 结果的 node)；
    否则（结果不是 Box，或者是别的 trace 的 Box）：返回 (结果本身, None)。
    """
    raise NotImplementedError("练习 4：trace")


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
