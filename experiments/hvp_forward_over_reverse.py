"""11 · Forward-over-reverse HVP: make_jvp(grad(f)) against make_hvp and hessian.

f(x) = x0^2 x1 + x1 x2^3 at x = (2, 1, -1), v = (1, 0, 2) (the lesson's hand example,
Hv = (2, 10, -12)). Counts, per route, how often f is traced, how many backward passes
run (core.backward_pass) and how many JVPNode / VJPNode objects are built, by wrapping
the module globals that autograd looks up at call time; everything is restored after.
"""

import sys

import numpy as np

import autograd.core as core
from autograd import grad, hessian, make_hvp, make_jvp
from autograd.tracer import isbox, trace_stack

from _provenance import announce
from _record import record

X = np.array([2.0, 1.0, -1.0])
V = np.array([1.0, 0.0, 2.0])
HV = np.array([2.0, 10.0, -12.0])
COUNT = {}
SEEN = []  # the argument f receives, while nesting() watches (WATCH[0])
WATCH = [False]


def f(x):
    COUNT["f traced"] += 1
    if WATCH[0]:
        SEEN.append(x)
    return x[0] ** 2 * x[1] + x[1] * x[2] ** 3


def operator_of(frame):
    """The differential operator whose trace this is: the nearest frame of
    differential_operators.py above core's call of trace, else that caller (make_jvp's jvp)."""
    caller = frame
    while frame is not None and "autograd" in frame.f_code.co_filename:
        if frame.f_code.co_filename.endswith("differential_operators.py"):
            return frame.f_code.co_name
        frame = frame.f_back
    return caller.f_code.co_qualname.split(".")[0]


def nesting(route):
    """Run route() and say, for the Box f receives (outermost first), which operator opened its
    trace, the type of its node and how many backward passes ran on that trace's graph (a pass on
    trace t runs once t has closed, with the traces below it still open: trace_stack.top == t - 1)."""
    real_trace, real_bp = core.trace, core.backward_pass
    opened, passes = {}, []

    def watched_trace(start_node, fun, x):
        opened[trace_stack.top + 1] = operator_of(sys._getframe(1))
        return real_trace(start_node, fun, x)

    def watched_bp(g, end_node):
        passes.append(trace_stack.top + 1)
        return real_bp(g, end_node)

    COUNT["f traced"] = 0
    SEEN.clear()
    core.trace, core.backward_pass, WATCH[0] = watched_trace, watched_bp, True
    try:
        route()
    finally:
        core.trace, core.backward_pass, WATCH[0] = real_trace, real_bp, False
    assert len(SEEN) == 1  # every route traces f once
    chain, x = [], SEEN[0]
    while isbox(x):
        t = x._trace
        chain.append([f"{opened[t]}：{type(x._node).__name__}，反向 {passes.count(t)} 次", t])
        x = x._value
    SEEN.clear()
    return chain + [[type(x).__name__, None]]


def counted(route, k=1):
    """Run route() k times; return its last result and the counts."""
    real_bp, real_vjp_init, real_jvp_init = core.backward_pass, core.VJPNode.__init__, core.JVPNode.__init__
    for key in ("f traced", "backward_pass", "VJPNode", "JVPNode"):
        COUNT[key] = 0

    def bp(g, end_node):
        COUNT["backward_pass"] += 1
        return real_bp(g, end_node)

    def vjp_init(self, *a):
        COUNT["VJPNode"] += 1
        real_vjp_init(self, *a)

    def jvp_init(self, *a):
        COUNT["JVPNode"] += 1
        real_jvp_init(self, *a)

    core.backward_pass, core.VJPNode.__init__, core.JVPNode.__init__ = bp, vjp_init, jvp_init
    try:
        for _ in range(k):
            out = route()
    finally:
        core.backward_pass, core.VJPNode.__init__, core.JVPNode.__init__ = real_bp, real_vjp_init, real_jvp_init
    return out, dict(COUNT)


