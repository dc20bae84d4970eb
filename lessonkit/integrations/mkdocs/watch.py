"""The serve's file watcher: the operating system's change notifications where it has them.

MkDocs' live-reload server polls the watched folders (``PollingObserver``): an edit is seen at
the next poll, and every poll walks the folders, also while a rebuild runs. :class:`Watcher`
takes its place (``server.observer``, which the server only schedules, unschedules, starts,
stops and joins): watchdog's native observer (inotify on Linux, FSEvents on macOS, …), passing
on only the events that change a file (created, modified, deleted, moved, closed after a
write). Opening or reading a file is no change: the build reads every page it watches, and a
notification of that would start a rebuild after every rebuild. Where the native observer cannot watch a folder (no such
facility, or the system's limit on watches reached), every folder is watched by polling again,
as MkDocs does, and the serve log says so once.
"""

from __future__ import annotations

import logging
from typing import Any

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers.api import BaseObserver

log = logging.getLogger("mkdocs.lessonkit.integrations.mkdocs.watch")
CHANGES = frozenset({"created", "modified", "deleted", "moved", "closed"})  # "closed": after a write


class _Changes(FileSystemEventHandler):
    """``handler``, told only of the events that change a file."""

    def __init__(self, handler: FileSystemEventHandler):
        self.handler = handler

    def dispatch(self, event: FileSystemEvent) -> None:
        if event.event_type in CHANGES:
            self.handler.dispatch(event)


class Watcher:
    """The observer of a live-reload server: native notifications, else ``polling``."""

    def __init__(self, polling: BaseObserver):
        self.polling = polling
        self.active: BaseObserver = polling
        self.watches: list[tuple[Any, _Changes, str, bool]] = []  # (the active observer's watch, …)
        try:
            from watchdog.observers import Observer

            native = Observer()
        except Exception as exc:  # noqa: BLE001  (no native facility here: poll, as MkDocs does)
            log.info(f"lessonkit serve: watching by polling ({type(exc).__name__}: {exc})")
        else:
            self.active = native if not isinstance(native, type(polling)) else polling

    def schedule(self, handler: FileSystemEventHandler, path: str, recursive: bool = False) -> Any:
        changes = _Changes(handler)
        try:
            watch = self.active.schedule(changes, path, recursive=recursive)
        except OSError as exc:
            if self.active is self.polling:
                raise
            self._to_polling(f"{path}: {exc.strerror or exc}")
            watch = self.polling.schedule(changes, path, recursive=recursive)
        self.watches.append((watch, changes, path, recursive))
        return watch

    def _to_polling(self, why: str) -> None:
        log.info(f"lessonkit serve: the system cannot watch {why}; watching every folder by polling")
        native, self.active = self.active, self.polling
        moved = []
        for watch, changes, path, recursive in self.watches:
            native.unschedule(watch)
            moved.append((self.polling.schedule(changes, path, recursive=recursive), changes, path, recursive))
        self.watches = moved

    def unschedule(self, watch: Any) -> None:
        self.active.unschedule(watch)
        self.watches = [w for w in self.watches if w[0] is not watch]

    def start(self) -> None:
        self.active.start()

    def stop(self) -> None:
        self.active.stop()

    def join(self, timeout: float | None = None) -> None:
        self.active.join(timeout)
