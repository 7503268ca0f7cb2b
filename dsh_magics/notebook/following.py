"""Following a running job: :func:`follow` wakes on engine events and
re-renders a sink (:class:`LiveView`, one display re-rendered in place, or
:class:`StdoutStream` in plain IPython); see docs/magics.md, "Internals".
"""

from __future__ import annotations

import dataclasses
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any, Protocol

from .. import jobs
from ..errors import DshError
from ..terminal import Result
from ..terminal.api import Engine
from ..terminal.deadline import Deadline
from .render import TAIL_LINES, result_html, result_text
from .screen_html import screen_html, screen_text
from .values import output_colours, snapshot

# Set when the interpreter is exiting: background views stop publishing
# (the kernel's sockets are being torn down) and return quietly.
closing = threading.Event()

# ---------------------------------------------------------------------------
# event wiring


class OutputSignals:
    """Fan the registry's events out to per-session wake-up events.

    One registry subscription serves every live view; a view waits on its own
    :class:`threading.Event`, so nothing polls and a quiet job costs nothing.
    """

    def __init__(self, registry: Engine) -> None:
        self.registry = registry
        self._lock = threading.Lock()
        self._waiters: dict[str, set[threading.Event]] = {}
        self._unsubscribe = registry.subscribe(self._on_event)

    def watch(self, session_id: str, ev: threading.Event | None = None) -> threading.Event:
        """An event set at each event of ``session_id`` (``ev``: one shared by several sessions)."""
        ev = ev if ev is not None else threading.Event()
        with self._lock:
            self._waiters.setdefault(session_id, set()).add(ev)
        return ev

    def unwatch(self, session_id: str, ev: threading.Event) -> None:
        with self._lock:
            waiters = self._waiters.get(session_id)
            if waiters is not None:
                waiters.discard(ev)
                if not waiters:
                    del self._waiters[session_id]

    def _on_event(self, event: dict[str, Any]) -> None:
        # Runs on the terminal's reader thread: only set events here.
        sid = event.get("session_id")
        if sid is None:
            return
        with self._lock:
            waiters = list(self._waiters.get(sid, ()))
        for ev in waiters:
            ev.set()

    def close(self) -> None:
        self._unsubscribe()
        with self._lock:
            waiters = [ev for evs in self._waiters.values() for ev in evs]
            self._waiters.clear()
        for ev in waiters:
            ev.set()


class Sink(Protocol):
    def refresh(self) -> bool:
        """Render the job's current state; True once the final state is shown."""
        ...


def follow(
    job: jobs.Job,
    sink: Sink,
    signals: OutputSignals,
    *,
    deadline: Deadline | None = None,
    min_interval: float = 0.25,
    heartbeat: float = 1.0,
    stop: threading.Event | None = None,
) -> bool:
    """Keep ``sink`` up to date until the job settles or ``deadline`` passes
    (None: never). Returns True if the job settled.

    Wakes on new output, on the job settling, and every ``heartbeat`` seconds
    (so an elapsed-time display keeps moving); never renders more often than
    every ``min_interval`` seconds. Blocking calls here are interruptible, so a
    KeyboardInterrupt reaches the caller promptly.
    """
    wake = signals.watch(job.owner)

    def on_done(_job: jobs.Job) -> None:
        wake.set()

    job.add_done_listener(on_done)
    last = 0.0
    try:
        while not job.done:
            if stop is not None and stop.is_set():
                return job.done
            # None: no limit (no deadline, or one that is never). Not "or 0.0":
            # a never-deadline's None read as 0 made this loop redraw without
            # pause (tests/magics/test_following.py).
            left = None if deadline is None else deadline.left_s()
            timeout = heartbeat
            if left is not None:
                if left <= 0:
                    break
                timeout = min(timeout, left)
            wake.wait(timeout)
            since = time.monotonic() - last
            if since < min_interval and not job.done:
                pause = min_interval - since
                left = None if deadline is None else deadline.left_s()
                if left is not None:
                    pause = min(pause, left)
                job.wait(pause)  # returns at once if the job settles
            wake.clear()
            if closing.is_set() or (stop is not None and stop.is_set()):
                return job.done
            sink.refresh()
            last = time.monotonic()
    finally:
        signals.unwatch(job.owner, wake)
        job.remove_done_listener(on_done)
    if job.done and not closing.is_set():
        sink.refresh()
    return job.done


# ---------------------------------------------------------------------------
# sinks


