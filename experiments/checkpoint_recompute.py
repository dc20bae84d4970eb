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
from autograd import grad, make_vjp
from autograd.differential_operators import checkpoint
from autograd.extend import defvjp_argnum, primitive

from _provenance import announce
from _record import record


def measure(use_checkpoint, wrapper=checkpoint):
    runs, nodes, at_backward = [0], [0], []  # at_backward: (runs, nodes) when backward_pass starts
    real_init, real_bp = core.VJPNode.__init__, core.backward_pass

    def block(x):
        runs[0] += 1
        for _ in range(5):
            x = anp.sin(x) * 1.5
        return x

    inner = wrapper(block) if use_checkpoint else block

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


def deferred_checkpoint(fun):
    """checkpoint with its one change the lesson's self-test asks for: make_vjp moves into the closure,
    so the VJP maker (run in the forward pass) keeps only the arguments, and the re-run happens when
    the backward pass calls the closure. Not autograd's code."""

    def wrapped_grad(argnum, ans, args, kwargs):
        return lambda g: make_vjp(fun, argnum)(*args, **kwargs)[0](g)

    wrapped = primitive(fun)
    defvjp_argnum(wrapped, wrapped_grad)
    return wrapped


def self_test_cases():
    """Recorded, not printed: the three variants side by side."""
    rows = {}
    for name, use, wrapper in (("plain", False, checkpoint), ("checkpoint", True, checkpoint),
                               ("deferred", True, deferred_checkpoint)):
        g, runs, (runs_before, nodes_before) = measure(use, wrapper)
        rows[name] = {"runs": runs, "runs_before_backward": runs_before, "nodes_before_backward": nodes_before,
                      "grad": g}
    assert np.allclose(rows["deferred"]["grad"], rows["plain"]["grad"])
    assert (rows["deferred"]["runs"], rows["deferred"]["runs_before_backward"],
            rows["deferred"]["nodes_before_backward"]) == (2, 1, 2)  # the block node and sum only
    record.set("variants", rows)


if __name__ == "__main__":
    main()
    self_test_cases()
