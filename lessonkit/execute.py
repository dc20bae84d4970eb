"""Stage 4: run experiments in isolated subprocesses, cached by content key."""

from __future__ import annotations

import hashlib
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from .errors import LessonError

DEFAULT_TIMEOUT = 60
OUTPUT_CAP = 64 * 1024
FILE_LIMIT = 256 * 1024 * 1024  # largest file a script may write, its stdout included (RLIMIT_FSIZE)
KEY_SCHEMA = "lessonkit-exp-1"
ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")


@dataclass(frozen=True)
class Job:
    name: str  # file name the script runs under (shown in tracebacks)
    source: bytes
    timeout: int
    label: str  # where it comes from, e.g. experiments/x.py or docs/a.md:12


@dataclass(frozen=True)
class Result:
    key: str
    exit_code: int
    stdout: str
    stderr: str
    truncated: int  # bytes of stdout not shown (0: complete)
    cpu_seconds: float
    wall_seconds: float
    timed_out: bool = False
    cached: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.stdout.encode()).hexdigest()


@lru_cache(maxsize=1)
def versions() -> dict[str, str]:
    try:
        np = metadata.version("numpy")
    except metadata.PackageNotFoundError:
        np = "missing"
    return {"python": ".".join(map(str, sys.version_info[:3])), "numpy": np}


class Pending:
    """Jobs running in the background (see :meth:`Runner.start`)."""

    def __init__(self, futures: dict, pool: ThreadPoolExecutor, to_run: int):
        self._futures = futures
        self._pool = pool
        self.to_run = to_run  # how many were not in the cache when started

    def results(self) -> dict[str, Result]:
        """Wait for every job (in the order given to start)."""
        try:
            return {k: f.result() for k, f in self._futures.items()}
        finally:
            self._pool.shutdown(wait=True)

    def cancel(self) -> None:
        """Drop the jobs not started yet (those running finish, and are cached if they pass)."""
        self._pool.shutdown(wait=False, cancel_futures=True)


