"""What Markdown made of a page, read as a browser reads it.

The input checks read a page's raw HTML before Markdown runs. Markdown then transforms the text
(it escapes what it does not take for a tag, joins lines, expands attribute lists and extensions),
so what the reader's browser finally parses can hold an element that no input check saw:
``<b<script>…</script>`` is a tag named ``b<script`` to the HTML parser, but Markdown escapes the
``<b`` and passes the ``<script>`` on. This check reads the page's content as Markdown rendered it,
before the engine's blocks are put in and before the theme wraps it, with the same standard parser
(:mod:`lessonkit.util.markup`), and refuses what no lesson's content may hold: elements that run,
load or embed (``script``, frames, ``object``/``embed``, ``base``, ``meta``, ``link``, ``portal``)
and event attributes. The engine's own blocks are not in the content yet (they wait in Markdown's
HTML stash), and the theme's scripts are outside it; ``verify --site`` checks the built page as a
whole.
"""

from __future__ import annotations

import re

from lessonkit.errors import Problem
from lessonkit.pipeline.activehtml import rendered_active

HINT = (
    "a lesson's content may not carry elements that run, load or embed, nor event attributes, "
    "however the Markdown writes them; remove it"
)


def problems(html: str, path: str, source: str) -> list[Problem]:
    """One located line per element of ``html`` (a page's rendered content) that no lesson may
    carry (:func:`lessonkit.pipeline.activehtml.rendered_active`), at the first line of the page's
    Markdown ``source`` that writes it (the page's first line when Markdown made it from text that
    does not read as that tag)."""
    return [
        Problem(f"the page's content has {what}", path, _line(source, text), HINT)
        for what, text in rendered_active(html)
    ]


def _line(source: str, text: str) -> int:
    m = re.search(re.escape(text), source, re.I)
    return source.count("\n", 0, m.start()) + 1 if m else 1
