"""Lesson 02: J, Jv and w^T J by hand and with autograd; lifetimes of JVP and VJP closures."""

import sys

import autograd.core as core
import autograd.numpy as np
from autograd import jacobian, make_jvp, make_vjp
from autograd.core import primitive_jvps, primitive_vjps
from autograd.numpy import numpy_wrapper as anp

from _provenance import announce
from _record import record

CALLS = [0]
EVENTS = []
SIN_G = []  # cotangents received by the sin VJP closure
SEEN = [0]  # how many of SIN_G earlier steps already reported


def f(x):
    CALLS[0] += 1
    EVENTS.append(f"f 第 {CALLS[0]} 次执行：开始")
    x1, x2, x3 = x[0], x[1], x[2]
    y = np.array([x1 * x2, np.sin(x1) + x2 * x3])
    EVENTS.append(f"f 第 {CALLS[0]} 次执行：结束")
    return y


def jacobian_by_hand(x):
    x1, x2, x3 = x
    return np.array([[x2, x1, 0.0], [np.cos(x1), x3, x2]])


def fmt(a):
    return "[" + ", ".join(f"{float(t):.6f}" for t in np.ravel(a)) + "]"


def compare_with_hand(x, v, w):
    J = jacobian_by_hand(x)
    J_ad = jacobian(f)(x)
    y_fwd, Jv = make_jvp(f)(x)(v)
    vjp, y_rev = make_vjp(f)(x)
    wTJ = vjp(w)
    print("手算 J         =", fmt(J[0]), fmt(J[1]))
    print("jacobian(f)(x) =", fmt(J_ad[0]), fmt(J_ad[1]))
    print("手算 Jv =", fmt(J @ v), "  make_jvp 得到 =", fmt(Jv))
    print("手算 w^T J =", fmt(w @ J), "  make_vjp 得到 =", fmt(wTJ))
    print(f"w·(Jv) = {float(w @ Jv):.6f}   (w^T J)·v = {float(wTJ @ v):.6f}")
    assert J_ad.shape == (2, 3) and Jv.shape == (2,) and wTJ.shape == (3,)
    assert np.allclose(J_ad, J, rtol=0, atol=1e-14)
    assert np.allclose(Jv, J @ v, rtol=0, atol=1e-14)
    assert np.allclose(wTJ, w @ J, rtol=0, atol=1e-14)
    assert np.allclose(y_fwd, y_rev) and np.isclose(w @ Jv, wTJ @ v, rtol=1e-14, atol=0)
    # the hand-derived intermediates of the lesson's two snapshot tables
    x1, x2, x3 = x
    p, q = x1 * x2, x2 * x3
    assert (float(p), float(q)) == (2.0, 6.0)  # the values lesson 02 states for x = (1, 2, 3)
    assert y_fwd[0] == p and np.isclose(y_fwd[1], np.sin(x1) + q)
    record.set("hand", {"x": x, "v": v, "w": w, "p": p, "q": q, "s": np.sin(x1)})
    record.set("result", {"y": y_fwd, "J": J_ad, "Jv": Jv, "wTJ": wTJ})
    record.set("adjoint", {"w_Jv": w @ Jv, "wTJ_v": wTJ @ v})  # the two sides of the adjoint identity


def rows_and_columns(x):
    """One JVP gives one column of J, one VJP one row: e_3 pushed forward, e_2 pulled back."""
    J = jacobian(f)(x)
    _, column = make_jvp(f)(x)(np.array([0.0, 0.0, 1.0]))
    row = make_vjp(f)(x)[0](np.array([0.0, 1.0]))
    print("jvp(e_3) =", fmt(column), " = J 的第 3 列;  vjp(e_2) =", fmt(row), " = J 的第 2 行")
    assert np.array_equal(column, J[:, 2]) and np.array_equal(row, J[1])
    record.set("rows_columns", {
        "matrix": J, "rows": ["f₁", "f₂"], "columns": ["x₁", "x₂", "x₃"],
        "column": {"index": 2, "values": column, "label": "make_jvp(f)(x)(e₃)"},
        "row": {"index": 1, "values": row, "label": "make_vjp(f)(x)[0](e₂)"},
    })


