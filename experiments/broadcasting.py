"""07 · Broadcasting 的反向传播：bias 的 cotangent 在 unbroadcast 里如何变形。"""

import numpy as onp

import autograd.numpy as anp
from autograd import grad, make_vjp
from autograd.extend import defvjp, primitive
from autograd.numpy import numpy_vjps, numpy_wrapper
from autograd.core import primitive_vjps
from autograd.numpy.numpy_boxes import ArrayBox
from autograd.test_util import check_grads
from _provenance import announce
from _record import closure_functions, record

X = onp.arange(6.0).reshape(2, 3)          # [[0,1,2],[3,4,5]]
G = onp.array([[1.0, 2.0, 3.0],            # 从 X + b 的输出流回来的上游 cotangent
               [4.0, 5.0, 6.0]])


def fmt(a):
    return f"shape={onp.shape(a)} value={onp.asarray(a).tolist()}"


def traced_bias_vjp(b, key):
    """对 f(b) = X + b 做 VJP；记录 metadata、unbroadcast 及其中每次 anp.sum。"""
    steps = []
    real = (numpy_wrapper.metadata, numpy_vjps.unbroadcast, numpy_wrapper.sum)

    def logged_metadata(A):
        meta = real[0](A)
        steps.append(f"[forward]  anp.metadata(target) -> shape={meta[0]} ndim={meta[1]}")
        record.set(f"{key}.target", {"shape": meta[0], "ndim": meta[1]})
        return meta

    def logged_unbroadcast(x, target_meta, broadcast_idx=0):
        steps.append(f"[backward] unbroadcast in : g {fmt(x)}, target shape={target_meta[0]}")
        record.set(f"{key}.g_in", x)
        out = real[1](x, target_meta, broadcast_idx)
        record.set(f"{key}.g_out", out)
        steps.append(f"[backward] unbroadcast out: {fmt(out)}")
        return out

    def logged_sum(x, axis=None, keepdims=False, **kw):
        out = real[2](x, axis=axis, keepdims=keepdims, **kw)
        steps.append(f"             anp.sum(axis={axis}, keepdims={keepdims}): {onp.shape(x)} -> {fmt(out)}")
        record.append(f"{key}.sums", {"axis": axis, "keepdims": keepdims, "in_shape": onp.shape(x),
                                      "out_shape": onp.shape(out), "out": out})
        return out

    numpy_wrapper.metadata, numpy_vjps.unbroadcast, numpy_wrapper.sum = (
        logged_metadata, logged_unbroadcast, logged_sum)
    try:
        vjp, ans = make_vjp(lambda b: X + b)(b)     # 前向：add 的 maker 在这里运行
        assert ans.shape == (2, 3)
        g_b = vjp(G)                                # 反向：unbroadcast 在这里运行
    finally:
        numpy_wrapper.metadata, numpy_vjps.unbroadcast, numpy_wrapper.sum = real
    return g_b, steps


def run_case(label, key, b, expected):
    g_b, steps = traced_bias_vjp(b, key)
    record.set(f"{key}.b_shape", onp.shape(b))
    record.set(f"{key}.grad", g_b)
    record.set(f"{key}.sum_count", sum("anp.sum(" in s for s in steps))
    record.set(f"{key}.axis0_sums", sum("anp.sum(axis=0," in s for s in steps))
    print(f"-- {label}: b shape={onp.shape(b)}")
    for s in steps:
        print(s)
    assert steps[0].startswith("[forward]") and all("[forward]" not in s for s in steps[1:])
    assert onp.shape(g_b) == onp.shape(b) == onp.shape(expected)
    assert onp.allclose(g_b, expected)
    return steps


def check_route():
    """X + b（ndarray 在左）经由 ArrayBox.__array_ufunc__ 到达 anp.add。"""
    seen, real = [], ArrayBox.__array_ufunc__

    def logged(self, ufunc, method, *inputs, **kwargs):
        seen.append(ufunc.__name__)
        return real(self, ufunc, method, *inputs, **kwargs)

    ArrayBox.__array_ufunc__ = logged
    try:
        make_vjp(lambda b: X + b)(0.5)
    finally:
        ArrayBox.__array_ufunc__ = real
    print("X + b dispatched through __array_ufunc__ as:", seen)
    assert seen == ["add"]


