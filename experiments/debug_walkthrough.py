"""Record the real call sequence of grad(f)(3.0) inside the imported autograd.

A sys.setprofile hook sees every Python-level call; we keep only frames whose
source file lies inside the autograd package that was actually imported.
"""

import linecache
import os
import sys
from collections import Counter

import autograd
import autograd.core as core
import autograd.util as util
from autograd import grad

from _provenance import announce
from _record import record

PKG_DIR = os.path.dirname(os.path.abspath(autograd.__file__))


def in_package(code):
    return os.path.abspath(code.co_filename).startswith(PKG_DIR + os.sep)


def qualified_name(code):
    module = os.path.relpath(os.path.abspath(code.co_filename), PKG_DIR)[:-3]
    return module.replace(os.sep, ".") + "." + code.co_qualname


def def_line(code):
    """co_firstlineno points at the first decorator; walk down to the `def`."""
    line = code.co_firstlineno
    while linecache.getline(code.co_filename, line).lstrip().startswith("@"):
        line += 1
    return line


def record_calls(thunk):
    """Run thunk() under sys.setprofile; return its result and the package calls."""
    calls, seen_frames, returns = [], {}, {}

    def depth(frame):
        d, f = 0, frame.f_back
        while f is not None:
            d += in_package(f.f_code)
            f = f.f_back
        return d

    def hook(frame, event, arg):
        if not in_package(frame.f_code):
            return
        if event == "call":
            resumed = frame in seen_frames        # generators re-enter on each next()
            seen_frames[frame] = len(calls)
            raw = frame.f_locals.get("f_raw")     # what a primitive wrapper wraps
            wraps = getattr(raw, "__name__", "") if frame.f_code.co_name == "f_wrapped" else ""
            calls.append([depth(frame), frame.f_code, resumed, wraps])
        elif event == "return":
            returns.setdefault(frame.f_code.co_qualname, []).append(arg)

    sys.setprofile(hook)
    try:
        result = thunk()
    finally:
        sys.setprofile(None)
    return result, calls, returns


def print_tree(calls):
    """Indented call tree; runs of identical leaf calls are folded into ×N."""
    i = 0
    while i < len(calls):
        d, code, resumed, wraps = calls[i]
        j = i + 1
        is_leaf = lambda k: k + 1 >= len(calls) or calls[k + 1][0] <= calls[k][0]
        while j < len(calls) and calls[j] == calls[i] and is_leaf(i) and is_leaf(j):
            j += 1
        label = f"{qualified_name(code)}  (line {def_line(code)})"
        label += f"  [f_raw={wraps}]" if wraps else ""
        label += "  [resumed]" if resumed else ""
        label += f"  ×{j - i}" if j - i > 1 else ""
        print("  " * d + label)
        i = j


def main():
    announce()
    f = lambda x: x * x
    g, calls, returns = record_calls(lambda: grad(f)(3.0))
    assert float(g) == 6.0

    print("=== call tree of grad(f)(3.0), f = lambda x: x * x ===")
    print_tree(calls)

    names = [qualified_name(call[1]) for call in calls]
    count = Counter(names)
    for needed in ["core.make_vjp", "tracer.trace", "core.backward_pass", "core.VJPNode.__init__"]:
        assert count[needed] == 1, needed
    assert count["core.add_outgrads"] == 2
    bp_depth = calls[names.index("core.backward_pass")][0]
    assert all(calls[k][0] == bp_depth + 1 for k, n in enumerate(names) if n == "core.add_outgrads")
    assert count["util.toposort"] == 3            # first call + 2 resumes
    topo = [k for k, n in enumerate(names) if n == "util.toposort"]
    adds = [k for k, n in enumerate(names) if n == "core.add_outgrads"]
    assert topo[0] < adds[0] < adds[1] < topo[1]  # both belong to the multiply node
    wrapped = [call[3] for call in calls if call[3]]
    assert wrapped.count("multiply") == 2 and wrapped.count("add") == 1
    assert names.index("tracer.trace") < names.index("core.backward_pass")

    flagged = [(float(v), flag) for v, flag in returns["add_outgrads"]]
    assert flagged == [(3.0, False), (6.0, True)]
    print()
    print("=== facts ===")
    print(f"total package calls recorded: {len(calls)}")
    print(f"grad(f)(3.0) = {float(g):.1f}")
    print(f"add_outgrads calls: {count['core.add_outgrads']}, returned {flagged}")
    print(f"toposort entries (first call + resumes): {count['util.toposort']}")

    print()
    print("=== machine-readable sequence ===")
    for call, name in zip(calls, names):
        print(f"CALL: {call[0]} {name}")


def nested_multiply_wrappers(calls):
    """The chain of f_wrapped[f_raw=multiply] frames nested in the first one: its length."""
    first = next(k for k, c in enumerate(calls) if c[3] == "multiply")
    chain = [calls[first][0]]
    for d, code, resumed, wraps in calls[first + 1:]:
        if d <= chain[0]:
            break
        if wraps == "multiply" and d == chain[-1] + 1:
            chain.append(d)
    return len(chain)


