"""Lesson 10: grad(grad(grad(f))), trace ids and nested boxes."""

import inspect
import math
import sys
import warnings
from collections import Counter

import numpy as onp

import autograd.core as core
import autograd.numpy as np
import autograd.tracer as tracer
from autograd import grad, value_and_grad
from autograd.core import defvjp, primitive_vjps
from autograd.tracer import getval, isbox, trace_stack

from _provenance import announce
from _record import record

X0 = 1.5
seen_layers = []  # what f saw as its argument, recorded inside f
box_log = []  # (phase, trace) for every new_box call while patched
phase = ["forward"]
backward_tops = []  # trace_stack.top at each backward_pass call while patched


def layers(x):
    """Unwrap x layer by layer: [(type name, trace id or None), ...]."""
    out = []
    while isbox(x):
        out.append((type(x).__name__, x._trace))
        x = x._value
    out.append((type(x).__name__, None))
    return out


def show(chain):
    return " -> ".join(name if t is None else f"{name}(trace={t})" for name, t in chain)


def quartic(x):
    seen_layers.append(layers(x))
    return x**4


def one_sin_call(x):
    """Record every box created by ONE call of the primitive np.sin."""
    start = len(box_log)
    unwrapping, real_find = [], tracer.find_top_boxed_args

    def watched_find(args):  # f_wrapped looks it up at call time: one call per level of np.sin
        out = real_find(args)
        # args is f_wrapped's *args (or argvals, from subvals): a tuple
        unwrapping.append({"args": tuple(layers(a)[0] for a in args), "boxed": len(out[0]), "top": out[1]})
        return out

    tracer.find_top_boxed_args = watched_find
    try:
        with record.capture() as cap:
            y = np.sin(x)
    finally:
        tracer.find_top_boxed_args = real_find
    record.set("sin_call.unwrapping", unwrapping)
    record.set("sin_call.new_nodes", [{"fun": n["fun"], "trace": n["trace"], "args": n["args"], "value": n["value"]}
                                      for n in cap.nodes if n["kind"] == "primitive"])
    record.set("sin_call.new_boxes", cap.boxes)
    cap.release()
    assert [u["top"] for u in unwrapping] == [2, 1, 0, -1]
    created = [t for _, t in box_log[start:]]
    print("一次 np.sin(x) 调用 (f 执行时 trace_stack.top =", f"{trace_stack.top}):")
    assert trace_stack.top == 2
    print("  x =", show(layers(x)))
    print("  y =", show(layers(y)))
    print("  new_box 依次在这些 trace 上创建 Box:", created)
    assert created == sorted(created) and len(created) == len(layers(x)) - 1
    record.set("sin_call.top", trace_stack.top)
    record.set("sin_call.x", [list(c) for c in layers(x)])
    record.set("sin_call.y", [list(c) for c in layers(y)])
    record.set("sin_call.created", created)
    return x**4


