"""What one experiment run leaves behind, and what it means: the record file a script writes
(``$LESSONKIT_RECORD``, read as a regular file only), the form of a stored result, and the
one-line error for a run that did not pass. Re-exported by :mod:`lessonkit.run.runner`, which keeps the limits
(in :mod:`lessonkit.run.jobs`, read at call time, so a test may lower ``jobs.FILE_LIMIT``)."""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import re
import signal
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from lessonkit.errors import LessonError
from lessonkit.run.box import sandbox

if TYPE_CHECKING:
    from lessonkit.run.jobs import Job, Result


def _check(data: dict) -> str:
    """Digest of a stored result's value (every field but ``check``), in one canonical form."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, ensure_ascii=True).encode()).hexdigest()


_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a folder",
    stat.S_IFCHR: "a device",
    stat.S_IFBLK: "a device",
}


class NotFinite(ValueError):
    """A number of a record that is no finite float (``1e400``)."""


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise NotFinite(f"the number {text[:40]} is too large for a float")
    return value


def read_record(box_dir: Path, limit: int) -> tuple[dict | None, str]:
    """The record the script left at ``io/record.json`` of its box folder, or a problem saying why
    it is not one; an empty file is no record (the runner makes it empty). Opened without
    following a link at any step (without a jail the box owns ``io/``), without blocking (a
    FIFO), and only as a regular file of at most ``limit`` bytes. Its numbers are finite: NaN,
    Infinity and numbers beyond a float's range (``1e400``) are refused."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    fds = []
    try:
        fds.append(os.open(box_dir, flags | os.O_DIRECTORY))
        fds.append(os.open("io", flags | os.O_DIRECTORY, dir_fd=fds[-1]))
        fds.append(os.open("record.json", flags | os.O_NONBLOCK | os.O_NOCTTY, dir_fd=fds[-1]))
        st = os.fstat(fds[-1])
        if not stat.S_ISREG(st.st_mode):
            return None, f"record: {_KINDS.get(stat.S_IFMT(st.st_mode), 'not a file')}, not a regular file"
        if st.st_size > limit:
            return None, f"record: larger than {limit >> 20} MiB"
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fds[-1], limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        data = b"".join(chunks)
    except FileNotFoundError:
        return None, ""
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None, "record: a symbolic link, not a regular file"
        return None, f"record: cannot read it ({exc.strerror})"
    finally:
        for fd in fds:
            os.close(fd)
    if len(data) > limit:
        return None, f"record: larger than {limit >> 20} MiB"
    if not data:
        return None, ""

    def no_constant(name):
        raise ValueError(f"{name} is not JSON")

    try:
        value = json.loads(data.decode("utf-8"), parse_constant=no_constant, parse_float=_finite)
    except NotFinite as exc:
        return None, f"record: {exc}"
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return None, f"record: not valid JSON ({str(exc)[:120]})"
    if not isinstance(value, dict):
        return None, f"record: a JSON {type(value).__name__}, not an object"
    return value, ""


_STORED: dict[str, type | tuple[type, ...]] = {
    "key": str,
    "exit_code": int,
    "stdout": str,
    "stderr": str,
    "truncated": int,
    "cpu_seconds": (int, float),
    "wall_seconds": (int, float),
    "timed_out": bool,
    "record": (dict, type(None)),
    "problem": str,
}


def session_results(job: "Job", raw: "Result", key_of) -> dict[str, "Result"]:
    """The results of the blocks an inline driver ran (:mod:`lessonkit.run.session`), by key: the
    job's own (its last block) and, for the whole of a session, those of the jobs before it.

    A block before the one where the run stopped passed; that block has the run's failure (its
    exit code, timeout and stderr); the blocks after it did not run (problem ``session: LABEL``, the
    stopping block's label). A failure the box or the tree caused (tampered, vanished, …) is every
    block's. A run that passed but whose output was cut off after the stopping block's mark shows
    what it has, with the cut counted."""
    from dataclasses import replace as copy

    from lessonkit.run.jobs import Result
    from lessonkit.run.session import end_mark_bytes, split

    blocks = len(job.parts)
    jobs = {blocks - len(job.prefixes) + n: j for n, j in enumerate(job.prefixes)}  # block number -> job
    jobs[blocks] = job
    outs, ended = split(raw.stdout, list(job.parts))
    started = [n for n, text in enumerate(outs, 1) if text is not None]
    stop = blocks if ended else (started[-1] if started else 1)
    cut = max(0, raw.truncated - end_mark_bytes(list(job.parts))) if raw.truncated else 0
    out = {}
    for n, j in sorted(jobs.items()):
        k, text = key_of(j), outs[n - 1] or ""
        own = n == blocks
        passed = Result(k, 0, text, raw.stderr if own else "", 0, raw.cpu_seconds, raw.wall_seconds)
        if raw.problem:  # the box's or the tree's failure, not a block's
            out[k] = copy(raw, key=k, stdout=text, record=None)
        elif ended or n < stop:
            out[k] = copy(passed, record=raw.record if own else None)
        elif raw.ok and (raw.truncated or n == stop):  # cut off, or sys.exit(0) in the stopping block
            out[k] = copy(passed, truncated=cut if raw.truncated else 0)
        elif n == stop:
            out[k] = copy(raw, key=k, stdout=text, record=None)
        else:
            stopped = f"session: {job.part_labels[stop - 1] if job.part_labels else job.label}"
            out[k] = copy(raw, key=k, stdout="", stderr="", record=None, timed_out=False, problem=stopped)
    return out


