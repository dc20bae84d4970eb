"""The cache's seal: an HMAC over every entry, keyed by a secret only the build can read.

An entry's digest (``lk-store-2 <sha256>``, an experiment result's ``check``) tells damage from
a good entry; anyone who can write the cache can recompute it. The seal is an HMAC-SHA256 under
a per-cache secret, ``<cache>/seal/key`` (32 random bytes as hex, mode 0600 in a 0700 folder,
made once by the first process that needs it): an entry that was rewritten by something that
cannot read the key fails its seal, and the build makes it again instead of shipping it.

What the seal stops and what it does not (README, *Caches*): experiments run in boxes that see
the cache read-only and the key covered (:mod:`lessonkit.run.box.sandbox`, ``Spec.hide``), so a
hostile experiment of this or another project sharing the cache can neither write an entry nor
seal one. Code that runs as the build's user outside a box (a hook, a ``kinds.toml`` module, an
experiment without namespaces, another project's build on the same cache) can read the key and
seal whatever it writes; such code can equally change lessonkit itself.

A cache that cannot hold the key (read-only without one, a link in place of the folder) gets a
key for this process only: nothing it writes outlives the process, and nothing it finds passes.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import stat
import tempfile
from pathlib import Path

from lessonkit.util.fs import owned_path, owner_tag

FOLDER, NAME = "seal", "key"
KEY_TEXT = re.compile(rb"^[0-9a-f]{64}\n?$")
_KEYS: dict[str, bytes] = {}  # cache folder -> its key (read or made once per process)


def _read(path: Path) -> bytes | None:
    """The key in ``path`` if it is a private regular file of ours holding a key, else None."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:  # never through a link, never waiting: a FIFO or a device opens at once and is refused below
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            return None
        data = os.read(fd, 100)
    finally:
        os.close(fd)
    return bytes.fromhex(data.strip().decode()) if KEY_TEXT.match(data) else None


def _make(folder: Path, path: Path) -> bytes:
    """A new key in ``path``: written to a private temporary file, then linked into place (never
    over an existing key, so that concurrent first builds agree on one); an existing key that is
    not private or not a key is replaced."""
    folder.parent.mkdir(parents=True, exist_ok=True)  # a new cache: the key is its first file
    folder.mkdir(mode=0o700, exist_ok=True)
    os.chmod(folder, 0o700)
    key = secrets.token_bytes(32)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".tmp-{owner_tag()}-")  # mode 0600
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(key.hex().encode() + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            found = _read(path)
            if found is not None:  # another process made it first
                return found
            os.replace(tmp, path)  # not a private key of ours (a link, another mode, other bytes)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return key


def key(cache: Path | None) -> bytes:
    """The seal key of ``cache`` (made on first use); a key of this process alone when the cache
    cannot hold one."""
    where = str(cache)
    found = _KEYS.get(where)
    if found is not None:
        return found
    got = None
    if cache is not None:
        try:
            folder = owned_path(cache, FOLDER)
            path = owned_path(cache, FOLDER, NAME)
            got = _read(path) or _make(folder, path)
        except Exception:  # read-only, full, a link in place of the folder: this process only
            got = None
    _KEYS[where] = got = got or secrets.token_bytes(32)
    return got


def seal(cache: Path | None, *parts: bytes) -> str:
    """HMAC-SHA256 of ``parts`` (each length-prefixed) under ``cache``'s key, as hex."""
    mac = hmac.new(key(cache), digestmod=hashlib.sha256)
    for part in parts:
        mac.update(len(part).to_bytes(8, "little"))
        mac.update(part)
    return mac.hexdigest()


def sealed(cache: Path | None, mark: str, *parts: bytes) -> bool:
    """``mark`` is the seal of ``parts`` under ``cache``'s key (compared in constant time)."""
    return hmac.compare_digest(mark, seal(cache, *parts))


def key_path(cache: Path) -> Path:
    """Where the key lives (a box covers it: see :mod:`lessonkit.run.box.sandbox`)."""
    return Path(cache) / FOLDER / NAME


def forget() -> None:
    """Forget the keys read by this process (tests that replace a cache's key)."""
    _KEYS.clear()
