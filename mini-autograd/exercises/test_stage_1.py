"""Checks of stage 1: a scalar Box and one primitive (multiplication).

Run: python -m pytest mini-autograd/exercises/test_stage_1.py
(MINI_EXERCISE_TARGET=reference runs the same checks against Mini itself.)
"""

import operator

import pytest


def hips_trace(f, x):
    """The node HIPS autograd records for f at x, and its root (autograd.tracer.trace)."""
    pytest.importorskip("autograd")
    from autograd.core import VJPNode
    from autograd.tracer import trace

    root = VJPNode.new_root()
    _, end_node = trace(root, f, x)
    return root, end_node


def test_box_times_box_records_one_node(mini):
    x = mini.Box(3.0, mini.Node.new_root())
    y = x * x
    assert isinstance(y, mini.Box) and y.value == 9.0
    assert y.node.name == "mul"
    assert y.node.parents == (x.node, x.node)  # one parent, in two argument slots
    assert [vjp(1.0) for vjp in y.node.vjps] == [3.0, 3.0]


def test_same_shape_as_hips(mini):
    root, node = hips_trace(lambda b: b * b, 3.0)
    x = mini.Box(3.0, mini.Node.new_root())
    y = x * x
    assert node.parents == (root, root) and y.node.parents == (x.node, x.node)
    assert [float(v) for v in node.vjp(1.0)] == [vjp(1.0) for vjp in y.node.vjps] == [3.0, 3.0]


def test_a_constant_is_not_a_parent(mini):
    x = mini.Box(3.0, mini.Node.new_root())
    for y in (2.0 * x, x * 2.0):
        assert y.value == 6.0
        assert y.node.parents == (x.node,)
        assert [vjp(1.0) for vjp in y.node.vjps] == [2.0]
    root, node = hips_trace(lambda b: 2.0 * b, 3.0)
    assert node.parents == (root,) and [float(v) for v in node.vjp(1.0)] == [2.0]


def test_closures_capture_the_forward_values(mini):
    x = mini.Box(2.0, mini.Node.new_root())
    y = mini.Box(5.0, mini.Node.new_root())
    z = x * y
    assert [vjp(1.0) for vjp in z.node.vjps] == [5.0, 2.0]  # d(xy)/dx = y, d(xy)/dy = x
    assert [vjp(0.5) for vjp in z.node.vjps] == [2.5, 1.0]  # linear in the cotangent
    w = z * x
    assert w.value == 20.0 and w.node.parents == (z.node, x.node)
    assert [vjp(1.0) for vjp in w.node.vjps] == [2.0, 10.0]


def test_plain_floats_are_not_recorded(mini):
    out = mini.mul(2.0, 3.0)
    assert out == 6.0 and not isinstance(out, mini.Box)


def test_a_primitive_without_a_rule_is_refused(mini):
    plus = mini.primitive(operator.add)
    assert plus(1.0, 2.0) == 3.0
    with pytest.raises(NotImplementedError, match="no VJP registered"):
        plus(mini.Box(1.0, mini.Node.new_root()), 2.0)
