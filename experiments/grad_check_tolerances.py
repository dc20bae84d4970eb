"""12 · Where the step and the tolerances of a gradient check come from.

check_grads takes no eps, rtol or atol: the step EPS and the tolerances TOL, RTOL are
module constants of autograd/test_util.py, read when make_numerical_jvp and scalar_close
run. The deprecated autograd.util.quick_grad_check is the only checking function whose
signature has eps, rtol and atol, and it passes none of them on: it calls
check_grads(fun_, modes=["rev"], order=1). A wrong VJP shows both facts.
"""

import inspect
import warnings

import numpy as onp

import autograd.numpy as np
import autograd.test_util as tu
from autograd.extend import defvjp, primitive
from autograd.test_util import check_grads
from autograd.util import quick_grad_check

from _provenance import announce
from _record import record


@primitive
def bad_sin(x):
    return onp.sin(x)


defvjp(bad_sin, lambda ans, x: lambda g: g * onp.cos(x) * 1.01)  # 1 % too large


def outcome(call):
    """'passed', or the first words of the AssertionError / TypeError the call raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            call()
            result = "passed"
        except AssertionError as exc:
            result = "AssertionError: " + str(exc).split(" failed")[0] + " failed"
        except TypeError as exc:
            result = f"TypeError: {exc}"
    return result, [str(w.message).strip().split("\n")[0] for w in caught]


def main():
    announce()
    onp.random.seed(0)  # check_vjp draws its directions from numpy's global RNG
    unary = inspect.getclosurevars(check_grads).nonlocals["unary_operator"]  # the function unary_to_nary wrapped
    check_params = list(inspect.signature(unary).parameters)
    quick_params = list(inspect.signature(quick_grad_check).parameters)
    print("check_grads(f, x, ...) parameters:", check_params)
    print("quick_grad_check parameters:      ", quick_params)
    print(f"test_util constants: EPS = {tu.EPS:g}, TOL = {tu.TOL:g}, RTOL = {tu.RTOL:g}")
    assert check_params == ["f", "x", "modes", "order"]
    assert {"eps", "rtol", "atol"} <= set(quick_params)
    record.set("check_params", check_params)

    x = onp.array([0.3, 1.1])
    f = lambda t: np.sum(bad_sin(t))
    runs = {
        "check_grads(f, eps=1e-3)(x)": lambda: check_grads(f, eps=1e-3)(x),
        "check_grads(f, modes=['rev'], order=1)(x)": lambda: check_grads(f, modes=["rev"], order=1)(x),
        "quick_grad_check(f, x, eps=1e-3, rtol=0.5, atol=0.5)": lambda: quick_grad_check(
            f, x, eps=1e-3, rtol=0.5, atol=0.5),
        "quick_grad_check(sum sin, x, rtol=0, atol=0)": lambda: quick_grad_check(
            lambda t: np.sum(np.sin(t)), x, rtol=0.0, atol=0.0),
    }
    seen = {}
    for name, call in runs.items():
        result, warned = outcome(call)
        seen[name] = (result, warned)
        print(f"\n{name}\n  -> {result}")
        if warned:
            print(f"  warning: {warned[0]}")
    keys = list(runs)
    assert seen[keys[0]][0] == "TypeError: check_grads() got an unexpected keyword argument 'eps'"
    # a 1 % error in the VJP: check_grads catches it with its fixed tolerances ...
    assert seen[keys[1]][0].startswith("AssertionError: Derivative (VJP) check of")
    # ... and so does quick_grad_check with rtol = atol = 0.5, which would have let it pass
    assert seen[keys[2]][0] == seen[keys[1]][0]
    assert seen[keys[2]][1] == ["The quick_grad_check function is deprecated. See the update guide:"]
    # a right gradient passes although rtol = atol = 0 could never be met: the arguments are unused
    assert seen[keys[3]][0] == "passed"
    record.set("outcomes", {k: v[0] for k, v in seen.items()})

    # the only knobs are the module constants, looked up when the check runs
    saved = tu.TOL, tu.RTOL
    tu.TOL, tu.RTOL = 0.5, 0.5
    try:
        loose, _ = outcome(lambda: check_grads(f, modes=["rev"], order=1)(x))
    finally:
        tu.TOL, tu.RTOL = saved
    print(f"\nwith test_util.TOL = RTOL = 0.5 for one call: check_grads(f, modes=['rev'], order=1)(x) -> {loose}")
    assert loose == "passed" and (tu.TOL, tu.RTOL) == (1e-6, 1e-6)
    record.set("loose", loose)


if __name__ == "__main__":
    main()
