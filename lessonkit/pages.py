"""The pages the build adds to the site, independent of MkDocs.

* the source browser: one page per Python file of the pinned ``autograd/`` package,
  plus an index, and one page per script of this repository (experiments, Mini);
* the symbol index;
* the generated attachments (repository map, acceptance record, the two diagrams
  drawn from experiment output, Mini's README);
* the downloadable bundle.

Source and script pages are Markdown with *slots* (``CITED_MARK`` and friends) that
:func:`fill_code_page` fills with HTML once the page's URL is known: tables and
highlighted code are built directly, never through Markdown, and cached by
everything they show.
"""

from __future__ import annotations

import os
import re
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from . import attachments, execute, sandbox, site
from .errors import LessonError
from .project import Project
from .store import Store, digest
from .verify import Report

NO_SEARCH = "---\nsearch:\n  exclude: true\n---\n\n"  # whole pages stay out of the search index
CODE_MARK = '<div class="lk-code-slot"></div>'
CITED_MARK = '<div class="lk-cited-slot"></div>'
SYMBOLS_MARK = '<div class="lk-symbols-slot"></div>'
DIAGRAM_SOURCES = {"calls": "experiments/debug_walkthrough.py", "nesting": "experiments/higher_order.py"}
BUNDLE = "downloads/autograd-resources.zip"


@dataclass(frozen=True)
class Generated:
    uri: str  # docs-relative, e.g. source/autograd/core.py.md
    content: str | bytes
    in_nav: bool = False
    code: tuple[str, str] | None = None  # ("pinned" | "repo", file) when the page has slots to fill


# ---------------------------------------------------------------- source browser and symbol index

def browser_pages(project: Project, cites: list[site.Citation]) -> list[Generated]:
    pinned_files = {p for p in project.pin.manifest if p.startswith("autograd/") and p.endswith(".py")}
    pinned_files = sorted(pinned_files | {c.file for c in cites if c.origin == "pinned"})
    repo_files = sorted({p.relative_to(project.root).as_posix()
                         for d in ("experiments", "mini-autograd") for p in (project.root / d).rglob("*.py")
                         if "__pycache__" not in p.parts} | {c.file for c in cites if c.origin == "repo"})
    out, index_rows = [], []
    for file in pinned_files:
        own = [c for c in cites if c.origin == "pinned" and c.file == file]
        sf = project.pinned.file(file)
        md = (NO_SEARCH + f"# {file}\n\n固定版本 autograd {project.pin.version}（`{project.pin.short}`）中的完整文件，"
              f"共 {len(sf.lines)} 行。行号即真实行号，可用 `#L行号` 或 `#L起-L止` 直接链接；"
              f"[在 GitHub 上查看]({project.pin.permalink(file, 1, len(sf.lines)).rsplit('#', 1)[0]})。\n\n"
              f"## 被课程引用的范围 {{#cited}}\n\n{CITED_MARK}\n\n"
              + (f"## 顶层符号 {{#symbols}}\n\n{SYMBOLS_MARK}\n\n" if file.endswith(".py") else "")
              + f"## 源码 {{#code}}\n\n{CODE_MARK}\n")
        out.append(Generated(site.source_uri(file), md, code=("pinned", file)))
        index_rows.append(f"| [`{file}`]({file}.md) | {len(sf.lines)} | {len(own)} |")
    out.append(Generated(
        f"{site.SOURCE_DIR}/index.md",
        "# 源码浏览\n\n固定版本中 `autograd/` 包的每个 Python 文件都有一页：完整高亮、真实行号、"
        "每行一个锚点，并标出课程引用过的范围及其反向链接。\n\n| 文件 | 行数 | 被引用次数 |\n|---|---|---|\n"
        + "\n".join(index_rows) + "\n", in_nav=True))
    for file in repo_files:
        uri = site.code_uri(file)
        own = [c for c in cites if c.origin == "repo" and c.file == file]
        users = sorted({(c.page, c.label, c.anchor) for c in cites if c.kind == "experiment" and c.file == file})
        up = "../" * uri.count("/")
        used = "\n".join(f"- [{label} · {anchor}]({up}{page}#{anchor})" for page, label, anchor in users)
        sf = repo_file(project, file)
        md = (NO_SEARCH + f"# {file}\n\n本仓库中的文件（不是 HIPS/autograd 源码），共 {len(sf.lines)} 行。\n\n"
              + (f"## 使用它的实验块 {{#used-by}}\n\n{used}\n\n" if used else "")
              + (f"## 被课程引用的范围 {{#cited}}\n\n{CITED_MARK}\n\n" if own else "")
              + f"## 代码 {{#code}}\n\n{CODE_MARK}\n")
        out.append(Generated(uri, md, code=("repo", file)))
    out.append(Generated(
        "symbols.md",
        "# 符号索引\n\n每个被课程引用的符号，按文件分组，并列出引用它的块。本页由构建从与 "
        "`nox -s verify` 相同的摘录映射生成。\n\n" + site.symbol_index(cites, lambda uri: uri), in_nav=True))
    return out


