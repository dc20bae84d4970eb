"""One site build: the project, its stores and runner, the problems and the generated pages.

A :class:`Build` is created once per build (MkDocs ``on_config``) and owns everything
the build computes; the MkDocs hooks only translate events into calls on it, so all of
this is usable and testable without MkDocs:

* :meth:`Build.start` provides the pinned tree and the tokens pages may use;
* :meth:`Build.prestart` reads and verifies every page once (the same map as ``verify``)
  and, on a cold build, starts the prewarm process; :meth:`Build.start_experiments`
  starts the experiments in the background;
* :meth:`Build.plan` takes that over (or does it again for another list of pages), lists
  the generated pages and the order in which to render pages (:func:`render_order`);
* :meth:`Build.page` gives each page's Markdown its context (path, line offset, links,
  deferred code and formulas) and :meth:`Build.page_done` collects its problems;
* :meth:`Build.finish` completes the attachments and the bundle once every experiment
  has run; :meth:`Build.watch_site` and :meth:`Build.page_written` hand each written
  page to the link scanner, and :meth:`Build.check_links` checks the written site.

Problems reach the user through one channel, :attr:`Build.problems`, as one type, :class:`~lessonkit.errors.Problem`.

A Build holds no process-wide state: the MkDocs adapter (:mod:`lessonkit.integrations.mkdocs.hooks`)
keeps each Build with the configuration it was made for and tells it the command
(``build`` checks the written site's links; ``serve`` does not). What does outlive a build
(content-keyed caches, facts about the process) is listed in :mod:`lessonkit.util.shared`.
"""

from __future__ import annotations

import dataclasses
import os
import re
import secrets
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Protocol

from lessonkit.checks import living, verify
from lessonkit.errors import LessonError, Problem
from lessonkit.pipeline.activehtml import ENGINE_HTML
from lessonkit.pipeline.markdown import PageContext
from lessonkit.pipeline.render import Deferred
from lessonkit.project import Project
from lessonkit.site import attachments, pages
from lessonkit.site import citations as site
from lessonkit.site.tokens import fill_tokens, unknown_tokens
from lessonkit.written_site import WrittenSite

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess

    from lessonkit.run.jobs import Pending
    from lessonkit.site.links import SiteScanner

API_ENTRY = re.compile(r"^::: *([\w.]+)", re.M)
ANCHOR_ID = re.compile(r'\sid="([^"]+)"')


def line_offset(raw: str, markdown: str) -> int:
    """How many lines of the page file come before ``markdown`` (front matter MkDocs removed)."""
    idx = raw.find(markdown[:200]) if markdown else 0
    return raw.count("\n", 0, idx) if idx > 0 else 0


@dataclass(frozen=True)
class PageFile:
    """A page as the site generator lists it: its docs-relative uri and its file, if any."""

    uri: str
    path: str | None = None


def render_order(files: list[PageFile], project: Project, with_experiments: list[str], late: set[str]) -> list[int]:
    """Indices of ``files`` in render order: pages without experiments first, then those with
    experiments in the order their runs end (``with_experiments``; by then they have had time
    to run), then the pages that need all of them (``late``). The site's navigation is not
    affected."""
    first, then, last = [], [], []
    place = {page: n for n, page in enumerate(with_experiments)}
    for n, f in enumerate(files):
        if f.uri in late:
            last.append(n)
        elif f.path and project.rel(f.path) in place:
            then.append(n)
        else:
            first.append(n)
    then.sort(key=lambda n: place[project.rel(files[n].path or "")])  # `then`: pages with a path
    return first + then + last


def _writable(folder: Path | None) -> bool:
    """Whether entries can be written under ``folder`` (its first existing folder is writable)."""
    if folder is None:
        return False
    for there in (folder, *folder.parents):
        if there.exists():
            return there.is_dir() and os.access(there, os.W_OK)
    return False


def _jobs(project: Project, report: verify.Report) -> list:
    """Every run a build needs: experiment blocks, snapshots, figures, inline values, attachments."""
    return living.build_jobs(project, report)


@dataclass
class Plan:
    """What :meth:`Build.plan` decided: pages to add and the late pages to fill in."""

    generated: list[pages.Generated]  # source browser, code pages, indexes: content known now
    late: list[str]  # attachments, written once every experiment has run
    with_experiments: list[str]  # project-relative pages that show experiments, in the order their runs end


