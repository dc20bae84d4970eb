"""lessonkit: lesson series about a pinned codebase, with verified source excerpts and
experiments run in the build.

The public API, for a series' own block kinds and attachments and for tools that drive a build::

    from lessonkit import Kind, InlineKind, Resolved, InlineRef   # block kinds (sourcemap/kinds.toml)
    from lessonkit import Attachment, Diagram, Inputs, script_job  # generated pages (sourcemap/attachments.toml)
    from lessonkit import Problem, LessonError                     # one located problem: path:LINE: what — hint
    from lessonkit import Project, Build                           # one project; one site build

The names are imported on first use (PEP 562), so ``import lessonkit`` costs nothing and the
standard-library-only entry points (``python -S -m lessonkit.cli.prefill``) stay so.

The engine is layered (docs/dev/architecture.md): ``config`` reads and checks what a project
says, ``source`` provides the pinned tree and resolves excerpts in it, ``run`` runs experiments
in boxes, ``kinds`` and ``pipeline`` parse and render the blocks, ``attachments`` holds the
interface of generated pages, ``project`` ties them together, ``checks`` verifies
(``checks.verify``, ``checks.mutation``, ``checks.living``), ``site`` makes the generated pages,
``build`` is one site build, ``integrations.mkdocs`` the MkDocs plugin and hooks, ``cli`` the
``lessonkit`` command.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> the module that defines it
_API = {
    "Kind": "lessonkit.kinds.base",
    "InlineKind": "lessonkit.kinds.base",
    "Resolved": "lessonkit.kinds.base",
    "InlineRef": "lessonkit.pipeline.blocks",
    "Attachment": "lessonkit.attachments.base",
    "Diagram": "lessonkit.attachments.base",
    "Inputs": "lessonkit.attachments.base",
    "script_job": "lessonkit.attachments.base",
    "Problem": "lessonkit.errors",
    "LessonError": "lessonkit.errors",
    "Project": "lessonkit.project",
    "Build": "lessonkit.build",
}

__all__ = [
    "Kind",
    "InlineKind",
    "Resolved",
    "InlineRef",
    "Attachment",
    "Diagram",
    "Inputs",
    "script_job",
    "Problem",
    "LessonError",
    "Project",
    "Build",
]

if TYPE_CHECKING:
    from lessonkit.attachments.base import Attachment, Diagram, Inputs, script_job
    from lessonkit.build import Build
    from lessonkit.errors import LessonError, Problem
    from lessonkit.kinds.base import InlineKind, Kind, Resolved
    from lessonkit.pipeline.blocks import InlineRef
    from lessonkit.project import Project


def __getattr__(name: str) -> Any:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'lessonkit' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
