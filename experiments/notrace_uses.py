"""04 · notrace_primitive beyond notrace_functions, and register_notrace beyond greater.

autograd.numpy's metadata() (read by unbroadcast_f in the forward pass) and
autograd.builtins' type are wrapped with notrace_primitive: they strip every layer of Box
with getval, even under nested grad, and build no node. floor, like greater, is a primitive
registered with register_notrace: its result is not a Box either.
"""

import numpy as onp

import autograd.builtins as ag_builtins
import autograd.core as core
import autograd.numpy as np
from autograd import grad

from _provenance import announce
from _record import record


def count_nodes(fun):
    """Run fun(); return its value and how many VJPNodes VJPNode.__init__ built meanwhile."""
    made, real_init = [0], core.VJPNode.__init__

    def init(self, *args):
        made[0] += 1
        real_init(self, *args)

    core.VJPNode.__init__ = init
    try:
        return fun(), made[0]
    finally:
        core.VJPNode.__init__ = real_init


def notrace():
    seen = {}

    def f(x):
        seen["x"] = f"{type(x).__name__}(trace {x._trace}) holding {type(x._value).__name__}(trace {x._value._trace})"
        (meta, kind, floored), seen["nodes"] = count_nodes(
            lambda: (np.metadata(x), ag_builtins.type(x), np.floor(x)))
        seen["metadata"], seen["type"], seen["floor"] = meta, kind, floored
        return np.sum(x * x)

    h = grad(lambda x: np.sum(grad(f)(x)))(onp.array([1.5, 2.5]))
    shape, ndim, dtype, is_complex = seen["metadata"]
    print("x inside f:", seen["x"])
    print(f"np.metadata(x) -> ({shape}, {ndim}, {dtype!r}, {is_complex}): plain values")
    print("autograd.builtins.type(x) ->", seen["type"].__name__)
    print(f"np.floor(x) -> {type(seen['floor']).__name__} {seen['floor'].tolist()}")
    print("VJPNodes built by these three calls:", seen["nodes"])
    assert seen["x"] == "ArrayBox(trace 1) holding ArrayBox(trace 0)"
    assert (shape, ndim, dtype, is_complex) == ((2,), 1, onp.dtype("float64"), False)
    assert seen["type"] is onp.ndarray
    assert type(seen["floor"]) is onp.ndarray and seen["floor"].tolist() == [1.0, 2.0]
    assert seen["nodes"] == 0 and h.tolist() == [2.0, 2.0]
    record.set("notrace", {"x": seen["x"], "metadata": (shape, ndim, str(dtype), is_complex),
                           "type": seen["type"].__name__, "floor": seen["floor"], "nodes": seen["nodes"]})


def main():
    announce()
    notrace()


if __name__ == "__main__":
    main()