class Runner:
    """Runs jobs against one pinned tree; results cached under ``cache/experiments``."""

    def __init__(self, pinned_root: Path, pinned_version: str, manifest_digest: str,
                 support_dir: Path, cache: Path, extra_paths: tuple[Path, ...] = ()):
        self.pinned_root = pinned_root
        self.pinned_version = pinned_version
        self.support_dir = support_dir
        self.extra_paths = tuple(p for p in extra_paths if p.is_dir())
        self.cache = cache / "experiments"
        # Everything a script may import besides itself is part of every key.
        inputs = sorted(support_dir.glob("_*.py"))
        for extra in self.extra_paths:
            inputs += sorted(p for p in extra.rglob("*.py") if "tests" not in p.relative_to(extra).parts)
        support = b"".join(p.name.encode() + b"\0" + p.read_bytes() for p in inputs)
        v = versions()
        self._salt = hashlib.sha256(
            b"\0".join([KEY_SCHEMA.encode(), manifest_digest.encode(), v["python"].encode(),
                        v["numpy"].encode(), support])).hexdigest()
        self.stats = {"ran": 0, "cached": 0}
        self._done: dict[str, Result] = {}  # this build's results, failures included: each job runs once
        self._inflight: dict[str, Future] = {}  # started in the background, maybe not finished
        self._lock = threading.Lock()

    def key(self, job: Job) -> str:
        return hashlib.sha256(self._salt.encode() + b"\0" + job.name.encode() + b"\0" + job.source).hexdigest()

    def cached(self, job: Job) -> Result | None:
        path = self.cache / f"{self.key(job)}.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict) or set(data) != set(_STORED) or \
                    not all(isinstance(data[k], t) for k, t in _STORED.items()):
                raise ValueError("not a cache entry")
            result = Result(**{**data, "cached": True})
            if result.key != self.key(job) or not result.ok:
                raise ValueError("stale")
            return result
        except FileNotFoundError:
            return None
        except (ValueError, TypeError, OSError, RecursionError):
            path.unlink(missing_ok=True)  # corrupted entry: drop it, run again
            return None

    def _store(self, result: Result) -> None:
        self.cache.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.cache, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({k: v for k, v in asdict(result).items() if k != "cached"}, fh)
            os.replace(tmp, self.cache / f"{result.key}.json")  # atomic: readers see all or nothing
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

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
            if result.ok:
                self._store(result)
        with self._lock:
            self._done[key] = result
        return result

    def run_all(self, jobs: list[Job]) -> dict[str, Result]:
        """Run every distinct job, uncached ones in parallel over the cores."""
        return self.start(jobs).results()

    def start(self, jobs: list[Job]) -> "Pending":
        """Start every distinct job in the background, in the given order, over the cores.

        Returns at once; the caller can go on working and collect with ``results()``.
        A job asked for meanwhile (:meth:`run`) waits for its run instead of starting another."""
        todo = {self.key(j): j for j in jobs}
        pool = ThreadPoolExecutor(max_workers=max(1, min(len(todo), os.cpu_count() or 1)))
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
                    to_run += not (self.cache / f"{k}.json").exists()
                    futures[k] = self._inflight[k] = pool.submit(self._run, k, j)
        return Pending(futures, pool, to_run)

    def _env(self, tmp: Path) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(tmp),
            "LANG": "C.UTF-8",
            "PYTHONHASHSEED": "0",
            "PYTHONIOENCODING": "utf-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONPATH": os.pathsep.join([str(self.pinned_root), str(self.support_dir),
                                          *map(str, self.extra_paths)]),
            "AUTOGRAD_PINNED_ROOT": str(self.pinned_root),
            "AUTOGRAD_PINNED_VERSION": self.pinned_version,
            "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
        }
        for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "SYSTEMROOT"):
            if name in os.environ:
                env[name] = os.environ[name]
        return env

    def _execute(self, job: Job) -> Result:
        tmp = Path(tempfile.mkdtemp(prefix="lessonkit-exp-"))
        try:
            script = tmp / job.name
            script.write_bytes(job.source)
            out_path, err_path = tmp / ".stdout", tmp / ".stderr"
            t0 = time.perf_counter()
            with open(out_path, "wb") as out, open(err_path, "wb") as err:
                proc = subprocess.Popen([sys.executable, "-B", job.name], cwd=tmp, env=self._env(tmp),
                                        stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                        start_new_session=True)
                _limit_files(proc.pid)  # a script printing in a loop must not fill the disk
                code, usage, timed_out = _reap(proc, job.timeout)
                _kill_group(proc.pid)  # children that outlived the script end with it
            wall = time.perf_counter() - t0
            cpu = usage.ru_utime + usage.ru_stime  # this child's own CPU, even with jobs in parallel
            with open(out_path, "rb") as fh:  # never more than the cap in memory
                raw = fh.read(OUTPUT_CAP)
                truncated = max(0, os.fstat(fh.fileno()).st_size - OUTPUT_CAP)
            with open(err_path, "rb") as fh:
                fh.seek(max(0, os.fstat(fh.fileno()).st_size - 8192))
                err_tail = fh.read()
            stdout = self.normalise(raw.decode("utf-8", "replace"), tmp)
            stderr = self.normalise(err_tail.decode("utf-8", "replace"), tmp)
            return Result(self.key(job), code, stdout, stderr, truncated, round(cpu, 3), round(wall, 3), timed_out)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def normalise(self, text: str, tmp: Path) -> str:
        text = text.replace(str(tmp), "<tmp>").replace(str(self.pinned_root), "<pinned>")
        return ADDRESS.sub("0x…", text)


_STORED = {"key": str, "exit_code": int, "stdout": str, "stderr": str, "truncated": int,
           "cpu_seconds": (int, float), "wall_seconds": (int, float), "timed_out": bool}


def _reap(proc: subprocess.Popen, timeout: float):
    """Wait for one child (ending its group at the timeout); return (exit code, its rusage, timed out)."""
    deadline = time.monotonic() + timeout
    delay = 0.002
    timed_out = False
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() >= deadline:
            timed_out = True
            _kill_group(proc.pid)
            pid, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here; Popen must not wait again
    return proc.returncode, usage, timed_out


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _limit_files(pid: int) -> None:
    try:
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (FILE_LIMIT, FILE_LIMIT))
    except (AttributeError, OSError, ValueError):
        pass  # not Linux, a lower hard limit already, or the script has already ended


def failure(result: Result, job: Job, timeout: int) -> LessonError:
    tail = " | ".join(l for l in result.stderr.strip().splitlines()[-3:]) or "no stderr"
    if result.exit_code == -signal.SIGXFSZ:
        return LessonError(f"experiment {job.label} wrote more than {FILE_LIMIT >> 20} MB to one file (its output "
                           "included) and was stopped",
                           hint=f"print less: the page shows the first {OUTPUT_CAP >> 10} KB")
    if result.timed_out:
        return LessonError(f"experiment {job.label} did not finish within {timeout} s and was stopped",
                           hint="make it faster, or raise `Timeout:` for this block")
    return LessonError(f"experiment {job.label} failed with exit code {result.exit_code}: {tail[-300:]}",
                       hint="run it by hand: nox -s experiment -- " + job.label.split(":")[0])
