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
import os
import re
import secrets
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mkdocs.exceptions import Abort, PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, InclusionLevel
from mkdocs.utils import get_relative_url

from lessonkit import attachments, execute, mathml, mdext, site, store, verify
from lessonkit.errors import LessonError, Problem
from lessonkit.pyindex import SourceFile
from lessonkit.render import Deferred

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files
    from mkdocs.structure.pages import Page

log = logging.getLogger("mkdocs.plugins.lessonkit")
_ID = re.compile(r'\sid="([^"]+)"')
NO_SEARCH = "---\nsearch:\n  exclude: true\n---\n\n"  # whole files stay out of the search index
CODE_MARK = '<div class="lk-code-slot"></div>'
CITED_MARK = '<div class="lk-cited-slot"></div>'
SYMBOLS_MARK = '<div class="lk-symbols-slot"></div>'


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
    bundle: dict = field(default_factory=dict)
    nonce: str = field(default_factory=lambda: secrets.token_hex(4))
    deferred: dict = field(default_factory=dict)  # src_uri -> Deferred (filled after the search index)


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
    unreadable = []
    for page in pages:  # MkDocs would decode them itself and print a traceback for non-UTF-8
        try:
            project.read_page(page)
        except LessonError as exc:
            unreadable += exc.problems
    if unreadable:
        for p in unreadable:
            log.error(str(p))
        raise Abort(f"lessonkit: {len(unreadable)} page(s) cannot be read; see the lines above")
    report = verify.check(project, pages)  # the same map that `nox -s verify` checks
    jobs = [r.job for rs in report.resolved.values() for r in rs if r.job]
    jobs += [_script_job(project, name) for name in DIAGRAM_SOURCES.values() if (project.root / name).is_file()]
    results = project.runner.run_all(jobs)
    ran = [r for r in results.values() if not r.cached]
    log.info(f"lessonkit: {len(results)} experiment(s): {len(ran)} run "
             f"({sum(r.cpu_seconds for r in ran):.1f} s CPU), {len(results) - len(ran)} from cache, "
             f"{time.perf_counter() - t0:.1f} s wall")
    texts = {project.rel(p): p.read_text(encoding="utf-8", errors="replace") for p in pages}
    STATE.citations = site.citations(report, "docs/", texts)
    _generate(files, config, project)
    _attachments(files, config, project, report, results, texts)
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
        has_symbols = file.endswith(".py")
        md = (NO_SEARCH + f"# {file}\n\n固定版本 autograd {project.pin.version}（`{project.pin.short}`）中的完整文件，"
              f"共 {len(sf.lines)} 行。行号即真实行号，可用 `#L行号` 或 `#L起-L止` 直接链接；"
              f"[在 GitHub 上查看]({project.pin.permalink(file, 1, len(sf.lines)).rsplit('#', 1)[0]})。\n\n"
              f"## 被课程引用的范围 {{#cited}}\n\n{CITED_MARK}\n\n"
              + (f"## 顶层符号 {{#symbols}}\n\n{SYMBOLS_MARK}\n\n" if has_symbols else "")
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
        md = (NO_SEARCH + f"# {file}\n\n本仓库中的文件（不是 HIPS/autograd 源码），共 {len(sf.lines)} 行。\n\n"
              + (f"## 使用它的实验块 {{#used-by}}\n\n{used}\n\n" if used else "")
              + (f"## 被课程引用的范围 {{#cited}}\n\n{CITED_MARK}\n\n" if own else "")
              + f"## 代码 {{#code}}\n\n{CODE_MARK}\n")
        _add(files, config, uri, md)
        STATE.generated[uri] = ("repo", file)
    _add(files, config, "symbols.md",
         "# 符号索引\n\n每个被课程引用的符号，按文件分组，并列出引用它的块。本页由构建从与 "
         "`nox -s verify` 相同的摘录映射生成。\n\n" + site.symbol_index(cites, lambda uri: uri), in_nav=True)


DIAGRAM_SOURCES = {"calls": "experiments/debug_walkthrough.py", "nesting": "experiments/higher_order.py"}


def _script_job(project, rel: str) -> execute.Job:
    return execute.Job(Path(rel).name, (project.root / rel).read_bytes(), execute.DEFAULT_TIMEOUT, rel)


def _output(project, results, rel: str) -> execute.Result:
    res = results.get(project.runner.key(_script_job(project, rel)))
    if res is None or not res.ok:
        raise PluginError(f"{rel}: the diagram source experiment did not run successfully")
    return res


BUNDLE_README = """# autograd-resources

《Autograd 源码学习》的配套资源包，由站点构建生成（固定版本 autograd {version}，commit {commit}）。

## 内容

- `experiments/`：各课的实验脚本与源码级调试脚本（与仓库中的文件逐字节相同）；
- `mini-autograd/`：Mini 标量反向模式引擎、demo 与测试；
- `attachments/`：附件的纯文本版本。

## 运行

需要 Python 3.11+。在空目录中解压后：

    python -m pip install numpy "autograd=={version}" pytest
    python -B experiments/multiple_paths.py
    python -B mini-autograd/demo.py
    python -m pytest -q mini-autograd

每个实验运行时首先打印它导入的 autograd 来自哪里。默认使用已安装的 autograd；
若要针对某个源码检出运行，把检出目录同时放进 PYTHONPATH 与 AUTOGRAD_PINNED_ROOT：

    PYTHONPATH=/path/to/autograd AUTOGRAD_PINNED_ROOT=/path/to/autograd AUTOGRAD_PINNED_VERSION={version} \\
        python -B experiments/lesson01_ad_and_graph.py

站点上显示的输出来自站点构建时针对固定源码树的运行；在其他 Python / NumPy 版本下，浮点末位可能不同。
"""


def _attachments(files, config, project, report, results, texts) -> None:
    generated = {"attachments/acceptance.md": attachments.acceptance(project, report, results)}
    if (project.sourcemap / "roles.toml").is_file():
        generated["attachments/repo-map.md"] = attachments.repo_map(project)
    if all((project.root / rel).is_file() for rel in DIAGRAM_SOURCES.values()):
        generated.update(_diagrams(project, results))
    readme = project.root / "mini-autograd" / "README.md"
    if readme.exists():
        generated["attachments/mini-readme.md"] = (
            "# Mini Autograd 说明\n\n以下是仓库中 `mini-autograd/README.md` 的原文。"
            "Mini 的代码见 [mini_autograd.py](../code/mini-autograd/mini_autograd.py.md)，"
            "与 HIPS 的对读见 [第 14 课](../lessons/14-mini-autograd.md)。\n\n---\n\n"
            + re.sub(r"^#\s", "## ", readme.read_text(encoding="utf-8"), count=1))
    for uri, content in generated.items():
        if not uri.startswith("_"):
            _add(files, config, uri, content, in_nav=True)
    _bundle(files, config, project, results, texts, generated)


def _diagrams(project, results) -> dict[str, str]:
    calls = _output(project, results, DIAGRAM_SOURCES["calls"])
    nesting = _output(project, results, DIAGRAM_SOURCES["nesting"])
    levels = attachments.parse_nesting(nesting.stdout)
    call_list = attachments.parse_calls(calls.stdout)
    return {
        "attachments/call-sequence.md": (
            "# grad 完整调用时序图\n\n下图画的是 `grad(lambda x: x * x)(3.0)` 在固定版本 autograd 中的真实调用序列。"
            "数据来自本次构建运行 [`experiments/debug_walkthrough.py`](../code/experiments/debug_walkthrough.py.md) "
            f"时打印的 `CALL:` 行（输出 sha256 前 16 位 `{calls.digest[:16]}`），因此图不会与代码脱节。"
            "为了可读，图中省略了生成器表达式、列表推导和 lambda 的帧，并只画到第 9 层调用；"
            "完整的调用树见[源码级调试](../walkthrough.md)。每条竖线是一个模块，箭头从调用者指向被调用者。\n\n"
            f'<div class="lk-diagram-wrap">{attachments.sequence_svg(call_list)}</div>\n'),
        "attachments/nested-traces.md": (
            "# Nested Traces 图\n\n`grad(grad(grad(f)))` 求三阶导数时，`f` 内部看到的 `x` 是一层套一层的 Box。"
            "下图由本次构建运行 [`experiments/higher_order.py`](../code/experiments/higher_order.py.md) 时打印的 "
            f"`NESTING:` 行画出（本次为 `{' '.join(map(str, levels))}`），最外层是最后进入的 trace。"
            "每一层的 `_trace` 编号由 `TraceStack.new_trace` 分配；`find_top_boxed_args` 总是先处理编号最大的那一层。"
            "详细讨论见 [第 10 课](../lessons/10-higher-order.md)。\n\n"
            f'<div class="lk-diagram-wrap">{attachments.nesting_svg(levels)}</div>\n'),
        "_calls": "\n".join(l for l in calls.stdout.splitlines() if l.startswith("CALL: ")) + "\n",
    }


def _bundle(files, config, project, results, texts, generated) -> None:
    """Byte-identical scripts, plain-text attachments, in a reproducible zip."""
    entries: dict[str, bytes] = {}
    for d in ("experiments", "mini-autograd"):
        for p in sorted((project.root / d).rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts and p.suffix in (".py", ".md"):
                entries[p.relative_to(project.root).as_posix()] = p.read_bytes()
    for page, text in sorted(texts.items()):
        if page.startswith("docs/attachments/") or page == "docs/walkthrough.md":
            name = "attachments/" + Path(page).name
            entries[name] = attachments.plain_markdown(project, text, page, results).encode()
    for uri, content in generated.items():
        if uri == "_calls":
            entries["attachments/call-sequence.txt"] = content.encode()
        else:
            entries.setdefault("attachments/" + Path(uri).name, content.encode())
    entries["README.md"] = BUNDLE_README.format(version=project.pin.version, commit=project.pin.commit).encode()
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    data = attachments.zip_bytes(entries, epoch)
    _add(files, config, "downloads/autograd-resources.zip", data)
    STATE.tokens["bundle-sha256"] = attachments.sha256(data)
    STATE.tokens["bundle-size"] = f"{len(data) / 1024:.1f} KiB"
    STATE.bundle = entries


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
    deferred = STATE.deferred[page.file.src_uri] = Deferred(STATE.nonce, {})
    ctx = mdext.PageContext(rel, _offset(raw, markdown), problems, links=_Links(page.url),
                            root=str(STATE.root), source=raw, deferred=deferred)
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
    """Fill a generated source or script page: tables and code are HTML built here, not
    Markdown; the result is cached by everything it shows (file bytes, citations, links)."""
    project = _project()
    sf = project.pinned.file(file) if origin == "pinned" else \
        (project.repo.file(file) if file.startswith(project.repo.prefixes) else project.scripts.file(file))
    own = [c for c in STATE.citations if c.origin == origin and c.file == file]
    hrefs = {c: get_relative_url(STATE.urls[c.page], page.url) + f"#{c.anchor}" for c in own}

    def fill() -> str:
        out = html.replace(CITED_MARK, site.cites_table_html(own, hrefs.__getitem__))
        out = out.replace(SYMBOLS_MARK, site.symbol_table_html(sf))
        return out.replace(CODE_MARK, site.code_html(sf, own, hrefs.__getitem__, site.symbol_lines(sf),
                                                     cache=project.cache))

    key = store.digest("code-page", site.FORMAT, sys.version, mdext.tools(), html, sf.rel, sf.data,
                       repr([(c, hrefs[c]) for c in own]))
    return store.Store(project.cache, "pages").get_or_make(key, fill)


def on_post_build(config: "MkDocsConfig") -> None:
    from lessonkit.linkcheck import check_site

    if STATE.command != "build":  # serve: keep rebuilds fast; `nox -s build` checks every link
        return
    for p in check_site(Path(config.site_dir), cache=_project().cache):
        log.error(str(p))
        STATE.problems.append(p)
    if STATE.problems:
        raise Abort(f"lessonkit: {len(STATE.problems)} annotation problem(s); see the lines above")
