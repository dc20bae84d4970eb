"""The attachments a project registers: generated pages of its own, beside the engine's.

The engine writes two attachments itself (:mod:`lessonkit.site.attachments`): the acceptance
record and, with ``sourcemap/roles.toml``, the repository map. A project adds its own in
``sourcemap/attachments.toml``, as it adds block kinds in ``sourcemap/kinds.toml``::

    # modules importable from the project root; each defines ATTACHMENT (or ATTACHMENTS = [...])
    modules = ["lessonkit_ext.diagrams", "lessonkit_ext.readme"]

Each module defines instances of :class:`~lessonkit.attachments.base.Attachment` (or of
:class:`~lessonkit.attachments.base.Diagram`). :func:`for_project` imports the modules (from the
project root only, see :mod:`lessonkit.config.modules`) and checks every attachment before the
build plans anything: its name, the page it writes (a new ``.md`` page, not one of docs/ nor of
the engine's) and the files it reads. Each mistake is one line
``sourcemap/attachments.toml:LINE: what — hint`` at the line naming the module; an exception
raised by an attachment's own code is one line at the line of that code that raised it
(:meth:`Registered.failure`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from lessonkit.attachments.base import Attachment, Diagram, Inputs, script_job
from lessonkit.config.environment import display_text
from lessonkit.config.files import _type_name, show, tree_path_problem
from lessonkit.config.modules import HINT, Registration, raised_at, read_modules, registered_objects
from lessonkit.errors import LessonError

__all__ = ["Attachment", "Diagram", "Inputs", "Registered", "for_project", "script_job", "CONFIG"]

CONFIG = "sourcemap/attachments.toml"
# What the engine writes itself (lessonkit.site): a registered attachment writes another page.
ENGINE_PAGES = ("attachments/acceptance.md", "attachments/repo-map.md", "symbols.md")
ENGINE_FOLDERS = ("source/", "code/", "assets/")
# The same, as the pages a file of docs/ may not stand in for (lessonkit.config.checks.replaced_files).
ENGINE_PAGE_OWNERS = {
    "attachments/acceptance.md": "the engine's acceptance record page",
    "attachments/repo-map.md": "the engine's repository map page",
    "symbols.md": "the engine's symbol index page",
    "source/": "the engine's source browser (site/source/)",
    "code/": "the engine's code pages (site/code/)",
}
NAME = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
MAX_NAME = 64
REGISTRATION = Registration(
    label=CONFIG,
    what="attachment",
    one="ATTACHMENT",
    many="ATTACHMENTS",
    types=(Attachment,),
    plural="attachments",
    type_name="an Attachment",
    example="MyAttachment(…)",
    instance_note="an instance of a lessonkit.Attachment subclass",
)


class Registered(Sequence):
    """The project's attachments, in the order ``attachments.toml`` lists their modules (and each
    module its ``ATTACHMENTS``), with where each was registered."""

    def __init__(self, root: Path, entries: list[tuple[Attachment, str, int]] | None = None):
        self.root = Path(root)
        self._entries = list(entries or [])

    def __getitem__(self, i):
        return self._entries[i][0] if isinstance(i, int) else [e[0] for e in self._entries[i]]

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, a) -> bool:
        return any(e[0] is a for e in self._entries)

    def where(self, a: Attachment) -> tuple[str, int]:
        """The module that registered ``a`` and the line of ``attachments.toml`` naming it."""
        for att, module, line in self._entries:
            if att is a:
                return module, line
        raise KeyError(a)

    def call(self, a: Attachment, method: str, *args):
        """``a.<method>(*args)``; a registered attachment's exception is a located error
        (:meth:`failure`); a LessonError it raises passes unchanged."""
        try:
            return getattr(a, method)(*args)
        except LessonError:
            raise
        except Exception as exc:
            if a not in self:
                raise  # the engine's own attachments: a bug of lessonkit, with its traceback
            raise self.failure(a, method, exc) from None

    def failure(self, a: Attachment, method: str, exc: BaseException) -> LessonError:
        """One line for an exception of ``a``'s code: at the deepest line of the project's own
        files in its traceback, else at the registration."""
        module, line = self.where(a)
        path, at = raised_at(self.root, exc, CONFIG, line)
        return LessonError(
            f"attachment `{a.name}` failed in {method}(): {type(exc).__name__}: {display_text(str(exc), 200)}",
            path=path,
            line=at,
            hint=f"a mistake in module `{module}` ({CONFIG}:{line} registers it)",
        )


def for_project(root: Path) -> Registered:
    """The attachments the project registers in ``sourcemap/attachments.toml`` (none without it),
    checked (see the module docstring)."""
    root = Path(root)
    if not (root / CONFIG).exists() and not (root / CONFIG).is_symlink():
        return Registered(root)
    entries: list[tuple[Attachment, str, int]] = []
    for name, line in read_modules(root, CONFIG, HINT):
        for a in registered_objects(root, name, line, REGISTRATION):
            _check(root, a, name, line, entries)
            entries.append((a, name, line))
    return Registered(root, entries)


def _check(root: Path, a: Attachment, module: str, line: int, before: list[tuple[Attachment, str, int]]) -> None:
    def error(what: str, hint: str) -> LessonError:
        return LessonError(what, path=CONFIG, line=line, hint=hint)

    name = a.name
    if not isinstance(name, str) or not NAME.fullmatch(name) or len(name) > MAX_NAME:
        raise error(
            f"module `{module}` lists an attachment named {show(name)}, not lowercase words joined by `-`",
            'set `name = "call-sequence"` (or pass it to the constructor)',
        )
    what = f"attachment `{name}` (module `{module}`)"
    uri = a.uri
    problem = (
        f"is {_type_name(uri)}, not a page path"
        if not isinstance(uri, str)
        else tree_path_problem(uri)
        or (None if uri.endswith(".md") else "does not end in `.md`")
        or ("is a page lessonkit writes itself" if uri in ENGINE_PAGES or uri.startswith(ENGINE_FOLDERS) else None)
    )
    if problem:
        raise error(
            f"{what} writes {show(uri)}, which {problem}",
            'give it a page of its own under docs/, e.g. `uri = "attachments/call-sequence.md"`',
        )
    for other, other_module, _ in before:
        if other.name == name:
            raise error(f"two attachments are named `{name}` (modules `{other_module}` and `{module}`)", "rename one")
        if other.uri == uri:
            raise error(
                f"{what} writes {uri}, as attachment `{other.name}` (module `{other_module}`) does",
                "give each attachment a page of its own",
            )
    docs = root / "docs" / uri
    if docs.exists() or docs.is_symlink():
        raise error(
            f"{what} writes {uri}, which docs/ holds as a page of its own",
            f"remove docs/{uri} or give the attachment another page",
        )
    reads = a.reads
    if not isinstance(reads, (tuple, list)) or not all(isinstance(r, str) for r in reads):
        raise error(f"`reads` of {what} is {_type_name(reads)}, not a list of paths", 'e.g. `("experiments/x.py",)`')
    real_root = os.path.realpath(root) + os.sep
    for rel in reads:
        problem = tree_path_problem(rel)
        if problem is None and not os.path.realpath(root / rel).startswith(real_root):
            problem = "leads outside the project (a link)"
        if problem is None and not (root / rel).is_file():
            problem = "is a folder, not a file" if (root / rel).is_dir() else "does not exist"
        if problem:
            raise error(
                f"{what} reads {show(rel)}, which {problem}", "name a file of the project, relative to its root"
            )
