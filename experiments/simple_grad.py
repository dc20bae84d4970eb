"""Lesson 03: follow grad(f)(3.0) for f = lambda x: x * x, object by object."""

import warnings

import numpy as np

import autograd.core as core
import autograd.differential_operators as diffops
import autograd.numpy as anp
import autograd.tracer as tracer
from autograd import grad
from autograd.core import VJPNode, vspace
from autograd.numpy.numpy_boxes import ArrayBox
from autograd.numpy.numpy_vspaces import ArrayVSpace

from _provenance import announce
from _record import record

EVENTS = []  # (stage, detail) in time order
SEEN = {}  # real objects captured on the way


def fmt(v):
    """Format a gradient or a (gradient, mutable_flag) pair deterministically."""
    if v is None:
        return "None"
    if isinstance(v, tuple):
        return f"({float(v[0]):.1f}, {v[1]})"
    return f"{float(v):.1f}"


def install_spies():
    """Wrap the module globals that grad's call chain looks up at call time."""
    real = {"make_vjp": diffops._make_vjp, "trace": core.trace, "node_init": VJPNode.__init__,
            "backward_pass": core.backward_pass, "add_outgrads": core.add_outgrads,
            "toposort": core.toposort}

    def spy_make_vjp(fun, x):
        EVENTS.append(("_make_vjp(fun, x)", f"fun={fun.__name__}, x={x!r} ({type(x).__name__})"))
        return real["make_vjp"](fun, x)

    def spy_trace(start_node, fun, x):
        SEEN["start_node"] = start_node
        EVENTS.append(("trace(start_node, fun, x)", f"start_node={type(start_node).__name__}, "
                       f"parents={start_node.parents}, trace_stack.top={tracer.trace_stack.top}"))

        def spy_fun(start_box):  # trace calls fun(start_box): we see both boxes
            SEEN["start_box"], SEEN["top_at_start_box"] = start_box, tracer.trace_stack.top
            EVENTS.append(("new_box -> start_box", f"{type(start_box).__name__}, _value={start_box._value!r}, "
                           f"_trace={start_box._trace}, trace_stack.top={tracer.trace_stack.top}"))
            end_box = fun(start_box)
            SEEN["end_box"] = end_box
            same = [p is start_node for p in end_box._node.parents]
            EVENTS.append(("fun(start_box) -> end_box", f"{type(end_box).__name__}, _value={fmt(end_box._value)}, "
                           f"_trace={end_box._trace}, _node.parents is start_node: {same}"))
            return end_box

        end_value, end_node = real["trace"](start_node, spy_fun, x)
        SEEN["top_after_trace"] = tracer.trace_stack.top
        EVENTS.append(("trace -> (end_value, end_node)", f"end_value={fmt(end_value)}, end_node={type(end_node).__name__}, "
                       f"trace_stack.top={tracer.trace_stack.top}"))
        return end_value, end_node

    def spy_node_init(self, value, fun, args, kwargs, parent_argnums, parents):
        SEEN["node_call"] = (fun, value, args, parent_argnums)
        EVENTS.append(("primitive -> VJPNode(...)", f"fun={fun.__name__}, value={fmt(value)} ({type(value).__name__}), "
                       f"args=({', '.join(fmt(a) for a in args)}), parent_argnums={parent_argnums}"))
        real["node_init"](self, value, fun, args, kwargs, parent_argnums, parents)

    def spy_backward_pass(g, end_node):
        SEEN["seed"], SEEN["bp_node"] = g, end_node
        EVENTS.append(("backward_pass(g, end_node)", f"g={fmt(g)} ({type(g).__name__}, shape={g.shape}), "
                       f"vspace(ans)={type(vspace(SEEN['end_box']._value)).__name__}"))
        result = SEEN["bp_result"] = real["backward_pass"](g, end_node)
        EVENTS.append(("backward_pass -> result", fmt(result)))
        return result

    def spy_toposort(end_node):
        for node in real["toposort"](end_node):
            name = "start_node" if node is SEEN["start_node"] else "end_node"
            SEEN.setdefault("order", []).append(name)
            EVENTS.append(("toposort yields", f"{name}, parents={len(node.parents)}"))
            yield node

    def spy_add_outgrads(prev_g_flagged, g):
        out = real["add_outgrads"](prev_g_flagged, g)
        SEEN.setdefault("adds", []).append((prev_g_flagged, g, out))
        EVENTS.append(("add_outgrads", f"prev={fmt(prev_g_flagged)}, g={fmt(g)} -> {fmt(out)}"))
        return out

    diffops._make_vjp, core.trace, VJPNode.__init__ = spy_make_vjp, spy_trace, spy_node_init
    core.backward_pass, core.add_outgrads = spy_backward_pass, spy_add_outgrads
    core.toposort = spy_toposort
    return real


def restore(real):
    diffops._make_vjp, core.trace, VJPNode.__init__ = real["make_vjp"], real["trace"], real["node_init"]
    core.backward_pass, core.add_outgrads = real["backward_pass"], real["add_outgrads"]
    core.toposort = real["toposort"]


