"""What a project says about itself, so that the engine names nothing: ``sourcemap/site.toml``
(data) and ``templates/`` (the prose of generated pages, Jinja2).

Every field has a default derived from the pin (``[upstream] repo`` of ``pin.toml``), so a
project without ``site.toml`` still builds::

    [upstream]
    name = "autograd"             # how pages name the pinned project (default: last part of the repo URL)
    label = "HIPS/autograd"       # how disclaimers name it (default: owner/name of the repo URL)
    package = "autograd/"         # the pinned folder the source browser shows (default: "<name>/")

    [repository]
    teaching = ["mini-autograd"]  # folders teaching blocks may quote; on the experiments' sys.path
    code = ["experiments", "mini-autograd"]  # folders with code pages, copied into the bundle

    [bundle]
    path = "downloads/autograd-resources.zip"  # default: "downloads/<name>-resources.zip"

    [experiments]                 # optional: what of the pinned tree each experiment's box holds
    pinned = ["autograd/", "examples/*.py"]  # files, folders or patterns of the manifest
                                  # (default: the whole tree)
    path = "src"                  # the folder of the pinned tree experiments import from, for a
                                  # src/ layout (default: the tree's top folder)

    [snapshots]                   # optional: the vocabulary of snapshot tables
    badges = ["手算推演", "源码推演", "实验观察"]  # the values `Label:` may take (default: English)
    prose-columns = ["说明", "来源"]  # columns whose cells are the author's prose, not values of a
                                  # run (a column counts when its name contains one of these)

    [search]                      # optional: the glossary, whose terms search ranks first
    glossary = "docs/glossary.md" # a page whose tables define terms, one row each
    terms = ["中文", "English"]    # the columns that name a row's terms (`a / b`, `a（b）`: several)
    introduced = "首次介绍"        # the column whose first link is the section introducing them

    [pages]                       # optional: the pages the engine treats apart (docs-relative)
    lessons = "lessons/"          # the lesson pages: each lists the source it cites; `lessonkit new`
                                  # writes there; recalls look there first (default "lessons/")
    api = "api.md"                # the API reference (mkdocstrings `::: name` entries) that
                                  # excerpts link their symbols to (default "api.md", if present)
    bundle-text = ["walkthrough.md"]  # pages whose plain text the bundle holds beside those of
                                  # attachments/ (default none)
    authors = ["authoring.md"]    # pages written for the series' authors, not its readers: the
                                  # source browser, the symbol index and the API reference do not
                                  # list them among the pages citing a line (default none)

    [pdf]                         # optional: the course PDF a build with LESSONKIT_PDF=1 prints
    path = "downloads/autograd-course.pdf"  # where in the site (default: downloads/<name>-course.pdf)
    skip = ["api.md"]             # pages of the navigation it leaves out (docs-relative)

    [labels]                      # every word the engine shows (defaults: English, lessonkit/config/labels.py)
    real-source = "真实源码 REAL SOURCE"
    purpose = "目的（Purpose）"
    from-index = "来自 Python 包索引的发布包 {detail}"   # {detail}: the provider's file or name

Templates are looked up in the project's ``templates/`` first, then in ``lessonkit/templates/``.
Generated pages of the project's own (attachments, diagrams) are registered in
``sourcemap/attachments.toml`` (:mod:`lessonkit.attachments`), not here.
"""

from __future__ import annotations

import fnmatch
import re
import sys
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from lessonkit.config.labels import LABELS, Labels
from lessonkit.config.labels import problem as label_problem
from lessonkit.config.templates import environment, project_source, render
from lessonkit.errors import LessonError

CONFIG = "sourcemap/site.toml"
LESSONS = "lessons/"  # the default of [pages] lessons: the lessons' folder, docs-relative
_KEYS = {
    "upstream": {"name", "label", "package"},
    "repository": {"teaching", "code"},
    "bundle": {"path"},
    "snapshots": {"badges", "prose-columns"},
    "experiments": {"pinned", "versions", "path"},
    "search": {"glossary", "terms", "introduced"},
    "pdf": {"path", "skip"},
    "pages": {"lessons", "api", "bundle-text", "authors"},
    "labels": None,  # keys: lessonkit.config.labels.LABELS, or the project's own (`x-…`)
}
# Tables an older site.toml had: the project's own attachments are registered in attachments.toml.
MOVED = {
    "diagrams": "diagrams are attachments of the project's own now: register them in sourcemap/attachments.toml",
    "attachments": "a project's own attachments are registered in sourcemap/attachments.toml",
}
# The defaults of [snapshots]: which `Label:` a snapshot may carry, which columns are prose.
BADGES = ("by hand", "from the source", "observed")
PROSE_COLUMNS = ("Note", "Source", "Why", "Meaning", "Explanation", "Rule", "Location", "Next step")


