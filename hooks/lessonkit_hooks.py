"""MkDocs hooks: a thin adapter between MkDocs events and lessonkit.

Rendering of annotation blocks lives in the ``lessonkit.mdext`` Markdown
extension, the cross-link data in ``lessonkit.site`` and the generated pages in
``lessonkit.pages``; these hooks only reset state per build, provide the pinned
tree once, start the experiments in the background and order the pages so that
those with experiments render last, add the generated pages (source browser,
script pages, symbol index, attachments, bundle), give the extension each page's
path, line offset and link targets, put highlighted code into pages after the
search index has read them, and turn lessonkit errors into one-line MkDocs errors.
"""

from __future__ import annotations

import logging
import re
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mkdocs.exceptions import Abort, PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files, InclusionLevel
from mkdocs.utils import get_relative_url

from lessonkit import attachments, mathml, mdext, pages, site, store, verify
from lessonkit.errors import LessonError, Problem
from lessonkit.pyindex import SourceFile
from lessonkit.render import Deferred

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.pages import Page

log = logging.getLogger("mkdocs.plugins.lessonkit")
_ID = re.compile(r'\sid="([^"]+)"')


@dataclass
class _State:
    command: str = "build"
    root: Path = Path(".")
    problems: list[Problem] = field(default_factory=list)
    token: object = None
    citations: list = field(default_factory=list)
    generated: dict = field(default_factory=dict)  # src_uri -> (tree, file) for code pages
    urls: dict = field(default_factory=dict)  # src_uri -> url
    api: set = field(default_factory=set)  # documented API object paths
    tokens: dict = field(default_factory=dict)  # [[lessonkit:x]] -> value
    nonce: str = field(default_factory=lambda: secrets.token_hex(4))
    deferred: dict = field(default_factory=dict)  # src_uri -> Deferred (filled after the search index)
    pending: object = None  # the experiments, running in the background
    late: object = None  # _Late
    prewarm: object = None  # a process filling the caches ahead of the source pages


STATE = _State()


def _project():
    return mdext.get_project(STATE.root)


def on_startup(command: str, dirty: bool) -> None:
    # MkDocs re-executes this module on every serve reload but calls on_startup once:
    # keep the command where a reload does not reset it.
    mdext.COMMAND[0] = command


def on_config(config: "MkDocsConfig") -> None:
    mdext.reset()
    STATE.__init__(command=mdext.COMMAND[0], root=Path(config.config_file_path).parent.resolve())
    try:
        project = _project()
        tree = project.tree  # provided and checked against the manifest, once per build
        verify.check_config(project)  # the other sourcemap files, before anything uses them
    except LessonError as exc:
        raise PluginError(str(exc)) from None
    log.info(f"lessonkit: autograd {project.pin.version} ({project.pin.short}) from {tree.provider}"
             + (" (build cache)" if tree.cached else ""))
    _point_mkdocstrings_at(config, tree.root)
    SourceFile.store = store.Store(project.cache, "symbols")  # symbol tables by file content, across builds
    mathml.STORE = store.Store(project.cache, "mathml")  # converted formulas, across builds
    STATE.tokens = {"provider": tree.provider, "sdist-sha256": project.pin.sdist_sha256,
                    "commit": project.pin.commit, "version": project.pin.version}


def _point_mkdocstrings_at(config, root: Path) -> None:
    """The API reference is read from the pinned tree, never from an installed copy."""
    plugin = config.plugins.get("mkdocstrings")
    if plugin is None:
        return
    handlers = plugin.config.setdefault("handlers", {})
    python = handlers.setdefault("python", {})
    python["paths"] = [str(root)]


API_ENTRY = re.compile(r"^::: *([\w.]+)", re.M)
TOKEN = re.compile(r"\[\[lessonkit:([^\]\s]*)\]\]")


def _add(files: "Files", config, uri: str, content: str, in_nav: bool = False) -> None:
    existing = files.get_file_from_path(uri)
    if existing is not None:
        files.remove(existing)
    files.append(File.generated(config, uri, content=content,
                                inclusion=InclusionLevel.INCLUDED if in_nav else InclusionLevel.NOT_IN_NAV))