def main():
    announce()
    g1, g2, g3 = grad(quartic), grad(grad(quartic)), grad(grad(grad(quartic)))
    d = [float(g1(X0)), float(g2(X0)), float(g3(X0))]
    print(f"x**4 在 x={X0}: f'={d[0]:.6f}  f''={d[1]:.6f}  f'''={d[2]:.6f}")
    assert np.allclose(d, [4 * X0**3, 12 * X0**2, 24 * X0])
    record.set("quartic", {"x": X0, "d1": d[0], "d2": d[1], "d3": d[2]})
    s1, s2, s3 = grad(np.sin), grad(grad(np.sin)), grad(grad(grad(np.sin)))
    s = [float(s1(X0)), float(s2(X0)), float(s3(X0))]
    print(f"sin  在 x={X0}: f'={s[0]:.6f}  f''={s[1]:.6f}  f'''={s[2]:.6f}")
    assert np.allclose(s, [math.cos(X0), -math.sin(X0), -math.cos(X0)])
    record.set("sin", {"x": X0, "d1": s[0], "d2": s[1], "d3": s[2]})

    # 1) the nesting that f sees, from the outermost Box to the raw float
    seen_layers.clear()
    top_before = trace_stack.top
    g3(X0)
    chain = seen_layers[-1]
    ids = [t for _, t in chain if t is not None]
    print("调用前 trace_stack.top =", top_before)
    print("f 看到的 x:", show(chain))
    print("NESTING: " + " ".join(str(t) for t in ids))
    assert all(a > b for a, b in zip(ids, ids[1:])), "levels must strictly decrease"
    assert top_before == -1 and ids == [2, 1, 0]  # fresh process: TraceStack starts at -1
    assert chain[-1][0] == "float" and trace_stack.top == top_before
    record.set("nesting", {"top_before": top_before, "chain": [list(c) for c in chain], "ids": ids})

    # 2) ids are nesting depths, not a global counter
    g3(X0)
    assert [t for _, t in seen_layers[-1] if t is not None] == ids
    grad(lambda z: g3(z))(X0)
    shifted = [t for _, t in seen_layers[-1] if t is not None]
    print("再调用一次 g3:", ids, "| 外面再套一层 grad:", shifted)
    assert shifted == [ids[0] + 1] + ids
    record.set("shifted", shifted)

    # 3) a lower-trace box is a constant for a higher trace: d/dx[x * d/dy(x + y)] = 1
    nested = float(grad(lambda x: x * grad(lambda y: x + y)(1.0))(3.0))
    print(f"d/dx [x * d/dy (x + y)] 在 x=3: {nested:.6f}")
    assert nested == 1.0
    record.set("constant_rule", nested)

    # 4) one primitive call on a 3-layer Box, and boxes per phase
    orig_new_box, orig_backward = tracer.new_box, core.backward_pass

    def logging_new_box(value, trace, node):
        box_log.append((phase[-1], trace))
        return orig_new_box(value, trace, node)

    def phased_backward(g, end_node):
        backward_tops.append(trace_stack.top)
        phase.append(f"level {trace_stack.top + 1} backward_pass")
        try:
            return orig_backward(g, end_node)
        finally:
            phase.pop()

    tracer.new_box, core.backward_pass = logging_new_box, phased_backward
    try:
        grad(grad(grad(one_sin_call)))(X0)
    finally:
        tracer.new_box, core.backward_pass = orig_new_box, orig_backward
    counts = Counter(box_log)
    print("backward_pass 依次被调用时的 trace_stack.top:", backward_tops,
          "-> 阶段名 level = top + 1:", [t + 1 for t in backward_tops])
    assert backward_tops == [1, 0, -1]  # G1, G2, G3 的反向：各自的 trace 都已关闭
    print("各阶段在各 trace 上新建的 Box 数 (含 trace() 的 start box):")
    for (ph, t), n in sorted(counts.items()):
        print(f"  {ph:<22} trace {t}: {n}")
    assert counts == {
        ("forward", 0): 3, ("forward", 1): 3, ("forward", 2): 3,
        ("level 2 backward_pass", 1): 2, ("level 2 backward_pass", 0): 2,
        ("level 1 backward_pass", 0): 2,
    }  # level 0 backward_pass creates no Box at all
    record.set("backward_tops", backward_tops)
    record.table("boxes_per_phase", ["phase", "trace", "boxes"],
                 [[ph, t, n] for (ph, t), n in sorted(counts.items())])
    # per phase: the traces that got new boxes, highest first, and how many boxes each
    for ph in ["forward", "level 2 backward_pass", "level 1 backward_pass", "level 0 backward_pass"]:
        key = ph.split(" backward_pass")[0].replace(" ", "")
        record.set(f"boxes_by_phase.{key}.traces", sorted({t for (p, t) in counts if p == ph}, reverse=True))
        record.set(f"boxes_by_phase.{key}.boxes", [counts[(p, t)] for (p, t) in sorted(counts, key=lambda k: -k[1])
                                                   if p == ph])

    # 5) new_trace has no try/finally: an exception inside a trace leaves top raised
    def broken(x):
        raise ValueError("boom")

    try:
        grad(broken)(X0)
    except ValueError:
        pass
    g3(X0)
    leaked = [t for _, t in seen_layers[-1] if t is not None]
    print("异常之后 trace_stack.top =", trace_stack.top, "| 此时 g3 的层次变成", leaked)
    assert trace_stack.top == 0 and leaked == [3, 2, 1]
    record.set("after_exception", {"top": trace_stack.top, "ids": leaked})
    trace_stack.top = top_before  # restore the global state we disturbed


def variant(name, old, new):
    """tracer.<name> recompiled from its real source with one line changed (what a self-test asks)."""
    src = inspect.getsource(getattr(tracer, name))
    assert src.count(old) == 1, (name, old)
    namespace = dict(vars(tracer))
    exec(src.replace(old, new), namespace)
    return namespace[name]


def ids_seen():
    return [t for _, t in seen_layers[-1] if t is not None]


