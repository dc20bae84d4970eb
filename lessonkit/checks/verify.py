"""Verify: the pinned tree against its manifest, every block of every page, and the
excerpt map in ``sourcemap/excerpts.json`` — without rendering the site. Uses the
same parse and resolve stages as the build."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from lessonkit.config import checks as projectchecks
from lessonkit.config import environment, maps, templates
from lessonkit.config import site as siteconfig
from lessonkit.errors import LessonError, Problem, fold_repeats
from lessonkit.pipeline.parse import parse_page
from lessonkit.pipeline.render import duplicate_ids, page_ids
from lessonkit.project import Project, Resolved
from lessonkit.util.fs import atomic_write
from lessonkit.util.text import line_span

MAP_NAME = "excerpts.json"
UPDATE_HINT = "run `lessonkit verify --update-map` to record the new state"


@dataclass
class Report:
    problems: list[Problem] = field(default_factory=list)
    resolved: dict[str, list[Resolved]] = field(default_factory=dict)  # page -> blocks
    # page -> ordinals of its blocks that did not parse or resolve (their own problems say why);
    # a page that could not be read at all maps to None
    broken: dict[str, set[int] | None] = field(default_factory=dict)
    inline: dict[str, list] = field(default_factory=dict)  # page -> InlineRef, in page order
    # page -> {ordinal of a `Recall: yes` block -> the first full showing it links to}
    recalls: dict[str, dict] = field(default_factory=dict)
    # the problems of the files the pages include (lessonkit.checks.includes), also in `problems`:
    # no page of the build reports them, so the build reports these itself
    included: list[Problem] = field(default_factory=list)
    _anchors: dict[str, list[str]] = field(default_factory=dict, repr=False)

    def anchors(self, page: str) -> list[str]:
        """The ids of the page's blocks as the page renders them, computed once per build
        (the page itself, its citations and the prewarm all use these)."""
        if page not in self._anchors:
            from lessonkit.pipeline.render import anchors

            self._anchors[page] = anchors(self.resolved.get(page, []))
        return self._anchors[page]

    def count(self, kind: str) -> int:
        return sum(1 for rs in self.resolved.values() for r in rs if r.block.kind == kind)


def map_entries(project: Project, report: Report) -> list[dict]:
    """Every excerpt of the pinned tree, as the pages show it. Excerpts of the project's own files
    (experiment scripts, teaching code) follow those files and are not recorded: an edit to one
    is never a stale map. ``runs``, ``elided`` and ``emphasize`` appear only when the excerpt has them."""
    entries = []
    for page, rs in sorted(report.resolved.items()):
        for r in rs:
            ex = r.excerpt
            if ex is None or ex.origin != "pinned":
                continue
            entry = {
                "page": page,
                "block": r.block.ordinal,
                "kind": r.block.kind,
                "file": ex.file,
                "symbol": ex.symbol,
                "lines": [ex.start, ex.end],
                "sha256": ex.sha256,
            }
            if ex.runs:
                entry["runs"] = [list(s) for s in ex.runs]
            if ex.elided:
                entry["elided"] = [list(s) for s in ex.elided]
            if ex.emphasize:
                entry["emphasize"] = list(ex.emphasize)
            entries.append(entry)
    return entries


def build_map(project: Project, report: Report) -> dict:
    return {
        "pin": project.pin.commit,
        "version": project.pin.version,
        "manifest": project.pin.manifest_digest,
        "excerpts": map_entries(project, report),
    }


def check_config(project: Project, installed: bool = True) -> None:
    """The configuration files besides the pin (which providing the tree checks): roles.toml,
    kinds.toml, attachments.toml and site.toml, each one located error before any page is read."""
    roles = project.sourcemap / "roles.toml"
    if roles.exists() or roles.is_symlink():
        maps.read_roles(roles, project.rel(roles))
    environment.sandbox_mode()
    environment.sdist_path()  # a set LESSONKIT_SDIST must be an archive file, even when the tree is cached
    projectchecks.check_docs(project.root)  # links out of the project, loops, FIFOs: before MkDocs or we read them
    projectchecks.check_code_folders(project.root, ["experiments", *project.site.code, *project.site.teaching])
    project.kinds  # noqa: B018 (imports the project's kind modules: once, not once per page)
    project.attachments  # noqa: B018 (imports and checks the project's attachment modules)
    siteconfig.check_box_pinned(project.site, project.pin.manifest)
    siteconfig.check_import_path(project.site, project.pin.manifest)
    if installed:  # not for the prefill, which runs while the lock is still being installed
        siteconfig.check_tools(project.site)


def check(project: Project, pages: list[Path] | None = None, installed: bool = True) -> Report:
    """Parse and resolve every block of ``pages`` (default: all of docs/). ``installed=False``:
    the distributions of ``[experiments] versions`` and the HTML parser may still be missing (the
    prefill, which only lists the experiments: the build then checks everything itself)."""
    report = Report()
    _ = project.tree  # provide and check the pinned tree first: a bad tree is one clear error
    check_config(project, installed)
    for path in pages or project.pages():
        try:
            parsed = project.parse(path, html_checks=installed)
        except LessonError as exc:
            report.problems += exc.problems
            report.broken[project.rel(path)] = None
            continue
        resolved, problems = project.resolve_page(parsed)
        problems += parsed.engine_html  # raw HTML imitating the engine's blocks (the build reports it too)
        report.resolved[project.rel(path)] = resolved
        ok = {r.block.ordinal for r in resolved}
        report.broken[project.rel(path)] = {
            b.ordinal for b in parsed.items if b.ordinal is not None and b.ordinal not in ok
        }
        report.inline[project.rel(path)] = refs = [item.ref for item in parsed.inline]
        for ref in refs:  # inline references: `line` resolved, `value` names an experiment
            problems += project.kinds.inline[ref.kind].check(project, ref)
        rel = project.rel(path)
        generated = page_ids(
            resolved, report.anchors(rel), sum(r.kind == "line" for r in refs), project.site.is_lesson(rel)
        )
        problems += duplicate_ids(rel, parsed.ids, generated)
        report.problems += fold_repeats(sorted(problems, key=lambda p: p.line or 0))  # one line per mistake
    from lessonkit.checks import includes, recall

    # what the pages pull in with `--8<--` (and snippets' auto_append): the same checks, at its lines
    report.included = includes.check(project, list(pages or project.pages())) if installed else []
    report.problems += report.included
    report.recalls, problems = recall.targets(project, report)
    report.problems += problems
    if installed:  # the project's templates (Jinja2 reads them): not in the prefill
        report.problems += template_sources(project)
    return report


def template_sources(project: Project) -> list[Problem]:
    """The project's templates (``templates/``) as written: every entry is a regular file or folder
    inside templates/ (read as the build reads it: no symbolic link), and the text of each ``.md``
    holds no active content a page's prose may not (the build checks what each renders too, where a
    value may form it)."""
    import os

    folder = project.root / "templates"
    if os.path.islink(folder):
        return [Problem("is a symbolic link", "templates", None, templates.UNSAFE_HINT)]
    loader, env = templates.project_loader(folder), project.site.templates
    problems: list[Problem] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        for n in sorted(dirnames + filenames):
            name = os.path.relpath(os.path.join(dirpath, n), folder).replace(os.sep, "/")
            if not os.path.islink(folder / name) and (os.path.isdir(folder / name) or not name.endswith(".md")):
                continue
            try:
                source = loader.get_source(env, name)[0]
            except templates.UnsafeTemplate as exc:
                problems.append(Problem(str(exc), f"templates/{name}", None, templates.UNSAFE_HINT))
                continue
            kinds, badges = project.kinds, project.badges
            problems += parse_page(source, f"templates/{name}", kinds=kinds, badges=badges).active
    return problems


def troubled_pages(report: Report) -> set[str]:
    """The pages whose blocks or references are not all there as written: a page with a problem of
    its own (a block that does not parse or resolve, an unclosed fence that hides the blocks after
    it) or that cannot be read. The maps record a page's blocks and references by their order, so
    on such a page they are not compared: its own problem is the one line, not a stale map."""
    pages = {p.path for p in report.problems if p.path}
    return pages | {page for page, broken in report.broken.items() if broken is None or broken}


def stale_map(project: Project, report: Report, only_pages: set[str] | None = None) -> list[Problem]:
    path = project.sourcemap / MAP_NAME
    rel = project.rel(path)
    if not (path.exists() or path.is_symlink()):
        return [Problem("the excerpt map does not exist", rel, None, UPDATE_HINT)]
    try:
        recorded = maps.read_excerpt_map(path, rel)  # every entry's shape checked
    except LessonError as exc:
        return exc.problems
    fresh = build_map(project, report)
    problems = []
    for name in ("pin", "version", "manifest"):
        if recorded.get(name) != fresh[name]:
            problems.append(Problem(f"the excerpt map was made for another {name}", rel, None, UPDATE_HINT))
    troubled = troubled_pages(report)
    old = {
        (e["page"], e["block"]): e
        for e in recorded.get("excerpts", [])
        if (only_pages is None or e["page"] in only_pages) and e["page"] not in troubled
    }
    new = {(e["page"], e["block"]): e for e in fresh["excerpts"] if e["page"] not in troubled}
    lines = {(p, r.block.ordinal): r.block.line for p, rs in report.resolved.items() for r in rs}
    own = {  # blocks that show the project's own files: never recorded (a map from before may list them)
        (p, r.block.ordinal)
        for p, rs in report.resolved.items()
        for r in rs
        if r.excerpt and r.excerpt.origin != "pinned"
    }
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        broken = report.broken.get(key[0], set())
        if b is None and (broken is None or key[1] in broken or key in own):
            continue  # the block is there but does not resolve (or the page cannot be read): its own problem says why
        if b is None:
            problems.append(
                Problem(
                    f"the excerpt map records block {key[1]} of {key[0]}, which no longer exists",
                    rel,
                    None,
                    UPDATE_HINT,
                )
            )
            continue
        if a is None:
            what = f"a new excerpt ({b['file']} {line_span(*b['lines'])}) is not in the map"
        else:
            changes = [
                k for k in (*maps.MAP_KEYS, *maps.MAP_OPTIONAL) if k not in ("page", "block") and a.get(k) != b.get(k)
            ]
            what = (
                f"the excerpt map is stale: {', '.join(changes)} changed "
                f"(recorded {a['file']} {line_span(*a['lines'])}, now {b['file']} "
                f"{line_span(*b['lines'])})"
            )
        problems.append(Problem(what, key[0], lines.get(key), UPDATE_HINT))
    return problems


def write_map(project: Project, report: Report) -> Path:
    path = project.sourcemap / MAP_NAME
    data = json.dumps(build_map(project, report), indent=1, ensure_ascii=False) + "\n"
    atomic_write(path, data.encode("utf-8"), durable=True)
    return path
