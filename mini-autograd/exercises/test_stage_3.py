"""Checks of stage 3: contributions that reach one node along several paths are summed.

Run: python -m pytest mini-autograd/exercises/test_stage_3.py
"""

import math

import pytest

# Every case uses x (or an intermediate value) more than once.
CASES = {
    "square": (lambda x, m: x * x, 3.0),
    "cubic": (lambda x, m: x * x * x - 2 * x + 1, -1.5),
    "sin_exp": (lambda x, m: m.sin(x) * m.exp(x) + x ** 2, 0.5),
    "quotient": (lambda x, m: (x + 1) / (x * x + 2), 0.7),
    "log_tanh": (lambda x, m: m.log(x) * m.tanh(x) - m.cos(x), 1.3),
    "shared": (lambda x, m: m.sin(x * x) + m.exp(-x) * x, 0.9),
    "power_base": (lambda x, m: 2.0 ** x + x ** 0.5, 1.7),
}


def central_difference(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


def test_add_outgrads_sums(mini):
    assert mini.add_outgrads(None, 3.0) == 3.0
    assert mini.add_outgrads(3.0, 3.0) == 6.0
    assert mini.add_outgrads(-1.0, 0.25) == -0.75


def test_x_times_x_is_three_plus_three(mini, monkeypatch):
    calls = []
    original = mini.add_outgrads

    def recording(prev_g, g):
        calls.append((prev_g, g))
        return original(prev_g, g)

    monkeypatch.setattr(mini, "add_outgrads", recording)
    assert mini.grad(lambda x: x * x)(3.0) == 6.0
    assert calls == [(None, 3.0), (3.0, 3.0)]  # two slots of one node, summed on the root


def test_three_paths_match_the_hand_formula(mini):
    x = 0.5
    by_hand = math.cos(x) * math.exp(x) + math.sin(x) * math.exp(x) + 2 * x
    assert abs(mini.grad(lambda t: mini.sin(t) * mini.exp(t) + t ** 2)(x) - by_hand) < 1e-12


def test_make_vjp_of_a_cube(mini):
    vjp, value = mini.make_vjp(lambda x: x * x * x, 2.0)
    assert value == 8.0 and vjp(1.0) == 12.0 and vjp(0.5) == 6.0


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_finite_differences(mini, name):
    f, x = CASES[name]
    numeric = central_difference(lambda t: f(t, math), x)
    assert mini.grad(lambda t: f(t, mini))(x) == pytest.approx(numeric, rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_hips_autograd(mini, name):
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    f, x = CASES[name]
    hips = float(autograd.grad(lambda t: f(t, anp))(x))
    assert abs(mini.grad(lambda t: f(t, mini))(x) - hips) <= 1e-12
