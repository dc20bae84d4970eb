"""Lesson 09: count real rule calls of forward vs reverse mode, and what reverse mode keeps alive."""

import gc
from collections import Counter

import numpy as onp

import autograd.numpy as np
from autograd import grad, jacobian, make_jvp, make_vjp
from autograd.core import JVPNode, VJPNode, primitive_jvps, primitive_vjps

from _provenance import announce
from _record import record

COUNT = Counter()
PROBE = {"type": None, "alive": []}  # when set: count live nodes of that type after each layer


def loss(x):  # R^n -> R: 3 x (tanh, multiply) + sum = 7 primitive calls per trace
    COUNT["trace"] += 1
    h = x
    for _ in range(3):
        h = np.tanh(h) * x
        if PROBE["type"] is not None:
            PROBE["alive"].append(alive(PROBE["type"]))
    return np.sum(h)


def curve(t):  # R -> R^m (m = len(C)): the opposite shape
    COUNT["trace"] += 1
    return np.sin(t * C)


C = onp.ones(1)


def instrument():
    """Wrap every registered JVP rule and VJP maker (and the closures it returns) with counters."""
    saved_j, saved_v = dict(primitive_jvps), dict(primitive_vjps)

    def count_jvp(rule):
        def counted(*a):
            COUNT["jvp_rule"] += 1
            return rule(*a)
        return counted

    def count_vjp(maker):
        def counted_maker(*a):
            COUNT["vjp_maker"] += 1
            vjp = maker(*a)

            def counted_closure(g):
                COUNT["vjp_closure"] += 1
                return vjp(g)
            return counted_closure
        return counted_maker

    primitive_jvps.update({f: count_jvp(r) for f, r in saved_j.items()})
    primitive_vjps.update({f: count_vjp(m) for f, m in saved_v.items()})
    return lambda: (primitive_jvps.update(saved_j), primitive_vjps.update(saved_v))


def run(fn):
    COUNT.clear()
    out = fn()
    return out, COUNT["trace"], COUNT["jvp_rule"], COUNT["vjp_maker"], COUNT["vjp_closure"]


def captured_arrays(obj, found, seen):
    """Collect distinct ndarrays reachable from obj via closure cells, tuples and VJPNode slots."""
    if isinstance(obj, onp.ndarray):
        found[id(obj)] = obj
    elif id(obj) not in seen:
        seen.add(id(obj))
        if isinstance(obj, VJPNode):  # the graph itself: parents + each node's closure
            captured_arrays(obj.vjp, found, seen)
            captured_arrays(obj.parents, found, seen)
        for cell in getattr(obj, "__closure__", None) or ():
            captured_arrays(cell.cell_contents, found, seen)
        if isinstance(obj, (tuple, list)):
            for item in obj:
                captured_arrays(item, found, seen)


def alive(node_type):
    gc.collect()
    return sum(type(o) is node_type for o in gc.get_objects())


