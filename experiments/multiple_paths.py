"""05 · Watch the real add_outgrads calls where several backward paths meet.

Temporarily wraps three globals of autograd.core that are looked up at call
time: backward_pass (seed), toposort (current node), add_outgrads (every
contribution and its flag). R, M, S, A, T are teaching labels, not VJPNode fields.
"""

import inspect
import math
import sys

import numpy as np

import autograd.core as core
import autograd.numpy as anp
import autograd.util as util
from autograd import grad
from autograd.extend import primitive

from _provenance import announce
from _record import record


def record_backward(f, x, name_nodes):
    """Run grad(f)(x); return the gradient and what backward_pass did, in order."""
    real_backward, real_toposort, real_add = core.backward_pass, core.toposort, core.add_outgrads
    log = {"labels": {}, "order": [], "calls": [], "seed": None, "outgrads": [], "topo": [], "at_add": []}
    current = {"node": None, "k": 0}

    def watched_backward(g, end_node):
        log["seed"] = g
        return real_backward(g, end_node)

    def watched_toposort(end_node):
        log["labels"].update(name_nodes(end_node))
        gen = real_toposort(end_node)
        for node in gen:
            current["node"], current["k"] = node, 0
            log["order"].append(log["labels"][node])
            log["outgrads"].append(dict(sys._getframe(1).f_locals["outgrads"]))  # backward_pass's own dict
            topo = gen.gi_frame.f_locals  # toposort's own state at this yield
            log["topo"].append((dict(topo["child_counts"]), list(topo["childless_nodes"])))
            yield node
        log["outgrads"].append(dict(sys._getframe(1).f_locals["outgrads"]))

    def watched_add(prev_g_flagged, g):
        before = show_pair(prev_g_flagged)  # text snapshot taken before the call
        log["at_add"].append(dict(sys._getframe(1).f_locals["outgrads"]))  # before this add is stored
        result = real_add(prev_g_flagged, g)
        node = current["node"]
        parent = node.parents[current["k"]]  # same pairing as zip(node.parents, ingrads)
        current["k"] += 1
        names = log["labels"][node], log["labels"][parent]
        text = f"prev={before} | ingrad={show(g)} ({type(g).__name__}) | result={show_pair(result)}"
        log["calls"].append((*names, prev_g_flagged, g, result, text))
        return result

    core.backward_pass, core.toposort, core.add_outgrads = watched_backward, watched_toposort, watched_add
    try:
        g = grad(f)(x)
    finally:
        core.backward_pass, core.toposort, core.add_outgrads = real_backward, real_toposort, real_add
    return g, log


def show(v):
    return f"{float(np.sum(v)):.6f}"


def show_pair(pair):
    return "None" if pair is None else f"({show(pair[0])}, {pair[1]})"


def record_run(key, f, x, name_nodes):
    """record_backward inside a graph capture; records the graph and every step under ``key``."""
    with record.capture() as cap:
        g, log = record_backward(f, x, name_nodes)
    labels = log["labels"]
    end = next(node for node, name in labels.items() if name == log["order"][0])
    record.graph(f"{key}.graph", cap, end, labels=labels)
    cap.release()
    record.set(f"{key}.seed", log["seed"])
    record.set(f"{key}.order", log["order"])
    record.set(f"{key}.edge_counts", edge_counts(log))
    for (node, parent, prev, ingrad, result, _), before in zip(log["calls"], log["at_add"]):
        record.append(f"{key}.calls", {"from": node, "to": parent, "prev": prev, "ingrad": ingrad,
                                       "result": result, "outgrads_before": before}, names=labels)
    # backward_pass's outgrads as toposort hands it each node (before the pop), and at the end
    for name, state in zip(log["order"] + ["end"], log["outgrads"]):
        record.append(f"{key}.outgrads", {"before": name, "outgrads": state}, names=labels)
    for name, (counts, childless) in zip(log["order"], log["topo"]):
        record.append(f"{key}.toposort", {"yield": name, "child_counts": counts, "childless_nodes": childless},
                      names=labels)
    record.set(f"{key}.grad", g)
    return g, log


