"""14 · The order in which backward_pass pops nodes: HIPS util.toposort against Mini's.

For f(x) = sin(x)*exp(x) + x**2 both engines visit every node once, each before its
parents, but in different orders. Nodes are labelled by the primitive that made them
(read from the VJP closure's owner for HIPS, from the recorded name for Mini).
"""

import sys
from pathlib import Path

import autograd.numpy as anp
import autograd.core as core

import _provenance
from _provenance import announce


def mini_dir():
    """mini-autograd/ sits next to experiments/; the build may run a copy of this
    script elsewhere, so also look next to the folder of _provenance.py."""
    for base in (Path(__file__), Path(_provenance.__file__)):
        candidate = base.resolve().parent.parent / "mini-autograd"
        if (candidate / "mini_autograd.py").is_file():
            return candidate
    sys.exit("mini-autograd/ not found next to experiments/")


sys.path.insert(0, str(mini_dir()))
import mini_autograd as mini  # noqa: E402


# HIPS and Mini name the same primitives differently; print both in Mini's words
SAME = {"multiply": "mul", "power": "pow", "add": "add", "sin": "sin", "exp": "exp", "root": "input"}


def hips_order(x):
    names, order = {}, []
    real_init, real_topo = core.VJPNode.__init__, core.toposort

    def init(self, value, fun, args, kwargs, argnums, parents):
        names[id(self)] = getattr(fun, "__name__", str(fun))
        real_init(self, value, fun, args, kwargs, argnums, parents)

    def topo(end_node):
        for node in real_topo(end_node):
            order.append(SAME.get(names.get(id(node), "root")))
            yield node

    core.VJPNode.__init__, core.toposort = init, topo
    try:
        from autograd import grad
        g = grad(lambda t: anp.sin(t) * anp.exp(t) + t ** 2)(x)
    finally:
        core.VJPNode.__init__, core.toposort = real_init, real_topo
    return g, order


def mini_order(x):
    order = []
    real_topo = mini.toposort

    def topo(end_node):
        nodes = real_topo(end_node)
        order.extend(n.name for n in nodes)
        return nodes

    mini.toposort = topo
    try:
        g = mini.grad(lambda t: mini.sin(t) * mini.exp(t) + t ** 2)(x)
    finally:
        mini.toposort = real_topo
    return g, order


def main():
    announce()
    x = 0.5
    g_hips, hips = hips_order(x)
    g_mini, ours = mini_order(x)
    print("HIPS pop order:", " -> ".join(hips))
    print("Mini pop order:", " -> ".join(ours))
    assert abs(g_hips - g_mini) < 1e-12
    assert sorted(hips) == sorted(ours) and len(hips) == 6
    assert hips[0] == ours[0] == "add" and hips[-1] == ours[-1] == "input"
    assert hips == ["add", "pow", "mul", "exp", "sin", "input"]
    assert ours == ["add", "mul", "sin", "exp", "pow", "input"]


if __name__ == "__main__":
    main()
