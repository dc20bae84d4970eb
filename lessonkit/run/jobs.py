"""What the runner works on and hands back: a :class:`Job`, its :class:`Result`, the
:class:`Pending` runs of :meth:`lessonkit.run.runner.Runner.start`, and the files shared by every
box. (Split from :mod:`lessonkit.run.runner`, which re-exports these names.)"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sys
import threading
from concurrent.futures import CancelledError, ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from lessonkit.run.box import sandbox

# The limits of every run (module attributes read at call time, so a test may lower them).
OUTPUT_CAP = 64 * 1024  # stdout shown on the page; the rest is counted
STDERR_CAP = 16 * 1024  # stderr kept (its end)
FILE_LIMIT = 64 * 1024 * 1024  # largest file a script may write, its stdout included (RLIMIT_FSIZE)
RECORD_LIMIT = 4 * 1024 * 1024  # the record file (LESSONKIT_RECORD)


@dataclass(frozen=True)
class Job:
    name: str  # file name the script runs under (shown in tracebacks)
    source: bytes
    timeout: int
    label: str  # where it comes from, e.g. experiments/x.py or docs/a.md:12
    memory: int = sandbox.DEFAULT_MEMORY  # address-space limit in bytes (`Memory:`)
    # An inline driver (lessonkit.run.session): the page blocks it runs, (page line, code) in order;
    # the job's own output is the last one's.
    parts: tuple[tuple[int, str], ...] = ()
    part_labels: tuple[str, ...] = ()  # where each of them is (docs/a.md:12)
    # A session block before the last one: the job of the whole session, which runs instead (the
    # result of this job comes with it). The whole session's job lists the jobs before it.
    whole: "Job | None" = None
    prefixes: tuple["Job", ...] = ()
    reads: bytes | None = None  # the text whose names decide the sibling scripts in the key (default: source)


@dataclass(frozen=True)
class Result:
    key: str
    exit_code: int
    stdout: str  # sanitised: control characters shown visibly
    stderr: str  # sanitised; kept for passing experiments too (its last STDERR_CAP bytes)
    truncated: int  # bytes of stdout not shown (0: complete)
    cpu_seconds: float
    wall_seconds: float
    timed_out: bool = False
    cached: bool = False
    record: dict | None = None  # the JSON object the script wrote to $LESSONKIT_RECORD
    problem: str = ""  # what the runner found wrong besides the exit code (record, tree, box)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and not self.problem

    @property
    def digest(self) -> str:
        data = self.stdout.encode()
        if self.record is not None:
            data += b"\0" + json.dumps(self.record, sort_keys=True, ensure_ascii=False).encode()
        return hashlib.sha256(data).hexdigest()


@lru_cache(maxsize=8)
def versions(tools: tuple[tuple[str, str], ...] = ()) -> dict[str, str]:
    """Label -> version of the interpreter and of each ``(label, distribution)`` in ``tools`` (a
    project's ``[experiments] versions``), in that order; a distribution not installed is ``missing``."""
    out = {"Python": ".".join(map(str, sys.version_info[:3]))}
    for label, dist in tools:
        try:
            out[label] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[label] = "missing"
    return out


class Pending:
    """Jobs running in the background (see :meth:`Runner.start`)."""

    def __init__(self, futures: dict, pool: ThreadPoolExecutor, to_run: int, signals: contextlib.ExitStack):
        self._futures = futures
        self._pool = pool
        self.to_run = to_run  # how many were not in the cache when started
        self._signals = signals  # SIGINT/SIGTERM end the experiments until results() or cancel()

    def on_each_done(self, callback) -> None:
        """Call ``callback(done, total)`` from a worker thread each time a job ends (cached ones
        count as done at once)."""
        futures = list(self._futures.values())
        total, lock, count = len(futures), threading.Lock(), [0]

        def one(_future) -> None:
            with lock:
                count[0] += 1
                done = count[0]
            callback(done, total)

        for f in futures:
            f.add_done_callback(one)

    def results(self) -> dict[str, Result]:
        """Wait for every job (in the order given to start)."""
        return self._collect(dropped_too=True)

    def finish(self) -> None:
        """Start no more jobs: the ones not started yet are dropped (their futures cancelled), the
        running ones end as they would. Safe from any thread; collect with :meth:`settled`."""
        self._pool.shutdown(wait=False, cancel_futures=True)

    def settled(self) -> dict[str, Result]:
        """Wait for every job that was not dropped by :meth:`finish`; their results, in order."""
        return self._collect(dropped_too=False)

    def _collect(self, dropped_too: bool) -> dict[str, Result]:
        """Wait for the jobs, in order; a dropped one raises CancelledError unless not ``dropped_too``."""
        out: dict[str, Result] = {}
        try:
            for k, f in self._futures.items():
                try:
                    out[k] = f.result()
                except CancelledError:
                    if dropped_too:
                        raise
            return out
        finally:
            self._pool.shutdown(wait=True)
            self._signals.close()

    def cancel(self) -> None:
        """Drop the jobs not started yet, kill the running ones and remove their folders."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        sandbox.BOXES.kill_all()
        self._signals.close()


def pin_args(pin, project_root: Path) -> dict:
    """The Runner arguments that come from the pin: its commit and sdist sha256 (in every key), its
    manifest, where its lines are, the project."""
    from lessonkit.source.pin import manifest_lines

    path = pin.source.parent / "manifest.sha256"
    try:
        lines = manifest_lines(path)
    except (OSError, ValueError):
        lines = {}
    return {
        "pin_commit": pin.commit,
        "pin_sdist_sha256": pin.sdist_sha256,
        "manifest": pin.manifest,
        "manifest_label": pin.manifest_label,
        "manifest_lines": lines,
        "project_root": project_root,
    }