RECORD_WHY = {
    "missing": "none is stored for its key",
    "damaged": "the stored one is damaged",
    "unsealed": "the stored one does not carry this cache's seal: it was rewritten outside lessonkit",
    "stale": "the stored one is not a passing run of this key",
}

_OOM = ("MemoryError", "Unable to allocate", "Cannot allocate memory", "std::bad_alloc")


def failure(result: Result | None, job: Job, timeout: int) -> LessonError:
    """The one-line error for a job that did not pass (located by the caller with ``.at``). Every
    place of a page that cites the run gets the same error, marked as about this run, so that the
    page reports it once (:func:`lessonkit.errors.fold_repeats`)."""
    return _failure(result, job, timeout).about(run_about(job))


def as_authored(stderr: str, job: Job) -> str:
    """``stderr`` of ``job``'s run with the script named as its author knows it: a traceback names
    the script's copy in the box (``<tmp>/x.py``, see Runner.normalise), the author edits
    ``experiments/x.py``. What the cache stores is not changed (it is what the box printed)."""
    if job.parts or not job.label.endswith("/" + job.name):
        return stderr
    return stderr.replace(f'File "<tmp>/{job.name}"', f'File "{job.label}"')


def run_about(job: Job) -> str:
    """The :attr:`~lessonkit.errors.Problem.about` of the failures of ``job``'s run."""
    return "run " + job.label


def _failure(result: Result | None, job: Job, timeout: int) -> LessonError:
    from lessonkit.run.box.jail import TMP_SIZE, WORK_SIZE
    from lessonkit.run.jobs import FILE_LIMIT, OUTPUT_CAP

    label = job.label
    run_hint = "run it by hand: lessonkit run " + label
    if result is None or result.problem == "cancelled":
        return LessonError(
            f"experiment {label} was cancelled before it finished", hint="the build was interrupted; build again"
        )
    stderr = as_authored(result.stderr, job)
    tail = " | ".join(l for l in stderr.strip().splitlines()[-3:]) or "no stderr"
    if result.problem == "tampered":
        return LessonError(
            f"experiment {label} ran while the pinned tree changed; its output is not used",
            hint="an experiment of this build wrote into the pinned tree; see the manifest lines",
        )
    if result.problem.startswith("session: "):
        return LessonError(
            f"experiment {label} did not run: its session stopped at the block at {result.problem[9:]}",
            hint="the blocks of a session run in order in one interpreter; fix that block first",
        )
    if result.problem.startswith("not recorded: "):  # a check of a built site (Runner.recorded) runs nothing
        return LessonError(
            f"no result of experiment {label} is recorded in the build cache ({RECORD_WHY[result.problem[14:]]})",
            hint="build the site again (`lessonkit build`) with the same LESSONKIT_CACHE",
        )
    if result.problem.startswith("record: "):
        finite = result.problem.startswith("record: the number ")
        return LessonError(
            f"experiment {label} wrote a bad record to $LESSONKIT_RECORD: {result.problem[8:]}",
            hint="record finite numbers (a float ends near 1.8e308)"
            if finite
            else "write one JSON object of at most 4 MiB, or nothing",
        )
    if result.problem.startswith("vanished: "):
        return LessonError(
            f"experiment {label} lost its temporary folder ({result.problem[10:]}); its output is not used",
            hint="another program removed or filled it (a /tmp cleaner, a full disk); build again",
        )
    if result.problem.startswith("box: "):  # said by the launcher on its own channel, never by the script
        return LessonError(
            f"experiment {label} could not be started in its box: {result.problem[5:]}",
            hint="the jail failed, not the script: see docs/dev/reliability.md (LESSONKIT_SANDBOX chooses the jail)",
        )
    if result.exit_code == -signal.SIGXFSZ or "File too large" in result.stderr:
        return LessonError(
            f"experiment {label} wrote more than {FILE_LIMIT >> 20} MiB to one file, its output "
            "included, and was stopped (File too large)",
            hint=f"print less: the page shows the first {OUTPUT_CAP >> 10} KiB",
        )
    if result.timed_out:
        return LessonError(
            f"experiment {label} did not finish within {timeout} s and was stopped",
            hint="make it faster, or raise `Timeout:` for this block",
        )
    if result.exit_code != 0 and "No space left on device" in result.stderr:
        return LessonError(
            f"experiment {label} ran out of space for the files it writes (No space left on device)",
            hint=f"write less: in a jail its working folder holds {WORK_SIZE >> 20} MiB, /tmp and /dev/shm "
            f"{TMP_SIZE >> 20} MiB each",
        )
    if result.exit_code != 0 and any(s in result.stderr for s in _OOM):
        return LessonError(
            f"experiment {label} ran out of memory (limit {sandbox.show_size(job.memory)}): {tail[-200:]}",
            hint="use less memory, or raise `Memory:` for this block",
        )
    at = ""
    if job.parts:  # an inline driver: the traceback names page lines; say the last one
        lines = PAGE_FRAME.findall(stderr)
        at = f" at {lines[-1][0]}:{lines[-1][1]}" if lines else ""
    else:  # the script's own deepest line, also when the error was raised in a module it called
        lines = re.findall(rf'File "{re.escape(label)}", line (\d+)', stderr)
        at = f" at {label}:{lines[-1]}" if lines else ""
    return LessonError(f"experiment {label} failed with exit code {result.exit_code}{at}: {tail[-300:]}", hint=run_hint)


PAGE_FRAME = re.compile(r'File "([^"\n]+\.md)", line (\d+)')
