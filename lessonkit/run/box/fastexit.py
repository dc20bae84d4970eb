"""How a process ends after a cancel by a signal: as it would, minus the interpreter's teardown.

After :func:`lessonkit.run.box.sandbox.cancel_on_signals` has ended the experiments, SIGINT ends
the process through an exception (KeyboardInterrupt): it unwinds as usual (``finally`` blocks,
threads joined, the caller's exit status, "Aborted!"), and then the interpreter frees every
object of the build before it exits: MkDocs, jieba's dictionary, the search index. That took
2–5 s of a loaded machine's CPU, after everything was done, against the 2 s a stop is promised.
:func:`skip_teardown` remembers the status given to ``sys.exit`` from then on; at exit (after the
atexit handlers registered after this module: the boxes' folder, multiprocessing's helpers) the
process ends with it at once. A process that ends otherwise (an uncaught exception) ends as usual.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys

_status: list = []  # what sys.exit was given after a cancel


def skip_teardown() -> None:
    real = sys.exit
    if getattr(real, "lessonkit_fast_exit", False):
        return

    def exit(status=None):
        _status.append(status)
        real(status)

    exit.lessonkit_fast_exit = True  # type: ignore[attr-defined]
    sys.exit = exit


def _at_exit() -> None:
    if not _status:
        return
    status = _status[-1]
    if status is not None and not isinstance(status, int):
        print(status, file=sys.stderr)
        status = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status or 0)


atexit.register(_at_exit)  # imported by sandbox before its own handlers: runs after them
