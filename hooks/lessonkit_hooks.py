"""MkDocs hooks: a thin adapter between MkDocs events and lessonkit.

Everything that renders lives in the ``lessonkit.mdext`` Markdown extension; these
hooks only reset state per build, provide the pinned tree once, run the page's
experiments in parallel before rendering, give the extension each page's path and
line offset, and turn lessonkit errors into one-line MkDocs errors.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mkdocs.exceptions import Abort, PluginError

from lessonkit import mdext
from lessonkit.errors import LessonError, Problem

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files
    from mkdocs.structure.pages import Page

log = logging.getLogger("mkdocs.plugins.lessonkit")
_ID = re.compile(r'\sid="([^"]+)"')


@dataclass
class _State:
    command: str = "build"
    root: Path = Path(".")
    problems: list[Problem] = field(default_factory=list)
    token: object = None


STATE = _State()


def _project():
    return mdext.get_project(STATE.root)


def on_startup(command: str, dirty: bool) -> None:
    STATE.command = command


def on_config(config: "MkDocsConfig") -> None:
    mdext.reset()
    STATE.root = Path(config.config_file_path).parent.resolve()
    STATE.problems = []
    try:
        project = _project()
        tree = project.tree  # provided and checked against the manifest, once per build
    except LessonError as exc:
        raise PluginError(str(exc)) from None
    log.info(f"lessonkit: autograd {project.pin.version} ({project.pin.short}) from {tree.provider}")
    config.extra["lessonkit"] = {"commit": project.pin.commit, "short": project.pin.short,
                                 "version": project.pin.version, "provider": tree.provider,
                                 "sdist_sha256": project.pin.sdist_sha256, "repo": project.pin.repo}


def on_files(files: "Files", config: "MkDocsConfig") -> "Files":
    """Run every page's experiments up front, in parallel; rendering then reads the cache."""
    project = _project()
    jobs = []
    for f in files.documentation_pages():
        try:
            page = project.parse(Path(f.abs_src_path))
        except LessonError:
            continue  # reported when the page itself is rendered
        for block in page.blocks:
            if block.kind == "experiment":
                try:
                    jobs.append(project.resolve(block).job)
                except LessonError:
                    continue
    if jobs:
        t0 = time.perf_counter()
        results = project.runner.run_all(jobs)
        ran = [r for r in results.values() if not r.cached]
        cpu = sum(r.cpu_seconds for r in ran)
        log.info(f"lessonkit: {len(results)} experiment(s): {len(ran)} run ({cpu:.1f} s CPU), "
                 f"{len(results) - len(ran)} from cache, {time.perf_counter() - t0:.1f} s wall")
    return files


def _offset(raw: str, markdown: str) -> int:
    idx = raw.find(markdown[:200]) if markdown else 0
    return raw.count("\n", 0, idx) if idx > 0 else 0


def on_page_markdown(markdown: str, page: "Page", config: "MkDocsConfig", files: "Files") -> str:
    project = _project()
    path = Path(page.file.abs_src_path)
    rel = project.rel(path)
    problems: list[Problem] = []
    try:
        raw = project.read_page(path)
    except LessonError as exc:
        problems += exc.problems
        raw = markdown
    ctx = mdext.PageContext(rel, _offset(raw, markdown), problems, root=str(STATE.root), source=raw)
    STATE.token = mdext.CURRENT.set(ctx)
    return markdown


def on_page_content(html: str, page: "Page", config: "MkDocsConfig", files: "Files") -> str:
    ctx = mdext.CURRENT.get()
    if STATE.token is not None:
        mdext.CURRENT.reset(STATE.token)
        STATE.token = None
    for p in (ctx.problems if ctx else []):
        log.error(str(p))
        STATE.problems.append(p)
    # Rendered blocks reach the page through the HTML stash, where MkDocs' anchor
    # collector does not look: register their ids so links to them are validated.
    if page.present_anchor_ids is not None:
        page.present_anchor_ids |= set(_ID.findall(html))
    return html


def on_post_build(config: "MkDocsConfig") -> None:
    if STATE.problems and STATE.command == "build":
        raise Abort(f"lessonkit: {len(STATE.problems)} annotation problem(s); see the lines above")
