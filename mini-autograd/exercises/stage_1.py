"""练习 1 · 一个标量 Box 和一个 primitive（乘法）。

目标：让 `Box(3.0, Node.new_root()) * Box(...)` 这样的乘法被记录下来——结果是一个新的 Box，
它的节点记住父节点，并为每个被追踪的参数准备一个局部 VJP closure。

要写的两处都以 `raise NotImplementedError("练习 1：…")` 标出：

1. `Node.__init__`：查局部规则，为每个被追踪的参数做一个 closure；
2. `primitive` 里的 `wrapped`：找 Box 参数、拆箱、计算、建节点、装箱。

其余代码（`Box`、`defvjp`、乘法的规则）已经写好。检查：

    python -m pytest mini-autograd/exercises/test_stage_1.py

对照第 14 课「阶段 1」，以及 HIPS 的 tracer.Box、tracer.primitive、core.VJPNode.__init__。
"""

import operator


class Node:
    """一次被记录的 primitive 调用：父节点，以及每个父节点一个局部 VJP closure。"""

    __slots__ = ("name", "parents", "vjps")

    def __init__(self, fun, ans, args, argnums, parents):
        """fun：包装后的 primitive；ans：这次调用的结果；args：拆箱后的全部参数；
        argnums：原来是 Box 的参数位置；parents：这些位置上的 Box 的节点（同样的顺序）。

        要做的：
        - 在 primitive_vjps 里查 fun 的 maker 元组；查不到时抛出
          NotImplementedError，信息写 f"no VJP registered for {fun.__name__}"；
        - self.name = fun.__name__，self.parents = parents；
        - self.vjps：对 argnums 里的每个位置 i，调用 makers[i](ans, *args)，
          得到一个 closure（g -> 送给那个父节点的贡献），按顺序放进一个 tuple。
        """
        raise NotImplementedError("练习 1：Node.__init__")

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

    def __mul__(self, other): return mul(self, other)
    def __rmul__(self, other): return mul(other, self)


primitive_vjps = {}


def defvjp(fun, *vjpmakers):
    """Register one maker per argument: maker(ans, *args) returns g -> g * d ans/d arg."""
    primitive_vjps[fun] = vjpmakers


def primitive(raw):
    """Wrap a float function so that calls with Box arguments are recorded."""

    def wrapped(*args):
        """要做的：
        - argnums：args 里是 Box 的位置（列表）；一个都没有时直接返回 raw(*args)；
        - values：把 args 里的每个 Box 换成它的 value，其余参数原样保留（tuple）；
        - ans = raw(*values)；
        - parents：argnums 各位置上 Box 的 node；
        - 返回 Box(ans, Node(wrapped, ans, values, argnums, parents))。
          注意传给 Node 的是 wrapped：规则表以包装后的函数为键。
        """
        raise NotImplementedError("练习 1：primitive 的 wrapped")

    wrapped.__name__ = raw.__name__
    wrapped.raw = raw
    return wrapped


mul = primitive(operator.mul)

defvjp(mul, lambda ans, x, y: lambda g: g * y, lambda ans, x, y: lambda g: g * x)
