"""Checks of stage 4: trace numbers, so that grad of grad is right.

Run: python -m pytest mini-autograd/exercises/test_stage_4.py
"""

import math

import pytest

# Second derivatives, written once for the engine under test and for autograd.numpy.
CASES = {
    "cube": (lambda x, m: x * x * x, 2.0),
    "sin_exp": (lambda x, m: m.sin(x) * m.exp(x) + x ** 2, 0.5),
    "quotient": (lambda x, m: (x + 1) / (x * x + 2), 0.7),
    "log_tanh": (lambda x, m: m.log(x) * m.tanh(x) - m.cos(x), 1.3),
    "power_base": (lambda x, m: 2.0 ** x + x ** 0.5, 1.7),
}


def test_find_top_boxes_picks_the_highest_trace(mini):
    root = mini.Node.new_root()
    args = (mini.Box(1.0, root, 0), 2.0, mini.Box(3.0, root, 1), mini.Box(4.0, root, 1))
    assert mini.find_top_boxes(args) == ([2, 3], 1)
    assert mini.find_top_boxes((mini.Box(1.0, root, 0), 5.0)) == ([0], 0)
    assert mini.find_top_boxes((1.0, 2.0)) == ([], -1)


def test_find_top_boxes_agrees_with_hips(mini):
    pytest.importorskip("autograd")
    from autograd.core import VJPNode
    from autograd.tracer import find_top_boxed_args, new_box

    traces = [0, None, 2, 1, 2]
    hips = [1.0 if t is None else new_box(1.0, t, VJPNode.new_root()) for t in traces]
    ours = [1.0 if t is None else mini.Box(1.0, mini.Node.new_root(), t) for t in traces]
    boxed, top, _, _ = find_top_boxed_args(hips)
    assert mini.find_top_boxes(ours) == ([i for i, _ in boxed], top) == ([2, 4], 2)


def test_trace_numbers_are_the_nesting_depth(mini):
    stack = mini.trace_stack
    assert stack.top == -1
    with stack.new_trace() as outer:
        with stack.new_trace() as inner:
            assert (outer, inner, stack.top) == (0, 1, 1)
        assert stack.top == 0
    assert stack.top == -1
    with pytest.raises(ZeroDivisionError):
        with stack.new_trace():
            1 / 0
    assert stack.top == -1  # given back even when the traced function raises


def test_trace_returns_the_value_and_the_node_of_its_own_output(mini):
    value, node = mini.trace(mini.Node.new_root(), lambda b: b * b, 3.0)
    assert value == 9.0 and node.name == "mul"
    assert mini.trace(mini.Node.new_root(), lambda b: 7.0, 3.0) == (7.0, None)
    outer = []

    def f(x):  # the inner trace returns a box of the outer trace: not its own output
        outer.append(mini.trace(mini.Node.new_root(), lambda b: x * 2.0, 1.0))
        return x

    mini.grad(f)(5.0)
    (value, node), = outer
    assert isinstance(value, mini.Box) and value.trace == 0 and value.value == 10.0 and node is None


def test_the_function_sees_nested_boxes(mini):
    seen = []

    def f(x):
        seen.append((x.trace, x.value.trace, x.value.value))
        return x * x

    assert mini.grad(mini.grad(f))(1.5) == 2.0
    assert seen == [(1, 0, 1.5)]  # the newest trace outside, the original float innermost


def test_grad_of_grad_of_a_cube(mini):
    assert mini.grad(mini.grad(lambda x: x * x * x))(2.0) == 12.0
    assert mini.grad(mini.grad(mini.grad(lambda x: x * x * x)))(2.0) == 6.0


def test_boxes_of_two_traces_meet_in_one_call(mini):
    # d/dx [ d/dy (x * y) at y = 1 ] = d/dx x = 1; without trace numbers this is 0.0
    assert mini.grad(lambda x: mini.grad(lambda y: x * y)(1.0))(2.0) == 1.0
    # lesson 10's example: x * d/dy (x + y) = x, derivative 1
    assert mini.grad(lambda x: x * mini.grad(lambda y: x + y)(1.0))(2.0) == 1.0
    autograd = pytest.importorskip("autograd")
    assert float(autograd.grad(lambda x: autograd.grad(lambda y: x * y)(1.0))(2.0)) == 1.0


@pytest.mark.parametrize("name", sorted(CASES))
def test_second_derivatives_match_hips_autograd(mini, name):
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    f, x = CASES[name]
    hips = float(autograd.grad(autograd.grad(lambda t: f(t, anp)))(x))
    ours = mini.grad(mini.grad(lambda t: f(t, mini)))(x)
    assert ours == pytest.approx(hips, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_second_derivatives_match_finite_differences_of_grad(mini, name):
    f, x = CASES[name]
    first = mini.grad(lambda t: f(t, mini))
    h = 1e-5
    numeric = (first(x + h) - first(x - h)) / (2 * h)
    assert mini.grad(mini.grad(lambda t: f(t, mini)))(x) == pytest.approx(numeric, rel=1e-6, abs=1e-7)
    assert math.isfinite(numeric)
