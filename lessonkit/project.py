"""The project: where things are, the pinned tree, and block resolution shared by
build, verify and the cross-link pages (one code path for all of them)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

from lessonkit.attachments import Registered
from lessonkit.attachments import for_project as attachments_for_project
from lessonkit.config import environment
from lessonkit.config import site as siteconfig
from lessonkit.config.site import SiteConfig
from lessonkit.errors import LessonError, Problem
from lessonkit.kinds import Registry, Resolved, for_project
from lessonkit.pipeline.blocks import Block, ParsedPage
from lessonkit.pipeline.parse import parse_page
from lessonkit.run import runner as execute
from lessonkit.source.pin import Pin, PinnedTree, load_pin
from lessonkit.source.providers import provide
from lessonkit.source.resolve import Tree
from lessonkit.util.store import Store

_PARSED: dict[tuple, tuple[tuple, ParsedPage]] = {}  # Project.parse: (place, text, kinds, badges) -> page
_PARSED_LIMIT = 2048  # pages; emptied when full


@dataclass
class Project:
    root: Path
    cache: Path = None  # type: ignore[assignment]
    _resolved: dict = field(default_factory=dict, repr=False)  # block content -> Resolved
    # a tree already provided and checked for this pin (repin --apply); otherwise the providers run
    provided: PinnedTree | None = None
    # what kinds that name a script derive from it, once per project object (kinds._recorded)
    _scripts_named: dict = field(default_factory=dict, repr=False)  # a reference's text -> checked rel
    _script_jobs: dict = field(default_factory=dict, repr=False)  # rel -> its Job

    def __post_init__(self):
        self.root = self.root.resolve()
        if self.cache is None:
            self.cache = environment.cache_dir(self.root)  # LESSONKIT_CACHE, checked

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

    @cached_property
    def kinds(self) -> Registry:
        """The block kinds this project's pages may use (built-ins plus ``sourcemap/kinds.toml``)."""
        return for_project(self.root)

    @cached_property
    def attachments(self) -> Registered:
        """The generated pages this project adds to the engine's (``sourcemap/attachments.toml``),
        checked; the engine's own are :data:`lessonkit.site.attachments.ENGINE`."""
        return attachments_for_project(self.root)

    # -- the pinned tree (provided and checked once per project object)
    @cached_property
    def pin(self) -> Pin:
        return load_pin(self.sourcemap)

    @cached_property
    def site(self) -> SiteConfig:
        """What the project says about itself (``sourcemap/site.toml``, ``templates/``)."""
        return replace(siteconfig.load(self.root, self.pin.repo), check_output=self.template_html)

    def template_html(self, text: str, name: str, source: str) -> list[Problem]:
        """The active content a page's prose may not hold (:func:`parse_page`'s ``active``: raw HTML
        that runs, embeds or restyles, URLs that run code) in ``text``, what the project's template
        ``name`` rendered from ``source``: each at the template's line that reads as the rendered
        line, else named by its line of the rendered output. (The engine's classes are no problem
        here: a series' template may frame a figure its attachment draws as the engine does.)"""
        found = parse_page(text, f"templates/{name}", kinds=self.kinds, badges=self.badges).active
        rendered, lines = text.split("\n"), source.split("\n")
        out = []
        for p in found:
            shown = rendered[p.line - 1] if p.line is not None and 0 < p.line <= len(rendered) else None
            if shown is not None and shown in lines:
                out.append(replace(p, line=lines.index(shown) + 1))
            else:
                out.append(replace(p, line=None, message=f"line {p.line} of what it renders: {p.message}"))
        return out

    @cached_property
    def tree(self) -> PinnedTree:
        given = self.provided
        if given is not None and (given.pin.commit, given.pin.manifest) == (self.pin.commit, self.pin.manifest):
            return given
        return provide(self.pin, self.cache)

    @cached_property
    def pinned(self) -> Tree:
        return Tree(
            self.tree.root,
            "pinned",
            allowed=set(self.pin.manifest),
            label=f"the pinned {self.site.name} {self.pin.version} tree",
            symbols=self.store("symbols"),
        )

    @cached_property
    def repo(self) -> Tree:
        folders = self.site.teaching or self.site.code  # never "any file of the repository"
        return Tree(
            self.root,
            "repo",
            prefixes=tuple(f"{d}/" for d in folders),
            label="this repository",
            symbols=self.store("symbols"),
        )

    @cached_property
    def scripts(self) -> Tree:
        return Tree(
            self.root,
            "repo",
            prefixes=("experiments/",),
            label="this repository's experiments",
            symbols=self.store("symbols"),
        )

    @cached_property
    def runner(self) -> execute.Runner:
        extra = tuple(self.root / d for d in self.site.teaching)
        return execute.Runner(
            self.tree.root,
            self.pin.version,
            self.pin.manifest_digest,
            self.experiments,
            self.cache,
            extra_paths=extra,
            env_prefix=self.site.env_prefix,
            box_pinned=self.site.box_pinned,
            tools=self.site.tools,
            import_path=self.site.import_path,
            **execute.pin_args(self.pin, self.root),
        )

    def store(self, kind: str) -> Store:
        """This project's content-keyed cache of one kind (``<cache>/<kind>``; see lessonkit.util.store)."""
        return Store(self.cache, kind)

    # -- pages
    def read_page(self, path: Path) -> str:
        """A lesson page's text; encoding mistakes are author errors."""
        rel = self.rel(path)
        data = path.read_bytes()
        if data.startswith(b"\xef\xbb\xbf"):
            raise LessonError(
                "file starts with a UTF-8 byte-order mark", path=rel, line=1, hint="save it as UTF-8 without BOM"
            )
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise LessonError(
                f"file is not valid UTF-8 (byte 0x{data[exc.start]:02x})", path=rel, line=line, hint="save it as UTF-8"
            ) from None
        if "\r" in text:
            line = text[: text.index("\r")].count("\n") + 1
            raise LessonError(
                "file has CR (Windows) line endings", path=rel, line=line, hint="save it with LF line endings"
            )
        return text

    @cached_property
    def badges(self) -> tuple[str, ...]:
        """The badges of the engine's blocks, as this series words them (raw HTML may not show them)."""
        labels = self.site.labels
        return tuple(labels[k] for k in ("real-source", "teaching-simplification", "experiment", "snapshot"))

    def parse(self, path: Path, text: str | None = None, offset: int = 0, html_checks: bool = True) -> ParsedPage:
        """The page's blocks and inline references (:func:`parse_page`), parsed once per process for
        the same text, place, kinds and badges (a serve rebuild parses only the pages that changed).
        ``html_checks=False``: without the raw-HTML check (:func:`lessonkit.pipeline.activehtml.active_html`),
        for the noxfile's prefill alone, which runs before the HTML parser is installed."""
        text = self.read_page(path) if text is None else text
        rel, kinds = self.rel(path), tuple(self.kinds.values())
        key = (rel, text, offset, tuple(map(id, kinds)), self.badges, html_checks)
        hit = _PARSED.get(key)
        if hit is None:
            if len(_PARSED) >= _PARSED_LIMIT:
                _PARSED.clear()
            # the kinds are kept with the entry, so that their ids in the key stay theirs
            hit = _PARSED[key] = (
                kinds,
                parse_page(text, rel, offset, kinds=self.kinds, badges=self.badges, html_checks=html_checks),
            )
        page = hit[1]
        return replace(  # its own lists: a caller that changes them changes no other caller's page
            page,
            items=list(page.items),
            inline=list(page.inline),
            problems_inline=list(page.problems_inline),
            ids=list(page.ids),
            engine_html=list(page.engine_html),
        )

    # -- resolution: the one code path
    def resolve(self, block: Block) -> Resolved:
        """Resolve one block; a block with the same content and place resolves once per project
        (the build resolves every block for the site map, then again while rendering its page)."""
        key = (
            block.path,
            block.line,
            block.kind,
            tuple((k, f.value, f.line) for k, f in block.fields.items()),
            block.body,
            block.body_line,
            block.session,  # a session block runs the blocks before it too
            block.session_index,
        )
        hit = self._resolved.get(key)
        if hit is not None:
            return replace(hit, block=block)
        self._resolved[key] = r = self._resolve(block)
        return r

    def _resolve(self, block: Block) -> Resolved:
        spec = self.kinds.of(block)
        return replace(spec.resolve(self, block), kind=spec)

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
