"""Lesson 11: jacobian, hessian, HVPs and friends against hand formulas, with pass counts."""

import autograd.core as core
import autograd.numpy as np
from autograd import elementwise_grad, grad, grad_and_aux, hessian, jacobian, make_vjp, value_and_grad
from autograd.builtins import tuple as atuple
from autograd.core import defvjp, make_vjp as core_make_vjp, vspace
from autograd.differential_operators import (
    hessian_tensor_product,
    make_ggnvp,
    make_hvp,
    make_jvp_reversemode,
    tensor_jacobian_product,
)
from autograd.extend import primitive
from autograd.tracer import trace_stack

from _provenance import announce
from _record import record

X = np.array([2.0, 1.0, -1.0])
V = np.array([1.0, 0.0, 2.0])
U = np.array([3.0, -1.0])
calls = {"trace": 0, "backward_pass": 0}


def f(x):  # scalar: x0^2 x1 + x1 x2^3
    return x[0] ** 2 * x[1] + x[1] * x[2] ** 3


def F(x):  # R^3 -> R^2: [x0 x1, x1 + x2^2]
    return np.array([x[0] * x[1], x[1] + x[2] ** 2])


def f_aux(x):  # (value to differentiate, auxiliary output)
    return f(x), np.sum(x**2)


def count(label, thunk, key=None):
    """Run thunk with calls reset; print and return (result, traces, backward passes).
    With ``key``, record the timeline of trace openings/closings and backward passes."""
    calls.update(trace=0, backward_pass=0, key=key)
    out = thunk()
    calls["key"] = None
    print(f"  {label:<34} trace={calls['trace']}  backward_pass={calls['backward_pass']}")
    return out, calls["trace"], calls["backward_pass"]


def fmt(a):
    a = np.asarray(a, dtype=float)
    return np.array2string(a, formatter={"float_kind": lambda v: f"{v:.4f}"})


