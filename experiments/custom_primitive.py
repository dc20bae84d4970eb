"""Lesson 13: from a black-box function to a verified custom primitive."""

import re
import sys
import traceback
import warnings

import numpy as onp

import autograd
import autograd.core as core
import autograd.numpy as np
from autograd import grad, hessian
from autograd.core import make_jvp, make_vjp
from autograd.extend import defjvp, defvjp, primitive
from autograd.test_util import check_grads
from autograd.tracer import isbox, trace_stack

from _provenance import announce
from _record import record


def lse_numpy(x):
    """Stable log-sum-exp written for plain NumPy (a 'black box')."""
    x = onp.asarray(x)
    m = onp.max(x)
    return m + onp.log(onp.sum(onp.exp(x - m)))


def softmax(x):  # hand formula for the gradient, plain NumPy
    x = onp.asarray(x)
    e = onp.exp(x - onp.max(x))
    return e / e.sum()


X = onp.array([1.0, 2.0, 3.0])
EVENTS = []


def kind(v):
    return f"ArrayBox(trace {v._trace})" if isbox(v) else type(v).__name__


def error_of(thunk):
    try:
        thunk()
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    raise SystemExit("expected an error")


# The functions the lesson-13 figure follows (by qualified name); every other call is left out.
FOLLOWED = {"grad", "make_vjp", "trace", "primitive.<locals>.f_wrapped", "lse_numpy", "VJPNode.__init__",
            "backward_pass", "defvjp", "translate_vjp", "defvjp_argnums"}


def followed_calls(thunk):
    """Run thunk under sys.setprofile; list (in the recorded graph's form) every call
    of a FOLLOWED function, under the nearest FOLLOWED call that was running; if an exception
    escapes, one more node for it under the followed call that raised it (the innermost followed
    frame of its traceback). Returns (exception or None, nodes)."""
    stack, nodes, node_of = [], [], {}  # node_of: frame -> id, for the traceback

    def profile(frame, event, arg):
        if event == "call":
            name = frame.f_code.co_qualname
            nid = None
            if name in FOLLOWED:
                parent = next((i for _, i in reversed(stack) if i is not None), None)
                nid = len(nodes)
                shown = name.split(".<locals>.")[-1]
                nodes.append({"id": nid, "label": shown, "kind": "call", "fun": shown,
                              "parents": [] if parent is None else [parent]})
                node_of[frame] = nid
            stack.append((frame, nid))
        elif event == "return" and stack and stack[-1][0] is frame:
            stack.pop()

    sys.setprofile(profile)
    try:
        thunk()
        error = None
    except Exception as e:
        error = e
    finally:
        sys.setprofile(None)
    if error is not None:
        tb, raiser = error.__traceback__, None
        while tb is not None:
            raiser = node_of.get(tb.tb_frame, raiser)
            tb = tb.tb_next
        nodes.append({"id": len(nodes), "label": type(error).__name__, "kind": "error", "fun": str(error),
                      "parents": [raiser]})
    return error, nodes


