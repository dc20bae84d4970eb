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
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, replace
from pathlib import Path

from lessonkit.config import environment
from lessonkit.errors import LessonError, Problem
from lessonkit.run import jobs
from lessonkit.run.box import sandbox
from lessonkit.run.box.spec import BoxSpec, engine
from lessonkit.run.box.tree import CheckedTree, shared_files
from lessonkit.run.boxrun import HELPERS, BoxRun
from lessonkit.run.jobs import Job, Pending, Result, versions
from lessonkit.run.jobs import pin_args as pin_args
from lessonkit.run.outcomes import _STORED, _check, session_results
from lessonkit.run.outcomes import failure as failure
from lessonkit.util import seal, store
from lessonkit.util.fs import atomic_write, owned_path, read_regular, remove_owned

# Not under "mkdocs": a warning that only costs time must not fail `mkdocs build --strict`.
log = logging.getLogger("lessonkit.run.runner")

DEFAULT_TIMEOUT = 60
# lessonkit's record helper (`import lessonkit_record`), standard library only: every box holds a
# copy in a folder of its own on the script's PYTHONPATH, and so every key names its sha256.
RECORD_HELPER = Path(__file__).resolve().parent / "box" / "lessonkit_record.py"
# A script that lists files or imports by a computed name may read any sibling script: its box
# holds them all (and its key names them all).
LISTING = re.compile(
    rb"importlib\s*\.\s*(?:import_module|util|machinery)|import_module|__import__|\brunpy\b|\bglob\b"
    rb"|iterdir|listdir|scandir|os\.walk|\bexec\(|\bpkgutil\b|spec_from_file_location"
)