def main():
    announce()
    x0, x1, x2 = X
    grad_hand = np.array([2 * x0 * x1, x0**2 + x2**3, 3 * x1 * x2**2])
    H_hand = np.array(
        [[2 * x1, 2 * x0, 0.0], [2 * x0, 0.0, 3 * x2**2], [0.0, 3 * x2**2, 6 * x1 * x2]]
    )
    J_hand = np.array([[x1, x0, 0.0], [0.0, 1.0, 2 * x2]])
    print("手算 grad f =", fmt(grad_hand), " Hv =", fmt(H_hand @ V))
    print("手算 H =\n" + fmt(H_hand))
    print("手算 J_F =\n" + fmt(J_hand))

    orig_trace, orig_backward = core.trace, core.backward_pass

    def counting_trace(start_node, fun, x):
        calls["trace"] += 1
        if calls.get("key"):
            record.append(f"timeline.{calls['key']}", {"event": "trace opens", "trace": trace_stack.top + 1})
        out = orig_trace(start_node, fun, x)
        if calls.get("key"):
            record.append(f"timeline.{calls['key']}", {"event": "trace closed", "trace": trace_stack.top + 1,
                                                       "output_shape": np.shape(out[0])})
        return out

    def counting_backward(g, end_node):
        calls["backward_pass"] += 1
        if calls.get("key"):
            record.append(f"timeline.{calls['key']}", {"event": "backward_pass", "top": trace_stack.top,
                                                       "total": calls["backward_pass"]})
        return orig_backward(g, end_node)

    core.trace, core.backward_pass = counting_trace, counting_backward
    try:
        print("各算子的前向 trace 次数与 backward_pass 次数:")
        g, *c_grad = count("grad(f)(x)", lambda: grad(f)(X))
        (val, g2), *c_vg = count("value_and_grad(f)(x)", lambda: value_and_grad(f)(X))
        (g3, aux), *c_aux = count("grad_and_aux(f_aux)(x)", lambda: grad_and_aux(f_aux)(X))
        J, *c_jac = count("jacobian(F)(x)   [m=2]", lambda: jacobian(F)(X), "jacobian")
        eg, *c_eg = count("elementwise_grad(F)(x)", lambda: elementwise_grad(F)(X))
        tjp = tensor_jacobian_product(F)
        uJ, *c_tjp = count("tensor_jacobian_product(F)(x, u)", lambda: tjp(X, U))
        H, *c_hess = count("hessian(f)(x)    [n=3]", lambda: hessian(f)(X), "hessian")
        htp = hessian_tensor_product(f)
        Hv, *c_htp = count("hessian_tensor_product(f)(x, v)", lambda: htp(X, V))
        (hvp, g4), *c_mk = count("make_hvp(f)(x)   (build once)", lambda: make_hvp(f)(X))
        Hv2, *c_hvp = count("  hvp(v)         (each call)", lambda: hvp(V))
        ggnvp, *c_gb = count("make_ggnvp(F)(x) (build once)", lambda: make_ggnvp(F)(X))
        Gv, *c_gv = count("  ggnvp(v)       (each call)", lambda: ggnvp(V))

        print("jacobian 的 backward_pass 次数随输出大小 m 变化:")
        W = np.arange(1.0, 22.0).reshape(7, 3)
        for m in [1, 2, 4, 7]:

            def linear(x):
                return np.dot(W[:m], x)

            Jm, n_trace, n_back = count(f"jacobian(W[:{m}] @ x)", lambda: jacobian(linear)(X))
            assert Jm.shape == (m, 3) and np.allclose(Jm, W[:m])
            assert n_trace == 1 and n_back == m
    finally:
        core.trace, core.backward_pass = orig_trace, orig_backward

    print("grad =", fmt(g), " value =", f"{float(val):.4f}", " aux =", f"{float(aux):.4f}")
    print("jacobian(F) =\n" + fmt(J))
    print("elementwise_grad(F) =", fmt(eg), " = J 的列和", fmt(J_hand.sum(axis=0)))
    print("u^T J =", fmt(uJ))
    print("hessian(f) =\n" + fmt(H))
    print("hessian_tensor_product =", fmt(Hv), " make_hvp =", fmt(Hv2))
    print("ggnvp(v) =", fmt(Gv), " = J^T J v", fmt(J_hand.T @ J_hand @ V))
    e = np.array([0.5, 1.0, 2.0])
    d = elementwise_grad(lambda x: np.sin(x) * x)(e)
    print("elementwise_grad(sin(x)*x) =", fmt(d), " 手算", fmt(np.cos(e) * e + np.sin(e)))

    for got in (g, g2, g3, g4):
        assert np.allclose(got, grad_hand)
    assert float(val) == f(X) and float(aux) == float(np.sum(X**2))
    assert np.allclose(J, J_hand) and np.allclose(uJ, U @ J_hand)
    assert np.allclose(eg, J_hand.sum(axis=0))
    assert np.allclose(H, H_hand) and np.allclose(H, H.T)
    assert np.allclose(Hv, H_hand @ V) and np.allclose(Hv2, H_hand @ V)
    assert np.allclose(Gv, J_hand.T @ J_hand @ V)
    Jv = J @ V  # the J_F v that the lesson's Gauss-Newton product J_F^T (J_F v) goes through
    assert np.allclose(Jv, J_hand @ V) and Jv.tolist() == [1.0, -4.0]  # lesson 11 states (1, -4)
    record.set("jacobian", {"x": X, "J": J, "uJ": uJ, "column_sums": eg, "Jv": Jv, "ggnvp": Gv})
    record.set("hessian", {"H": H, "Hv": Hv})
    record.set("counts", {"jacobian": tuple(c_jac), "hessian": tuple(c_hess),  # (traces, backward passes)
                          "hessian_tensor_product": tuple(c_htp), "make_hvp": tuple(c_mk), "hvp": tuple(c_hvp)})
    assert np.allclose(d, np.cos(e) * e + np.sin(e))
    for c in (c_grad, c_vg, c_aux, c_eg, c_tjp):
        assert c == [1, 1]
    assert c_jac == [1, 2] and c_hess == [2, 1 + 3] and c_htp == [2, 2]
    assert c_mk == [2, 1] and c_hvp == [0, 1]
    assert c_gb == [4, 2] and c_gv == [0, 3]


