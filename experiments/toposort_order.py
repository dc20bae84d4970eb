"""14 · The graph of sin(x)*exp(x) + x**2 in HIPS and in Mini, and the order backward_pass pops it.

Both engines record the same six nodes with the same edges; both visit every node once, each
before its parents, but in different orders. Nodes are labelled by the primitive that made them
(`x` is the root) and numbered in creation order in both. Each engine's add_outgrads (in Mini
accumulate, its counterpart since stage 6) and toposort are wrapped while its grad runs: the
wrappers record every contribution sent along an edge (the figure's edge labels) and the order.
"""

import math
import sys
from pathlib import Path

import autograd.core as core
import autograd.numpy as anp
from autograd import grad

import _provenance
from _provenance import announce
from _record import record


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

# HIPS and Mini name the same primitives differently; the order is printed in Mini's words
SAME = {"multiply": "mul", "power": "pow", "add": "add", "sin": "sin", "exp": "exp", "x": "input"}


def hips_run(x):
    """grad of the function in HIPS, inside a graph capture: (gradient, pop order, edge contributions)."""
    order, calls = [], []
    real_topo, real_add = core.toposort, core.add_outgrads
    labels = {}

    def topo(end_node):
        for node in real_topo(end_node):
            order.append(labels[node])
            yield node

    def add(prev, g):
        node = sys._getframe(1).f_locals["node"]  # the node backward_pass is handling
        calls.append({"from": labels[node], "ingrad": float(g)})
        return real_add(prev, g)

    with record.capture() as cap:
        core.toposort, core.add_outgrads = topo, add
        try:
            end = {}

            def f(t):
                end["box"] = anp.sin(t) * anp.exp(t) + t ** 2
                for e in cap.nodes:  # every node is made by now: name it by its primitive
                    labels[e["obj"]] = e["fun"] or "x"
                return end["box"]

            g = float(grad(f)(x))
        finally:
            core.toposort, core.add_outgrads = real_topo, real_add
        record.graph("hips.graph", cap, end["box"], labels=labels)
    cap.release()
    return g, order, calls


def mini_graph(order, created, labels):
    """Mini's graph in the shape record.graph gives HIPS's: nodes numbered in creation order (the
    root first: new_root does not run __init__), one edge per argument."""
    end_node = order[0]
    nodes = [order[-1]] + [n for n in created if n in set(order)]
    assert len(nodes) == len(order)
    ids = {node: i for i, node in enumerate(nodes)}
    out = []
    for node in nodes:
        root = not node.parents
        out.append({"id": ids[node], "label": labels[node], "kind": "root" if root else "primitive",
                    "type": type(node).__name__, "fun": None if root else node.name,
                    "parents": [ids[p] for p in node.parents]})
    return {"nodes": out, "end": ids[end_node]}


def mini_run(x):
    order, calls, created = [], [], []
    real_topo, real_add, real_init = mini.toposort, mini.accumulate, mini.Node.__init__
    labels = {}

    def init(node, *args):
        real_init(node, *args)
        created.append(node)

    def topo(end_node):
        nodes = real_topo(end_node)
        labels.update({n: n.name if n.parents else "x" for n in nodes})
        record.set("mini.graph", mini_graph(nodes, created, labels))
        order.extend(labels[n] for n in nodes)
        return nodes

    def add(prev, g):
        node = sys._getframe(1).f_locals["node"]
        calls.append({"from": labels[node], "ingrad": g})
        return real_add(prev, g)

    mini.toposort, mini.accumulate, mini.Node.__init__ = topo, add, init
    try:
        g = mini.grad(lambda t: mini.sin(t) * mini.exp(t) + t ** 2)(x)
    finally:
        mini.toposort, mini.accumulate, mini.Node.__init__ = real_topo, real_add, real_init
    return g, order, calls


def preorder(end_node):
    """A wrong order: depth first, each node listed before its parents are visited (no postorder)."""
    out, seen = [], set()

    def visit(node):
        if node not in seen:
            seen.add(node)
            out.append(node)
            for p in node.parents:
                visit(p)

    visit(end_node)
    return out


def mini_with_preorder(x):
    """Mini's backward_pass fed the preorder: (gradient it returns, order in Mini's names)."""
    real_topo, order = mini.toposort, []

    def topo(end_node):
        nodes = preorder(end_node)
        order.extend(n.name for n in nodes)
        return nodes

    mini.toposort = topo
    try:
        g = mini.grad(lambda t: mini.sin(t) * mini.exp(t) + t ** 2)(x)
    finally:
        mini.toposort = real_topo
    return g, order


def fold(contributions):
    """The sum add_outgrads builds, in the order the contributions arrive."""
    total = None
    for c in contributions:
        total = c if total is None else total + c
    return total


def main():
    announce()
    x = 0.5
    g_hips, hips, hips_calls = hips_run(x)
    g_mini, ours, mini_calls = mini_run(x)
    print("HIPS pop order:", " -> ".join(SAME[n] for n in hips))
    print("Mini pop order:", " -> ".join(SAME.get(n, n) for n in ours))
    for name, calls in (("HIPS", hips_calls), ("Mini", mini_calls)):
        print(f"{name} edges:", ", ".join(f"{c['from']} {c['ingrad']:.3f}" for c in calls))
    assert abs(g_hips - g_mini) < 1e-12
    by_hand = math.cos(x) * math.exp(x) + math.sin(x) * math.exp(x) + 2 * x
    assert abs(g_mini - by_hand) < 1e-12
    hips_m = [SAME[n] for n in hips]
    ours_m = [SAME.get(n, n) for n in ours]
    assert sorted(hips_m) == sorted(ours_m) and len(hips_m) == 6
    assert hips_m[0] == ours_m[0] == "add" and hips_m[-1] == ours_m[-1] == "input"
    assert hips_m == ["add", "pow", "mul", "exp", "sin", "input"]
    assert ours_m == ["add", "mul", "sin", "exp", "pow", "input"]
    # the same edges: every child sends the same contribution to the same parent in both engines
    key = lambda c: (SAME.get(c["from"], c["from"]), round(c["ingrad"], 12))
    assert sorted(map(key, hips_calls)) == sorted(map(key, mini_calls)) and len(mini_calls) == 7
    # the two gradients differ only in the order of the three sums into x
    to_x = {"sin", "exp", "pow", "power"}
    hips_x = [c["ingrad"] for c in hips_calls if c["from"] in to_x]
    mini_x = [c["ingrad"] for c in mini_calls if c["from"] in to_x]
    assert fold(hips_x) == g_hips and fold(mini_x) == g_mini
    diff = abs(g_hips - g_mini)
    print(f"HIPS grad {g_hips!r} = (pow + exp) + sin")
    print(f"Mini grad {g_mini!r} = (sin + exp) + pow")
    print(f"difference {diff:.1e} = {diff / math.ulp(g_mini):.0f} ulp")
    assert diff == math.ulp(g_mini)
    record.set("hips.grad", g_hips)
    record.set("diff", f"{diff:.1e}")

    g_wrong, wrong = mini_with_preorder(x)
    print("preorder:", " -> ".join(wrong))
    print(f"Mini's backward_pass in preorder returns {g_wrong!r}")
    assert wrong == ["add", "mul", "sin", "input", "exp", "pow"] and g_wrong == 1.0
    record.set("preorder", {"order": wrong, "grad": g_wrong})
    record.set("grad", g_mini)
    record.set("hips.order", hips_m)
    record.set("mini.order", ours_m)
    record.set("hips.calls", hips_calls)
    record.set("mini.calls", mini_calls)


if __name__ == "__main__":
    main()
