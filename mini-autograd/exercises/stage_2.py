"""练习 2 · 计算图与反向传播（拓扑顺序）。

阶段 1 的答案已经填好，另外按同样的写法补齐了其余运算符和 primitive（加减乘除、乘方、
sin、cos、exp、log、tanh）及它们的局部规则。本阶段要写的三处以
`raise NotImplementedError("练习 2：…")` 标出：

1. `toposort`：从输出节点出发，列出所有节点，每个节点排在它的全部父节点之前；
2. `backward_pass`：按这个顺序逐个处理节点，把 cotangent 推给父节点；
3. `make_vjp`：装箱、运行函数、返回 vjp 与函数值。

本阶段只处理“每个节点只被一个子节点使用”的图：`add_outgrads` 还是临时版本，第二份贡献
到达同一个节点时会报错，阶段 3 再把它补全。检查：

    python -m pytest mini-autograd/exercises/test_stage_2.py

对照第 14 课「阶段 2」，以及 HIPS 的 util.toposort、core.backward_pass、core.make_vjp。
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
    """Return all nodes reachable from end_node, each one before its parents.

    要做的：返回一个 list，包含从 end_node 沿 node.parents 能走到的每个节点，每个只出现一次，
    并且每个节点都排在它所有父节点之前（所以第一个是 end_node，最后一个是根节点）。
    提示：深度优先遍历，一个节点的父节点全部“完成”之后才把它记为完成，最后把完成顺序反转。
    用显式的栈而不是递归，深的图也不会超过递归上限。
    """
    raise NotImplementedError("练习 2：toposort")


def add_outgrads(prev_g, g):
    """Stage 2's stand-in: only the first contribution to a node (stage 3 sums them)."""
    if prev_g is None:
        return g
    raise NotImplementedError("a second contribution reached one node: shared paths are stage 3")


def backward_pass(g, end_node):
    """Push the cotangent g from end_node back to the root; return the root's total.

    要做的：用字典 outgrads 存每个节点收到的 cotangent，开始时只有 {end_node: g}。
    按 toposort(end_node) 的顺序：取出（pop）当前节点的 cotangent；对每一对
    (parent, vjp)（来自 zip(node.parents, node.vjps)），把 vjp(cotangent) 交给
    add_outgrads(outgrads.get(parent), ...)，结果存回 outgrads[parent]。
    循环结束时，最后处理的节点就是根节点：返回它的 cotangent。
    """
    raise NotImplementedError("练习 2：backward_pass")


# -------------------- user API --------------------


def make_vjp(fun, x):
    """Run fun once on a boxed x; return (vjp, value of fun(x)).

    要做的：建根节点 Node.new_root()，把 x 装进 Box(x, 根节点)，调用 fun。
    - 结果不是 Box（输出与 x 无关）：返回 (一个总是给出 0.0 的 vjp, 结果本身)；
    - 否则返回 (vjp, 结果的 value)，其中 vjp(g) = backward_pass(g, 结果的 node)。
    """
    raise NotImplementedError("练习 2：make_vjp")


def grad(fun):
    """d fun / dx for a function of one float returning one float."""

    def gradfun(x):
        vjp, _ = make_vjp(fun, x)
        return vjp(1.0)

    return gradfun
