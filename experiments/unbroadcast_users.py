"""07 · Which rules of the pinned autograd call unbroadcast: read from its source.

SciPy is not installed next to the experiments, so the wrappers under autograd/scipy/ are
read, not imported: for every module of the package, the top-level defvjp(...) calls whose
makers use unbroadcast_f, the top-level functions that call unbroadcast or unbroadcast_f,
and the argument each unbroadcast_f(target, ...) call restores the shape of.
"""

import ast
from pathlib import Path

import autograd

from _provenance import announce
from _record import record

NAMES = {"unbroadcast", "unbroadcast_f"}


def called(tree, names):
    """The Call nodes under ``tree`` whose function is a plain name in ``names``."""
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in names]


def scan(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    rules, functions, targets = [], [], set()
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef) and called(stmt, NAMES):
            functions.append(stmt.name)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            call = stmt.value
            if isinstance(call.func, ast.Name) and call.func.id == "defvjp" and called(call, {"unbroadcast_f"}):
                rules.append(ast.unparse(call.args[0]))
    for call in called(tree, {"unbroadcast_f"}):
        if call.args and isinstance(call.args[0], ast.Name):
            targets.add(call.args[0].id)
    return rules, functions, sorted(targets)


def main():
    announce()
    package = Path(autograd.__file__).parent
    users = {}
    for path in sorted(package.rglob("*.py")):
        rules, functions, targets = scan(path)
        if rules or functions:
            rel = str(path.relative_to(package.parent))
            users[rel] = {"rules": rules, "functions": functions, "targets": targets}
            print(rel)
            if rules:
                print(f"  defvjp rules ({len(rules)}): {', '.join(rules)}")
            if functions:
                print(f"  functions: {', '.join(functions)}")
            print(f"  unbroadcast_f restores the shape of: {', '.join(targets) or '-'}")
    record.set("users", users)

    vjps = users.pop("autograd/numpy/numpy_vjps.py")
    binary = ["add", "multiply", "subtract", "divide", "maximum", "minimum", "fmax", "fmin", "logaddexp",
              "logaddexp2", "true_divide", "mod", "remainder", "power", "arctan2", "hypot"]
    assert vjps["rules"] == [f"anp.{name}" for name in binary] and vjps["targets"] == ["x", "y"]
    assert vjps["functions"] == ["matmul_adjoint_0", "matmul_adjoint_1", "grad_einsum", "unbroadcast_f",
                                 "unbroadcast_einsum"]
    special = users.pop("autograd/scipy/special.py")
    assert special == {"rules": ["beta", "betainc", "betaln"], "functions": ["make_gammainc_vjp_arg1"],
                       "targets": ["a", "b", "x"]}
    stats = {Path(rel).stem for rel in users}
    assert all(rel.startswith("autograd/scipy/stats/") for rel in users)
    assert stats == {"norm", "t", "beta", "gamma", "chi2", "poisson", "multivariate_normal"}
    assert "dirichlet" not in stats and (package / "scipy" / "stats" / "dirichlet.py").is_file()
    record.set("stats_modules", sorted(stats))
    print(f"\n{len(binary)} binary ufunc rules and 5 functions in numpy_vjps.py; scipy.special: 3 rules and one "
          f"maker factory; scipy.stats: {len(stats)} modules (all but dirichlet)")


if __name__ == "__main__":
    main()
