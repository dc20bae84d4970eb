"""``lessonkit init --package NAME==VERSION`` starts a series from real pure-Python release
archives of the package index, whatever their build backend and layout: each series is written,
built with ``mkdocs build --strict`` and passes ``lessonkit verify --site``.

The archives are read from the package index once and kept in ``.cache/init-sdists/`` (checked
against the sha256 pinned below on every use); the test then serves them as a local simple index
(``PIP_INDEX_URL=file:…``, with the ``#sha256=`` of each), so ``init`` and the build go through the
same index code as with PyPI, offline and without reading the index again."""

from __future__ import annotations

import hashlib
import html
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from lessonkit.cli.main import main
from lessonkit.source import fetch

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "init-sdists"


@dataclass(frozen=True)
class Case:
    requirement: str
    filename: str  # as the index lists it
    sha256: str
    file: str  # the lesson's File:
    symbol: str  # and Symbol:
    path: str  # [experiments] path of site.toml ("" : none written)
    packages: tuple[str, ...]  # the top-level import names read from the archive's own files


CASES = [
    # setuptools + setuptools-scm, setup.cfg `package_dir = =src`; every module is private (_hooks.py)
    Case(
        "pluggy==1.5.0",
        "pluggy-1.5.0.tar.gz",
        "2cffa88e94fdc978c4c574f15f9e59b7f4201d439195c3715ca9e2486f1d0cf1",
        "src/pluggy/_hooks.py",
        "normalize_hookimpl_opts",
        "src",
        ("pluggy",),
    ),
    # hatchling + hatch-vcs, src layout, two top-level packages named by the wheel target
    Case(
        "attrs==23.2.0",
        "attrs-23.2.0.tar.gz",
        "935dc3b529c262f6cf76e50877d35a4bd3c1de194fd41f47a2b7ae8f19971f30",
        "src/attr/converters.py",
        "optional",
        "src",
        ("attr", "attrs"),
    ),
    # flit_core, src layout, no [tool.flit.module]: found in the tree
    Case(
        "tomli==2.0.1",
        "tomli-2.0.1.tar.gz",
        "de526c12914f0c550d15924c62d72abc48d6fe7364aa87328337a31007fe8a4f",
        "src/tomli/_parser.py",
        "load",
        "src",
        ("tomli",),
    ),
    # pdm-backend, src layout, PEP 625 file name (dep_logic-…) for the name dep-logic
    Case(
        "dep-logic==0.4.0",
        "dep_logic-0.4.0.tar.gz",
        "be6a37296873be768f83357f9f5f0179e185157572d179ae1ff5a3ac49e3af9a",
        "src/dep_logic/utils.py",
        "version_split",
        "src",
        ("dep_logic",),
    ),
    # setuptools + setuptools-scm, flat layout (the package at the top of the archive)
    Case(
        "zipp==3.19.2",
        "zipp-3.19.2.tar.gz",
        "bf1dcf6450f873a13e952a29504887c89e6de7506209e5b1bcc3460135d4de19",
        "zipp/glob.py",
        "separate",
        "",
        ("zipp",),
    ),
]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def local_index(tmp_path_factory) -> str:
    """A PEP 503 simple index (a ``file:`` URL) of the CASES' archives: each read from the package
    index only when ``.cache/init-sdists/`` lacks it, and checked against its pinned sha256."""
    CACHE.mkdir(parents=True, exist_ok=True)
    simple = tmp_path_factory.mktemp("index") / "simple"
    for case in CASES:
        archive = CACHE / case.filename
        if not archive.is_file() or _sha256(archive) != case.sha256:
            archive.unlink(missing_ok=True)
            name, _, version = case.requirement.partition("==")
            try:
                listed = fetch.find_sdist(name, version)
                fetch.download_checked(listed, case.sha256, CACHE)
            except Exception as exc:  # noqa: BLE001 - offline: say which archive and why
                pytest.skip(f"cannot read {case.filename} from the package index: {exc}")
        page = simple / re.sub(r"[-_.]+", "-", case.requirement.partition("==")[0]).lower()
        page.mkdir(parents=True)
        link = f"{archive.as_uri()}#sha256={case.sha256}"
        (page / "index.html").write_text(
            f'<!DOCTYPE html><html><body><a href="{html.escape(link)}">{case.filename}</a></body></html>\n',
            encoding="utf-8",
        )
    return simple.as_uri() + "/"