def on_files(files: "Files", config: "MkDocsConfig") -> "Files":
    project = _project()
    t0 = time.perf_counter()
    paths = [Path(f.abs_src_path) for f in files.documentation_pages() if f.abs_src_path]
    unreadable, texts = [], {}
    for path in paths:  # MkDocs would decode them itself and print a traceback for non-UTF-8
        try:
            texts[project.rel(path)] = project.read_page(path)
        except LessonError as exc:
            unreadable += exc.problems
    if unreadable:
        for p in unreadable:
            log.error(str(p))
        raise Abort(f"lessonkit: {len(unreadable)} page(s) cannot be read; see the lines above")
    report = verify.check(project, paths)  # the same map that `nox -s verify` checks
    jobs = [r.job for rs in report.resolved.values() for r in rs if r.job]
    jobs += pages.diagram_jobs(project)
    # The experiments run in the background, in page order, while the pages render; a page
    # waits only for its own. What needs all of them (attachments, bundle) comes last.
    STATE.pending = project.runner.start(jobs)
    STATE.late = _Late(t0, report, texts)
    STATE.citations = site.citations(report, "docs/", texts)
    with_experiments = [page for page, rs in report.resolved.items() if any(r.job for r in rs)]
    if STATE.pending.to_run:  # a cold build: another process highlights those pages' code meanwhile
        STATE.prewarm = pages.start_prewarm(project, pages.prewarm_plan(report, with_experiments))
    for g in pages.browser_pages(project, STATE.citations):
        _add(files, config, g.uri, g.content, in_nav=g.in_nav)
        if g.code:
            STATE.generated[g.uri] = g.code
    late = pages.attachment_uris(project)
    for uri in late:  # written once every experiment has run
        _add(files, config, uri, "", in_nav=True)
    _add(files, config, pages.BUNDLE, b"")
    files = _render_order(files, project, set(with_experiments), set(late))
    STATE.urls = {f.src_uri: f.url for f in files}
    api = files.get_file_from_path("api.md")
    if api is not None and api.abs_src_path:
        STATE.api = set(API_ENTRY.findall(Path(api.abs_src_path).read_text(encoding="utf-8")))
    return files


def _render_order(files: "Files", project, with_experiments: set, late: set) -> "Files":
    """MkDocs renders pages in the order of ``files``: pages without experiments first, then
    those with experiments (by then their experiments have had time to run), then the
    attachments that need all of them. The nav and the pages are the same in any order."""
    first, then, last = [], [], []
    for f in files:
        if f.src_uri in late:
            last.append(f)
        elif f.abs_src_path and project.rel(f.abs_src_path) in with_experiments:
            then.append(f)
        else:
            first.append(f)
    return Files(first + then + last)


@dataclass
class _Late:
    """What waits for every experiment: the generated attachments and the bundle."""

    t0: float
    report: object
    texts: dict
    attached: dict | None = None  # uri -> Markdown
    calls_text: str | None = None

    def results(self) -> dict:
        project = _project()
        results = STATE.pending.results()
        if self.attached is None:
            ran = [r for r in results.values() if not r.cached]
            log.info(f"lessonkit: {len(results)} experiment(s): {len(ran)} run "
                     f"({sum(r.cpu_seconds for r in ran):.1f} s CPU), {len(results) - len(ran)} from cache, "
                     f"{time.perf_counter() - self.t0:.1f} s wall")
            try:
                attached, self.calls_text = pages.attachment_pages(project, self.report, results)
            except LessonError as exc:
                raise PluginError(str(exc)) from None
            self.attached = {g.uri: g.content for g in attached}
        return results


def on_env(env, config: "MkDocsConfig", files: "Files"):
    """Every page has its Markdown rendered: finish the bundle and the tokens that name it."""
    project = _project()
    if STATE.prewarm is not None:
        STATE.prewarm.join()
        STATE.prewarm = None
    results = STATE.late.results()
    attached = [pages.Generated(uri, text) for uri, text in STATE.late.attached.items()]
    data = pages.bundle(project, results, STATE.late.texts, attached, STATE.late.calls_text)
    files.get_file_from_path(pages.BUNDLE).content_bytes = data
    late = {"bundle-sha256": attachments.sha256(data), "bundle-size": f"{len(data) / 1024:.1f} KiB"}
    for f in files.documentation_pages():
        if f.page is None or not f.page.content or "[[lessonkit:" not in f.page.content:
            continue
        for key, value in late.items():
            f.page.content = f.page.content.replace(f"[[lessonkit:{key}]]", value)
        source = STATE.late.texts.get(f"docs/{f.src_uri}", "")
        for key in sorted(set(TOKEN.findall(f.page.content))):
            at = source.find(f"[[lessonkit:{key}]]")
            p = Problem(f"unknown token `[[lessonkit:{key}]]`", f"docs/{f.src_uri}",
                        source.count("\n", 0, at) + 1 if at >= 0 else None,
                        hint="known tokens: " + ", ".join(sorted([*STATE.tokens, *late])))
            log.error(str(p))
            STATE.problems.append(p)
    return env


