"""Lesson 12: finite differences, the adjoint identity and check_grads."""

import inspect
import traceback

import numpy as onp

import autograd.numpy as np
import autograd.test_util as tu
from autograd.core import make_jvp, make_vjp
from autograd.extend import defjvp, defvjp, primitive
from autograd.test_util import check_grads, make_numerical_jvp
from autograd.wrap_util import get_name

from _provenance import announce
from _record import record


def f(x):  # f(x) = e^x sin x
    return np.exp(x) * np.sin(x)


def df(x):  # hand derivative: e^x (sin x + cos x)
    return onp.exp(x) * (onp.sin(x) + onp.cos(x))


def eps_table(x=1.0):
    print("eps      forward-err  central-err")
    rows = {}
    for k in range(1, 14):
        eps = 10.0**-k
        fwd = (f(x + eps) - f(x)) / eps
        cen = (f(x + eps / 2) - f(x - eps / 2)) / eps  # autograd's convention
        rows[k] = (abs(fwd - df(x)), abs(cen - df(x)))
        print(f"1e-{k:02d}    {rows[k][0]:.1e}      {rows[k][1]:.1e}")
    return rows


def predicted_best_eps(x=1.0):
    u = onp.finfo(float).eps / 2  # unit roundoff 2^-53
    fx = abs(f(x))
    f2 = abs(2 * onp.exp(x) * onp.cos(x))  # f''
    f3 = abs(2 * onp.exp(x) * (onp.cos(x) - onp.sin(x)))  # f'''
    print(f"unit roundoff u = 2^-53 = {u:.1e}")
    return 2 * onp.sqrt(u * fx / f2), (24 * u * fx / f3) ** (1 / 3)


A = onp.array([[1.0, -2.0, 0.5], [0.3, 0.8, -1.0]])


def model(x):  # R^3 -> R^2
    return np.tanh(np.dot(A, x))


def adjoint_identity():
    rng = onp.random.default_rng(0)
    x, v, w = rng.standard_normal(3), rng.standard_normal(3), rng.standard_normal(2)
    Jv = make_jvp(model, x)(v)[1]
    wJ = make_vjp(model, x)[0](w)
    J = (1 - onp.tanh(A @ x) ** 2)[:, None] * A  # hand Jacobian: diag(1 - tanh^2) A
    assert onp.allclose(Jv, J @ v) and onp.allclose(wJ, w @ J)
    lhs, rhs = float(onp.dot(w, Jv)), float(onp.dot(wJ, v))
    num = float(onp.dot(w, make_numerical_jvp(model, x)(v)))
    print(f"<w, Jv>     = {lhs:.12f}")
    print(f"<w^T J, v>  = {rhs:.12f}")
    print(f"<w, Jv_num> = {num:.12f}   (numerical JVP, EPS = {tu.EPS:.0e})")
    assert abs(lhs - rhs) < 1e-12
    assert tu.scalar_close(num, rhs)


def logged_check_grads(fun, x, order, key=None):
    """Run check_grads, recording every check_jvp / check_vjp it reaches.
    With ``key``, also record which kinds of nodes on which traces each check built."""
    calls, real_jvp, real_vjp = [], tu.check_jvp, tu.check_vjp

    def spy(kind, real):
        def wrapper(g, arg):
            what = f"tuple of {len(arg)}" if isinstance(arg, tuple) else f"shape {onp.shape(arg)}"
            calls.append(f"{kind}({get_name(g)}, {what})")
            if not key:
                return real(g, arg)
            with record.capture() as cap:
                out = real(g, arg)
            record.append(key, {"call": calls[-1],
                                "nodes": sorted({f"{n['type']}@trace{n['trace']}" for n in cap.nodes
                                                 if n["kind"] == "primitive"}),
                                "primitives": sorted({n["fun"] for n in cap.nodes if n["fun"]})})
            cap.release()
            return out

        return wrapper

    tu.check_jvp, tu.check_vjp = spy("check_jvp", real_jvp), spy("check_vjp", real_vjp)
    try:
        check_grads(fun, modes=["fwd", "rev"], order=order)(x)
    finally:
        tu.check_jvp, tu.check_vjp = real_jvp, real_vjp
    return calls


@primitive
def bad_sin(x):
    return onp.sin(x)


defjvp(bad_sin, lambda g, ans, x: g * np.cos(x))  # correct JVP
defvjp(bad_sin, lambda ans, x: lambda g: g * np.sin(x))  # WRONG: should be cos