def self_test_cases():
    """What the lesson's self-test asks about, recorded (nothing printed)."""
    warnings.simplefilter("ignore")  # "Output seems independent of input." is part of what is measured
    # 1. grad(grad(f))(2.0): two boxes; inside another traced function (2.0 a constant there) one level up
    grad(grad(quartic))(2.0)
    alone = ids_seen()
    grad(lambda z: z * grad(grad(quartic))(2.0))(1.0)
    inside = ids_seen()
    assert (alone, inside) == ([1, 0], [2, 1])
    record.set("self_test.levels", {"alone": alone, "inside": inside})

    # 2. trace returning getval(end_box) instead of end_box._value
    peeled = variant("trace", "return end_box._value, end_box._node", "return getval(end_box), end_box._node")
    value_of = lambda x: value_and_grad(quartic)(x)[0]  # differentiate the inner call's value, x**4
    results = {}
    for label, fn in (("real", tracer.trace), ("getval", peeled)):
        core.trace = fn  # make_vjp looks up `trace` in autograd.core
        try:
            results[label] = {"second": grad(grad(quartic))(X0), "value": grad(value_of)(X0)}
        finally:
            core.trace = tracer.trace
    assert results["real"]["second"] == results["getval"]["second"] == 12 * X0**2
    assert results["real"]["value"] == 4 * X0**3 and results["getval"]["value"] == 0.0
    record.set("self_test.trace_getval", results)

    # 3. f_wrapped calling f_raw after peeling one layer, instead of itself
    direct = variant("primitive",
                     "ans = f_wrapped(*argvals, called_by_autograd_dispatcher=called_by_autograd_dispatcher, **kwargs)",
                     "ans = f_raw(*argvals, **kwargs)")
    power_direct = direct(onp.power)  # a ufunc: the raw call meets ArrayBox.__array_ufunc__
    tracer.trace_primitives_map[onp.power] = np.power  # keep NumPy's dispatch on the real wrapper
    primitive_vjps[power_direct] = primitive_vjps[np.power]
    third_power = grad(grad(grad(lambda x: power_direct(x, 4))))(X0)

    def exp_by_math(v):
        return math.exp(v)  # not a ufunc: a box reaching it is an error

    exp_real, exp_direct = tracer.primitive(exp_by_math), direct(exp_by_math)
    for fun in (exp_real, exp_direct):
        defvjp(fun, lambda ans, v: lambda g: g * ans)
    second_real = grad(grad(exp_real))(1.0)
    try:
        grad(grad(exp_direct))(1.0)
    except TypeError as exc:
        direct_error = str(exc)
    trace_stack.top = -1  # the TypeError left new_trace's counter raised
    assert third_power == 24 * X0 and math.isclose(second_real, math.e)
    record.set("self_test.f_raw_direct", {"power_third": third_power, "exp_second": second_real,
                                          "exp_error": direct_error})

    # 5. x * grad(lambda y: x + y)(1.0): what find_top_boxed_args returns inside add
    found, real_find = [], tracer.find_top_boxed_args

    def spy(args):
        out = real_find(args)
        if sys._getframe(1).f_locals.get("f_raw") is onp.add:
            found.append({"argnums": tuple(i for i, _ in out[0]), "trace": out[1]})  # primitive's argnums
        return out

    tracer.find_top_boxed_args = spy
    try:
        assert grad(lambda x: x * grad(lambda y: x + y)(1.0))(3.0) == 1.0
    finally:
        tracer.find_top_boxed_args = real_find
    assert found == [{"argnums": (1,), "trace": 1}, {"argnums": (0,), "trace": 0}, {"argnums": (), "trace": -1}]
    record.set("self_test.add_calls", found)

    # 6. a sin primitive whose VJP leaves autograd.numpy in four ways
    rules = {"anp": lambda x: np.cos(x), "raw_ufunc": lambda x: onp.cos(x),
             "getval": lambda x: onp.cos(getval(x)), "asarray": lambda x: onp.cos(onp.asarray(x))}
    orders = {}
    for label, local in rules.items():
        sin_p = tracer.primitive(lambda v: onp.sin(v))
        defvjp(sin_p, lambda ans, x, local=local: lambda g: g * local(x))
        row = {"first": grad(sin_p)(X0)}
        try:
            row["second"] = grad(grad(sin_p))(X0)
        except TypeError as exc:
            row["second"] = type(exc).__name__
            trace_stack.top = -1
        orders[label] = row
    assert all(math.isclose(r["first"], math.cos(X0)) for r in orders.values())
    assert math.isclose(orders["anp"]["second"], -math.sin(X0)) and orders["raw_ufunc"]["second"] == orders["anp"]["second"]
    assert orders["getval"]["second"] == 0.0 and orders["asarray"]["second"] == "TypeError"
    record.set("self_test.leaving_anp", orders)

    # 7. after an exception inside a trace: ids shifted by one, derivatives unchanged
    try:
        grad(lambda x: 1 / 0)(X0)
    except ZeroDivisionError:
        pass
    leaked_top = trace_stack.top
    d3 = grad(grad(grad(quartic)))(X0)
    shifted_ids = ids_seen()
    trace_stack.top = -1
    assert leaked_top == 0 and shifted_ids == [3, 2, 1] and d3 == 24 * X0
    record.set("self_test.after_exception", {"top": leaked_top, "ids": shifted_ids, "third": d3})


if __name__ == "__main__":
    main()
    self_test_cases()