def main():
    announce()
    global C
    rng = onp.random.default_rng(0)
    restore = instrument()
    try:
        x0 = rng.normal(size=3)
        _, _, per_pass, _, _ = run(lambda: make_jvp(loss)(x0)(onp.ones(3)))  # one JVP pass
        print(f"loss 一次 JVP pass 的 JVP 规则调用数 P = {per_pass}")
        assert per_pass == 7  # 3 x (tanh, multiply) + sum
        record.set("per_pass", per_pass)
        print("\n表 1 · loss: R^n -> R 的完整梯度")
        print("   n | fwd 求值 | fwd JVP规则 | rev 求值 | rev VJP maker | rev VJP closure")
        for n in [1, 4, 16, 64]:
            x = rng.normal(size=n)
            basis = onp.eye(n)
            g_fwd, ft, fj, _, _ = run(lambda: onp.array([make_jvp(loss)(x)(e)[1] for e in basis]))
            g_rev, rt, _, rm, rc = run(lambda: grad(loss)(x))
            print(f"{n:4d} | {ft:8d} | {fj:11d} | {rt:8d} | {rm:13d} | {rc:15d}")
            assert onp.allclose(g_fwd, g_rev)
            assert ft == n and fj == n * per_pass  # forward: n passes, each P rule calls
            assert rt == 1 and rm == per_pass and rc == per_pass  # reverse: one pass, independent of n
            record.append("table1", {"n": n, "fwd_evals": ft, "fwd_jvp_rules": fj, "rev_evals": rt,
                                     "rev_vjp_makers": rm, "rev_vjp_closures": rc})

        print("\n表 2 · curve: R -> R^m 的完整 Jacobian（形状反过来）")
        print("   m | fwd 求值 | fwd JVP规则 | rev 求值 | rev VJP maker | rev VJP closure")
        for m in [1, 4, 16, 64]:
            C = onp.arange(1.0, m + 1)
            (_, j_fwd), ft, fj, _, _ = run(lambda: make_jvp(curve)(0.3)(1.0))
            j_rev, rt, _, rm, rc = run(lambda: jacobian(curve)(0.3))
            print(f"{m:4d} | {ft:8d} | {fj:11d} | {rt:8d} | {rm:13d} | {rc:15d}")
            assert onp.allclose(j_fwd, j_rev)
            assert ft == 1 and fj == 2 and rt == 1 and rm == 2 and rc == 2 * m
            record.append("table2", {"m": m, "fwd_evals": ft, "fwd_jvp_rules": fj, "rev_evals": rt,
                                     "rev_vjp_makers": rm, "rev_vjp_closures": rc})
    finally:
        restore()

    print("\n表 3 · reverse mode 前向结束后保存了什么（未插桩）")
    print("   n | 存活 VJPNode | closure 捕获的不同数组 | 捕获字节 | 字节/n | 之后存活 JVPNode")
    for n in [1, 4, 16, 64]:
        x = rng.normal(size=n)
        vjp, _ = make_vjp(loss)(x)
        found = {}
        captured_arrays(vjp, found, set())
        nbytes = sum(a.nbytes for a in found.values())
        kept = alive(VJPNode)
        make_jvp(loss)(x)(onp.ones(n))
        print(f"{n:4d} | {kept:12d} | {len(found):22d} | {nbytes:8d} | {nbytes // n:6d} | {alive(JVPNode):16d}")
        assert kept == per_pass + 1  # 7 primitive nodes + root, all reachable from vjp
        assert len(found) == 6 and nbytes == 6 * 8 * n  # x, 3 tanh outputs, 2 hidden h
        jvp_after = alive(JVPNode)
        assert jvp_after == 0
        del vjp
        vjp_after_del = alive(VJPNode)
        assert vjp_after_del == 0  # the graph lives exactly as long as the vjp closure
        record.append("table3", {"n": n, "alive_vjp_nodes": kept, "captured_arrays": len(found),
                                 "captured_bytes": nbytes, "bytes_per_n": nbytes // n,
                                 "alive_jvp_nodes_after": jvp_after, "alive_vjp_nodes_after_del": vjp_after_del})

    during = {}
    for node_type, fn in [(JVPNode, lambda: make_jvp(loss)(x)(onp.ones(n))), (VJPNode, lambda: make_vjp(loss)(x))]:
        PROBE["type"], PROBE["alive"] = node_type, []
        fn()
        during[node_type.__name__] = PROBE["alive"]
    PROBE["type"] = None
    print(f"\n前向进行中、每层结束时存活的节点数 (n={n}): {during}")
    assert during["JVPNode"] == [2, 2, 2]  # root x + current h: does not grow with depth
    assert during["VJPNode"] == [3, 5, 7]  # root + 2 nodes per layer: the whole graph so far
    record.set("during", {"n": n, **during})

    # The graph the vjp closure keeps (figure and node counts), captured from a separate run.
    with record.capture() as cap:
        vjp, _ = make_vjp(loss)(x)
    end = cap.nodes[-1]["obj"]
    labels = {}
    for e in cap.nodes:
        name = {"tanh": "T", "multiply": "M", "sum": "S"}.get(e["fun"], "X")
        k = sum(1 for o in cap.nodes[: e["index"]] if o["fun"] == e["fun"]) + 1
        labels[e["obj"]] = name if name in ("X", "S") else f"{name}{k}"
    record.graph("vjp_graph", cap, end, labels=labels)
    teaching = {"X": "x", "S": "s"} | {f"T{k}": f"t{k}" for k in (1, 2, 3)} | {f"M{k}": f"h{k}" for k in (1, 2, 3)}
    held = {}
    for e in cap.nodes:  # which arrays each node's own vjp closure holds, named after the node that made them
        found = {}
        captured_arrays(e["obj"].vjp, found, set())
        owners = [cap.owner(a) for a in found.values()]
        assert None not in owners  # every captured array is some node's value
        held[labels[e["obj"]]] = sorted(teaching[labels[cap.nodes[i]["obj"]]] for i in owners)
    assert held == {"X": [], "T1": ["x"], "M1": ["t1", "x"], "T2": ["h1"], "M2": ["t2", "x"], "T3": ["h2"],
                    "M3": ["t3", "x"], "S": []}
    record.set("closure_arrays", held)
    counts = cap.primitive_counts()
    assert counts == {"multiply": 3, "sum": 1, "tanh": 3}
    record.set("primitive_counts", counts)
    cap.release()
    del vjp, end, labels
    left = alive(VJPNode)
    assert left == 0
    record.set("alive_after_del", left)
    print(f"make_vjp(loss) 的图: {counts}；del vjp 之后存活 VJPNode: {left}")


KEPT = []  # a "global list" a user might keep intermediate boxes in (self-test 5)


def loss_exp(x):  # loss with exp in place of tanh (self-test 4)
    h = x
    for _ in range(3):
        h = np.exp(h) * x
    return np.sum(h)


def loss_keeping(x):  # loss that stores the box of the second layer's h in a global list
    h = x
    for k in range(3):
        h = np.tanh(h) * x
        if k == 1:
            KEPT.append(h)
    return np.sum(h)


def self_test_cases():
    """What the lesson's self-test asks about, recorded (nothing printed)."""
    x = onp.random.default_rng(1).normal(size=8)
    captured = {}
    for name, fn in (("tanh", loss), ("exp", loss_exp)):
        vjp, _ = make_vjp(fn)(x)
        found = {}
        captured_arrays(vjp, found, set())
        captured[name] = {"arrays": len(found), "bytes_per_n": sum(a.nbytes for a in found.values()) // x.size}
        del vjp
    assert captured == {"tanh": {"arrays": 6, "bytes_per_n": 48}, "exp": {"arrays": 4, "bytes_per_n": 32}}
    record.set("self_test.captured", captured)

    vjp, _ = make_vjp(loss_keeping)(x)
    with_vjp = alive(VJPNode)
    del vjp
    after_del = alive(VJPNode)  # the box in KEPT still holds the first two layers and the root
    KEPT.clear()
    after_clear = alive(VJPNode)
    assert (with_vjp, after_del, after_clear) == (8, 5, 0)
    record.set("self_test.kept_box", {"with_vjp": with_vjp, "after_del_vjp": after_del, "after_clear": after_clear})


if __name__ == "__main__":
    main()
    self_test_cases()
