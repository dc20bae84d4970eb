"""06 · NumPy primitive 与局部 VJP：规则核对 + staged closure 的调用时刻。"""

from contextlib import contextmanager

import numpy as onp

import inspect

import autograd.numpy as anp
from autograd import grad, make_vjp
from autograd.core import defvjp, primitive_vjps
from autograd.extend import primitive
from autograd.numpy import numpy_vjps, numpy_wrapper
from autograd.tracer import trace_primitives_map
from _provenance import announce
from _record import closure_functions, record


def check_wrapping():
    """wrap_namespace 之后，autograd.numpy 里的名字各是什么。"""
    assert anp.exp.fun is onp.exp and anp.exp._is_autograd_primitive
    assert trace_primitives_map[onp.exp] is anp.exp
    assert anp.conj is anp.conjugate  # 同一个 NumPy 对象只包装一次
    assert anp.shape is not onp.shape and not hasattr(anp.shape, "fun")  # notrace
    assert anp.pi == onp.pi and anp.float64 is onp.float64  # 原样保留
    assert numpy_wrapper.multiply is anp.multiply
    print("anp.exp.fun is numpy.exp:", anp.exp.fun is onp.exp)
    print("anp.conj is anp.conjugate:", anp.conj is anp.conjugate)
    print("anp.float64 is numpy.float64:", anp.float64 is onp.float64)


def close(a, b):
    assert onp.allclose(a, b), (a, b)
    return "OK"


def check_rules():
    x = onp.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
    y = onp.array([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]])
    G = onp.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])  # 任意上游 cotangent

    vjp, _ = make_vjp(anp.multiply, 0)(x, y)
    print("multiply  vjp_x(G) == G*y      :", close(vjp(G), G * y))
    vjp, _ = make_vjp(anp.multiply, 1)(x, y)
    print("multiply  vjp_y(G) == G*x      :", close(vjp(G), G * x))
    vjp, _ = make_vjp(anp.exp)(x)
    print("exp       vjp(G) == G*exp(x)   :", close(vjp(G), G * onp.exp(x)))
    vjp, _ = make_vjp(anp.sin)(x)
    print("sin       vjp(G) == G*cos(x)   :", close(vjp(G), G * onp.cos(x)))

    vjp, ans = make_vjp(anp.sum)(x)
    g_x = vjp(2.5)
    assert g_x.shape == (2, 3) and onp.all(g_x == 2.5)
    print("sum       ans shape", onp.shape(ans), "-> vjp(2.5) shape", g_x.shape)
    vjp, ans = make_vjp(lambda a: anp.sum(a, axis=1))(x)
    g_row = onp.array([10.0, 20.0])
    g_x = vjp(g_row)
    assert close(g_x, onp.array([[10.0] * 3, [20.0] * 3])) == "OK"
    print("sum(axis=1) ans shape", ans.shape, "-> vjp shape", g_x.shape, "rows", g_x[:, 0].tolist())

    A = onp.arange(6.0).reshape(2, 3)
    B = onp.arange(12.0).reshape(3, 4) / 10.0
    Gd = onp.array([[1.0, 0.0, -1.0, 2.0], [0.5, 1.0, 0.0, -2.0]])
    ans = anp.dot(A, B)
    # 手动模仿 VJPNode.__init__：vjpmaker(parent_argnums, value, args, kwargs)
    vjp = primitive_vjps[anp.dot]((0, 1), ans, (A, B), {})
    gA, gB = vjp(Gd)
    assert gA.shape == A.shape and gB.shape == B.shape
    print("dot       vjp_A(G) == G @ B.T  :", close(gA, Gd @ B.T), gA.shape)
    print("dot       vjp_B(G) == A.T @ G  :", close(gB, A.T @ Gd), gB.shape)


@contextmanager
def spying(log, watched, key=None):
    """临时给 primitive_vjps 里的 vjpmaker 套一层记录；退出时还原。"""
    saved = {name: primitive_vjps[f] for name, f in watched.items()}

    def spy(name, maker):
        def logged_maker(argnums, ans, args, kwargs):
            log.append(f"maker {name} argnums={argnums} ans_shape={onp.shape(ans)}")
            if key:
                record.append(key, {"stage": "maker", "primitive": name, "argnums": argnums,
                                    "ans_shape": onp.shape(ans)})
            vjp = maker(argnums, ans, args, kwargs)

            def logged_vjp(g):
                log.append(f"vjp   {name} g_shape={onp.shape(g)}")
                if key:
                    record.append(key, {"stage": "vjp", "primitive": name, "g_shape": onp.shape(g)})
                return vjp(g)

            return logged_vjp

        return logged_maker

    try:
        for name, fun in watched.items():
            primitive_vjps[fun] = spy(name, saved[name])
        yield
    finally:
        primitive_vjps.update({watched[n]: m for n, m in saved.items()})