class SiteLinks:
    """Where a block on one page links to: relative URLs of generated pages."""

    def __init__(self, build: "Build", page_url: str, relative: Callable[[str, str], str]):
        self.build, self.page_url, self.relative = build, page_url, relative

    def _rel(self, uri: str) -> str | None:
        url = self.build.urls.get(uri)
        return self.relative(url, self.page_url) if url is not None else None

    def source(self, file, start, end):
        rel = self._rel(site.source_uri(file))
        return f"{rel}#L{start}-L{end}" if rel else None

    def script(self, file):
        return self._rel(site.code_uri(file))

    def api(self, file, symbol):
        if not symbol or not file.endswith(".py"):
            return None
        dotted = file[:-3].replace("/", ".").removesuffix(".__init__") + "." + symbol
        rel = self._rel(self.build.api_uri)
        return f"{rel}#{dotted}" if rel and dotted in self.build.api else None

    def page(self, uri):
        return self._rel(uri)


@dataclass
class Early:
    """What :meth:`Build.prestart` read, checked and listed, and the runs it started."""

    paths: list[Path]  # sorted
    report: verify.Report
    jobs: list  # execute.Job, in run order
    with_experiments: list | None = None  # living.pages_with_runs of the report (when computed)
    pending: Pending | None = None  # the Pending of Runner.start, once started


class RenderedPage(Protocol):
    """A page MkDocs rendered (``mkdocs.structure.pages.Page``): its HTML."""

    content: str | None


