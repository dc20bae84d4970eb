"""Lesson 01: symbolic vs. finite differences vs. autograd, and the graph behind grad."""

import math
import os
from pathlib import Path

import autograd
import autograd.numpy as np
from autograd import grad
from autograd.core import VJPNode
from autograd.tracer import trace
from autograd.util import toposort

from _provenance import announce
from _record import record


def f(x):
    return np.exp(np.sin(x**2))


def df_by_hand(x):
    # f'(x) = exp(sin(x^2)) * cos(x^2) * 2x, derived on paper
    return math.exp(math.sin(x**2)) * math.cos(x**2) * 2 * x


def check_provenance():
    here = Path(autograd.__file__).resolve()
    package_root = here.parent.parent
    rel = here.relative_to(package_root).as_posix()
    pinned = os.environ.get("AUTOGRAD_PINNED_ROOT")
    if pinned:
        assert here.relative_to(Path(pinned).resolve()).as_posix() == "autograd/__init__.py"
    assert rel == "autograd/__init__.py"
    print(f"autograd 模块文件（相对包根目录）: {rel}")
    # grad is the nary_operator closure built by unary_to_nary in wrap_util.py
    grad_file = Path(grad.__code__.co_filename).resolve().relative_to(package_root).as_posix()
    assert grad_file == "autograd/wrap_util.py" and grad.__code__.co_name == "nary_operator"
    print(f"autograd.grad 的代码对象: {grad.__code__.co_name} @ {grad_file}")


def compare_three_ways(x):
    exact = df_by_hand(x)
    auto = float(grad(f)(x))
    print(f"\nx = {x}\n手算（符号）导数   : {exact:.15f}")
    print(f"autograd.grad      : {auto:.15f}")
    print(f"|差| = {abs(auto - exact):.1e}")
    assert abs(auto - exact) <= 1e-12 * abs(exact)
    record.set("compare", {"x": x, "exact": exact, "autograd": auto})

    print("\n   h       前向差分误差   中心差分误差")
    fwd, cen = {}, {}
    for k in range(1, 13):
        h = 10.0**-k
        fwd[k] = abs((float(f(x + h)) - float(f(x))) / h - exact)
        cen[k] = abs((float(f(x + h)) - float(f(x - h))) / (2 * h) - exact)
        print(f"  1e-{k:<2d}    {fwd[k]:.1e}        {cen[k]:.1e}")
    assert 5 < fwd[3] / fwd[4] < 20  # forward difference: error ~ h
    assert 50 < cen[2] / cen[3] < 200  # central difference: error ~ h^2
    assert min(fwd.values()) < 1e-6 and min(cen.values()) < 1e-8
    assert fwd[12] > 1e-6 and cen[12] > 1e-6  # round-off dominates for tiny h
    assert min(fwd.values()) > abs(auto - exact) and min(cen.values()) > abs(auto - exact)
    best_f, best_c = min(fwd, key=fwd.get), min(cen, key=cen.get)
    eps = np.finfo(float).eps
    print(f"前向差分最佳步长 1e-{best_f}（对照 sqrt(eps) = {eps**0.5:.1e}）")
    print(f"中心差分最佳步长 1e-{best_c}（对照 eps^(1/3) = {eps ** (1 / 3):.1e}）")
    assert best_f in (7, 8, 9) and best_c in (5, 6, 7)
    record.table("differences", ["k", "forward", "central"], [[k, fwd[k], cen[k]] for k in fwd])
    record.set("best_step", {"forward": best_f, "central": best_c})