def install_logging():
    orig_vjp, orig_jvp = primitive_vjps[anp.sin], primitive_jvps[anp.sin]

    def logged_vjpmaker(argnums, ans, args, kwargs):
        EVENTS.append(f"  sin 的 VJPNode 创建：vjpmaker 运行，捕获 x1 = {float(args[0]):.1f}")
        inner = orig_vjp(argnums, ans, args, kwargs)

        def vjp(g):
            EVENTS.append(f"  sin 的 VJP closure 被调用：g = {float(g):.1f}")
            SIN_G.append(float(g))
            return inner(g)

        return vjp

    def logged_jvpmaker(argnums, gs, ans, args, kwargs):
        t = orig_jvp(argnums, gs, ans, args, kwargs)
        EVENTS.append(f"  sin 的 JVPNode 创建：tangent = {float(gs[0]):.1f}*cos(x1) = {float(t):.6f}")
        return t

    primitive_vjps[anp.sin], primitive_jvps[anp.sin] = logged_vjpmaker, logged_jvpmaker
    return orig_vjp, orig_jvp


def step(label, key=None):
    print(f"\n>>> {label}   (f 累计执行 {CALLS[0]} 次)")
    for e in EVENTS:
        print("   ", e)
    kinds = [e.split("：")[0].strip() for e in EVENTS]
    EVENTS.clear()
    received = SIN_G[SEEN[0]:]  # the g the sin closure received during this step
    SEEN[0] = len(SIN_G)
    if key:  # the lesson's table: did f run, which part of the sin rule ran, with which g
        record.set(f"lifetimes.{key}", {"f_calls_so_far": CALLS[0], "events": kinds, "sin_g": received})
    return kinds


def lifetimes(x, v, w):
    CALLS[0] = 0
    EVENTS.clear()
    SIN_G.clear()
    SEEN[0] = 0
    orig_vjp, orig_jvp = install_logging()
    try:
        vjp, _ = make_vjp(f)(x)
        kinds = step("vjp, ans = make_vjp(f)(x)", "make_vjp")
        assert kinds == ["f 第 1 次执行", "sin 的 VJPNode 创建", "f 第 1 次执行"]
        assert CALLS[0] == 1
        print("    vjp 的自由变量:", vjp.__code__.co_freevars)
        assert vjp.__code__.co_freevars == ("end_node",)
        r1 = vjp(w)
        assert step(f"vjp(w)，w = {fmt(w)} -> {fmt(r1)}", "vjp_w") == ["sin 的 VJP closure 被调用"]
        r2 = vjp(np.array([1.0, 0.0]))
        assert step(f"vjp([1, 0]) -> {fmt(r2)}", "vjp_basis") == ["sin 的 VJP closure 被调用"]
        assert CALLS[0] == 1  # two backward passes, no new forward evaluation
        assert SIN_G == [2.0, 0.0] and np.allclose(r2, jacobian_by_hand(x)[0])

        jvp = make_jvp(f)(x)
        assert step("jvp = make_jvp(f)(x)", "make_jvp") == []
        assert CALLS[0] == 1  # nothing traced yet
        print("    jvp 的自由变量:", tuple(sorted(jvp.__code__.co_freevars)))
        assert sorted(jvp.__code__.co_freevars) == ["fun", "x"]
        _, t1 = jvp(v)
        kinds = step(f"jvp(v)，v = {fmt(v)} -> {fmt(t1)}", "jvp_v")
        assert kinds == ["f 第 2 次执行", "sin 的 JVPNode 创建", "f 第 2 次执行"]
        _, t2 = jvp(np.array([1.0, 0.0, 0.0]))
        step(f"jvp([1, 0, 0]) -> {fmt(t2)}")
        assert CALLS[0] == 3  # every JVP re-runs f
        assert np.allclose(t2, jacobian_by_hand(x)[:, 0])

        jacobian(f)(x)
        kinds = step("jacobian(f)(x)")
        assert CALLS[0] == 4  # one forward pass, then one backward pass per output row
        assert kinds.count("sin 的 VJPNode 创建") == 1 and kinds.count("sin 的 VJP closure 被调用") == 2
        assert SIN_G[2:] == [0.0, 1.0]
        record.set("jacobian_sin", {"vjpnodes": kinds.count("sin 的 VJPNode 创建"),
                                    "closure_calls": kinds.count("sin 的 VJP closure 被调用"), "g": SIN_G[2:]})
    finally:
        primitive_vjps[anp.sin], primitive_jvps[anp.sin] = orig_vjp, orig_jvp


