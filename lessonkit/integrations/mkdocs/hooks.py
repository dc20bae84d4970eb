"""MkDocs adapter: MkDocs events become calls on one :class:`lessonkit.build.Build` per configuration.

A series' hooks file (``hooks:`` in its ``mkdocs.yml``) is one line::

    from lessonkit.integrations.mkdocs.hooks import *  # noqa: F403

MkDocs 1.6 registers every callable ``on_*`` attribute of a hooks module (``dir(module)``), so
the three functions this module exports (:data:`__all__`) are that file's hooks.

Where the state lives:

* **The build in progress belongs to its configuration.** :func:`on_config` makes a
  :class:`~lessonkit.build.Build` and registers a :class:`BuildEvents` plugin holding it in that
  configuration's plugins, ``config.plugins["lessonkit/build"]`` (as mkdocstrings adds autorefs).
  Every later event, ``on_build_error`` included, which gets no configuration, reaches that
  build as ``self.build``. ``mkdocs serve`` loads a new configuration for every rebuild, so every
  rebuild gets a new Build, and nothing of one build is visible to another; a second
  :func:`on_config` on the same configuration (the incremental serve, :mod:`lessonkit.integrations.mkdocs.serve`)
  replaces its build. :func:`build_of` finds it.
* **One process-wide object: :data:`SESSION`, the MkDocs command.** MkDocs says whether it is
  building or serving only to ``on_startup``, once per process, with the first configuration;
  the configurations of serve's rebuilds carry no trace of it (and MkDocs 1.6.1 loads a hooks
  file once per process: ``config_options.Hooks._load_hook`` is an ``lru_cache``, so a hooks
  module's globals outlive every rebuild anyway). ``on_shutdown`` forgets it. It decides one
  thing: the link check of the written site runs unless the command is ``serve``. A build
  started without ``on_startup`` (``mkdocs.commands.build.build`` called from Python) counts
  as ``build``. Every other process-wide value of lessonkit is listed in :mod:`lessonkit.util.shared`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from mkdocs.exceptions import Abort, PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files, InclusionLevel, get_files
from mkdocs.utils import get_relative_url

from lessonkit import build as lk_build
from lessonkit.attachments import ENGINE_PAGE_OWNERS
from lessonkit.checks import includes, rendered
from lessonkit.config import checks as lk_checks
from lessonkit.config import environment as lk_env
from lessonkit.errors import LessonError
from lessonkit.integrations.mkdocs import jiebacache, pagefacts, setup, themecache
from lessonkit.integrations.mkdocs.options import from_extra
from lessonkit.site import csp, mathfont
from lessonkit.source import pyodide

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.pages import Page

__all__ = ["on_startup", "on_shutdown", "on_config"]

log = logging.getLogger("mkdocs.plugins.lessonkit")
# Where `serve` writes the problems of the pages (not under "mkdocs": MkDocs' strict mode would count
# them and abort the build, but a failing block is shown on its page and the rest of the site is
# served). lessonkit.integrations.mkdocs.serve gives it the handler of MkDocs' own log.
SERVE_LOG = logging.getLogger("lessonkit.serve")
PLUGIN = "lessonkit/build"  # the key of the per-configuration plugin in config.plugins


@dataclass
class Session:
    """What MkDocs told this process in ``on_startup`` (None: no session, or it has ended)."""

    command: str | None = None  # "build", "gh-deploy" or "serve"


SESSION = Session()  # the one process-wide object of the adapter (see the module docstring)


def on_startup(command: str, dirty: bool) -> None:
    SESSION.command = command


def on_shutdown() -> None:
    SESSION.command = None


@event_priority(100)  # before the other plugins: the prewarm process works while they configure
def on_config(config: "MkDocsConfig") -> None:
    """The hooks file's ``on_config``: :func:`configure`. A hooks file is a course (the plugin's
    ``course: true``); its options are those of the plugin, under ``extra: lessonkit:``
    (:func:`~lessonkit.integrations.mkdocs.options.from_extra`)."""
    try:
        options = from_extra(config)
    except LessonError as exc:
        raise PluginError(str(exc)) from None
    fonts = True if options.system_fonts is None else options.system_fonts
    configure(config, add_extensions=options.add_extensions, system_fonts=fonts)


def configure(config: "MkDocsConfig", *, add_extensions: bool, system_fonts: bool = True) -> None:
    """Make this configuration's Build: add (or check) the Markdown extensions and check the theme
    (:mod:`~lessonkit.integrations.mkdocs.setup`), provide the pinned tree, check the pages and list
    their experiments (:meth:`~lessonkit.build.Build.prestart`; they start in
    ``on_pre_build``), point the API reference at the tree."""
    root = Path(config.config_file_path).parent.resolve()
    try:
        if Path(config.docs_dir).resolve() != root / "docs":
            raise LessonError(
                f"docs_dir is {config.docs_dir!r}; lessonkit reads a series' pages from docs/ beside mkdocs.yml",
                path="mkdocs.yml",
                hint="set `docs_dir: docs` (or leave it out) and keep the lessons in docs/",
            )
        if add_extensions:
            setup.prepare(config, str(root), system_fonts=system_fonts)
        else:
            setup.check(config, system_fonts=system_fonts)
        lk_env.site_urls()  # SITE_URL, LESSONKIT_REPO_URL: http(s) addresses, or a located error
        lk_env.source_date_epoch()  # a date MkDocs and the bundle's zip can hold, or a located error
        lk_checks.check_docs(root)  # before MkDocs walks docs/
        command = "serve" if SESSION.command == "serve" else "build"
        problems = SERVE_LOG.error if command == "serve" else log.error
        b = lk_build.Build(root, command, log=problems, log_info=log.info)
        jiebacache.use(lk_env.cache_dir(root))  # before Material's search loads jieba's dictionary
        tree = b.start()
        b.prestart(_pages(config))
    except LessonError as exc:
        raise PluginError(str(exc)) from None
    # the page dates come from the history of the site's inputs (pagefacts)
    dates = pagefacts.PageDates(root, ["docs", "sourcemap", "templates", *b.project.site.code])
    events = config.plugins.get(PLUGIN)
    if isinstance(events, BuildEvents):
        events.build, events.dates = b, dates
    else:  # registers its on_* methods for the rest of this configuration's build
        # MkDocs registers any object's on_* methods, as it does a hooks module's: not a BasePlugin on purpose
        config.plugins[PLUGIN] = BuildEvents(b, dates)  # type: ignore[assignment]
    b.forget_site(Path(config.site_dir))  # until this build succeeds, nothing vouches for the folder
    b.site_path = urlsplit(config.site_url or "/").path or "/"  # MkDocs' links from the root start there
    pin = b.project.pin  # for the theme's templates (a licence link at the pinned commit, say)
    if pin.commit_known:  # a pin without a commit (a release archive) links no upstream commit
        config.extra["lessonkit_pin"] = {"repo": pin.repo, "commit": pin.commit, "version": pin.version}
    else:
        config.extra.pop("lessonkit_pin", None)
    cached = " (build cache)" if tree.cached else ""
    log.info(f"lessonkit: pinned {b.project.pin.version} ({b.project.pin.short}) from {tree.provider}{cached}")
    plugin = config.plugins.get("mkdocstrings")  # the API reference reads the pinned tree
    if plugin is not None:
        plugin.config.setdefault("handlers", {}).setdefault("python", {})["paths"] = [str(tree.root)]
    config.mdx_configs.setdefault("lessonkit.pipeline.markdown", {})["context"] = lambda: b.current
    _use_assets(config)
    _paths_from_the_project(config, root)
    _watch(config, root, b)


def _watch(config: "MkDocsConfig", root: Path, b: lk_build.Build) -> None:
    """``serve`` rebuilds when an input of the build changes, not only docs/: the experiments, the
    sourcemap, the series' templates and its code and teaching folders (added once, if they exist)."""
    site = b.project.site
    folders = ["experiments", "sourcemap", "templates", *site.code, *site.teaching]
    watched = {str(Path(w).resolve()) for w in config.watch}
    for name in dict.fromkeys(folders):
        path = (root / name).resolve()
        if path.is_dir() and str(path) not in watched:
            config.watch.append(str(path))
            watched.add(str(path))