@pytest.mark.parametrize("case", CASES, ids=[c.requirement for c in CASES])
def test_init_starts_a_series_that_builds_and_verifies_from_a_real_sdist(case, local_index, tmp_path, monkeypatch):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LESSONKIT_", "AUTOGRAD_", "PIP_"))}
    env.update(PIP_INDEX_URL=local_index, PIP_CONFIG_FILE=os.devnull, LESSONKIT_CACHE=str(tmp_path / "cache"))
    env.update(NO_MKDOCS_2_WARNING="1", SOURCE_DATE_EPOCH="1764460800")
    for key in [k for k in os.environ if k.startswith(("LESSONKIT_", "PIP_"))]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("PIP_INDEX_URL", local_index)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    series = tmp_path / "series"
    assert main(["init", str(series), "--package", case.requirement, "--lang", "en"]) == 0

    pin_toml = (series / "sourcemap" / "pin.toml").read_text(encoding="utf-8")
    name, _, version = case.requirement.partition("==")
    assert f'filename = "{case.filename}"\nsha256 = "{case.sha256}"\nrequirement = "{case.requirement}"\n' in pin_toml
    assert f'version = "{version}"\n' in pin_toml
    if case.requirement == "pluggy==1.5.0":  # the pin reference shows what init wrote for it
        from test_pin_reference import _fenced

        assert pin_toml == _fenced("toml")[0]
        manifest = (series / "sourcemap" / "manifest.sha256").read_text(encoding="utf-8")
        assert manifest.startswith(_fenced("text")[0])
    lesson = (series / "docs" / "lessons" / "01-first-look.md").read_text(encoding="utf-8")
    assert f"```real-source\nFile: {case.file}\nSymbol: {case.symbol}\nCommit: {case.sha256[:7]}\n```" in lesson
    site_toml = (series / "sourcemap" / "site.toml").read_text(encoding="utf-8")
    if case.path:
        assert f'[experiments]\npath = "{case.path}"' in site_toml
    else:
        assert "[experiments]" not in site_toml
    module = case.file.removeprefix(f"{case.path}/" if case.path else "").removesuffix(".py").replace("/", ".")
    script = (series / "experiments" / "lesson01_first_look.py").read_text(encoding="utf-8")
    assert f"import {module} as module\n" in script and "PINNED_VERSION" not in script

    from lessonkit.cli import layout

    tree = tmp_path / "tree"
    root = fetch.safe_extract(CACHE / case.filename, tree, fetch.archive_root(CACHE / case.filename))
    assert tuple(layout.read_layout(root, name).packages) == case.packages

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", *args], cwd=series, env=env, capture_output=True, text=True, timeout=600
        )

    built = run("mkdocs", "build", "--strict")
    assert built.returncode == 0, built.stderr[-3000:]
    page = (series / "site" / "lessons" / "01-first-look" / "index.html").read_text(encoding="utf-8")
    assert f"{module} from the pinned tree: {case.file}" in page
    assert f"{case.symbol} is callable: True" in page
    checked = run("lessonkit", "verify", "--site", "site")
    assert checked.returncode == 0, checked.stdout[-2000:] + checked.stderr[-2000:]
    assert re.search(r"^verify: 2 page\(s\), 1 real-source, .* 0 problem\(s\)", checked.stdout, re.M), checked.stdout
    assert re.search(
        r"^site: \d+ HTML file\(s\) of site/, 2 engine block\(s\), .*; 0 problem\(s\)", checked.stdout, re.M
    )