def edge_counts(log):
    """Recount, from the real parents tuples, what toposort's child_counts holds after phase 1."""
    labels, order = log["labels"], log["order"]
    counts = {name: 0 for name in order}
    counts[order[0]] = 1  # the end node is pushed once at the start
    for node in labels:
        for parent in node.parents:
            counts[labels[parent]] += 1
    return counts


def report(title, g, log):
    labels, order = log["labels"], log["order"]
    print(f"== {title} ==")
    seed = log["seed"]
    print(f"seed = {show(seed)} ({type(seed).__name__}, shape {np.shape(seed)})")
    for node, name in sorted(labels.items(), key=lambda kv: order.index(kv[1])):
        inner = ", ".join(labels[p] for p in node.parents)
        print(f"{name}.parents = {type(node.parents).__name__}[{inner}]")
    print("toposort order:", " -> ".join(order))
    counts = edge_counts(log)
    print("edge counts (as toposort phase 1 counts them):", ", ".join(f"{n}={counts[n]}" for n in order))
    for i, (node, parent, *_, text) in enumerate(log["calls"], 1):
        print(f"call {i}: {node} -> {parent} | {text}")
    print(f"grad = {show(g)} ({type(g).__name__})")


def main():
    announce()

    # Example 1: the two 3's of x * x.
    g, log = record_run("xx", lambda x: x * x, 3.0, lambda end: {end: "M", end.parents[0]: "R"})
    report("grad(lambda x: x * x)(3.0)", g, log)
    calls = log["calls"]
    assert float(log["seed"]) == 1.0 and log["order"] == ["M", "R"]
    assert edge_counts(log) == {"M": 1, "R": 2}
    assert [(c[0], c[1]) for c in calls] == [("M", "R"), ("M", "R")]
    assert [float(c[3]) for c in calls] == [3.0, 3.0]  # the two contributions
    assert all(type(c[3]) is np.float64 for c in calls)
    assert calls[0][2] is None and calls[0][4] == (3.0, False)
    assert calls[1][2] == (3.0, False) and calls[1][4] == (6.0, True)
    assert float(g) == 6.0
    root = next(node for node, name in log["labels"].items() if name == "R")
    record.set("xx.R_vjp", tuple(root.vjp(g)))  # initialize_root's lambda: nothing flows further
    record.set("xx.parents_types", {name: type(node.parents).__name__ for node, name in log["labels"].items()})

    # Example 2: f(x) = x*x + sin(x); R is reached through M (twice) and through S.
    def names2(end):
        m, s = end.parents
        return {end: "A", m: "M", s: "S", m.parents[0]: "R"}

    x = 3.0
    g, log = record_run("diamond", lambda x: x * x + anp.sin(x), x, names2)
    report("grad(lambda x: x * x + sin(x))(3.0)", g, log)
    calls = log["calls"]
    assert log["order"] == ["A", "S", "M", "R"]
    assert edge_counts(log) == {"A": 1, "S": 1, "M": 1, "R": 3}
    to_r = [c for c in calls if c[1] == "R"]
    assert [c[0] for c in to_r] == ["S", "M", "M"]
    assert math.isclose(float(to_r[0][3]), math.cos(x))
    assert [float(c[3]) for c in to_r[1:]] == [3.0, 3.0]
    assert [c[4][1] for c in to_r] == [False, True, True]
    assert calls[0][3] is calls[1][3] is log["seed"]
    print("A hands the seed object itself to both M and S:", calls[0][3] is calls[1][3] is log["seed"])
    assert math.isclose(float(g), 2 * x + math.cos(x))
    print(f"check 2x + cos(x) = {2 * x + math.cos(x):.6f}")

    # Example 3: the same function on a 1-element array, to see what the flag buys.
    def names3(end):
        a = end.parents[0]
        m, s = a.parents
        return {end: "T", a: "A", m: "M", s: "S", m.parents[0]: "R"}

    g, log = record_run("inplace", lambda x: anp.sum(x * x + anp.sin(x)), np.array([3.0]), names3)
    report("grad(lambda x: sum(x * x + sin(x)))(array([3.0]))", g, log)
    first, second, third = [c for c in log["calls"] if c[1] == "R"]
    assert second[4][0] is not second[2][0] and second[4][0] is not second[3]
    print("2nd add into R (stored flag False): new array built:", second[4][0] is not second[2][0])
    assert third[4][0] is third[2][0]
    record.set("inplace.second_add_new_array", second[4][0] is not second[2][0])
    record.set("inplace.third_add_same_array", third[4][0] is third[2][0])
    print("3rd add into R (stored flag True): same array updated in place:", third[4][0] is third[2][0])
    assert g is third[4][0] and np.allclose(g, 2 * 3.0 + np.cos(3.0))