def main():
    announce()
    print("== 1. finite-difference error vs eps (f = e^x sin x, x = 1) ==")
    rows = eps_table()
    assert rows[6][1] < 1e-3 * rows[1][1]  # eps = 1e-6 is far better than 1e-1
    assert rows[13][1] > 100 * rows[6][1]  # tiny eps: rounding error dominates
    assert 9 < rows[1][0] / rows[2][0] < 11  # forward: truncation ~ eps
    assert 90 < rows[1][1] / rows[2][1] < 110  # central: truncation ~ eps^2
    assert rows[6][1] < 1e-2 * tu.TOL  # at autograd's EPS, far below TOL
    best_f = min(rows, key=lambda k: rows[k][0])
    best_c = min(rows, key=lambda k: rows[k][1])
    pred_f, pred_c = predicted_best_eps()  # minimisers of the error models
    print(f"best eps in table: forward 1e-{best_f:02d}, central 1e-{best_c:02d}")
    print(f"theory:            forward {pred_f:.0e}, central {pred_c:.0e}")
    assert abs(onp.log10(pred_f) + best_f) < 1 and abs(onp.log10(pred_c) + best_c) < 1
    assert rows[best_c][1] < rows[best_f][0]
    # the table as the lesson's log-log figure draws it: error against eps, autograd's EPS marked
    record.set("eps_errors", {
        "x": [10.0**-k for k in rows],
        "series": [{"name": "前向差分", "y": [rows[k][0] for k in rows]},
                   {"name": "中心差分（autograd 的写法）", "y": [rows[k][1] for k in rows]}],
        "marks": [{"x": tu.EPS, "name": f"EPS = {tu.EPS:.0e}"}],
    })
    record.set("eps_best", {"forward": 10.0**-best_f, "central": 10.0**-best_c,
                            "predicted_forward": pred_f, "predicted_central": pred_c})
    same = make_numerical_jvp(f, 1.0)(1.0) - (f(1.0 + 5e-7) - f(1.0 - 5e-7)) / 1e-6
    assert abs(same) < 1e-12
    print("make_numerical_jvp(f, 1.0)(1.0) = central difference with eps = 1e-6")

    print("== 2. adjoint identity <w, Jv> = <w^T J, v> (seed 0) ==")
    adjoint_identity()

    print("== 3. check_grads(model, modes=['fwd','rev'], order=2) ==")
    onp.random.seed(0)  # vspace(x).randn() draws from numpy's global RNG
    x0 = onp.array([0.1, -0.4, 0.7])
    calls = logged_check_grads(model, x0, order=2, key="order2_checks")
    for c in calls:
        print("  " + c)
    assert len(calls) == 6
    record.set("order2_calls", calls)
    n3 = len(logged_check_grads(model, x0, order=3))
    print(f"passed; order=3 also passes and runs {n3} checks")
    assert n3 == 14
    record.set("order3_count", n3)

    print("== 4. a deliberately wrong VJP ==")
    onp.random.seed(0)
    check_grads(bad_sin, modes=["fwd"])(0.5)
    print("modes=['fwd']: passed (the JVP rule is right)")
    try:
        check_grads(bad_sin, modes=["rev"])(0.5)
    except AssertionError as e:
        first = str(e).splitlines()[0]
        print("modes=['rev']: AssertionError:", first.split(" with arg")[0])
        assert first.startswith("Derivative (VJP) check of bad_sin failed")
    else:
        raise SystemExit("the wrong VJP was not caught")


def failure(run):
    """Run `run()`; the exception's type, message, and the test_util line it passed through last."""
    try:
        run()
    except Exception as exc:  # noqa: BLE001 -- recorded, then compared by the callers' asserts
        frames = [fr for fr in traceback.extract_tb(exc.__traceback__) if fr.name.startswith("check_")]
        message = str(exc).splitlines()[0] if str(exc) else ""
        return {"error": type(exc).__name__, "message": message,
                "in": frames[-1].name if frames else None, "line": frames[-1].line if frames else None}
    return {"error": None}


