"""The ``lessonkit`` MkDocs plugin: ``plugins: - lessonkit`` in a site's mkdocs.yml.

It is the same code path as the hooks file (:mod:`lessonkit.integrations.mkdocs.hooks`): its
events call the hooks' functions, which make one :class:`lessonkit.build.Build` per
configuration. Registered as the ``lessonkit`` entry point of the ``mkdocs.plugins`` group.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mkdocs.config import base
from mkdocs.config import config_options as c
from mkdocs.plugins import BasePlugin, event_priority

from lessonkit.integrations.mkdocs import hooks

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig


class LessonkitConfig(base.Config):
    """The plugin's options (everything else a series says is in its ``sourcemap/``)."""

    # Add the Markdown extensions lessonkit needs (its own two, tables, toc, …) when the site does
    # not list them. False: the site lists them itself, and a missing one is an error.
    add_extensions = c.Type(bool, default=True)


class LessonkitPlugin(BasePlugin[LessonkitConfig]):
    """Wires lessonkit into MkDocs. The project is the folder of mkdocs.yml: its ``docs/`` (MkDocs'
    ``docs_dir``), ``sourcemap/``, ``experiments/`` and ``templates/``."""

    supports_multiple_instances = False

    def on_startup(self, *, command: str, dirty: bool) -> None:
        hooks.on_startup(command, dirty)

    def on_shutdown(self) -> None:
        hooks.on_shutdown()

    @event_priority(100)  # as the hooks' on_config: before the other plugins
    def on_config(self, config: "MkDocsConfig") -> "MkDocsConfig":
        hooks.configure(config, add_extensions=self.config.add_extensions)
        return config