@dataclass(frozen=True)
class SiteConfig:
    root: Path
    name: str
    label: str
    package: str
    teaching: tuple[str, ...] = ()
    code: tuple[str, ...] = ("experiments",)
    bundle: str = ""
    labels: Labels = field(default_factory=lambda: Labels(LABELS))
    badges: tuple[str, ...] = BADGES
    prose_columns: tuple[str, ...] = PROSE_COLUMNS
    box_pinned: tuple[str, ...] = ()  # [experiments] pinned: what each box copies (empty: the whole tree)
    # [experiments] versions: (label, distribution) of the installed packages whose versions key every
    # experiment and appear in its provenance line, beside Python's (`["NumPy=numpy"]`; default none)
    tools: tuple[tuple[str, str], ...] = ()
    # [experiments] path: the folder of the pinned tree on the experiments' sys.path ("" : its top)
    import_path: str = ""
    # [search]: the glossary page (project-relative), its term columns and its "introduced in" column
    glossary: str | None = None
    glossary_terms: tuple[str, ...] = ()
    glossary_introduced: str | None = None
    # [pdf]: where the course PDF goes in the site, and the pages of the navigation it leaves out
    pdf_path: str = ""
    pdf_skip: tuple[str, ...] = ()
    # [pages]: the lessons' folder (docs-relative, ending in `/`), the API reference page and the
    # pages whose plain text the bundle holds
    lessons: str = LESSONS
    api: str = "api.md"
    bundle_text: tuple[str, ...] = ()
    authors: tuple[str, ...] = ()  # [pages] authors: pages for the series' authors (docs-relative)
    # the input check of what a template of the project renders (set by lessonkit.project: the
    # raw-HTML check of a page lives in a layer above this one): (output, name, source) -> problems
    check_output: Any = field(default=None, compare=False, repr=False)

    @property
    def offline_path(self) -> str:
        """Where the offline edition goes in the site (:mod:`lessonkit.site.offline`)."""
        return f"downloads/{self.name}-offline.zip"

    def is_lesson(self, page: str) -> bool:
        """Whether ``page`` (docs-relative, or project-relative under ``docs/``) is a lesson."""
        return page.removeprefix("docs/").startswith(self.lessons)

    @property
    def env_prefix(self) -> str:
        """Experiments read ``<PREFIX>_PINNED_ROOT`` / ``<PREFIX>_PINNED_VERSION``: PREFIX is the name
        in capitals (``[upstream] name``), non-word characters as ``_``."""
        return re.sub(r"\W", "_", self.name).upper()

    @cached_property
    def templates(self):
        return environment(self.root)

    def render(self, name: str, **data) -> str:
        """The template ``name`` filled with ``data`` (Markdown: a value from a file or a name goes in
        through the ``code``, ``mdtext`` or ``url`` filter; numbers and checked pin fields as given)."""
        out = render(self.templates, name, site=self, **data)
        source = project_source(self.templates, name) if self.check_output is not None else None
        if source is not None:  # the project's own template: its output is checked as a page's prose
            shown = out
            # markup the caller passes whole (the slots of source pages, a drawn figure) is the
            # engine's or the attachment's, not the template's: what the template writes is checked
            for value in data.values():
                if isinstance(value, str) and value.startswith("<") and value.endswith(">"):
                    shown = shown.replace(value, "")
            problems = self.check_output(shown, name, source)
            if problems:
                first = problems[0]
                raise LessonError(first.message, path=first.path, line=first.line, hint=first.hint, problems=problems)
        return out


