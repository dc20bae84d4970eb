"""The pages the build adds to the site, independent of MkDocs.

* the source browser: one page per Python file of the pinned package (site.toml, e.g. ``autograd/``),
  plus an index, and one page per script of this repository (experiments, Mini);
* the symbol index;
* the attachments: the engine's (acceptance record, repository map) and the project's own
  (:mod:`lessonkit.attachments`);
* the downloadable bundle.

Source and script pages are Markdown with *slots* (``CITED_MARK`` and friends) that
:func:`fill_code_page` fills with HTML once the page's URL is known: tables and
highlighted code are built directly, never through Markdown, and cached by
everything they show.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from lessonkit.attachments import CONFIG, Attachment, Inputs
from lessonkit.checks.verify import Report
from lessonkit.config import environment
from lessonkit.config.files import show, tree_path_problem
from lessonkit.errors import LessonError
from lessonkit.project import Project
from lessonkit.run.box import sandbox
from lessonkit.run.runner import RECORD_HELPER
from lessonkit.site import attachments
from lessonkit.site import citations as site
from lessonkit.util.store import Store, digest

if TYPE_CHECKING:
    from lessonkit.source.resolve import Excerpt

NO_SEARCH = "---\nsearch:\n  exclude: true\n---\n\n"  # whole pages stay out of the search index
# Source and script pages stay out of the search index, and leave the table of contents out
# (three headings), so that their code has the width of both sidebars' columns but one.
CODE_PAGE = "---\nsearch:\n  exclude: true\nhide:\n  - toc\n---\n\n"
CODE_MARK = '<div class="lk-code-slot"></div>'
CITED_MARK = '<div class="lk-cited-slot"></div>'
SYMBOLS_MARK = '<div class="lk-symbols-slot"></div>'


@dataclass(frozen=True)
class Generated:
    uri: str  # docs-relative, e.g. source/autograd/core.py.md
    content: str | bytes
    in_nav: bool = False
    code: tuple[str, str] | None = None  # ("pinned" | "repo", file) when the page has slots to fill


# ---------------------------------------------------------------- source browser and symbol index


def browser_files(project: Project, cites: list[site.Citation]) -> tuple[list[str], list[str]]:
    """The files the source browser shows: (pinned files, this repository's files), sorted."""
    conf = project.site
    pinned = {p for p in project.pin.manifest if p.startswith(conf.package) and p.endswith(".py")}
    pinned_files = sorted(pinned | {c.file for c in cites if c.origin == "pinned"})
    repo_files = sorted(
        {
            p.relative_to(project.root).as_posix()
            for d in conf.code
            for p in (project.root / d).rglob("*.py")
            if "__pycache__" not in p.parts
        }
        | {c.file for c in cites if c.origin == "repo"}
    )
    return pinned_files, repo_files


def browser_pages(project: Project, cites: list[site.Citation]) -> list[Generated]:
    conf = project.site
    pinned_files, repo_files = browser_files(project, cites)
    marks = {"cited_mark": CITED_MARK, "symbols_mark": SYMBOLS_MARK, "code_mark": CODE_MARK}
    out, index_rows = [], []
    for file in pinned_files:
        own = [c for c in cites if c.origin == "pinned" and c.file == file]
        sf = _located(project.pinned.file, file)
        upstream = project.pin.permalink(file, 1, len(sf.lines))
        github = upstream.rsplit("#", 1)[0] if upstream else None
        md = CODE_PAGE + conf.render(
            "source-page.md",
            file=file,
            pin=project.pin,
            lines=len(sf.lines),
            github=github,
            python=file.endswith(".py"),
            **marks,
        )
        out.append(Generated(site.source_uri(file), md, code=("pinned", file)))
        index_rows.append({"file": file, "lines": len(sf.lines), "cited": len(own)})
    out.append(Generated(f"{site.SOURCE_DIR}/index.md", conf.render("source-index.md", rows=index_rows), in_nav=True))
    for file in repo_files:
        uri = site.code_uri(file)
        own = [c for c in cites if c.origin == "repo" and c.file == file]
        users = [
            (c.page, site.md_text(c.label), c.anchor)  # one link per page, its first block
            for c in site.per_page([c for c in cites if c.role == "script" and c.file == file])
        ]
        users = list({p: (p, lb, a) for p, lb, a in reversed(users)}.values())[::-1]
        sf = _located(lambda f: repo_file(project, f), file)
        md = CODE_PAGE + conf.render(
            "code-page.md",
            file=file,
            lines=len(sf.lines),
            up="../" * uri.count("/"),
            users=[{"page": p, "label": lb, "anchor": a} for p, lb, a in users],
            cited=bool(own),
            **marks,
        )
        out.append(Generated(uri, md, code=("repo", file)))
    out.append(
        Generated(
            "symbols.md",
            # out of the search index like the source pages it indexes: a search for a name finds
            # the lessons that explain it, not the table row that lists them
            NO_SEARCH + conf.render("symbols.md", index=site.symbol_index(cites, lambda uri: uri, conf.labels)),
            in_nav=True,
        )
    )
    return out


def _located(read, file: str):
    """``read(file)``; a file that cannot be shown (not UTF-8, a link, gone) is an error at the file itself."""
    try:
        return read(file)
    except LessonError as exc:
        raise exc.at(file, None) from None


def repo_file(project: Project, file: str):
    return project.repo.file(file) if file.startswith(project.repo.prefixes) else project.scripts.file(file)


def code_file(project: Project, origin: str, file: str):
    return project.pinned.file(file) if origin == "pinned" else repo_file(project, file)


@dataclass(frozen=True)
class Prewarm:
    """Work a build hands to another process: its results land in the content-keyed caches."""

    # (anchor, what the block shows, its recalled whole symbol) of blocks that show code, in the
    # order to warm them; what it shows is an excerpt, or (text, first line) of its body
    code: list[tuple[str, "Excerpt | tuple[str, int]", "Excerpt | None"]]
    pages: list[str]  # project-relative pages whose formulas to convert
    files: list[tuple[str, str]] = field(default_factory=list)  # (origin, file): source pages to highlight
    later: list[tuple[str, "Excerpt | tuple[str, int]", "Excerpt | None"]] = field(default_factory=list)
    font: list[str] = field(default_factory=list)  # project-relative pages whose formulas the math font serves


# Spawning the prewarm costs about a third of a second of CPU: worth it for a cold cache, not
# for a source page or two (a script edited during `serve`).
PREWARM_MIN_LINES = 1000


def unhighlighted(project: Project) -> list[tuple[str, str]]:
    """The source browser's files (:func:`browser_files`, without citations) whose highlighted
    text is not in the cache, in the order the build renders their pages."""
    pinned, repo = browser_files(project, [])
    out = []
    for origin, files in (("pinned", pinned), ("repo", repo)):
        for file in files:
            try:
                sf = code_file(project, origin, file)
            except LessonError:
                continue  # its page reports it
            if not site.is_highlighted(sf, project.cache):
                out.append((origin, file))
    return out


def worth_prewarming(project: Project, files: list[tuple[str, str]]) -> bool:
    """Whether ``files`` (:func:`unhighlighted`) are enough work for a process of their own."""
    lines = 0
    for origin, file in files:
        with contextlib.suppress(LessonError):
            lines += len(code_file(project, origin, file).lines)
        if lines >= PREWARM_MIN_LINES:
            return True
    return False


def prewarm_plan(
    report: Report,
    pages: list[str],
    others: Sequence[str] = (),
    files: Sequence[tuple[str, str]] = (),
    backwards: bool = False,
) -> Prewarm:
    """What the prewarm does: the code and formulas of ``pages``, then the source pages of
    ``files``, then the code of ``others``.

    On a cold build (experiments to run) ``pages`` are those with experiments, in the order their
    runs end: the build renders them last, once their runs are in, and the prewarm works ahead of
    it. With every run cached (``backwards``), the build renders from the start of its order and
    the prewarm from the end: each list is taken in reverse, so that the two meet in the middle.
    The build renders the source pages in ``files``' order while the experiments run (or before the
    pages with experiments): the prewarm takes them from the last one."""
    from lessonkit.pipeline.render import code_of

    def step(items):
        return list(reversed(items)) if backwards else list(items)

    def blocks(page: str) -> list:
        return [
            (anchor, r.excerpt if r.excerpt is not None else code_of(r), r.full)
            for r, anchor in zip(report.resolved.get(page, []), report.anchors(page), strict=True)
            if r.spec.citation is not None
        ]  # blocks that show code (not snapshot or figure)

    first = [b for page in step(pages) for b in step(blocks(page))]
    last = [b for page in step(others) for b in step(blocks(page))]
    return Prewarm(first, step(pages) + step(others), list(reversed(files)), last)


def prewarm(project: Project, plan: Prewarm) -> None:
    """Highlight the blocks' code, convert the pages' formulas, make the math font's subset, index
    every pinned Python file's symbols and highlight the source pages' files, into the caches the
    build reads."""
    from markdown import Markdown

    from lessonkit.pipeline import mathml
    from lessonkit.pipeline.markdown import make_renderer
    from lessonkit.pipeline.render import NoLinks

    renderer = make_renderer(Markdown(), project, NoLinks())

    def code(blocks) -> None:
        for anchor, shown, full in blocks:  # the calls the block's kind makes (Renderer.shown, recalls)
            if isinstance(shown, tuple):
                text, start = shown
                renderer.code(text, start, anchor)
            else:
                renderer.excerpt(shown, anchor)
            if full is not None:
                renderer.excerpt(full, anchor + "-full")

    code(plan.code)
    formulas = project.store("mathml")
    for page in dict.fromkeys(plan.pages):
        mathml.prewarm((project.root / page).read_text(encoding="utf-8"), formulas)
    if plan.font:  # the subset of the math font (lessonkit.site.mathfont), which the build needs once all is rendered
        from lessonkit.site import mathfont

        mathfont.project_font(project.cache, [project.read_page(project.root / page) for page in plan.font])
    for rel in sorted(project.pin.manifest):
        if rel.endswith(".py"):
            try:
                _ = project.pinned.file(rel).definitions
            except LessonError:
                pass
    for origin, file in plan.files:
        try:
            site.highlighted(code_file(project, origin, file), project.cache)
        except LessonError:
            pass
    code(plan.later)


def _prewarm_worker(root: str, cache: str, plan) -> None:
    """``plan``: the :class:`Prewarm`, or the end of a pipe it arrives through (start_prewarm)."""
    sandbox.helper_process()  # a build killed by a signal leaves no prewarm behind
    try:
        project = Project(Path(root), cache=Path(cache))
        if not isinstance(plan, Prewarm):
            try:
                plan = plan.recv()
            except (EOFError, OSError):  # the build has gone, or could not send it
                return
            if not isinstance(plan, Prewarm):
                return
        prewarm(project, plan)
    except LessonError:
        pass  # the build itself reports it; the prewarm only fills caches
    except Exception as exc:  # a bug here costs time, never the build, and prints one line, not a traceback
        what = (str(exc).strip().splitlines() or [""])[0][:200]
        print(
            f"lessonkit: warning: the prewarm process stopped ({type(exc).__name__}: {what}); "
            "the build does its work itself",
            file=sys.stderr,
            flush=True,
        )


def start_prewarm(project: Project, plan: Prewarm):  # -> multiprocessing.Process | None
    """:func:`prewarm` in a new process, while the build's own process renders other pages.
    Its results reach the build only through the content-keyed caches, so a failed or
    slow prewarm only costs time."""
    import multiprocessing
    import threading

    ctx = multiprocessing.get_context("spawn")
    theirs, ours = ctx.Pipe(duplex=False)
    proc = ctx.Process(
        target=_prewarm_worker,
        # The plan (every block's code) is larger than a pipe's buffer: passed here, start()
        # would wait, with SIGINT and SIGTERM blocked, until the new interpreter is up and
        # reading. It goes through its own pipe instead, from a thread, once the child runs.
        args=(str(project.root), str(project.cache), theirs),
        daemon=True,
        name="lessonkit-prewarm",
    )
    started = sandbox.start_helper(proc)
    theirs.close()
    if not started:
        ours.close()
        return None

    def send() -> None:
        with contextlib.suppress(OSError, ValueError):  # the child died or was ended: it only cost time
            ours.send(plan)
        ours.close()

    threading.Thread(target=send, name="lessonkit-prewarm-plan", daemon=True).start()
    return proc


def fill_code_page(
    project: Project,
    html: str,
    origin: str,
    file: str,
    cites: list[site.Citation],
    href: Callable[[site.Citation], str],
) -> str:
    """``html`` (a rendered source or script page) with its slots filled: the cited ranges,
    the symbol table and the whole file, highlighted. Cached by all of its inputs."""
    from lessonkit.pipeline.markdown import tools

    sf = code_file(project, origin, file)
    own = [c for c in cites if c.origin == origin and c.file == file]
    hrefs = {c: href(c) for c in own}

    labels = project.site.labels

    def fill() -> str:
        out = html.replace(CITED_MARK, site.cites_table_html(own, hrefs.__getitem__, labels))
        out = out.replace(SYMBOLS_MARK, site.symbol_table_html(sf, labels))
        lines = site.symbol_lines(sf)
        return out.replace(CODE_MARK, site.code_html(sf, own, hrefs.__getitem__, lines, project.cache, labels))

    key = digest(
        "code-page",
        site.FORMAT,
        sys.version,
        tools(),
        html,
        sf.rel,
        sf.data,
        repr([(c, hrefs[c]) for c in own]),
        labels.fingerprint,
    )
    return Store(project.cache, "pages").get_or_make(key, fill)


# ---------------------------------------------------------------- attachments


def attachments_of(project: Project) -> list[Attachment]:
    """Every attachment the project gets: the engine's (:data:`attachments.ENGINE`, those enabled),
    then its own (``sourcemap/attachments.toml``), in order. Known before any experiment runs."""
    registered = project.attachments
    return [a for a in attachments.ENGINE if a.enabled(project)] + [
        a for a in registered if registered.call(a, "enabled", project)
    ]


def attachment_uris(project: Project) -> list[str]:
    """The pages of :func:`attachments_of`."""
    return [a.uri for a in attachments_of(project)]


def attachment_pages(project: Project, report: Report, results: dict) -> tuple[list[Generated], dict[str, bytes]]:
    """The attachments' pages, and the files they add to the bundle (by path in it)."""
    inputs = Inputs(project, report, results)
    registered = project.attachments
    out: list[Generated] = []
    extra: dict[str, bytes] = {}
    for a in attachments_of(project):
        out.append(Generated(a.uri, registered.call(a, "page", inputs), in_nav=a.in_nav))
        for name, data in registered.call(a, "bundle", inputs).items():
            if not isinstance(name, str) or "/" in name or tree_path_problem(name) or not isinstance(data, bytes):
                module, line = registered.where(a)
                raise LessonError(
                    f"attachment `{a.name}` (module `{module}`) adds {show(name)} to the bundle, not a file "
                    "name with bytes",
                    path=CONFIG,
                    line=line,
                    hint='return `{"name.txt": b"…"}` from bundle()',
                )
            extra["attachments/" + name] = data
    return out, extra


# ---------------------------------------------------------------- the downloadable bundle


def bundle(
    project: Project, results: dict, texts: dict[str, str], generated: list[Generated], extra: dict[str, bytes]
) -> bytes:
    """Byte-identical scripts and plain-text attachments in a reproducible zip."""
    entries: dict[str, bytes] = {}
    for d in project.site.code:
        for p in sorted((project.root / d).rglob("*")):
            if "__pycache__" in p.parts or p.suffix not in (".py", ".md"):
                continue
            rel = p.relative_to(project.root).as_posix()
            if p.is_symlink() or project.root not in p.resolve().parents:
                # verify.check_config refuses links in the code folders before the build; one made since
                # must not carry a file from outside the project into the archive either
                raise LessonError(
                    "is a link: the bundle takes only the project's own files",
                    path=rel,
                    hint="replace the link with the file itself",
                )
            if p.is_file():
                entries[rel] = p.read_bytes()
    helpers = record_helpers(project, entries)
    entries.update(helpers)
    for page, text in sorted(texts.items()):
        if page.startswith("docs/attachments/") or page.removeprefix("docs/") in project.site.bundle_text:
            plain = attachments.plain_markdown(project, text, page, results)
            entries["attachments/" + Path(page).name] = plain.encode()
    entries.update(extra)  # what the attachments add (attachment_pages)
    for g in generated:
        entries.setdefault(
            "attachments/" + Path(g.uri).name, g.content if isinstance(g.content, bytes) else g.content.encode()
        )
    top = bundle_folder(project)
    entries["README.md"] = project.site.render(
        "bundle-readme.md", pin=project.pin, folder=top, record_helpers=sorted(helpers)
    ).encode()
    epoch = environment.source_date_epoch() or environment.ZIP_FIRST
    # one top folder, named like the archive: unzipping never scatters files into the current folder
    return attachments.zip_bytes({f"{top}/{name}": data for name, data in entries.items()}, epoch)


def record_helpers(project: Project, entries: dict[str, bytes]) -> dict[str, bytes]:
    """A copy of lessonkit's record helper for each code folder whose scripts import it
    (``lessonkit_record``), so that they run outside the build too: ``{path in the bundle: bytes}``."""
    helper = RECORD_HELPER.read_bytes()
    out = {}
    for d in project.site.code:
        top = d.rstrip("/")
        name = f"{top}/{RECORD_HELPER.name}"
        uses = any(
            rel.startswith(top + "/") and rel.endswith(".py") and b"lessonkit_record" in data
            for rel, data in entries.items()
        )
        if uses and name not in entries:  # a folder's own file of that name wins
            out[name] = helper
    return out


def bundle_folder(project: Project) -> str:
    """The bundle's top folder: the archive's name without ``.zip`` (``autograd-resources``)."""
    return Path(project.site.bundle).name.removesuffix(".zip")
