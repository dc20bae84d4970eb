"""A tiny pinned package for the engine layer: three small modules of a made-up ``tiny`` 0.1.0,
packed here as a release archive (an sdist ``.tar.gz``, byte-reproducible) with its sha256 and
the manifest of its files, and a throwaway project pinned to it.

The project's pin names the archive through ``LESSONKIT_SDIST``, as an author offline does: the
engine checks the archive's sha256, extracts it safely into the project's cache and checks every
file against the manifest, exactly as it does for the real series' autograd sdist. Nothing here
imports the package (or autograd, or NumPy): the engine reads its source as text.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import tarfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

NAME, VERSION = "tiny", "0.1.0"
ROOT_DIR = f"{NAME}-{VERSION}"
FILENAME = f"{ROOT_DIR}.tar.gz"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
REPO = "https://github.com/example/tiny"

# The package's files. Line numbers matter: the engine tests assert exact ranges in them.
FILES: dict[str, str] = {
    "tiny/__init__.py": '''\
        """A tiny reverse-mode package for the engine's tests."""

        from tiny.core import Node, backward
        from tiny.ops import add, mul

        __all__ = ["Node", "backward", "add", "mul"]
        ''',
    "tiny/core.py": '''\
        """Nodes of a computation and the backward pass."""

        REGISTRY = {}


        class Node:
            """One value and the nodes it came from."""

            def __init__(self, value, parents=()):
                self.value = value
                self.parents = parents
                self.grad = 0.0

            def __repr__(self):
                return f"Node({self.value})"


        def backward(out):
            """Accumulate gradients from ``out`` back to the leaves."""
            out.grad = 1.0
            stack = [out]
            while stack:
                node = stack.pop()
                for parent, local in node.parents:
                    parent.grad += local * node.grad
                    stack.append(parent)
            return out
        ''',
    "tiny/ops.py": '''\
        """Two primitives, registered by name."""

        from tiny.core import REGISTRY, Node


        def register(name):
            def wrap(fun):
                REGISTRY[name] = fun
                return fun

            return wrap


        @register("add")
        def add(a, b):
            return Node(a.value + b.value, ((a, 1.0), (b, 1.0)))


        @register("mul")
        def mul(a, b):
            return Node(a.value * b.value, ((a, b.value), (b, a.value)))
        ''',
    # indented with tabs (and one tab inside a line), as some projects write Python
    "tiny/helpers_tabbed.py": '''\
        """A helper indented with tabs."""


        def scale(xs, k):
        \tout = []
        \tfor x in xs:
        \t\tout.append(x * k)\t# a tab before the comment
        \treturn out
        ''',
}
SOURCES = {rel: textwrap.dedent(text) for rel, text in FILES.items()}
PKG_INFO = f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n"


def pack(out_dir: Path) -> tuple[Path, str]:
    """Write the sdist into ``out_dir``; return (its path, its sha256). The same bytes every time."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        members = {**SOURCES, "PKG-INFO": PKG_INFO}
        for rel in sorted(members):
            data = members[rel].encode("utf-8")
            info = tarfile.TarInfo(f"{ROOT_DIR}/{rel}")
            info.size, info.mtime, info.mode = len(data), 1764460800, 0o644
            tar.addfile(info, io.BytesIO(data))
    archive = out_dir / FILENAME
    archive.write_bytes(gzip.compress(buf.getvalue(), mtime=0))
    return archive, hashlib.sha256(archive.read_bytes()).hexdigest()


def manifest() -> str:
    """The manifest.sha256 of the tree (PKG-INFO, which only the sdist adds, is not part of it)."""
    return "".join(f"{hashlib.sha256(SOURCES[rel].encode()).hexdigest()}  {rel}\n" for rel in sorted(SOURCES))


def pin_toml(sha256: str) -> str:
    return (
        f'[upstream]\nrepo = "{REPO}"\ncommit = "{COMMIT}"\nversion = "{VERSION}"\n\n'
        f'[sdist]\nfilename = "{FILENAME}"\nsha256 = "{sha256}"\nrequirement = "{NAME}=={VERSION}"\n'
        f'root = "{ROOT_DIR}"\n'
    )


def line_of(rel: str, text: str) -> int:
    """The 1-based line of the first line of ``rel`` that starts with ``text`` (after indentation)."""
    for n, line in enumerate(SOURCES[rel].splitlines(), 1):
        if line.strip().startswith(text):
            return n
    raise AssertionError(f"{text!r} not in {rel}")


@dataclass
class TinyProject:
    """A throwaway series pinned to the tiny sdist: ``sourcemap/`` (pin, manifest), ``docs/``,
    ``experiments/``, and a cache of its own. ``env`` is what the engine must see (the archive)."""

    root: Path
    archive: Path
    sha256: str

    def __post_init__(self) -> None:
        (self.root / "sourcemap").mkdir(parents=True)
        (self.root / "docs").mkdir()
        (self.root / "experiments").mkdir()
        (self.root / "sourcemap" / "pin.toml").write_text(pin_toml(self.sha256), encoding="utf-8")
        (self.root / "sourcemap" / "manifest.sha256").write_text(manifest(), encoding="utf-8")
        (self.root / "docs" / "index.md").write_text("# Home\n", encoding="utf-8")
        self.cache = self.root.parent / f"{self.root.name}-cache"  # outside the project, as the engine wants
        self.env = {"LESSONKIT_SDIST": str(self.archive), "LESSONKIT_CACHE": str(self.cache)}

    def page(self, name: str, text: str) -> Path:
        p = self.root / "docs" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text), encoding="utf-8")
        return p

    def write(self, rel: str, text: str) -> Path:
        p = self.root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text), encoding="utf-8")
        return p

    def project(self):
        from lessonkit.project import Project

        return Project(self.root, cache=self.cache)

    def apply_env(self, monkeypatch) -> None:
        """Point the engine, in this process, at the archive and the cache (undone after the test);
        no checkout of the real pin is visible."""
        for name in ("LESSONKIT_SOURCE", "AUTOGRAD_SOURCE", "LESSONKIT_GIT_REMOTE"):
            monkeypatch.delenv(name, raising=False)
        for name, value in self.env.items():
            monkeypatch.setenv(name, value)


def subprocess_env(tiny: TinyProject) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LESSONKIT_SOURCE", "AUTOGRAD_SOURCE")}
    return {**env, **tiny.env, "NO_MKDOCS_2_WARNING": "1"}