def main():
    announce()
    # forward over reverse: the tangent v rides along the reverse pass of grad(f)
    fwd = lambda: make_jvp(grad(f))(X)(V)  # noqa: E731  (returns (grad f(x), H v))
    (g, hv_fwd), c_fwd = counted(fwd)
    # reverse over reverse: make_hvp = VJP of grad(f)
    rev = lambda: make_hvp(f)(X)[0](V)  # noqa: E731
    hv_rev, c_rev = counted(rev)
    # the whole Hessian, then a matrix-vector product
    full = lambda: hessian(f)(X) @ V  # noqa: E731
    hv_full, c_full = counted(full)

    for name, hv, c in (("make_jvp(grad(f))", hv_fwd, c_fwd), ("make_hvp(f)", hv_rev, c_rev),
                        ("hessian(f) @ v", hv_full, c_full)):
        print(f"{name:18s} Hv = {hv.tolist()}  f traced {c['f traced']}, backward_pass {c['backward_pass']}, "
              f"VJPNode {c['VJPNode']}, JVPNode {c['JVPNode']}")
        assert np.allclose(hv, HV), (name, hv)
    assert np.allclose(g, [4.0, 3.0, 3.0])
    assert [(c["VJPNode"], c["JVPNode"]) for c in (c_fwd, c_rev, c_full)] == [(9, 27), (36, 0), (40, 0)]
    # forward over reverse: one trace of f, one reverse pass, and every node of that pass
    # also carries a tangent (JVPNode built while the reverse pass runs)
    assert (c_fwd["f traced"], c_fwd["backward_pass"]) == (1, 1) and c_fwd["JVPNode"] > 0
    # make_hvp: one trace of f, two reverse passes (inner grad, outer VJP), no forward mode
    assert (c_rev["f traced"], c_rev["backward_pass"], c_rev["JVPNode"]) == (1, 2, 0)
    # hessian = jacobian(jacobian(f)): one reverse pass per output of the gradient (3) on top
    assert c_full["JVPNode"] == 0 and c_full["f traced"] == 1 and c_full["backward_pass"] == 1 + 3

    # how the three routes nest: the Box f receives, outermost (the inner operator's trace) first
    chains = {"forward_over_reverse": nesting(fwd), "make_hvp": nesting(rev), "hessian": nesting(full)}
    for name, chain in chains.items():
        print(f"{name:20s} f 收到的 x：" + " ⊃ ".join(f"[trace {t}] {text}" for text, t in chain[:-1]) + f" ⊃ {chain[-1][0]}")
        record.set(f"nesting.{name}", chain)
    assert chains == {
        "forward_over_reverse": [["grad：VJPNode，反向 1 次", 1], ["make_jvp：JVPNode，反向 0 次", 0], ["ndarray", None]],
        "make_hvp": [["grad：VJPNode，反向 1 次", 1], ["make_hvp：VJPNode，反向 1 次", 0], ["ndarray", None]],
        "hessian": [["jacobian：VJPNode，反向 1 次", 1], ["jacobian：VJPNode，反向 3 次", 0], ["ndarray", None]],
    }

    # k products at one point: make_hvp builds once; make_jvp(grad(f)) re-traces per v
    k = 4
    build = lambda: make_hvp(f)(X)[0]  # noqa: E731
    hvp_at_x, c_build = counted(build)
    _, c_each = counted(lambda: hvp_at_x(V), k)
    _, c_fwd_k = counted(fwd, k)
    print(f"{k} products at one x: make_hvp build {c_build['f traced']} trace + {c_build['backward_pass']} pass, "
          f"then {c_each['backward_pass']} passes; make_jvp(grad(f)) {c_fwd_k['f traced']} traces, "
          f"{c_fwd_k['backward_pass']} passes")
    assert (c_build["f traced"], c_build["backward_pass"]) == (1, 1)
    assert (c_each["f traced"], c_each["backward_pass"]) == (0, k)
    assert (c_fwd_k["f traced"], c_fwd_k["backward_pass"]) == (k, k)


if __name__ == "__main__":
    main()
