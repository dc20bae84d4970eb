from lessonkit.integrations.mkdocs.hooks import *  # noqa: F403  (MkDocs hooks: see lessonkit/integrations/mkdocs/hooks.py)