class LiveView:
    """One display id showing one job, re-rendered in place.

    ``publish`` is the shell's display publisher (``shell.display_pub.publish``),
    which is safe to call from a background thread under ipykernel.
    """

    def __init__(
        self,
        registry: Engine,
        job: jobs.Job,
        publish: Callable[..., Any],
        tail: int = 20,
        final_tail: int = TAIL_LINES,
        screen_probe: float | None = 1.0,
    ) -> None:
        self.registry = registry
        self.job = job
        self.display_id = f"dsh-{job.id}-{uuid.uuid4().hex[:8]}"
        self._publish = publish
        self.tail = tail
        self.final_tail = final_tail
        self._lock = threading.Lock()
        self.final = False
        self.updates = 0
        #: The screen drawn instead of the lines while the job's program is
        #: on the alternate screen (None: the lines are drawn).
        self.screen: dict[str, Any] | None = None
        self.screen_probe = screen_probe
        self._probed_at: float | None = None
        #: The last styled screen probed while the job's program was not on
        #: the alternate screen: the colours of its last lines.
        self._colours_from: dict[str, Any] | None = None

    def bundle(self, r: Result) -> dict[str, str]:
        if self.screen is not None and not r.done:
            return screen_bundle(r, self.screen)
        if r.done:  # the final view: the screen as the job left it
            return final_bundle(self.registry, r, self.final_tail)
        tail = self.tail
        if r.styles is not None or self._colours_from is not None:
            colours = output_colours(self.registry, r, tail, screen=self._colours_from)
        else:
            colours = {}
        return {"text/plain": result_text(r, tail), "text/html": result_html(r, tail, colours)}

    def _snapshot(self) -> Result:
        """Only the lines the running view draws; the final view draws more,
        from the job's own final result."""
        r = snapshot(self.registry, self.job, tail=self.tail)
        if r.done and r.omitted_lines:
            r = snapshot(self.registry, self.job)
        self._look_at_screen(r)
        return r

    def _look_at_screen(self, r: Result) -> None:
        """Follow the terminal's screen while the job's program is on the
        alternate screen (less, vim, top). Bounded cost: while it is not, the
        screen is probed at most every ``screen_probe`` seconds (with styles:
        the colours of the job's last lines); while it is, fetched with
        styles at the view's own cadence."""
        if r.done or self.screen_probe is None:
            self.screen = None
            return
        now = time.monotonic()
        if self.screen is None:
            if self._probed_at is not None and now - self._probed_at < self.screen_probe:
                return
            self._probed_at = now
            try:
                probe = self.registry.screen(self.job.owner, styles=True)
            except DshError:
                return
            if not probe.get("alt_screen"):
                self._colours_from = probe
                return
        try:
            scr = self.registry.screen(self.job.owner, styles=True)
        except DshError:
            self.screen = None
            return
        self.screen = scr if scr.get("alt_screen") else None
        if self.screen is None:
            self._probed_at = now

    def show(self) -> None:
        """Create the output area (in the cell that is executing now)."""
        with self._lock:
            r = self._snapshot()
            self._publish(
                data=self.bundle(r), metadata={}, transient={"display_id": self.display_id}
            )
            self.final = r.done

    def refresh(self, result: Result | None = None) -> bool:
        with self._lock:
            if self.final:
                return True
            if closing.is_set():
                return True
            try:
                r = result if result is not None else self._snapshot()
            except DshError:
                return self.final
            self._publish(
                data=self.bundle(r),
                metadata={},
                transient={"display_id": self.display_id},
                update=True,
            )
            self.updates += 1
            self.final = r.done
            return self.final


def final_bundle(registry: Engine, r: Result, tail: int = TAIL_LINES) -> dict[str, str]:
    """A settled job's area: its last ``tail`` lines, with their colours."""
    colours = output_colours(registry, r, tail)
    return {"text/plain": result_text(r, tail), "text/html": result_html(r, tail, colours)}


def screen_bundle(r: Result, screen: dict[str, Any]) -> dict[str, str]:
    """A running job shown as its header and the terminal's screen."""
    head = dataclasses.replace(r, output="", omitted_lines=0, dropped_lines=0, styles=None)
    note = "full-screen program: showing the terminal's screen"
    return {
        "text/plain": result_text(head, 0) + "\n" + screen_text(screen, caption=note),
        "text/html": result_html(head, 0) + screen_html(screen, caption=note),
    }


class StdoutStream:
    """Plain IPython: print the job's new complete lines as they arrive.

    The cursor counts lines from the job's start (including lines the ring
    dropped), so nothing is printed twice and a gap is reported, not hidden.
    """

    def __init__(self, registry: Engine, job: jobs.Job, write: Callable[[str], Any]) -> None:
        self.registry = registry
        self.job = job
        self._write = write
        self.printed = 0

    def refresh(self) -> bool:
        try:
            r = snapshot(self.registry, self.job)
        except DshError:
            return False
        pieces = r.output.split("\n")
        # A last line without its newline is only complete once the job is done.
        complete = pieces if (r.done and not r.output.endswith("\n") and r.output) else pieces[:-1]
        start = r.dropped_lines
        if self.printed < start:
            self._write(
                f"... {start - self.printed} lines dropped by the ring before they were shown\n"
            )
            self.printed = start
        new = complete[self.printed - start :]
        if new:
            self._write("\n".join(new) + "\n")
            self.printed += len(new)
        return r.done
