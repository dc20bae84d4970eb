"""Lesson 04: observe real Boxes, trace ids and VJPNodes, and a graph chosen by Python's `if`."""

import math
import sys
import warnings

import autograd.numpy as anp
import autograd.tracer as tracer
from autograd import grad
from autograd.core import VJPNode, defvjp
from autograd.numpy.numpy_boxes import ArrayBox
from autograd.tracer import (Box, Node, find_top_boxed_args, isbox, new_box, notrace_primitives,
                             primitive, trace, trace_stack)

from _provenance import announce
from _record import record


def one_primitive_call():
    """Do by hand what trace() does, then follow one multiply."""
    with trace_stack.new_trace() as t, record.capture() as cap:
        root = VJPNode.new_root()
        x = new_box(3.0, t, root)
        cap.root(root, t, 3.0)  # new_box was imported by name: declare the start box's node
        top_inside = trace_stack.top
        print(f"trace id t = {t}, trace_stack.top = {top_inside}")
        print(f"x: {type(x).__name__}, _value={x._value!r}, _trace={x._trace}, "
              f"_node={type(x._node).__name__}, _node.parents={x._node.parents}")
        boxed, top, node_type, dispatch = find_top_boxed_args((x, 2.0))
        print(f"find_top_boxed_args((x, 2.0)) -> argnums={[i for i, _ in boxed]}, "
              f"trace={top}, node_type={node_type.__name__}, ufunc_dispatch_needed={dispatch}")
        y = x * 2.0  # ArrayBox.__mul__ -> anp.multiply(x, 2.0)
        node = y._node
        print(f"y = x * 2.0: {type(y).__name__}, _value={float(y._value):.1f} "
              f"({type(y._value).__name__}), _trace={y._trace}")
        print(f"y._node.parents[0] is x._node: {node.parents[0] is root}, "
              f"y._node.vjp(1.0) = {[float(v) for v in node.vjp(1.0)]}")
        print(f"y._node has recipe/value/fun: "
              f"{[hasattr(node, a) for a in ('recipe', 'value', 'fun')]}")
        cond = x > 0  # greater is registered as notrace for VJPNode
        print(f"x > 0 -> {type(cond).__module__}.{type(cond).__name__} (box: {isbox(cond)}), "
              f"bool(x) = {bool(x)}, anp.shape(x) = {anp.shape(x)}")
    print(f"after the with block: trace_stack.top = {trace_stack.top}")
    assert t == 0 and type(x) is ArrayBox and x._value == 3.0 and x._trace == 0
    assert type(x._node) is VJPNode and x._node is root and x._node.parents == []
    assert [i for i, _ in boxed] == [0] and top == 0 and node_type is VJPNode and not dispatch
    assert type(y) is ArrayBox and y._value == 6.0 and y._trace == 0
    assert node.parents == (root,) and node.parents[0] is root and list(node.vjp(1.0)) == [2.0]
    assert not any(hasattr(node, a) for a in ("recipe", "value", "fun"))
    assert not isbox(cond) and bool(cond) and bool(x) is True and anp.shape(x) == ()
    assert trace_stack.top == -1
    names = {root: "R", node: "My"}
    record.graph("graph", cap, node, labels=names)
    cap.release()
    record.set("life0", {"t": t, "trace_top": top_inside, "root_parents": root.parents,
                         "x": {"type": type(x).__name__, "value": x._value, "trace": x._trace}})
    record.set("life1", {"boxed_argnums": tuple(i for i, _ in boxed), "trace": top, "node_type": node_type.__name__,
                         "ufunc_dispatch_needed": dispatch})
    record.set("life2", {"parents": node.parents, "ans": y._value, "ans_type": type(y._value).__name__,
                         "vjp_1": node.vjp(1.0)}, names=names)
    record.set("life3", {"y": {"type": type(y).__name__, "value": y._value, "trace": y._trace},
                         "has": {a: hasattr(node, a) for a in ("parents", "vjp", "recipe", "value", "fun")},
                         "trace_top_after": trace_stack.top})


