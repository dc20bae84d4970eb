"""Experiment for lesson {{ nn }}: the gradient of x*x at 3.0."""

from _provenance import announce
from autograd import grad


def main():
    announce()
    g = grad(lambda x: x * x)(3.0)
    print(f"grad(x*x)(3.0) = {g:.1f}")
    assert g == 6.0


if __name__ == "__main__":
    main()