def float32_steps(x):
    """The same two differences in float32 (self-test 1): the best steps grow with the machine epsilon."""
    exact = df_by_hand(x)
    x32 = np.float32(x)

    def f32(t):
        return np.exp(np.sin(t * t))

    assert type(f32(x32)) is np.float32  # the whole evaluation stays in single precision
    fwd, cen = {}, {}
    for k in range(1, 9):
        h = np.float32(10.0**-k)
        fwd[k] = abs(float((f32(x32 + h) - f32(x32)) / h) - exact)
        cen[k] = abs(float((f32(x32 + h) - f32(x32 - h)) / (2 * h)) - exact)
    best_f, best_c = min(fwd, key=fwd.get), min(cen, key=cen.get)
    eps32, eps64 = np.finfo(np.float32).eps, np.finfo(float).eps
    ratio_log2 = round(math.log2(eps32 / eps64))
    assert ratio_log2 == 29 and eps32 / eps64 == 2.0**ratio_log2
    assert best_f in (3, 4, 5) and best_c in (2, 3)  # about sqrt(eps32) and eps32^(1/3)
    record.set("float32", {"best_forward": best_f, "best_central": best_c, "eps_ratio_log2": ratio_log2,
                           "forward": fwd[best_f], "central": cen[best_c]})


def count_calls(n):
    calls = [0]

    def loss(v):
        calls[0] += 1
        return np.sum(np.exp(np.sin(v**2)))

    v = np.linspace(0.5, 1.5, n)
    h = 1e-6
    fd = np.array([(loss(v + h * e) - loss(v - h * e)) / (2 * h) for e in np.eye(n)])
    fd_calls = calls[0]
    calls[0] = 0
    g_fun = grad(loss)
    calls_after_construction = calls[0]
    g = g_fun(v)
    print(f"\nn = {n}: 中心差分调用 loss {fd_calls} 次；grad(loss) 构造时调用 "
          f"{calls_after_construction} 次，grad(loss)(v) 调用 {calls[0]} 次")
    print(f"返回函数名: {g_fun.__name__}")
    assert fd_calls == 2 * n and calls_after_construction == 0 and calls[0] == 1
    record.set("calls", {"n": n, "central": fd_calls, "construction": calls_after_construction,
                         "grad_call": calls[0]})
    assert g_fun.__name__ == "grad_of_loss_wrt_argnum_0"
    # wrap_util.wraps sets only __name__ and __doc__: the qualified name and the code object
    # (which tracebacks and debuggers show for the frame) still say nary_f
    assert g_fun.__qualname__.endswith(".nary_f") and g_fun.__code__.co_name == "nary_f"
    assert np.allclose(fd, g, rtol=1e-7, atol=0)


def walk_graph(x):
    start_node = VJPNode.new_root()
    with record.capture() as cap:
        y, end_node = trace(start_node, f, x)
    nodes = list(toposort(end_node))
    b_node = end_node.parents[0]
    a_node = b_node.parents[0]  # teaching labels of the lesson: a = x**2, b = sin(a), y = exp(b)
    record.graph("graph", cap, end_node, labels={start_node: "x", a_node: "a", b_node: "b", end_node: "y"})
    cap.release()
    assert len(nodes) == 4 and nodes[-1] is start_node
    print(f"\n图中节点数（含根节点）: {len(nodes)}")
    a = x**2
    b = math.sin(a)
    assert math.isclose(float(y), math.exp(b), rel_tol=1e-15)
    print(f"前向值: a = x**2 = {a:.6f}, b = sin(a) = {b:.6f}, y = exp(b) = {float(y):.6f}")
    local = [math.exp(b), math.cos(a), 2 * x]  # dy/db, db/da, da/dx
    g = 1.0
    for node, name, d in zip(nodes[:3], ["exp", "sin", "x**2"], local):
        (g_parent,) = tuple(node.vjp(g))
        assert math.isclose(float(g_parent), g * d, rel_tol=1e-14)
        print(f"  {name:5s}: 局部导数 {d:+.6f}，向父节点传出 {float(g_parent):+.6f}")
        record.append("steps", {"primitive": name, "local": d, "g_in": g, "g_out": g_parent})
        g = float(g_parent)
    assert math.isclose(g, df_by_hand(x), rel_tol=1e-14)
    record.set("forward", {"x": x, "a": a, "b": b, "y": float(y)})
    record.set("node_count", len(nodes))


def main():
    announce()
    check_provenance()
    compare_three_ways(1.5)
    float32_steps(1.5)
    count_calls(5)
    walk_graph(1.5)


if __name__ == "__main__":
    main()
