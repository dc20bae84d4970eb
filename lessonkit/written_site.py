"""What a build does with the site folder MkDocs writes (``build`` only; ``serve`` keeps rebuilds
fast): each page handed to the link scanner as it is written, the record of what the folder holds
(``verify --site``), the course PDF, the search index rewritten, and the link check of every page."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from lessonkit.errors import LessonError, Problem

if TYPE_CHECKING:
    from lessonkit.checks.verify import Report
    from lessonkit.project import Project
    from lessonkit.site.links import SiteScanner


class WrittenSite:
    """The part of :class:`lessonkit.build.Build` that works on the written site folder; the fields
    below are the Build's."""

    project: Project
    command: str
    problems: list[Problem]
    report: Report | None
    texts: dict[str, str]
    generated: dict[str, tuple[str, str]]
    urls: dict[str, str]
    dests: dict[str, str]
    copied: dict[str, str]
    theme: list[str]
    scanner: SiteScanner | None
    to_scan: Path | None
    site_path: str
    pdf: bool
    titles: dict[str, str]
    citations: Any
    log_info: Callable[[str], None]

    if TYPE_CHECKING:

        def results(self) -> dict: ...

        def report_problem(self, p: Problem) -> None: ...

    def watch_site(self, site_dir: Path) -> None:
        """Before MkDocs writes the pages: where there is a core to spare, another process
        scans each page for the link check as soon as it is written (:meth:`page_written`)."""
        from lessonkit.site.links import SiteScanner

        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        if self.command == "build" and self.scanner is None and cores > 1:
            self.scanner = SiteScanner(site_dir, cache=self.project.cache, base=self.site_path)

    def page_written(self, dest: Path | None) -> None:
        """MkDocs is about to write ``dest`` (None: nothing): the page before it is complete."""
        if self.scanner is not None and self.to_scan is not None:
            self.scanner.written(self.to_scan)
        self.to_scan = dest

    def forget_site(self, site_dir: Path) -> None:
        """A build of ``site_dir`` starts: until it succeeds, no record says what the folder holds."""
        from lessonkit.checks import record

        if self.command == "build":
            record.forget(self.project, site_dir)

    def record_site(self, site_dir: Path) -> None:
        """The build wrote ``site_dir`` without a problem: record what it holds, for ``verify --site``
        (:mod:`lessonkit.checks.record`)."""
        from lessonkit.checks import record
        from lessonkit.site.links import site_base

        if self.command != "build" or self.problems or self.report is None:
            return
        record.write(
            self.project,
            site_dir,
            self.report,
            self.results(),
            self.dests,
            self.generated,
            self.copied,
            self.theme,
            site_base(self.site_path),
        )

    # -- the course PDF
    def course_pdf_link(self, uri: str) -> str:
        """``[[lessonkit:course-pdf]]`` on the page ``uri``: a link to the PDF when this build
        prints it, else the note that says how to make it."""
        words = self.project.site.labels
        if not self.pdf:
            return words["course-pdf-off"]
        from lessonkit.site import pdf

        inner = words.fill(
            "course-pdf", path="../" * uri.count("/") + self.project.site.pdf_path, size=pdf.SIZE_PLACEHOLDER
        )
        # left out of the search index: the build fills in the size after the index is written
        return f'<span class="{pdf.LINK_CLASS}" data-search-exclude="">{inner}</span>'

    def course_pdf(self, site_dir: Path, nav: list[str], title: str) -> tuple[int, int] | None:
        """Print the navigation's pages (less ``[pdf] skip``) of the written site into
        ``[pdf] path`` (:mod:`lessonkit.site.pdf`), when this build makes the PDF."""
        if not self.pdf:
            return None
        from lessonkit.site import pdf

        conf = self.project.site
        skip = set(conf.pdf_skip)
        pages = [(self.urls[u], self.titles.get(u) or u) for u in nav if u in self.urls and u not in skip]
        from lessonkit.config import environment

        epoch = environment.source_date_epoch()
        epoch = int(time.time()) if epoch is None else epoch
        date = time.strftime("D:%Y%m%d%H%M%SZ", time.gmtime(epoch))
        t0 = time.perf_counter()
        try:
            n, size = pdf.course_pdf(
                site_dir, pages, site_dir / conf.pdf_path, title, date, contents=conf.labels["pdf-contents"]
            )
        except LessonError as exc:
            for p in exc.problems:
                self.report_problem(p)
            return None
        from lessonkit.util import fs

        for page in sorted(site_dir.rglob("*.html")):
            text = page.read_bytes()
            if pdf.SIZE_PLACEHOLDER.encode() in text:
                mode = page.stat().st_mode & 0o777
                fs.atomic_write(page, pdf.fill_size(text.decode("utf-8"), size).encode("utf-8"))
                page.chmod(mode)
        self.log_info(
            f"lessonkit: course PDF {conf.pdf_path}: {len(pages)} page(s) of the site, {n} PDF pages, "
            f"{size / 2**20:.1f} MiB, {time.perf_counter() - t0:.1f} s"
        )
        return n, size

    # -- the math font
    def math_font(self) -> bytes:
        """The site's math font: the subset of lessonkit's for the formulas of every page this build
        read (:mod:`lessonkit.site.mathfont`; made by the prewarm on a cold cache)."""
        from lessonkit.site import mathfont

        return mathfont.project_font(self.project.cache, [self.texts[page] for page in sorted(self.texts)])

    # -- the offline edition
    def offline_link(self, uri: str) -> str:
        """``[[lessonkit:offline-edition]]`` on the page ``uri``: the link to the offline edition,
        whose size the build fills in once it has made it (:meth:`offline_edition`)."""
        from lessonkit.site import offline

        words = self.project.site.labels
        return offline.link(words.fill, "../" * uri.count("/") + self.project.site.offline_path)

    def offline_edition(self, site_dir: Path) -> tuple[int, int] | None:
        """Make the offline edition of the written site (:mod:`lessonkit.site.offline`) into
        ``[offline] path`` and write its size into the pages that link it. Only ``build``: a
        served site has no download. Returns (files, bytes)."""
        if self.command != "build":
            return None
        from lessonkit.config import environment
        from lessonkit.site import offline
        from lessonkit.util import fs

        t0 = time.perf_counter()
        conf = self.project.site
        words = conf.labels
        site = offline.read_site(site_dir)
        ed = offline.edition(site, conf.offline_path, words["offline-here"], words["exercise-offline"])
        for p in ed.problems:
            self.report_problem(p)
        epoch = environment.source_date_epoch() or environment.ZIP_FIRST
        data = offline.zipped(ed, offline.top(conf.offline_path), epoch)
        out = site_dir / conf.offline_path
        out.parent.mkdir(parents=True, exist_ok=True)
        fs.atomic_write(out, data)
        out.chmod(0o644)
        size = offline.size_text(len(data))
        for rel, page in site.items():
            if rel.endswith(".html") and offline.SIZE_PLACEHOLDER.encode() in page:
                text = offline.fill_size(page.decode("utf-8"), len(data))
                mode = (site_dir / rel).stat().st_mode & 0o777
                fs.atomic_write(site_dir / rel, text.encode("utf-8"))
                (site_dir / rel).chmod(mode)
        self.log_info(
            f"lessonkit: offline edition {conf.offline_path}: {len(ed.files)} file(s), {size}, "
            f"{time.perf_counter() - t0:.1f} s"
        )
        return len(ed.files), len(data)

    # -- the search index (after Material's search plugin wrote it)
    def search_index(self, site_dir: Path, nav: list[str] | None = None) -> tuple[int, int] | None:
        """Rewrite the written search index: without blocks an earlier page of ``nav`` (docs-relative
        pages, the navigation's order) holds too, compacted, and with the glossary's terms as tags of
        the sections that define them (:mod:`lessonkit.site.search`). Returns its sizes before and
        after (None: the site has no index). A full build and the incremental serve call it alike."""
        from lessonkit.site import search

        path = site_dir / search.INDEX
        if not path.is_file():
            return None
        conf = self.project.site
        terms_of = None
        glossary = conf.glossary
        uri = glossary.removeprefix("docs/") if glossary else None
        if uri is not None and (glossary not in self.texts or uri not in self.urls):
            from lessonkit.config.site import CONFIG, line_of

            self.report_problem(
                Problem(
                    f"`glossary` in `[search]` names {conf.glossary}, which is not a page of this site",
                    CONFIG,
                    line_of(self.project.root / CONFIG, "glossary"),
                    hint="name a page of docs/ that the site builds, or remove `[search]`",
                )
            )
        elif uri is not None:
            assert glossary is not None  # uri is not None
            rows = search.glossary_rows(self.texts[glossary], conf.glossary_terms, conf.glossary_introduced)

            def page_html(url: str) -> str | None:
                page = site_dir / url / "index.html" if url.endswith("/") or not url else site_dir / url
                return page.read_text(encoding="utf-8") if page.is_file() else None

            def terms_of(docs):
                return search.defined_terms(rows, docs, uri, self.urls, page_html)

        order = [self.urls[page] for page in nav or [] if page in self.urls]
        return search.rewrite(path, terms_of, order, self.search_modules())

    def search_modules(self) -> list:
        """The source browser's Python files of the pinned tree with their symbols (classes,
        functions and methods: module level and class members), for the search index
        (:func:`lessonkit.site.search.symbol_entries`)."""
        from lessonkit.site import pages, search
        from lessonkit.site.citations import source_uri

        out = []
        for file in pages.browser_files(self.project, self.citations)[0]:
            url = self.urls.get(source_uri(file))
            if url is None or not file.endswith(".py"):
                continue
            try:
                definitions = self.project.pinned.file(file).definitions
            except Exception:  # not readable as Python: its page shows the file without symbols
                definitions = []
            symbols = tuple((d.name, d.line or d.start) for d in definitions if d.kind in ("def", "class") and d.listed)
            out.append(search.Module(url, search.module_name(file), symbols))
        return out

    def check_links(self, site_dir: Path, config_file: Path | None = None) -> None:
        """Check every link of the written site; each problem is reported where an author can
        fix it (:func:`lessonkit.site.links.located`): the page's source line, else the line of
        ``config_file`` (``mkdocs.yml``) that names the target."""
        from lessonkit.site.links import check_site, located

        if self.command != "build":
            return
        scanner, self.scanner = self.scanner, None
        if scanner is not None:
            self.page_written(None)
            found = scanner.finish()
        else:
            found = check_site(site_dir, cache=self.project.cache, base=self.site_path)
        if not found:
            return
        sources = {}
        for uri, url in self.urls.items():
            text = self.texts.get(f"docs/{uri}")
            if text is not None:
                sources[url + "index.html" if url.endswith("/") or not url else url] = (f"docs/{uri}", text)
        config = None
        if config_file is not None:
            try:
                config = (self.project.rel(Path(config_file)), Path(config_file).read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                config = None
        for p in located(found, sources, config):
            self.report_problem(p)
