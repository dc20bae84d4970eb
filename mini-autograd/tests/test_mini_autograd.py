"""Tests for Mini autograd: exact values, finite differences and HIPS autograd."""

import math

import pytest

import mini_autograd as mini


# Each case is written once against a namespace `m` that provides sin, cos,
# exp, log and tanh, so the same function runs on Mini and on autograd.numpy.
CASES = {
    "square": (lambda x, m: x * x, 3.0),
    "cubic": (lambda x, m: x ** 3 - 2 * x + 1, -1.5),
    "sin_exp": (lambda x, m: m.sin(x) * m.exp(x) + x ** 2, 0.5),
    "quotient": (lambda x, m: (x + 1) / (x * x + 2), 0.7),
    "log_tanh": (lambda x, m: m.log(x) * m.tanh(x) - m.cos(x), 1.3),
    "shared": (lambda x, m: m.sin(x * x) + m.exp(-x) * x, 0.9),
    "power_base": (lambda x, m: 2.0 ** x + x ** 0.5, 1.7),
}


def central_difference(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


def test_square_is_three_plus_three():
    x = mini.Box(3.0, mini.Node.new_root())
    y = x * x
    assert y.value == 9.0
    assert y.node.parents == (x.node, x.node)
    assert [vjp(1.0) for vjp in y.node.vjps] == [3.0, 3.0]
    assert mini.grad(lambda t: t * t)(3.0) == 6.0


def test_exact_linear_and_constant_cases():
    assert mini.grad(lambda x: 3 * x + 2)(4.0) == 3.0
    assert mini.grad(lambda x: x)(5.0) == 1.0
    assert mini.grad(lambda x: 7.0)(5.0) == 0.0
    assert mini.grad(lambda x: x / 4 - x)(2.0) == -0.75


def test_make_vjp_returns_value_and_scales_cotangent():
    vjp, value = mini.make_vjp(lambda x: x * x * x, 2.0)
    assert value == 8.0
    assert vjp(1.0) == 12.0
    assert vjp(0.5) == 6.0


def test_add_outgrads():
    assert mini.add_outgrads(None, 3.0) == 3.0
    assert mini.add_outgrads(3.0, 3.0) == 6.0


def test_backward_pass_sums_both_contributions(monkeypatch):
    calls = []
    original = mini.add_outgrads

    def recording(prev_g, g):
        calls.append((prev_g, g))
        return original(prev_g, g)

    monkeypatch.setattr(mini, "add_outgrads", recording)
    assert mini.grad(lambda x: x * x)(3.0) == 6.0
    assert calls == [(None, 3.0), (3.0, 3.0)]


def test_toposort_children_before_parents_each_once():
    x = mini.Box(0.5, mini.Node.new_root())
    a = mini.sin(x)
    b = mini.exp(x)
    end = a * b + a
    order = mini.toposort(end.node)
    assert len(order) == len(set(order)) == 5
    position = {node: i for i, node in enumerate(order)}
    for node in order:
        for parent in node.parents:
            assert position[node] < position[parent]
    assert order[0] is end.node and order[-1] is x.node


def test_primitive_without_boxes_is_plain_call():
    assert mini.mul(2.0, 3.0) == 6.0
    assert mini.sin(0.0) == 0.0
    assert not isinstance(mini.exp(0.0), mini.Box)


def test_primitive_without_vjp_raises():
    hypot = mini.primitive(math.hypot)
    assert hypot(3.0, 4.0) == 5.0
    with pytest.raises(NotImplementedError):
        mini.grad(lambda x: hypot(x, 4.0))(3.0)


def test_nested_grad_uses_trace_numbers():
    assert mini.grad(mini.grad(lambda x: x * x * x))(2.0) == 12.0
    # boxes of two traces meet in one call: d/dx [d/dy (x * y)] = 1
    assert mini.grad(lambda x: mini.grad(lambda y: x * y)(1.0))(2.0) == 1.0
    assert mini.trace_stack.top == -1


def test_trace_number_is_given_back_after_an_error():
    with pytest.raises(ZeroDivisionError):
        mini.grad(lambda x: x / 0.0)(1.0)
    assert mini.trace_stack.top == -1
    assert mini.grad(lambda x: x * x)(3.0) == 6.0


def test_forward_mode():
    assert mini.make_jvp(lambda x: x * x * x, 2.0)(0.5) == (8.0, 6.0)
    assert mini.make_jvp(lambda x: 3.0, 1.0)(1.0) == (3.0, 0.0)
    f = lambda x: mini.sin(x) * mini.exp(x) + x ** 2
    assert abs(mini.deriv(f)(0.5) - mini.grad(f)(0.5)) <= 1e-12
    assert mini.deriv(mini.grad(f))(0.5) == pytest.approx(mini.grad(mini.grad(f))(0.5), rel=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_finite_differences(name):
    f, x = CASES[name]
    numeric = central_difference(lambda t: f(t, math), x)
    assert mini.grad(lambda t: f(t, mini))(x) == pytest.approx(numeric, rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("name", sorted(CASES))
def test_second_derivative_matches_hips_autograd(name):
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    f, x = CASES[name]
    hips = float(autograd.grad(autograd.grad(lambda t: f(t, anp)))(x))
    ours = mini.grad(mini.grad(lambda t: f(t, mini)))(x)
    assert ours == pytest.approx(hips, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_hips_autograd(name):
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    f, x = CASES[name]
    hips = float(autograd.grad(lambda t: f(t, anp))(x))
    ours = mini.grad(lambda t: f(t, mini))(x)
    assert abs(ours - hips) <= 1e-12
