"""The project: where things are, the pinned tree, and block resolution shared by
build, verify and the cross-link pages (one code path for all of them)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

from . import config, execute
from .errors import LessonError, Problem
from .parse import Block, ParsedPage, check_rel_path, parse_page
from .pin import Pin, PinnedTree, load_pin, provide
from .resolve import Excerpt, Tree, based_on, check_commit, check_lines, excerpt_of

REPO_PREFIXES = ("mini-autograd/",)  # teaching-simplification File: may point here


@dataclass(frozen=True)
class Resolved:
    """What a block shows once resolved."""

    block: Block
    excerpt: Excerpt | None = None  # real source, repo excerpt, or the experiment's shown code
    based_on: Excerpt | None = None
    job: execute.Job | None = None


@dataclass
class Project:
    root: Path
    cache: Path = None  # type: ignore[assignment]
    _resolved: dict = field(default_factory=dict, repr=False)  # block content -> Resolved

    def __post_init__(self):
        self.root = self.root.resolve()
        if self.cache is None:
            self.cache = config.cache_dir(self.root)  # LESSONKIT_CACHE, checked

    # -- locations
    @property
    def docs(self) -> Path:
        return self.root / "docs"

    @property
    def experiments(self) -> Path:
        return self.root / "experiments"

    @property
    def sourcemap(self) -> Path:
        return self.root / "sourcemap"

    def rel(self, path: Path | str) -> str:
        p = Path(path).resolve()
        try:
            return p.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    # -- the pinned tree (provided and checked once per project object)
    @cached_property
    def pin(self) -> Pin:
        return load_pin(self.sourcemap)

    @cached_property
    def tree(self) -> PinnedTree:
        return provide(self.pin, self.cache)

    @cached_property
    def pinned(self) -> Tree:
        return Tree(self.tree.root, "pinned", allowed=set(self.pin.manifest),
                    label=f"the pinned autograd {self.pin.version} tree")

    @cached_property
    def repo(self) -> Tree:
        return Tree(self.root, "repo", prefixes=REPO_PREFIXES, label="this repository")

    @cached_property
    def scripts(self) -> Tree:
        return Tree(self.root, "repo", prefixes=("experiments/",), label="this repository's experiments")

    @cached_property
    def runner(self) -> execute.Runner:
        return execute.Runner(self.tree.root, self.pin.version, self.pin.manifest_digest,
                              self.experiments, self.cache, extra_paths=(self.root / "mini-autograd",))

    # -- pages
    def read_page(self, path: Path) -> str:
        """A lesson page's text; encoding mistakes are author errors."""
        rel = self.rel(path)
        data = path.read_bytes()
        if data.startswith(b"\xef\xbb\xbf"):
            raise LessonError("file starts with a UTF-8 byte-order mark", path=rel, line=1,
                              hint="save it as UTF-8 without BOM")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise LessonError(f"file is not valid UTF-8 (byte 0x{data[exc.start]:02x})", path=rel, line=line,
                              hint="save it as UTF-8") from None
        if "\r" in text:
            line = text[: text.index("\r")].count("\n") + 1
            raise LessonError("file has CR (Windows) line endings", path=rel, line=line,
                              hint="save it with LF line endings")
        return text

    def parse(self, path: Path, text: str | None = None, offset: int = 0) -> ParsedPage:
        text = self.read_page(path) if text is None else text
        return parse_page(text, self.rel(path), offset)

    # -- resolution: the one code path
    def resolve(self, block: Block) -> Resolved:
        """Resolve one block; a block with the same content and place resolves once per project
        (the build resolves every block for the site map, then again while rendering its page)."""
        key = (block.path, block.line, block.kind, tuple((k, f.value, f.line) for k, f in block.fields.items()),
               block.body, block.body_line)
        hit = self._resolved.get(key)
        if hit is not None:
            return replace(hit, block=block)
        self._resolved[key] = r = self._resolve(block)
        return r

    def _resolve(self, block: Block) -> Resolved:
        if block.kind == "real-source":
            check_commit(block, self.pin.commit)
            ex = excerpt_of(self.pinned, block)
            check_lines(block, ex)
            return Resolved(block, ex)
        if block.kind == "teaching-simplification":
            ex = excerpt_of(self.repo, block) if block.get("File") else None
            base = based_on(self.pinned, block) if block.get("Based-on") else None
            return Resolved(block, ex, base)
        return self._resolve_experiment(block)

    def _resolve_experiment(self, block: Block) -> Resolved:
        timeout = int(block.get("Timeout") or execute.DEFAULT_TIMEOUT)
        if block.get("File"):
            try:
                rel = check_rel_path(block.get("File"))
            except LessonError as exc:
                raise exc.at(block.path, block.line_of("File"))
            if not rel.endswith(".py"):
                raise LessonError(f"`{rel}` is not a Python script", path=block.path, line=block.line_of("File"),
                                  hint="experiments are experiments/*.py files")
            ex = excerpt_of(self.scripts, block)
            source = self.scripts.file(rel).data
            job = execute.Job(Path(rel).name, source, timeout, rel)
        else:
            ex = None
            source = ("\n".join(block.body) + "\n").encode()
            name = f"{Path(block.path).stem.replace('-', '_')}_L{block.line}.py"
            job = execute.Job(name, source, timeout, f"{block.path}:{block.line}")
        return Resolved(block, ex, None, job)

    def resolve_page(self, page: ParsedPage) -> tuple[list[Resolved], list[Problem]]:
        out, problems = [], list(page.problems)
        for block in page.blocks:
            try:
                out.append(self.resolve(block))
            except LessonError as exc:
                problems += exc.at(block.path, block.line).problems
        problems.sort(key=lambda p: p.line or 0)
        return out, problems

    def pages(self) -> list[Path]:
        return sorted(p for p in self.docs.rglob("*.md") if p.is_file())
