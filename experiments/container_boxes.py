"""04 · Containers as arguments: inside f the tuple/list/dict is a SequenceBox or DictBox.

grad of a function of a container returns a container of the same kind, one gradient per
entry; indexing the box is itself a traced primitive (container_take in autograd/builtins.py).
"""

import numpy as np

from autograd import grad

from _provenance import announce


def main():
    announce()
    seen = []

    def f_dict(d):
        seen.append(type(d).__name__)
        return d["a"] * d["b"]

    def f_seq(t):
        seen.append(type(t).__name__)
        return t[0] * t[1] ** 2

    gd = grad(f_dict)({"a": 2.0, "b": 3.0})
    gt = grad(f_seq)((2.0, 3.0))
    gl = grad(f_seq)([2.0, 3.0])
    print("dict :", type(gd).__name__, {k: float(v) for k, v in gd.items()})
    print("tuple:", type(gt).__name__, [float(v) for v in gt])
    print("list :", type(gl).__name__, [float(v) for v in gl])
    print("types seen inside f:", seen)
    assert {k: float(v) for k, v in gd.items()} == {"a": 3.0, "b": 2.0}
    assert type(gt) is tuple and type(gl) is list and [float(v) for v in gt] == [9.0, 12.0]
    assert seen == ["DictBox", "SequenceBox", "SequenceBox"]
    assert isinstance(gd["a"], np.ndarray)


if __name__ == "__main__":
    main()