def self_test_cases():
    """What the page's self-test asks about, recorded (nothing printed)."""
    f = lambda x: x * x
    df = grad(f)

    # 1. calling a saved grad(f) twice: nothing of grad(f)'s own subtree, everything below nary_f twice
    _, twice, _ = record_calls(lambda: (df(3.0), df(3.0)))
    count = Counter(qualified_name(c[1]) for c in twice)
    repeated = {name.split(".")[-1]: count[name] for name in
                ("wrap_util.unary_to_nary.<locals>.nary_operator", "wrap_util.wrap_nary_f",
                 "differential_operators.grad", "core.make_vjp", "tracer.trace", "core.backward_pass")}
    assert repeated == {"nary_operator": 0, "wrap_nary_f": 0, "grad": 2, "make_vjp": 2, "trace": 2,
                        "backward_pass": 2}
    record.set("self_test.called_twice", repeated)

    # 2. how many multiply wrappers sit inside one another: one per trace, plus the raw call
    _, once, _ = record_calls(lambda: grad(f)(3.0))
    _, second, _ = record_calls(lambda: grad(grad(f))(3.0))
    nesting = {"grad": nested_multiply_wrappers(once), "grad_grad": nested_multiply_wrappers(second)}
    assert nesting == {"grad": 2, "grad_grad": 3}
    record.set("self_test.multiply_nesting", nesting)

    # 3. the four lambdas of defvjp(anp.multiply): which ran before backward_pass, which inside it
    names = [qualified_name(c[1]) for c in once]
    start = names.index("core.backward_pass")
    lambdas = []
    for k, (d, code, resumed, wraps) in enumerate(once):
        if qualified_name(code).startswith("numpy.numpy_vjps.<lambda>"):
            lambdas.append({"name": code.co_qualname, "line": def_line(code),
                            "phase": "backward" if k > start else "forward"})
    assert [(x["name"], x["phase"]) for x in lambdas] == [
        ("<lambda>", "forward"), ("<lambda>", "forward"),
        ("<lambda>.<locals>.<lambda>", "backward"), ("<lambda>.<locals>.<lambda>", "backward")]
    assert lambdas[0]["line"] == lambdas[2]["line"] and lambdas[1]["line"] == lambdas[3]["line"]
    record.set("self_test.multiply_lambdas", lambdas)

    # 4. x * x * x: add_outgrads per node, in toposort order
    _, cube, returns = record_calls(lambda: grad(lambda x: x * x * x)(3.0))
    names = [qualified_name(c[1]) for c in cube]
    topo = [k for k, n in enumerate(names) if n == "util.toposort"]
    adds = [k for k, n in enumerate(names) if n == "core.add_outgrads"]
    per_node = [sum(a > lo and a < hi for a in adds) for lo, hi in zip(topo, topo[1:] + [len(names)])]
    assert per_node == [2, 2, 0, 0]  # M2 (to M1 and R), M1 (twice to R), R, and the final resume
    record.set("self_test.cube", {"add_outgrads": len(adds), "per_toposort_step": per_node[:3],
                                  "returned": [(float(v), flag) for v, flag in returns["add_outgrads"]]})

    # 5. toposort as an ordinary function returning a list: entered once, before the first VJP
    src = linecache.getlines(util.__file__)
    start = next(i for i, l in enumerate(src) if l.startswith("def toposort("))
    end = next(i for i in range(start + 1, len(src)) if src[i].strip() and not src[i].startswith(" "))
    body = "".join(src[start:end])
    listed = body.replace("    childless_nodes = [end_node]\n", "    childless_nodes, order = [end_node], []\n")
    listed = listed.replace("        yield node\n", "        order.append(node)\n") + "    return order\n"
    namespace = dict(vars(util))
    exec(compile(listed, util.__file__, "exec"), namespace)  # a frame in util.py, like the real one
    real = core.toposort
    core.toposort = namespace["toposort"]
    try:
        g, as_list, _ = record_calls(lambda: grad(f)(3.0))
    finally:
        core.toposort = real
    names = [qualified_name(c[1]) for c in as_list]
    topo = [k for k, n in enumerate(names) if n == "util.toposort"]
    first_vjp = names.index("core.defvjp.<locals>.vjp_argnums.<locals>.<lambda>")
    assert g == 6.0 and len(topo) == 1 and topo[0] < first_vjp
    generator_entries = Counter(qualified_name(c[1]) for c in once)["util.toposort"]
    record.set("self_test.toposort", {"generator_entries": generator_entries, "list_entries": len(topo),
                                      "list_before_first_vjp": topo[0] < first_vjp})


if __name__ == "__main__":
    main()
    self_test_cases()
