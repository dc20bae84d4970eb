"""What one experiment run leaves behind, and what it means: the record file a script writes
(``$LESSONKIT_RECORD``), the form of a stored result, and the one-line error for a run that did
not pass. Re-exported by :mod:`lessonkit.run.runner`, which keeps the limits
(read from there at call time, so a test may lower ``execute.FILE_LIMIT``)."""

from __future__ import annotations

import hashlib
import json
import signal
from pathlib import Path
from typing import TYPE_CHECKING

from lessonkit.run.box import sandbox
from lessonkit.errors import LessonError

if TYPE_CHECKING:
    from lessonkit.run.runner import Job, Result


def _check(data: dict) -> str:
    """Digest of a stored result's value (every field but ``check``), in one canonical form."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, ensure_ascii=True).encode()).hexdigest()


def _read_record(path: Path) -> tuple[dict | None, str]:
    """The record the script left, or a problem saying why it is not one."""
    from lessonkit.run.runner import RECORD_LIMIT

    try:
        with open(path, "rb") as fh:
            data = fh.read(RECORD_LIMIT + 1)
    except FileNotFoundError:
        return None, ""
    except OSError as exc:
        return None, f"record: cannot read it ({exc.strerror})"
    if len(data) > RECORD_LIMIT:
        return None, f"record: larger than {RECORD_LIMIT >> 20} MiB"

    def no_constant(name):
        raise ValueError(f"{name} is not JSON")

    try:
        value = json.loads(data.decode("utf-8"), parse_constant=no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return None, f"record: not valid JSON ({str(exc)[:120]})"
    if not isinstance(value, dict):
        return None, f"record: a JSON {type(value).__name__}, not an object"
    return value, ""


_STORED = {
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


RECORD_WHY = {
    "missing": "none is stored for its key",
    "damaged": "the stored one is damaged",
    "unsealed": "the stored one does not carry this cache's seal: it was rewritten outside lessonkit",
    "stale": "the stored one is not a passing run of this key",
}

_OOM = ("MemoryError", "Unable to allocate", "Cannot allocate memory", "std::bad_alloc")


def failure(result: Result | None, job: Job, timeout: int) -> LessonError:
    """The one-line error for a job that did not pass (located by the caller with ``.at``)."""
    from lessonkit.run.runner import FILE_LIMIT, OUTPUT_CAP

    label = job.label
    run_hint = "run it by hand: nox -s experiment -- " + label
    if result is None or result.problem == "cancelled":
        return LessonError(
            f"experiment {label} was cancelled before it finished", hint="the build was interrupted; build again"
        )
    tail = " | ".join(l for l in result.stderr.strip().splitlines()[-3:]) or "no stderr"
    if result.problem == "tampered":
        return LessonError(
            f"experiment {label} ran while the pinned tree changed; its output is not used",
            hint="an experiment of this build wrote into the pinned tree; see the manifest lines",
        )
    if result.problem.startswith("not recorded: "):  # a check of a built site (Runner.recorded) runs nothing
        return LessonError(
            f"no result of experiment {label} is recorded in the build cache ({RECORD_WHY[result.problem[14:]]})",
            hint="build the site again (`nox -s build`) with the same LESSONKIT_CACHE",
        )
    if result.problem.startswith("record: "):
        return LessonError(
            f"experiment {label} wrote a bad record to $LESSONKIT_RECORD: {result.problem[8:]}",
            hint="write one JSON object of at most 4 MiB, or nothing",
        )
    if result.problem.startswith("vanished: "):
        return LessonError(
            f"experiment {label} lost its temporary folder ({result.problem[10:]}); its output is not used",
            hint="another program removed or filled it (a /tmp cleaner, a full disk); build again",
        )
    if result.problem.startswith("box: "):
        return LessonError(
            f"experiment {label} could not be started in its box: {result.problem[5:]}",
            hint="set LESSONKIT_SANDBOX=copy to run without namespaces",
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
    if result.exit_code != 0 and any(s in result.stderr for s in _OOM):
        return LessonError(
            f"experiment {label} ran out of memory (limit {sandbox.show_size(job.memory)}): {tail[-200:]}",
            hint="use less memory, or raise `Memory:` for this block",
        )
    return LessonError(f"experiment {label} failed with exit code {result.exit_code}: {tail[-300:]}", hint=run_hint)
