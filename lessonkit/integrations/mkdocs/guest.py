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

A guest may turn on the course's site-wide stylesheet and script alone (``site_style: true``,
:data:`SITE_STYLE`): every page then links them, and blocks are styled by them. The rest of the
course (the source browser, symbol index, bundle, acceptance page, the link check …) is
``course: true`` (:mod:`lessonkit.integrations.mkdocs.plugin`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files, InclusionLevel
from mkdocs.utils import get_relative_url

from lessonkit.errors import LessonError
from lessonkit.pipeline.markdown import PageContext

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.pages import Page

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


def first_block(text: str, path: str, kinds: "Registry") -> int | None:
    """The line of a page's first annotation block (well formed or not) or known inline reference;
    None: the page uses neither."""
    from lessonkit.pipeline.parse import BrokenBlock, parse_page

    if not any(mark in text for mark in ("```", "~~~", "[[")):
        return None
    page = parse_page(text, path, kinds=kinds)
    lines = [i.error.problems[0].line if isinstance(i, BrokenBlock) else i.line for i in page.items]
    lines += [i.index + 1 for i in page.inline]
    return min((n or 1 for n in lines), default=None)


class Guest:
    """The events of one guest build (a new one for every ``on_config``)."""

    def __init__(self, config: "MkDocsConfig", site_style: bool = False):
        self.root = Path(config.config_file_path).parent.resolve()
        self.site_style = site_style  # lessonkit's stylesheet and script on every page (SITE_STYLE)
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
        if self.site_style:
            for uri, path in SITE_STYLE.items():
                if files.get_file_from_path(uri) is not None:
                    raise PluginError(
                        f"{uri}: the site has a file where lessonkit puts its site-wide style (site_style) — "
                        "rename that file"
                    )
                files.append(File.generated(config, uri, abs_src_path=str(path), inclusion=InclusionLevel.NOT_IN_NAV))
        elif self.using:
            if files.get_file_from_path(STYLESHEET) is not None:
                raise PluginError(
                    f"{STYLESHEET}: the site has a file where lessonkit puts the stylesheet of its blocks — "
                    "rename that file"
                )
            css = BLOCKS_CSS.read_bytes()
            files.append(File.generated(config, STYLESHEET, content=css, inclusion=InclusionLevel.NOT_IN_NAV))
        return files

    def on_page_markdown(self, markdown: str, page: "Page", config: "MkDocsConfig", files: Files) -> str:
        uri = page.file.src_uri
        if uri not in self.using or not page.file.abs_src_path:
            self.current = SKIP
            return markdown
        from lessonkit.build import line_offset

        raw = page.file.content_string
        rel = self._rel(page.file.abs_src_path)
        try:  # what every block needs: the cache folder, the series' settings, the pin, the pinned tree
            project = self.project
            project.site
            project.pin
            project.tree
        except LessonError as exc:
            raise PluginError(f"{rel}:{self.using[uri]}: a lessonkit block needs what is missing here: {exc}") from None
        self.current = PageContext(
            rel,
            line_offset(raw, markdown),
            [],
            source=raw,
            project=project,
        )
        return markdown

    def on_page_content(self, html: str, page: "Page", config: "MkDocsConfig", files: Files) -> str:
        ctx, self.current = self.current, SKIP
        if ctx.problems:
            for p in ctx.problems:
                log.error(str(p))
            raise PluginError(f"lessonkit: {len(ctx.problems)} problem(s) in {ctx.path}; see the lines above")
        return html

    def on_post_page(self, output: str, page: "Page", config: "MkDocsConfig") -> str:
        if page.file.src_uri not in self.using or self.site_style:  # site_style: lessonkit.css styles blocks
            return output
        at = output.find("</head>")
        if at < 0:
            raise PluginError(
                f"{page.file.src_uri}: the theme wrote a page without </head>; no place for the blocks' stylesheet"
            )
        href = get_relative_url(STYLESHEET, page.file.url)
        return output[:at] + f'<link rel="stylesheet" href="{href}">' + output[at:]
