"""08 · deriv is one forward-mode pass with the tangent set to ones.

deriv(fun, x) = _make_jvp(fun, x)(vspace(x).ones())[1]: no backward pass runs. For a
scalar input it is the derivative; for an array input it is J·1 (the sum of the Jacobian's
columns), which is the elementwise derivative only when the function acts elementwise.
"""

import numpy as np

import autograd.core as core
import autograd.numpy as anp
from autograd import deriv, elementwise_grad, grad

from _provenance import announce
from _record import record


def main():
    announce()
    passes, jvp_nodes = [0], [0]
    real_bp, real_init = core.backward_pass, core.JVPNode.__init__

    def bp(g, end_node):
        passes[0] += 1
        return real_bp(g, end_node)

    def init(self, *a):
        jvp_nodes[0] += 1
        real_init(self, *a)

    core.backward_pass, core.JVPNode.__init__ = bp, init
    try:
        d = deriv(anp.sin)(0.5)
    finally:
        core.backward_pass, core.JVPNode.__init__ = real_bp, real_init
    print(f"deriv(sin)(0.5) = {d:.12f}; cos(0.5) = {np.cos(0.5):.12f}; backward passes {passes[0]}, "
          f"JVPNodes {jvp_nodes[0]}")
    assert d == np.cos(0.5) and passes[0] == 0 and jvp_nodes[0] == 1

    x = np.array([1.0, 2.0, 3.0])
    square = lambda t: t ** 2  # noqa: E731
    total = lambda t: anp.sum(t ** 2)  # noqa: E731
    print("elementwise x**2: deriv", deriv(square)(x).tolist(), "elementwise_grad", elementwise_grad(square)(x).tolist())
    print("sum(x**2):        deriv", float(deriv(total)(x)), "grad", grad(total)(x).tolist())
    assert np.array_equal(deriv(square)(x), elementwise_grad(square)(x))
    assert float(deriv(total)(x)) == 12.0 and grad(total)(x).tolist() == [2.0, 4.0, 6.0]
    record.set("sum_sq", {"x": x, "deriv": float(deriv(total)(x)), "grad": grad(total)(x)})


if __name__ == "__main__":
    main()