def check_engine_is_shape_blind():
    """同样的加法，但 VJP 规则不做 unbroadcast：core.py 照单全收。"""
    @primitive
    def naive_add(x, y):
        return x + y

    defvjp(naive_add, lambda ans, x, y: lambda g: g, lambda ans, x, y: lambda g: g)
    g_b = grad(lambda b: anp.sum(naive_add(X, b) * G))(0.5)
    print("naive rule, scalar b -> gradient", fmt(g_b))
    assert onp.shape(g_b) == (2, 3) and onp.allclose(g_b, G)  # 形状错了，数值就是 G 本身


def main():
    announce()
    print("X", fmt(X))
    record.set("X", X)
    record.set("G", G)
    print("G", fmt(G))
    check_route()
    # (a) 标量 bias：两次沿 axis 0 求和，(2,3) -> (3,) -> ()
    steps = run_case("(a) scalar", "scalar", 0.5, 21.0)
    assert sum("anp.sum(axis=0, keepdims=False)" in s for s in steps) == 2
    assert sum("anp.sum(" in s for s in steps) == 2
    # (b) 向量 bias：只消去一个前导轴，(2,3) -> (3,)
    steps = run_case("(b) vector", "vector", onp.zeros(3), [5.0, 7.0, 9.0])
    assert sum("anp.sum(" in s for s in steps) == 1
    assert sum("anp.sum(axis=0, keepdims=False)" in s for s in steps) == 1
    # (c) 列 bias：维数相同，沿 size==1 的 axis 1 求和并保留该轴，(2,3) -> (2,1)
    steps = run_case("(c) column", "column", onp.zeros((2, 1)), [[6.0], [15.0]])
    assert sum("anp.sum(axis=1, keepdims=True)" in s for s in steps) == 1
    assert sum("anp.sum(axis=0," in s for s in steps) == 0  # the while loop never runs
    assert sum("anp.sum(" in s for s in steps) == 1

    # 用普通的标量 loss 再确认一次：loss = sum(G * (X + b))；X 没有被广播，梯度就是 G
    cases = [(0.5, 21.0), (onp.zeros(3), [5.0, 7.0, 9.0]), (onp.zeros((2, 1)), [[6.0], [15.0]])]
    for b, expected in cases:
        g_b = grad(lambda b: anp.sum(G * (X + b)))(b)
        g_X = grad(lambda X_: anp.sum(G * (X_ + b)))(X)
        print(f"grad of sum(G*(X+b)) wrt b{onp.shape(b)}:", fmt(g_b), "| wrt X equals G:", bool(onp.allclose(g_X, G)))
        assert onp.shape(g_b) == onp.shape(b) and onp.allclose(g_b, expected)
        assert onp.allclose(g_X, G)
    # G 全为 1 时，b 每个元素的梯度 = 它在前向被复制的次数
    copies = [(0.5, 6.0), (onp.zeros(3), [2.0, 2.0, 2.0]), (onp.zeros((2, 1)), [[3.0], [3.0]])]
    for b, expected in copies:
        n = grad(lambda b: anp.sum(X + b))(b)
        print(f"copies of each b element, b{onp.shape(b)}:", onp.asarray(n).tolist())
        assert onp.allclose(n, expected)
    # 伴随恒等式：<broadcast(b), G> == <b, unbroadcast(G)>，用随机 b 检查三种形状
    rng = onp.random.default_rng(0)
    for shape in [(), (3,), (2, 1)]:
        b = rng.standard_normal(shape)
        lhs = onp.sum(onp.broadcast_to(b, X.shape) * G)
        rhs = onp.sum(b * numpy_vjps.unbroadcast(G, numpy_wrapper.metadata(b)))
        print(f"adjoint identity, b{shape}: {bool(onp.isclose(lhs, rhs))}")
        assert onp.isclose(lhs, rhs)
    check_engine_is_shape_blind()


def watched_unbroadcast(run):
    """Run `run()`; every unbroadcast call with its target shape and the anp.sum calls inside it."""
    calls, real = [], (numpy_vjps.unbroadcast, numpy_wrapper.sum)

    def unbroadcast(x, target_meta, broadcast_idx=0):
        calls.append({"target": target_meta[0], "in_shape": onp.shape(x), "sums": []})
        out = real[0](x, target_meta, broadcast_idx)
        calls[-1]["out_shape"] = onp.shape(out)
        return out

    def summed(x, axis=None, keepdims=False, **kw):
        if calls and "out_shape" not in calls[-1]:
            calls[-1]["sums"].append({"axis": axis, "keepdims": keepdims})
        return real[1](x, axis=axis, keepdims=keepdims, **kw)

    numpy_vjps.unbroadcast, numpy_wrapper.sum = unbroadcast, summed
    try:
        result = run()
    finally:
        numpy_vjps.unbroadcast, numpy_wrapper.sum = real
    return result, calls