def registries():
    print(f"Node.__slots__={Node.__slots__}, VJPNode.__slots__={VJPNode.__slots__}, "
          f"Box.__slots__={Box.__slots__}")
    print(f"Box.type_mappings[float] = {Box.type_mappings[float].__name__}, "
          f"Box.type_mappings[ArrayBox] = {Box.type_mappings[ArrayBox].__name__}")
    message = None
    try:
        grad(lambda x: x * x)(3)  # int is not registered: new_box fails inside trace
    except TypeError as e:
        message = str(e)
    leaked = trace_stack.top  # the exception skipped `top -= 1` in new_trace
    still_ok = float(grad(lambda x: x * x)(3.0))  # ids are only compared, so this still works
    trace_stack.top = -1  # restore the global counter
    print(f"grad(f)(3) -> TypeError: {message}")
    print(f"trace_stack.top after that error = {leaked}; grad(f)(3.0) afterwards = {still_ok:.1f}")
    assert message == "Can't differentiate w.r.t. type <class 'int'>"
    assert leaked == 0 and still_ok == 6.0
    record.set("registries", {"error": message, "leaked_top": leaked, "still_ok": still_ok,
                              "slots": {"Node": Node.__slots__, "VJPNode": VJPNode.__slots__, "Box": Box.__slots__}})
    nt = notrace_primitives[VJPNode]
    print(f"in notrace_primitives[VJPNode]: greater={anp.greater in nt}, multiply={anp.multiply in nt}")
    assert anp.greater in nt and anp.multiply not in nt
    record.set("notrace", {"greater": anp.greater in nt, "multiply": anp.multiply in nt})
    assert VJPNode.__slots__ == ["parents", "vjp"] and Box.__slots__ == ["_value", "_trace", "_node"]
    assert Box.type_mappings[float] is ArrayBox and Box.type_mappings[ArrayBox] is ArrayBox
    assert ArrayBox in Box.types


def dynamic_graphs():
    """VJPNode.__init__ runs once per recorded primitive: log which ones."""
    built, real_init = [], VJPNode.__init__

    def logging_init(self, value, fun, args, kwargs, parent_argnums, parents):
        built.append(fun.__name__)
        real_init(self, value, fun, args, kwargs, parent_argnums, parents)

    def f(x):
        if x > 0:  # plain Python if, evaluated on this call's value
            return x * x
        return -x

    def cube_by_loop(x):
        y = x
        for _ in range(2):  # plain Python loop: unrolled into the graph
            y = y * x
        return y

    VJPNode.__init__ = logging_init
    try:
        results = {}
        for label, fun, x0 in [("f", f, 3.0), ("f", f, -2.0), ("cube_by_loop", cube_by_loop, 3.0)]:
            built.clear()
            g = grad(fun)(x0)
            results[(label, x0)] = (float(g), list(built))
            print(f"grad({label})({x0}) = {float(g):.1f}, nodes built: {built}")
    finally:
        VJPNode.__init__ = real_init
    assert results[("f", 3.0)] == (6.0, ["multiply"])
    assert results[("f", -2.0)] == (-1.0, ["negative"])
    assert results[("cube_by_loop", 3.0)] == (27.0, ["multiply", "multiply"])
    for (label, x0), (g, nodes) in results.items():
        record.append("dynamic", {"fun": label, "x": x0, "grad": g, "nodes": nodes})


def two_traces():
    """Preview for lesson 10: only the box with the highest trace id is unboxed."""
    root_a, root_b = VJPNode.new_root(), VJPNode.new_root()
    with trace_stack.new_trace() as t0:
        a = new_box(2.0, t0, root_a)
        with trace_stack.new_trace() as t1:
            b = new_box(5.0, t1, root_b)
            boxed, top, _, _ = find_top_boxed_args((a, b))
            p = a * b
    inner = p._value
    print(f"t0={t0}, t1={t1}; find_top_boxed_args((a, b)) -> argnums={[i for i, _ in boxed]}, trace={top}")
    print(f"p = a * b: _trace={p._trace}, _value is {type(inner).__name__} "
          f"(_trace={inner._trace}, _value={float(inner._value):.1f})")
    back = list(p._node.vjp(1.0))[0]  # trace-1 VJP closure captured the trace-0 box `a`
    print(f"p._node.vjp(1.0) -> {type(back).__name__} (_trace={back._trace}, _value={float(back._value):.1f})")
    assert type(back) is ArrayBox and back._trace == 0 and back._value == 2.0
    print(f"p._node.parents == (root_b,): {p._node.parents == (root_b,)}; "
          f"inner._node.parents == (root_a,): {inner._node.parents == (root_a,)}")
    assert p._node.parents == (root_b,) and inner._node.parents == (root_a,)
    assert (t0, t1) == (0, 1) and [i for i, _ in boxed] == [1] and top == 1
    assert p._trace == 1 and type(inner) is ArrayBox and inner._trace == 0 and inner._value == 10.0
    record.set("two_traces", {"t0": t0, "t1": t1, "boxed_argnums": tuple(i for i, _ in boxed), "top": top,
                              "p": p, "back": back})


def main():
    announce()
    print("== 1. 一次 primitive 调用 ==")
    one_primitive_call()
    print("\n== 2. 注册表与字段 ==")
    registries()
    print("\n== 3. Python 控制流决定每次调用的图 ==")
    dynamic_graphs()
    print("\n== 4. 两层 trace（第 10 篇预告）==")
    two_traces()