def variant(module, name, old, new):
    """The real function `name` of `module`, recompiled with one line changed (what a self-test asks)."""
    src = inspect.getsource(getattr(module, name))
    assert src.count(old) == 1, (name, old)
    namespace = dict(vars(module))
    exec(src.replace(old, new), namespace)
    return namespace[name], namespace


def outgrads_sizes(backward, namespace, f, x):
    """grad(f)(x) with `backward` as core.backward_pass; the size of its outgrads at each node."""
    sizes, real_backward, real_toposort = [], core.backward_pass, namespace["toposort"]

    def watched_toposort(end_node):
        for node in real_toposort(end_node):
            sizes.append(len(sys._getframe(1).f_locals["outgrads"]))
            yield node

    namespace["toposort"], core.backward_pass = watched_toposort, backward
    try:
        g = grad(f)(x)
    finally:
        namespace["toposort"], core.backward_pass = real_toposort, real_backward
    return g, sizes


def self_test_cases():
    """The lesson's self-test, recorded (nothing printed): pop vs get, toposort's phase 1, x * x * x,
    the first flag, the last node, a primitive without a VJP, and add as a primitive."""
    diamond = lambda x: x * x + anp.sin(x)

    # 1. outgrads.pop -> outgrads.get: same gradient, but nothing leaves the dict
    get_backward, get_ns = variant(core, "backward_pass", "outgrads.pop(node)", "outgrads.get(node)")
    g_pop, pop_sizes = outgrads_sizes(core.backward_pass, vars(core), diamond, 3.0)
    g_get, get_sizes = outgrads_sizes(get_backward, get_ns, diamond, 3.0)
    assert g_pop == g_get and max(get_sizes) > max(pop_sizes)
    record.set("self_test.pop_get", {"pop": {"grad": g_pop, "sizes": pop_sizes},
                                     "get": {"grad": g_get, "sizes": get_sizes}})

    # 2. toposort's phase 1 pushing the parents again on every visit: counts paths, not edges
    square_of_square = lambda x: (lambda y: y * y)(x * x)
    repush, _ = variant(util, "toposort", "            child_counts[node] += 1\n",
                        "            child_counts[node] += 1\n            stack.extend(parents(node))\n")
    runs = {}
    for label, topo in (("real", core.toposort), ("repush", repush)):
        counts = []

        def first_counts(end_node, topo=topo, counts=counts):
            gen, yielded = topo(end_node), 0
            for node in gen:
                if not yielded:
                    counts.extend(sorted(gen.gi_frame.f_locals["child_counts"].values()))
                yielded += 1
                yield node
            counts.append(yielded)

        real_toposort = core.toposort
        core.toposort = first_counts
        try:
            g = grad(square_of_square)(3.0)
        finally:
            core.toposort = real_toposort
        runs[label] = {"grad": g, "counts": counts[:-1], "yielded": counts[-1]}
    assert runs["real"]["grad"] == 4 * 3.0**3 and runs["repush"]["grad"] != runs["real"]["grad"]
    assert runs["real"]["counts"] == [1, 2, 2] and runs["repush"]["counts"] == [1, 2, 4]
    record.set("self_test.toposort_repush", runs)

    # 3. x * x * x: three contributions reach R; watch which VSpace method each one uses
    used, real_add, real_mut_add = [], core.VSpace.add, core.VSpace.mut_add

    def add(self, x_prev, x_new):
        used.append("add")
        return real_add(self, x_prev, x_new)

    def mut_add(self, x_prev, x_new):
        used.append("mut_add")
        return real_mut_add(self, x_prev, x_new)

    core.VSpace.add, core.VSpace.mut_add = add, mut_add
    try:
        g, log = record_run("cube", lambda x: x * x * x, 3.0,
                            lambda end: {end: "M2", end.parents[0]: "M1", end.parents[1]: "R"})
    finally:
        core.VSpace.add, core.VSpace.mut_add = real_add, real_mut_add
    to_r = [(c[0], float(c[3]), float(c[4][0]), c[4][1]) for c in log["calls"] if c[1] == "R"]
    assert to_r == [("M2", 9.0, 9.0, False), ("M1", 9.0, 18.0, True), ("M1", 9.0, 27.0, True)]
    assert used == ["add", "mut_add"] and g == 27.0
    record.set("cube.vspace_calls", used)

    # 4. storing the first contribution as mutable: add hands one object to two parents
    bad_add, _ = variant(core, "add_outgrads", "return g, False", "return g, True")
    shared = lambda x: (lambda s, c: anp.sum((s + c) + s))(anp.sin(x), anp.cos(x))
    x = np.array([0.5, 1.5])
    good = grad(shared)(x)
    real_add_outgrads, core.add_outgrads = core.add_outgrads, bad_add
    try:
        wrong = grad(shared)(x)
    finally:
        core.add_outgrads = real_add_outgrads
    assert np.allclose(good, 2 * np.cos(x) - np.sin(x)) and not np.allclose(wrong, good)
    record.set("self_test.first_flag_true", {"x": x, "right": good, "wrong": wrong})

    # 6. a primitive without a VJP fails in the forward pass, inside VJPNode.__init__
    @primitive
    def twice(v):
        return 2.0 * v

    backward_calls, real_backward = [], core.backward_pass
    core.backward_pass = lambda g, end_node: backward_calls.append(1) or real_backward(g, end_node)
    try:
        grad(lambda v: twice(v) * v)(3.0)
    except NotImplementedError as exc:
        tb = exc.__traceback__
        while tb.tb_next is not None:
            tb = tb.tb_next
        missing = {"error": str(exc), "raised_in": tb.tb_frame.f_code.co_qualname,
                   "backward_pass_calls": len(backward_calls)}
    finally:
        core.backward_pass = real_backward
    assert missing["raised_in"] == "VJPNode.__init__" and missing["backward_pass_calls"] == 0
    record.set("self_test.no_vjp", missing)

    # 7. VSpace.add is a primitive: the inner backward pass's addition becomes a node of the outer trace
    funs, real_init = [], core.VJPNode.__init__

    def init(self, value, fun, args, kwargs, parent_argnums, parents):
        funs.append(fun)
        real_init(self, value, fun, args, kwargs, parent_argnums, parents)

    core.VJPNode.__init__ = init
    try:
        first = grad(lambda x: x * x)(3.0)
        first_adds = sum(f is core.VSpace.add for f in funs)
        second = grad(grad(lambda x: x * x))(3.0)
        second_adds = sum(f is core.VSpace.add for f in funs) - first_adds
    finally:
        core.VJPNode.__init__ = real_init
    assert (first, second, first_adds, second_adds) == (6.0, 2.0, 0, 1)
    record.set("self_test.add_primitive", {"first": {"grad": first, "add_nodes": first_adds},
                                           "second": {"grad": second, "add_nodes": second_adds}})


if __name__ == "__main__":
    main()
    self_test_cases()