def self_test_cases():
    """What the lesson's self-test asks about, recorded (nothing printed)."""
    x1 = 1.0
    # 1. a one-sided three-point formula of second order: (-3 f(x) + 4 f(x+e) - f(x+2e)) / (2e)
    one_sided = {}
    for k in (2, 3):
        e = 10.0**-k
        d = (-3 * f(x1) + 4 * f(x1 + e) - f(x1 + 2 * e)) / (2 * e)
        c = (f(x1 + e / 2) - f(x1 - e / 2)) / e
        one_sided[k] = {"one_sided": abs(d - df(x1)), "central": abs(c - df(x1))}
    ratio = one_sided[2]["one_sided"] / one_sided[3]["one_sided"]
    assert 90 < ratio < 110 and one_sided[2]["one_sided"] > one_sided[2]["central"]
    f3 = 2 * onp.exp(x1) * (onp.cos(x1) - onp.sin(x1))
    assert abs(one_sided[2]["one_sided"] / abs(f3 * 1e-4 / 3) - 1) < 0.05  # error ~ e^2 |f'''| / 3
    record.set("self_test.one_sided", {"at_1e-2": one_sided[2], "at_1e-3": one_sided[3], "ratio": ratio})

    # 2. the same central difference in float32
    x32, exact = onp.float32(x1), df(x1)
    errors = {}
    for k in range(1, 9):
        e = onp.float32(10.0**-k)
        c = (f(x32 + e / 2) - f(x32 - e / 2)) / e
        assert type(c) is onp.float32
        errors[k] = abs(float(c) - exact)
    u32 = onp.finfo(onp.float32).eps / 2  # 2^-24
    predicted = (24 * u32 * abs(f(x1)) / abs(f3)) ** (1 / 3)
    best = min(errors, key=errors.get)
    assert best in (2, 3) and errors[6] > 1e5 * tu.TOL  # at EPS, five orders of magnitude above TOL
    record.set("self_test.float32", {"best_k": best, "predicted": float(predicted), "error_at_EPS": errors[6],
                                     "best_error": errors[best]})

    # 3. check_vjp with x_v and y_v drawn from each other's space
    src = inspect.getsource(tu.check_vjp)
    draw = "x_v, y_v = x_vs.randn(), y_vs.randn()"
    assert src.count(draw) == 1
    namespace = dict(vars(tu))
    variant = src.replace(draw, "x_v, y_v = y_vs.randn(), x_vs.randn()")
    exec(compile(variant, "<check_vjp, swapped>", "exec"), namespace)
    swapped = failure(lambda: namespace["check_vjp"](model, onp.array([0.1, -0.4, 0.7])))
    try:
        namespace["check_vjp"](model, onp.array([0.1, -0.4, 0.7]))
    except ValueError as exc:
        here = [fr for fr in traceback.extract_tb(exc.__traceback__) if fr.filename == "<check_vjp, swapped>"]
        swapped["line"] = variant.splitlines()[here[-1].lineno - 1].strip()
    assert swapped["error"] == "ValueError" and swapped["line"].startswith("vjp_y = ")
    record.set("self_test.swapped", swapped)

    # 4. a VJP that forgot unbroadcast: the vspace assertion, before any number is compared
    @primitive
    def add_no_unbroadcast(x, y):
        return x + y

    defvjp(add_no_unbroadcast, None, lambda ans, x, y: lambda g: g)
    X = onp.arange(6.0).reshape(2, 3)
    too_big = failure(lambda: tu.check_vjp(lambda b: add_no_unbroadcast(X, b), 0.5))
    assert too_big == {"error": "AssertionError", "message": "", "in": "check_vjp",
                       "line": "assert vspace(vjp_y) == x_vs"}
    record.set("self_test.too_big", too_big)

    # 5. check_grads(f, ["rev"]): the list becomes argnum
    positional = failure(lambda: check_grads(lambda x: x**2, ["rev"])(onp.array([1.0, 2.0])))
    assert positional["error"] == "TypeError"
    record.set("self_test.positional_modes", positional["message"])

    # 7. only "rev": one check per order
    onp.random.seed(0)
    calls, real_jvp, real_vjp = [], tu.check_jvp, tu.check_vjp
    tu.check_jvp = lambda g, a: calls.append("jvp") or real_jvp(g, a)
    tu.check_vjp = lambda g, a: calls.append("vjp") or real_vjp(g, a)
    rev_only = {}
    try:
        for order in (1, 2, 3, 4):
            calls.clear()
            check_grads(model, modes=["rev"], order=order)(onp.array([0.1, -0.4, 0.7]))
            rev_only[order] = len(calls)
    finally:
        tu.check_jvp, tu.check_vjp = real_jvp, real_vjp
    assert rev_only == {1: 1, 2: 2, 3: 3, 4: 4}
    record.set("self_test.rev_only", [rev_only[k] for k in (1, 2, 3, 4)])

    # 8. a VJP off by a relative 1e-8 passes; off by 1e-4 it is caught
    outcomes = {}
    for label, factor in (("tiny", 1 + 1e-8), ("large", 1 + 1e-4)):
        sin_p = primitive(lambda x: onp.sin(x))
        defvjp(sin_p, lambda ans, x, factor=factor: lambda g: factor * g * np.cos(x))
        onp.random.seed(1)
        outcomes[label] = failure(lambda: check_grads(sin_p, modes=["rev"], order=1)(onp.array([0.3, 1.1])))["error"]
    outcomes = {label: error or "通过" for label, error in outcomes.items()}  # "passed": no exception
    assert outcomes == {"tiny": "通过", "large": "AssertionError"}
    record.set("self_test.small_error", outcomes)

    # 9. dropout-like randomness inside f: every evaluation draws a new mask
    def with_dropout(x):
        mask = onp.random.rand(*onp.shape(x)) > 0.5
        return np.sum(np.sin(x) * mask)

    fixed_mask = onp.array([True, False, True, True])
    onp.random.seed(2)
    random_mask = failure(lambda: check_grads(with_dropout, modes=["rev"], order=1)(onp.full(4, 0.5)))
    onp.random.seed(2)
    mask_as_input = failure(lambda: check_grads(lambda x: np.sum(np.sin(x) * fixed_mask), modes=["rev"],
                                                order=1)(onp.full(4, 0.5)))
    assert random_mask["error"] == "AssertionError" and mask_as_input["error"] is None
    record.set("self_test.dropout", {"random_mask": random_mask["error"], "fixed_mask": "通过"})


if __name__ == "__main__":
    main()
    self_test_cases()
