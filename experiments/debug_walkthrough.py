"""Record the real call sequence of grad(f)(3.0) inside the imported autograd.

A sys.setprofile hook sees every Python-level call; we keep only frames whose
source file lies inside the autograd package that was actually imported.
"""

import linecache
import os
import sys
from collections import Counter

import autograd
from autograd import grad

from _provenance import announce

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


if __name__ == "__main__":
    main()
