"""Repin: what every excerpt and experiment would become under another release of the pinned project.

``python -m lessonkit repin TARGET`` (``nox -s repin -- TARGET``). TARGET is a released
version on the package index (``1.9.0``), a full 40-digit commit fetched from
``LESSONKIT_GIT_REMOTE``, or a local checkout (a directory). Four steps, one module each:

* :mod:`.acquire`: the target tree, with the pin's own providers (:mod:`lessonkit.source.providers`);
* :mod:`.classify`: every block and experiment as unchanged / moved / changed / missing
  (experiments, run by :mod:`.runs`: unchanged / differs / fails), by error codes, never by
  message text;
* :mod:`.report`: the summary on stdout and the HTML page (``lessonkit/templates/repin.html``);
* :mod:`.apply`: with ``--apply`` the pin, its manifest, the ``Lines:``/``Emphasize:``/``Commit:``
  headers and the excerpt map are rewritten in one step, verified, and rolled back on any problem;
  where the target changed what a block shows, the pin moves all the same and each such block is
  one located line for the author, with the old and new text.

The exit status is 0 only when nothing beyond "moved" happened and every experiment
prints what it prints at the pin (with ``--apply``: 1 when blocks wait for the author).
"""

from __future__ import annotations

from pathlib import Path

from lessonkit.errors import LessonError
from lessonkit.project import Project
from lessonkit.repin.acquire import WHERE, Target, acquire, classify_target, err, fetch_sdist, tree_version
from lessonkit.repin.apply import apply, page_edits, pin_text
from lessonkit.repin.classify import RepinReport, build_report
from lessonkit.repin.model import Item
from lessonkit.repin.report import render_html, summary_lines

__all__ = [
    "Item",
    "RepinReport",
    "Target",
    "acquire",
    "apply",
    "build_report",
    "classify_target",
    "fetch_sdist",
    "main",
    "page_edits",
    "pin_text",
    "render_html",
    "summary_lines",
    "tree_version",
]


def main(args) -> int:
    """``python -m lessonkit repin TARGET [--commit ID] [--html PATH] [--diffs] [--apply]``."""
    project = Project(Path(args.root))
    try:
        with acquire(args.target, project.cache, project.pin, args.commit) as target:
            report = build_report(project, target)
            for line in summary_lines(report, diffs=args.diffs):
                print(line)
            out = Path(args.html) if args.html else project.root / "site-repin" / "index.html"
            try:
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_text(render_html(report), encoding="utf-8")
            except OSError as exc:
                raise err(
                    f"cannot write the HTML report {out}: {exc.strerror}", hint="give another --html path"
                ) from None
            print(f"HTML report: {project.rel(out)}")
            if args.apply:
                apply(project, report)
                return 1 if report.attention else 0  # 1: the pin moved, the author's edits come next
            return report.exit_code
    except LessonError as exc:
        raise exc.at(WHERE, None) from None
