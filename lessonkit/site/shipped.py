"""Verify what ships: every HTML file of a written site against what lessonkit emitted.

``python -m lessonkit verify --site [SITE_DIR]`` (``nox -s verify`` after ``nox -s build`` in
the same run) reads every HTML file of the folder and finds every element that claims to be the
engine's (:data:`CLAIMS`: the classes of its blocks, badges, outputs, disclaimers, recorded
values and source lines; read as a browser reads them). Each must be one of these, checked by
its text as a reader sees it:

* a block of the page's Markdown, at its id: rendered again here from the Markdown, the pinned
  tree (checked against the manifest when provided) and this build's recorded runs, with the
  code as plain text (no render cache), and compared part by part (head, disclaimer, purpose,
  output, provenance, code, line numbers); code run by run (the runs of an elided excerpt, a
  recall's lines and its folded full version), each real-source run also with the pinned lines it
  names (its line numbers; a block of one run, the lines its own head names) less the indentation
  its ``Dedent`` removes; a snapshot's recorded cells with its recording. Then the whole element
  (tags, attributes, text) against the block rendered as the build renders it (code highlighted,
  links as the build links them): nothing hidden, added or restyled. A figure or a snapshot is
  drawn again and compared whole, and nothing inside it may claim to be the engine's but what
  lessonkit writes there;
* a recorded value in prose, equal to the value this build's run recorded;
* the code of a source-browser or script page, every line equal to the file's, its listing's
  markup lessonkit's.

Scripts, styles, event attributes, frames and URLs that run code are Material's or lessonkit's
only (:mod:`lessonkit.site.active`), and each page's Content-Security-Policy lets the browser run
exactly the page's own inline code and nothing from another host (:mod:`lessonkit.site.csp`).

Anything else that claims to be the engine's is an imitation (raw HTML, a plugin), and a block
of the Markdown that is not on its page was removed. The reference for an experiment's output
is the result this build stored in the cache, sealed (:mod:`lessonkit.util.seal`): a stored
result that does not carry the seal is not a recorded run. What the folder is comes from the
build's record (:mod:`lessonkit.checks.record`), which is checked, not trusted: its files (every
file, not only pages) are the folder's files, each copy equals its source, its blocks are the
blocks verify expects.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

from lessonkit.checks import record as site_record
from lessonkit.checks import shown
from lessonkit.checks.tree import Doc
from lessonkit.errors import LessonError, Problem
from lessonkit.kinds.base import Resolved
from lessonkit.run.outcomes import failure
from lessonkit.site import active, csp, folder_record, listings
from lessonkit.site import citations as site_cites

REBUILD = listings.REBUILD


def _plain_code(text, lang, linestart=1, title=None, code_block_count=0, hl_lines=None) -> str:
    """The code of a block as plain text, where the build highlights it (same text, no cache)."""
    return f'<div class="language-python highlight"><pre><code>{escape(text, quote=False)}</code></pre></div>'


API_ENTRY = re.compile(r"^::: *([\w.]+)", re.M)  # an entry of the API page ([pages] api, as the build reads them)


def url_of(dest: str) -> str:
    """The URL MkDocs gives the page it wrote to ``dest`` (directory URLs: ``x/index.html`` is ``x/``)."""
    if dest == "index.html":
        return "./"
    return dest[: -len("index.html")] if dest.endswith("/index.html") else dest


class _Links:
    """Where a block links to on the written site, as the build links it (``lessonkit.build.SiteLinks``):
    relative URLs from :attr:`page_url` to the pages the build's record lists."""

    def __init__(self, urls: dict[str, str], api: set[str], api_page: str):
        self.urls, self.entries, self.api_page, self.page_url = urls, api, api_page, "./"

    def _rel(self, uri: str) -> str | None:
        from mkdocs.utils import get_relative_url

        url = self.urls.get(uri)
        return get_relative_url(url, self.page_url) if url is not None else None

    def source(self, file, start, end):
        rel = self._rel(site_cites.source_uri(file))
        return f"{rel}#L{start}-L{end}" if rel else None

    def script(self, file):
        return self._rel(site_cites.code_uri(file))

    def api(self, file, symbol):
        if not symbol or not file.endswith(".py"):
            return None
        dotted = file[:-3].replace("/", ".").removesuffix(".__init__") + "." + symbol
        rel = self._rel(self.api_page)
        return f"{rel}#{dotted}" if rel and dotted in self.entries else None

    def page(self, uri):
        return self._rel(uri)