def check_routing():
    """ArrayBox 的运算符把调用转给 anp 里的 primitive。"""
    log = []
    with spying(log, {"multiply": anp.multiply, "sum": anp.sum, "exp": anp.exp}):
        grad(lambda x: (x * 2.0).sum())(onp.ones(3))   # ArrayBox.__mul__
        grad(lambda x: (2.0 * x).sum())(onp.ones(3))   # ArrayBox.__rmul__
        grad(lambda x: onp.exp(x).sum())(onp.ones(3))  # 原生 numpy.exp -> __array_ufunc__
    makers = [s.split(" ans_shape")[0] for s in log if s.startswith("maker")]
    for line in makers:
        print(line)
    assert makers == ["maker multiply argnums=(0,)", "maker sum argnums=(0,)",
                      "maker multiply argnums=(1,)", "maker sum argnums=(0,)",
                      "maker exp argnums=(0,)", "maker sum argnums=(0,)"]


def check_staging():
    """观察 maker（前向）与它返回的 vjp（反向）各在何时被调用。"""
    log = []

    def f(x):
        out = anp.sum(anp.exp(x) * anp.sin(x))
        log.append("---- forward finished ----")
        return out

    x = onp.array([0.1, 0.2, 0.3])
    watched = {"exp": anp.exp, "sin": anp.sin, "multiply": anp.multiply, "sum": anp.sum}
    with spying(log, watched, key="staging"), record.capture() as cap:
        g = grad(f)(x)
    end = cap.nodes[-1]["obj"]  # the sum node: created last
    kept = {}
    for n in cap.nodes[1:]:  # what each node's vjp keeps: autograd's functions reachable from it, with free variables
        kept[n["fun"]] = [c for c in closure_functions(n["obj"].vjp) if (c["module"] or "").startswith("autograd")]
        record.set(f"closures.{n['fun']}", kept[n["fun"]])
    innermost = {fun: [c["freevars"] for c in fs if c["module"] != "autograd.core"] for fun, fs in kept.items()}
    assert innermost["exp"] == [("ans",)] and innermost["sin"] == [("x",)]  # exp keeps its output, sin its input
    assert innermost["multiply"] == [("f", "target_meta"), ("y",), ("f", "target_meta"), ("x",)]
    assert innermost["sum"] == [("axis", "dtype", "keepdims", "shape")]
    record.graph("graph", cap, end, labels={n["obj"]: {"exp": "E", "sin": "S", "multiply": "M", "sum": "Σ"}
                                            .get(n["fun"], "X") for n in cap.nodes})
    cap.release()
    record.set("grad", g)
    for line in log:
        print(line)
    cut = log.index("---- forward finished ----")
    assert all(s.startswith("maker") for s in log[:cut])
    assert all(s.startswith("vjp") for s in log[cut + 1:])
    assert len(log[cut + 1:]) == 4
    assert [s.split()[1] for s in log[:cut]] == ["exp", "sin", "multiply", "sum"]
    assert [s.split()[1] for s in log[cut + 1:cut + 3]] == ["sum", "multiply"]
    assert "argnums=(0, 1)" in log[2]
    assert close(g, onp.exp(x) * (onp.sin(x) + onp.cos(x))) == "OK"
    print("grad == exp(x)*(sin(x)+cos(x)):", "OK")


def check_closures():
    """maker 在前向返回的闭包里到底留住了哪些变量。"""
    x = onp.ones((2, 3))
    sum_vjp = numpy_vjps.grad_np_sum(6.0, x)
    dot_vjp = numpy_vjps.dot_vjp_0(None, x, x.T)
    print("grad_np_sum -> vjp free vars:", sum_vjp.__code__.co_freevars)
    print("dot_vjp_0   -> vjp free vars:", dot_vjp.__code__.co_freevars)
    assert sum_vjp.__code__.co_freevars == ("axis", "dtype", "keepdims", "shape")
    assert dot_vjp.__code__.co_freevars == ("A", "A_meta", "B", "B_meta")
    record.set("freevars", {"grad_np_sum": sum_vjp.__code__.co_freevars, "dot_vjp_0": dot_vjp.__code__.co_freevars})


