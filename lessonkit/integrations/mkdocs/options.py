"""The typed options of lessonkit in MkDocs: the plugin's (``plugins: - lessonkit: {…}``) and,
for a series that uses the hooks file, the same options under ``extra: lessonkit:``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mkdocs.config import base
from mkdocs.config import config_options as c

from lessonkit.errors import LessonError

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig


class LessonkitConfig(base.Config):
    """lessonkit's options (everything else a series says is in its ``sourcemap/``)."""

    # The site is a lessonkit course (every course feature); false: a guest on someone else's site.
    course = c.Type(bool, default=False)
    # Course: add the Markdown extensions lessonkit needs (its own two, tables, toc, …) when the
    # site does not list them. False: the site lists them itself, and a missing one is an error.
    add_extensions = c.Type(bool, default=True)
    # Course: refuse a theme that loads fonts from another host (Material's Google Fonts). Unset:
    # on in a course. False: the course accepts web fonts (its pages then request another host).
    system_fonts = c.Optional(c.Type(bool))
    # lessonkit's stylesheet and script on every page (with the math font they use). Unset: the
    # value of `course`. A guest that turns it on gets exactly these three files and one <link> and
    # one <script> per page; a course cannot turn it off (its generated pages need them).
    site_style = c.Optional(c.Type(bool))


def from_extra(config: "MkDocsConfig") -> LessonkitConfig:
    """The hooks file's options: ``extra: lessonkit:`` of mkdocs.yml, checked as the plugin's are.
    A hooks file is a course: ``course`` is true unless written, and false is refused."""
    from lessonkit.integrations.mkdocs.setup import FIX, _line

    given: Any = config.extra.get("lessonkit", {})
    where, line = FIX, _line(config, "extra")
    if not isinstance(given, dict):
        raise LessonError(
            f"extra.lessonkit is {type(given).__name__}, not a mapping of options",
            path=where,
            line=line,
            hint="write the options under `extra:` → `lessonkit:`, one per line "
            "(course, add_extensions, system_fonts, site_style)",
        )
    options = LessonkitConfig(config_file_path=config.config_file_path)
    options.load_dict({"course": True, **given})
    errors, _warnings = options.validate()
    unknown = sorted(set(given) - {name for name, _ in LessonkitConfig._schema})
    if unknown:
        errors.append((unknown[0], c.ValidationError("not an option of lessonkit")))
    if errors:
        key, error = errors[0]
        raise LessonError(
            f"extra.lessonkit.{key}: {error}",
            path=where,
            line=line,
            hint="the options are course, add_extensions, system_fonts and site_style "
            "(see the engine guide, 'mkdocs.yml')",
        )
    if options.site_style is False:
        raise LessonError(
            "extra.lessonkit.site_style is false, but a course's generated pages need lessonkit's site-wide "
            "stylesheet and script",
            path=where,
            line=line,
            hint="remove `site_style: false`",
        )
    if not options.course:
        raise LessonError(
            "extra.lessonkit.course is false, but the lessonkit hooks file builds a course",
            path=where,
            line=line,
            hint="remove `course: false`, or use `plugins: - lessonkit` (a guest) instead of the hooks file",
        )
    return options
