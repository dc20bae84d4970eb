"""Checks of stage 6: vectors, vspace, unbroadcast and the mutable flag.

Run: python -m pytest mini-autograd/exercises/test_stage_6.py
"""

import pytest

X = [0.5, -1.0, 2.0]
C = [1.0, 2.0, 3.0]

# Functions of a vector, written once for the engine under test (Vec, vsum) and for
# autograd.numpy (array, sum): the operators come from the Box classes.
CASES = {
    "square_plus_twice": (lambda x, m, vec: m.sum(x * x + 2.0 * x), X),
    "times_constant": (lambda x, m, vec: m.sum(x * vec(C) - x / 4.0), X),
    "quotient": (lambda x, m, vec: m.sum((x + 1.0) / (x * x + 2.0)), X),
    "scalar_into_vector": (lambda w, m, vec: m.sum(w * vec(C) + w * w), 1.5),
    "length_one": (lambda w, m, vec: m.sum(w * vec(C) - vec(C) / w), [1.5]),
}


class MiniNumpy:
    """The engine under test seen through the two names a case uses."""

    def __init__(self, mini):
        self.sum = mini.vsum


def as_list(value):
    return list(value.data) if hasattr(value, "data") else [float(value)]


def test_vspace_zeros_and_add_leave_their_arguments(mini):
    a, b = mini.Vec([1.0, 2.0]), mini.Vec([10.0, 20.0])
    vs = mini.vspace(a)
    assert vs.zeros().data == [0.0, 0.0]
    total = vs.add(a, b)
    assert total.data == [11.0, 22.0] and total is not a and total is not b
    assert a.data == [1.0, 2.0] and b.data == [10.0, 20.0]
    assert mini.vspace(2.5).zeros() == 0.0
    assert mini.vspace(mini.Box(a, mini.Node.new_root())).zeros().data == [0.0, 0.0]  # a Box: its value's space


def test_mut_add_writes_into_its_first_argument(mini):
    a, b = mini.Vec([1.0, 2.0]), mini.Vec([10.0, 20.0])
    out = mini.vspace(a).mut_add(a, b)
    assert out is a and a.data == [11.0, 22.0] and b.data == [10.0, 20.0]
    assert mini.vspace(1.0).mut_add(1.0, 2.5) == 3.5


def test_unbroadcast_sums_what_broadcasting_spread(mini):
    g = mini.Vec([1.0, 2.0, 3.5])
    assert mini.unbroadcast(g, mini.Vec(C)) is g  # same shape: nothing to undo, the same object
    assert mini.unbroadcast(g, 4.0) == 6.5  # a float was spread over all three
    assert mini.unbroadcast(g, mini.Vec([4.0])).data == [6.5]  # a length-1 Vec was spread
    assert mini.unbroadcast(2.0, 4.0) == 2.0


def test_unbroadcast_agrees_with_hips(mini):
    pytest.importorskip("autograd")
    import numpy as np

    import autograd.numpy as anp
    from autograd.numpy.numpy_vjps import unbroadcast

    g = [1.0, 2.0, 3.5]
    for target, mini_target in ((4.0, 4.0), (np.array([4.0]), mini.Vec([4.0])), (np.zeros(3), mini.Vec(C))):
        hips = unbroadcast(np.array(g), anp.metadata(target))
        assert as_list(mini.unbroadcast(mini.Vec(g), mini_target)) == np.atleast_1d(hips).tolist()


def test_accumulate_keeps_the_first_contribution_and_then_adds_in_place(mini):
    g1, g2, g3 = mini.Vec([1.0, 1.0]), mini.Vec([2.0, 2.0]), mini.Vec([4.0, 4.0])
    first = mini.accumulate(None, g1)
    assert first[0] is g1 and first[1] is False
    second = mini.accumulate(first, g2)
    assert second[1] is True and second[0].data == [3.0, 3.0]
    assert second[0] is not g1 and g1.data == [1.0, 1.0] and g2.data == [2.0, 2.0]  # a new object
    third = mini.accumulate(second, g3)
    assert third[1] is True and third[0] is second[0] and third[0].data == [7.0, 7.0]  # in place
    assert g3.data == [4.0, 4.0]


def test_accumulate_on_floats_as_in_stage_3(mini):
    assert mini.accumulate(None, 3.0) == (3.0, False)
    assert mini.accumulate((3.0, False), 3.0) == (6.0, True)
    assert mini.accumulate((6.0, True), 1.5) == (7.5, True)


def test_a_cotangent_handed_to_two_parents_is_not_written_into(mini):
    def f(x):  # the additions give the same cotangent object to both of their operands
        a, b = x * 2.0, x * 3.0
        return mini.vsum((a + b) + a)

    assert mini.grad(f)(mini.Vec([1.0, -1.0])).data == [7.0, 7.0]
    assert mini.grad(f)(1.0) == 7.0


def test_backward_pass_keeps_value_and_flag_pairs(mini, monkeypatch):
    seen = []
    original = mini.accumulate

    def recording(prev, g):
        out = original(prev, g)
        seen.append((prev, out[1]))
        return out

    monkeypatch.setattr(mini, "accumulate", recording)
    assert mini.grad(lambda x: x * x * x)(2.0) == 12.0
    # x * x * x is (x * x) * x: first the inner product's node, then the root three times
    assert [flag for _, flag in seen] == [False, False, True, True]
    assert [prev is None for prev, _ in seen] == [True, True, False, False]


def test_an_output_without_the_input_has_a_zero_gradient_of_the_input_shape(mini):
    assert mini.grad(lambda x: 3.0)(mini.Vec([1.0, 2.0])).data == [0.0, 0.0]
    assert mini.grad(lambda x: 3.0)(1.0) == 0.0


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_of_vectors_match_hips(mini, name):
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    f, x = CASES[name]
    mini_x = mini.Vec(x) if isinstance(x, list) else x
    hips_x = anp.array(x) if isinstance(x, list) else x
    ours = mini.grad(lambda t: f(t, MiniNumpy(mini), mini.Vec))(mini_x)
    hips = autograd.grad(lambda t: f(t, anp, anp.array))(hips_x)
    assert as_list(ours) == pytest.approx(anp.atleast_1d(hips).tolist(), rel=1e-12, abs=1e-12)


def test_second_derivative_through_a_broadcast(mini):
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    ours = mini.grad(mini.grad(lambda w: mini.vsum(w * w * mini.Vec(C))))(1.5)
    hips = autograd.grad(autograd.grad(lambda w: anp.sum(w * w * anp.array(C))))(1.5)
    assert ours == float(hips) == 12.0