class _Links:
    """Where a block on one page links to: relative URLs of generated pages."""

    def __init__(self, page_url: str):
        self.page_url = page_url

    def _rel(self, uri: str) -> str | None:
        url = STATE.urls.get(uri)
        return get_relative_url(url, self.page_url) if url is not None else None

    def source(self, file, start, end):
        rel = self._rel(site.source_uri(file))
        return f"{rel}#L{start}-L{end}" if rel else None

    def script(self, file):
        return self._rel(site.code_uri(file))

    def api(self, file, symbol):
        if not symbol or not file.endswith(".py"):
            return None
        dotted = file[:-3].replace("/", ".").removesuffix(".__init__") + "." + symbol
        rel = self._rel("api.md")
        return f"{rel}#{dotted}" if rel and dotted in STATE.api else None


def _offset(raw: str, markdown: str) -> int:
    idx = raw.find(markdown[:200]) if markdown else 0
    return raw.count("\n", 0, idx) if idx > 0 else 0


def on_page_markdown(markdown: str, page: "Page", config: "MkDocsConfig", files: "Files") -> str:
    project = _project()
    problems: list[Problem] = []
    src = page.file.abs_src_path
    rel = project.rel(src) if src else f"docs/{page.file.src_uri}"
    raw = STATE.late.texts.get(rel) if STATE.late else None  # read (and checked) once, in on_files
    if raw is None:
        raw = markdown
        if src:
            try:
                raw = project.read_page(Path(src))
            except LessonError as exc:
                problems += exc.problems
    deferred = STATE.deferred[page.file.src_uri] = Deferred(STATE.nonce, {})
    ctx = mdext.PageContext(rel, _offset(raw, markdown), problems, links=_Links(page.url),
                            root=str(STATE.root), source=raw, deferred=deferred)
    STATE.token = mdext.CURRENT.set(ctx)
    if page.file.src_uri in pages.ATTACHMENTS:  # generated once every experiment has run
        STATE.late.results()
        markdown = STATE.late.attached.get(page.file.src_uri, markdown)
    for key, value in STATE.tokens.items():  # the bundle's tokens follow in on_env
        markdown = markdown.replace(f"[[lessonkit:{key}]]", value)
    if page.file.src_uri.startswith("lessons/"):
        own = [c for c in STATE.citations if c.page == page.file.src_uri]
        depth = page.file.src_uri.count("/")
        markdown = site.add_section(markdown, site.cited_list(own, lambda uri: "../" * depth + uri))
    return markdown


def on_page_content(html: str, page: "Page", config: "MkDocsConfig", files: "Files") -> str:
    ctx = mdext.CURRENT.get()
    if STATE.token is not None:
        mdext.CURRENT.reset(STATE.token)
        STATE.token = None
    gen = STATE.generated.get(page.file.src_uri)
    if gen and pages.CODE_MARK in html:
        html = _code_page_html(page, html, *gen)
    for p in (ctx.problems if ctx else []):
        log.error(str(p))
        STATE.problems.append(p)
    # Rendered blocks reach the page through the HTML stash, where MkDocs' anchor
    # collector does not look: register their ids so links to them are validated.
    if page.present_anchor_ids is not None:
        page.present_anchor_ids |= set(_ID.findall(html))
        deferred = STATE.deferred.get(page.file.src_uri)
        for code in (deferred.html.values() if deferred else ()):
            page.present_anchor_ids |= set(_ID.findall(code))
    return html


@event_priority(-100)  # after every plugin, the search index in particular, has read the page
def on_page_context(context, page: "Page", config: "MkDocsConfig", nav):
    deferred = STATE.deferred.pop(page.file.src_uri, None)
    if deferred is not None and deferred.html:
        page.content, missing = deferred.fill(page.content)
        if missing:  # another plugin rewrote the page between on_page_content and here
            raise PluginError(f"docs/{page.file.src_uri}: {len(missing)} highlighted code block(s) could not be "
                              "put back into the page — a plugin changed the page HTML after lessonkit")
    return context


def _code_page_html(page, html: str, origin: str, file: str) -> str:
    def href(c):
        return get_relative_url(STATE.urls[c.page], page.url) + f"#{c.anchor}"

    return pages.fill_code_page(_project(), html, origin, file, STATE.citations, href)


def on_build_error(error: Exception) -> None:
    """A build that stops early leaves nothing running behind it (serve goes on to the next)."""
    if STATE.pending is not None:
        STATE.pending.cancel()
    if STATE.prewarm is not None:
        STATE.prewarm.terminate()
        STATE.prewarm = None


def on_post_build(config: "MkDocsConfig") -> None:
    from lessonkit.linkcheck import check_site

    if STATE.command != "build":  # serve: keep rebuilds fast; `nox -s build` checks every link
        return
    for p in check_site(Path(config.site_dir), cache=_project().cache):
        log.error(str(p))
        STATE.problems.append(p)
    if STATE.problems:
        raise Abort(f"lessonkit: {len(STATE.problems)} annotation problem(s); see the lines above")