def silent_counts(thunk):
    """thunk() with core.trace and core.backward_pass counted (nothing printed)."""
    n = {"trace": 0, "backward_pass": 0, "stack_at": []}
    real_trace, real_backward, real_stack = core.trace, core.backward_pass, np.stack

    def trace(start_node, fun, x):
        n["trace"] += 1
        return real_trace(start_node, fun, x)

    def backward_pass(g, end_node):
        n["backward_pass"] += 1
        return real_backward(g, end_node)

    def stack(arrays, *args, **kwargs):  # jacobian calls np.stack(grads): how many passes had run by then?
        n["stack_at"].append(n["backward_pass"])
        return real_stack(arrays, *args, **kwargs)

    core.trace, core.backward_pass, np.stack = trace, backward_pass, stack
    try:
        out = thunk()
    finally:
        core.trace, core.backward_pass, np.stack = real_trace, real_backward, real_stack
    return out, n


def self_test_cases():
    """What the lesson's self-test asks about, recorded (nothing printed)."""
    # 1. a (2, 3) output: map is lazy, the six backward passes run inside np.stack
    out23 = lambda x: np.outer(np.array([1.0, 2.0]), x * x)
    J23, n = silent_counts(lambda: jacobian(out23)(X))
    assert n["stack_at"] == [0] and n["backward_pass"] == 6 and J23.shape == (2, 3, 3)
    record.set("self_test.jacobian_2x3", {"passes_before_stack": n["stack_at"][0], "passes": n["backward_pass"],
                                          "shape": J23.shape})

    # 2. elementwise_grad(grad(f)) is H @ 1, the diagonal of H only when H is diagonal
    H = hessian(f)(X)
    row_sums = elementwise_grad(grad(f))(X)
    separable = lambda x: np.sum(np.sin(x) * x)
    sep_diag, sep_eg = np.diag(hessian(separable)(X)), elementwise_grad(grad(separable))(X)
    assert np.allclose(row_sums, H @ np.ones(3)) and not np.allclose(row_sums, np.diag(H))
    assert np.allclose(sep_eg, sep_diag)
    record.set("self_test.diagonal", {"H_ones": row_sums, "diag": np.diag(H),
                                      "separable_eg": sep_eg, "separable_diag": sep_diag})

    # 3. grad_and_aux's seed has the output's structure; aux seeded with ones adds its own gradient
    vjp, (ans, aux) = core_make_vjp(lambda x: atuple(f_aux(x)), X)
    with_zero = vjp((vspace(ans).ones(), vspace(aux).zeros()))
    with_one = vjp((vspace(ans).ones(), vspace(aux).ones()))
    try:
        vjp(vspace(ans).ones())  # a seed for the first output alone
    except IndexError as exc:  # the tuple node's VJP indexes the seed: g[0], g[1]
        alone = type(exc).__name__
    assert np.allclose(with_zero, grad(f)(X)) and np.allclose(with_one, grad(f)(X) + 2 * X)
    record.set("self_test.aux_seed", {"zeros": with_zero, "ones": with_one, "seed_alone": alone})

    # 4. make_jvp_reversemode traces vjp at u = 0; any other point gives the same J v, unless vjp is not linear
    vjp_F, y = core_make_vjp(F, X)
    at_zero = make_jvp_reversemode(F)(X)(V)
    at_other = core_make_vjp(vjp_F, np.array([5.0, -3.0]))[0](V)

    @primitive
    def double(x):
        return 2.0 * x

    defvjp(double, lambda ans, x: lambda g: g * g)  # a wrong, non-linear "VJP"
    vjp_d, _ = core_make_vjp(double, 1.0)
    nonlinear = {"at_zero": core_make_vjp(vjp_d, 0.0)[0](1.0), "at_one": core_make_vjp(vjp_d, 1.0)[0](1.0)}
    assert np.allclose(at_zero, J_F_at(X) @ V) and np.allclose(at_other, at_zero)
    assert nonlinear == {"at_zero": 0.0, "at_one": 2.0}
    record.set("self_test.reversemode", {"at_zero": at_zero, "at_other": at_other, "nonlinear": nonlinear})

    # 5. k HVPs at one point: make_hvp builds once; hessian_tensor_product starts over every time
    k = 4
    (hvp, _), build = silent_counts(lambda: make_hvp(f)(X))
    _, each = silent_counts(lambda: [hvp(V) for _ in range(k)])
    htp = hessian_tensor_product(f)
    _, repeated = silent_counts(lambda: [htp(X, V) for _ in range(k)])
    make_total = [build["trace"] + each["trace"], build["backward_pass"] + each["backward_pass"]]
    htp_total = [repeated["trace"], repeated["backward_pass"]]
    assert make_total == [2, 1 + k] and htp_total == [2 * k, 2 * k]
    record.set("self_test.k_hvps", {"k": k, "make_hvp": tuple(make_total), "hessian_tensor_product": tuple(htp_total)})

    # 6. make_hvp is a VJP of the gradient map: (dG/dx)^T v; for a field with a non-symmetric Jacobian it differs from J v
    G = lambda x: np.array([x[0] * x[1], x[0]])  # not the gradient of any function
    x2, v2 = np.array([2.0, 1.0]), np.array([1.0, 0.0])
    JG = jacobian(G)(x2)
    vjp_G = make_vjp(G)(x2)[0](v2)
    assert np.allclose(vjp_G, JG.T @ v2) and not np.allclose(vjp_G, JG @ v2)
    assert np.allclose(make_hvp(f)(X)[0](V), hessian(f)(X).T @ V)

    # make_hvp itself on a primitive whose registered gradient is G: its "Hessian" is JG
    @primitive
    def tilted(x):
        return x[0] * x[1]

    defvjp(tilted, lambda ans, x: lambda g: g * G(x))
    H_t = hessian(tilted)(x2)
    hvp_t = make_hvp(tilted)(x2)[0](v2)
    assert np.allclose(H_t, JG)
    assert np.allclose(hvp_t, H_t.T @ v2) and not np.allclose(hvp_t, H_t @ v2)
    record.set("self_test.transpose", {"J": JG, "vjp": vjp_G, "Jv": JG @ v2, "hvp": hvp_t, "Hv": H_t @ v2})

    # 7. make_ggnvp with a cross-entropy g: built the same way, still three backward passes per call
    def cross_entropy(y):  # -log softmax(y)[0]
        return np.log(np.sum(np.exp(y))) - y[0]

    ggnvp_ce, build_ce = silent_counts(lambda: make_ggnvp(F, g=cross_entropy)(X))
    Gv_ce, each_ce = silent_counts(lambda: ggnvp_ce(V))
    J = J_F_at(X)
    expected = J.T @ hessian(cross_entropy)(F(X)) @ J @ V
    assert np.allclose(Gv_ce, expected)
    assert [build_ce["trace"], build_ce["backward_pass"]] == [4, 2]
    assert [each_ce["trace"], each_ce["backward_pass"]] == [0, 3]
    record.set("self_test.ggnvp_ce", {"build": (build_ce["trace"], build_ce["backward_pass"]),
                                      "each": (each_ce["trace"], each_ce["backward_pass"]), "Gv": Gv_ce})


def J_F_at(x):
    return np.array([[x[1], x[0], 0.0], [0.0, 1.0, 2 * x[2]]])


if __name__ == "__main__":
    main()
    self_test_cases()
