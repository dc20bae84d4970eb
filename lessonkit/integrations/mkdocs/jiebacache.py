"""Where jieba keeps its prefix dictionary: in the build's own cache, sealed, never a file another
process could have rewritten.

Material's search plugin segments Chinese text with jieba, which builds a prefix dictionary from
its word list (about a second) and keeps it as ``jieba.cache`` in ``tempfile.gettempdir()``; that
file is loaded on the next start without any check, so anything that can write that folder (a
user of the machine, an experiment of another build run without a jail) could change every later
build's search index. :func:`use` takes the dictionary's caching over from jieba:

- jieba's own cache file goes into a private temporary folder of this process (removed at exit),
  so jieba never loads a file it did not write itself in this process;
- the default dictionary's prefix dictionary is kept in the build cache instead, as
  ``<cache>/jieba/<folder_name>/prefix.sealed``: a header with the HMAC of the data under the
  cache's seal key (:mod:`lessonkit.util.seal`), then the data (marshal). jieba's ``initialize``
  reads it when its seal holds (read once, checked, then loaded: nothing swapped in between is
  used) and otherwise builds the dictionary and writes the sealed file, before any user
  dictionary is added to it (Material's ``load_userdict`` initializes first). A forged, truncated
  or foreign file is ignored and written again;
- what a killed process left half-written in the folder is removed.

It must run before anything loads the dictionary (Material's ``on_config`` does, via
``load_userdict``): the hooks' ``on_config`` runs first, and ``serve`` calls it before its own
first use of jieba. It also quiets jieba's logger, which writes four DEBUG lines to stderr each
time the dictionary loads ("Building prefix dict …", "Loading model cost …"): a build's log is
lessonkit's and MkDocs' own lines; jieba's warnings and errors still show.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import marshal
import os
import shutil
import tempfile
import time
from pathlib import Path

from lessonkit.errors import LessonError
from lessonkit.util import seal
from lessonkit.util.fs import atomic_write, clean_stale, owned_path, read_regular

FILE = "prefix.sealed"  # the default dictionary's prefix dictionary, in the build cache
FORMAT = b"lk-jieba-1"
MAX_SIZE = 64 << 20  # jieba 0.42's is about 9 MB: anything far larger is not one
_PRIVATE: list[Path] = []  # jieba's own cache folder in this process (made once)


def folder_name(jieba) -> str:
    """The cache folder's name for the dictionary jieba will load (its version and the file's identity)."""
    dictionary = jieba.dt.dictionary or os.path.join(os.path.dirname(jieba.__file__), "dict.txt")
    try:
        st = os.stat(dictionary)
        identity = f"{os.path.abspath(dictionary)}\0{st.st_size}\0{st.st_mtime_ns}"
    except OSError:
        identity = os.path.abspath(dictionary)
    return hashlib.sha256(f"{getattr(jieba, '__version__', '?')}\0{identity}".encode()).hexdigest()[:16]


def use(cache: Path) -> Path | None:
    """Take over jieba's dictionary cache (see the module docstring) with ``cache``'s folder
    ``<cache>/jieba/<folder_name>``; None when jieba is not installed. Returns the folder (a
    private temporary one where the cache cannot be written)."""
    try:
        import jieba
    except ImportError:
        return None
    if not _PRIVATE:
        _PRIVATE.append(Path(tempfile.mkdtemp(prefix="lessonkit-jieba-")))
        atexit.register(shutil.rmtree, _PRIVATE[0], True)
    jieba.dt.tmp_dir = str(_PRIVATE[0])  # jieba.cache: written and read by this process alone
    jieba.setLogLevel(logging.WARNING)  # jieba sets its logger to DEBUG, with its own stderr handler
    try:
        folder = owned_path(Path(cache), "jieba", folder_name(jieba))
        folder.mkdir(parents=True, exist_ok=True)
        if not os.access(folder, os.W_OK):
            raise PermissionError(folder)
        _sweep(folder)
    except (OSError, LessonError):
        return _PRIVATE[0]
    _take_over(jieba.dt, Path(cache), folder)
    return folder


def _take_over(dt, cache: Path, folder: Path) -> None:
    """Make ``dt.initialize`` (what ``check_initialized``, ``cut`` and ``load_userdict`` call) read
    the sealed prefix dictionary, or build it and write it sealed, for the default dictionary."""
    original = getattr(dt.initialize, "lessonkit_original", dt.initialize)

    def initialize(dictionary=None):
        if dictionary is None and dt.dictionary is None and not dt.initialized:
            with dt.lock:
                if not dt.initialized:
                    got = _read(cache, folder)
                    if got is not None:
                        dt.FREQ, dt.total = got
                        dt.initialized = True
                        return None
                    # built here rather than by ``original``, which would also write jieba's own
                    # copy of the same dictionary into the private folder, never to be read
                    dt.FREQ, dt.total = dt.gen_pfdict(dt.get_dict_file())
                    dt.initialized = True
                    _write(cache, folder, dt.FREQ, dt.total)
                    return None
        return original(dictionary)

    initialize.lessonkit_original = original  # type: ignore[attr-defined]
    dt.initialize = initialize


def _seal(cache: Path, folder: Path, data: bytes) -> str:
    return seal.seal(cache, FORMAT, folder.name.encode(), data)


def _read(cache: Path, folder: Path) -> tuple[dict, int] | None:
    """The sealed prefix dictionary of ``folder``, or None (missing, damaged, forged, foreign)."""
    try:  # a regular file only: never through a link, never waiting on a FIFO
        raw = read_regular(folder / FILE, MAX_SIZE)
    except OSError:
        return None
    head, sep, data = raw.partition(b"\n")
    parts = head.split(b" ")
    if not sep or len(raw) > MAX_SIZE or len(parts) != 2 or parts[0] != FORMAT:
        return None
    if not seal.sealed(cache, parts[1].decode("ascii", "replace"), FORMAT, folder.name.encode(), data):
        return None
    try:  # sealed under this cache's key: written by a build of this cache, as marshal
        freq, total = marshal.loads(data)
    except (ValueError, EOFError, TypeError):
        return None
    if not isinstance(freq, dict) or not isinstance(total, int):
        return None
    return freq, total


def _write(cache: Path, folder: Path, freq: dict, total: int) -> None:
    """Keep the prefix dictionary jieba just built, sealed (a failure costs only the next build's time)."""
    data = marshal.dumps((freq, total))
    try:
        atomic_write(folder / FILE, FORMAT + b" " + _seal(cache, folder, data).encode() + b"\n" + data)
    except OSError:
        pass


# What earlier versions let jieba write here: its cache file (never read now) and, from a process
# killed while writing it, a ``tempfile.mkstemp`` file (``tmpXXXXXXXX``, up to 9 MB). One older than
# this is no write in progress.
LEFTOVER_AGE = 3600
LEGACY = "jieba.cache"


def _sweep(folder: Path) -> None:
    """Remove what killed processes left half-written in ``folder``: this module's own temporary
    files (``.tmp-<owner>-…``) once their owner is dead, and jieba's (see LEFTOVER_AGE); and the
    file jieba kept here before lessonkit sealed the dictionary."""
    clean_stale(folder, prefix=".tmp-")
    now = time.time()
    with os.scandir(folder) as entries:
        for entry in entries:
            if not (entry.name.startswith("tmp") or entry.name == LEGACY) or not entry.is_file(follow_symlinks=False):
                continue
            try:
                if entry.name == LEGACY or now - entry.stat(follow_symlinks=False).st_mtime > LEFTOVER_AGE:
                    os.unlink(entry.path)
            except OSError:
                pass  # gone meanwhile, or not ours to remove: it costs only its space


def prepare(cache: Path) -> bool:
    """Build jieba's prefix dictionary into the build cache ahead of a build (what Material's search
    plugin would otherwise do on the build's main thread, about a second, the first time): the
    default dictionary, sealed, in the folder :func:`use` gives. It is written whole (a temporary
    file, then renamed), so a build that starts meanwhile reads a finished file or builds its own.
    False when jieba is not installed or the cache cannot hold it."""
    folder = use(cache)
    if folder is None or folder == _PRIVATE[0]:
        return False
    import jieba

    jieba.dt.check_initialized()  # (jieba.initialize is the unwrapped method)
    return (folder / FILE).is_file()