def self_test_cases():
    """What the lesson's self-test asks about, recorded (nothing printed): the Box-to-Box mapping,
    an unregistered Box subclass, how often `greater` is entered, the boxes of 2.0 * x and x * x,
    why f_wrapped recurses, and a function that returns a box of an outer trace."""
    # 1. without type_mappings[ArrayBox] = ArrayBox, the inner grad cannot box the outer box
    saved = Box.type_mappings.pop(ArrayBox)
    try:
        grad(grad(lambda x: x * x))(3.0)
    except TypeError as exc:
        missing = {"error": str(exc), "where": _frames(exc)[-2:]}
    finally:
        Box.type_mappings[ArrayBox] = saved
        trace_stack.top = -1  # new_trace has no try/finally (lesson 04, note above)
    assert missing["where"] == ["trace", "new_box"] and "ArrayBox" in missing["error"]
    assert grad(grad(lambda x: x * x))(3.0) == 2.0

    # 3. a subclass that never called register is not a Box to find_top_boxed_args
    class UnregisteredBox(ArrayBox):
        pass

    with trace_stack.new_trace() as t:
        sub = UnregisteredBox(3.0, t, VJPNode.new_root())
        found = find_top_boxed_args((sub, 2.0))[0]
        try:
            anp.multiply(sub, 2.0)  # its inherited __array_ufunc__ hands the call back, again and again
        except RecursionError:
            sub_error = "RecursionError"
    assert found == [] and sub_error == "RecursionError"

    # 6. `x > 0` enters anp.greater's f_wrapped twice: with the box (notrace hit), then with the value
    entries, real_find = [], tracer.find_top_boxed_args

    def spy(args):
        boxed = real_find(args)
        if sys._getframe(1).f_locals.get("f_raw") is anp.greater.fun:
            entries.append(bool(boxed[0]))
        return boxed

    def f(x):
        if x > 0:
            return x * x
        return -x

    greater = {}
    tracer.find_top_boxed_args = spy
    try:
        for label, x0 in (("positive", 3.0), ("negative", -2.0)):
            entries.clear()
            grad(f)(x0)
            greater[label] = {"entries": len(entries), "with_box": sum(entries), "raw_calls": entries.count(False)}
    finally:
        tracer.find_top_boxed_args = real_find
    assert greater["positive"] == greater["negative"] == {"entries": 2, "with_box": 1, "raw_calls": 1}

    # 7. find_top_boxed_args for 2.0 * x and x * x in one trace
    with trace_stack.new_trace() as t:
        root = VJPNode.new_root()
        x = new_box(3.0, t, root)
        left, right = 2.0 * x, x * x
        scaled = find_top_boxed_args((2.0, x))
        squared = find_top_boxed_args((x, x))
    assert [i for i, _ in scaled[0]] == [1] and [i for i, _ in squared[0]] == [0, 1]
    assert left._node.parents == (root,) and right._node.parents == (root, root)

    # 4. with two traces, only the recursive call lets the lower trace see the unboxed argument
    @primitive
    def exp_math(v):
        return math.exp(v)  # needs a real number: a box must never reach it

    defvjp(exp_math, lambda ans, v: lambda g: g * ans)
    with trace_stack.new_trace() as t0:
        a = new_box(1.0, t0, VJPNode.new_root())
        with trace_stack.new_trace() as t1:
            b = new_box(a, t1, VJPNode.new_root())  # a box of trace 1 around a box of trace 0
            e = exp_math(b)
            argvals = (b._value,)  # what f_wrapped holds after unboxing trace 1: still a trace-0 box
            try:
                exp_math.fun(*argvals)  # calling f_raw here instead of f_wrapped
            except TypeError as exc:
                direct_error = type(exc).__name__
            ufunc_direct = anp.multiply.fun(argvals[0], 2.0)  # a raw ufunc routes back via __array_ufunc__
    assert e._trace == 1 and type(e._value) is ArrayBox and e._value._trace == 0
    assert direct_error == "TypeError" and type(ufunc_direct) is ArrayBox and ufunc_direct._trace == 0

    # 8. a function that returns a box of an outer trace: no node, the box is returned as the value
    with trace_stack.new_trace() as t0:
        outer = new_box(2.0, t0, VJPNode.new_root())
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value, node = trace(VJPNode.new_root(), lambda y: outer, 1.0)
    assert value is outer and node is None and [str(w.message) for w in caught] == ["Output seems independent of input."]

    record.set("self_test", {
        "missing_box_mapping": missing,
        "unregistered_subclass": {"found": found, "error": sub_error},
        "greater": greater,
        "scaled": {"argnums": tuple(i for i, _ in scaled[0]), "parents": len(left._node.parents)},
        "squared": {"argnums": tuple(i for i, _ in squared[0]), "parents": len(right._node.parents),
                    "same_parent": right._node.parents[0] is right._node.parents[1]},
        "recursion": {"result": e, "f_raw_direct": direct_error, "ufunc_direct": ufunc_direct},
        "outer_box": {"node": node, "value_is_outer": value is outer, "warning": str(caught[0].message)},
    })


def _frames(exc):
    tb, names = exc.__traceback__, []
    while tb is not None:
        names.append(tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    return names


if __name__ == "__main__":
    main()
    self_test_cases()
