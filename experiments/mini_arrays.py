"""14 · Mini's stage 6: vectors, unbroadcast and the (value, mutable) flag, next to HIPS.

Gradients of four vector functions in Mini (Vec, vsum) and in HIPS (ndarray, sum); the
cotangents unbroadcast sums back, in both engines; the flags Mini's accumulate returns while
one node receives three contributions; and what goes wrong when the first contribution is
flagged mutable: in (a + b) + a the additions hand one cotangent object to two parents.
"""

import sys
from pathlib import Path

import numpy as np

import autograd
import autograd.numpy as anp
from autograd.numpy.numpy_vjps import unbroadcast as hips_unbroadcast

import _provenance
from _provenance import announce
from _record import record


def mini_dir():
    """mini-autograd/ sits next to experiments/; the build may run a copy of this
    script elsewhere, so also look next to the folder of _provenance.py."""
    for base in (Path(__file__), Path(_provenance.__file__)):
        candidate = base.resolve().parent.parent / "mini-autograd"
        if (candidate / "mini_autograd.py").is_file():
            return candidate
    sys.exit("mini-autograd/ not found next to experiments/")


sys.path.insert(0, str(mini_dir()))
import mini_autograd as mini  # noqa: E402

X = [0.5, -1.0, 2.0]
C = [1.0, 2.0, 3.0]

# written once: `s` is vsum or anp.sum, `vec` builds a Vec or an ndarray
CASES = [
    ("sum(x*x + 2x)", lambda x, s, vec: s(x * x + 2.0 * x), X),
    ("sum(x*c - x/4)", lambda x, s, vec: s(x * vec(C) - x / 4.0), X),
    ("sum(w*c + w*w), w float", lambda w, s, vec: s(w * vec(C) + w * w), 1.5),
    ("sum(w*c - c/w), w length 1", lambda w, s, vec: s(w * vec(C) - vec(C) / w), [1.5]),
]


def as_list(value):
    return [float(v) for v in value.data] if isinstance(value, mini.Vec) else np.atleast_1d(value).tolist()


def shared(x):
    a, b = x * 2.0, x * 3.0
    return mini.vsum((a + b) + a)


def main():
    announce()
    print("--- gradients: Mini (Vec) and HIPS (ndarray) ---")
    rows = []
    for name, f, x in CASES:
        ours = mini.grad(lambda t: f(t, mini.vsum, mini.Vec))(mini.Vec(x) if isinstance(x, list) else x)
        hips = autograd.grad(lambda t: f(t, anp.sum, anp.array))(anp.array(x) if isinstance(x, list) else x)
        diff = max(abs(a - b) for a, b in zip(as_list(ours), as_list(hips)))
        print(f"{name:30s} Mini {as_list(ours)}  HIPS {as_list(hips)}  |diff| {diff:.1e}")
        assert diff <= 1e-12
        rows.append({"f": name, "mini": as_list(ours), "hips": as_list(hips)})
    record.set("grads", rows)

    print("--- unbroadcast of g = [1, 2, 3.5] ---")
    g = [1.0, 2.0, 3.5]
    sums = {}
    for label, hips_target, mini_target in (("float", 4.0, 4.0), ("length_one", np.array([4.0]), mini.Vec([4.0]))):
        ours = as_list(mini.unbroadcast(mini.Vec(g), mini_target))
        theirs = np.atleast_1d(hips_unbroadcast(np.array(g), anp.metadata(hips_target))).tolist()
        print(f"target {label:9s} Mini {ours}  HIPS {theirs}")
        assert ours == theirs == [6.5]
        sums[label] = ours[0]
    record.set("unbroadcast", sums)

    print("--- accumulate on the root of x * x * x at a Vec ---")
    flags, objects = [], []
    real = mini.accumulate

    def watched(prev, g):
        out = real(prev, g)
        flags.append(out[1])
        objects.append(out[0])
        return out

    mini.accumulate = watched
    try:
        cube = mini.grad(lambda x: mini.vsum(x * x * x))(mini.Vec([2.0]))
    finally:
        mini.accumulate = real
    root = flags[2:]  # the first two calls store the cotangents of the two products
    same = objects[4] is objects[3]
    print("flags returned for the root:", root, "| third sum written into the second's object:", same,
          "| gradient", cube.data)
    assert root == [False, True, True] and same and cube.data == [12.0]
    record.set("flags", {"root": root, "third_in_place": same, "grad": cube.data[0]})

    print("--- (a + b) + a with a = 2x, b = 3x: the true gradient is 7 per element ---")
    right = mini.grad(shared)(mini.Vec([1.0, -1.0])).data

    def first_mutable(prev, g):
        return (g, True) if prev is None else real(prev, g)

    mini.accumulate = first_mutable
    try:
        wrong = mini.grad(shared)(mini.Vec([1.0, -1.0])).data
    finally:
        mini.accumulate = real
    print("Mini as written:", right, "| first contribution flagged True:", wrong)
    assert right == [7.0, 7.0] and wrong == [10.0, 10.0]
    record.set("shared", {"right": right[0], "wrong": wrong[0]})


if __name__ == "__main__":
    main()