def repo_file(project: Project, file: str):
    return project.repo.file(file) if file.startswith(project.repo.prefixes) else project.scripts.file(file)


def code_file(project: Project, origin: str, file: str):
    return project.pinned.file(file) if origin == "pinned" else repo_file(project, file)


@dataclass(frozen=True)
class Prewarm:
    """Work a build hands to another process: its results land in the content-keyed caches."""

    code: list[tuple[str, int, str]]  # (text, first line, anchor) of blocks, in render order
    pages: list[str]  # project-relative pages whose formulas to convert


def prewarm_plan(report: Report, pages: list[str]) -> Prewarm:
    from .render import anchors, code_of

    code = [(*code_of(r), anchor) for page in pages for r, anchor in
            zip(report.resolved.get(page, []), anchors(report.resolved.get(page, [])))]
    return Prewarm(code, pages)


def prewarm(project: Project, plan: Prewarm) -> None:
    """Highlight the blocks' code, convert the pages' formulas, and index every pinned
    Python file's symbols, into the caches the build reads."""
    from markdown import Markdown

    from . import mathml
    from .mdext import make_renderer
    from .pyindex import SourceFile
    from .render import NoLinks

    SourceFile.store = Store(project.cache, "symbols")
    mathml.STORE = Store(project.cache, "mathml")
    renderer = make_renderer(Markdown(), project, NoLinks())
    for text, start, anchor in plan.code:
        renderer.code(text, start, anchor)
    for page in plan.pages:
        mathml.prewarm((project.root / page).read_text(encoding="utf-8"))
    for rel in sorted(project.pin.manifest):
        if rel.endswith(".py"):
            try:
                project.pinned.file(rel).definitions
            except LessonError:
                pass


def _prewarm_worker(root: str, cache: str, plan: Prewarm) -> None:
    sandbox.die_with_parent()  # a build killed by a signal leaves no prewarm behind
    try:
        prewarm(Project(Path(root), cache=Path(cache)), plan)
    except LessonError:
        pass  # the build itself reports it; the prewarm only fills caches


def start_prewarm(project: Project, plan: Prewarm):  # -> multiprocessing.Process | None
    """:func:`prewarm` in a new process, while the build's own process renders other pages.
    Its results reach the build only through the content-keyed caches, so a failed or
    slow prewarm only costs time."""
    import multiprocessing

    proc = multiprocessing.get_context("spawn").Process(
        target=_prewarm_worker, args=(str(project.root), str(project.cache), plan), daemon=True,
        name="lessonkit-prewarm")
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})  # a started child or none
    try:
        proc.start()
    except OSError:  # no processes to spare: the build does the work itself
        return None
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    return proc


def fill_code_page(project: Project, html: str, origin: str, file: str, cites: list[site.Citation],
                   href: Callable[[site.Citation], str]) -> str:
    """``html`` (a rendered source or script page) with its slots filled: the cited ranges,
    the symbol table and the whole file, highlighted. Cached by all of its inputs."""
    from .mdext import tools

    sf = code_file(project, origin, file)
    own = [c for c in cites if c.origin == origin and c.file == file]
    hrefs = {c: href(c) for c in own}

    def fill() -> str:
        out = html.replace(CITED_MARK, site.cites_table_html(own, hrefs.__getitem__))
        out = out.replace(SYMBOLS_MARK, site.symbol_table_html(sf))
        return out.replace(CODE_MARK, site.code_html(sf, own, hrefs.__getitem__, site.symbol_lines(sf),
                                                     cache=project.cache))

    key = digest("code-page", site.FORMAT, sys.version, tools(), html, sf.rel, sf.data,
                 repr([(c, hrefs[c]) for c in own]))
    return Store(project.cache, "pages").get_or_make(key, fill)


# ---------------------------------------------------------------- attachments drawn from the build

def script_job(project: Project, rel: str) -> execute.Job:
    """The job that runs a whole script (the diagrams' data sources)."""
    return execute.Job(Path(rel).name, (project.root / rel).read_bytes(), execute.DEFAULT_TIMEOUT, rel)


def diagram_jobs(project: Project) -> list[execute.Job]:
    return [script_job(project, rel) for rel in DIAGRAM_SOURCES.values()] if _has_diagram_sources(project) else []


def _output(project: Project, results: dict, rel: str) -> execute.Result:
    res = results.get(project.runner.key(script_job(project, rel)))
    if res is None or not res.ok:
        raise LessonError("the diagram source experiment did not run successfully", path=rel,
                          hint="run it with `nox -s experiment -- " + rel + "` to see its error")
    return res


ATTACHMENTS = ("attachments/acceptance.md", "attachments/repo-map.md", "attachments/call-sequence.md",
               "attachments/nested-traces.md", "attachments/mini-readme.md")


def attachment_uris(project: Project) -> list[str]:
    """The generated attachments this project has (known before any experiment runs)."""
    has = {"attachments/acceptance.md": True,
           "attachments/repo-map.md": (project.sourcemap / "roles.toml").is_file(),
           "attachments/call-sequence.md": _has_diagram_sources(project),
           "attachments/nested-traces.md": _has_diagram_sources(project),
           "attachments/mini-readme.md": (project.root / "mini-autograd" / "README.md").is_file()}
    return [uri for uri in ATTACHMENTS if has[uri]]


