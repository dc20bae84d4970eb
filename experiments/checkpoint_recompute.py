"""09 · checkpoint in autograd 1.9.1: the inner function runs twice, both times in the forward pass.

checkpoint(fun) wraps fun as one primitive whose VJP maker is make_vjp(fun, argnum)(*args)[0].
VJP makers run when the node is created (VJPNode.__init__), so the re-run that builds the
inner graph happens right after the first, untraced run -- before the backward pass -- and
that graph stays referenced by the node's vjp closure until the backward pass. Counts the
runs and the VJPNodes created before the outer backward pass starts, with and without it.
"""

import numpy as np

import autograd.core as core
import autograd.numpy as anp
from autograd import grad
from autograd.differential_operators import checkpoint

from _provenance import announce


def measure(use_checkpoint):
    runs, nodes, at_backward = [0], [0], []  # at_backward: (runs, nodes) when backward_pass starts
    real_init, real_bp = core.VJPNode.__init__, core.backward_pass

    def block(x):
        runs[0] += 1
        for _ in range(5):
            x = anp.sin(x) * 1.5
        return x

    inner = checkpoint(block) if use_checkpoint else block

    def init(self, *a):
        nodes[0] += 1
        real_init(self, *a)

    def bp(g, end_node):
        at_backward.append((runs[0], nodes[0]))
        return real_bp(g, end_node)

    core.VJPNode.__init__, core.backward_pass = init, bp
    try:
        g = grad(lambda x: anp.sum(inner(x)))(np.array([0.3, 0.7]))
    finally:
        core.VJPNode.__init__, core.backward_pass = real_init, real_bp
    return g, runs[0], at_backward[0]


def main():
    announce()
    g_plain, runs_plain, nodes_plain = measure(False)
    g_ckpt, runs_ckpt, nodes_ckpt = measure(True)
    for name, runs, (runs_before, nodes_before) in (("plain", runs_plain, nodes_plain),
                                                     ("checkpoint", runs_ckpt, nodes_ckpt)):
        print(f"{name:10s} block ran {runs}x in all; when the outer backward pass starts it had run "
              f"{runs_before}x and {nodes_before} VJPNodes existed")
    assert np.allclose(g_plain, g_ckpt)
    # plain: 10 nodes (sin, multiply, 5 times) + sum
    assert (runs_plain, nodes_plain) == (1, (1, 11))
    # checkpoint: the block node + the same 10 inner nodes (built by make_vjp in the node's
    # VJP maker) + sum, and both runs done before the backward pass
    assert (runs_ckpt, nodes_ckpt) == (2, (2, 12))


if __name__ == "__main__":
    main()
