"""05 · A Box that outlives its grad call is mistaken for part of a later trace.

Trace ids are nesting depths (TraceStack.top), not identities: every top-level grad call opens
trace 0. A Box saved during one call keeps `_trace == 0`, so in a later top-level call
find_top_boxed_args treats it as a Box of the current trace. Its node's parents lead to the
*old* start node, which has no parents either: the graph now has two sources, toposort may hand
out the old root last, and backward_pass returns that node's cotangent, without a warning.

d/dy (2.0 * y) is 2.0. With the escaped Box as the first operand, grad returns 3.0 (the
cotangent of the old root, y's value); with it as the second operand the new root happens to be
popped last and the answer is right. The toposort order is read by wrapping core.toposort.
"""

import warnings

import autograd.core as core
from autograd import grad
from autograd.tracer import trace_stack

from _provenance import announce
from _record import record


def visit_order(fun, x, names):
    """grad(fun)(x) and the labels of the nodes in the order backward_pass visits them."""
    order = []
    real = core.toposort

    def watched(end_node):
        for node in real(end_node):
            order.append(names.get(id(node), "end"))
            yield node

    core.toposort = watched
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            g = grad(fun)(x)
    finally:
        core.toposort = real
    return float(g), order, [str(w.message) for w in caught]


def main():
    announce()
    saved = []
    first = grad(lambda x: saved.append(x) or x * x)(2.0)
    old = saved[0]
    print("first call: grad(x*x)(2.0) =", float(first), "| saved Box:", type(old).__name__,
          "trace", old._trace, "value", old._value)
    print("after the call trace_stack.top =", trace_stack.top)
    assert float(first) == 4.0 and old._trace == 0 and trace_stack.top == -1

    names = {id(old._node): "old root"}

    def new_call(order_of_operands):
        def f(y):
            names[id(y._node)] = "new root"
            return old * y if order_of_operands == "old*y" else y * old
        return f

    wrong, order_wrong, warned_wrong = visit_order(new_call("old*y"), 3.0, names)
    print("grad(lambda y: saved[0] * y)(3.0) =", wrong, "| true derivative 2.0")
    print("  visit order:", " -> ".join(order_wrong), "| warnings:", warned_wrong)
    assert wrong == 3.0
    assert order_wrong == ["end", "new root", "old root"]
    assert warned_wrong == []

    right, order_right, _ = visit_order(new_call("y*old"), 3.0, names)
    print("grad(lambda y: y * saved[0])(3.0) =", right, "(right only by operand order)")
    print("  visit order:", " -> ".join(order_right))
    assert right == 2.0 and order_right == ["end", "old root", "new root"]

    record.set("escaped.first", float(first))
    record.set("escaped.trace", old._trace)
    record.set("escaped.wrong", wrong)
    record.set("escaped.order", order_wrong)
    record.set("escaped.right", right)
    record.set("escaped.order_right", order_right)


if __name__ == "__main__":
    main()
