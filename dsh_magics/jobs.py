"""A generic job layer: ids, owner, status, wait, cancel, completion listeners.

Knows nothing about bash, so waiting (timeouts, listeners, threads) is written and tested once.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from .errors import NoSuchJob

RUNNING = "running"

#: A job's label is its command as written, whole up to this many characters
#: (the agent tools' command limit): listings through the host carry it.
MAX_LABEL_CHARS = 100_000

Listener = Callable[["Job"], None]


def new_job_id(kind: str) -> str:
    """An unguessable id that is never reused: ``<kind>-<32 hex digits>``.

    Random rather than a counter, so that one session cannot address another's
    jobs by guessing and ids stay unique across kernel restarts.
    """
    return f"{kind}-{secrets.token_hex(16)}"


class Job:
    """One unit of asynchronous work.

    ``status`` is ``"running"`` until :meth:`settle` is called once with a
    final status string chosen by the producer; ``result`` is whatever the
    producer attaches. Waiting uses a condition variable, never polling.
    """

    def __init__(
        self,
        kind: str,
        owner: str,
        *,
        label: str = "",
        canceller: Callable[[Job], None] | None = None,
        job_id: str | None = None,
        source: str | None = None,
        created_at: float | None = None,
    ) -> None:
        self.id = job_id or new_job_id(kind)
        #: Who started it (``person``, ``agent``, ``notebook``...; None: not said).
        self.source = source
        self.kind = kind
        self.owner = owner
        self.label = label
        #: When it started (``time.time()``); a proxy takes its job's.
        self.created_at = time.time() if created_at is None else created_at
        self.settled_at: float | None = None
        self.status = RUNNING
        self.result: Any = None
        self._canceller = canceller
        self._cond = threading.Condition()
        self._listeners: list[Listener] = []

    @property
    def done(self) -> bool:
        return self.status != RUNNING

    def settle(self, status: str, result: Any = None) -> bool:
        """Record the final status once; later calls are ignored (returns False).

        Settling exactly once matters because several paths race to finish a
        job (a completion report, an interrupt resync, shell death).
        """
        if status == RUNNING:
            raise ValueError("a job cannot settle as running")
        with self._cond:
            if self.done:
                return False
            self.status = status
            self.result = result
            self.settled_at = time.time()
            # Nothing to cancel any more; the canceller (a terminal's bound
            # method) would keep a closed terminal, its ring and its screen
            # alive as long as the job is listed (benchmarks/soak.py: RSS
            # grew by ~14 KB an operation while closed terminals piled up).
            self._canceller = None
            listeners = list(self._listeners)
            self._listeners.clear()
            self._cond.notify_all()
        for fn in listeners:
            _call_quietly(fn, self)
        return True

    def wait(self, timeout: float | None = None) -> bool:
        """Block until settled or ``timeout`` seconds pass; True if settled."""
        with self._cond:
            if timeout is None:
                while not self.done:
                    self._cond.wait()
                return True
            deadline = time.monotonic() + max(0.0, timeout)
            while not self.done:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
            return True

    def cancel(self) -> None:
        """Ask the producer to stop the work; the job settles when it actually stops."""
        if not self.done and self._canceller is not None:
            self._canceller(self)

    def add_done_listener(self, fn: Listener) -> None:
        """Call ``fn(job)`` once the job settles (at once if it already has)."""
        with self._cond:
            if not self.done:
                self._listeners.append(fn)
                return
        _call_quietly(fn, self)

    def remove_done_listener(self, fn: Listener) -> None:
        with self._cond:
            if fn in self._listeners:
                self._listeners.remove(fn)

    def __repr__(self) -> str:
        return f"<Job {self.id} owner={self.owner!r} status={self.status}>"


def _call_quietly(fn: Listener, job: Job) -> None:
    # A listener is somebody else's code (a display updater, a widget); its
    # failure must not prevent other listeners or the producer from running.
    try:
        fn(job)
    except Exception:  # noqa: BLE001
        import logging

        logging.getLogger(__name__).exception("job listener failed")


class JobTable:
    """Thread-safe id -> Job map with bounded retention of finished jobs.

    Finished jobs are kept so that a late ``wait`` still finds the result, but
    only the newest ``keep_finished`` of them, so that an agent running
    thousands of commands does not grow memory without bound. Adding is O(1):
    this sits on every command's round trip.
    """

    def __init__(self, keep_finished: int = 1000) -> None:
        self._jobs: dict[str, Job] = {}
        self._finished: deque[str] = deque()
        self._lock = threading.Lock()
        self._keep = keep_finished

    def add(self, job: Job) -> Job:
        with self._lock:
            self._jobs[job.id] = job
        job.add_done_listener(self._on_done)
        return job

    def _on_done(self, job: Job) -> None:
        with self._lock:
            self._finished.append(job.id)
            while len(self._finished) > self._keep:
                self._jobs.pop(self._finished.popleft(), None)

    def get(self, job_id: str) -> Job:
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            raise NoSuchJob(f"no job with id {job_id!r} (unknown, or finished long ago)")
        return job

    def latest(self, owner: str | None = None) -> Job | None:
        with self._lock:
            for job in reversed(self._jobs.values()):
                if owner is None or job.owner == owner:
                    return job
        return None

    def running(self, owner: str | None = None) -> list[Job]:
        with self._lock:
            return [j for j in self._jobs.values() if not j.done and (owner is None or j.owner == owner)]

    def all(self) -> list[Job]:
        with self._lock:
            return list(self._jobs.values())

    def __len__(self) -> int:
        return len(self._jobs)
