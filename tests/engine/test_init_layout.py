"""What a release archive installs for ``import``, read from its own files by
lessonkit.cli.layout (never by running them): each build backend's configuration, then the tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from lessonkit.cli import layout

PKG = {"__init__.py": "", "core.py": "def f():\n    return 1\n"}


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def _pkg(where: str, name: str) -> dict[str, str]:
    return {f"{where}{name}/{rel}": text for rel, text in PKG.items()}


@pytest.mark.parametrize(
    ("files", "packages", "declared_by"),
    [
        (  # hatch: the wheel target names the packages (two, under src/)
            {
                "pyproject.toml": '[tool.hatch.build.targets.wheel]\npackages = ["src/attr", "src/attrs"]\n',
                **_pkg("src/", "attr"),
                **_pkg("src/", "attrs"),
                **_pkg("src/", "helpers_not_installed"),
            },
            {"attr": "src", "attrs": "src"},
            "[tool.hatch.build.targets.wheel] packages",
        ),
        (  # flit: the module's import name differs from the distribution's
            {"pyproject.toml": '[tool.flit.module]\nname = "yaml_tools"\n', "yaml_tools.py": "X = 1\n"},
            {"yaml_tools": ""},
            "[tool.flit.module] name",
        ),
        (  # setuptools in pyproject.toml: package-dir and several top-level modules
            {
                "pyproject.toml": '[tool.setuptools]\npackage-dir = {"" = "lib"}\npy-modules = ["one", "two"]\n',
                "lib/one.py": "",
                "lib/two.py": "",
            },
            {"one": "lib", "two": "lib"},
            "[tool.setuptools] packages",
        ),
        (  # setup.cfg: package_dir = =src
            {
                "setup.cfg": "[options]\npackages =\n    pkg\n    pkg.sub\npackage_dir =\n    =src\n",
                **_pkg("src/", "pkg"),
            },
            {"pkg": "src"},
            "setup.cfg [options] packages",
        ),
        (  # setuptools' record lists tests/ beside the package: the package is what is read
            {"pkg.egg-info/top_level.txt": "pkg\ntests\n", **_pkg("", "pkg"), **_pkg("", "tests")},
            {"pkg": ""},
            "pkg.egg-info/top_level.txt",
        ),
        (  # poetry: include from src
            {"pyproject.toml": '[tool.poetry]\npackages = [{include = "pkg", from = "src"}]\n', **_pkg("src/", "pkg")},
            {"pkg": "src"},
            "[tool.poetry] packages",
        ),
        (  # pdm without configuration, and no configuration at all: the tree (src/ first; tests, docs never)
            {
                "pyproject.toml": '[build-system]\nbuild-backend = "pdm.backend"\n',
                **_pkg("src/", "dep_logic"),
                **_pkg("", "tests"),
                "setup.py": "",
            },
            {"dep_logic": "src"},
            "the tree (packages and modules at the top and under src/)",
        ),
        (  # a flat tree with a package and a single-file module; build helpers are not modules
            {**_pkg("", "zipp"), "extra_mod.py": "", "versioneer.py": "", "conftest.py": "", "test_x.py": ""},
            {"extra_mod": "", "zipp": ""},
            "the tree (packages and modules at the top and under src/)",
        ),
    ],
)
def test_the_import_names_come_from_the_archives_own_files(tmp_path, files, packages, declared_by):
    found = layout.read_layout(_tree(tmp_path, files), "dist-name")
    assert found.packages == packages
    assert found.declared_by == declared_by


def test_the_distributions_own_name_comes_first_among_what_the_tree_holds(tmp_path):
    found = layout.read_layout(_tree(tmp_path, {**_pkg("", "aaa"), **_pkg("", "my_dist")}), "My-Dist")
    assert list(found.packages) == ["my_dist", "aaa"]


def test_a_compiled_only_backend_and_compiled_only_modules_are_named(tmp_path):
    tree = _tree(
        tmp_path,
        {
            "pyproject.toml": '[build-system]\nbuild-backend = "scikit_build_core.build"\n',
            **_pkg("src/", "fast"),
            "src/fast/_core.pyx": "",
            "src/fast/_pure.c": "",
            "src/fast/_pure.py": "",
        },
    )
    found = layout.read_layout(tree, "fast")
    assert found.not_pure() == "its build backend scikit_build_core.build compiles extension modules"
    assert found.native == ("fast._core",)  # _pure.c has a Python twin


def test_a_namespace_package_counts_when_the_distributions_name_starts_with_it(tmp_path):
    tree = _tree(tmp_path, {**_pkg("", "jaraco/functools"), "other/notes.py": ""})
    assert layout.read_layout(tree, "jaraco.functools").packages == {"jaraco": ""}
    assert layout.read_layout(tree, "functools-extra").packages == {}  # a folder without __init__.py otherwise


@pytest.mark.parametrize(
    "files",
    [
        {"pyproject.toml": '[tool.setuptools]\npackage-dir = {"" = "../outside"}\npackages = ["secret"]\n'},
        {"setup.cfg": "[options]\npackage_dir =\n    = ../outside\npackages = secret\n"},
        {"pyproject.toml": '[tool.poetry]\npackages = [{include = "secret", from = "../outside"}]\n'},
        {"pyproject.toml": '[tool.pdm.build]\npackage-dir = "../outside"\n'},
    ],
)
def test_a_configuration_that_names_a_folder_outside_the_archive_is_not_followed(tmp_path, files):
    (tmp_path / "outside" / "secret").mkdir(parents=True)
    (tmp_path / "outside" / "secret" / "__init__.py").write_text("def secret_fn():\n    return 1\n")
    tree = tmp_path / "pkg-1.0"
    (tree / "real").mkdir(parents=True)
    (tree / "real" / "__init__.py").write_text("def f():\n    return 1\n")
    for name, text in files.items():
        (tree / name).write_text(text)
    found, _what, _backend = layout._declared(tree)
    assert all(base is None or ".." not in base for base, _ in found)
    assert "secret" not in {name for _, name in found} or all(base is None for base, n in found if n == "secret")
