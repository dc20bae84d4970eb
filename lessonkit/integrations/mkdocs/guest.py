"""Guest mode: ``plugins: - lessonkit`` on a site that is not a lessonkit course.

The plugin then changes nothing the site did not ask for. A page without an annotation block
(or a known inline reference) is written byte for byte as it was without the plugin: no
extension is added that would touch it, no stylesheet, script, page, zip or font rule reaches
the site, and the site's configuration (``docs_dir``, theme, fonts, extensions) is not checked.

A page that uses a block gets exactly that: the block rendered and verified by the Markdown
extension :mod:`lessonkit.pipeline.markdown` (which leaves every other line of the page alone),
and one ``<link>`` to ``assets/lessonkit-blocks.css``, the engine's stylesheet for blocks, each of
whose rules is scoped to a block's classes (:data:`BLOCKS_CSS`). The pin, the experiments and the
kinds are read from the folder of ``mkdocs.yml`` (``sourcemap/``, ``experiments/``) only when a
page uses a block: a block whose pin is missing is one located error on the block's line.

A guest may turn on the course's features one by one (:class:`~lessonkit.integrations.mkdocs.options.Features`):

* ``site_style``: the course's site-wide stylesheet and script (:data:`SITE_STYLE`): every page
  links them, and blocks are styled by them;
* ``source_browser``, ``symbol_index``, ``acceptance``, ``bundle``: the course's generated pages
  and its zip, made by a :class:`lessonkit.build.Build` of the pages that use blocks (the pin and
  ``site.toml`` are then needed, and the pages in ``docs/``). Each adds its own pages or file, out
  of the navigation (list them in ``nav:`` to show them); the pages it adds link the site-wide
  stylesheet and script, and with the source browser the blocks link into it;
* ``offline_check``: the build fails on a page or stylesheet of the written site that loads
  anything from another host, each one a line.

Every other page is written as without the option.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from mkdocs.exceptions import Abort, PluginError
from mkdocs.structure.files import File, Files, InclusionLevel
from mkdocs.utils import get_relative_url

from lessonkit.errors import LessonError
from lessonkit.integrations.mkdocs.options import Features
from lessonkit.pipeline.markdown import PageContext

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.pages import Page

    from lessonkit.build import Build
    from lessonkit.kinds import Registry
    from lessonkit.project import Project

log = logging.getLogger("mkdocs.plugins.lessonkit")

BLOCKS = "lessonkit.pipeline.markdown"
BLOCKS_CSS = Path(__file__).parents[2] / "assets" / "scoped" / "lessonkit-blocks.css"
STYLESHEET = "assets/lessonkit-blocks.css"  # where the site gets it (only when a page uses a block)
SKIP = PageContext(path="<not a lessonkit page>", skip=True)
# `site_style: true`: the course's stylesheet and script on every page, and the math font the
# stylesheet loads (site path -> the file of lessonkit/assets/).
ASSETS = Path(__file__).parents[2] / "assets"
SITE_CSS, SITE_JS = "assets/lessonkit.css", "assets/lessonkit.js"
SITE_STYLE = {
    uri: ASSETS / uri.removeprefix("assets/")
    for uri in (SITE_CSS, SITE_JS, "assets/fonts/STIXTwoMath-Regular.woff2", "assets/fonts/STIXTwoMath-OFL.txt")
}
ACCEPTANCE = "attachments/acceptance.md"  # the acceptance page (lessonkit.site.attachments.Acceptance)
SYMBOLS = "symbols.md"  # the symbol index (lessonkit.site.pages.browser_pages)
OTHER_HOST = "loads a resource from another host"  # what lessonkit.site.links reports (offline_check)


def first_block(text: str, path: str, kinds: "Registry") -> int | None:
    """The line of a page's first annotation block (well formed or not) or known inline reference;
    None: the page uses neither."""
    from lessonkit.pipeline.blocks import BrokenBlock
    from lessonkit.pipeline.parse import parse_page

    if not any(mark in text for mark in ("```", "~~~", "[[")):
        return None
    page = parse_page(text, path, kinds=kinds)
    lines = [i.error.problems[0].line if isinstance(i, BrokenBlock) else i.line for i in page.items]
    lines += [i.index + 1 for i in page.inline]
    return min((n or 1 for n in lines), default=None)


class Guest:
    """The events of one guest build (a new one for every ``on_config``)."""

    def __init__(self, config: "MkDocsConfig", features: Features = Features()):
        self.root = Path(config.config_file_path).parent.resolve()
        self.features = features  # the course features this guest turns on
        self.build: Build | None = None  # what makes the features' pages (features.pages)
        self.added: dict[str, str] = {}  # site file a feature adds -> the option that adds it
        self.using: dict[str, int] = {}  # docs-relative page that uses a block -> the line of its first
        self.current: PageContext = SKIP
        self._project: Project | None = None
        self._kinds: Registry | None = None
        self.configure(config)

    def configure(self, config: "MkDocsConfig") -> None:
        """Add the blocks' Markdown extension (it leaves a page without a block as it is)."""
        names: list[str] = config.markdown_extensions
        if BLOCKS not in names:
            names.append(BLOCKS)
        options = config.mdx_configs.setdefault(BLOCKS, {})
        options.setdefault("root", str(self.root))
        options["context"] = lambda: self.current
        if self.site_style:  # listed once; a site that names them itself keeps its order
            for option, uri in (("extra_css", SITE_CSS), ("extra_javascript", SITE_JS)):
                if uri not in [str(x) for x in config[option]]:
                    config[option].append(uri)

    @property
    def site_style(self) -> bool:
        """lessonkit's stylesheet and script on every page (SITE_STYLE)."""
        return self.features.site_style

    @property
    def kinds(self) -> "Registry":
        if self._kinds is None:
            from lessonkit.kinds import for_project

            self._kinds = for_project(self.root)
        return self._kinds

    @property
    def project(self) -> "Project":
        if self._project is None:
            from lessonkit.project import Project

            self._project = Project(self.root)
        return self._project

    def _rel(self, path: str) -> str:
        try:
            return Path(path).resolve().relative_to(self.root).as_posix()
        except ValueError:
            return path

    def on_files(self, files: Files, config: "MkDocsConfig") -> Files:
        self.using.clear()
        try:
            for f in files.documentation_pages():
                try:
                    text = f.content_string
                except (OSError, UnicodeDecodeError):  # MkDocs reports an unreadable page itself
                    continue
                line = first_block(text, self._rel(f.abs_src_path), self.kinds) if f.abs_src_path else None
                if line is not None:
                    self.using[f.src_uri] = line
        except LessonError as exc:  # sourcemap/kinds.toml
            raise PluginError(str(exc)) from None
        self.added.clear()
        if self.features.pages:
            self._add_features(files, config)
        if self.site_style or any(uri.endswith(".md") for uri in self.added):
            for uri, path in SITE_STYLE.items():
                if files.get_file_from_path(uri) is not None:
                    raise PluginError(
                        f"{uri}: the site has a file where lessonkit puts its site-wide style (site_style) — "
                        "rename that file"
                    )
                files.append(File.generated(config, uri, abs_src_path=str(path), inclusion=InclusionLevel.NOT_IN_NAV))
        if self.using and not self.site_style:
            if files.get_file_from_path(STYLESHEET) is not None:
                raise PluginError(
                    f"{STYLESHEET}: the site has a file where lessonkit puts the stylesheet of its blocks — "
                    "rename that file"
                )
            css = BLOCKS_CSS.read_bytes()
            files.append(File.generated(config, STYLESHEET, content=css, inclusion=InclusionLevel.NOT_IN_NAV))
        if self.build is not None:
            self.build.urls = {f.src_uri: f.url for f in files}
            self.build.dests = {f.src_uri: f.dest_uri for f in files}
        return files

    def _add_features(self, files: Files, config: "MkDocsConfig") -> None:
        """The pages and files of the features that need a build of the series: a
        :class:`~lessonkit.build.Build` of the pages that use blocks plans them."""
        from lessonkit.build import Build
        from lessonkit.integrations.mkdocs.hooks import SESSION

        f = self.features
        on = [name for name in ("source_browser", "symbol_index", "bundle", "acceptance") if getattr(f, name)]
        if Path(config.docs_dir).resolve() != self.root / "docs":
            raise PluginError(
                f"mkdocs.yml: plugins.lessonkit.{on[0]} needs the pages in docs/ beside mkdocs.yml "
                f"(docs_dir is {config.docs_dir!r}) — set `docs_dir: docs`, or remove `{on[0]}: true`"
            )
        if (f.source_browser or f.symbol_index) and "attr_list" not in config.markdown_extensions:
            name = "source_browser" if f.source_browser else "symbol_index"
            raise PluginError(
                f"mkdocs.yml: plugins.lessonkit.{name}: the source pages need the Markdown extension attr_list "
                "(their headings' anchors) — add `- attr_list` under `markdown_extensions:`"
            )
        command = "serve" if SESSION.command == "serve" else "build"
        b = self.build = Build(self.root, command, log=log.error, log_info=log.info)
        pages = sorted(
            Path(x.abs_src_path) for x in files.documentation_pages() if x.src_uri in self.using and x.abs_src_path
        )
        try:
            b.start()
            plan = b.plan(pages)
        except LessonError as exc:
            b.cancel()
            self.build = None
            raise PluginError(f"mkdocs.yml: plugins.lessonkit.{on[0]} needs the series' build: {exc}") from None
        wanted: list[tuple[str, str | bytes, str]] = []
        for g in plan.generated:
            name = "symbol_index" if g.uri == SYMBOLS else "source_browser"
            if getattr(f, name):
                wanted.append((g.uri, g.content, name))
        if f.acceptance and ACCEPTANCE in plan.late:
            wanted.append((ACCEPTANCE, "", "acceptance"))
        if f.bundle:
            wanted.append((b.project.site.bundle, b"", "bundle"))
        for uri, content, name in wanted:
            if files.get_file_from_path(uri) is not None:
                b.cancel()
                raise PluginError(
                    f"{uri}: the site has a file where lessonkit puts a page of its {name} — rename that file"
                )
            files.append(File.generated(config, uri, content=content, inclusion=InclusionLevel.NOT_IN_NAV))
            self.added[uri] = name

    def on_page_markdown(self, markdown: str, page: "Page", config: "MkDocsConfig", files: Files) -> str:
        uri = page.file.src_uri
        if uri in self.added and self.build is not None:  # a page of a feature
            from lessonkit.build import SiteLinks

            self.current = SKIP
            try:
                return self.build.page(uri, None, markdown, SiteLinks(self.build, page.url, get_relative_url))
            except LessonError as exc:
                raise PluginError(str(exc)) from None
        if uri not in self.using or not page.file.abs_src_path:
            self.current = SKIP
            return markdown
        from lessonkit.build import line_offset

        raw = page.file.content_string
        rel = self._rel(page.file.abs_src_path)
        try:  # what every block needs: the cache folder, the series' settings, the pin, the pinned tree
            # with a feature's build, its project: one runner, so an experiment runs once
            project = self.build.project if self.build is not None else self.project
            _ = project.site, project.pin, project.tree
        except LessonError as exc:
            raise PluginError(f"{rel}:{self.using[uri]}: a lessonkit block needs what is missing here: {exc}") from None
        from lessonkit.pipeline.markdown import NoLinks

        links: object = NoLinks()  # a block links upstream, or into the source browser when the site has it
        if self.build is not None and self.features.source_browser:
            from lessonkit.build import SiteLinks

            links = SiteLinks(self.build, page.url, get_relative_url)
        self.current = PageContext(
            rel,
            line_offset(raw, markdown),
            [],
            links=links,
            source=raw,
            project=project,
        )
        return markdown

    def on_page_content(self, html: str, page: "Page", config: "MkDocsConfig", files: Files) -> str:
        uri = page.file.src_uri
        if uri in self.added and self.build is not None:  # a page of a feature: its slots filled
            self.build.page_done()
            html = self.build.page_html(uri, html, page.url, get_relative_url)
        if self.build is not None and page.present_anchor_ids is not None:
            # what the features' pages link to (source lines, blocks) is not seen by MkDocs' anchor
            # collector (the HTML stash, the slots): registered so that its link validation finds them
            page.present_anchor_ids |= self.build.anchor_ids(uri, html)
        if uri in self.added:
            return html
        ctx, self.current = self.current, SKIP
        if ctx.problems:
            for p in ctx.problems:
                log.error(str(p))
            raise PluginError(f"lessonkit: {len(ctx.problems)} problem(s) in {ctx.path}; see the lines above")
        return html

    def on_env(self, env, config: "MkDocsConfig", files: Files):
        """Every page's Markdown is rendered: the features' pages wait for the experiments, and
        the bundle is made (:meth:`lessonkit.build.Build.finish`)."""
        b = self.build
        if b is None:
            return env
        rendered = [(f.src_uri, f.page) for f in files.documentation_pages() if f.src_uri in self.added and f.page]
        try:
            data = b.finish(rendered)
        except LessonError as exc:
            raise PluginError(str(exc)) from None
        bundle = files.get_file_from_path(b.project.site.bundle)
        if self.features.bundle and bundle is not None:
            bundle.content_bytes = data
        return env

    def on_build_error(self, error: Exception) -> None:
        if self.build is not None:
            self.build.cancel()

    def on_post_build(self, config: "MkDocsConfig") -> None:
        """The problems of the features' pages, and the offline check of the written site."""
        b, self.build = self.build, None
        if b is not None:
            b.cancel()  # nothing of it keeps running (its experiments are in)
            if b.problems:
                raise Abort(
                    f"lessonkit: {len(b.problems)} problem(s) in the pages of its features; see the lines above"
                )
        if not self.features.offline_check:
            return
        from lessonkit.site.links import HINTS, check_site

        site = Path(config.site_dir)
        found = [p for p in check_site(site) if p.what == OTHER_HOST]
        for p in found:
            log.error(f"{site.name}/{p.page}: {p.what}: {p.target} — {HINTS[OTHER_HOST]} (offline_check)")
        if found:
            raise Abort(f"lessonkit: {len(found)} request(s) to another host in the written site (offline_check)")

    def on_post_page(self, output: str, page: "Page", config: "MkDocsConfig") -> str:
        uri = page.file.src_uri
        if uri in self.added and not self.site_style:  # a feature's page: the site-wide style, on it alone
            at = output.find("</head>")
            if at < 0:
                raise PluginError(f"{uri}: the theme wrote a page without </head>; no place for lessonkit's stylesheet")
            css, js = (get_relative_url(u, page.file.url) for u in (SITE_CSS, SITE_JS))
            return output[:at] + f'<link rel="stylesheet" href="{css}"><script src="{js}"></script>' + output[at:]
        if page.file.src_uri not in self.using or self.site_style:  # site_style: lessonkit.css styles blocks
            return output
        at = output.find("</head>")
        if at < 0:
            raise PluginError(
                f"{page.file.src_uri}: the theme wrote a page without </head>; no place for the blocks' stylesheet"
            )
        href = get_relative_url(STYLESHEET, page.file.url)
        return output[:at] + f'<link rel="stylesheet" href="{href}">' + output[at:]