def main():
    announce()
    print("== 1. wrap_namespace ==")
    check_wrapping()
    print("== 2. 局部规则 vs 手推公式 ==")
    check_rules()
    print("== 3. ArrayBox 运算符的去向 ==")
    check_routing()
    print("== 4. staged closure 的调用时刻 ==")
    check_staging()
    check_closures()


def self_test_cases():
    """What the lesson's self-test asks about, recorded (nothing printed)."""
    # 1. one NumPy object, one primitive: NumPy 2's alias acos is arccos, whose rule autograd registers
    rules_text = inspect.getsource(numpy_vjps)
    assert anp.acos is anp.arccos and "anp.acos" not in rules_text and "defvjp(anp.arccos" in rules_text
    g = grad(anp.acos)(0.5)
    assert onp.isclose(g, -1 / onp.sqrt(1 - 0.25))
    separate = primitive(onp.arccos)  # what a second, separate wrapping of the same ufunc would be
    try:
        grad(separate)(0.5)
    except NotImplementedError as exc:
        separate_error = str(exc)
    record.set("self_test.aliases", {"acos_is_arccos": anp.acos is anp.arccos, "conj_is_conjugate":
                                     anp.conj is anp.conjugate, "acos_grad": g, "separate_error": separate_error})

    # 2. which of multiply's two per-argument makers run for x * 2.0 and for 2.0 * x
    vjp_argnums = primitive_vjps[anp.multiply]
    vjps_dict = vjp_argnums.__closure__[vjp_argnums.__code__.co_freevars.index("vjps_dict")].cell_contents
    saved, calls = dict(vjps_dict), []

    def counted(argnum, maker):
        def maker_called(*args, **kwargs):
            calls.append(argnum)
            return maker(*args, **kwargs)
        return maker_called

    makers = {}
    try:
        for argnum, maker in saved.items():
            vjps_dict[argnum] = counted(argnum, maker)
        for label, f in (("x_times_2", lambda x: x * 2.0), ("two_times_x", lambda x: 2.0 * x)):
            calls.clear()
            assert grad(f)(3.0) == 2.0
            makers[label] = tuple(calls)  # the argnums the rule was built for: parent_argnums, a tuple
    finally:
        vjps_dict.update(saved)
    assert makers == {"x_times_2": (0,), "two_times_x": (1,)}
    record.set("self_test.multiply_makers", makers)

    # 3. exp's rule written with anp.exp(x) instead of ans: the same numbers, one more exp per backward pass
    x = onp.array([0.1, 0.2, 0.3])
    f = lambda x: anp.sum(anp.exp(x) * x)
    exp_calls, saved_exp = [], primitive_vjps[anp.exp]

    def counted_exp(v):
        exp_calls.append(1)
        return anp.exp(v)

    g_ans = grad(f)(x)
    defvjp(anp.exp, lambda ans, x: lambda g: g * counted_exp(x))
    try:
        g_x = grad(f)(x)
    finally:
        primitive_vjps[anp.exp] = saved_exp
    assert onp.allclose(g_x, g_ans) and len(exp_calls) == 1
    record.set("self_test.exp_rule", {"with_ans": g_ans, "with_exp_x": g_x, "extra_exp_calls": len(exp_calls)})

    # 5. dot of a (2, 3) and a (3, 4) matrix: the shapes of G, of A's and of B's cotangent
    A = onp.arange(6.0).reshape(2, 3)
    B = onp.arange(12.0).reshape(3, 4) / 10.0
    G = onp.ones((2, 4))
    gA, gB = primitive_vjps[anp.dot]((0, 1), anp.dot(A, B), (A, B), {})(G)
    assert onp.allclose(gA, G @ B.T) and onp.allclose(gB, A.T @ G)
    record.set("self_test.dot", {"G": G.shape, "A_bar": gA.shape, "B_bar": gB.shape,
                                 "A_ndim": anp.metadata(A)[1], "B_ndim": anp.metadata(B)[1]})

    # 6. a rule for argument 0 only, a derivative with respect to argument 1: forward, in vjp_argnums
    @primitive
    def scaled(v, s):
        return v * s

    defvjp(scaled, lambda ans, v, s: lambda g: g * s)
    try:
        make_vjp(scaled, 1)(2.0, 3.0)  # builds the node; no backward pass is asked for
    except NotImplementedError as exc:
        tb = exc.__traceback__
        while tb.tb_next is not None:
            tb = tb.tb_next
        only_zero = {"error": str(exc), "raised_in": tb.tb_frame.f_code.co_qualname}
    assert only_zero["raised_in"] == "defvjp.<locals>.vjp_argnums"
    record.set("self_test.only_argnum_0", only_zero)


if __name__ == "__main__":
    main()
    self_test_cases()
