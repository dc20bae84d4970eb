"""Where jieba keeps its prefix dictionary: in the build's own cache, not the system's temporary folder.

Material's search plugin segments Chinese text with jieba, which builds a prefix dictionary from
its word list (about a second) and keeps it as ``jieba.cache`` in ``tempfile.gettempdir()``; the
default dictionary's cache is loaded without any check. Anything that can write that folder (a
user of the machine, an experiment of another build run without a jail) could rewrite it and so
change every later build's search index. :func:`use` points jieba at a folder of the build cache
instead, named by jieba's version and the dictionary file's path, size and modification time;
where the cache cannot be written, at a private temporary folder of this process (removed at
exit). It must run before anything loads the dictionary (Material's ``on_config`` does, via
``load_userdict``): the hooks' ``on_config`` runs first, and ``serve`` calls it before its own
first use of jieba. It also quiets jieba's logger, which writes four DEBUG lines to stderr each
time the dictionary loads ("Building prefix dict …", "Loading model cost …"): a build's log is
lessonkit's and MkDocs' own lines; jieba's warnings and errors still show. And it removes what a
killed process left half-written in the folder. The file is not sealed (docs/dev/reliability.md).
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path

from lessonkit.errors import LessonError
from lessonkit.util.fs import owned_path


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
    """Point jieba's cache at ``<cache>/jieba/<folder_name>`` (see the module docstring); None
    when jieba is not installed. Returns the folder."""
    try:
        import jieba
    except ImportError:
        return None
    try:
        folder = owned_path(Path(cache), "jieba", folder_name(jieba))
        folder.mkdir(parents=True, exist_ok=True)
        if not os.access(folder, os.W_OK):
            raise PermissionError(folder)
        _sweep(folder)
    except (OSError, LessonError):
        folder = Path(tempfile.mkdtemp(prefix="lessonkit-jieba-"))
        atexit.register(shutil.rmtree, folder, True)
    jieba.dt.tmp_dir = str(folder)
    jieba.setLogLevel(logging.WARNING)  # jieba sets its logger to DEBUG, with its own stderr handler
    return folder


# jieba writes its cache through ``tempfile.mkstemp(dir=folder)`` (``tmpXXXXXXXX``), then renames it:
# a process killed meanwhile leaves up to 9 MB. One older than this is no write in progress.
LEFTOVER_AGE = 3600


def _sweep(folder: Path) -> None:
    """Remove what killed processes left half-written in ``folder`` (see LEFTOVER_AGE)."""
    now = time.time()
    with os.scandir(folder) as entries:
        for entry in entries:
            if not entry.name.startswith("tmp") or not entry.is_file(follow_symlinks=False):
                continue
            try:
                if now - entry.stat(follow_symlinks=False).st_mtime > LEFTOVER_AGE:
                    os.unlink(entry.path)
            except OSError:
                pass  # gone meanwhile, or not ours to remove: it costs only its space


def prepare(cache: Path) -> bool:
    """Build jieba's prefix dictionary into the build cache ahead of a build (what Material's search
    plugin would otherwise do on the build's main thread, about a second, the first time): the
    default dictionary, in the folder :func:`use` gives. jieba writes its cache file whole (a
    temporary file, then renamed), so a build that starts meanwhile reads a finished file or builds
    its own. False when jieba is not installed."""
    if use(cache) is None:
        return False
    import jieba

    jieba.initialize()
    return True
