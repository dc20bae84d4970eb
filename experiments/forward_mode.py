"""Lesson 08: forward mode computes each tangent the moment a JVPNode is created."""

import gc
import math

import autograd.core as core
import autograd.numpy as np
from autograd import grad, make_jvp, make_vjp
from autograd.core import JVPNode, defvjp, primitive_jvps
from autograd.extend import primitive
from autograd.tracer import trace

from _provenance import announce
from _record import record as recorder

EVENTS = []  # (what happened, detail) in time order
RULE_CALLS = []  # (rule name, argnums, tangent it returned)


def record(label, box):
    """Called inside f right after a primitive returns: read the new Box's node."""
    node = box._node
    if isinstance(node, JVPNode):
        state = f"g={node.g:.6f}"
    else:  # VJPNode during grad: only parents and a closure for later
        state = f"parents={len(node.parents)}, vjp closure 已建好, 无 g 属性={not hasattr(node, 'g')}"
    EVENTS.append((f"函数体读取 {label}", f"{type(node).__name__}: value={box._value:.6f}, {state}"))


def f(x):
    s = np.sin(x)
    record("s = sin(x)", s)
    m = s * x
    record("m = s * x", m)
    y = np.exp(m)
    record("y = exp(m)", y)
    return y


def wrap_rule(fun, name):
    """Replace primitive_jvps[fun] so every call of the JVP rule is logged."""
    original = primitive_jvps[fun]

    def logged(argnums, gs, ans, args, kwargs):
        out = original(argnums, gs, ans, args, kwargs)
        RULE_CALLS.append((name, argnums, float(out)))
        recorder.append("rules", {"rule": name, "argnums": argnums, "parent_gs": list(gs), "ans": ans, "g": out})
        parent_gs = ", ".join(f"{float(g):.6f}" for g in gs)
        EVENTS.append((f"JVP 规则 {name}", f"argnums={argnums}, parent_gs=[{parent_gs}] -> g={float(out):.6f}"))
        return out

    primitive_jvps[fun] = logged
    return original


def show(title):
    print(f"\n{title}:")
    for i, (what, detail) in enumerate(EVENTS, 1):
        print(f"  {i}. {what} | {detail}")
    seen = [what.split()[0] for what, _ in EVENTS]
    EVENTS.clear()
    return seen


def jvp_with_end(fun, x, v):
    """make_jvp(fun)(x)(v), also returning the end node (read from the output Box inside fun)."""
    seen = {}

    def watched(x_box):
        out = fun(x_box)
        seen["end"] = out._node
        return out

    value, tangent = make_jvp(watched)(x)(v)
    return value, tangent, seen["end"]


def diamond_forward(x=3.0, v=1.0):
    """Lesson 05's diamond x*x + sin(x) at x = 3, in forward mode: the tangent each edge carries
    into its child and every node's g. A rule called with one argument alone gives that edge's
    term; the node's g (what JVPNode.__init__ stored) is their sum. R, M, S, A as in lesson 05."""
    edges, originals = [], {}

    def split(fun, name):
        original = originals[fun] = primitive_jvps[fun]

        def rule(argnums, gs, ans, args, kwargs):
            out = original(argnums, gs, ans, args, kwargs)
            terms = [original((a,), (g,), ans, args, kwargs) for a, g in zip(argnums, gs)]
            total = terms[0]
            for t in terms[1:]:
                total = total + t  # what sum_outgrads adds, in the same order
            assert total == out, (name, terms, out)
            edges.append((name, terms))
            return out

        primitive_jvps[fun] = rule

    for fun, name in [(np.multiply, "multiply"), (np.sin, "sin"), (np.add, "add")]:
        split(fun, name)
    try:
        with recorder.capture() as cap:
            _, tangent, end = jvp_with_end(lambda t: t * t + np.sin(t), x, v)
    finally:
        for fun, rule in originals.items():
            primitive_jvps[fun] = rule
    names = dict(zip((n["obj"] for n in cap.nodes), ["R", "M", "S", "A"]))
    assert [n["fun"] for n in cap.nodes] == [None, "multiply", "sin", "add"] and len(cap.nodes) == 4
    assert [name for name, _ in edges] == ["multiply", "sin", "add"]
    recorder.graph("diamond.graph", cap, end, labels=names)
    for node, (_, terms) in zip(cap.nodes[1:], edges):  # one term per argument, in argument order
        for term in terms:
            recorder.append("diamond.edges", {"from": names[node["obj"]], "ingrad": term})
    recorder.set("diamond.g", {names[n["obj"]]: n["g"] for n in cap.nodes})
    cap.release()
    terms = {name: [float(t) for t in ts] for name, ts in edges}
    print(f"\n菱形 x*x + sin(x)，x = {x}，v = {v}（前向模式，每条边送进子节点的 tangent）:")
    print(f"  M = x*x : {terms['multiply'][0]:.6f} + {terms['multiply'][1]:.6f}")
    print(f"  S = sin x: {terms['sin'][0]:.6f}")
    print(f"  A = M + S: {terms['add'][0]:.6f} + ({terms['add'][1]:.6f}) = {float(tangent):.6f}")
    assert terms["multiply"] == [3.0, 3.0] and math.isclose(terms["sin"][0], math.cos(x))
    assert math.isclose(float(tangent), 2 * x + math.cos(x))


