"""The facts every panel over one engine shares: one :class:`PanelModel` per engine.

It subscribes to the engine's events and refreshes a :class:`~.panel_view.Snapshot`
on a worker thread, so panels never list terminals themselves.
"""

from __future__ import annotations

import builtins
import dataclasses
import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .. import shutdown
from ..errors import DshError
from ..terminal.api import Engine
from .panel_view import JobRow, Snapshot, input_rows

log = logging.getLogger(__name__)

DEFAULT_JOBS = 10

Listener = Callable[[Snapshot], None]


class PanelModel:
    """The facts every panel over one registry shares, refreshed by events."""

    def __init__(
        self,
        registry: Engine,
        *,
        coalesce: float = 0.05,
        tick: float = 1.0,
        max_jobs: int = DEFAULT_JOBS,
    ) -> None:
        self._registry_ref = weakref.ref(registry)
        self.coalesce = coalesce
        self.tick = tick
        self.max_jobs = max_jobs
        self._lock = threading.RLock()
        self._listeners: builtins.list[Listener] = []
        self._snapshot = Snapshot(version=0, taken_at=time.time())
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._closed: set[str] = set()
        self._closing: dict[str, int] = {}  # sessions a panel is closing right now
        self._jobs_dirty = True
        self.refresh_count = 0
        self.event_count = 0
        self.waits_without_timeout = 0
        self.tick_refreshes = 0  # refreshes no event asked for (the busy-only ticker)

    @property
    def registry(self) -> Engine:
        reg = self._registry_ref()
        if reg is None:  # pragma: no cover - panels hold the registry alive
            raise RuntimeError("the panel's registry is gone")
        return reg

    @property
    def snapshot(self) -> Snapshot:
        return self._snapshot

    @property
    def running(self) -> bool:
        """True while the refresher thread and the event subscription are live."""
        return self._thread is not None

    # -- views ---------------------------------------------------------------
    def add_view(self, listener: Listener) -> Callable[[], None]:
        """Deliver every new snapshot to ``listener``; returns the detach function.

        The first view starts the subscription and the refresher; the last one
        to leave stops them, so a kernel without panels pays nothing.
        """
        with self._lock:
            self._listeners.append(listener)
            if self._thread is None:
                self._start()
        self.refresh()

        def detach() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)
                if not self._listeners:
                    self._stop_thread()

        return detach

    # -- refreshing ----------------------------------------------------------
    def refresh(self, jobs: bool = True) -> Snapshot:
        """Take a new snapshot now and push it to every view (returns it).

        ``jobs=False`` keeps the previous job rows: output and the ticker do
        not change them, and under the terminal host listing jobs is a round
        trip over its socket.
        """
        with self._lock:
            reg = self.registry
            # Close marks noted while list() is in flight may postdate it: only
            # a listing taken after the mark proves the session reopened (pinned by
            # tests/widgets/test_panel_state.py::test_a_close_mark_is_kept_when_the_listing_predates_it).
            marked_before = set(self._closed)
            terminals = tuple(reg.list())
            if jobs:
                self._jobs_dirty = False
                recent = reg.jobs.all()[-self.max_jobs :]
                rows = tuple(self._row(reg, j) for j in reversed(recent))
            else:
                rows = self._snapshot.jobs
            self._closed -= marked_before & {t.session_id for t in terminals}
            closed = frozenset(self._closed | self._closing.keys())
            snap = Snapshot(self._snapshot.version + 1, time.time(), terminals, rows, closed)
            self._snapshot = snap
            self.refresh_count += 1
            for listener in list(self._listeners):
                try:
                    listener(snap)
                except Exception:  # noqa: BLE001 - one broken view must not stop the others
                    log.exception("panel view failed to refresh")
            return snap

    @staticmethod
    def _row(reg: Engine, job: Any) -> JobRow:
        row = JobRow.from_job(job)
        if job.done:
            return row
        try:  # a running job's inputs so far (one per terminal at most)
            inputs = input_rows(reg.result(job.id, tail_lines=0).inputs)
        except DshError:
            return row
        return dataclasses.replace(row, inputs=inputs)

    @contextmanager
    def closing(self, session_ids: builtins.list[str]) -> Iterator[None]:
        """Mark ``session_ids`` as closed for as long as a panel is closing them.

        The engine drops a terminal from its listing before its ``closed``
        event arrives (under the terminal host, events come over another
        socket, later still). A snapshot taken in between would show a
        selected terminal as merely "not started"; with this mark every panel
        sees it closed and falls back at once.
        """
        with self._lock:
            for sid in session_ids:
                self._closing[sid] = self._closing.get(sid, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                for sid in session_ids:
                    n = self._closing.pop(sid, 1) - 1
                    if n > 0:
                        self._closing[sid] = n

    def wait_timeout(self) -> float | None:
        """How long the refresher may sleep: forever when no terminal is busy."""
        return self.tick if self._snapshot.busy else None

    def _on_event(self, event: dict[str, Any]) -> None:
        # Runs on engine threads (sometimes under the registry's lock): only
        # note what changed, never call back into the registry from here.
        self.event_count += 1
        kind = event.get("type")
        if kind != "output":
            self._jobs_dirty = True
        if kind == "terminal" and event.get("status") == "closed":
            self._closed.add(str(event.get("session_id")))
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            timeout = self.wait_timeout()
            if timeout is None:
                self.waits_without_timeout += 1
            woke = self._wake.wait(timeout)
            if self._stop.is_set():
                break
            if not woke:
                self.tick_refreshes += 1
            if woke:
                # Let a burst of output events gather into one refresh.
                self._stop.wait(self.coalesce)
                if self._stop.is_set():
                    break
            self._wake.clear()
            try:
                self.refresh(jobs=self._jobs_dirty)
            except Exception:  # noqa: BLE001 - keep the refresher alive
                log.exception("panel refresh failed")

    def _start(self) -> None:
        self._stop.clear()
        self._unsubscribe = self.registry.subscribe(self._on_event)
        self._thread = threading.Thread(target=self._run, name="dsh-panel-refresher", daemon=True)
        self._thread.start()

    def _stop_thread(self) -> None:
        thread, self._thread = self._thread, None
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self._stop.set()
        self._wake.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=2.0)


_models: weakref.WeakKeyDictionary[Engine, PanelModel] = weakref.WeakKeyDictionary()
_models_lock = threading.Lock()


def _register_exit() -> None:
    """Stop the panels at exit, registered with the first model rather than
    at import (caller holds ``_models_lock``)."""
    global _exit_registered
    if not _exit_registered:
        shutdown.register(shutdown.VIEWS, _stop_models)
        _exit_registered = True


def _stop_models() -> None:
    """At exit, panels stop refreshing before the terminals go (VIEWS step)."""
    with _models_lock:
        models = list(_models.values())
    for model in models:
        model._stop_thread()


_exit_registered = False


def shared_model(registry: Engine, **options: Any) -> PanelModel:
    """The one model for ``registry`` (created on first use).

    Every panel over the same registry gets the same model, which is what keeps
    two panels (or two views of one kernel) telling the same story.
    ``options`` apply only when the model is created.
    """
    with _models_lock:
        model = _models.get(registry)
        if model is None:
            model = PanelModel(registry, **options)
            _models[registry] = model
            _register_exit()
        return model