class Runner(BoxRun):
    """Runs jobs against one pinned tree; results cached under ``cache/experiments``.

    ``manifest`` (posix path → sha256) is the pinned tree's manifest: every box gets a
    copy checked against it; without it the tree as found when the runner starts.
    ``box_pinned`` (``site.toml [experiments] pinned``: folders, files, patterns) limits the copy
    to those parts of the tree; empty: all of it.

    Every run is specified by one :class:`~lessonkit.run.box.spec.BoxSpec` (:meth:`spec`), which
    the launcher consumes and whose digest is the job's key: the files the box holds (the pinned
    copy, the project files the script may read, the script), its environment, jail, limits,
    the pin (``pin_commit``, ``pin_sdist_sha256`` besides version and manifest digest), the tools
    and the engine's own code. A box holds of ``experiments/`` the helpers (``_*.py``), the files
    that are not scripts, and the scripts its own source names (a word equal to the script's
    module name), transitively; all of them if it lists files or imports by a computed name;
    and lessonkit's record helper (:data:`RECORD_HELPER`, ``import lessonkit_record``).
    ``jail`` (default: the process's, :func:`lessonkit.run.box.sandbox.jail`) is part of the key."""

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
        tools: tuple[tuple[str, str], ...] = (),
        pin_commit: str = "",
        pin_sdist_sha256: str = "",
        jail: sandbox.jails.Jail | None = None,
        import_path: str = "",
    ):
        self.pinned_root = Path(pinned_root)
        self.import_path = import_path.strip("/")  # the folder of the tree on sys.path ("" : its top)
        self.box_pinned = tuple(box_pinned)
        self.env_prefix = env_prefix  # scripts read <PREFIX>_PINNED_ROOT and <PREFIX>_PINNED_VERSION
        self.pinned_version = pinned_version
        self.support_dir = Path(support_dir)
        self.extra_paths = tuple(Path(p) for p in extra_paths if Path(p).is_dir())
        self.cache_root = Path(cache)
        self.cache = self.cache_root / "experiments"
        self.project_root = Path(project_root) if project_root else self.support_dir.parent
        environment.sandbox_mode()  # a bad LESSONKIT_SANDBOX is one located error, before any box
        self.jail = jail or sandbox.jail()
        # Every project file a box may hold, read once: the bytes written into a box are the bytes
        # whose sha256 its key names (self._blobs: sha256 -> bytes).
        self._blobs: dict[str, bytes] = {}
        always: list[tuple[str, str]] = []
        self._scripts: dict[str, tuple[str, str]] = {}  # experiments/x.py: stem -> (box path, sha256)
        for rel, p in shared_files((self.support_dir, *self.extra_paths)):
            data = p.read_bytes()
            digest = hashlib.sha256(data).hexdigest()
            self._blobs[digest] = data
            if p.parent == self.support_dir and p.suffix == ".py" and not p.name.startswith("_"):
                self._scripts[p.stem] = (f"project/{rel}", digest)
            else:
                always.append((f"project/{rel}", digest))
        helper = RECORD_HELPER.read_bytes()
        self._blobs[hashlib.sha256(helper).hexdigest()] = helper
        always.append((f"project/{HELPERS}/{RECORD_HELPER.name}", hashlib.sha256(helper).hexdigest()))
        self._always = tuple(always)
        self._visible: dict[bytes, tuple[tuple[str, str], ...]] = {}
        self._specs: dict[Job, BoxSpec] = {}
        self._keys: dict[int, tuple[Job, str]] = {}  # id(job) -> (job, key): see key()
        self.tools = tuple(tools)
        v = versions(self.tools)
        self._tools = (("executable", sys.executable), *sorted(v.items()))
        self._pin = (pinned_version, pin_commit, pin_sdist_sha256, manifest_digest, repr(self.box_pinned))
        self.stats = {"ran": 0, "cached": 0}
        self._done: dict[str, Result] = {}  # this build's results, failures included: each job runs once
        self._inflight: dict[str, Future] = {}  # started in the background, maybe not finished
        self._lock = threading.Lock()
        # The pinned files, checked, and the common copy of them (box.tree.CheckedTree).
        self.tree = CheckedTree(self.pinned_root, manifest, self.box_pinned, manifest_label, manifest_lines)
        self._ran = False  # an experiment ran since the last recheck
        self._warned_store = False
        self._warned_seal = False
        sandbox.BOXES.reset()
        sandbox.sweep_leftovers()
        store.sweep(self.cache_root)  # half-written entries of killed builds (dead owners only)
        seal.key(self.cache_root)  # made before any box starts, so that every box covers it

    # -- the box of a job, and its key

    def spec(self, job: Job) -> BoxSpec:
        """The complete specification of ``job``'s box (see the class docstring)."""
        spec = self._specs.get(job)
        if spec is None:
            script = (f"work/{job.name}", hashlib.sha256(job.source).hexdigest())
            files = (*self.tree.box_files(), *self.visible(job.source if job.reads is None else job.reads), script)
            spec = BoxSpec(
                jail=(self.jail.kind, self.jail.version),
                argv=(sys.executable, "-B", job.name),
                env=tuple(sorted(self._env().items())),
                cwd="{box}/work",
                files=tuple(sorted(files)),
                timeout=job.timeout,
                memory=job.memory,
                fsize=jobs.FILE_LIMIT,
                nproc=sandbox.NPROC,
                output=(jobs.OUTPUT_CAP, jobs.STDERR_CAP, jobs.RECORD_LIMIT),
                pin=self._pin,
                tools=self._tools,
                engine=engine(),
            )
            self._specs[job] = spec
        return spec

    def key(self, job: Job) -> str:
        # by the job object first: a page's inline values ask for the same few jobs thousands of
        # times, and hashing a Job (its fields, session parts and all) costs more than the lookup
        got = self._keys.get(id(job))
        if got is not None and got[0] is job:
            return got[1]
        key = self.spec(job).key
        self._keys[id(job)] = (job, key)  # the job is kept alive with it: its id is not reused
        return key

    def visible(self, source: bytes) -> tuple[tuple[str, str], ...]:
        """The project files a box running ``source`` holds: the helpers and other files that are
        not scripts, and the scripts it names (see the class docstring). A helper that reads a
        script the job does not name finds none, cold or warm: the box holds only what is keyed."""
        if source not in self._visible:
            texts = [source]
            if LISTING.search(source):
                seen = set(self._scripts)
            else:
                seen = set()
                while texts:
                    text = texts.pop()
                    for stem, (_, digest) in self._scripts.items():
                        if stem not in seen and re.search(rb"\b" + re.escape(stem.encode()) + rb"\b", text):
                            seen.add(stem)
                            texts.append(self._blobs[digest])
                            if LISTING.search(self._blobs[digest]):
                                seen = set(self._scripts)
                                texts = []
                                break
            self._visible[source] = (*self._always, *(self._scripts[s] for s in sorted(seen)))
        return self._visible[source]

    def entry(self, key: str) -> tuple[Result | None, str]:
        """The stored result for ``key``, checked, without changing the cache: ``(result, "")``, or
        ``(None, why)`` with ``why`` one of "missing", "damaged" (shape or digest), "unsealed" (a
        right digest but not this cache's seal: rewritten by something without the key, see
        :mod:`lessonkit.util.seal`) or "stale" (another key, or a failed run)."""
        path = self.cache / f"{key}.json"
        try:
            raw = read_regular(path)  # never through a link, never a FIFO, device or folder: "damaged"
            data = json.loads(raw.decode("utf-8"))
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
            if job.whole is not None and not self._stored(self.key(job.whole)):
                self.run(job.whole)  # the whole session runs once, in one box; this block's result comes with it
                with self._lock:
                    derived = self._done.get(key)
                if derived is not None:
                    return derived
            result = self._fresh(job)[key]
        with self._lock:
            self._done[key] = result
        return result

    def _fresh(self, job: Job) -> dict[str, Result]:
        """Run ``job`` now: its result, and for the whole of a session the results of the blocks
        before the last (see :func:`lessonkit.run.outcomes.session_results`). Passing ones are stored."""
        raw = self._execute_raw(job)
        self.stats["ran"] += 1
        self._ran = True
        # A box with namespaces cannot write the pinned tree (it is read-only there) and reads
        # the checked copy: what changes the tree meanwhile is reported once, by tree_problems.
        # Without them a script can write it: checked after every run.
        changed = [] if self.jail.isolated else self.recheck()
        if changed:  # computed while the pinned tree was not the pinned tree: never cached
            raw = replace(raw, problem=raw.problem or "tampered")
        results = session_results(job, raw, self.key) if job.parts else {raw.key: raw}
        for k, result in results.items():
            if result.ok:
                self._store(result)
            if k != raw.key:
                with self._lock:
                    self._done.setdefault(k, result)
        return results

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
        chained: list[tuple[str, Job, Job]] = []  # session blocks whose result comes with their session run
        with self._lock:
            for k, j in todo.items():
                if k in self._done:
                    futures[k] = Future()
                    futures[k].set_result(self._done[k])
                elif k in self._inflight:
                    futures[k] = self._inflight[k]
                elif self._stored(k):
                    futures[k] = self._inflight[k] = pool.submit(self._run, k, j)
                elif j.whole is not None and self.key(j.whole) in todo and not self._stored(self.key(j.whole)):
                    to_run += 1
                    chained.append((k, j, j.whole))
                    futures[k] = Future()  # replaced below; keeps the page order of the results
                else:
                    to_run += 1
                    futures[k] = self._inflight[k] = pool.submit(self._run, k, j)
            for k, _, _ in chained:  # never a pool task waiting for another: one session, one run
                futures[k] = self._inflight[k] = Future()
        for k, j, whole in chained:  # outside the lock: a session already done calls back at once
            self._after(futures[self.key(whole)], futures[k], k, j)
        self.tree.lease()  # the common copy lives until the batch's results (or cancel)
        signals.callback(self.tree.release)
        return Pending(futures, pool, to_run, signals)

    def _after(self, whole: Future, out: Future, key: str, job: Job) -> None:
        """Complete ``out``, a session block's future, when its session's run is done, with the result
        that run derived for it (or, when the session's result came from elsewhere, a run of its own)."""

        def done(f: Future) -> None:
            if f.cancelled():
                out.set_result(Result(key, -int(signal.SIGTERM), "", "", 0, 0.0, 0.0, problem="cancelled"))
                return
            if f.exception() is not None:
                out.set_exception(f.exception())
                return
            with self._lock:
                got = self._done.get(key)
            try:
                out.set_result(got if got is not None else self._run(key, job))
            except BaseException as exc:  # noqa: BLE001 (handed to whoever waits for the result)
                out.set_exception(exc)

        whole.add_done_callback(done)

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
        if self._ran and self.jail.isolated:  # not checked after each run (see _run)
            self._ran = False
            self.recheck()
        return self.tree.problems()
