"""04 · ArrayBox is a Box, not an ndarray.

ArrayBox subclasses Box, not numpy.ndarray: isinstance(x, ndarray) is False inside grad,
there is no .dot method and no __iadd__, so `y += x` rebinds y to a new Box instead of
changing x in place. autograd.builtins.isinstance, a notrace_primitive, unboxes first.
"""

import numpy as onp

import autograd.builtins as ag_builtins
import autograd.numpy as np
from autograd import grad
from autograd.numpy.numpy_boxes import ArrayBox

from _provenance import announce
from _record import record


def surface():
    mro = [c.__name__ for c in ArrayBox.__mro__]
    print("ArrayBox.__mro__:", " -> ".join(mro))
    assert not issubclass(ArrayBox, onp.ndarray) and mro == ["ArrayBox", "Box", "object"]
    has = {name: hasattr(ArrayBox, name) for name in ("dot", "__iadd__", "sum", "reshape", "T")}
    print("has attribute:", has)
    assert has == {"dot": False, "__iadd__": False, "sum": True, "reshape": True, "T": True}
    record.set("mro", mro)
    record.set("has", has)

    w = onp.array([1.0, -2.0])
    seen = {}

    def with_dot(x):
        seen["isinstance_ndarray"] = isinstance(x, onp.ndarray)
        seen["builtins_isinstance_ndarray"] = ag_builtins.isinstance(x, onp.ndarray)
        try:
            x.dot(w)
        except AttributeError as exc:
            seen["dot_error"] = str(exc)
        return np.dot(x, w)  # the function form is a primitive

    g_dot = grad(with_dot)(onp.array([3.0, 4.0]))
    print("inside grad: isinstance(x, ndarray) =", seen["isinstance_ndarray"],
          "| autograd.builtins.isinstance(x, ndarray) =", seen["builtins_isinstance_ndarray"])
    print("x.dot(w) raises AttributeError:", seen["dot_error"])
    print("grad of np.dot(x, w):", g_dot.tolist())
    assert seen["isinstance_ndarray"] is False and seen["builtins_isinstance_ndarray"] is True
    assert seen["dot_error"] == "'ArrayBox' object has no attribute 'dot'" and g_dot.tolist() == w.tolist()

    def add_in_place(x):
        y = x
        y += x  # no __iadd__: Python runs y = y + x, a new Box; x is untouched
        seen["same_object"] = y is x
        seen["x_value"], seen["y_value"] = x._value.tolist(), y._value.tolist()
        return np.sum(y)

    g_add = grad(add_in_place)(onp.array([3.0, 4.0]))
    a = onp.array([3.0, 4.0])
    b = a
    b += a  # an ndarray has __iadd__: a itself changes
    print(f"y = x; y += x inside grad: y is x -> {seen['same_object']}, x = {seen['x_value']}, "
          f"y = {seen['y_value']}, grad = {g_add.tolist()}")
    print(f"the same on an ndarray outside grad: b is a -> {b is a}, a = {a.tolist()}")
    assert seen["same_object"] is False and seen["x_value"] == [3.0, 4.0] and seen["y_value"] == [6.0, 8.0]
    assert g_add.tolist() == [2.0, 2.0] and b is a and a.tolist() == [6.0, 8.0]
    record.set("iadd", {**{k: seen[k] for k in ("same_object", "x_value", "y_value")}, "grad": g_add})


def main():
    announce()
    surface()


if __name__ == "__main__":
    main()