def self_test_cases():
    """What the lesson's self-test asks about, recorded (nothing printed)."""
    # 1. a row bias (1, 3): no axis to remove, one keepdims sum over the stretched axis 0
    g_row, _ = traced_bias_vjp(onp.zeros((1, 3)), "row")
    assert onp.shape(g_row) == (1, 3) and onp.allclose(g_row, [[5.0, 7.0, 9.0]])
    record.set("row.grad", g_row)

    # 3. what the two rules keep for the backward pass: add keeps shapes only, multiply the other factor
    b = onp.zeros(3)
    kept = {}
    for name, fun in (("add", anp.add), ("multiply", anp.multiply)):
        vjp = primitive_vjps[fun]((1,), fun(X, b), (X, b), {})  # b at position 1, as in X + b
        kept[name] = [c["freevars"] for c in closure_functions(vjp) if c["module"] == "autograd.numpy.numpy_vjps"]
    assert kept == {"add": [("f", "target_meta"), ()], "multiply": [("f", "target_meta"), ("x",)]}
    record.set("self_test.kept", kept)

    # 4. X and b both traced: one maker each, two metadata calls; only b's cotangent is summed
    metas, real_metadata = [], numpy_wrapper.metadata

    def metadata(A):
        metas.append(onp.shape(A))
        return real_metadata(A)

    numpy_wrapper.metadata = metadata
    try:
        vjp, _ = make_vjp(lambda X_, b_: X_ + b_, (0, 1))(X, b)
    finally:
        numpy_wrapper.metadata = real_metadata
    (g_X, g_b), calls = watched_unbroadcast(lambda: vjp(G))
    assert metas == [(2, 3), (3,)] and onp.allclose(g_X, G) and onp.allclose(g_b, [5.0, 7.0, 9.0])
    assert [(c["target"], len(c["sums"])) for c in calls] == [((2, 3), 0), ((3,), 1)]
    record.set("self_test.both", {"metadata_calls": len(metas), "targets": [c["target"] for c in calls],
                                  "sums": [len(c["sums"]) for c in calls]})

    # 5. the second add maker without unbroadcast_f: no error from grad, a (2, 3) "gradient" for a scalar
    @primitive
    def add_without_unbroadcast(x, y):
        return x + y

    defvjp(add_without_unbroadcast, lambda ans, x, y: numpy_vjps.unbroadcast_f(x, lambda g: g),
           lambda ans, x, y: lambda g: g)  # the second maker lost its unbroadcast_f
    loss = lambda b: anp.sum(add_without_unbroadcast(X, b) * G)
    g_bad = grad(loss)(0.5)
    stepped = 0.5 - 0.1 * g_bad  # a gradient step: the scalar parameter silently becomes an array
    try:
        check_grads(loss, modes=["rev"], order=1)(0.5)
    except AssertionError as exc:
        check = {"error": type(exc).__name__, "message": str(exc)}
    assert onp.shape(g_bad) == (2, 3) and onp.shape(stepped) == (2, 3) and check["message"] == ""
    record.set("self_test.no_unbroadcast", {"grad_shape": onp.shape(g_bad), "step_shape": onp.shape(stepped),
                                            "check_grads": check["error"]})

    # 6. matmul broadcasts its batch axis: B's cotangent is (4, 3, 5) until unbroadcast sums it to (3, 5)
    A = onp.ones((4, 2, 3))
    g_B, calls = watched_unbroadcast(lambda: grad(lambda B: anp.sum(anp.matmul(A, B)))(onp.ones((3, 5))))
    matmul_b = next(c for c in calls if c["target"] == (3, 5))
    assert onp.shape(g_B) == (3, 5) and matmul_b["in_shape"] == (4, 3, 5)
    g_x, calls = watched_unbroadcast(lambda: grad(lambda x: anp.sum(anp.sin(anp.exp(x))))(onp.ones((2, 3))))
    assert calls == []  # exp and sin: no unbroadcast on the way
    record.set("self_test.matmul", {"in_shape": matmul_b["in_shape"], "out_shape": matmul_b["out_shape"],
                                    "sums": matmul_b["sums"], "unary_unbroadcasts": len(calls)})


if __name__ == "__main__":
    main()
    self_test_cases()
