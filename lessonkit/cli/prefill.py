"""Prefill a project's build cache while the rest of its lock installs.

``python -I -X pycache_prefix=DIR -m lessonkit.cli.prefill ROOT [MODULE …]`` (what ``noxfile.py``
runs on a new environment, as soon as the experiments' own dependencies are installed):

1. import each MODULE (what the experiment scripts import, e.g. ``numpy``), which writes their
   bytecode into the prefix folder that the boxes read;
2. provide the pinned tree into the build cache (on a new machine: the sdist download);
3. read and check every page of ``docs/``, and run every experiment the build will need, through
   the build's own runner: the results land in the content-keyed experiment cache, which the
   build then reads like any other cache entry (keys, digests and all).

Standard library only besides the MODULEs: MkDocs, Markdown and the rest of the lock may still be
installing. A problem here (a page with a mistake, a failing experiment) is not reported: the build
reports it, located, and runs whatever is missing. The exit status says only whether this helped.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from lessonkit.errors import LessonError


def prefill(root: Path, modules: list[str]) -> int:
    """Import ``modules``, provide the tree, run every experiment; the number of runs (cached or not)."""
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # not installed, or broken: the experiments say so in the build
            pass
    from lessonkit.checks import living
    from lessonkit.checks import verify
    from lessonkit.project import Project

    project = Project(root)
    project.tree  # noqa: B018 (the pinned tree, checked against the manifest)
    report = verify.check(project, project.pages())
    return len(project.runner.run_all(living.build_jobs(project, report)))


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m lessonkit.cli.prefill ROOT [MODULE …]", file=sys.stderr)
        return 2
    from lessonkit.run.box import sandbox

    try:
        prefill(Path(argv[0]), argv[1:])
    except LessonError as exc:
        print(exc, file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C reaches the whole group: the boxes are already ended, nox says the rest
        return 130
    # SIGINT cancelled the runs, but its KeyboardInterrupt landed where something caught it (the
    # runs then end as cancelled): the prefill was still interrupted
    return 130 if sandbox.BOXES.cancelled else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