def main():
    announce()
    print("== 0. the black box itself ==")
    print(f"lse_numpy(X) = {lse_numpy(X):.6f}")
    g_ufunc = grad(lambda x: onp.sum(onp.exp(x)))(X)  # plain ufuncs dispatch to autograd
    assert onp.allclose(g_ufunc, onp.exp(X))
    print("grad of onp.sum(onp.exp(x)) works: ufuncs on an ArrayBox reach autograd")
    seen = []

    def probe(x):  # the first two lines of lse_numpy, recorded
        a = onp.asarray(x)
        seen.extend([a, a - onp.max(a)])
        return np.sum(x)

    grad(probe)(X)
    a, d = seen
    print(f"onp.asarray(box): dtype={a.dtype}, element type {type(a[0]).__name__}")
    print(f"a - onp.max(a): {kind(d)} whose value has dtype={d._value.dtype}")
    assert a.dtype == object and type(a[0]).__name__ == "ArrayBox"
    assert isbox(d) and d._value.dtype == object
    msg0 = error_of(lambda: grad(lse_numpy)(X))
    print("grad(lse_numpy)(X) ->", msg0)
    assert msg0.startswith("TypeError") and "ArrayBox" in msg0

    print("== 1. @primitive, no rules yet ==")
    assert primitive is autograd.tracer.primitive  # what autograd.extend exports
    assert autograd.primitive is autograd.core.primitive_with_deprecation_warnings
    lse = primitive(lse_numpy)  # same as decorating lse_numpy with @primitive
    print(f"lse(X) = {lse(X):.6f}   (plain call: no box, f_raw runs)")
    assert lse not in core.primitive_vjps
    error, calls = followed_calls(lambda: grad(lse)(X))  # the failure path, for the figure
    msg = f"{type(error).__name__}: {error}"
    print("grad(lse)(X) ->", msg)
    assert msg == "NotImplementedError: VJP of lse_numpy wrt argnums (0,) not defined"
    assert type(error.__context__) is KeyError  # raised while handling primitive_vjps[fun]'s KeyError
    # grad -> make_vjp -> trace -> f_wrapped: the black box runs, then VJPNode.__init__ raises;
    # backward_pass, followed too, never runs
    assert [(n["label"], n["parents"]) for n in calls] == [
        ("grad", []), ("make_vjp", [0]), ("trace", [1]), ("f_wrapped", [2]), ("f_wrapped", [3]),
        ("lse_numpy", [4]), ("VJPNode.__init__", [3]), ("NotImplementedError", [6])]
    record.set("rule_calls.failure", {"nodes": calls, "end": len(calls) - 1})
    record.set("rule_calls.failure_notes",
               {"VJPNode.__init__": f"primitive_vjps[lse]：{type(error.__context__).__name__}"})
    msg = error_of(lambda: make_jvp(lse, X)(onp.ones(3)))
    print("make_jvp(lse, X)(v) ->", msg)
    assert msg == "NotImplementedError: JVP of lse_numpy wrt argnums (0,) not defined"

    scale = primitive(lambda x, s: x * s)
    scale.__name__ = "scale"
    defvjp(scale, lambda ans, x, s: lambda g: g * s)  # rule for argnum 0 only
    msg = error_of(lambda: grad(scale, 1)(2.0, 3.0))
    print("grad(scale, 1) ->", msg)
    assert msg == "NotImplementedError: VJP of scale wrt argnum 0 not defined"

    print("== 2. defvjp: maker(ans, x) -> lambda g: ... ==")

    def lse_vjp_maker(ans, x):
        EVENTS.append(f"maker(ans, x) called, x is {kind(x)}")

        def vjp(g):
            EVENTS.append(f"vjp(g) called, g is {kind(g)}")
            return g * np.exp(x - ans)  # autograd.numpy: differentiable rule

        return vjp

    error, calls = followed_calls(lambda: defvjp(lse, lse_vjp_maker))  # the registration, for the figure
    # defvjp translates the one maker, then defvjp_argnums writes the table entry
    assert error is None and [(n["label"], n["parents"]) for n in calls] == [
        ("defvjp", []), ("translate_vjp", [0]), ("defvjp_argnums", [0])]
    entry = core.primitive_vjps[lse]
    assert entry.__qualname__ == "defvjp.<locals>.vjp_argnums"
    record.set("rule_calls.registration", {"nodes": calls, "end": len(calls) - 1})
    record.set("rule_calls.registration_notes", {"defvjp_argnums": f"primitive_vjps[lse] = {entry.__name__}"})
    vjp, ans = make_vjp(lse, X)
    EVENTS.append("---- make_vjp returned: forward pass done ----")
    g = vjp(1.0)
    for ev in EVENTS:
        print("  " + ev)
    assert [e[:5] for e in EVENTS] == ["maker", "---- ", "vjp(g"]
    record.set("make_vjp_events", list(EVENTS))
    assert onp.array_equal(g, grad(lse)(X))  # grad = the same two stages
    print("grad(lse)(X) =", onp.array2string(g, precision=6))
    assert onp.allclose(g, softmax(X), rtol=0, atol=1e-14)

    print("== 3. defjvp: (g, ans, x) -> tangent ==")
    defjvp(lse, lambda g, ans, x: np.sum(g * np.exp(x - ans)))
    v = onp.array([0.5, -1.0, 2.0])
    ans, t = make_jvp(lse, X)(v)
    print(f"JVP value = {t:.6f}, softmax(X) . v = {softmax(X) @ v:.6f}")
    assert abs(t - softmax(X) @ v) < 1e-12

    print("== 4. second order ==")
    print(f"trace_stack.top = {trace_stack.top} (4 traces above ended in an exception)")
    assert trace_stack.top == 3
    top_before = trace_stack.top
    EVENTS.clear()
    H = hessian(lse)(X)
    for ev in EVENTS:
        print("  " + ev)
    events = list(EVENTS)
    box_traces = sorted({int(t) for t in re.findall(r"trace (\d+)", " ".join(events))})
    p = softmax(X)
    assert onp.allclose(H, onp.diag(p) - onp.outer(p, p), rtol=0, atol=1e-12)
    # the same hessian once more, reading the Box lse receives: inner jacobian's trace around the outer one's
    received = []

    def lse_seen(x):
        received.append((x._trace, x._value._trace))
        return lse(x)

    hessian(lse_seen)(X)
    (inner, outer), = received
    print(f"lse receives a trace {inner} Box around a trace {outer} Box")
    assert (outer, inner) == (top_before + 1, top_before + 2) and box_traces == [outer]
    record.set("hessian", {"trace_top_before": top_before, "events": events, "box_traces": box_traces,
                           "traces": {"outer": outer, "inner": inner}})
    print("hessian(lse)(X) == diag(p) - p p^T:", onp.array2string(H, precision=4))
    onp.random.seed(0)
    check_grads(lse, modes=["fwd", "rev"], order=2)(X)
    print("check_grads(lse, modes=['fwd','rev'], order=2): passed")

    print("== 5. a rule that is right but not differentiable ==")
    lse2 = primitive(lse_numpy)
    defvjp(lse2, lambda ans, x: lambda g: g * softmax(x))  # plain-NumPy helper
    onp.random.seed(0)
    check_grads(lse2, modes=["rev"], order=1)(X)
    print("order=1: passed")
    msg = error_of(lambda: check_grads(lse2, modes=["rev"], order=2)(X))
    print("order=2 ->", msg)
    assert msg == msg0  # the same failure as the black box in part 0