def load(root: Path, repo_url: str) -> SiteConfig:
    """The project's ``sourcemap/site.toml`` (optional), checked, with defaults from the pin."""
    m = re.search(r"([^/]+)/([^/]+?)(?:\.git)?/?$", repo_url)
    owner_name = f"{m[1]}/{m[2]}" if m else repo_url
    default_name = m[2] if m else repo_url
    data: dict = {}
    path = root / CONFIG
    if path.exists() or path.is_symlink():  # checked field by field (lessonkit.config.files)
        from lessonkit.config import checks as projectchecks
        from lessonkit.config import files as config

        data, lines = config.read_toml(path, CONFIG, projectchecks.SITE_HINT)
        projectchecks.check_site(root, data, lines)
    for table, values in data.items():
        if table not in _KEYS or not isinstance(values, dict):
            raise LessonError(
                f"unknown table `[{table}]`",
                path=CONFIG,
                line=line_of(path, f"[{table}]"),
                hint=MOVED.get(table, "known tables: " + ", ".join(f"[{t}]" for t in _KEYS))
                + (" (see the engine guide, 'Attachments of your own')" if table in MOVED else ""),
            )
        for key, value in values.items():
            known = _KEYS[table]
            if known is None:
                continue  # [labels]: checked by _labels
            if key not in known:
                raise LessonError(
                    f"unknown key `{key}` in `[{table}]`",
                    path=CONFIG,
                    line=line_of(path, key),
                    hint="known keys: " + ", ".join(sorted(known)),
                )
            if not (isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))):
                raise LessonError(
                    f"`{key}` in `[{table}]` is not text or a list of text",
                    path=CONFIG,
                    line=line_of(path, key),
                    hint='for example `code = ["experiments"]`',
                )
    for key, value in data.get("snapshots", {}).items():
        if not isinstance(value, list) or not value or not all(v.strip() for v in value):
            raise LessonError(
                f"`{key}` in `[snapshots]` is not a list of words",
                path=CONFIG,
                line=line_of(path, key),
                hint='for example `badges = ["by hand", "observed"]`',
            )
    import_path = data.get("experiments", {}).get("path", "")  # checked by config.checks
    search = data.get("search", {})
    if search:
        _check_search(search, path)
    pdf = data.get("pdf", {})
    _check_pdf(pdf, path)
    up, repo, pages = data.get("upstream", {}), data.get("repository", {}), data.get("pages", {})
    name = up.get("name", default_name)
    return SiteConfig(
        root,
        name,
        up.get("label", owner_name),
        up.get("package", f"{name}/"),
        tuple(repo.get("teaching", ())),
        tuple(repo.get("code", ("experiments",))),
        data.get("bundle", {}).get("path", f"downloads/{name}-resources.zip"),
        Labels({**LABELS, **_labels(data.get("labels", {}), path)}, line=line_of(path, "[labels]")),
        tuple(data.get("snapshots", {}).get("badges", BADGES)),
        tuple(data.get("snapshots", {}).get("prose-columns", PROSE_COLUMNS)),
        tuple(data.get("experiments", {}).get("pinned", ())),
        tuple(_tool(v) for v in data.get("experiments", {}).get("versions", ())),
        import_path.strip("/"),
        search.get("glossary"),
        tuple(search.get("terms", ())),
        search.get("introduced"),
        pdf.get("path", f"downloads/{name}-course.pdf"),
        tuple(pdf.get("skip", ())),
        pages.get("lessons", LESSONS).strip("/") + "/",
        pages.get("api", "api.md"),
        tuple(pages.get("bundle-text", ())),
        tuple(pages.get("authors", ())),
    )


def _check_pdf(pdf: dict, path: Path) -> None:
    """``[pdf]``: a path in the site that ends in ``.pdf``; pages under docs/ to leave out."""
    out = pdf.get("path")
    if out is not None and not (
        isinstance(out, str) and out.endswith(".pdf") and not out.startswith("/") and ".." not in out.split("/")
    ):
        raise LessonError(
            f"`path` in `[pdf]` is {out!r}, not a path in the site that ends in .pdf",
            path=CONFIG,
            line=_line_in(path, "[pdf]", "path"),
            hint='for example `path = "downloads/course.pdf"`',
        )
    skip = pdf.get("skip", [])
    if not isinstance(skip, list) or not all(isinstance(s, str) and s.endswith(".md") for s in skip):
        raise LessonError(
            "`skip` in `[pdf]` is not a list of pages",
            path=CONFIG,
            line=_line_in(path, "[pdf]", "skip"),
            hint='docs-relative Markdown files of the navigation, e.g. `skip = ["api.md"]`',
        )


def _check_search(search: dict, path: Path) -> None:
    """``[search]``: a glossary page under docs/ (a Markdown file) and the columns it is read by."""
    glossary = search.get("glossary")
    if glossary is None:
        raise LessonError(
            "`[search]` has no `glossary`",
            path=CONFIG,
            line=line_of(path, "[search]"),
            hint='name the glossary page, e.g. `glossary = "docs/glossary.md"`',
        )
    if not (isinstance(glossary, str) and glossary.startswith("docs/") and glossary.endswith(".md")):
        raise LessonError(
            f"`glossary` in `[search]` is {glossary!r}, not a page under docs/",
            path=CONFIG,
            line=line_of(path, "glossary"),
            hint='for example `glossary = "docs/glossary.md"`',
        )
    terms = search.get("terms")
    if not isinstance(terms, list) or not terms or not all(isinstance(t, str) and t.strip() for t in terms):
        raise LessonError(
            "`terms` in `[search]` is not a list of column names",
            path=CONFIG,
            line=line_of(path, "terms") if terms is not None else line_of(path, "[search]"),
            hint='the header cells of the columns that name the terms, e.g. `terms = ["Term"]`',
        )
    introduced = search.get("introduced")
    if introduced is not None and not (isinstance(introduced, str) and introduced.strip()):
        raise LessonError(
            "`introduced` in `[search]` is empty",
            path=CONFIG,
            line=line_of(path, "introduced"),
            hint="the header cell of the column whose link is the introducing section, or leave it out",
        )


