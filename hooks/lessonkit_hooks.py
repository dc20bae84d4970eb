from lessonkit.mkdocs_hooks import *  # noqa: F403  (MkDocs hooks: see lessonkit/mkdocs_hooks.py)