def _paths_from_the_project(config: "MkDocsConfig", root: Path) -> None:
    """Snippets' ``base_path`` and the search's jieba dictionaries are read relative to the
    working folder; MkDocs reads its own paths relative to ``mkdocs.yml``. Relative ones are
    made the project's, so ``mkdocs build -f path/to/mkdocs.yml`` works from anywhere."""
    snippets = config.mdx_configs.get("pymdownx.snippets")
    if snippets and "base_path" in snippets:
        paths = snippets["base_path"]
        snippets["base_path"] = [str(root / p) for p in ([paths] if isinstance(paths, str) else paths)]
    search = config.plugins.get("material/search")
    for option in ("jieba_dict", "jieba_dict_user"):
        value = getattr(getattr(search, "config", None), option, None)
        if isinstance(value, str) and value and search is not None:
            search.config[option] = str(root / value)


ASSETS = lk_checks.ENGINE_ASSETS  # the stylesheet, script and math font of lessonkit's HTML
STYLESHEET, SCRIPT = "assets/lessonkit.css", "assets/lessonkit.js"


def _use_assets(config: "MkDocsConfig") -> None:
    """Every site gets the engine's stylesheet and script (its blocks, source pages and formulas
    need them), listed once; a project that names them itself keeps its order."""
    for option, uri in (("extra_css", STYLESHEET), ("extra_javascript", SCRIPT)):
        if uri not in [str(x) for x in config[option]]:
            config[option].append(uri)