def _tool(entry: str) -> tuple[str, str]:
    """``"NumPy=numpy"`` → ``("NumPy", "numpy")``; ``"numpy"`` → ``("numpy", "numpy")``."""
    label, _, dist = entry.rpartition("=")
    return (label.strip() or dist, dist)


def pinned_match(entry: str, rel: str) -> bool:
    """Whether the pinned file ``rel`` is one that ``[experiments] pinned``'s ``entry`` names: a
    folder (``autograd/``), a file, or a shell-style pattern (``examples/*.py``; ``*`` crosses ``/``)."""
    if any(c in entry for c in "*?["):
        return fnmatch.fnmatchcase(rel, entry)
    return rel == entry or rel.startswith(entry.rstrip("/") + "/")


def check_tools(site: SiteConfig) -> None:
    """Each ``[experiments] versions`` item names a distribution installed here (its version keys
    every experiment and shows in its provenance): not a missing one, not a standard module."""
    from importlib import metadata

    for label, dist in site.tools:
        try:
            metadata.version(dist)
            continue
        except (metadata.PackageNotFoundError, ValueError):
            pass
        item = repr(dist if label == dist else f"{label}={dist}")
        why = (
            f"`{dist}`, a module of the standard library, not an installed distribution (Python's own version "
            "is always shown)"
            if dist in sys.stdlib_module_names
            else f"`{dist}`, which is not an installed distribution"
        )
        raise LessonError(
            f"`versions` in `[experiments]` item {item} names {why}",
            path=CONFIG,
            line=line_of(site.root / CONFIG, "versions"),
            hint="name a distribution of the build's environment (`NumPy=numpy`), or install it",
        )


def check_box_pinned(site: SiteConfig, manifest: dict[str, str]) -> None:
    """Each ``[experiments] pinned`` entry names at least one file of the pinned tree."""
    for entry in site.box_pinned:
        if not any(pinned_match(entry, rel) for rel in manifest):
            raise LessonError(
                f"`pinned` in `[experiments]` names `{entry}`, which matches no file of the pinned tree",
                path=CONFIG,
                line=line_of(site.root / CONFIG, "pinned"),
                hint=f'name files, folders or patterns of sourcemap/manifest.sha256, e.g. "{site.package}"',
            )


def check_import_path(site: SiteConfig, manifest: dict[str, str]) -> None:
    """``[experiments] path`` is a folder of the pinned tree that holds Python files."""
    if site.import_path and not any(rel.startswith(site.import_path + "/") and rel.endswith(".py") for rel in manifest):
        raise LessonError(
            f"`path` in `[experiments]` names `{site.import_path}`, which holds no Python file of the pinned tree",
            path=CONFIG,
            line=line_of(site.root / CONFIG, "path"),
            hint="name the folder that holds the package (see sourcemap/manifest.sha256), e.g. \"src\"",
        )


def _labels(values: dict, path: Path) -> dict[str, str]:
    for key, value in values.items():
        wrong = label_problem(key, value)
        if wrong:
            raise LessonError(wrong[0], path=CONFIG, line=line_of(path, key), hint=wrong[1])
    return dict(values)


def _line_in(path: Path, table: str, key: str) -> int:
    """The line of ``key = …`` in ``[table]`` (else of the table's header)."""
    lines = path.read_text(encoding="utf-8").split("\n") if path.exists() else []
    start = next((n for n, line in enumerate(lines) if line.strip() == table), None)
    if start is None:
        return line_of(path, key)
    pattern = re.compile(r'\s*["\']?' + re.escape(key) + r'["\']?\s*=')
    for n in range(start + 1, len(lines)):
        if lines[n].strip().startswith("["):
            break
        if pattern.match(lines[n]):
            return n + 1
    return start + 1


def line_of(path: Path, needle: str) -> int:
    """The line of ``[table]``, or of the first ``key = …`` (exactly that key)."""
    if not path.exists():
        return 1
    key = re.compile(r'\s*["\']?' + re.escape(needle) + r'["\']?\s*=')
    for n, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        if line.strip().startswith(needle) if needle.startswith("[") else key.match(line):
            return n
    return 1