def _has_diagram_sources(project: Project) -> bool:
    return all((project.root / rel).is_file() for rel in DIAGRAM_SOURCES.values())


def attachment_pages(project: Project, report: Report, results: dict) -> tuple[list[Generated], str | None]:
    """The generated attachments, and the call list behind the sequence diagram (or None)."""
    uris = attachment_uris(project)
    out = [Generated("attachments/acceptance.md", attachments.acceptance(project, report, results), in_nav=True)]
    if "attachments/repo-map.md" in uris:
        out.append(Generated("attachments/repo-map.md", attachments.repo_map(project), in_nav=True))
    calls_text = None
    if "attachments/call-sequence.md" in uris:
        diagrams, calls_text = _diagrams(project, results)
        out += diagrams
    if "attachments/mini-readme.md" in uris:
        readme = project.root / "mini-autograd" / "README.md"
        out.append(Generated("attachments/mini-readme.md", (
            "# Mini Autograd 说明\n\n以下是仓库中 `mini-autograd/README.md` 的原文。"
            "Mini 的代码见 [mini_autograd.py](../code/mini-autograd/mini_autograd.py.md)，"
            "与 HIPS 的对读见 [第 14 课](../lessons/14-mini-autograd.md)。\n\n---\n\n"
            + re.sub(r"^#\s", "## ", readme.read_text(encoding="utf-8"), count=1)), in_nav=True))
    return out, calls_text


def _diagrams(project: Project, results: dict) -> tuple[list[Generated], str]:
    calls = _output(project, results, DIAGRAM_SOURCES["calls"])
    nesting = _output(project, results, DIAGRAM_SOURCES["nesting"])
    levels = attachments.parse_nesting(nesting.stdout)
    call_list = attachments.parse_calls(calls.stdout)
    pages = [
        Generated("attachments/call-sequence.md", (
            "# grad 完整调用时序图\n\n下图画的是 `grad(lambda x: x * x)(3.0)` 在固定版本 autograd 中的真实调用序列。"
            "数据来自本次构建运行 [`experiments/debug_walkthrough.py`](../code/experiments/debug_walkthrough.py.md) "
            f"时打印的 `CALL:` 行（输出 sha256 前 16 位 `{calls.digest[:16]}`），因此图不会与代码脱节。"
            "为了可读，图中省略了生成器表达式、列表推导和 lambda 的帧，并只画到第 9 层调用；"
            "完整的调用树见[源码级调试](../walkthrough.md)。每条竖线是一个模块，箭头从调用者指向被调用者。\n\n"
            f'<div class="lk-diagram-wrap">{attachments.sequence_svg(call_list)}</div>\n'), in_nav=True),
        Generated("attachments/nested-traces.md", (
            "# Nested Traces 图\n\n`grad(grad(grad(f)))` 求三阶导数时，`f` 内部看到的 `x` 是一层套一层的 Box。"
            "下图由本次构建运行 [`experiments/higher_order.py`](../code/experiments/higher_order.py.md) 时打印的 "
            f"`NESTING:` 行画出（本次为 `{' '.join(map(str, levels))}`），最外层是最后进入的 trace。"
            "每一层的 `_trace` 编号由 `TraceStack.new_trace` 分配；`find_top_boxed_args` 总是先处理编号最大的那一层。"
            "详细讨论见 [第 10 课](../lessons/10-higher-order.md)。\n\n"
            f'<div class="lk-diagram-wrap">{attachments.nesting_svg(levels)}</div>\n'), in_nav=True),
    ]
    calls_text = "\n".join(l for l in calls.stdout.splitlines() if l.startswith("CALL: ")) + "\n"
    return pages, calls_text


# ---------------------------------------------------------------- the downloadable bundle

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


def bundle(project: Project, results: dict, texts: dict[str, str], generated: list[Generated],
           calls_text: str | None) -> bytes:
    """Byte-identical scripts and plain-text attachments in a reproducible zip."""
    entries: dict[str, bytes] = {}
    for d in ("experiments", "mini-autograd"):
        for p in sorted((project.root / d).rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts and p.suffix in (".py", ".md"):
                entries[p.relative_to(project.root).as_posix()] = p.read_bytes()
    for page, text in sorted(texts.items()):
        if page.startswith("docs/attachments/") or page == "docs/walkthrough.md":
            entries["attachments/" + Path(page).name] = attachments.plain_markdown(project, text, page, results).encode()
    if calls_text is not None:
        entries["attachments/call-sequence.txt"] = calls_text.encode()
    for g in generated:
        entries.setdefault("attachments/" + Path(g.uri).name, g.content if isinstance(g.content, bytes)
                           else g.content.encode())
    entries["README.md"] = BUNDLE_README.format(version=project.pin.version, commit=project.pin.commit).encode()
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    return attachments.zip_bytes(entries, epoch)
