"""11 · Forward-over-reverse HVP: make_jvp(grad(f)) against make_hvp and hessian.

f(x) = x0^2 x1 + x1 x2^3 at x = (2, 1, -1), v = (1, 0, 2) (the lesson's hand example,
Hv = (2, 10, -12)). Counts, per route, how often f is traced, how many backward passes
run (core.backward_pass) and how many JVPNode / VJPNode objects are built, by wrapping
the module globals that autograd looks up at call time; everything is restored after.
"""

import numpy as np

import autograd.core as core
from autograd import grad, hessian, make_hvp, make_jvp

from _provenance import announce

X = np.array([2.0, 1.0, -1.0])
V = np.array([1.0, 0.0, 2.0])
HV = np.array([2.0, 10.0, -12.0])
COUNT = {}


def f(x):
    COUNT["f traced"] += 1
    return x[0] ** 2 * x[1] + x[1] * x[2] ** 3


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
