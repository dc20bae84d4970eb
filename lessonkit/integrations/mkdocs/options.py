"""The typed options of lessonkit in MkDocs: the plugin's (``plugins: - lessonkit: {…}``) and,
for a series that uses the hooks file, the same options under ``extra: lessonkit:``."""

from __future__ import annotations

from dataclasses import dataclass
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
    # The course features, each unset: the value of `course` (a course cannot turn one off). A guest
    # that turns one on gets that feature's pages or files (see `Features`).
    source_browser = c.Optional(c.Type(bool))  # a page per file of the pinned package and code folders
    symbol_index = c.Optional(c.Type(bool))  # symbols.md, linking into the source browser (needs it)
    bundle = c.Optional(c.Type(bool))  # the downloadable zip of site.toml [bundle] path
    acceptance = c.Optional(c.Type(bool))  # attachments/acceptance.md: what the build checked and ran
    offline_check = c.Optional(c.Type(bool))  # the build fails on a page or stylesheet loading another host


FEATURES = ("site_style", "source_browser", "symbol_index", "bundle", "acceptance", "offline_check")
OPTIONS = "course, add_extensions, system_fonts, " + ", ".join(FEATURES)


@dataclass(frozen=True)
class Features:
    """The course features a build has, each resolved (unset: the value of ``course``).

    :func:`features` makes it and checks what one needs of another: the symbol index links into
    the source browser, so ``symbol_index`` without ``source_browser`` is an error naming both."""

    site_style: bool = False
    source_browser: bool = False
    symbol_index: bool = False
    bundle: bool = False
    acceptance: bool = False
    offline_check: bool = False

    @property
    def pages(self) -> bool:
        """Whether the build adds pages or files that need the series' build (pin, pages checked, runs)."""
        return self.source_browser or self.symbol_index or self.bundle or self.acceptance


def features(options: LessonkitConfig, prefix: str = "plugins.lessonkit") -> Features:
    """The features ``options`` turn on. A :class:`LessonError` (its message starts with the
    option, ``prefix.name``; the caller locates it) when a course turns one off or one is on
    without what it needs."""
    course = bool(options.course)
    chosen = {name: course if options[name] is None else bool(options[name]) for name in FEATURES}
    off = [name for name in FEATURES if not chosen[name]]
    if course and off:
        raise LessonError(
            f"{prefix}.{off[0]} is false, but a course has every course feature (its generated pages and "
            "its checks rely on each other)",
            hint=f"remove `{off[0]}: false`, or remove `course: true` (a guest, whose options each turn one on)",
        )
    if chosen["symbol_index"] and not chosen["source_browser"]:
        raise LessonError(
            f"{prefix}.symbol_index is true, but {prefix}.source_browser is not: the symbol index links "
            "each symbol into the source browser",
            hint="add `source_browser: true`, or remove `symbol_index: true`",
        )
    return Features(**chosen)


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
            hint=f"write the options under `extra:` → `lessonkit:`, one per line ({OPTIONS})",
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
            hint=f"the options are {OPTIONS} (see the engine guide, 'mkdocs.yml')",
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
    try:
        features(options, "extra.lessonkit")
    except LessonError as exc:
        raise exc.at(where, line) from None
    return options