@dataclass
class Expected:
    """One block of a page as lessonkit emits it."""

    r: Resolved
    anchor: str
    root: tuple[str, frozenset]  # tag name, classes
    parts: list | None = None  # parts() of the plain rendering; None: not compared part by part
    cells: list[str] | None = None  # a snapshot's recorded cells, as shown
    problem: Problem | None = None  # why it could not be rendered (no recorded run)
    markup: str | None = None  # the whole element as lessonkit writes it (shown.markup_problem)


@dataclass
class SiteReport:
    problems: list[Problem] = field(default_factory=list)
    files: int = 0
    blocks: int = 0
    code_pages: int = 0
    lines: int = 0
    offline: int = 0  # the files of the offline edition, made again and compared


class SiteCheck:
    """Everything ``verify --site`` needs, computed once; :meth:`page` checks one HTML file."""

    def __init__(self, project, report, site_dir: Path):
        from markdown import Markdown
        from pymdownx.highlight import Highlight

        from lessonkit.checks import living
        from lessonkit.pipeline.markdown import HIGHLIGHT, provenance, tools
        from lessonkit.pipeline.render import Renderer
        from lessonkit.util.store import Store

        self.project, self.report, self.site_dir = project, report, Path(site_dir)
        self.label = project.rel(self.site_dir)
        self.problems: list[Problem] = []
        self.record = site_record.read(project, self.site_dir)
        self.base = self.record["base"] if self.record else "/"  # the path the site is published under
        self.docs: dict[str, Doc] = {}  # the scans of run(), for the mutation check
        self._pinned_lines: dict[str, list[str]] = {}
        self.files = site_record.html_files(self.site_dir) if self.site_dir.is_dir() else {}
        self.hashes = site_record.site_files(self.site_dir) if self.site_dir.is_dir() else {}  # every file
        if self.record is None:
            return
        recorded = project.runner.recorded(living.build_jobs(project, report))
        self.results = {k: r for k, (r, _) in recorded.items() if r is not None}
        urls = {
            site_cites.source_uri(f) if o == "pinned" else site_cites.code_uri(f): url_of(dest)
            for dest, (o, f) in self.record["code_pages"].items()
        }
        urls |= {page.removeprefix("docs/"): url_of(dest) for page, dest in self.record["pages"].items()}
        api_page = project.site.api
        api = project.docs / api_page
        in_report = f"docs/{api_page}" in report.resolved
        entries = set(API_ENTRY.findall(api.read_text(encoding="utf-8"))) if in_report else set()
        self.links = _Links(urls, entries, api_page)
        self.renderer = Renderer(
            project.pin,
            _plain_code,
            self.links,
            provenance(project, self.record["provider"]),
            project.site.label,
            labels=project.site.labels,
            project=project,
        )
        # The same blocks with their code highlighted as the build highlights it (the render cache's
        # sealed, content-keyed entries, or made again): what each element's markup must be.
        self.marked = Renderer(
            project.pin,
            Highlight(Markdown(), **HIGHLIGHT).highlight,
            self.links,
            provenance(project, self.record["provider"]),
            project.site.label,
            labels=project.site.labels,
            store=Store(project.cache, "render"),
            tools=tools(),
            project=project,
        )
        texts = {page: project.read_page(project.root / page) for page in report.resolved}
        self.cites = site_cites.citations(report, "docs/", texts)
        self.cites += site_cites.prose_citations(project, report, "docs/", texts)
        self.cites = site_cites.for_readers(self.cites, project.site.authors)
        self._listings: dict[str, str] = {}  # a source page's listing, as lessonkit writes it
        self.allowed = active.Allowed(self)
        self.pages = {dest: page for page, dest in self.record["pages"].items()}
        self.stale: set[str] = set()
        self.expected = {page: self._expected(page) for page in self.record["pages"] if page in report.resolved}
        self.values = {page: self._values(page) for page in self.expected}
        self.badges = [b for b in project.badges if b]
        self.badge_re = (
            re.compile(r">\s*(?:" + "|".join(re.escape(escape(b, quote=False)) for b in self.badges) + r")\s*<")
            if self.badges
            else None
        )

    # -- what the engine emitted
    def _expected(self, page: str) -> list[Expected]:
        out = []
        # what a recall's head links to depends on the page: set as the build sets it
        self.renderer.page, self.renderer.recalls = page, self.report.recalls.get(page, {})
        self.marked.page, self.marked.recalls = page, self.report.recalls.get(page, {})
        assert self.record is not None  # pages are expected only when the build recorded the folder
        self.links.page_url = url_of(self.record["pages"][page])
        for r, anchor in zip(self.report.resolved[page], self.report.anchors(page), strict=True):
            result = None
            if r.job is not None:
                result = self.results.get(self.project.runner.key(r.job))
                if result is None:  # Runner.recorded left a failed result saying why
                    why = self.project.runner.run(r.job)
                    err = failure(why, r.job, r.job.timeout)
                    out.append(
                        Expected(r, anchor, shown.ROOTS.get(r.kind.name, ("div", frozenset())), problem=err.problem)
                    )
                    continue
            try:
                out.append(self._one(r, anchor, result))
            except LessonError as exc:
                problem = exc.at(r.block.path, r.block.line).problem
                out.append(Expected(r, anchor, shown.ROOTS.get(r.kind.name, ("div", frozenset())), problem=problem))
        return out

    def _one(self, r, anchor: str, result) -> Expected:
        if r.kind.name in shown.ROOTS:  # drawn from a recording: its recorded cells are compared, a figure found
            exp = Expected(r, anchor, shown.ROOTS[r.kind.name])
            if r.kind.name == "snapshot":
                from lessonkit.kinds.snapshot import _cell

                table = r.kind.table(r, result)
                cells = [c for row in table.rows for c in row if c.mode in ("generated", "checked")]
                exp.cells = [shown.td_text(_cell(c, r.job.label, self.renderer, r.block.line)) for c in cells]
            exp.markup = r.kind.render(self.renderer, r, anchor, result)  # drawn again, no cache
            return exp
        doc = Doc(r.kind.render(self.renderer, r, anchor, result))
        top = doc.top()
        exp = Expected(r, anchor, (doc.name(top), frozenset(doc.classes(top))), shown.parts(doc, top))
        exp.markup = r.kind.render(self.marked, r, anchor, result)
        return exp

    def _values(self, page: str) -> Counter:
        from lessonkit.kinds import value as value_kind

        out: Counter = Counter()
        for ref in self.report.inline.get(page, []):
            if ref.kind == "value":
                try:
                    rel, key, text = value_kind.value(self.project, ref)
                except LessonError:
                    continue  # its run is not recorded: reported with the blocks of the page
                out[(self.project.site.labels.fill("value-title", script=rel, key=key), text)] += 1
        return out

    # -- the whole folder
    def run(self) -> SiteReport:
        rep = self.folder()
        if rep is None:
            return SiteReport(self.problems)
        for rel in self.files:
            self.problems += self.check_file(rel, rep)
        self.problems += self.svg_files()
        return rep

    def svg_files(self) -> list[Problem]:
        """The SVG documents of the folder (a browser runs an SVG's scripts when it is opened as a
        page): what :func:`lessonkit.site.active.svg_problems` finds in each."""
        out: list[Problem] = []
        for rel in sorted(f for f in self.hashes if f.endswith(".svg")):
            path = self.site_dir / rel
            if not path.is_symlink():
                out += active.svg_problems(path.read_bytes(), f"{self.label}/{rel}")
        return out

    def _offline(self) -> tuple[list[Problem], int]:
        """The offline edition: this folder's, byte for byte, and its size where a page links it
        (:func:`lessonkit.site.offline.problems`)."""
        from lessonkit.site import offline

        if self.project.site.offline_path not in (self.record or {}).get("files", {}):
            return [], 0  # the build made none (an engine without it, such as Zensical): nothing to compare
        words = self.project.site.labels
        site = offline.read_site(self.site_dir)
        return offline.check(
            site, self.project.site.offline_path, words["offline-here"], words["exercise-offline"], self.label
        )

    @staticmethod
    def new_report(problems: list[Problem]) -> SiteReport:
        """A report to count into (for the mutation check, a layer below, which does not import this one)."""
        return SiteReport(problems)

    def folder(self) -> SiteReport | None:
        """The folder's own checks (its record, its files' hashes, the copies); the report its
        pages are then added to (:meth:`check_file`), or None when there is no folder or no
        record of it to check the pages against (the problem says which)."""
        if not self.site_dir.is_dir():
            self.problems.append(Problem(f"no site folder {self.label}", self.label, None, REBUILD))
            return None
        if self.record is None:
            self.problems.append(
                Problem(
                    "no successful build of this project by this lessonkit recorded this folder (in the build "
                    "cache), so nothing says what it should hold",
                    self.label,
                    None,
                    REBUILD + ", with the same LESSONKIT_CACHE",
                )
            )
            return None
        folder_record.compare(self)
        found, n = self._offline()
        self.problems += found
        return SiteReport(self.problems, offline=n)

    def check_file(self, rel: str, rep: SiteReport) -> list[Problem]:
        """The problems of one HTML file of the folder, counted into ``rep``; its scan is kept
        (:attr:`docs`) for the mutation check."""
        rep.files += 1
        self.docs[rel] = doc = Doc(self.files[rel].decode("utf-8", "replace"))
        return self.page(rel, doc.html, rep, doc)

    # -- one page
    def page(self, rel: str, html: str, rep: SiteReport | None = None, doc: Doc | None = None) -> list[Problem]:
        """The problems of one HTML file of the folder (``rel``: its path in the folder); ``doc``: its
        scan, when the caller has it (:func:`lessonkit.checks.mutation.check_site`)."""
        assert self.record is not None  # run() and the mutation check: a recorded folder
        rep = rep or SiteReport()
        where = f"{self.label}/{rel}"
        doc = doc if doc is not None else Doc(html)
        # First the elements lessonkit emitted (block roots, source listings; any tag whose classes
        # are written with character references too), checked; then every other claim is one too many.
        if "roots" not in doc.memo:
            roots: list[int] = []
            by_id: dict[str, list[int]] = {}
            for i in range(len(doc)):
                if {"lk-block", "lk-figure", "lk-source"} & set(doc.classes(i)):
                    roots.append(i)
                    ident = doc.attrs(i).get("id")
                    if ident:
                        by_id.setdefault(ident, []).append(i)
            doc.memo["roots"] = roots, by_id
        roots, by_id = doc.memo["roots"]
        problems: list[Problem] = []
        verified: list[int] = []  # tag indices of checked elements: their content is accounted for
        page = self.pages.get(rel)
        if page is not None and page in self.expected and page not in self.stale:
            problems += self._blocks(doc, where, page, by_id, verified, rep)
        code = self.record["code_pages"].get(rel)
        if code is not None:
            found = listings.source_page(self, doc, where, code, roots, verified, rep)
            problems += found or self._listing_markup(doc, where, rel, code, roots)
        problems += listings.imitations(self, doc, where, verified)
        problems += active.problems(self, doc, rel, where, verified)  # scripts, styles, frames: Material's only
        problems += self._policy(doc, rel, where)  # the browser refuses what the build did not emit
        return problems

    def _policy(self, doc: Doc, rel: str, where: str) -> list[Problem]:
        """The page's Content-Security-Policy (:func:`lessonkit.site.csp.problems`). A page the
        mutation check changed by one character of text a reader sees keeps its page's result (the
        policy, the scripts and styles it hashes are elements and raw text, which such a change
        leaves as they are)."""
        known = doc.memo.get("csp")
        at = doc.changed
        if known is not None and at is not None and not doc.hidden[at]:
            return known
        found = csp.problems(doc.html, where)
        if at is None:
            doc.memo["csp"] = found
        return found

    def _blocks(self, doc, where, page, by_id, verified, rep) -> list[Problem]:
        out = []
        for exp in self.expected[page]:
            rep.blocks += 1
            r, what = exp.r, shown.block_what(exp.r, exp.anchor)
            if exp.problem is not None:
                out.append(Problem(f"{what}: {exp.problem.message}", where, None, exp.problem.hint))
                continue
            name, classes = exp.root
            found = [i for i in by_id.get(exp.anchor, []) if doc.name(i) == name and set(doc.classes(i)) == classes]
            if not found:
                out.append(
                    Problem(
                        f"the {what} of {r.block.path}:{r.block.line} is not on the page",
                        where,
                        None,
                        "something after lessonkit removed it (a hook or plugin); rebuild with a clean cache",
                    )
                )
                continue
            i = found[0]
            verified.append(i)
            if exp.parts is not None:
                wrong = shown.compare_block(self, doc, i, exp, what, where)
            elif exp.cells is not None:
                wrong = shown.compare_cells(doc, i, exp, what, where)
            else:
                wrong = []
            if r.spec.name in shown.ROOTS:  # what an author wrote in it may not claim to be the engine's
                wrong += [listings.imitation(self, doc, k, where) for k in shown.nested_claims(doc, i)]
            if not wrong and exp.markup is not None:  # the same text: the same markup (nothing hidden, added)
                wrong = shown.markup_problem(doc, i, exp.markup, what, where)
            out += wrong
        out += shown.prose_values(self, doc, where, page, verified)
        return out

    def _listing_markup(self, doc: Doc, where: str, rel: str, code, roots: list[int]) -> list[Problem]:
        """A source page's listing (its lines are the file's) against the markup lessonkit writes
        for it: the highlighted file (the highlight cache's sealed, content-keyed entry), line
        anchors, numbers, symbol anchors and the marks of cited lines."""
        from mkdocs.utils import get_relative_url

        from lessonkit.site.pages import code_file

        origin, file = code
        want = self._listings.get(rel)
        if want is None:
            sf = code_file(self.project, origin, file)
            own = [c for c in self.cites if c.origin == origin and c.file == file]

            def href(c) -> str:
                return get_relative_url(self.links.urls[c.page], url_of(rel)) + f"#{c.anchor}"

            labels = self.project.site.labels
            want = site_cites.code_html(sf, own, href, site_cites.symbol_lines(sf), self.project.cache, labels)
            self._listings[rel] = want
        box = next(i for i in roots if doc.name(i) == "div" and "lk-source" in doc.classes(i))
        return shown.markup_problem(doc, box, want, f"the source page of {file}", where)

    def pages_dest(self, page: str) -> str:
        """Where a problem of a page of docs/ is reported: its HTML file, else the page."""
        dest = self.record["pages"].get(page) if self.record is not None else None
        return f"{self.label}/{dest}" if dest else page

    def pinned_text(self, file: str, a: int, b: int) -> str | None:
        """Lines ``a``–``b`` of a file of the pinned tree as a real-source block shows them (uniform
        indentation removed); None when the tree has no such file."""
        lines = self._pinned_lines.get(file)
        if lines is None:
            try:
                lines = self.project.pinned.file(file).text.split("\n")
            except LessonError:
                return None
            self._pinned_lines[file] = lines
        return "\n".join(_dedent(tuple(lines[a - 1 : b]))) + "\n"

    def pinned_lines(self, file: str, numbers: list[int]) -> list[str] | None:
        """Lines ``numbers`` of a file of the pinned tree, as the file has them; None when the tree
        has no such file or lines."""
        if self.pinned_text(file, 1, 1) is None:
            return None
        lines = self._pinned_lines[file]
        if not numbers or min(numbers) < 1 or max(numbers) > len(lines):
            return None
        return [lines[n - 1] for n in numbers]


def _dedent(lines: tuple[str, ...]) -> tuple[str, ...]:
    """The lines without the indentation they all share (blank lines empty)."""
    widths = [len(l) - len(l.lstrip(" ")) for l in lines if l.strip()]
    cut = min(widths) if widths else 0
    return tuple(l[cut:] if l.strip() else "" for l in lines)


def check_site(project, report, site_dir: Path) -> SiteReport:
    """Check every HTML file of ``site_dir`` (see the module docstring)."""
    return SiteCheck(project, report, site_dir).run()
