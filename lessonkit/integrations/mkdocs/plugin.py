"""The ``lessonkit`` MkDocs plugin: ``plugins: - lessonkit`` in a site's mkdocs.yml.

Two modes, chosen by the ``course`` option:

* **Guest** (the default): added to any existing site, the plugin changes nothing it was not
  asked to. Pages without an annotation block are written byte for byte as they were; a page
  that uses a block gets the block and a stylesheet scoped to blocks
  (:mod:`lessonkit.integrations.mkdocs.guest`). Each course feature is an option of its own
  (``site_style``, ``source_browser``, ``symbol_index``, ``acceptance``, ``bundle``,
  ``offline_check``; :class:`~lessonkit.integrations.mkdocs.options.Features`) that a guest may
  turn on, and gets that feature alone.
* **Course** (``course: true``): the site is a lessonkit series. This is the code path of the
  hooks file (:mod:`lessonkit.integrations.mkdocs.hooks`): the pinned tree, the experiments, the
  source browser, symbol index, attachments, bundle, acceptance page, the site-wide stylesheet
  and script, the search index rewrite, the link check of the written site and the record for
  ``verify --site``; the site must make no request to another host (Material's web fonts off)
  and keep its pages in ``docs/``. A course cannot turn a feature off. ``lessonkit init`` writes
  ``course: true``.

Registered as the ``lessonkit`` entry point of the ``mkdocs.plugins`` group.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin, event_priority

from lessonkit.errors import LessonError
from lessonkit.integrations.mkdocs import guest, hooks
from lessonkit.integrations.mkdocs.options import LessonkitConfig, features

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig


class LessonkitPlugin(BasePlugin[LessonkitConfig]):
    """Wires lessonkit into MkDocs. The project is the folder of mkdocs.yml."""

    supports_multiple_instances = False

    def on_startup(self, *, command: str, dirty: bool) -> None:
        hooks.on_startup(command, dirty)

    def on_shutdown(self) -> None:
        hooks.on_shutdown()

    @event_priority(100)  # as the hooks' on_config: before the other plugins
    def on_config(self, config: "MkDocsConfig") -> "MkDocsConfig":
        options = self.config
        if options.course:
            if options.site_style is False:
                raise PluginError(
                    "mkdocs.yml: plugins.lessonkit.site_style is false, but a course's generated pages (source "
                    "browser, symbol index, attachments) need lessonkit's site-wide stylesheet and script — "
                    "remove `site_style: false`, or remove `course: true` (a guest)"
                )
        try:
            chosen = features(options)
        except LessonError as exc:
            raise PluginError(str(exc.at("mkdocs.yml", _plugin_line(config)))) from None
        if options.course:
            fonts = True if options.system_fonts is None else options.system_fonts
            hooks.configure(config, add_extensions=options.add_extensions, system_fonts=fonts)
        else:
            events = config.plugins.get(hooks.PLUGIN)
            if isinstance(events, guest.Guest):  # a second on_config of this configuration
                events.features = chosen
                events.configure(config)
            else:  # registers its on_* methods for the rest of this configuration's build
                config.plugins[hooks.PLUGIN] = guest.Guest(config, chosen)  # type: ignore[assignment]
        return config


def _plugin_line(config: "MkDocsConfig") -> int | None:
    """The line of ``mkdocs.yml`` that names the plugin (``- lessonkit``), None: not found."""
    try:
        lines = Path(config.config_file_path).read_text(encoding="utf-8").split("\n")
    except (OSError, UnicodeDecodeError, TypeError):
        return None
    for n, line in enumerate(lines, 1):
        if line.strip().removeprefix("-").strip().removesuffix(":") == "lessonkit":
            return n
    return None