def written_files(b: lk_build.Build, config: "MkDocsConfig") -> dict[str, str]:
    """The site paths the engine and the theme write, each with its source (a docs/ file there
    is an error: :func:`lessonkit.config.checks.replaced_files`)."""
    site = b.project.site
    engine = {site.bundle: "the engine's bundle", site.offline_path: "the engine's offline edition"}
    engine |= {site.pdf_path: "the engine's PDF"} if site.pdf_path else {}
    dirs = [Path(d) for d in config.theme.dirs]
    return lk_checks.written_files(b.project.root, dirs, tuple(sorted(config.theme.static_templates)), engine)


def _add_assets(files: "Files", config) -> None:
    """The engine's assets as site files, under ``assets/`` (a file of docs/ there is an error,
    reported before: :meth:`BuildEvents.on_files`). ``assets/scoped/`` is the guest's (its
    stylesheet for blocks alone, :mod:`~lessonkit.integrations.mkdocs.guest`): a course has the
    site-wide one."""
    for path in sorted(ASSETS.rglob("*")):
        uri = "assets/" + path.relative_to(ASSETS).as_posix()
        if path.is_file() and path.parent.name != "scoped" and files.get_file_from_path(uri) is None:
            files.append(File.generated(config, uri, abs_src_path=str(path)))


def _add_runtime(files: "Files", config, b: lk_build.Build) -> None:
    """The browser's Python (:mod:`lessonkit.source.pyodide`) under ``assets/pyodide/``, only when a
    page has an exercise or runnable block: fetched into the build cache once, each file checked before the copy."""
    if b.report is None or not (b.report.count("exercise") or b.report.count("runnable")):
        return
    lock = pyodide.read_lock(b.project.root)
    if lock is None:  # the blocks' own resolution reports it, located
        return
    folder = pyodide.provide(lock, b.project.cache)
    pyodide.check(lock, folder)
    for name in lock.files:
        uri = f"{pyodide.SITE_DIR}/{name}"
        if files.get_file_from_path(uri) is None:
            files.append(File.generated(config, uri, abs_src_path=str(folder / name)))


def _pages(config: "MkDocsConfig") -> list[Path] | None:
    """The Markdown pages MkDocs will list in ``on_files`` (``exclude_docs`` applied), so that
    the plan takes over the experiments started in ``on_config``; None: let the Build list them."""
    try:
        files = get_files(config)
    except Exception:  # MkDocs reports its own problems with docs/ later, in its own words
        return None
    return [Path(f.abs_src_path) for f in files.documentation_pages() if f.abs_src_path]


def build_of(config: "MkDocsConfig") -> lk_build.Build:
    """The Build of ``config`` (after its ``on_config``)."""
    events = config.plugins.get(PLUGIN)
    if not isinstance(events, BuildEvents):
        raise Abort(
            "lessonkit: the lessonkit hooks are not configured in mkdocs.yml "
            "(hooks: → lessonkit.integrations.mkdocs.hooks)"
        )
    return events.build


def nav_pages(nav) -> list[str]:
    """The pages ``nav:`` of ``mkdocs.yml`` lists, in its order (docs-relative paths; links to
    other sites left out). Read from the configuration, not from MkDocs' navigation object, so
    that the incremental serve, which keeps the configuration, reads the same list."""
    out: list[str] = []

    def walk(item) -> None:
        if isinstance(item, str):
            if "://" not in item and item not in out:
                out.append(item)
        elif isinstance(item, dict):
            for value in item.values():
                walk(value)
        elif isinstance(item, list):
            for value in item:
                walk(value)

    walk(nav or [])
    return out


