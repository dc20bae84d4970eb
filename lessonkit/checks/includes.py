"""Files that pymdownx.snippets pulls into pages: the targets of ``--8<--`` lines (inline,
``--8<-- "includes/part.md"``, or a block of names between two ``--8<--`` lines; nested in the
files they name too) and the ``auto_append`` files of ``mkdocs.yml``.

MkDocs builds no page of them (``exclude_docs``), and a file that does not end in ``.md`` is no
page of ``verify`` either, yet their text is part of every page that includes them. Both the build
and ``verify`` check them here, through :func:`check` (called by :func:`lessonkit.checks.verify.check`
for the pages it checks), with the Markdown input checks of a page (raw HTML that runs, embeds or
restyles, or imitates the engine; encoding), each problem at the included file's own line.

A file is named relative to ``docs/`` or the project's folder (snippets' ``base_path``), must be a
regular file inside the project, and is read once per check. A name with lines (``part.html:2:3``,
``:5,1:1``) or a section (``part.html:name``, between ``--8<-- [start:name]`` and ``[end:name]``)
includes only those lines: they are checked as the page gets them, selected by pymdownx.snippets'
own code (and dedented when ``dedent_subsections`` is on), each problem at its line of the file.
URLs (``https://``) are not read by the build either (``url_download`` is off) and are left alone
here. Blocks in an included file are not resolved: a page shows what the file holds as prose.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import replace
from pathlib import Path

from lessonkit.config.files import show
from lessonkit.errors import LessonError, Problem

# `--8<--` at the start of a line (after spaces), not escaped with `;`, then a quoted name (inline)
# or nothing (a block of names follows, up to the next such line).
_INLINE = re.compile(r"""^[ \t]*-{1,}8<-{1,}[ \t]+(?P<q>["'])(?P<name>.+?)(?P=q)[ \t]*$""")
_BLOCK = re.compile(r"^[ \t]*-{1,}8<-{1,}[ \t]*$")
_SUFFIX = re.compile(r"(?::-?[0-9]*(?::-?[0-9]*)?|:[A-Za-z][-_0-9A-Za-z]*)(?:,[-0-9:]+)*$")  # :1:3, :section


def targets(text: str) -> list[tuple[int, str]]:
    """``(line, name)`` of every file that the ``--8<--`` lines of ``text`` name (1-based lines)."""
    out: list[tuple[int, str]] = []
    block = False
    for n, line in enumerate(text.split("\n"), 1):
        if "8<" in line and _BLOCK.match(line):
            block = not block
            continue
        if block:
            name = line.strip()
            if name and not name.startswith(";"):
                out.append((n, name))
            continue
        m = _INLINE.match(line) if "8<" in line else None
        if m:
            out.append((n, m["name"].strip()))
    return out


def auto_append(root: Path) -> list[str]:
    """The ``auto_append`` files of ``pymdownx.snippets`` in ``root/mkdocs.yml`` (none when it is
    missing, unreadable or has none). Tags (``!ENV``, ``!!python/name:``) read as nothing. Without
    PyYAML (the prefill, which runs on the standard library alone before the lock is installed) none:
    the build and verify, which MkDocs' PyYAML is installed for, check them."""
    names = _snippets_options(root).get("auto_append") or []
    return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []


def _snippets_options(root: Path) -> dict:
    """The options of ``pymdownx.snippets`` in ``root/mkdocs.yml`` (see :func:`auto_append`)."""
    try:
        import yaml
    except ImportError:
        return {}

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("", lambda loader, suffix, node: None)
    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)
    try:
        data = yaml.load((root / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    extensions = data.get("markdown_extensions") if isinstance(data, dict) else None
    for item in extensions if isinstance(extensions, list) else []:
        if isinstance(item, dict) and isinstance(item.get("pymdownx.snippets"), dict):
            return item["pymdownx.snippets"]
    return {}


class _Line(str):
    """A line of an included file that knows its number (through snippets' selection)."""

    n: int


def selection(name: str, text: str, dedent: bool) -> tuple[str, list[int]] | None:
    """What ``--8<-- "name"`` pulls out of a file whose text is ``text``: the selected text and the
    file's line of each of its lines, as pymdownx.snippets selects them (its own code: line ranges,
    negative ones too, and sections; ``dedent``: ``dedent_subsections``); None when ``name`` names
    the whole file."""
    try:
        from pymdownx.snippets import SnippetPreprocessor
    except ImportError:  # the prefill (standard library only): the whole file, checked strictly
        return None
    snippets = object.__new__(SnippetPreprocessor)  # only its selection, which reads these two
    snippets.check_paths, snippets.dedent_subsections = False, False
    target = snippets.parse_snippet_target(name)
    if target is None or not ((target["start"] and target["end"]) or target["section"]):
        return None
    lines = []
    for n, line in enumerate(text.split("\n") if text else [], 1):
        lines.append(_Line(line))
        lines[-1].n = n
    chosen = snippets.select_snippet_lines(lines, target)
    numbers, last = [], 0
    for line in chosen:  # an escaped section marker is written again: the line after the one before
        last = getattr(line, "n", last + 1)
        numbers.append(last)
    if dedent:
        snippets.dedent_subsections = True
        chosen = snippets.select_snippet_lines(lines, target)
    return "\n".join(chosen), numbers


def _resolve(project, name: str) -> Path | tuple[str, str] | None:
    """The file ``name`` names (relative to docs/, then to the project), inside the project; why it
    is refused (what, hint) when a symbolic link on its path leads out of docs/ (snippets would follow
    it), or when it names no file of the project: an absolute path or one that climbs out (snippets
    refuses those by raising, or reads them with ``restrict_base_path: false``), or a missing file
    while ``check_paths`` is on (snippets raises: MkDocs shows a traceback). None when a missing file
    is left out without a word, as snippets does with ``check_paths`` off."""
    nowhere = (f"includes {show(name)}, which is no file of docs/ or of the project", NO_FILE_HINT)
    if os.path.isabs(_SUFFIX.sub("", name)) or os.path.isabs(name):
        return nowhere
    for candidate in (name, _SUFFIX.sub("", name)):
        for base in (project.docs, project.root):
            p = base / candidate
            if os.path.lexists(p):
                real = Path(os.path.realpath(p))
                if real == project.root or project.root.resolve() not in real.parents:
                    return nowhere
                docs = Path(os.path.realpath(project.docs))
                linked = real != Path(os.path.abspath(p))  # a symbolic link on the way
                if linked and docs not in real.parents:
                    inside = real.relative_to(project.root.resolve()).as_posix()
                    what = f"includes {show(name)}, a symbolic link that leads out of docs/ (to `{inside}`)"
                    return what, LINK_HINT
                return p
    return nowhere if _snippets_options(project.root).get("check_paths") else None


LINK_HINT = "include a regular file of docs/ (copy the text in): a link out of docs/ publishes what it leads to"
NO_FILE_HINT = "name a file of docs/ (or of the project's folder) by a relative path"
# The code of a problem whose `--8<--` line names a file that may not be included: pymdownx.snippets
# would raise on it (a traceback) or publish it, so the build stops before any page is rendered.
UNUSABLE = "include-target"


def check(project, pages: list[Path]) -> list[Problem]:
    """The problems of every file that ``pages`` include (and of the ``auto_append`` files), at the
    included file's own lines; a file that is itself one of ``pages`` is checked as a page, not here."""
    checked = {p.resolve() for p in pages}
    queue: list[tuple[Path, str | None, int | None, str]] = []  # (file, where it is named, line, name)
    problems: list[Problem] = []
    if pages:
        for name in auto_append(project.root):
            p = _resolve(project, name)
            if isinstance(p, tuple):
                problems.append(Problem(p[0], "mkdocs.yml", None, p[1], code=UNUSABLE))
            elif p is not None:
                queue.append((p, None, None, name))
    for page in pages:
        queue += _named(project, page, None, problems)
    dedent = bool(_snippets_options(project.root).get("dedent_subsections")) if queue else False
    seen: set[tuple[Path, str]] = set()
    while queue:
        path, by, line, name = queue.pop(0)
        real = path.resolve()
        whole = _SUFFIX.sub("", name) == name  # the whole file, not some of its lines
        if (real, name) in seen or (real in checked and whole):  # a page whole is checked as a page;
            continue  # some of its lines (`x.md:4:4`) are read anew: a fence's line becomes prose here
        seen.add((real, name))
        try:
            st = os.stat(path)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):  # a FIFO or device: never opened (docs/ checks refuse them too)
            problems.append(
                Problem(
                    f"includes {project.rel(path)}, which is not a regular file",
                    by,
                    line,
                    "include a text file of docs/",
                )
            )
            continue
        try:
            text = project.read_page(path)
        except LessonError as exc:
            problems += exc.problems
            continue
        chosen = selection(name, text, dedent)
        if chosen is None:
            problems += project.parse(path, text).engine_html
            queue += _named(project, path, text, problems)
        else:
            part, numbers = chosen
            found = project.parse(path, part).engine_html
            problems += [
                replace(p, line=numbers[p.line - 1] if p.line and p.line <= len(numbers) else p.line) for p in found
            ]
            queue += [
                (p, by_, numbers[n - 1] if n is not None and n <= len(numbers) else n, nm)
                for p, by_, n, nm in _named(project, path, part, problems)
            ]
    return list(dict.fromkeys(problems))  # a line included by two names: one problem


def _named(
    project, path: Path, text: str | None, problems: list[Problem]
) -> list[tuple[Path, str | None, int | None, str]]:
    if text is None:
        try:
            text = project.read_page(path)
        except (LessonError, OSError):
            return []  # the page's own check reports it
    rel = project.rel(path)
    out: list[tuple[Path, str | None, int | None, str]] = []
    for line, name in targets(text):
        if "://" in name:
            continue
        target = _resolve(project, name)
        if isinstance(target, tuple):
            problems.append(Problem(target[0], rel, line, target[1], code=UNUSABLE))
        elif target is not None:
            out.append((target, rel, line, name))
    return out


def unusable(report) -> list[Problem]:
    """The ``--8<--`` lines of a verify report naming a file that may not be included (reported with
    the report's other problems): pymdownx.snippets would raise on them (a traceback) or publish
    them, so a build stops before it renders a page."""
    return [p for p in report.included if p.code == UNUSABLE] if report is not None else []
