"""05 · Where a gradient lives: only in backward_pass's outgrads, and then in its return value.

No value carries a .grad attribute: Box and VJPNode fix their fields with __slots__, so a
`grad` attribute neither exists nor can be added. During backward_pass the cotangents sit
in its local dict outgrads, keyed by node; each node is popped when visited, so the dict is
empty when the loop ends, and the gradient leaves only as the return value. The dict is read
from backward_pass's frame while toposort hands it each node (toposort is looked up in
autograd.core's globals when backward_pass runs, so the wrapper sees every step).
"""

import sys

import numpy as onp

import autograd.core as core
import autograd.numpy as np
from autograd import grad

from _provenance import announce
from _record import record


def main():
    announce()
    kept, sizes = {}, []
    real_toposort = core.toposort

    def watched_toposort(end_node):
        for node in real_toposort(end_node):
            sizes.append(len(sys._getframe(1).f_locals["outgrads"]))  # before backward_pass pops node
            yield node
        kept["after"] = dict(sys._getframe(1).f_locals["outgrads"])  # the loop's last request

    def f(x):
        kept["box"] = x
        y = x * x + np.sin(x)
        kept["node"] = y._node
        return y

    x = onp.array([0.5, 1.5])
    core.toposort = watched_toposort
    try:
        g = grad(lambda t: np.sum(f(t)))(x)
    finally:
        core.toposort = real_toposort

    box, node = kept["box"], kept["node"]
    print("grad of sum(x*x + sin x) at", x.tolist(), "=", onp.round(g, 6).tolist(),
          "| by hand 2x + cos x:", onp.round(2 * x + onp.cos(x), 6).tolist())
    assert onp.allclose(g, 2 * x + onp.cos(x))

    attrs = {}
    for label, obj in (("input ndarray x", x), ("Box seen inside f", box), ("VJPNode of y", node)):
        has = hasattr(obj, "grad")
        try:
            obj.grad = g
            settable = True
        except AttributeError:
            settable = False
        slots = [s for c in type(obj).__mro__ for s in getattr(c, "__slots__", [])]
        attrs[label] = {"has_grad": has, "can_set_grad": settable}
        fields = f"; __slots__ along its classes: {slots}" if slots else ""
        print(f"{label:18s} has .grad: {has}; can be given one: {settable}{fields}")
    assert all(a == {"has_grad": False, "can_set_grad": False} for a in attrs.values())
    record.set("attrs", attrs)

    print("len(outgrads) as toposort hands over each node:", sizes)
    print("outgrads when the loop ends:", kept["after"])
    assert len(sizes) == 5 and sizes[0] == 1 and kept["after"] == {}
    record.set("outgrads_sizes", sizes)
    record.set("outgrads_after", len(kept["after"]))


if __name__ == "__main__":
    main()