def main():
    announce()
    x, v = 1.0, 1.0

    # Hand derivation with dual numbers: carry (value, tangent) pairs.
    s, ds = math.sin(x), math.cos(x) * v
    m, dm = s * x, ds * x + s * v
    y, dy = math.exp(m), math.exp(m) * dm
    print("手算 (value, tangent):")
    for name, val, tan in [("x", x, v), ("s", s, ds), ("m", m, dm), ("y", y, dy)]:
        print(f"  {name}: {val:.6f}, {tan:.6f}")

    backward_calls = []
    real_backward = core.backward_pass
    core.backward_pass = lambda g, end_node: backward_calls.append(1) or real_backward(g, end_node)
    originals = {fun: wrap_rule(fun, name)
                 for fun, name in [(np.sin, "sin"), (np.multiply, "multiply"), (np.exp, "exp")]}
    try:
        with recorder.capture() as cap:
            value, tangent, end = jvp_with_end(f, x, v)
        recorder.graph("jvp_graph", cap, end)
        cap.release()
        fwd_order = show("make_jvp 运行期间的事件（按时间顺序）")
        jvp_backward_calls = len(backward_calls)
        g_rev = grad(f)(x)
        rev_order = show("对照：grad 的前向阶段（reverse mode）")
    finally:
        for fun, rule in originals.items():
            primitive_jvps[fun] = rule
        core.backward_pass = real_backward

    print(f"\nmake_jvp 结果: value={float(value):.6f}, tangent={float(tangent):.6f}")
    print(f"grad(f)(1.0) = {float(g_rev):.6f}")
    print(f"backward_pass 调用次数: make_jvp 期间 {jvp_backward_calls}, grad 期间 {len(backward_calls) - jvp_backward_calls}")
    print(f"JVPNode.__slots__ = {JVPNode.__slots__}")

    assert abs(value - y) < 1e-12 and abs(tangent - dy) < 1e-12
    assert [(n, a) for n, a, _ in RULE_CALLS] == [("sin", (0,)), ("multiply", (0, 1)), ("exp", (0,))]
    assert all(abs(g - h) < 1e-12 for (_, _, g), h in zip(RULE_CALLS, [ds, dm, dy]))
    assert abs(g_rev - tangent) < 1e-12  # scalar input, v = 1: Jv equals the gradient
    # each rule call happens right before f's next line can read the new node's g
    assert fwd_order == ["JVP", "函数体读取"] * 3
    assert rev_order == ["函数体读取"] * 3  # no JVP rule runs in reverse mode
    assert jvp_backward_calls == 0 and len(backward_calls) == 1
    assert JVPNode.__slots__ == ["g"] and "parents" not in JVPNode.__slots__
    diamond_forward()
    recorder.set("hand", {"x": x, "v": v, "s": s, "ds": ds, "m": m, "dm": dm, "y": y, "dy": dy})
    recorder.set("result", {"value": value, "tangent": tangent, "pair": (value, tangent), "grad": g_rev,
                            "backward_calls": {"make_jvp": jvp_backward_calls,
                                               "grad": len(backward_calls) - jvp_backward_calls}})


