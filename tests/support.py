"""Shared test support: the real project, throwaway projects that reuse its pinned tree,
and session fixtures (re-exported by conftest.py). Import helpers from here, not from
conftest, which is a different module under each test folder."""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from lessonkit.checks import verify
from lessonkit.project import Project

ROOT = Path(__file__).resolve().parents[1]
COMMIT = "f53a21734fdfae636f448744d9097d8d35a643a0"

SITE_CONFIG = """\
site_name: t
docs_dir: docs
site_dir: site
theme:
  name: material
  language: zh
  font: false
hooks:
  - {hooks}
plugins: []
markdown_extensions:
  - lessonkit.pipeline.markdown
  - lessonkit.pipeline.mathml
  - admonition
  - attr_list
  - md_in_html
  - tables
  - pymdownx.highlight:
      anchor_linenums: true
  - pymdownx.superfences
"""


@pytest.fixture(scope="session")
def real_project() -> Project:
    project = Project(ROOT)
    _ = project.tree  # provide once for the whole session
    return project


@pytest.fixture(scope="session")
def pinned_root(real_project) -> Path:
    return real_project.tree.root


class TmpSite:
    """A small project in a temporary folder, with the real pin and hooks."""

    def __init__(self, root: Path, pinned_root: Path):
        self.root = root
        self.pinned_root = pinned_root
        (root / "sourcemap").mkdir(parents=True)
        for name in ("pin.toml", "manifest.sha256", "site.toml"):
            shutil.copy(ROOT / "sourcemap" / name, root / "sourcemap" / name)
        # The series' glossary and walkthrough are no pages of a throwaway site: its [search] and
        # [pages] tables go (a test that wants them writes its own).
        toml = root / "sourcemap" / "site.toml"
        toml.write_text(
            re.sub(r"(?ms)^\[(?:search|pages)\]\n.*?(?=^\[|\Z)", "", toml.read_text(encoding="utf-8")),
            encoding="utf-8",
        )
        (root / "experiments").mkdir()
        for helper in sorted((ROOT / "experiments").glob("_*.py")):  # _provenance, _record
            shutil.copy(helper, root / "experiments" / helper.name)
        (root / "docs").mkdir()
        (root / "docs" / "index.md").write_text("# 首页\n", encoding="utf-8")
        (root / "mkdocs.yml").write_text(SITE_CONFIG.format(hooks=ROOT / "hooks" / "lessonkit_hooks.py"))
        self.cache = root / ".cache"
        self.env = {
            **os.environ,
            "AUTOGRAD_SOURCE": str(pinned_root),
            "LESSONKIT_CACHE": str(self.cache),
            "NO_MKDOCS_2_WARNING": "1",
        }

    def page(self, name: str, text: str) -> Path:
        p = self.root / "docs" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text), encoding="utf-8")
        return p

    def script(self, name: str, text: str) -> Path:
        p = self.root / "experiments" / name
        p.write_text(textwrap.dedent(text), encoding="utf-8")
        return p

    def project(self) -> Project:
        return Project(self.root, cache=self.cache)

    def problems(self, pages=None) -> list[str]:
        """In-process verify (without the excerpt map): one string per problem."""
        old = os.environ.get("AUTOGRAD_SOURCE")
        os.environ["AUTOGRAD_SOURCE"] = str(self.pinned_root)
        try:
            report = verify.check(self.project(), pages)
        finally:
            if old is None:
                os.environ.pop("AUTOGRAD_SOURCE")
            else:
                os.environ["AUTOGRAD_SOURCE"] = old
        return [str(p) for p in report.problems]

    def run(self, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, *args],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def verify(self, *args: str) -> subprocess.CompletedProcess:
        return self.run("-m", "lessonkit", "verify", "--no-map", *args)

    def build(self, *args: str) -> subprocess.CompletedProcess:
        return self.run("-m", "mkdocs", "build", "--strict", *args)


# What a build of any throwaway site over the real pin puts in its cache whatever its pages are:
# the source browser's highlighted files and pages of the pinned tree, their links, the symbol
# tables, the templates, and the cache's seal key that signs them. Keyed by content and sealed,
# so a build that finds them does what it would have done without them.
WARM_KINDS = ("highlight", "links", "pages", "symbols", "templates", "seal")


@pytest.fixture(scope="session")
def warm_seed(tmp_path_factory, pinned_root) -> Path:
    """A build cache of the WARM_KINDS, made once per session by building one throwaway site."""
    seed = TmpSite(tmp_path_factory.mktemp("warm-seed") / "proj", pinned_root)
    seed.page("a.md", "# A\n\n" + block("real-source", "File: autograd/core.py", "Symbol: backward_pass"))
    r = seed.build()
    assert r.returncode == 0, r.stderr[-3000:]
    return seed.cache


@pytest.fixture
def site(request, tmp_path, pinned_root) -> TmpSite:
    """A throwaway site over the real pin, with an empty cache; in a module or test marked
    ``warm_cache`` (whose subject is not the cache), its cache starts from :func:`warm_seed`."""
    s = TmpSite(tmp_path / "proj", pinned_root)
    if request.node.get_closest_marker("warm_cache"):
        seed = request.getfixturevalue("warm_seed")
        for kind in WARM_KINDS:
            if (seed / kind).is_dir():
                shutil.copytree(seed / kind, s.cache / kind)
    return s


def block(kind: str, *header: str, body: str | None = None) -> str:
    text = "```" + kind + "\n" + "\n".join(header) + "\n"
    if body is not None:
        text += "\n" + textwrap.dedent(body).strip("\n") + "\n"
    return text + "```\n"


def build_real_site(out: Path, **env_overrides: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "SOURCE_DATE_EPOCH": "1764460800", **env_overrides}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> Path:
    """The real site, built once per test session with the README's strict build."""
    out = tmp_path_factory.mktemp("site") / "site"
    r = build_real_site(out)
    assert r.returncode == 0, r.stderr[-3000:]
    (out.parent / "build.log").write_text(r.stderr, encoding="utf-8")  # beside the site, not in it
    return out


# Browser fixtures, shared by every browser test module through conftest.py (one Playwright
# instance per session: two sync_playwright loops at once fail).
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
BROWSER_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]


@pytest.fixture(scope="session")
def server(built_site):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(built_site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail("Chromium is required in CI: apt-get install chromium chromium-driver fonts-noto-cjk")
        pytest.skip("Chromium not found: install it with `apt-get install chromium chromium-driver fonts-noto-cjk`")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        yield b
        b.close()
