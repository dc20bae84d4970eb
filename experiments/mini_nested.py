"""14 · Stage 4: trace numbers. Two nested derivatives in HIPS, in Mini, and in Mini without them.

"Without trace numbers" is Mini with its find_top_boxes replaced by stage 3's rule: every Box
argument is unboxed, whatever its trace. The nested boxes a function sees, and what HIPS's
TraceStack does when the traced function raises, are recorded as well.
"""

import sys
import warnings
from pathlib import Path

import autograd
import autograd.tracer as tracer

import _provenance
from _provenance import announce
from _record import record


def mini_dir():
    """mini-autograd/ sits next to experiments/; the build may run a copy of this
    script elsewhere, so also look next to the folder of _provenance.py."""
    for base in (Path(__file__), Path(_provenance.__file__)):
        candidate = base.resolve().parent.parent / "mini-autograd"
        if (candidate / "mini_autograd.py").is_file():
            return candidate
    sys.exit("mini-autograd/ not found next to experiments/")


sys.path.insert(0, str(mini_dir()))
import mini_autograd as mini  # noqa: E402


def stage_3_rule(args):
    """find_top_boxes as stage 3 behaves: all Box arguments, as if they were one trace."""
    argnums = [i for i, a in enumerate(args) if isinstance(a, mini.Box)]
    return argnums, max((args[i].trace for i in argnums), default=-1)


def both_cases(grad):
    """grad(grad(x**3)) at 2, and the case where boxes of two traces meet in one call."""
    cube = grad(grad(lambda x: x * x * x))(2.0)
    mixed = grad(lambda x: grad(lambda y: x * y)(1.0))(2.0)
    return float(cube), float(mixed)


def inner_result_type(x0=2.0):
    """What the inner grad of the mixed case hands to the outer function."""
    seen = []

    def outer(x):
        inner = mini.grad(lambda y: x * y)(1.0)
        seen.append(type(inner).__name__)
        return inner

    mini.grad(outer)(x0)
    return seen[0]


def seen_boxes(grad, trace_of, value_of):
    """The (trace, trace of the value) of the argument f sees inside grad(grad(f))."""
    seen = []

    def f(x):
        seen.append((trace_of(x), trace_of(value_of(x)), value_of(value_of(x))))
        return x * x

    grad(grad(f))(1.5)
    return seen[0]


def main():
    announce()
    hips = both_cases(autograd.grad)
    ours = both_cases(mini.grad)
    mini_inner = inner_result_type()
    real_rule = mini.find_top_boxes
    mini.find_top_boxes = stage_3_rule
    try:
        flat = both_cases(mini.grad)
        flat_inner = inner_result_type()
    finally:
        mini.find_top_boxes = real_rule
    print(f"{'':<28}{'grad(grad(x**3))(2)':>20}{'d/dx[d/dy x*y]':>16}")
    for name, (cube, mixed) in (("HIPS", hips), ("Mini", ours), ("Mini without trace numbers", flat)):
        print(f"{name:<28}{cube:>20}{mixed:>16}")
    print(f"inner grad of the mixed case returns: {mini_inner} (Mini), {flat_inner} (without)")
    assert hips == ours == (12.0, 1.0)
    assert flat == (12.0, 0.0)
    assert (mini_inner, flat_inner) == ("Box", "float")
    record.set("hips", {"cube": hips[0], "mixed": hips[1]})
    record.set("mini", {"cube": ours[0], "mixed": ours[1], "inner": mini_inner})
    record.set("flat", {"cube": flat[0], "mixed": flat[1], "inner": flat_inner})

    h_seen = seen_boxes(autograd.grad, lambda b: b._trace, lambda b: b._value)
    m_seen = seen_boxes(mini.grad, lambda b: b.trace, lambda b: b.value)
    for name, seen in (("HIPS", h_seen), ("Mini", m_seen)):
        print(f"{name}: f in grad(grad(f)) sees a trace {seen[0]} box around trace {seen[1]} around {seen[2]}")
    assert (h_seen[0], h_seen[1]) == (m_seen[0], m_seen[1]) == (1, 0) and h_seen[2] == m_seen[2] == 1.5
    record.set("seen", {"outer": m_seen[0], "inner": m_seen[1], "value": m_seen[2]})

    # The inner function returns a box of the outer trace: not the output of the inner trace.
    results = {}
    for name, grad in (("hips", autograd.grad), ("mini", mini.grad)):
        inner = []

        def outer(x):
            inner.append(grad(lambda y: x)(1.0))
            return inner[0]

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            total = grad(outer)(2.0)
        results[name] = {"inner": float(inner[0]), "inner_type": type(inner[0]).__name__, "grad": float(total),
                         "warnings": [str(w.message) for w in caught]}
    print("grad(lambda x: grad(lambda y: x)(1.0))(2.0):")
    for k, v in results.items():
        print(f"  {k}: inner grad {v['inner']}, outer {v['grad']}, {len(v['warnings'])} warning(s) {v['warnings'][:1]}")
    assert results["hips"]["inner"] == results["mini"]["inner"] == 0.0
    assert results["hips"]["grad"] == results["mini"]["grad"] == 0.0
    assert results["hips"]["warnings"] == ["Output seems independent of input."] * 2
    assert results["mini"]["warnings"] == [] and results["mini"]["inner_type"] == "float"
    record.set("foreign", results)

    # A traced function that raises: Mini gives its trace number back (try/finally), HIPS does not.
    def fails(x):
        raise ValueError("inside the traced function")

    before = (tracer.trace_stack.top, mini.trace_stack.top)
    for grad in (autograd.grad, mini.grad):
        try:
            grad(fails)(1.0)
        except ValueError:
            pass
    after = (tracer.trace_stack.top, mini.trace_stack.top)
    print("trace_stack.top before -> after a ValueError inside grad:")
    print(f"  HIPS {before[0]} -> {after[0]}, Mini {before[1]} -> {after[1]}")
    assert before == (-1, -1) and after == (0, -1)
    record.set("raise", {"hips_after": after[0], "mini_after": after[1]})


if __name__ == "__main__":
    main()
