"""What this server process knows of its tasks beyond their jobs: when it
first saw each, its status as the tasks extension shows it, its
``statusMessage``, its outstanding input requests and its final result."""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from .elicit import UrlRequest

#: How often a client should poll (the extension's ``pollIntervalMs``).
POLL_INTERVAL_MS = 1000
#: Job states after which the task is done.
_DONE = frozenset(("completed", "interrupted", "shell_exited"))


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class _Input:
    """An outstanding input request of a task: shown only to ``client``."""

    client: str
    nonce: str
    request: dict[str, Any]  # the wire ``elicitation/create`` request


@dataclass
class _Seen:
    """What this process knows of a task beyond its job."""

    created: float
    updated: float
    status: str = "working"
    result: dict[str, Any] | None = None  # the final CallToolResult, wire form
    message: str | None = None  # the extension's statusMessage
    inputs: dict[str, _Input] = field(default_factory=dict)


class TaskBoard:
    """The tasks this server handed out or was asked about.

    Changed only on the event loop's thread (its change signal is an
    ``asyncio.Event``); read from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str, _Seen] = {}
        self._changes: dict[str, asyncio.Event] = {}

    def _changed(self, tid: str, seen: _Seen) -> None:
        seen.updated = time.time()
        event = self._changes.pop(tid, None)
        if event is not None:
            event.set()

    async def next_change(self, tid: str, timeout: float) -> None:
        """Return at the task's next change, or after ``timeout`` seconds."""
        event = self._changes.setdefault(tid, asyncio.Event())
        try:
            await asyncio.wait_for(event.wait(), timeout)
        except asyncio.TimeoutError:
            return  # a bounded look: the caller looks again

    def ask(self, tid: str, key: str, client: str, request: UrlRequest) -> None:
        """The task needs a person's answer: ``input_required``, with a
        URL-mode elicitation under ``key`` (unique over the task's life)."""
        wire = {
            "method": "elicitation/create",
            "params": {"mode": "url", "message": request.message, "url": request.url},
        }
        with self._lock:
            seen = self._seen.get(tid)
            if seen is None or seen.status not in ("working", "input_required"):
                return
            seen.inputs[key] = _Input(client, request.nonce, wire)
            seen.status, seen.message = "input_required", None
            self._changed(tid, seen)

    def take_input(self, tid: str, key: str, client: str) -> str | None:
        """The nonce of ``client``'s outstanding request ``key``, once; the
        task is ``working`` again when none is left."""
        with self._lock:
            seen = self._seen.get(tid)
            held = seen.inputs.get(key) if seen is not None else None
            if seen is None or held is None or held.client != client:
                return None
            del seen.inputs[key]
            if not seen.inputs and seen.status == "input_required":
                seen.status = "working"
            self._changed(tid, seen)
            return held.nonce

    def withdraw(self, tid: str) -> None:
        """The prompt went away: its requests are no longer outstanding."""
        with self._lock:
            seen = self._seen.get(tid)
            if seen is None or not (seen.inputs or seen.message):
                return
            seen.inputs.clear()
            seen.message = None
            if seen.status == "input_required":
                seen.status = "working"
            self._changed(tid, seen)

    def say(self, tid: str, message: str | None) -> None:
        """The task's ``statusMessage`` while it works."""
        with self._lock:
            seen = self._seen.get(tid)
            if seen is None or seen.status not in ("working", "input_required") or seen.message == message:
                return
            seen.message = message
            self._changed(tid, seen)

    def created(self, tid: str) -> dict[str, Any]:
        """A new task for a running job: the ``CreateTaskResult``."""
        now = time.time()
        with self._lock:
            seen = self._seen.setdefault(tid, _Seen(now, now))
            return {"resultType": "task", **self._wire(tid, seen, None)}

    def cancelled(self, tid: str) -> None:
        with self._lock:
            seen = self._seen.setdefault(tid, _Seen(time.time(), time.time()))
            if seen.status in ("working", "input_required"):
                seen.status, seen.message = "cancelled", None
                seen.inputs.clear()
                self._changed(tid, seen)

    def state(
        self, tid: str, job_status: str, final: dict[str, Any] | None, viewer: str | None
    ) -> dict[str, Any]:
        """The task (``DetailedTask``) given its job's status now and, once
        the job ended, the final tool result, as client ``viewer`` sees it."""
        now = time.time()
        with self._lock:
            seen = self._seen.setdefault(tid, _Seen(now, now))
            if seen.status in ("working", "input_required") and job_status in _DONE and final is not None:
                seen.status, seen.result, seen.message = "completed", final, None
                seen.inputs.clear()
                self._changed(tid, seen)
            return self._wire(tid, seen, viewer)

    def status(self, tid: str) -> str | None:
        with self._lock:
            seen = self._seen.get(tid)
            return seen.status if seen is not None else None

    @staticmethod
    def _wire(tid: str, seen: _Seen, viewer: str | None) -> dict[str, Any]:
        """The wire task. Input requests carry a one-time link for a person:
        only the client they were made for sees them (another client sees
        the task ``working``, waiting for that person)."""
        status, message = seen.status, seen.message
        mine = {k: i.request for k, i in seen.inputs.items() if i.client == viewer}
        if status == "input_required" and not mine:
            status, message = "working", _ASKED_ELSEWHERE
        out: dict[str, Any] = {
            "taskId": tid,
            "status": status,
            "createdAt": _iso(seen.created),
            "lastUpdatedAt": _iso(seen.updated),
            "ttlMs": None,
            "pollIntervalMs": POLL_INTERVAL_MS,
        }
        if message:
            out["statusMessage"] = message
        if status == "input_required":
            out["inputRequests"] = mine
        if seen.result is not None:
            out["result"] = seen.result
        return out


#: A task waiting for a person another client was asked to send.
_ASKED_ELSEWHERE = "the job waits for a password that a person is being asked for through another client"


__all__ = ["POLL_INTERVAL_MS", "TaskBoard"]