class JVPNodeWithParents(JVPNode):
    """A JVPNode that also keeps its parents (self-test 6): nothing else changes."""

    __slots__ = ["parents"]

    def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
        super().__init__(value, fun, args, kwargs, parent_argnums, parents)
        self.parents = parents

    def initialize_root(self, g):
        super().initialize_root(g)
        self.parents = []


def alive(node_type):
    gc.collect()
    return sum(type(o) is node_type for o in gc.get_objects())


def self_test_cases():
    """What the lesson's self-test asks about, recorded (nothing printed)."""
    # 1. two directions: make_jvp runs f once per jvp(v); make_vjp runs it once for any number of vjp(w)
    runs = [0]

    def counted_f(x):
        runs[0] += 1
        return np.sin(x) * x

    x = np.array([0.5, 1.0])
    jvp = make_jvp(counted_f)(x)
    after_make_jvp = runs[0]
    tangents = [jvp(v)[1] for v in np.eye(2)]
    jvp_runs = runs[0]
    vjp, _ = make_vjp(counted_f)(x)
    after_make_vjp = runs[0] - jvp_runs
    cotangents = [vjp(w) for w in np.eye(2)]
    vjp_runs = runs[0] - jvp_runs
    assert (after_make_jvp, jvp_runs, after_make_vjp, vjp_runs) == (0, 2, 1, 1)
    assert np.allclose(tangents, cotangents)  # the Jacobian is diagonal here: columns equal rows
    recorder.set("self_test.directions", {"after_make_jvp": after_make_jvp, "jvp_runs": jvp_runs,
                                        "after_make_vjp": after_make_vjp, "vjp_runs": vjp_runs})

    # 3. a primitive with a VJP rule only: grad works, make_jvp fails when the primitive runs
    @primitive
    def cube(v):
        return v**3

    defvjp(cube, lambda ans, v: lambda g: 3 * v**2 * g)
    g = grad(cube)(2.0)
    try:
        make_jvp(cube)(2.0)(1.0)
    except NotImplementedError as exc:
        tb = exc.__traceback__
        while tb.tb_next is not None:
            tb = tb.tb_next
        no_jvp = {"error": str(exc), "raised_in": tb.tb_frame.f_code.co_qualname}
        del tb  # the traceback's frames would keep that trace's nodes alive
    assert g == 12.0 and no_jvp["raised_in"] == "JVPNode.__init__"
    recorder.set("self_test.no_jvp", {"grad": g, **no_jvp})

    # 5. def_linear(anp.multiply): one rule call (one multiply) per traced argument
    rule = primitive_jvps[np.multiply]
    cell = rule.__closure__[rule.__code__.co_freevars.index("jvpmaker")]
    real_maker, calls = cell.cell_contents, []

    def counted_maker(argnum, g, ans, args, kwargs):
        calls.append(argnum)
        return real_maker(argnum, g, ans, args, kwargs)

    linear = {}
    cell.cell_contents = counted_maker
    try:
        for label, fn in (("x_times_2", lambda x: x * 2.0), ("x_times_x", lambda x: x * x)):
            calls.clear()
            tangent = make_jvp(fn)(3.0)(1.0)[1]
            linear[label] = {"argnums": tuple(calls), "tangent": tangent}  # parent_argnums, a tuple
    finally:
        cell.cell_contents = real_maker
    assert linear["x_times_2"] == {"argnums": (0,), "tangent": 2.0}
    assert linear["x_times_x"] == {"argnums": (0, 1), "tangent": 6.0}
    recorder.set("self_test.def_linear", linear)

    # 6. a chain of 50 sin's: live JVP nodes at its end, without and with a parents slot
    def chain(x):
        for _ in range(50):
            x = np.sin(x)
        during[type(x._node).__name__] = alive(type(x._node))
        return x

    during = {}
    for node_type in (JVPNode, JVPNodeWithParents):
        trace(node_type.new_root(1.0), chain, 0.5)
    assert during == {"JVPNode": 2, "JVPNodeWithParents": 51}  # the root and the newest node, or all 51
    recorder.set("self_test.alive", during)


if __name__ == "__main__":
    main()
    self_test_cases()
