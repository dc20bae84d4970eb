"""Python-Markdown extension: annotation blocks become verified, rendered excerpts.

Usable by any Python-Markdown based generator::

    markdown.Markdown(
        extensions=["lessonkit.pipeline.markdown"],
        extension_configs={"lessonkit.pipeline.markdown": {"root": "."}},
    )

The blocks are found by a preprocessor, where the raw lines are still visible, so
every problem carries its ``path:line``. The page path and the line offset come from
the page's :class:`PageContext`, which the ``context`` option (a callable) gives: a site
build passes ``lambda: build.current`` (:mod:`lessonkit.integrations.mkdocs.hooks`), ``python -m lessonkit
render`` the page it renders; without one, errors say ``<markdown>``. Problems go to
``context.problems`` when a sink is given (the block is replaced by an error box) and are
raised as one :class:`LessonError` otherwise, never swallowed. The extension keeps no
process-wide state: without a project in the context, each instance provides its ``root``'s
project once, for every page it converts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from markdown import Extension, Markdown
from markdown.preprocessors import Preprocessor
from markdown.util import HTML_PLACEHOLDER
from pymdownx.highlight import Highlight

from lessonkit.config.labels import PROVIDERS, provider_text  # noqa: F401 (where the pinned tree came from, in labels)
from lessonkit.errors import LessonError, Problem, fold_repeats
from lessonkit.pipeline.blocks import Block, BrokenBlock
from lessonkit.pipeline.fences import QUOTE, blank_line
from lessonkit.pipeline.parse import parse_page
from lessonkit.pipeline.render import Deferred, NoLinks, Renderer, anchors, duplicate_ids, page_ids
from lessonkit.project import Project, Resolved
from lessonkit.run import runner as execute
from lessonkit.util.store import Store

PRIORITY = 28  # after normalize_whitespace (30), before the fence preprocessors (25)


@dataclass
class PageContext:
    path: str = "<markdown>"
    line_offset: int = 0
    problems: list[Problem] | None = None
    links: object = field(default_factory=NoLinks)
    root: str | None = None  # project root; overrides the extension's `root` option
    source: str = ""  # the page's raw text, to locate problems found after preprocessing
    deferred: Deferred | None = None  # when set, highlighted code waits for Deferred.fill
    project: Project | None = None  # the build's project; overrides `root`
    anchors: list[str] | None = None  # the build's ids of the page's resolved blocks (verify.Report.anchors)
    recalls: dict = field(default_factory=dict)  # ordinal -> the full showing a `Recall` block links to
    skip: bool = False  # a page the extension leaves as it is (a guest site's page without a block)

    def locate(self, needle: str) -> int | None:
        idx = self.source.find(needle) if needle and self.source else -1
        return self.source.count("\n", 0, idx) + 1 if idx >= 0 else None


def page_context(md: Markdown) -> PageContext | None:
    """The context of the page ``md`` is converting (the extension's ``context`` option), if any."""
    provider = getattr(md, "lessonkit_context", None)
    return provider() if provider is not None else None


def provenance(project: Project, provider: str | None = None) -> str:
    """The provenance line of an experiment's output: tool versions, the pinned version and commit,
    and where the pinned tree came from (``provider``: the build's own, unless given)."""
    tools = " · ".join(f"{label} {version}" for label, version in execute.versions(project.site.tools).items())
    labels = project.site.labels
    return f"{tools} · {project.site.name} {project.pin.version}" + labels.fill(
        "provenance",
        commit=project.pin.short,
        source=labels["source"],
        provider=provider_text(project.tree.provider if provider is None else provider, labels),
    )


HIGHLIGHT = {
    "linenums": True,
    "anchor_linenums": True,
    "line_anchors": "__codelineno",
    "linenums_style": "table",
    "pygments_lang_class": True,
}


@lru_cache(maxsize=1)
def tools() -> str:
    """Versions and options that highlighted HTML depends on (part of every cache key for it)."""
    from importlib.metadata import version

    return repr((version("pygments"), version("pymdown-extensions"), sorted(HIGHLIGHT.items())))


def make_renderer(md: Markdown, project: Project, links, deferred: Deferred | None = None) -> Renderer:
    hl = Highlight(md, **HIGHLIGHT)
    return Renderer(
        project.pin,
        hl.highlight,
        links,
        provenance(project),
        project.site.label,
        labels=project.site.labels,
        store=Store(project.cache, "render"),
        tools=tools(),
        deferred=deferred,
        project=project,
    )


def render_page(md: Markdown, project: Project, text: str, ctx: PageContext) -> tuple[str, list[Problem]]:
    """Replace every annotation block of ``text``; return the new text and the problems."""
    page = parse_page(text, ctx.path, ctx.line_offset, kinds=project.kinds)
    if not page.items and not page.inline and not page.problems_inline and not page.ids:
        return text, []
    lines = text.split("\n")
    renderer = make_renderer(md, project, ctx.links, ctx.deferred)
    renderer.page, renderer.recalls = ctx.path, ctx.recalls
    problems: list[Problem] = list(page.problems_inline)
    resolved: dict[int, Resolved] = {}
    failed: dict[int, LessonError] = {}  # the box on the page says what the log says
    for item in page.items:
        if isinstance(item, Block):
            try:
                resolved[id(item)] = project.resolve(item)
            except LessonError as exc:
                failed[id(item)] = err = exc.at(item.path, item.line)
                problems += err.problems
    given = ctx.anchors if ctx.anchors is not None and len(ctx.anchors) == len(resolved) else None
    ids = dict(zip(resolved, given if given is not None else anchors(list(resolved.values())), strict=True))
    # inline references after the blocks are resolved: a `line` reference links to an excerpt on the page
    page_links = PageLinks(
        ctx.links,
        [(ids[k], r.excerpt) for k, r in resolved.items() if r.excerpt is not None and r.spec.citation == "source"],
        page.inline,
    )
    _render_inline(md, project, page, lines, renderer, page_links, problems)
    generated = page_ids(
        list(resolved.values()),
        [ids[k] for k in resolved],
        sum(i.ref.kind == "line" for i in page.inline),
        project.site.is_lesson(ctx.path),
    )
    # the ids in the page file, as verify reads it (not those of what the build appends, such as the
    # lesson's list of cited source)
    raw = ctx.source.split("\n") if ctx.source else None
    written = [(ident, n) for ident, n in page.ids if raw is None or (n <= len(raw) and ident in raw[n - 1])]
    problems += duplicate_ids(ctx.path, written, generated)
    jobs = [r.job for r in resolved.values() if r.job]
    results = project.runner.run_all(jobs) if jobs else {}
    for item in reversed(page.items):
        if isinstance(item, BrokenBlock):
            problems = item.error.problems + problems
            html = renderer.error(item.error)
        elif id(item) in failed:
            html = renderer.error(failed[id(item)])
        else:
            r, anchor = resolved[id(item)], ids[id(item)]
            html = _render_one(renderer, project, r, anchor, results, problems)
        placeholder = md.htmlStash.store(html)
        lines[item.start : item.end + 1] = alone(lines, item, placeholder)
    problems.sort(key=lambda p: p.line or 0)
    return "\n".join(lines), fold_repeats(problems)  # a failed run cited three times is one line


def alone(lines: list[str], item, placeholder: str) -> list[str]:
    """The lines that replace a block: its placeholder alone in a paragraph, so that the stash puts
    the HTML in place of the paragraph, in the block's container. An empty line before it (inside a
    blockquote, the quote's `>`) and a blank line after it, unless the page has one there already:
    two would end a footnote's or a definition's indented content."""

    def empty(k: int) -> bool:
        return not (0 <= k < len(lines)) or not QUOTE.sub("", lines[k], count=1).strip()

    before = [] if empty(item.start - 1) else [blank_line(item.indent)]
    after = [] if empty(item.end + 1) else [""]
    return before + [item.indent + placeholder] + after


def _render_inline(md: Markdown, project: Project, page, lines: list[str], renderer, links, problems) -> None:
    """Replace every inline reference (``[[name: argument]]``) with its kind's HTML, in place."""
    for item in reversed(page.inline):  # right to left: earlier columns stay valid
        ref = item.ref
        kind = project.kinds.inline[ref.kind]
        try:
            errors = kind.validate(ref)
            if errors:
                raise LessonError.collect(errors)
            html = kind.render(project, ref, links)
        except LessonError as exc:
            err = exc.at(ref.path, ref.line)
            problems += err.problems
            html = renderer.inline_error(err)
        line = lines[item.index]
        lines[item.index] = line[: item.col] + md.htmlStash.store(html) + line[item.end_col :]


def _render_one(renderer, project, r: Resolved, anchor, results, problems) -> str:
    result = None
    if r.job is not None:  # a block that runs: it shows only a passing run's output
        result = results.get(project.runner.key(r.job))
        if result is None or not result.ok:
            err = execute.failure(result, r.job, r.job.timeout).at(r.block.path, r.block.line)
            problems += err.problems
            return renderer.error(err, anchor)
    try:
        return renderer.block(r, anchor, result)
    except LessonError as exc:  # a kind that checks the run (snapshot, figure): its box says what the log says
        err = exc.at(r.block.path, r.block.line)
        problems += err.problems
        return renderer.error(err, anchor)


class PageLinks:
    """The site's links plus what one page knows: its excerpts (``(anchor, Excerpt)``) and the ids
    of its inline ``line`` references (``ref-1``, ``ref-2``… in page order, as the source browser's
    backlinks name them)."""

    def __init__(self, links, excerpts, inline):
        self.links, self.excerpts = links, excerpts
        self.ids = {id(item.ref): f"ref-{n}" for n, item in enumerate((i for i in inline if i.ref.kind == "line"), 1)}

    def __getattr__(self, name):
        return getattr(self.links, name)

    def excerpt_line(self, file: str, start: int, end: int) -> str | None:
        """``#<block>-L<start>``: the first excerpt on the page (of ``file``) that shows these lines."""
        for anchor, ex in self.excerpts:
            if ex.origin == "pinned" and ex.file == file and ex.shows(start, end):
                return f"#{anchor}-L{start}"
        return None

    def inline_id(self, ref) -> str | None:
        return self.ids.get(id(ref))


def with_tabs(lines: list[str], ctx: PageContext, tab_length: int, project: Project) -> list[str]:
    """``lines`` with the tabs of the page file put back inside annotation blocks. Markdown expands
    every tab before any preprocessor runs, so the build would take a block with a tab that verify,
    which reads the file, refuses; with the page's own lines the two see the same block."""
    raw = ctx.source.split("\n")
    page = parse_page("\n".join(lines), ctx.path, ctx.line_offset, kinds=project.kinds)
    out = list(lines)
    for item in page.items:
        for k in range(item.start, item.end + 1):
            n = ctx.line_offset + k
            if n < len(raw) and "\t" in raw[n] and raw[n].expandtabs(tab_length) == lines[k]:
                out[k] = raw[n]
    return out


# pymdownx.superfences with ``preserve_tabs`` takes every fence out of the text before whitespace is
# normalized (its "fenced_raw_block", priority 31.05), so that a block at PRIORITY would see only its
# placeholder. Then the blocks are rendered just before that (EARLY), and their placeholders are
# written with SOH/EOT, which normalization keeps and pymdownx._bypassnorm turns into STX/ETX.
RAW_FENCES = "fenced_raw_block"
EARLY = 31.07
SOH, EOT = "\u0001", "\u0004"


class _Pre(Preprocessor):
    def __init__(self, md: Markdown, root: str, early: bool = False):
        super().__init__(md)
        self.root = root
        self.early = early  # registered at EARLY: runs only where superfences keeps raw fences
        self.projects: dict[Path, Project] = {}  # by root, when the context gives none

    def project(self, root: str) -> Project:
        key = Path(root).resolve()
        if key not in self.projects:
            self.projects[key] = Project(key)
        return self.projects[key]

    def run(self, lines: list[str]) -> list[str]:
        ctx = page_context(self.md) or PageContext()
        if ctx.skip or self.early != (RAW_FENCES in self.md.preprocessors):
            return lines
        text = "\n".join(lines)
        if not any(mark in text for mark in ("```", "~~~", "[[", "id=")) and not ("{" in text and "#" in text):
            return lines  # no block, no reference, no id the author gave
        project = ctx.project or self.project(ctx.root or self.root)
        if "\t" in ctx.source:
            lines = with_tabs(lines, ctx, self.md.tab_length, project)
            text = "\n".join(lines)
        stashed = self.md.htmlStash.html_counter
        out, problems = render_page(self.md, project, text, ctx)
        if self.early:
            for n in range(stashed, self.md.htmlStash.html_counter):
                out = out.replace(HTML_PLACEHOLDER % n, SOH + HTML_PLACEHOLDER[1:-1] % n + EOT)
        if problems:
            if ctx.problems is None:
                raise LessonError.collect(problems)
            ctx.problems.extend(problems)
        return out.split("\n")


# A block or inline reference rendered ahead of time, in another process (the Zensical emitter,
# :mod:`lessonkit.integrations.zensical.emit`), stands in the page as one marker word: the build's
# random nonce and the fragment's number. The ``fragments`` option names the JSON file that maps
# each marker to its HTML.
FRAGMENT = re.compile(r"lkfragment[0-9a-f]{16}n[0-9]+z")


def fragment_marker(nonce: str, n: int) -> str:
    """The marker of fragment ``n`` of a build whose nonce is ``nonce`` (16 hex digits)."""
    return f"lkfragment{nonce}n{n}z"


class _Fragments(Preprocessor):
    """Puts each marker's finished HTML into the HTML stash, where the block was: the page's blocks
    were rendered and verified by the emitter, with the whole site's links."""

    def __init__(self, md: Markdown, path: str):
        super().__init__(md)
        self.path = path
        self._html: dict[str, str] | None = None

    def html(self) -> dict[str, str]:
        if self._html is None:
            import json

            self._html = json.loads(Path(self.path).read_text(encoding="utf-8"))
        return self._html

    def run(self, lines: list[str]) -> list[str]:
        if not any("lkfragment" in line for line in lines):
            return lines
        known = self.html()

        def swap(m: re.Match) -> str:
            html = known.get(m.group(0))
            if html is None:
                raise LessonError(f"{m.group(0)}: no such fragment in {self.path}", hint="build again")
            return self.md.htmlStash.store(html)

        return [FRAGMENT.sub(swap, line) if "lkfragment" in line else line for line in lines]


class LessonKitExtension(Extension):
    def __init__(self, **kwargs):
        self.config = {
            "root": [".", "project root (holds docs/, sourcemap/, experiments/)"],
            "context": ["", "a callable returning the current page's PageContext (set by a build)"],
            "fragments": ["", "a JSON file of fragments rendered ahead of time (the Zensical emitter)"],
        }
        super().__init__(**kwargs)

    def extendMarkdown(self, md: Markdown) -> None:
        if self.getConfig("fragments"):  # every block was rendered by the emitter: only swap them in
            md.preprocessors.register(_Fragments(md, self.getConfig("fragments")), "lessonkit", PRIORITY)
            return
        if callable(self.getConfig("context")):
            setattr(md, "lessonkit_context", self.getConfig("context"))  # read by page_context
        md.preprocessors.register(_Pre(md, self.getConfig("root")), "lessonkit", PRIORITY)
        md.preprocessors.register(_Pre(md, self.getConfig("root"), early=True), "lessonkit-early", EARLY)


def makeExtension(**kwargs):
    return LessonKitExtension(**kwargs)
