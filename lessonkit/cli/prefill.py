"""Prefill a project's build cache while the rest of its lock installs.

``python -I -X pycache_prefix=DIR -m lessonkit.cli.prefill [--wait] ROOT [MODULE …]`` (what
``noxfile.py`` runs on a new environment, as soon as the environment exists):

1. provide the pinned tree into the build cache (on a new machine: the sdist download), and read
   and check every page of ``docs/``;
2. with ``--wait``: wait for one line on stdin, which says that the experiments' own dependencies
   are now installed (the noxfile writes it once they are; end of input without it: exit 1);
3. import each MODULE (what the experiment scripts import, e.g. ``numpy``), which writes their
   bytecode into the prefix folder that the boxes read;
4. run every experiment the build will need, through the build's own runner: the results land in
   the content-keyed experiment cache, which the build then reads like any other cache entry
   (keys, digests and all; the versions that key them are read after step 2). With ``--wait``, a
   second line on stdin (or its end) says that the build is about to start: no further
   experiment is started, the running ones end and are stored, and the build runs the rest.

Standard library only besides the MODULEs: MkDocs, Markdown and the rest of the lock may still be
installing. A problem here (a page with a mistake, a failing experiment) is not reported: the build
reports it, located, and runs whatever is missing. The exit status says only whether this helped.
"""

from __future__ import annotations

import importlib
import sys
import threading
from pathlib import Path

from lessonkit.errors import LessonError


class _NotInstalled(Exception):
    """stdin ended before its first line: the installer stopped."""


def prefill(root: Path, modules: list[str], wait: bool = False) -> int:
    """Provide the tree, check the pages, (``wait``: wait for stdin's line,) import ``modules``, run
    every experiment; the number of runs (cached or not)."""
    from lessonkit.checks import living, verify
    from lessonkit.project import Project
    from lessonkit.run import jobs

    project = Project(root)
    project.tree  # noqa: B018 (the pinned tree, checked against the manifest)
    report = verify.check(project, project.pages(), installed=False)  # NumPy may be installed only later
    if wait:
        if not sys.stdin.readline():
            raise _NotInstalled()
        importlib.invalidate_caches()  # what was installed meanwhile: modules and their metadata
        jobs.versions.cache_clear()
        project.__dict__.pop("runner", None)  # a runner made before would key runs by the old versions
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # not installed, or broken: the experiments say so in the build
            pass
    pending = project.runner.start(living.build_jobs(project, report))
    if wait:  # the next line: the build starts now and runs what is not started yet

        def finish() -> None:
            sys.stdin.readline()
            pending.finish()

        threading.Thread(target=finish, name="lessonkit-prefill-finish", daemon=True).start()
    return len(pending.settled())


def main(argv: list[str]) -> int:
    wait = argv[:1] == ["--wait"]
    argv = argv[1:] if wait else argv
    if not argv:
        print("usage: python -m lessonkit.cli.prefill [--wait] ROOT [MODULE …]", file=sys.stderr)
        return 2
    from lessonkit.run.box import sandbox

    try:
        prefill(Path(argv[0]), argv[1:], wait)
    except LessonError as exc:
        print(exc, file=sys.stderr)
        return 1
    except _NotInstalled:
        print(
            "prefill: stdin ended before its line 'installed' — the installer stopped; nothing was run",
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt:  # Ctrl-C reaches the whole group: the boxes are already ended, nox says the rest
        return 130
    # SIGINT cancelled the runs, but its KeyboardInterrupt landed where something caught it (the
    # runs then end as cancelled): the prefill was still interrupted
    return 130 if sandbox.BOXES.cancelled else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
