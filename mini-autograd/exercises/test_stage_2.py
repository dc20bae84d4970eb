"""Checks of stage 2: the graph, its topological order and the backward pass.

Run: python -m pytest mini-autograd/exercises/test_stage_2.py
The functions here use every intermediate value once (no shared paths: stage 3).
"""

import math

import pytest

# f(x, m): m provides sin, cos, exp, log, tanh (the engine under test, or autograd.numpy).
CHAINS = {
    "affine": (lambda x, m: 3 * x + 2, 4.0),
    "exp_sin": (lambda x, m: m.exp(m.sin(x)), 0.7),
    "tanh_log": (lambda x, m: m.tanh(m.log(x)) / 4 - 1, 1.3),
    "cube": (lambda x, m: x ** 3, -1.5),
    "power_base": (lambda x, m: 2.0 ** x, 1.7),
    "neg_cos": (lambda x, m: -m.cos(x) / 3, 0.4),
}


def central_difference(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


def test_toposort_children_before_parents_each_once(mini):
    x = mini.Box(0.5, mini.Node.new_root())
    a = mini.sin(x)
    b = mini.exp(x)
    end = a * b + a  # a has two children: the order matters here
    order = mini.toposort(end.node)
    assert len(order) == len(set(order)) == 5
    position = {node: i for i, node in enumerate(order)}
    for node in order:
        for parent in node.parents:
            assert position[node] < position[parent]
    assert order[0] is end.node and order[-1] is x.node


def test_backward_pass_on_a_chain(mini):
    x = mini.Box(0.7, mini.Node.new_root())
    y = mini.exp(mini.sin(x))
    assert mini.backward_pass(1.0, y.node) == pytest.approx(math.cos(0.7) * math.exp(math.sin(0.7)), abs=1e-15)
    assert mini.backward_pass(2.0, y.node) == pytest.approx(2 * math.cos(0.7) * math.exp(math.sin(0.7)), abs=1e-15)


def test_make_vjp_returns_the_value_and_scales_the_cotangent(mini):
    vjp, value = mini.make_vjp(lambda x: mini.exp(2.0 * x), 0.5)
    assert value == math.exp(1.0)
    assert vjp(1.0) == pytest.approx(2 * math.exp(1.0), abs=1e-15)
    assert vjp(0.5) == pytest.approx(math.exp(1.0), abs=1e-15)


def test_an_output_without_the_input_has_gradient_zero(mini):
    vjp, value = mini.make_vjp(lambda x: 7.0, 5.0)
    assert value == 7.0 and vjp(1.0) == 0.0
    assert mini.grad(lambda x: 7.0)(5.0) == 0.0
    assert mini.grad(lambda x: x)(5.0) == 1.0


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_chains_match_finite_differences(mini, name):
    f, x = CHAINS[name]
    numeric = central_difference(lambda t: f(t, math), x)
    assert mini.grad(lambda t: f(t, mini))(x) == pytest.approx(numeric, rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_chains_match_hips_autograd(mini, name):
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    f, x = CHAINS[name]
    hips = float(autograd.grad(lambda t: f(t, anp))(x))
    assert abs(mini.grad(lambda t: f(t, mini))(x) - hips) <= 1e-12
