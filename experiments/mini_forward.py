"""14 · Stage 5: forward mode in Mini beside HIPS's JVPNode.

The tangent of a node exists as soon as the node is made (read inside the traced function,
before anything else is computed); a forward-mode node keeps no parents; deriv agrees with
HIPS's deriv and with Mini's grad; forward mode nests with reverse mode.
"""

import math
import sys
from pathlib import Path

import autograd
import autograd.numpy as anp

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

CASES = [
    ("x**3-2x+1", lambda x, m: x ** 3 - 2 * x + 1, -1.5),
    ("sin*exp+x**2", lambda x, m: m.sin(x) * m.exp(x) + x ** 2, 0.5),
    ("(x+1)/(x*x+2)", lambda x, m: (x + 1) / (x * x + 2), 0.7),
    ("log*tanh-cos", lambda x, m: m.log(x) * m.tanh(x) - m.cos(x), 1.3),
]


def tangent_at_creation(make_jvp, m, node_of):
    """make_jvp of sin(x) * x at 0.3 with tangent 2: the sin node's tangent read at once."""
    seen = {}

    def f(x):
        y = m.sin(x)
        node = node_of(y)
        seen["g"] = float(node.g)
        seen["has_parents"] = hasattr(node, "parents")
        return y * x

    value, tangent = make_jvp(f, 0.3)(2.0)
    return float(value), float(tangent), seen


def main():
    announce()
    m_value, m_tangent, m_seen = tangent_at_creation(mini.make_jvp, mini, lambda b: b.node)
    h_value, h_tangent, h_seen = tangent_at_creation(lambda f, x: autograd.make_jvp(f)(x), anp, lambda b: b._node)
    print("make_jvp of sin(x) * x at 0.3 with tangent 2:")
    print(f"  sin node's g as soon as it is made: Mini {m_seen['g']:.15f}, HIPS {h_seen['g']:.15f}")
    print(f"  2 * cos(0.3) = {2 * math.cos(0.3):.15f}")
    print(f"  the node has `parents`: Mini {m_seen['has_parents']}, HIPS {h_seen['has_parents']}")
    print(f"  (value, tangent): Mini ({m_value:.12f}, {m_tangent:.12f})")
    print(f"                    HIPS ({h_value:.12f}, {h_tangent:.12f})")
    assert m_seen["g"] == h_seen["g"] == 2 * math.cos(0.3)
    assert not m_seen["has_parents"] and not h_seen["has_parents"]
    assert m_value == h_value and abs(m_tangent - h_tangent) <= 1e-15
    record.set("tangent", {"mini": m_seen["g"], "hips": h_seen["g"], "parents": m_seen["has_parents"]})

    print()
    print(f"{'f(x)':<15}{'x':>5}{'Mini deriv':>20}{'HIPS deriv':>20}{'Mini grad':>20}")
    for name, f, x in CASES:
        ours = mini.deriv(lambda t: f(t, mini))(x)
        hips = float(autograd.deriv(lambda t: f(t, anp))(x))
        back = mini.grad(lambda t: f(t, mini))(x)
        assert abs(ours - hips) <= 1e-12 and abs(ours - back) <= 1e-12, (name, ours, hips, back)
        print(f"{name:<15}{x:>5.1f}{ours:>20.15f}{hips:>20.15f}{back:>20.15f}")
        record.append("compare", {"f": name, "x": x, "mini": ours, "hips": hips, "grad": back})

    g = lambda t: mini.sin(t) * mini.exp(t) + t ** 2
    second = {
        "deriv(grad)": mini.deriv(mini.grad(g))(0.5),
        "grad(deriv)": mini.grad(mini.deriv(g))(0.5),
        "grad(grad)": mini.grad(mini.grad(g))(0.5),
        "hips": float(autograd.grad(autograd.grad(lambda t: anp.sin(t) * anp.exp(t) + t ** 2))(0.5)),
    }
    print()
    print("second derivative of sin(x)*exp(x)+x**2 at 0.5:")
    for k, v in second.items():
        print(f"  {k:<12} {v:.15f}")
    assert all(abs(v - second["hips"]) <= 1e-12 for v in second.values())
    by_hand = 2 * math.cos(0.5) * math.exp(0.5) + 2
    assert abs(second["hips"] - by_hand) <= 1e-12
    record.set("second", second)


if __name__ == "__main__":
    main()
