"""10 · A VJP rule that calls raw NumPy: which ways of writing it keep higher derivatives.

Three primitives compute sin with raw NumPy; their VJP rules differ only in how they call
the raw cosine on the argument x the rule captured: onp.cos(x) as x arrives,
onp.cos(getval(x)) after unboxing every layer, onp.cos(onp.asarray(x)) after converting.
In grad(grad(f)) the inner backward pass runs these rules while the outer trace is still
open, so x is a Box of that trace (trace 0). A raw ufunc given an ArrayBox goes through
ArrayBox.__array_ufunc__ back to autograd's own cos, and is recorded; getval and asarray
take the Box away first.
"""

import warnings

import numpy as onp

from autograd import grad
from autograd.extend import defvjp, primitive
from autograd.tracer import getval

from _provenance import announce
from _record import record

X = 1.0
RULES = {
    "onp.cos(x)": lambda x: onp.cos(x),
    "onp.cos(getval(x))": lambda x: onp.cos(getval(x)),
    "onp.cos(onp.asarray(x))": lambda x: onp.cos(onp.asarray(x)),
}
KEYS = {"onp.cos(x)": "ufunc", "onp.cos(getval(x))": "getval", "onp.cos(onp.asarray(x))": "asarray"}


def make_sin(cos, seen):
    """sin as a primitive whose VJP rule calls ``cos`` on the captured x; ``seen`` logs what it got."""

    @primitive
    def raw_sin(x):
        return onp.sin(x)

    def rule(g, x):
        seen.append([type(x).__name__, getattr(x, "_trace", None), None])
        c = cos(x)
        seen[-1][2] = type(c).__name__
        return g * c

    defvjp(raw_sin, lambda ans, x: lambda g: rule(g, x))
    return raw_sin


def second(f):
    """grad(grad(f))(X), the warnings it raised, and its TypeError if it failed."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value, error = grad(grad(f))(X), None
        except TypeError as exc:
            value, error = None, f"TypeError: {str(exc).split(' which')[0]}"
    return value, error, sorted({str(w.message) for w in caught})


def run(name, cos):
    key, seen = KEYS[name], []
    sin = make_sin(cos, seen)
    out = {"d1": grad(sin)(X)}
    seen.clear()
    out["d2_sin"], out["error"], out["warnings_sin"] = second(sin)
    out["x_type"], out["x_trace"], out["cos_type"] = seen[0]
    if out["error"] is None:
        out["d2_x_sin"], _, out["warnings_x_sin"] = second(lambda x: x * sin(x))
    for k, v in out.items():
        record.set(f"{key}.{k}", v)
    return out


def main():
    announce()
    want = {"d1": onp.cos(X), "d2_sin": -onp.sin(X), "d2_x_sin": 2 * onp.cos(X) - X * onp.sin(X)}
    print(f"x = {X}; hand: d/dx sin = {want['d1']:.6f}, d2/dx2 sin = {want['d2_sin']:.6f}, "
          f"d2/dx2 (x sin x) = {want['d2_x_sin']:.6f}")
    results = {}
    for name, cos in RULES.items():
        r = results[name] = run(name, cos)
        print(f"\nrule g * {name}")
        print(f"  first derivative        {r['d1']:.6f}")
        print(f"  in grad(grad(.)): the rule got x = {r['x_type']}(trace {r['x_trace']}), "
              f"the cosine came back as {r['cos_type'] or 'nothing'}")
        if r["error"]:
            kind, message = r["error"].split(": ", 1)
            print(f"  second derivative       raises {kind}:\n    {message}")
        else:
            print(f"  d2/dx2 sin              {r['d2_sin']:.6f}   warnings: {r['warnings_sin'] or 'none'}")
            print(f"  d2/dx2 (x sin x)        {r['d2_x_sin']:.6f}   warnings: {r['warnings_x_sin'] or 'none'}")
        assert abs(r["d1"] - want["d1"]) < 1e-12  # every spelling is right at first order
        assert r["x_type"] == "ArrayBox" and r["x_trace"] == 0

    ufunc, unboxed, converted = (results[n] for n in RULES)
    # the raw ufunc is routed back into autograd: recorded, both second derivatives right
    assert ufunc["cos_type"] == "ArrayBox" and ufunc["error"] is None
    assert not ufunc["warnings_sin"] and not ufunc["warnings_x_sin"]
    assert abs(ufunc["d2_sin"] - want["d2_sin"]) < 1e-12 and abs(ufunc["d2_x_sin"] - want["d2_x_sin"]) < 1e-12
    # getval: no error; sin'' comes out 0 (only the trace's warning hints at it), (x sin x)'' is
    # wrong without any warning: the -x sin x term that flows through the rule is missing
    assert unboxed["cos_type"] == "float64" and unboxed["error"] is None
    assert unboxed["d2_sin"] == 0.0 and unboxed["warnings_sin"] == ["Output seems independent of input."]
    assert abs(unboxed["d2_x_sin"] - 2 * onp.cos(X)) < 1e-12 and not unboxed["warnings_x_sin"]
    # asarray: an object array holding the Box, and the raw cos on it raises
    assert converted["error"].startswith("TypeError: loop of ufunc does not support argument 0 of type ArrayBox")
    print("\nonly onp.cos(x) keeps the second derivative; getval is silently wrong, asarray raises")


if __name__ == "__main__":
    main()
