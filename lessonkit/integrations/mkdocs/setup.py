"""What a site's MkDocs configuration must hold for lessonkit's pages to render, added or checked
in ``on_config`` (the plugin and the hooks file share this step).

* The engine's Markdown extensions (annotation blocks and formulas) and the standard ones its
  HTML needs are added when missing, like mkdocstrings adds its own: a site lists
  ``plugins: - lessonkit`` and nothing else. An extension the site configures itself keeps the
  site's options, apart from the few lessonkit's markup cannot do without, which are checked.
* A theme that would load fonts from another host (Material's default Google Fonts) is reported
  as what it is, with the fix: the built site makes no request to another host.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lessonkit.errors import LessonError

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig

BLOCKS = "lessonkit.pipeline.markdown"
MATH = "lessonkit.pipeline.mathml"

# Extension -> options lessonkit's HTML needs (the site may set others). Order is the order added.
REQUIRED: dict[str, dict[str, Any]] = {
    "attr_list": {},  # ids and classes on headings and links of the generated pages
    "md_in_html": {},  # Markdown inside the engine's HTML wrappers
    "tables": {},  # snapshot tables, the acceptance page, the symbol index
    "toc": {},  # heading ids: every link to a section of a lesson
    "pymdownx.highlight": {"anchor_linenums": True, "line_spans": "__span", "pygments_lang_class": True},
    "pymdownx.superfences": {},  # fenced blocks inside lists, admonitions and quotes
}
FIX = "mkdocs.yml"


def _line(config: "MkDocsConfig", key: str) -> int | None:
    """The line of the top-level ``key:`` in the site's mkdocs.yml (None: not written there)."""
    try:
        text = Path(config.config_file_path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, TypeError):
        return None
    for n, line in enumerate(text.split("\n"), 1):
        if re.match(rf"{re.escape(key)}\s*:", line):
            return n
    return None


def prepare(config: "MkDocsConfig", root: str, *, system_fonts: bool = True) -> None:
    """Add the extensions lessonkit needs to ``config`` (in place), then :func:`check` it."""
    names: list[str] = config.markdown_extensions
    mdx: dict[str, dict[str, Any]] = config.mdx_configs
    for name in (MATH, BLOCKS):  # the blocks first: their preprocessor must see the raw lines
        if name not in names:
            names.insert(0, name)
    mdx.setdefault(BLOCKS, {}).setdefault("root", root)
    for name in REQUIRED:
        if name not in names:
            names.append(name)
    check(config, system_fonts=system_fonts)


def check(config: "MkDocsConfig", *, system_fonts: bool = True) -> None:
    """Every extension lessonkit needs is listed with the options its markup needs; the theme
    loads nothing from another host. A problem is one located line with the fix."""
    names: list[str] = config.markdown_extensions
    mdx: dict[str, dict[str, Any]] = config.mdx_configs
    for name in (BLOCKS, MATH, *REQUIRED):
        if name not in names:
            raise LessonError(
                f"markdown_extensions: {name} is missing; without it lessonkit's pages show raw Markdown",
                path=FIX,
                line=_line(config, "markdown_extensions"),
                hint=f"add `- {name}` under markdown_extensions, or leave the plugin's `add_extensions` on, "
                "which adds it",
            )
    for name, needed in REQUIRED.items():
        options = mdx.setdefault(name, {})
        for key, value in needed.items():
            if options.setdefault(key, value) != value:
                raise LessonError(
                    f"markdown_extensions: {name} sets {key}: {options[key]!r}; lessonkit's code blocks need {value!r}",
                    path=FIX,
                    line=_line(config, "markdown_extensions"),
                    hint=f"remove {key} from {name}'s options (or set it to {value!r})",
                )
    theme = config.theme
    if system_fonts and getattr(theme, "name", None) == "material" and theme.get("font", None) is not False:
        raise LessonError(
            "theme.font: Material loads its fonts from fonts.googleapis.com, and the site must make no "
            "request to another host",
            path=FIX,
            line=_line(config, "theme"),
            hint="set `font: false` under `theme:` (system fonts), or serve the fonts from docs/",
        )
