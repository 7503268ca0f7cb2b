"""The registry's events: who listens, and delivering each event to every
listener without letting one failing listener stop the others."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

Listener = Callable[[dict[str, Any]], None]

log = logging.getLogger(__name__)


class Listeners:
    """The listeners of one registry.

    Events are dicts: ``output`` (new output in a session), ``job_started``,
    ``job_done`` (with ``result``), ``terminal`` (a status change), ``input``.
    They are delivered on engine threads (often a terminal's reader thread),
    so listeners must be quick and should hand real work to another thread;
    calling back into the registry from a listener is allowed (no registry
    lock is held while events are delivered)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: list[Listener] = []

    def add(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(event)`` for every event; returns an unsubscribe."""
        with self._lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def emit(self, event: dict[str, Any]) -> None:
        listeners = self._listeners
        if not listeners:
            return
        for fn in list(listeners):
            try:
                fn(event)
            except Exception:  # noqa: BLE001 - one listener's bug must not stop the others or the reader
                log.exception("registry listener failed")