def _add(files: "Files", config, uri: str, content, in_nav: bool = False) -> None:
    existing = files.get_file_from_path(uri)
    if existing is not None:
        files.remove(existing)
    inclusion = InclusionLevel.INCLUDED if in_nav else InclusionLevel.NOT_IN_NAV
    files.append(File.generated(config, uri, content=content, inclusion=inclusion))


def _with_policy(html: str, dest: str, where: str) -> str:
    """The page with its Content-Security-Policy first in its head (:mod:`lessonkit.site.csp`);
    ``dest``: its path in the site folder, ``where``: the file a problem is reported at."""
    try:
        return csp.apply(html, where)
    except LessonError as exc:
        raise PluginError(str(exc)) from None


class BuildEvents:
    """The events of one configuration's build, translated into calls on :attr:`build`.

    Registered in ``config.plugins`` like a hooks module: MkDocs calls its ``on_*`` methods
    (not a ``BasePlugin``, whose no-op ``on_*`` methods would be registered too)."""

    def __init__(self, build: lk_build.Build, dates: pagefacts.PageDates | None = None):
        self.build = build
        self.dates = dates

    def on_pre_build(self, config: "MkDocsConfig") -> None:
        """Every plugin is configured (Material's search has loaded its dictionary): the
        experiments start."""
        self.build.start_experiments()

    def on_files(self, files: "Files", config: "MkDocsConfig") -> "Files":
        b = self.build
        replaced = lk_checks.replaced_files(b.project.root, written_files(b, config), ENGINE_PAGE_OWNERS)
        if replaced:  # MkDocs has already put the docs/ file in place of the theme's: stop here
            for p in replaced:
                log.error(str(p))
            raise Abort(f"lessonkit: {len(replaced)} file(s) of docs/ would replace the engine's or the theme's")
        paths = [Path(f.abs_src_path) for f in files.documentation_pages() if f.abs_src_path]
        api = files.get_file_from_path(b.project.site.api)
        try:
            plan = b.plan(paths, Path(api.abs_src_path) if api is not None and api.abs_src_path else None)
        except LessonError as exc:  # unreadable pages
            for p in exc.problems:
                log.error(str(p))
            raise Abort(f"lessonkit: {len(exc.problems)} page(s) cannot be read; see the lines above") from None
        unusable = includes.unusable(b.report)
        if unusable:  # reported by plan(); pymdownx.snippets would raise on them (or publish them) while rendering
            raise Abort(f"lessonkit: {len(unusable)} include(s) name no file that may be included; see the lines above")
        for g in plan.generated:
            _add(files, config, g.uri, g.content, in_nav=g.in_nav)
        for uri in plan.late:  # written once every experiment has run
            _add(files, config, uri, "", in_nav=True)
        _add(files, config, b.project.site.bundle, b"")
        # a site file from the start, so that links to it check; made in on_post_build (empty in serve)
        _add(files, config, b.project.site.offline_path, b"")
        if b.pdf:  # a site file from the start, so that links to it check; printed in on_post_build
            _add(files, config, b.project.site.pdf_path, b"")
        _add_assets(files, config)
        try:
            _add_runtime(files, config, b)
        except LessonError as exc:
            raise Abort(f"lessonkit: {exc}") from None
        every = list(files)
        listed = [lk_build.PageFile(f.src_uri, f.abs_src_path) for f in every]
        order = lk_build.render_order(listed, b.project, plan.with_experiments, set(plan.late))
        files = Files([every[n] for n in order])
        b.urls = {f.src_uri: f.url for f in files}
        b.dests = {f.src_uri: f.dest_uri for f in files}
        return files

    def on_page_markdown(self, markdown: str, page: "Page", config: "MkDocsConfig", files: "Files") -> str:
        links = lk_build.SiteLinks(self.build, page.url, get_relative_url)
        try:
            return self.build.page(page.file.src_uri, page.file.abs_src_path, markdown, links)
        except LessonError as exc:
            raise PluginError(str(exc)) from None

    def on_page_content(self, html: str, page: "Page", config: "MkDocsConfig", files: "Files") -> str:
        b = self.build
        b.page_done()
        if page.file.generated_by is None and page.file.abs_src_path:  # what Markdown made of an author's page
            src = Path(page.file.abs_src_path)
            for p in rendered.problems(html, b.project.rel(src), b.project.read_page(src)):
                b.report_problem(p)
        html = b.page_html(page.file.src_uri, html, page.url, get_relative_url)
        # Rendered blocks reach the page through the HTML stash, where MkDocs' anchor
        # collector does not look: register their ids so links to them are validated.
        if page.present_anchor_ids is not None:
            page.present_anchor_ids |= b.anchor_ids(page.file.src_uri, html)
        return html

    def on_env(self, env, config: "MkDocsConfig", files: "Files"):
        """Every page has its Markdown rendered: finish the bundle and the tokens that name it.
        The theme's templates come compiled from :mod:`lessonkit.integrations.mkdocs.themecache`."""
        themecache.use(env, self.build.project.cache)
        rendered = [(f.src_uri, f.page) for f in files.documentation_pages() if f.page is not None]
        bundle = files.get_file_from_path(self.build.project.site.bundle)  # on_files added it
        self.build.titles = {uri: page.title for uri, page in rendered if page.title}
        try:
            data = self.build.finish(rendered)
        except LessonError as exc:
            raise PluginError(str(exc)) from None
        if bundle is None:
            raise PluginError(f"{self.build.project.site.bundle}: a plugin removed the bundle from the site's files")
        bundle.content_bytes = data
        font = files.get_file_from_path(mathfont.FONT)  # _add_assets added it: the subset replaces the whole font
        if font is not None and font.abs_src_path == str(mathfont.source()):
            font.content_bytes = self.build.math_font()
        self.build.watch_site(Path(config.site_dir))  # MkDocs writes the pages next
        # what MkDocs copies next, and from where: verify --site compares each copy with its source
        self.build.copied = {f.dest_uri: f.abs_src_path for f in files.media_files() if f.abs_src_path}
        self.build.theme = [str(d) for d in config.theme.dirs]
        return env

    @event_priority(-100)  # after every plugin, the search index in particular, has read the page
    def on_page_context(self, context, page: "Page", config: "MkDocsConfig", nav):
        deferred = self.build.deferred.pop(page.file.src_uri, None)
        if deferred is not None and deferred.html and page.content is not None:
            page.content, missing = deferred.fill(page.content)
            if missing:  # another plugin rewrote the page between on_page_content and here
                raise PluginError(
                    f"docs/{page.file.src_uri}: {len(missing)} highlighted code block(s) or formula(s) could "
                    "not be put back into the page — a plugin changed the page HTML after lessonkit"
                )
        # the date the page last changed, reproducibly (lessonkit.integrations.mkdocs.pagefacts)
        context["lessonkit_updated"] = self.dates.of(page.file.abs_src_path) if self.dates else None
        return context

    @event_priority(-100)  # the page's final HTML: MkDocs writes it once this returns
    def on_post_page(self, output: str, page: "Page", config: "MkDocsConfig") -> str:
        f = page.file  # a problem is reported at the page's Markdown, or at a generated page's file
        site = Path(config.site_dir).name
        where = f"docs/{f.src_uri}" if f.generated_by is None and f.abs_src_path else f"{site}/{f.dest_uri}"
        output = _with_policy(output, f.dest_uri, where)
        self.build.page_written(Path(f.abs_dest_path))
        return output

    @event_priority(-100)  # the theme's own pages (404.html): their policy, as every page's
    def on_post_template(self, output: str, template_name: str, config: "MkDocsConfig") -> str:
        if not template_name.endswith(".html"):  # sitemap.xml
            return output
        return _with_policy(output, template_name, f"{Path(config.site_dir).name}/{template_name}")

    def on_build_error(self, error: Exception) -> None:
        """A build that stops early leaves nothing running behind it (serve goes on to the next)."""
        self.build.cancel()

    # after every plugin has written its files (Material's search its index): the record lists what
    # the folder holds
    @event_priority(-100)
    def on_post_build(self, config: "MkDocsConfig") -> None:
        site_dir, nav = Path(config.site_dir), nav_pages(config.nav)
        self.build.search_index(site_dir, nav)
        self.build.course_pdf(site_dir, nav, config.site_name)  # when LESSONKIT_PDF asks for it
        self.build.offline_edition(site_dir)  # from the written site, the PDF included
        self.build.check_links(site_dir, Path(config.config_file_path))
        n = len(self.build.problems)
        if not n:
            self.build.record_site(site_dir)  # for `verify --site`; only when there is no problem
        if n and self.build.command == "serve":  # each is in an error box on its page; the site is served
            SERVE_LOG.error(
                f"lessonkit: {n} annotation problem(s), each shown in an error box on its page "
                "(see the lines above); `lessonkit build` fails on them"
            )
        elif n:
            raise Abort(f"lessonkit: {n} annotation problem(s); see the lines above")
