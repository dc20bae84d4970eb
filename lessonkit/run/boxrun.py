"""One job run in a fresh box: the files its spec names written into it, the script's environment,
the launch, and what it left (output, exit, record) read back as a :class:`~lessonkit.run.jobs.Result`.
No cache: :class:`lessonkit.run.runner.Runner` decides what runs."""

from __future__ import annotations

import hashlib
import os
import re
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from lessonkit.run.box import sandbox
from lessonkit.run.box.spec import BoxSpec
from lessonkit.run.box.tree import CheckedTree
from lessonkit.run.jobs import Job, Result
from lessonkit.run.outcomes import read_record, session_results

HELPERS = ".lessonkit"  # <box>/project/.lessonkit/: the engine's files for the script
ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")


class BoxRun:
    """The part of :class:`lessonkit.run.runner.Runner` that runs one job in a box; the attributes
    below are the Runner's."""

    pinned_root: Path
    import_path: str
    env_prefix: str
    pinned_version: str
    support_dir: Path
    extra_paths: tuple[Path, ...]
    jail: sandbox.jails.Jail
    tree: CheckedTree
    _blobs: dict[str, bytes]

    if TYPE_CHECKING:

        def spec(self, job: Job) -> BoxSpec: ...

        def key(self, job: Job) -> str: ...

    def _env(self) -> dict[str, str]:
        """The script's environment; ``{box}`` is its box folder (in a jail ``/lessonkit-box``)."""
        names = [self.support_dir.name, *(p.name for p in self.extra_paths)]
        env = {
            "PATH": os.pathsep.join([os.path.dirname(sys.executable), "/usr/local/bin", "/usr/bin", "/bin"]),
            "HOME": "{box}/work",
            "TMPDIR": "{box}/work",
            "LANG": "C.UTF-8",
            "TZ": "UTC",
            "PYTHONHASHSEED": "0",
            "PYTHONIOENCODING": "utf-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONPATH": os.pathsep.join(
                [
                    "/".join(("{box}/pinned", self.import_path)).rstrip("/"),
                    *(f"{{box}}/project/{n}" for n in names),
                    f"{{box}}/project/{HELPERS}",
                ]
            ),
            f"{self.env_prefix}_PINNED_ROOT": "{box}/pinned",
            f"{self.env_prefix}_PINNED_VERSION": self.pinned_version,
            "LESSONKIT_RECORD": "{box}/io/record.json",  # read back by outcomes.read_record
            "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
        }
        for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "SYSTEMROOT"):
            if name in os.environ:
                env[name] = os.environ[name]
        prefix = sandbox.jails.bytecode_prefix() if self.jail.isolated else sys.pycache_prefix
        if prefix and os.path.isabs(prefix):
            # The build's bytecode folder (see noxfile.py): the script reads NumPy & co. compiled
            # from it; `-B` keeps it from writing there. A jail shows only the bytecode of the
            # interpreter's folders, read-only (none for the box's own files: jail._bytecode).
            env["PYTHONPYCACHEPREFIX"] = prefix
        return env

    def _fill(self, box: sandbox.Box, job: Job, spec: BoxSpec, common: "sandbox.Box | None") -> None:
        """Write what ``spec`` names into the box, from bytes stored under the sha256 it names
        (the pinned copy from the checked tree; with a common copy, only its mount point).
        Folders are made one level at a time (never ``parents=True``): once a cancel has removed
        the box, writing fails instead of re-creating it."""
        if common is not None:
            os.mkdir(box.pinned)  # where the common copy is mounted
        else:
            self.tree.write_into(box)
        blobs = {**self._blobs, hashlib.sha256(job.source).hexdigest(): job.source}
        made = {"work", "io", "project", "pinned"}
        base = str(box.dir)
        for path, digest in spec.files:
            if path.startswith("pinned/"):
                continue
            parts = path.split("/")[:-1]
            for n in range(2, len(parts) + 1):
                d = "/".join(parts[:n])
                if d not in made:
                    if sandbox.BOXES.cancelled:
                        raise sandbox.Cancelled()
                    os.mkdir(os.path.join(base, d))
                    made.add(d)
            with open(os.path.join(base, path), "xb") as f:  # a new file in a new folder, never followed
                f.write(blobs[digest])

    def run_again(self, job: Job) -> Result:
        """Run ``job`` now in a fresh box, neither reading nor writing the cache (``verify --rerun``)."""
        return self._execute(job)

    def _execute(self, job: Job) -> Result:
        """Run ``job`` now, without the cache (``lessonkit run``): its own result."""
        raw = self._execute_raw(job)
        return session_results(job, raw, self.key)[raw.key] if job.parts else raw

    def _execute_raw(self, job: Job) -> Result:
        cancelled = Result(self.key(job), -int(signal.SIGTERM), "", "", 0, 0.0, 0.0, problem="cancelled")
        self.tree.lease()
        try:
            return self._execute_leased(job, cancelled)
        finally:
            self.tree.release()

    def _execute_leased(self, job: Job, cancelled: Result) -> Result:
        spec = self.spec(job)
        try:
            common = self.tree.common_copy() if self.jail.isolated else None
            box = sandbox.BOXES.open(sandbox.jails.box_owner(self.jail))
        except sandbox.Cancelled:
            return cancelled
        except OSError as exc:  # the temporary folder is full or cannot be written
            return self._lost(job, None, exc)
        try:
            try:
                self._fill(box, job, spec, common)
            except (sandbox.Cancelled, OSError) as exc:
                if sandbox.BOXES.cancelled:
                    return cancelled
                if isinstance(exc, OSError):  # the box folder was removed or cannot be written
                    return self._lost(job, box, exc)
                raise
            t0 = time.perf_counter()
            # stdout/stderr are files outside work/, read back through these descriptors:
            # a script that empties or removes its folders cannot lose them.
            try:
                out, err = open(box.io / "stdout", "w+b"), open(box.io / "stderr", "w+b")
                channel = tempfile.TemporaryFile(dir=box.io)  # the launcher's own stderr
            except OSError as exc:
                if sandbox.BOXES.cancelled:
                    return cancelled
                return self._lost(job, box, exc)
            with out, err, channel:
                try:
                    proc = sandbox.launch(box, spec, out, err, channel, common.pinned if common else box.pinned)
                except sandbox.Cancelled:
                    return cancelled
                except OSError as exc:  # e.g. its working folder is gone
                    return self._lost(job, box, exc)
                code, usage, timed_out = sandbox.reap(proc, spec.timeout, box)
                box.kill()  # whatever outlived the script (normally nothing: the box's init took it along)
                wall = time.perf_counter() - t0
                cpu = usage.ru_utime + usage.ru_stime  # this box's own CPU, even with jobs in parallel
                out.seek(0)
                raw = out.read(spec.output[0])
                truncated = max(0, os.fstat(out.fileno()).st_size - spec.output[0])
                size = os.fstat(err.fileno()).st_size
                err.seek(max(0, size - spec.output[1]))
                err_tail = err.read(spec.output[1])
                channel.seek(0)
                said = channel.read(16 << 10)
            root = self.jail.root or str(box.dir)
            stdout = self.normalise(sandbox.sanitise(raw), root)
            stderr = self.normalise(sandbox.sanitise(err_tail), root)
            problem = ""
            if box.killed and not timed_out and code == -signal.SIGKILL and sandbox.BOXES.cancelled:
                problem = "cancelled"
            elif code != 0 and not timed_out:  # what the launcher said (never the script's): a box failure
                problem = self.normalise(sandbox.box_failure(said), root)
            # By another program (a /tmp cleaner): whatever the exit said. A script that ended well
            # still lost what the host reads after it (its record file), so its output is not used.
            if problem != "cancelled" and not timed_out and not (box.work.is_dir() and box.io.is_dir()):
                problem = "vanished: removed while it ran"
            record = None
            if code == 0 and not timed_out and not problem:
                record, problem = read_record(box.dir, spec.output[2])
            return Result(
                spec.key,
                code,
                stdout,
                stderr,
                truncated,
                round(cpu, 3),
                round(wall, 3),
                timed_out,
                record=record,
                problem=problem,
            )
        finally:
            sandbox.BOXES.close(box)

    def _lost(self, job: Job, box: "sandbox.Box | None", exc: OSError) -> "Result":
        why = exc.strerror or type(exc).__name__
        return Result(self.key(job), -1, "", "", 0, 0.0, 0.0, problem=f"vanished: {why}")

    def normalise(self, text: str, root: str) -> str:
        """Output without the places of this run: the box folder ``root`` (as the script saw it)
        and its parts, the pinned tree; memory addresses."""
        for path, name in (
            (f"{root}/work", "<tmp>"),
            (f"{root}/pinned", "<pinned>"),
            (f"{root}/project", "<project>"),
            (root, "<box>"),
            (str(self.pinned_root), "<pinned>"),
        ):
            text = text.replace(path, name)
        return ADDRESS.sub("0x…", text)
