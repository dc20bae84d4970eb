"""``lessonkit new NN "TITLE" [slug]``: a new lesson that builds and verifies as created, from the
project's templates ``templates/new-lesson.md`` and ``templates/new-experiment.py`` (else the
engine's, in English), in the lessons' folder (site.toml ``[pages] lessons``, default ``docs/lessons/``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping

from lessonkit.config.site import LESSONS
from lessonkit.config.templates import environment, render
from lessonkit.errors import LessonError

SLUG_WORDS = 6  # a slug made from a title keeps its first words


def slug_of(title: str, nn: str) -> str:
    """The slug of a lesson given none: the title's ASCII letters and digits, lowercased, its first
    words joined by ``-`` (``"Three: a / b"`` → ``three-a-b``); ``lesson-NN`` for a title without any."""
    words = re.findall(r"[a-z0-9]+", title.lower())[:SLUG_WORDS]
    return "-".join(words) or f"lesson-{nn}"


def new_lesson(
    root: Path,
    nn: str,
    title: str,
    slug: str | None,
    short: str,
    folder: str = LESSONS,
    pinned: Mapping[str, str | None] | None = None,
) -> list[Path]:
    """Write lesson ``nn`` and its experiment from the templates ``new-lesson.md`` and
    ``new-experiment.py`` (the project's, else the engine's) and add the page to the nav.
    ``pinned``: what the templates may name besides ``nn``, ``title``, ``short`` and ``script``:
    ``upstream`` (the project's name), ``prefix`` (of its ``_PINNED_ROOT`` variable) and ``module`` (the
    package experiments import, or None)."""
    if not re.fullmatch(r"[0-9][0-9]", nn):  # ASCII digits only (\d also matches ١٥)
        raise LessonError(
            f"lesson number `{nn}` is not two digits", path="NUMBER", hint='use e.g. lessonkit new 15 "Title"'
        )
    if not title.strip():
        raise LessonError("the title is empty", path="TITLE", hint='use e.g. lessonkit new 15 "Title"')
    slug = slug or slug_of(title, nn)
    if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", slug):
        raise LessonError(f"slug `{slug}` is not lowercase-words-with-dashes", path="SLUG", hint="e.g. my-topic")
    folder = folder.strip("/") + "/"
    lessons = root / "docs" / folder
    clash = sorted(lessons.glob(f"{nn}-*.md"))
    if clash:
        raise LessonError(
            f"lesson {nn} already exists: {clash[0].relative_to(root).as_posix()}",
            path="NUMBER",
            hint="pick a free number",
        )
    page = lessons / f"{nn}-{slug}.md"
    script = root / "experiments" / f"lesson{nn}_{slug.replace('-', '_')}.py"
    if script.exists():
        raise LessonError(
            f"{script.relative_to(root).as_posix()} already exists", path="SLUG", hint="pick another slug"
        )
    env = environment(root)  # the project's templates/, then the engine's
    names = dict(pinned or {})
    lesson = render(env, "new-lesson.md", **names, nn=nn, title=title.strip(), short=short, script=script.name)
    code = render(env, _template(root, "new-experiment.py"), **names, nn=nn)
    lessons.mkdir(parents=True, exist_ok=True)  # the series' first lesson in a new folder
    page.write_text(lesson, encoding="utf-8")
    script.write_text(code, encoding="utf-8")
    _add_to_nav(root / "mkdocs.yml", f"{folder}{page.name}", int(nn), folder)
    return [page, script]


# The engine's templates that are not what their name says until they are filled in (a .py file
# with Jinja2 in it is not Python): a project's own file of the plain name comes first.
ENGINE_NAMES = {"new-experiment.py": "new-experiment.py.jinja"}


def _template(root: Path, name: str) -> str:
    return name if (root / "templates" / name).is_file() else ENGINE_NAMES.get(name, name)


def _add_to_nav(config: Path, entry: str, number: int, folder: str = "lessons/") -> None:
    """Insert the page after the last lesson entry of a smaller number (else before the first)."""
    lines = config.read_text(encoding="utf-8").split("\n")
    pattern = re.compile(r"^(\s+)- (?:[^\n:]*:\s*)?" + re.escape(folder) + r"(\d\d)-")
    items = {i: m for i, l in enumerate(lines) if (m := pattern.match(l))}
    stage_items = list(items)
    if not stage_items:
        raise LessonError("mkdocs.yml has no lessons in its nav", path="mkdocs.yml", hint="add the page to nav by hand")
    before = [i for i in stage_items if int(items[i][2]) < number]
    anchor = before[-1] if before else stage_items[0] - 1
    indent = items[stage_items[0]][1]
    lines.insert(anchor + 1, f"{indent}- {entry}")
    config.write_text("\n".join(lines), encoding="utf-8")
