"""MkDocs hooks: translate MkDocs events into calls on one :class:`lessonkit.build.Build`.

Everything a build computes (the verified pages, the experiments, the generated pages,
the problems) lives in the Build, created in ``on_config``; these hooks only add files
to MkDocs' list, order them, hand each page to the Build, register anchors for MkDocs'
link validation, and turn lessonkit problems into MkDocs errors.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from mkdocs.exceptions import Abort, PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files, InclusionLevel
from mkdocs.utils import get_relative_url

from lessonkit import build as lk_build
from lessonkit import config as lk_config
from lessonkit.errors import LessonError

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.pages import Page

log = logging.getLogger("mkdocs.plugins.lessonkit")
BUILD: lk_build.Build | None = None  # the build in progress (replaced in on_config)


def on_startup(command: str, dirty: bool) -> None:
    # MkDocs re-executes this module on every serve reload but calls on_startup once.
    lk_build.COMMAND[0] = command


@event_priority(100)  # before the other plugins: the experiments start while they configure
def on_config(config: "MkDocsConfig") -> None:
    global BUILD
    try:
        lk_config.site_urls()  # SITE_URL, LESSONKIT_REPO_URL: http(s) addresses, or a located error
        lk_config.check_docs(Path(config.config_file_path).parent.resolve())  # before MkDocs walks docs/
        BUILD = b = lk_build.Build(
            Path(config.config_file_path).parent.resolve(), lk_build.COMMAND[0], log=log.error, log_info=log.info
        )
        tree = b.start()
        b.prestart()
    except LessonError as exc:
        raise PluginError(str(exc)) from None
    cached = " (build cache)" if tree.cached else ""
    log.info(f"lessonkit: pinned {b.project.pin.version} ({b.project.pin.short}) from {tree.provider}{cached}")
    plugin = config.plugins.get("mkdocstrings")  # the API reference reads the pinned tree
    if plugin is not None:
        plugin.config.setdefault("handlers", {}).setdefault("python", {})["paths"] = [str(tree.root)]
    config.mdx_configs.setdefault("lessonkit.mdext", {})["context"] = lambda: b.current


def _add(files: "Files", config, uri: str, content, in_nav: bool = False) -> None:
    existing = files.get_file_from_path(uri)
    if existing is not None:
        files.remove(existing)
    inclusion = InclusionLevel.INCLUDED if in_nav else InclusionLevel.NOT_IN_NAV
    files.append(File.generated(config, uri, content=content, inclusion=inclusion))


def on_files(files: "Files", config: "MkDocsConfig") -> "Files":
    paths = [Path(f.abs_src_path) for f in files.documentation_pages() if f.abs_src_path]
    api = files.get_file_from_path("api.md")
    try:
        plan = BUILD.plan(paths, Path(api.abs_src_path) if api is not None and api.abs_src_path else None)
    except LessonError as exc:  # unreadable pages
        for p in exc.problems:
            log.error(str(p))
        raise Abort(f"lessonkit: {len(exc.problems)} page(s) cannot be read; see the lines above") from None
    for g in plan.generated:
        _add(files, config, g.uri, g.content, in_nav=g.in_nav)
    for uri in plan.late:  # written once every experiment has run
        _add(files, config, uri, "", in_nav=True)
    _add(files, config, BUILD.project.site.bundle, b"")
    every = list(files)
    listed = [lk_build.PageFile(f.src_uri, f.abs_src_path) for f in every]
    files = Files(
        [every[n] for n in lk_build.render_order(listed, BUILD.project, plan.with_experiments, set(plan.late))]
    )
    BUILD.urls = {f.src_uri: f.url for f in files}
    return files


def on_page_markdown(markdown: str, page: "Page", config: "MkDocsConfig", files: "Files") -> str:
    links = lk_build.SiteLinks(BUILD, page.url, get_relative_url)
    try:
        return BUILD.page(page.file.src_uri, page.file.abs_src_path, markdown, links)
    except LessonError as exc:
        raise PluginError(str(exc)) from None


def on_page_content(html: str, page: "Page", config: "MkDocsConfig", files: "Files") -> str:
    BUILD.page_done()
    html = BUILD.page_html(page.file.src_uri, html, page.url, get_relative_url)
    # Rendered blocks reach the page through the HTML stash, where MkDocs' anchor
    # collector does not look: register their ids so links to them are validated.
    if page.present_anchor_ids is not None:
        page.present_anchor_ids |= BUILD.anchor_ids(page.file.src_uri, html)
    return html


def on_env(env, config: "MkDocsConfig", files: "Files"):
    """Every page has its Markdown rendered: finish the bundle and the tokens that name it."""
    rendered = [(f.src_uri, f.page) for f in files.documentation_pages() if f.page is not None]
    try:
        files.get_file_from_path(BUILD.project.site.bundle).content_bytes = BUILD.finish(rendered)
    except LessonError as exc:
        raise PluginError(str(exc)) from None
    return env


@event_priority(-100)  # after every plugin, the search index in particular, has read the page
def on_page_context(context, page: "Page", config: "MkDocsConfig", nav):
    deferred = BUILD.deferred.pop(page.file.src_uri, None)
    if deferred is not None and deferred.html:
        page.content, missing = deferred.fill(page.content)
        if missing:  # another plugin rewrote the page between on_page_content and here
            raise PluginError(
                f"docs/{page.file.src_uri}: {len(missing)} highlighted code block(s) could not be "
                "put back into the page — a plugin changed the page HTML after lessonkit"
            )
    return context


def on_build_error(error: Exception) -> None:
    """A build that stops early leaves nothing running behind it (serve goes on to the next)."""
    if BUILD is not None:
        BUILD.cancel()


def on_post_build(config: "MkDocsConfig") -> None:
    BUILD.check_links(Path(config.site_dir))
    if BUILD.problems:
        raise Abort(f"lessonkit: {len(BUILD.problems)} annotation problem(s); see the lines above")
