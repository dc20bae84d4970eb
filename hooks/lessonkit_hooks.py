"""MkDocs hooks: a thin adapter between MkDocs events and lessonkit.

Rendering of annotation blocks lives in the ``lessonkit.mdext`` Markdown
extension and the cross-link data in ``lessonkit.site``; these hooks only reset
state per build, provide the pinned tree once, run the experiments in parallel
before any page renders, add the generated pages (source browser, script pages,
symbol index, attachments, bundle), give the extension each page's path, line
offset and link targets, and turn lessonkit errors into one-line MkDocs errors.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mkdocs.exceptions import Abort, PluginError
from mkdocs.structure.files import File, InclusionLevel
from mkdocs.utils import get_relative_url

from lessonkit import mdext, site, verify
from lessonkit.errors import LessonError, Problem

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files
    from mkdocs.structure.pages import Page

log = logging.getLogger("mkdocs.plugins.lessonkit")
_ID = re.compile(r'\sid="([^"]+)"')
CODE_MARK = '<div class="lk-code-slot"></div>'


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


STATE = _State()


def _project():
    return mdext.get_project(STATE.root)


def on_startup(command: str, dirty: bool) -> None:
    STATE.command = command


def on_config(config: "MkDocsConfig") -> None:
    mdext.reset()
    STATE.__init__(command=STATE.command, root=Path(config.config_file_path).parent.resolve())
    try:
        project = _project()
        tree = project.tree  # provided and checked against the manifest, once per build
    except LessonError as exc:
        raise PluginError(str(exc)) from None
    log.info(f"lessonkit: autograd {project.pin.version} ({project.pin.short}) from {tree.provider}")
    _point_mkdocstrings_at(config, tree.root)
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


def _add(files: "Files", config, uri: str, content: str, in_nav: bool = False) -> None:
    existing = files.get_file_from_path(uri)
    if existing is not None:
        files.remove(existing)
    files.append(File.generated(config, uri, content=content,
                                inclusion=InclusionLevel.INCLUDED if in_nav else InclusionLevel.NOT_IN_NAV))


def on_files(files: "Files", config: "MkDocsConfig") -> "Files":
    project = _project()
    t0 = time.perf_counter()
    pages = [Path(f.abs_src_path) for f in files.documentation_pages() if f.abs_src_path]
    report = verify.check(project, pages)  # the same map that `nox -s verify` checks
    jobs = [r.job for rs in report.resolved.values() for r in rs if r.job]
    if jobs:
        results = project.runner.run_all(jobs)
        ran = [r for r in results.values() if not r.cached]
        log.info(f"lessonkit: {len(results)} experiment(s): {len(ran)} run "
                 f"({sum(r.cpu_seconds for r in ran):.1f} s CPU), {len(results) - len(ran)} from cache, "
                 f"{time.perf_counter() - t0:.1f} s wall")
    texts = {project.rel(p): p.read_text(encoding="utf-8", errors="replace") for p in pages}
    STATE.citations = site.citations(report, "docs/", texts)
    _generate(files, config, project)
    STATE.urls = {f.src_uri: f.url for f in files}
    api = files.get_file_from_path("api.md")
    if api is not None and api.abs_src_path:
        STATE.api = set(API_ENTRY.findall(Path(api.abs_src_path).read_text(encoding="utf-8")))
    return files


def _generate(files, config, project) -> None:
    cites = STATE.citations
    pinned_files = sorted(p for p in project.pin.manifest if p.startswith("autograd/") and p.endswith(".py"))
    pinned_files = sorted(set(pinned_files) | {c.file for c in cites if c.origin == "pinned"})
    repo_files = sorted({p.relative_to(project.root).as_posix()
                         for d in ("experiments", "mini-autograd") for p in (project.root / d).rglob("*.py")
                         if "__pycache__" not in p.parts} | {c.file for c in cites if c.origin == "repo"})
    index_rows = []
    for file in pinned_files:
        uri = site.source_uri(file)
        own = [c for c in cites if c.origin == "pinned" and c.file == file]
        sf = project.pinned.file(file)
        table, _ = site.symbol_table(sf)
        depth = uri.count("/")
        back = lambda c, d=depth: "../" * d + c.target
        md = (f"# {file}\n\n固定版本 autograd {project.pin.version}（`{project.pin.short}`）中的完整文件，"
              f"共 {len(sf.lines)} 行。行号即真实行号，可用 `#L行号` 或 `#L起-L止` 直接链接；"
              f"[在 GitHub 上查看]({project.pin.permalink(file, 1, len(sf.lines)).rsplit('#', 1)[0]})。\n\n"
              f"## 被课程引用的范围 {{#cited}}\n\n{site.cites_table(own, back)}\n"
              + (f"## 顶层符号 {{#symbols}}\n\n{table}\n" if table else "")
              + f"## 源码 {{#code}}\n\n{CODE_MARK}\n")
        _add(files, config, uri, md)
        STATE.generated[uri] = ("pinned", file)
        index_rows.append(f"| [`{file}`]({file}.md) | {len(sf.lines)} | {len(own)} |")
    _add(files, config, f"{site.SOURCE_DIR}/index.md",
         "# 源码浏览\n\n固定版本中 `autograd/` 包的每个 Python 文件都有一页：完整高亮、真实行号、"
         "每行一个锚点，并标出课程引用过的范围及其反向链接。\n\n| 文件 | 行数 | 被引用次数 |\n|---|---|---|\n"
         + "\n".join(index_rows) + "\n", in_nav=True)
    for file in repo_files:
        uri = site.code_uri(file)
        own = [c for c in cites if c.origin == "repo" and c.file == file]
        users = sorted({(c.page, c.label, c.anchor) for c in cites if c.kind == "experiment" and c.file == file})
        depth = uri.count("/")
        used = "\n".join(f"- [{label} · {anchor}]({'../' * depth}{page}#{anchor})" for page, label, anchor in users)
        sf = project.repo.file(file) if file.startswith(project.repo.prefixes) else project.scripts.file(file)
        md = (f"# {file}\n\n本仓库中的文件（不是 HIPS/autograd 源码），共 {len(sf.lines)} 行。\n\n"
              + (f"## 使用它的实验块 {{#used-by}}\n\n{used}\n\n" if used else "")
              + (f"## 被课程引用的范围 {{#cited}}\n\n{site.cites_table(own, lambda c, d=depth: '../' * d + c.target)}\n"
                 if own else "")
              + f"## 代码 {{#code}}\n\n{CODE_MARK}\n")
        _add(files, config, uri, md)
        STATE.generated[uri] = ("repo", file)
    _add(files, config, "symbols.md",
         "# 符号索引\n\n每个被课程引用的符号，按文件分组，并列出引用它的块。本页由构建从与 "
         "`nox -s verify` 相同的摘录映射生成。\n\n" + site.symbol_index(cites, lambda uri: uri), in_nav=True)


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
    raw = markdown
    if src:
        try:
            raw = project.read_page(Path(src))
        except LessonError as exc:
            problems += exc.problems
    rel = project.rel(src) if src else f"docs/{page.file.src_uri}"
    ctx = mdext.PageContext(rel, _offset(raw, markdown), problems, links=_Links(page.url),
                            root=str(STATE.root), source=raw)
    STATE.token = mdext.CURRENT.set(ctx)
    for key, value in STATE.tokens.items():
        markdown = markdown.replace(f"[[lessonkit:{key}]]", value)
    if page.file.src_uri.startswith("lessons/"):
        own = [c for c in STATE.citations if c.page == page.file.src_uri]
        depth = page.file.src_uri.count("/")
        markdown += site.cited_list(own, lambda uri: "../" * depth + uri)
    return markdown


def on_page_content(html: str, page: "Page", config: "MkDocsConfig", files: "Files") -> str:
    ctx = mdext.CURRENT.get()
    if STATE.token is not None:
        mdext.CURRENT.reset(STATE.token)
        STATE.token = None
    gen = STATE.generated.get(page.file.src_uri)
    if gen and CODE_MARK in html:
        html = html.replace(CODE_MARK, _code_page_html(page, *gen))
    for p in (ctx.problems if ctx else []):
        log.error(str(p))
        STATE.problems.append(p)
    # Rendered blocks reach the page through the HTML stash, where MkDocs' anchor
    # collector does not look: register their ids so links to them are validated.
    if page.present_anchor_ids is not None:
        page.present_anchor_ids |= set(_ID.findall(html))
    return html


def _code_page_html(page, origin: str, file: str) -> str:
    project = _project()
    sf = project.pinned.file(file) if origin == "pinned" else \
        (project.repo.file(file) if file.startswith(project.repo.prefixes) else project.scripts.file(file))
    own = [c for c in STATE.citations if c.origin == origin and c.file == file]
    _, by_line = site.symbol_table(sf)

    def href(c):
        return get_relative_url(STATE.urls[c.page], page.url) + f"#{c.anchor}"

    return site.code_html(sf, own, href, by_line)


def on_post_build(config: "MkDocsConfig") -> None:
    if STATE.problems and STATE.command == "build":
        raise Abort(f"lessonkit: {len(STATE.problems)} annotation problem(s); see the lines above")
