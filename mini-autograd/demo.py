"""A short, deterministic tour of Mini autograd (standard library only).

Run with:  python -B mini-autograd/demo.py
"""

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mini_autograd as mini  # noqa: E402


def square_demo():
    """grad of x*x at 3: one mul node, two parent slots, two contributions of 3."""
    x = mini.Box(3.0, mini.Node.new_root())
    y = x * x
    node = y.node
    same_parent = node.parents[0] is node.parents[1] is x.node
    contributions = [vjp(1.0) for vjp in node.vjps]
    total = mini.grad(lambda t: t * t)(3.0)
    assert same_parent and contributions == [3.0, 3.0] and total == 6.0
    print("f(x) = x * x at x = 3")
    print(f"  mul node parents are the input node twice: {same_parent}")
    print(f"  contributions: {contributions[0]:.1f} + {contributions[1]:.1f}")
    print(f"  grad: {total:.1f}")


def sin_exp_demo():
    """A small expression with sin and exp, checked against the hand derivative."""
    f = lambda x: mini.sin(x) * mini.exp(x) + x ** 2
    x = 0.5
    g = mini.grad(f)(x)
    by_hand = math.cos(x) * math.exp(x) + math.sin(x) * math.exp(x) + 2 * x
    assert abs(g - by_hand) < 1e-12
    print("f(x) = sin(x) * exp(x) + x ** 2 at x = 0.5")
    print(f"  Mini grad:   {g:.12f}")
    print(f"  by hand:     {by_hand:.12f}")


def order_demo():
    """The reverse order produced by toposort for f(x) = sin(x) * exp(x) + x ** 2."""
    x = mini.Box(0.5, mini.Node.new_root())
    end = mini.sin(x) * mini.exp(x) + x ** 2
    names = [node.name for node in mini.toposort(end.node)]
    assert names[0] == "add" and names[-1] == "input"
    print("toposort order (child before parents):")
    print("  " + " -> ".join(names))


def nested_demo():
    """Trace numbers: grad of grad, also when boxes of two traces meet in one call."""
    cube = mini.grad(mini.grad(lambda x: x * x * x))(2.0)
    mixed = mini.grad(lambda x: mini.grad(lambda y: x * y)(1.0))(2.0)
    assert cube == 12.0 and mixed == 1.0
    print("nested derivatives at x = 2:")
    print(f"  grad(grad(x ** 3)):            {cube:.1f}")
    print(f"  d/dx [d/dy (x * y) at y = 1]:  {mixed:.1f}")


def forward_demo():
    """Forward mode gives the same derivative in one forward run."""
    f = lambda x: mini.sin(x) * mini.exp(x) + x ** 2
    forward, reverse = mini.deriv(f)(0.5), mini.grad(f)(0.5)
    assert abs(forward - reverse) <= 1e-12
    print("f(x) = sin(x) * exp(x) + x ** 2 at x = 0.5")
    print(f"  forward mode (deriv): {forward:.12f}")
    print(f"  reverse mode (grad):  {reverse:.12f}")


def main():
    square_demo()
    print()
    sin_exp_demo()
    print()
    order_demo()
    print()
    nested_demo()
    print()
    forward_demo()


if __name__ == "__main__":
    main()
