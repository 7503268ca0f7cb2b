"""The client's event stream: reads the host's events, settles job proxies
on ``job_done`` and hands every event to the client's listeners."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any

from . import protocol as P
from .proxies import JobProxies
from .transport import Link

log = logging.getLogger(__name__)

Listener = Callable[[dict[str, Any]], None]


class EventStream:
    """Listeners and the thread that reads one event connection at a time.
    ``ended(generation)`` is told when a connection's stream ends."""

    def __init__(self, proxies: JobProxies, ended: Callable[[int], None]) -> None:
        self._proxies = proxies
        self._ended = ended
        self.listeners: list[Listener] = []

    def types(self) -> list[str]:
        """The event types to ask for: job proxies need only ``job_done``;
        listeners want everything."""
        return ["job_done", "job_started", "output", "terminal"] if self.listeners else ["job_done"]

    def start(self, link: Link) -> None:
        threading.Thread(target=self._loop, args=(link,), name="dsh-host-client-events", daemon=True).start()

    def _loop(self, link: Link) -> None:
        try:
            for line in link.reader:
                if isinstance(line, P.Oversized):
                    continue
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                event = msg.get("event") if isinstance(msg, dict) else None
                if isinstance(event, dict):
                    self._on_event(event)
        except OSError:
            pass  # the host went away: the loop below reports it as lost
        except Exception:  # noqa: BLE001 - never die silently with jobs pending
            log.exception("host event stream failed")
        self._ended(link.generation)

    def _on_event(self, event: dict[str, Any]) -> None:
        if event.get("type") == "job_done" and isinstance(event.get("result"), dict):
            result = self._proxies.job_done(event.get("job_id"), event["result"])
            event = dict(event, result=result)
        self.dispatch(event)

    def dispatch(self, event: dict[str, Any]) -> None:
        for fn in list(self.listeners):
            try:
                fn(event)
            except Exception:  # noqa: BLE001
                log.exception("registry listener failed")
