"""lessonkit: verified source excerpts and executed experiments for lesson sites.

The core is independent of MkDocs: ``parse`` finds annotation blocks in
Markdown, ``resolve`` turns them into excerpts of the pinned tree, ``render``
turns excerpts into HTML, ``execute`` runs experiments with a content-keyed
cache, and ``verify`` checks every page without rendering. ``mdext`` wires the
core into Python-Markdown; the MkDocs hooks in ``hooks/`` only adapt events.
"""

__all__ = ["LessonError"]

from lessonkit.errors import LessonError