def record_stations(df, g, cap):
    """Record what the lesson's station tables state, from the objects the spies saw."""
    start_node, start_box, end_box = SEEN["start_node"], SEEN["start_box"], SEEN["end_box"]
    end_node = end_box._node
    names = {start_node: "R", end_node: "M"}
    record.graph("graph", cap, end_node, labels=names)
    cap.release()
    record.set("station2", {"trace_top": SEEN["top_at_start_box"], "start_box_node": start_box._node,
                            "start_node": {"type": type(start_node).__name__, "parents": start_node.parents},
                            "start_box": {"type": type(start_box).__name__, "value": start_box._value,
                                          "value_type": type(start_box._value).__name__,
                                          "trace": start_box._trace}}, names=names)
    fun, value, args, argnums = SEEN["node_call"]
    record.set("station3", {"fun": fun.__name__, "argvals": args, "parent_argnums": argnums, "ans": value,
                            "M_parents": end_node.parents, "M_vjp_1": tuple(end_node.vjp(1.0)),
                            "end_box": {"type": type(end_box).__name__, "value": end_box._value,
                                        "trace": end_box._trace}}, names=names)
    record.set("station4", {"end_value": end_box._value, "backward_pass_node": SEEN["bp_node"],
                            "trace_top": SEEN["top_after_trace"], "M_parents": end_node.parents,
                            "R_parents": start_node.parents}, names=names)
    seed = SEEN["seed"]
    record.set("station5", {"seed": seed, "seed_type": type(seed).__name__, "seed_shape": seed.shape,
                            "first_yield": SEEN["order"][0],
                            "adds": [{"prev": p, "g": gg, "out": o} for p, gg, o in SEEN["adds"]]})
    record.set("station6", {"order": SEEN["order"], "R_vjp_6": tuple(start_node.vjp(6.0)),
                            "backward_pass_result": SEEN["bp_result"], "result": g,
                            "trace_top": tracer.trace_stack.top})
    record.set("slots", VJPNode.__slots__)


def main():
    announce()
    f = lambda x: x * x
    real = install_spies()
    try:
        df = grad(f)  # creation time: nothing is traced yet
        record.set("station0", {"name": df.__name__, "events": len(EVENTS), "trace_top": tracer.trace_stack.top})
        print(f"grad(f) 创建后: __name__={df.__name__}, 事件数={len(EVENTS)}, "
              f"trace_stack.top={tracer.trace_stack.top}")
        assert EVENTS == [] and tracer.trace_stack.top == -1
        with record.capture() as cap:
            g = df(3.0)  # call time: the whole chain runs now
    finally:
        restore(real)

    print("\ndf(3.0) 运行期间的事件（按时间顺序）:")
    for i, (stage, detail) in enumerate(EVENTS, 1):
        print(f"  {i:>2}. {stage:<30} {detail}")
    print(f"\ngrad(f)(3.0) = {float(g):.1f}")

    start_node, start_box, end_box = SEEN["start_node"], SEEN["start_box"], SEEN["end_box"]
    end_node = end_box._node
    print(f"VJPNode.__slots__ = {VJPNode.__slots__}")
    print(f"len(end_node.parents) = {len(end_node.parents)}; "
          f"两项都是 start_node: {all(p is start_node for p in end_node.parents)}")
    print(f"end_node.vjp(1.0) = ({', '.join(fmt(v) for v in end_node.vjp(1.0))})")

    assert g == 6.0
    assert type(start_box) is ArrayBox and start_box._value == 3.0 and type(start_box._value) is float
    assert start_box._trace == 0 and start_box._node is start_node
    assert type(start_node) is VJPNode and start_node.parents == []
    assert type(end_box) is ArrayBox and end_box._value == 9.0 and end_box._trace == 0
    assert len(end_node.parents) == 2
    assert end_node.parents[0] is start_node and end_node.parents[1] is start_node
    assert SEEN["bp_node"] is end_node
    # new_root bypasses __init__: the only VJPNode.__init__ call is the one for multiply
    assert [stage for stage, _ in EVENTS].count("primitive -> VJPNode(...)") == 1
    assert SEEN["order"] == ["end_node", "start_node"]  # start_node visited once
    assert type(SEEN["seed"]) is np.ndarray and SEEN["seed"].shape == () and float(SEEN["seed"]) == 1.0
    assert type(vspace(end_box._value)) is ArrayVSpace
    (prev1, g1, out1), (prev2, g2, out2) = SEEN["adds"]
    assert prev1 is None and g1 == 3.0 and out1 == (3.0, False)
    assert prev2 == (3.0, False) and g2 == 3.0 and out2 == (6.0, True)
    fun, value, args, argnums = SEEN["node_call"]  # the node is built from raw, unboxed values
    assert fun is anp.multiply and fun.__name__ == "multiply" and type(value) is np.float64
    assert args == (3.0, 3.0) and argnums == (0, 1)
    assert not any(tracer.isbox(a) for a in args)
    assert tuple(end_node.vjp(1.0)) == (3.0, 3.0)
    assert VJPNode.__slots__ == ["parents", "vjp"] and not hasattr(end_node, "value")
    assert tracer.trace_stack.top == -1

    record_stations(df, g, cap)


def self_test_variations():
    """Two variations the lesson's self-test asks about: `x * 2.0` boxes only argument 0, so its node
    has one parent; a constant output builds no node at all, and grad returns the input's zero."""
    start_node = VJPNode.new_root()
    end_value, m = tracer.trace(start_node, lambda x: x * 2.0, 3.0)
    m_vjp = tuple(m.vjp(1.0))
    assert m.parents == (start_node,) and m_vjp == (2.0,) and end_value == 6.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        zero = grad(lambda x: 5.0)(3.0)
    messages = [str(w.message) for w in caught]
    assert messages == ["Output seems independent of input."]
    assert type(zero) is np.ndarray and zero.shape == () and zero == 0.0
    record.set("times_two", {"parents": len(m.parents), "parent_is_root": m.parents[0] is start_node,
                             "vjp_1": m_vjp})
    record.set("constant", {"result": zero, "result_type": type(zero).__name__, "warnings": messages})


if __name__ == "__main__":
    main()
    self_test_variations()
