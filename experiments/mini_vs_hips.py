"""14 · Run the Mini autograd demo and compare Mini with HIPS autograd on scalar functions.

The same graph for x * x (and for 2.0 * x), Mini's own outgrads while it runs grad(x * x),
and first derivatives of six functions in both engines."""

import sys
from pathlib import Path

import autograd
import autograd.numpy as anp
from autograd.core import VJPNode
from autograd.tracer import trace

import _provenance
from _provenance import announce
from _record import record


def mini_dir():
    """mini-autograd/ sits next to experiments/. The site build may run a copy of
    this script elsewhere, so also look next to the folder of _provenance.py."""
    for base in (Path(__file__), Path(_provenance.__file__)):
        candidate = base.resolve().parent.parent / "mini-autograd"
        if (candidate / "mini_autograd.py").is_file():
            return candidate
    sys.exit("mini-autograd/ not found next to experiments/")


sys.path.insert(0, str(mini_dir()))
import demo  # noqa: E402  (Mini's own demo script)
import mini_autograd as mini  # noqa: E402

# Each function is written once; `m` supplies sin/cos/exp/log/tanh
# (the Mini module or autograd.numpy), operators come from the Box classes.
CASES = [
    ("x*x", lambda x, m: x * x, 3.0),
    ("x**3-2x+1", lambda x, m: x ** 3 - 2 * x + 1, -1.5),
    ("sin*exp+x**2", lambda x, m: m.sin(x) * m.exp(x) + x ** 2, 0.5),
    ("(x+1)/(x*x+2)", lambda x, m: (x + 1) / (x * x + 2), 0.7),
    ("log*tanh-cos", lambda x, m: m.log(x) * m.tanh(x) - m.cos(x), 1.3),
    ("sin(x*x)+exp(-x)*x", lambda x, m: m.sin(x * x) + m.exp(-x) * x, 0.9),
]


def compare_table():
    print(f"{'f(x)':<20}{'x':>6}{'Mini grad':>20}{'HIPS grad':>20}{'|diff|':>10}")
    for name, f, x in CASES:
        ours = mini.grad(lambda t: f(t, mini))(x)
        hips = float(autograd.grad(lambda t: f(t, anp))(x))
        diff = abs(ours - hips)
        assert diff <= 1e-12, (name, ours, hips)
        print(f"{name:<20}{x:>6.1f}{ours:>20.15f}{hips:>20.15f}{diff:>10.1e}")
        record.append("compare", {"f": name, "x": x, "mini": ours, "hips": hips})


def same_graph_shape():
    """x * x at 3: one multiply node whose two parents are the same root node."""
    root = mini.Node.new_root()
    box = mini.Box(3.0, root)
    m_end = box * box
    m_parts = [vjp(1.0) for vjp in m_end.node.vjps]

    h_root = VJPNode.new_root()
    _, h_end = trace(h_root, lambda b: b * b, 3.0)
    h_parts = [float(v) for v in h_end.vjp(1.0)]

    assert m_end.node.parents == (root, root) and h_end.parents == (h_root, h_root)
    assert m_parts == h_parts == [3.0, 3.0]
    record.set("same_shape", {"mini_parts": m_parts, "hips_parts": h_parts,
                              "mini_parents": m_end.node.parents}, names={root: "X"})
    print(f"Mini: parents are (root, root): True; contributions {m_parts}")
    print(f"HIPS: parents are (root, root): True; contributions {h_parts}")

    # a constant is not a parent: 2.0 * x has one edge, carrying d(2x)/dx = 2
    m_const = 2.0 * mini.Box(3.0, root)
    _, h_const = trace(h_root, lambda b: 2.0 * b, 3.0)
    assert m_const.node.parents == (root,) and h_const.parents == (h_root,)
    const = ([vjp(1.0) for vjp in m_const.node.vjps], [float(v) for v in h_const.vjp(1.0)])
    assert const == ([2.0], [2.0])
    record.set("constant", {"mini_parents": len(m_const.node.parents), "hips_parents": len(h_const.parents),
                            "mini_parts": const[0], "hips_parts": const[1]})
    print(f"2.0 * x: one parent in both; contributions Mini {const[0]}, HIPS {const[1]}")


def mini_backward_states():
    """Mini's own outgrads dict while its backward_pass runs grad(x * x) at 3 (lesson 14's table)."""
    real_toposort, real_add = mini.toposort, mini.add_outgrads
    names, states, adds = {}, [], []

    def backward_locals():
        """The local variables of Mini's backward_pass, the nearest caller of that name."""
        frame = sys._getframe(1)
        while frame.f_code.co_name != "backward_pass":
            frame = frame.f_back
        return frame.f_locals

    def watched_toposort(end_node):
        order = real_toposort(end_node)
        names.update({end_node: "M", order[-1]: "X"})
        for node in order:
            states.append({"before": names[node], "outgrads": dict(backward_locals()["outgrads"])})
            yield node
        states.append({"before": "end", "outgrads": dict(backward_locals()["outgrads"])})

    def watched_add(prev_g, g):  # called by accumulate, which backward_pass calls
        before = dict(backward_locals()["outgrads"])  # Mini's dict before this add is stored
        out = real_add(prev_g, g)
        adds.append({"prev": prev_g, "g": g, "out": out, "outgrads_before": before})
        return out

    mini.toposort, mini.add_outgrads = watched_toposort, watched_add
    try:
        result = mini.grad(lambda x: x * x)(3.0)
    finally:
        mini.toposort, mini.add_outgrads = real_toposort, real_add
    assert [st["before"] for st in states] == ["M", "X", "end"] and result == 6.0
    assert [(a["prev"], a["g"], a["out"]) for a in adds] == [(None, 3.0, 3.0), (3.0, 3.0, 6.0)]
    for st in states:
        record.append("mini_xx.outgrads", st, names=names)
    record.set("mini_xx.adds", adds, names=names)
    record.set("mini_xx.result", result)


def main():
    announce()
    print("--- Mini demo (mini-autograd/demo.py) ---")
    demo.main()
    print()
    print("--- same structure for x * x ---")
    same_graph_shape()
    print()
    mini_backward_states()
    print("--- Mini vs HIPS gradients ---")
    compare_table()


if __name__ == "__main__":
    main()
