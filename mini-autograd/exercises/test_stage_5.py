"""Checks of stage 5 (optional): forward mode.

Run: python -m pytest mini-autograd/exercises/test_stage_5.py
"""

import math

import pytest

CASES = {
    "cube": (lambda x, m: x * x * x - 2 * x + 1, -1.5),
    "sin_exp": (lambda x, m: m.sin(x) * m.exp(x) + x ** 2, 0.5),
    "quotient": (lambda x, m: (x + 1) / (x * x + 2), 0.7),
    "log_tanh": (lambda x, m: m.log(x) * m.tanh(x) - m.cos(x), 1.3),
    "power_base": (lambda x, m: 2.0 ** x + x ** 0.5, 1.7),
}


def test_the_tangent_is_there_as_soon_as_the_node_is_made(mini):
    seen = []

    def f(x):
        y = mini.sin(x)
        seen.append(y.node.g)  # before anything else is computed
        return y * x

    value, tangent = mini.make_jvp(f, 0.3)(2.0)
    assert seen == [2.0 * math.cos(0.3)]
    assert value == math.sin(0.3) * 0.3
    assert tangent == pytest.approx(2.0 * (math.cos(0.3) * 0.3 + math.sin(0.3)), abs=1e-15)


def test_jvp_value_and_tangent_of_a_cube(mini):
    assert mini.make_jvp(lambda x: x * x * x, 2.0)(1.0) == (8.0, 12.0)
    assert mini.make_jvp(lambda x: x * x * x, 2.0)(0.5) == (8.0, 6.0)
    pytest.importorskip("autograd")
    from autograd import make_jvp

    assert tuple(float(v) for v in make_jvp(lambda x: x * x * x)(2.0)(0.5)) == (8.0, 6.0)


def test_an_output_without_the_input_has_tangent_zero(mini):
    assert mini.make_jvp(lambda x: 3.0, 1.0)(1.0) == (3.0, 0.0)
    assert mini.deriv(lambda x: 3.0)(1.0) == 0.0


@pytest.mark.parametrize("name", sorted(CASES))
def test_deriv_matches_grad_and_hips(mini, name):
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    f, x = CASES[name]
    forward = mini.deriv(lambda t: f(t, mini))(x)
    assert abs(forward - mini.grad(lambda t: f(t, mini))(x)) <= 1e-12
    assert abs(forward - float(autograd.deriv(lambda t: f(t, anp))(x))) <= 1e-12


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_over_reverse_and_reverse_over_forward(mini, name):
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    f, x = CASES[name]
    g = lambda t: f(t, mini)
    hips = float(autograd.grad(autograd.grad(lambda t: f(t, anp)))(x))
    assert mini.deriv(mini.grad(g))(x) == pytest.approx(hips, rel=1e-12, abs=1e-12)
    assert mini.grad(mini.deriv(g))(x) == pytest.approx(hips, rel=1e-12, abs=1e-12)
    assert mini.deriv(mini.deriv(g))(x) == pytest.approx(hips, rel=1e-12, abs=1e-12)