def lse_numpy_float(x):
    """lse_numpy with the conversion asking for floats (self-test 1)."""
    x = onp.asarray(x, dtype=float)
    m = onp.max(x)
    return m + onp.log(onp.sum(onp.exp(x - m)))


def raised_at(thunk):
    """(exception type, message, the innermost frame's function, whether backward_pass was on the stack)."""
    try:
        thunk()
    except Exception as exc:  # noqa: BLE001 -- recorded, then compared by the asserts
        names = [fr.name for fr in traceback.extract_tb(exc.__traceback__)]
        return {"error": type(exc).__name__, "message": str(exc), "innermost": names[-1],
                "in_backward_pass": "backward_pass" in names}
    raise SystemExit("expected an error")


def self_test_cases():
    """What the lesson's self-test asks about, recorded (nothing printed)."""
    # 1. the original black box fails inside onp.exp; with dtype=float the conversion itself fails
    original = raised_at(lambda: grad(lse_numpy)(X))
    as_float = raised_at(lambda: grad(lse_numpy_float)(X))
    assert original["error"] == "TypeError" and "exp" in original["message"]
    assert as_float["innermost"] == "lse_numpy_float" and as_float["error"] == "ValueError"
    as_float["line"] = traceback.extract_tb(_last_exception(lambda: grad(lse_numpy_float)(X)).__traceback__)[-1].line
    assert as_float["line"] == "x = onp.asarray(x, dtype=float)"
    record.set("self_test.black_box", {"original": original["message"], "as_float": as_float})

    # 2. the missing rule is found while the forward pass runs, even for a primitive the output does not use
    bare = primitive(lse_numpy)
    missing = raised_at(lambda: grad(bare)(X))
    unused = raised_at(lambda: grad(lambda x: np.sum(x * 2.0) + 0.0 * (bare(x) is None))(X))
    assert not missing["in_backward_pass"] and unused["error"] == "NotImplementedError"
    record.set("self_test.forward_check", {"in_backward_pass": missing["in_backward_pass"],
                                           "unused_output": unused["message"]})

    # 3. scale(x, s): one maker, two makers, or None for argument 1
    variants = {}
    for label, makers in (("one", (lambda ans, x, s: lambda g: g * s,)),
                          ("two", (lambda ans, x, s: lambda g: g * s, lambda ans, x, s: lambda g: g * x)),
                          ("none", (lambda ans, x, s: lambda g: g * s, None))):
        scale = primitive(lambda x, s: x * s)
        scale.__name__ = "scale"
        defvjp(scale, *makers)
        try:
            variants[label] = float(grad(scale, 1)(2.0, 3.0))
        except NotImplementedError as exc:
            variants[label] = str(exc)
    assert variants == {"one": "VJP of scale wrt argnum 0 not defined", "two": 2.0, "none": 0.0}
    record.set("self_test.scale", variants)

    # 4. the VJP written as g * exp(x) / sum(exp(x)): checks pass at X, NaN for inputs near 1000
    naive = primitive(lse_numpy)
    defvjp(naive, lambda ans, x: lambda g: g * np.exp(x) / np.sum(np.exp(x)))
    defjvp(naive, lambda g, ans, x: np.sum(g * np.exp(x - ans)))
    onp.random.seed(0)
    check_grads(naive, modes=["fwd", "rev"], order=2)(X)
    big = X + 1000.0
    with onp.errstate(over="ignore", invalid="ignore"):
        naive_big = grad(naive)(big)
    stable_big = grad(primitive_lse_stable())(big)
    assert onp.all(onp.isnan(naive_big)) and onp.allclose(stable_big, softmax(big))
    record.set("self_test.naive_rule", {"value_big": float(lse_numpy(big)), "naive_grad": naive_big,
                                        "stable_grad": stable_big})

    # 6. right JVP, wrong VJP: hessian is wrong; modes=["fwd"] cannot see it
    wrong = primitive(lse_numpy)
    defvjp(wrong, lambda ans, x: lambda g: 2.0 * g * np.exp(x - ans))  # twice the true gradient
    defjvp(wrong, lambda g, ans, x: np.sum(g * np.exp(x - ans)))
    p = softmax(X)
    H_wrong = hessian(wrong)(X)
    outcome = {}
    for modes in (["fwd"], ["rev"]):
        onp.random.seed(0)
        try:
            check_grads(wrong, modes=modes, order=2)(X)
            outcome[modes[0]] = "通过"  # passed
        except AssertionError:
            outcome[modes[0]] = "AssertionError"
    # the wrong rule also differentiates the rule's own `ans`: 2 diag(p) - 2 p (2 p)^T
    assert onp.allclose(H_wrong, 2 * onp.diag(p) - 4 * onp.outer(p, p))
    assert outcome == {"fwd": "通过", "rev": "AssertionError"}
    record.set("self_test.wrong_vjp", {"H_00": H_wrong[0, 0], "true_H_00": p[0] - p[0] ** 2, **outcome})

    # 7. autograd.primitive adds the old methods; they warn when called, autograd.extend.primitive has none
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = autograd.primitive(lambda x: x * 3.0)
        on_creation = len(caught)
        old.defvjp(lambda g, ans, vs, gvs, x: 3.0 * g)
        on_defvjp = len(caught) - on_creation
    new = primitive(lambda x: x * 3.0)
    assert (on_creation, on_defvjp) == (0, 1) and not hasattr(new, "defvjp") and grad(old)(2.0) == 3.0
    record.set("self_test.deprecated", {"old_methods": [m for m in ("defvjp", "defvjp_is_zero", "defgrad")
                                                        if hasattr(old, m)],
                                        "new_has_defvjp": hasattr(new, "defvjp"),
                                        "warnings_on_creation": on_creation, "warnings_on_defvjp": on_defvjp,
                                        "warning": str(caught[-1].message).strip().splitlines()[0]})


def _last_exception(thunk):
    try:
        thunk()
    except Exception as exc:  # noqa: BLE001
        return exc


def primitive_lse_stable():
    lse = primitive(lse_numpy)
    defvjp(lse, lambda ans, x: lambda g: g * np.exp(x - ans))
    return lse


if __name__ == "__main__":
    main()
    self_test_cases()
