"""06 · Complex inputs: what grad returns, and holomorphic_grad.

For a real-valued f of z = x + iy, grad(f)(z) is df/dx - i df/dy (checked against finite
differences along 1 and i). holomorphic_grad(fun) is grad(real(fun)), which by the
Cauchy-Riemann equations equals f'(z) for a holomorphic fun.
"""


import autograd.numpy as anp
from autograd import grad, holomorphic_grad

from _provenance import announce


def main():
    announce()
    z, h = 1.0 + 2.0j, 1e-6
    f = lambda w: anp.abs(w) ** 2  # noqa: E731  (x^2 + y^2)
    g = complex(grad(f)(z))
    dx = (f(z + h) - f(z - h)) / (2 * h)
    dy = (f(z + 1j * h) - f(z - 1j * h)) / (2 * h)
    print(f"grad(|z|^2)(1+2j) = {g}; finite differences: df/dx = {dx:.6f}, df/dy = {dy:.6f}")
    assert g == 2 - 4j and abs(g - (dx - 1j * dy)) < 1e-6
    hg = complex(holomorphic_grad(lambda w: w * w)(z))
    print(f"holomorphic_grad(z*z)(1+2j) = {hg}; 2z = {2 * z}")
    assert hg == 2 * z


if __name__ == "__main__":
    main()