def third_column(x):
    """J's third column (self-test 1): one JVP with e_3, or a VJP for every row of J."""
    e3 = np.array([0.0, 0.0, 1.0])
    before = CALLS[0]
    _, column = make_jvp(f)(x)(e3)
    jvp_runs, before = CALLS[0] - before, CALLS[0]
    vjp, y = make_vjp(f)(x)
    rows = [vjp(e) for e in np.eye(len(y))]
    vjp_runs = CALLS[0] - before
    EVENTS.clear()
    assert np.allclose(column, jacobian_by_hand(x)[:, 2]) and np.allclose([r[2] for r in rows], column)
    assert (jvp_runs, vjp_runs, len(rows)) == (1, 1, 2)
    record.set("third_column", {"column": column, "jvp_f_runs": jvp_runs, "vjps": len(rows),
                                "vjp_f_runs": vjp_runs})


def record_intermediates(x, v, w):
    """The tangent of every node (one JVP) and backward_pass's outgrads before each node (one VJP),
    from the real runs, for the lesson's two hand-derived tables. Names are teaching labels."""
    def names_of(cap):
        labels, k = {}, {}
        for n in cap.nodes:
            fun = n["fun"] or "x"
            k[fun] = k.get(fun, 0) + 1
            labels[n["obj"]] = {("x", 1): "x", ("multiply", 1): "p", ("sin", 1): "s", ("multiply", 2): "q",
                                ("add", 1): "f2", ("__getitem__", 1): "x1", ("__getitem__", 2): "x2",
                                ("__getitem__", 3): "x3"}.get((fun, k[fun]), f"{fun}{k[fun]}")
        return labels

    with record.capture() as cap:
        make_jvp(f)(x)(v)
    labels = names_of(cap)
    tangents = {labels[n["obj"]]: n["obj"].g for n in cap.nodes if labels[n["obj"]] in ("p", "s", "q", "f2")}
    assert np.isclose(tangents["p"], 3.0) and np.isclose(tangents["q"], 5.0)
    record.set("forward_tangents", tangents)
    cap.release()

    states, adds, real_toposort, real_add = [], [], core.toposort, core.add_outgrads

    def watched_toposort(end_node):
        for node in real_toposort(end_node):
            states.append((node, dict(sys._getframe(1).f_locals["outgrads"])))
            yield node

    def watched_add(prev_g, g):  # backward_pass's own loop variables say which edge this is
        here = sys._getframe(1).f_locals
        adds.append((here["node"], here["parent"], g))
        return real_add(prev_g, g)

    with record.capture() as cap:
        vjp, _ = make_vjp(f)(x)
    labels = names_of(cap)
    core.toposort, core.add_outgrads = watched_toposort, watched_add
    try:
        xbar = vjp(w)
    finally:
        core.toposort, core.add_outgrads = real_toposort, real_add
    for node, outgrads in states:  # only the nodes the lesson names, with the cotangent each received
        if labels[node] in ("f2", "q", "s", "p"):
            record.set(f"reverse.{labels[node]}", outgrads[node][0])
    record.set("reverse.x", xbar)
    for node, parent, g in adds:  # contributions from the named nodes to the inputs x1, x2, x3
        if labels[node] in ("q", "s", "p"):
            record.append(f"reverse.to_inputs.{labels[node]}", {"to": labels[parent], "g": g})
    cap.release()


def main():
    announce()
    assert np.sin is anp.sin
    x = np.array([1.0, 2.0, 3.0])
    v = np.array([1.0, 1.0, 1.0])
    w = np.array([1.0, 2.0])
    compare_with_hand(x, v, w)
    rows_and_columns(x)
    lifetimes(x, v, w)
    third_column(x)
    record_intermediates(x, v, w)


if __name__ == "__main__":
    main()