@dataclass
class Build(WrittenSite):
    root: Path
    command: str = "build"  # "serve" skips the link check of the written site
    problems: list[Problem] = field(default_factory=list)
    tokens: dict[str, str] = field(default_factory=dict)  # [[lessonkit:x]] -> value
    texts: dict[str, str] = field(default_factory=dict)  # project-relative page -> text, read once
    report: verify.Report | None = None
    citations: list = field(default_factory=list)
    generated: dict[str, tuple[str, str]] = field(default_factory=dict)  # uri -> (origin, file) of code pages
    urls: dict[str, str] = field(default_factory=dict)  # uri -> url
    dests: dict[str, str] = field(default_factory=dict)  # uri -> the file it is written to, in the site folder
    api: set[str] = field(default_factory=set)  # documented API object paths
    api_uri: str = "api.md"  # the page that documents them (site.toml [pages] api), set by plan()
    copied: dict[str, str] = field(default_factory=dict)  # site file -> the file MkDocs copies there
    theme: list[str] = field(default_factory=list)  # the theme's folders, in MkDocs' order
    deferred: dict[str, Deferred] = field(default_factory=dict)  # uri -> code filled after the search index
    nonce: str = field(default_factory=lambda: secrets.token_hex(4))
    current: PageContext | None = None  # the page whose Markdown is being rendered
    pending: Pending | None = None  # the experiments, running in the background
    early: Early | None = None  # what prestart() found and started, until plan() takes it
    extra: Pending | None = None  # prestart()'s Pending when plan() saw other pages: closed after `pending`
    prewarm: BaseProcess | None = None  # a process filling the caches ahead of the source pages
    prewarm_planned: bool = False  # whether this build decided about the prewarm (once)
    scanner: SiteScanner | None = None  # a links.SiteScanner reading the pages as they are written
    to_scan: Path | None = None  # the page file MkDocs writes next (then handed to the scanner)
    site_path: str = "/"  # the path the site is published under (of site_url: "/my-series/"), for the link check
    attached: dict[str, str] | None = None  # uri -> Markdown of the attachments
    bundle_extra: dict[str, bytes] = field(default_factory=dict)  # what the attachments add to the bundle
    bundled: bytes | None = None  # the bundle, once every experiment has run (bundle_bytes())
    late: set[str] = field(default_factory=set)  # the attachments' uris (Plan.late)
    generated_pages: list = field(default_factory=list)  # pages.Generated of the plan (content known early)
    t0: float = field(default_factory=time.perf_counter)
    pdf: bool = False  # print the course PDF after the site is written (LESSONKIT_PDF, `build` only)
    titles: dict[str, str] = field(default_factory=dict)  # uri -> page title (the PDF's outline)
    log: Callable[[str], None] = print  # where problems are written (MkDocs: an error logger)
    log_info: Callable[[str], None] = print

    def __post_init__(self):
        self.project = Project(Path(self.root))
        if self.command == "build":
            from lessonkit.config import environment

            self.pdf = environment.course_pdf()

    # -- on_config
    def start(self):
        """Provide the pinned tree (checked against the manifest, once per build)."""
        tree = self.project.tree
        verify.check_config(self.project)  # the other sourcemap files, before anything uses them
        pin = self.project.pin
        self.tokens = {
            "provider": tree.provider,
            "sdist-sha256": pin.sdist_sha256,
            "commit": pin.commit,
            "version": pin.version,
        }
        return tree

    def prestart(self, paths: list[Path] | None = None) -> None:
        """``on_config``, first of the plugins: read and check ``paths`` (default: every page
        under docs/) and list their experiments; on a cold build, start the prewarm process
        now, so that it works while the other plugins configure (Material's search loads
        jieba's dictionary for about a second, on one core). The experiments themselves start
        in :meth:`start_experiments`, after that load: it is one C call during which a signal
        cannot be handled, and experiments competing for the cores would stretch it.
        :meth:`plan` takes all of it over when MkDocs lists the same pages (the adapter passes
        the pages MkDocs will list); otherwise it plans again and the runs it shares with this
        start are not run twice (see :meth:`Runner.start`)."""
        project = self.project
        self.t0 = time.perf_counter()
        try:
            paths = project.pages() if paths is None else paths
            self.read_pages(paths)
            report = verify.check(project, paths)
            jobs = _jobs(project, report)
        except LessonError:
            self.texts.clear()
            return  # plan() reads the pages again and reports every problem, located
        self.early = Early(sorted(paths), report, jobs)
        cold = bool(project.runner.uncached(jobs))
        if cold:
            self.early.with_experiments = living.pages_with_runs(project, report)
        self._start_prewarm(report, paths, self.early.with_experiments, cold)

    def start_experiments(self) -> None:
        """``on_pre_build``: start the experiments :meth:`prestart` listed (once)."""
        early = self.early
        if early is not None and early.pending is None:
            early.pending = self.project.runner.start(early.jobs)
            self._progress(early.pending)

    def _progress(self, pending) -> None:
        """Experiments that run (not from the cache) show their progress: a counter that rewrites
        itself on a terminal, one line when they start elsewhere (CI logs)."""
        if not pending.to_run:
            return
        stream = sys.stderr
        if not (hasattr(stream, "isatty") and stream.isatty()):
            self.log_info(f"lessonkit: running {pending.to_run} experiment(s) in the background …")
            return

        def show(done: int, total: int) -> None:
            end = "\n" if done == total else ""
            stream.write(f"\r\x1b[Klessonkit: experiments {done}/{total} …{end}")
            stream.flush()

        pending.on_each_done(show)

    def _start_prewarm(self, report, paths: list[Path], with_experiments: list[str] | None, cold: bool) -> None:
        """Once per build, maybe start another process that fills the caches of what this one
        renders late (:func:`pages.prewarm_plan`). On a cold build (experiments to run): the code
        and formulas of the pages with experiments, the pinned symbols and the source pages. With
        every run cached but the source pages not highlighted (a fresh clone whose experiments ran
        before the build, a cleared cache), the build renders on one core: the prewarm then takes
        every page's code and formulas and the source pages, from the end of the render order."""
        if self.prewarm_planned:
            return
        self.prewarm_planned = True
        project = self.project
        if not _writable(project.cache):  # its work reaches the build only through the cache
            return
        files = pages.unhighlighted(project)
        if cold:
            plan = pages.prewarm_plan(report, with_experiments or [], files=files)
        elif pages.worth_prewarming(project, files):
            runs = living.pages_with_runs(project, report) if with_experiments is None else with_experiments
            others = [rel for rel in (project.rel(p) for p in paths) if rel not in set(runs)]
            plan = pages.prewarm_plan(report, runs, others, files, backwards=True)
        else:
            return
        plan = dataclasses.replace(plan, font=[project.rel(p) for p in paths])
        self.prewarm = pages.start_prewarm(project, plan)

    # -- on_files
    def read_pages(self, paths: list[Path]) -> None:
        """Read every page once; an unreadable page is a problem (raised together, before anything runs)."""
        unreadable = []
        for path in paths:
            try:
                self.texts[self.project.rel(path)] = self.project.read_page(path)
            except LessonError as exc:
                unreadable += exc.problems
        if unreadable:
            raise LessonError.collect(unreadable)

    def plan(self, paths: list[Path], api_page: Path | None = None) -> Plan:
        project = self.project
        self.start_experiments()  # unless on_pre_build did
        early, self.early = self.early, None
        with_experiments = None
        if early is not None and early.paths == sorted(paths):  # prestart() read these pages
            self.report = report = early.report
            self.pending = early.pending
            with_experiments = early.with_experiments
        else:
            self.t0 = time.perf_counter()
            self.texts.clear()
            self.read_pages(paths)
            self.report = report = verify.check(project, paths)  # the same map that `nox -s verify` checks
            jobs = _jobs(project, report)
            # The experiments run in the background, in page order, while the pages render; a page
            # waits only for its own. What needs all of them (attachments, bundle) comes last.
            self.pending = project.runner.start(jobs)
            if early is not None and early.pending is not None:  # start_experiments() started it
                self.extra = early.pending
                self.pending.to_run += early.pending.to_run
        assert self.pending is not None  # start_experiments() started prestart()'s runs, else start() these
        for problem in report.included:  # what the pages include: verify's lines, reported once here
            self.report_problem(problem)
        self.citations = site.citations(report, "docs/", self.texts)
        self.citations += site.prose_citations(project, report, "docs/", self.texts)  # inline `line` references
        self.citations = site.for_readers(self.citations, project.site.authors)  # not the authors' pages
        if with_experiments is None:
            with_experiments = living.pages_with_runs(project, report)
        self._start_prewarm(report, paths, with_experiments, bool(self.pending.to_run))  # unless prestart() did
        self.generated_pages = generated = pages.browser_pages(project, self.citations)
        self.generated = {g.uri: g.code for g in generated if g.code}
        self.api_uri = project.site.api
        if api_page is not None:
            self.api = set(API_ENTRY.findall(api_page.read_text(encoding="utf-8")))
        late = pages.attachment_uris(project)
        self.late = set(late)
        return Plan(generated, late, with_experiments)

    # -- pages
    def page(self, uri: str, path: str | None, markdown: str, links) -> str:
        """Begin rendering one page: its context for the Markdown extension, and its Markdown
        with the tokens, the attachment content and the cited-source list filled in."""
        project = self.project
        rel = project.rel(path) if path else f"docs/{uri}"
        problems: list[Problem] = []
        raw = self.texts.get(rel)  # read (and checked) once, in plan
        if raw is None:
            raw = markdown
            if path:
                try:
                    raw = project.read_page(Path(path))
                except LessonError as exc:
                    problems += exc.problems
        if path and self.report is not None:  # raw HTML imitating the engine's blocks (found by verify.check)
            problems += [p for p in self.report.problems if p.code == ENGINE_HTML and p.path == rel]
        deferred = self.deferred[uri] = Deferred(self.nonce, {})
        self.current = PageContext(
            rel,
            line_offset(raw, markdown),
            problems,
            links=links,
            source=raw,
            deferred=deferred,
            project=project,
            anchors=self.report.anchors(rel) if self.report is not None else None,
            recalls=self.report.recalls.get(rel, {}) if self.report is not None else {},
        )
        if uri in self.late:  # an attachment: generated once every experiment has run
            self.results()
            markdown = (self.attached or {}).get(uri, markdown)  # results() made them
        markdown = fill_tokens(
            markdown,
            {**self.tokens, "course-pdf": self.course_pdf_link(uri), "offline-edition": self.offline_link(uri)},
        )
        # (the bundle's tokens follow in finish())
        if self.project.site.is_lesson(uri):
            own = [c for c in self.citations if c.page == uri]
            depth = uri.count("/")
            words = self.project.site.labels
            markdown = site.add_section(markdown, site.cited_list(own, lambda u: "../" * depth + u, words))
        return markdown

    def page_done(self) -> PageContext | None:
        """The page's Markdown is rendered: report its problems."""
        ctx, self.current = self.current, None
        for p in (ctx.problems or []) if ctx else []:
            self.report_problem(p)
        return ctx

    def page_html(self, uri: str, html: str, page_url: str, relative: Callable[[str, str], str]) -> str:
        """The rendered HTML of a page with the links only the whole site knows: the lessons citing
        each line of a generated code page; the source lines and lessons of each API entry. Other
        pages' closed ``<details>`` are marked out of the search index (:func:`search.fold_out`)."""
        gen = self.generated.get(uri)

        def lesson(c):
            return relative(self.urls[c.page], page_url) + f"#{c.anchor}"

        def source(f, n):
            site_uri = site.source_uri(f)
            return relative(self.urls[site_uri], page_url) + f"#L{n}" if site_uri in self.urls else None

        if gen and pages.CODE_MARK in html:
            return pages.fill_code_page(self.project, html, *gen, self.citations, lesson)
        if uri == self.project.site.api:  # each entry: the call signature, its source lines, its lessons
            return site.api_entry_links(html, self.project, self.citations, source, lesson)
        from lessonkit.site import search

        return search.fold_out(html)  # folded hints and answers stay out of the search index

    def anchor_ids(self, uri: str, html: str) -> set[str]:
        """The ids of a page's HTML and of its highlighted blocks still waiting in the HTML stash."""
        ids = set(ANCHOR_ID.findall(html))
        deferred = self.deferred.get(uri)
        for code in deferred.html.values() if deferred else ():
            ids |= set(ANCHOR_ID.findall(code))
        return ids

    def report_problem(self, p: Problem) -> None:
        self.log(str(p))
        self.problems.append(p)

    # -- what waits for every experiment
    def results(self) -> dict:
        assert self.pending is not None and self.report is not None  # plan() came first
        results = self.pending.results()
        if self.extra is not None:
            self.extra.results()
            self.extra = None
        if self.attached is None:
            for p in self.project.runner.tree_problems():  # the pinned tree changed during the run
                self.report_problem(p)
            ran = [r for r in results.values() if not r.cached]
            self.log_info(
                f"lessonkit: {len(results)} experiment(s): {len(ran)} run "
                f"({sum(r.cpu_seconds for r in ran):.1f} s CPU), {len(results) - len(ran)} from cache, "
                f"{time.perf_counter() - self.t0:.1f} s wall"
            )
            attached, self.bundle_extra = pages.attachment_pages(self.project, self.report, results)
            self.attached = {g.uri: g.content if isinstance(g.content, str) else g.content.decode() for g in attached}
        return results

    def finish(self, rendered: Sequence[tuple[str, RenderedPage]]) -> bytes:
        """Every page's Markdown is rendered: build the bundle and fill the tokens that name it in
        ``rendered`` (``(uri, page)`` pairs whose ``content`` is HTML). Returns the bundle."""
        if self.prewarm is not None:  # what it has left to do, this build has done itself
            self.prewarm.terminate()  # its cache entries are written whole or not at all
            self.prewarm.join()
            self.prewarm = None
        data = self.bundle_bytes()
        late = {"bundle-sha256": attachments.sha256(data), "bundle-size": f"{len(data) / 1024:.1f} KiB"}
        for uri, page in rendered:
            if not page.content or "[[lessonkit:" not in page.content:
                continue
            page.content = fill_tokens(page.content, late)
            for p in unknown_tokens(
                page.content, self.texts.get(f"docs/{uri}", ""), f"docs/{uri}", [*self.tokens, *late]
            ):
                self.report_problem(p)
        return data

    def bundle_bytes(self) -> bytes:
        """The bundle (:func:`lessonkit.site.pages.bundle`): made once, after every experiment has
        run; its inputs (the pages read by plan(), the runs, the attachments) are fixed by then."""
        results = self.results()
        if self.bundled is None:
            attached = [pages.Generated(uri, text) for uri, text in (self.attached or {}).items()]  # made by results()
            self.bundled = pages.bundle(self.project, results, self.texts, attached, self.bundle_extra)
        return self.bundled

    def graph(self):
        """What every output of this build read, and the digests of those inputs (incremental serve:
        :func:`lessonkit.incremental.record`). Waits for every experiment."""
        from lessonkit.incremental import record

        return record(self)

    def cancel(self) -> None:
        """A build that stops early leaves nothing running behind it."""
        for running in (self.pending, self.extra, self.early.pending if self.early else None):
            if running is not None:
                running.cancel()
        if self.prewarm is not None:
            self.prewarm.terminate()  # and waited for: no cache entry of it lands after cancel()
            self.prewarm.join(timeout=10)
            if self.prewarm.is_alive():
                self.prewarm.kill()
                self.prewarm.join()
            self.prewarm = None
        if self.scanner is not None:
            self.scanner.close()
            self.scanner = None
