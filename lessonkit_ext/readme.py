"""Mini Autograd's README as a page of the site, its Chinese translation above the original.

A :class:`lessonkit.Attachment` registered in ``sourcemap/attachments.toml``; the page's prose
is ``templates/readme.md``. Standard library and lessonkit only: the build imports this module
while it plans its runs.
"""

from __future__ import annotations

import re

from lessonkit import Attachment, Inputs


class Readme(Attachment):
    """The file ``path`` of the repository as the page ``uri``; ``translation`` (optional) is
    shown above it, without its first heading."""

    def __init__(self, name: str, uri: str, path: str, translation: str | None = None):
        self.name, self.uri, self.path, self.translation = name, uri, path, translation

    @property
    def reads(self) -> tuple[str, ...]:
        return (self.path,) if self.translation is None else (self.path, self.translation)

    def page(self, inputs: Inputs) -> str:
        root = inputs.project.root
        readme = (root / self.path).read_text(encoding="utf-8")
        translation = None
        if self.translation is not None:
            text = (root / self.translation).read_text(encoding="utf-8")
            translation = re.sub(r"^#\s.*\n+", "", text, count=1)
        return inputs.render(
            "readme.md",
            path=self.path,
            translation=translation,
            translation_path=self.translation,
            readme=re.sub(r"^#\s", "## ", readme, count=1),
        )


ATTACHMENT = Readme(
    "mini-readme", "attachments/mini-readme.md", "mini-autograd/README.md", translation="mini-autograd/README.zh.md"
)
