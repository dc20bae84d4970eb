"""Lesson 01: the gradient of a product through the real Value.__mul__ and Value.backward."""

from _provenance import announce

announce()

from micrograd.engine import Value  # noqa: E402
from tiny_value import TinyValue  # noqa: E402


def product_grads(cls):
    a, b = cls(2.0), cls(-3.0)
    c = a * b
    d = c * a  # a appears twice: its gradient is the sum of two paths
    d.backward()
    return d.data, a.grad, b.grad


real = product_grads(Value)
print(f"d = a*b*a = {real[0]}")
print(f"dd/da = {real[1]}  (2ab = 2*2*(-3))")
print(f"dd/db = {real[2]}  (a^2 = 4)")
assert real == (-12.0, -12.0, 4.0), real

tiny = product_grads(TinyValue)
print(f"TinyValue gives the same: {tiny == real}")
assert tiny == real, tiny
