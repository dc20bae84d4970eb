"""Stage 4: run experiments in boxes (see ``lessonkit.run.box.sandbox``), cached by content key."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import signal
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, replace
from pathlib import Path

from lessonkit.config import environment
from lessonkit.run.box import sandbox
from lessonkit.util import seal, store
from lessonkit.run.box.tree import CheckedTree
from lessonkit.errors import LessonError, Problem
from lessonkit.util.fs import atomic_write, owned_path, remove_owned
from lessonkit.run.jobs import SKIPPED as SKIPPED
from lessonkit.run.jobs import Job, Pending, Result, _shared_files, versions
from lessonkit.run.jobs import pin_args as pin_args
from lessonkit.run.outcomes import _check, _read_record, _STORED
from lessonkit.run.outcomes import failure as failure

# Not under "mkdocs": a warning that only costs time must not fail `mkdocs build --strict`.
log = logging.getLogger("lessonkit.run.runner")

DEFAULT_TIMEOUT = 60
OUTPUT_CAP = 64 * 1024  # stdout shown on the page; the rest is counted
STDERR_CAP = 16 * 1024  # stderr kept (its end)
FILE_LIMIT = 64 * 1024 * 1024  # largest file a script may write, its stdout included (RLIMIT_FSIZE)
RECORD_LIMIT = 4 * 1024 * 1024  # the record file (LESSONKIT_RECORD)
KEY_SCHEMA = "lessonkit-exp-4"  # 4: entries carry a seal (lessonkit.util.seal)
ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")
LISTING = re.compile(rb"importlib|__import__|\brunpy\b|\bglob\b|iterdir|listdir|scandir|os\.walk|\bexec\(")


class Runner:
    """Runs jobs against one pinned tree; results cached under ``cache/experiments``.

    ``manifest`` (posix path → sha256) is the pinned tree's manifest: every box gets a
    copy checked against it; without it the tree as found when the runner starts.
    ``box_pinned`` (``site.toml [experiments] pinned``: folders, files, patterns) limits the copy
    to those parts of the tree; empty: all of it. Every key holds it and the manifest's digest."""

    def __init__(
        self,
        pinned_root: Path,
        pinned_version: str,
        manifest_digest: str,
        support_dir: Path,
        cache: Path,
        extra_paths: tuple[Path, ...] = (),
        manifest: dict[str, str] | None = None,
        manifest_label: str = "sourcemap/manifest.sha256",
        manifest_lines: dict[str, int] | None = None,
        project_root: Path | None = None,
        env_prefix: str = "LESSONKIT",
        box_pinned: tuple[str, ...] = (),
    ):
        self.pinned_root = Path(pinned_root)
        self.box_pinned = tuple(box_pinned)
        self.env_prefix = env_prefix  # scripts read <PREFIX>_PINNED_ROOT and <PREFIX>_PINNED_VERSION
        self.pinned_version = pinned_version
        self.support_dir = Path(support_dir)
        self.extra_paths = tuple(Path(p) for p in extra_paths if Path(p).is_dir())
        self.cache_root = Path(cache)
        self.cache = self.cache_root / "experiments"
        self.project_root = Path(project_root) if project_root else self.support_dir.parent
        # Every file a script can read from the project is in its box, and in every key.
        self._shared = _shared_files((self.support_dir, *self.extra_paths))
        # Read once: the bytes in every key are the bytes written into every box.
        self._shared_data = [(rel, p.read_bytes()) for rel, p in self._shared]
        # The experiment scripts themselves (experiments/x.py, not the _helpers): a job's key holds
        # only those its own source names (imports or reads by name, transitively), so an edited
        # script runs again alone (incremental serve); helpers and Mini are in every key.
        self._scripts = {
            p.stem: (rel, data)
            for (rel, p), (_, data) in zip(self._shared, self._shared_data)
            if p.parent == self.support_dir and p.suffix == ".py" and not p.name.startswith("_")
        }
        scripts = {rel for rel, _ in self._scripts.values()}
        self._siblings: dict[bytes, bytes] = {}
        shared = b"".join(rel.encode() + b"\0" + data + b"\0" for rel, data in self._shared_data if rel not in scripts)
        v = versions()
        self._salt = hashlib.sha256(
            b"\0".join(
                [
                    KEY_SCHEMA.encode(),
                    manifest_digest.encode(),
                    repr(self.box_pinned).encode(),  # what of the tree the box holds
                    v["python"].encode(),
                    v["numpy"].encode(),
                    shared,
                ]
            )
        ).hexdigest()
        self.stats = {"ran": 0, "cached": 0}
        self._done: dict[str, Result] = {}  # this build's results, failures included: each job runs once
        self._inflight: dict[str, Future] = {}  # started in the background, maybe not finished
        self._lock = threading.Lock()
        # The pinned files, checked, and what every box holds (boxtree.CheckedTree).
        self.tree = CheckedTree(
            self.pinned_root, manifest, self.box_pinned, self._shared_data, manifest_label, manifest_lines
        )
        self._ran = False  # an experiment ran since the last recheck
        self._warned_store = False
        self._warned_seal = False
        environment.sandbox_mode()  # a bad LESSONKIT_SANDBOX is one located error, before any box
        sandbox.BOXES.reset()
        sandbox.sweep_leftovers()
        store.sweep(self.cache_root)  # half-written entries of killed builds (dead owners only)
        seal.key(self.cache_root)  # made before any box starts, so that every box covers it

    def key(self, job: Job) -> str:
        return hashlib.sha256(
            self._salt.encode()
            + b"\0"
            + job.name.encode()
            + b"\0"
            + str(job.memory).encode()
            + b"\0"
            + job.source
            + b"\0"
            + self.siblings(job.source)
        ).hexdigest()

    def siblings(self, source: bytes) -> bytes:
        """The other experiment scripts ``source`` may read: those it names (a word equal to the
        script's module name), transitively; all of them if it imports or lists files dynamically."""
        if source not in self._siblings:
            if LISTING.search(source):
                seen = set(self._scripts)
            else:
                seen, todo = set(), [source]
                while todo:
                    text = todo.pop()
                    for stem, (_, data) in self._scripts.items():
                        if stem not in seen and re.search(rb"\b" + re.escape(stem.encode()) + rb"\b", text):
                            seen.add(stem)
                            todo.append(data)
            self._siblings[source] = b"".join(
                self._scripts[s][0].encode() + b"\0" + self._scripts[s][1] + b"\0" for s in sorted(seen)
            )
        return self._siblings[source]

    def entry(self, key: str) -> tuple[Result | None, str]:
        """The stored result for ``key``, checked, without changing the cache: ``(result, "")``, or
        ``(None, why)`` with ``why`` one of "missing", "damaged" (shape or digest), "unsealed" (a
        right digest but not this cache's seal: rewritten by something without the key, see
        :mod:`lessonkit.util.seal`) or "stale" (another key, or a failed run)."""
        path = self.cache / f"{key}.json"
        try:
            if path.is_symlink():
                raise ValueError("a link")
            data = json.loads(path.read_text(encoding="utf-8"))
            if (
                not isinstance(data, dict)
                or set(data) != set(_STORED) | {"check", "seal"}
                or not all(isinstance(data[k], t) for k, t in _STORED.items())
                or not isinstance(data["seal"], str)
            ):
                raise ValueError("not a cache entry")
            check, mark = data.pop("check"), data.pop("seal")
            if check != _check(data):
                raise ValueError("digest")
            if not seal.sealed(self.cache_root, mark, b"experiment", str(check).encode()):
                return None, "unsealed"
            result = Result(**{**data, "cached": True})
            if result.key != key or not result.ok:
                return None, "stale"
            return result, ""
        except FileNotFoundError:
            return None, "missing"
        except (ValueError, TypeError, OSError, RecursionError):
            return None, "damaged"

    def cached(self, job: Job) -> Result | None:
        """The stored result of a passing run, checked: shape, key, the digest of its value and its
        seal (an entry that fails is dropped and the job runs again)."""
        key = self.key(job)
        result, why = self.entry(key)
        if result is not None or why == "missing":
            return result
        if why == "unsealed" and not self._warned_seal:
            self._warned_seal = True
            log.warning(
                f"lessonkit: the cached result of {job.label} has a right digest but not this cache's seal "
                "(it was rewritten outside lessonkit); it is run again, not used"
            )
        with contextlib.suppress(Exception):
            remove_owned(self.cache_root, "experiments", f"{key}.json")  # damaged: drop it, run again
        return None

    def recorded(self, jobs: list[Job]) -> dict[str, tuple[Result | None, str]]:
        """What the cache holds for each job (:meth:`entry`), for a check of a built site; from now
        on :meth:`run` answers these jobs from it and never runs them (one that is not recorded
        is a failed result whose ``problem`` says why)."""
        out: dict[str, tuple[Result | None, str]] = {}
        for job in jobs:
            key = self.key(job)
            if key in out:
                continue
            out[key] = result, why = self.entry(key)
            with self._lock:
                self._done[key] = result or Result(key, -1, "", "", 0, 0.0, 0.0, problem=f"not recorded: {why}")
        return out

    def _store(self, result: Result) -> None:
        """Write a passing result atomically (``fsutil.atomic_write``) with a digest of its value;
        a read-only or full cache only costs time: one warning, the build goes on."""
        data = {k: v for k, v in asdict(result).items() if k != "cached"}
        data["check"] = _check(data)
        data["seal"] = seal.seal(self.cache_root, b"experiment", data["check"].encode())
        try:
            self.cache.mkdir(parents=True, exist_ok=True)
            path = owned_path(self.cache_root, "experiments", f"{result.key}.json")
            atomic_write(path, json.dumps(data).encode("utf-8"))
        except (OSError, LessonError) as exc:
            if not self._warned_store:
                self._warned_store = True
                why = getattr(exc, "strerror", None) or str(exc)
                log.warning(
                    f"lessonkit: cannot write the experiment cache ({why}); experiments will run again next time"
                )

    def run(self, job: Job) -> Result:
        """The job's result: from this build, from a run in flight, from the cache, or run now."""
        key = self.key(job)
        with self._lock:
            done = self._done.get(key)
            flight = self._inflight.get(key)
        if done is not None:
            return done
        if flight is not None:  # started in the background (see start): wait for it, never run twice
            return flight.result()
        return self._run(key, job)

    def _run(self, key: str, job: Job) -> Result:
        hit = self.cached(job)
        if hit:
            result = hit
            self.stats["cached"] += 1
        else:
            result = self._execute(job)
            self.stats["ran"] += 1
            self._ran = True
            # A box with namespaces cannot write the pinned tree (it is read-only there) and reads
            # the checked copy: what changes the tree meanwhile is reported once, by tree_problems.
            # Without them a script can write it: checked after every run.
            changed = [] if sandbox.namespaces_available() else self.recheck()
            if changed:  # computed while the pinned tree was not the pinned tree: never cached
                result = replace(result, problem=result.problem or "tampered")
            if result.ok:
                self._store(result)
        with self._lock:
            self._done[key] = result
        return result

    def run_all(self, jobs: list[Job]) -> dict[str, Result]:
        """Run every distinct job, uncached ones in parallel over the cores."""
        return self.start(jobs).results()

    def _stored(self, key: str) -> bool:
        """A result file exists for ``key`` (whether it passes :meth:`cached` is decided when run)."""
        return (self.cache / f"{key}.json").exists()

    def uncached(self, jobs: list[Job]) -> int:
        """How many distinct jobs have no stored result (a cold build runs them)."""
        return sum(not self._stored(k) for k in {self.key(j) for j in jobs})

    def start(self, jobs: list[Job]) -> "Pending":
        """Start every distinct job in the background, in the given order, over the cores.

        Returns at once; the caller can go on working and collect with ``results()``.
        A job asked for meanwhile (:meth:`run`) waits for its run instead of starting another.
        Until then SIGINT/SIGTERM end the experiments first (see ``sandbox.cancel_on_signals``)."""
        todo = {self.key(j): j for j in jobs}
        pool = ThreadPoolExecutor(
            max_workers=max(1, min(len(todo), os.cpu_count() or 1)), thread_name_prefix="lessonkit-exp"
        )
        signals = contextlib.ExitStack()  # before the first box exists
        signals.enter_context(sandbox.cancel_on_signals())  # queued jobs then end at once, as cancelled
        futures: dict[str, Future] = {}
        to_run = 0
        with self._lock:
            for k, j in todo.items():
                if k in self._done:
                    futures[k] = Future()
                    futures[k].set_result(self._done[k])
                elif k in self._inflight:
                    futures[k] = self._inflight[k]
                else:
                    to_run += not self._stored(k)
                    futures[k] = self._inflight[k] = pool.submit(self._run, k, j)
        self.tree.lease()  # the common copy lives until the batch's results (or cancel)
        signals.callback(self.tree.release)
        return Pending(futures, pool, to_run, signals)

    # -- the pinned tree (lessonkit.run.box.tree)

    @property
    def tampered(self) -> list[str]:
        """Pinned files that changed while experiments ran."""
        return self.tree.tampered

    def _in_box(self, rel: str) -> bool:
        return self.tree.in_box(rel)

    def recheck(self) -> list[str]:
        return self.tree.recheck()

    def tree_problems(self) -> list[Problem]:
        """One located problem per pinned file that changed during this build's experiments."""
        if self._ran and sandbox.namespaces_available():  # not checked after each run (see _run)
            self._ran = False
            self.recheck()
        return self.tree.problems()

    # -- one run

    def _env(self, box: sandbox.Box) -> dict[str, str]:
        paths = [box.pinned, box.project / self.support_dir.name, *(box.project / p.name for p in self.extra_paths)]
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(box.work),
            "TMPDIR": str(box.work),
            "LANG": "C.UTF-8",
            "PYTHONHASHSEED": "0",
            "PYTHONIOENCODING": "utf-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONPATH": os.pathsep.join(map(str, paths)),
            f"{self.env_prefix}_PINNED_ROOT": str(box.pinned),
            f"{self.env_prefix}_PINNED_VERSION": self.pinned_version,
            "LESSONKIT_RECORD": str(box.record),
            "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
        }
        for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "SYSTEMROOT"):
            if name in os.environ:
                env[name] = os.environ[name]
        if sys.pycache_prefix and os.path.isabs(sys.pycache_prefix):
            # The build's bytecode folder (see noxfile.py): the script reads NumPy & co. compiled
            # from it; `-B` keeps it from writing there, and the box makes the project read-only.
            env["PYTHONPYCACHEPREFIX"] = sys.pycache_prefix
        return env

    def _fill(self, box: sandbox.Box, job: Job, common: "sandbox.Box | None") -> None:
        """Write the script, and the copies unless the box mounts the common copy. Folders are
        made one level at a time (never ``parents=True``): once a cancel has removed the box,
        writing fails instead of re-creating it."""
        if common is not None:
            os.mkdir(box.pinned)  # where the common copy is mounted (box.project exists)
        else:
            self.tree.write_into(box)
        (box.work / job.name).write_bytes(job.source)

    def _protected(self) -> list[Path]:
        out = [self.project_root, self.cache_root, self.pinned_root, Path.home()]
        return [p.resolve() for p in out if p.is_dir()]

    def _execute(self, job: Job) -> Result:
        cancelled = Result(self.key(job), -int(signal.SIGTERM), "", "", 0, 0.0, 0.0, problem="cancelled")
        self.tree.lease()
        try:
            return self._execute_leased(job, cancelled)
        finally:
            self.tree.release()

    def _execute_leased(self, job: Job, cancelled: Result) -> Result:
        try:
            common = self.tree.common_copy() if sandbox.namespaces_available() else None
            box = sandbox.BOXES.open()
        except sandbox.Cancelled:
            return cancelled
        except OSError as exc:  # the temporary folder is full or cannot be written
            return self._lost(job, None, exc)
        try:
            try:
                self._fill(box, job, common)
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
            except OSError as exc:
                if sandbox.BOXES.cancelled:
                    return cancelled
                return self._lost(job, box, exc)
            with out, err:
                spec = sandbox.Spec(
                    [sys.executable, "-B", job.name],
                    self._env(box),
                    job.memory,
                    FILE_LIMIT,
                    protect=self._protected(),
                    project_root=self.project_root,
                    mounts=[(common.pinned, box.pinned), (common.project, box.project)] if common else [],
                    hide=[self.cache_root / seal.FOLDER],  # no box reads the key that seals the cache
                )
                try:
                    proc = sandbox.launch(box, spec, out, err)
                except sandbox.Cancelled:
                    return cancelled
                except OSError as exc:  # e.g. its working folder is gone
                    return self._lost(job, box, exc)
                code, usage, timed_out = sandbox.reap(proc, job.timeout, box)
                box.kill()  # whatever outlived the script (normally nothing: the box's init took it along)
                wall = time.perf_counter() - t0
                cpu = usage.ru_utime + usage.ru_stime  # this box's own CPU, even with jobs in parallel
                out.seek(0)
                raw = out.read(OUTPUT_CAP)
                truncated = max(0, os.fstat(out.fileno()).st_size - OUTPUT_CAP)
                size = os.fstat(err.fileno()).st_size
                err.seek(max(0, size - STDERR_CAP))
                err_tail = err.read(STDERR_CAP)
            stdout = self.normalise(sandbox.sanitise(raw), box)
            stderr = self.normalise(sandbox.sanitise(err_tail), box)
            problem = ""
            if box.killed and not timed_out and code == -signal.SIGKILL and sandbox.BOXES.cancelled:
                problem = "cancelled"
            elif code == sandbox.BOX_FAILED and "lessonkit-box:" in stderr:
                problem = "box: " + stderr.split("lessonkit-box:", 1)[1].strip().splitlines()[0]
            if (
                (code != 0 or problem.startswith("box: "))
                and not problem == "cancelled"
                and not timed_out
                and not (box.work.is_dir() and box.io.is_dir())
            ):
                problem = "vanished: removed while it ran"  # by another program: its own exit says nothing
            record = None
            if code == 0 and not timed_out and not problem:
                record, problem = _read_record(box.record)
            return Result(
                self.key(job),
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

    def normalise(self, text: str, box: sandbox.Box) -> str:
        for path, name in (
            (box.work, "<tmp>"),
            (box.pinned, "<pinned>"),
            (box.project, "<project>"),
            (box.dir, "<box>"),
            (self.pinned_root, "<pinned>"),
        ):
            text = text.replace(str(path), name)
        return ADDRESS.sub("0x…", text)
