"""How jobs show themselves: :class:`JobHandle`, :class:`StreamedResult`, :class:`LiveView`.

A live view re-renders one display in place, woken by engine events (docs/magics.md, "Internals").
"""

from __future__ import annotations

import dataclasses
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import fields
from typing import Any, Protocol

from . import jobs
from .errors import DshError
from .render import (
    TAIL_LINES,
    result_header,
    result_html,
    result_text,
    tail_lines,
    terminals_html,
    terminals_text,
)
from .screen_html import screen_html, screen_text, styled_lines
from .terminal import Result, TerminalInfo
from .terminal.api import Engine

# Set when the interpreter is exiting: background views stop publishing
# (the kernel's sockets are being torn down) and return quietly.
closing = threading.Event()

# A display's "once" behaviour, consumed by the next IPython display of it.
SKIP = "skip"  # the live view already shows this value: show nothing
SUMMARY = "summary"  # the output was streamed to stdout: show only the header


class _DisplayOnce:
    """Mixin: suppress (or shorten) the *next* IPython display of this value.

    A magic that already rendered its value in a live view still has to
    *return* the value (``r = %bash_wait``), and IPython would then display it
    a second time as the cell's result. IPython consults ``_ipython_display_``
    before any repr; as a property it exists only while a "once" is pending,
    so every later display (``r`` in another cell) uses the normal reprs.
    """

    _dsh_once: str | None = None

    def _set_display_once(self, mode: str | None) -> None:
        self.__dict__["_dsh_once"] = mode

    def _clear_display_once(self) -> None:
        self.__dict__.pop("_dsh_once", None)

    def _once_action(self) -> Callable[[], None] | None:
        mode = self.__dict__.get("_dsh_once")
        if mode is None:
            return None

        def once() -> None:
            self._clear_display_once()
            if mode == SUMMARY:
                print(self._summary_line())

        return once

    def _summary_line(self) -> str:  # pragma: no cover - overridden
        return ""


class StreamedResult(_DisplayOnce, Result):
    """A :class:`Result` whose output was already shown while it streamed.

    It is a Result in every other way (``isinstance`` holds, ``to_dict`` is the
    same); only its first display as the cell's value is suppressed (notebook:
    the live area already shows the final state) or shortened to the header
    line (plain IPython: the output itself went to stdout).
    """

    @classmethod
    def from_result(cls, r: Result, once: str | None) -> StreamedResult:
        out = cls(**{f.name: getattr(r, f.name) for f in fields(Result)})
        out._set_display_once(once)
        return out

    @property
    def _ipython_display_(self) -> Callable[[], None] | None:  # type: ignore[override]
        return self._once_action()

    def _summary_line(self) -> str:
        return result_header(self)


class JobHandle(_DisplayOnce):
    """What ``j = %bash_exec cmd`` gives you: a live reference to one job.

    ``str(j)`` is the job id, so ``%bash_wait $j`` works. In a notebook,
    displaying the handle opens a live view that follows the job to its end.
    """

    def __init__(
        self,
        job: jobs.Job,
        registry: Engine,
        live: Callable[[JobHandle], object] | None = None,
        on_wait: Callable[[jobs.Job], None] | None = None,
    ) -> None:
        self._job = job
        self._registry = registry
        self._live = live
        self._on_wait = on_wait

    # -- identity and state -------------------------------------------------
    @property
    def id(self) -> str:
        return self._job.id

    job_id = id

    @property
    def session_id(self) -> str:
        return self._job.owner

    @property
    def job(self) -> jobs.Job:
        return self._job

    @property
    def status(self) -> str:
        return self._job.status

    @property
    def done(self) -> bool:
        return self._job.done

    @property
    def result(self) -> Result | None:
        """The final Result once the job has settled, else None."""
        return self._job.result if self._job.done else None

    def snapshot(self) -> Result:
        """The result so far (``timed_out=True`` while the job runs)."""
        return snapshot(self._registry, self._job)

    @property
    def output(self) -> str:
        return self.snapshot().output

    @property
    def lines(self) -> list[str]:
        return self.snapshot().lines

    @property
    def command(self) -> str:
        return self.snapshot().command

    # -- actions ------------------------------------------------------------
    def wait(self, timeout: float | None = None) -> Result:
        """Block until the job settles, or ``timeout`` seconds; the Result."""
        res = self._registry.wait(self._job.id, timeout=timeout)
        if self._on_wait is not None and self._job.done:
            self._on_wait(self._job)
        return res

    def interrupt(self) -> None:
        """Send Ctrl-C to the job (if it is still the session's running job)."""
        if not self._job.done:
            self._registry.interrupt(self._job.owner)

    def to_dict(self) -> dict[str, Any]:
        r = self.snapshot()
        return {
            "job_id": self.id,
            "session_id": self.session_id,
            "status": self.status,
            "done": self.done,
            "result": r.to_dict(),
        }

    # -- reprs --------------------------------------------------------------
    def __str__(self) -> str:
        return self._job.id

    def __repr__(self) -> str:
        return result_text(snapshot(self._registry, self._job, tail=TAIL_LINES))

    def _repr_html_(self) -> str:
        return result_html(snapshot(self._registry, self._job, tail=TAIL_LINES))

    @property
    def _ipython_display_(self) -> Callable[[], None] | None:
        once = self._once_action()
        if once is not None:
            return once
        if self._live is not None and not self._job.done:
            live = self._live

            def show() -> None:
                live(self)

            return show
        return None

    def _summary_line(self) -> str:
        return result_header(snapshot(self._registry, self._job, tail=0))


class TerminalTable(list):  # type: ignore[type-arg]
    """``%bash_list``: the open terminals, marking this notebook's default."""

    def __init__(
        self, infos: list[TerminalInfo], default_session: str, default_note: str = ""
    ) -> None:
        super().__init__(infos)
        self.default_session = default_session
        self.default_note = default_note

    def __repr__(self) -> str:
        return terminals_text(self, self.default_session, self.default_note)

    def _repr_html_(self) -> str:
        return terminals_html(self, self.default_session, self.default_note)

    def to_dict(self) -> dict[str, Any]:
        return {
            "default_session": self.default_session,
            "terminals": [i.to_dict() for i in self],
        }


class ScreenView:
    """``%bash_screen``: one terminal's screen at one moment, as the engine's
    ``screen()`` gave it (``.screen`` is that dict). Shows as literal HTML
    (:func:`~dsh_magics.screen_html.screen_html`) or as its rows in text."""

    def __init__(self, session_id: str, screen: dict[str, Any]) -> None:
        self.session_id = session_id
        self.screen = screen

    @property
    def lines(self) -> list[str]:
        return list(self.screen["lines"])

    @property
    def alt_screen(self) -> bool:
        return bool(self.screen.get("alt_screen"))

    @property
    def cursor(self) -> tuple[int, int]:
        """(row, column), both from 0."""
        return int(self.screen["cursor_row"]), int(self.screen["cursor_col"])

    @property
    def title(self) -> str:
        return str(self.screen.get("title") or "")

    def to_dict(self) -> dict[str, Any]:
        return {"session_id": self.session_id, **self.screen}

    def __repr__(self) -> str:
        return screen_text(self.screen, caption=f"session {self.session_id}")

    def _repr_html_(self) -> str:
        return screen_html(self.screen, caption=f"session {self.session_id}")


def screen_of(registry: Engine, session_id: str, *, styles: bool = True) -> ScreenView:
    """The session's screen now, from the engine (errors are the engine's)."""
    return ScreenView(session_id, registry.screen(session_id, styles=styles))


def output_colours(
    registry: Engine, r: Result, tail: int = TAIL_LINES, screen: dict[str, Any] | None = None
) -> dict[int, str]:
    """Colours for a result's shown lines, from the terminal's screen while it
    still shows them (the engine keeps a job's lines without ANSI; its screen
    keeps styles): only for the session's latest job, not a full-screen one.
    ``screen``: a styled screen already fetched. Never raises."""
    if r.screen is not None:
        return {}
    try:
        if screen is None:
            latest = registry.latest_job(r.session_id)
            if latest is None or latest.id != r.job_id:
                return {}
            screen = registry.screen(r.session_id, styles=True)
        return styled_lines(screen, tail_lines(r.output, tail))
    except Exception:  # noqa: BLE001 - colour is a nicety; the plain text is always shown
        return {}


def snapshot(registry: Engine, job: jobs.Job, tail: int | None = None) -> Result:
    """The job's Result so far (only its last ``tail`` lines if given: a view
    pulls what it draws, not the whole retained output, through the host);
    falls back to its final result if the terminal is already gone (a closed
    session settles its job first)."""
    if job.done and isinstance(job.result, Result):
        return job.result
    try:
        return registry.result(job.id, tail_lines=tail)
    except DshError:
        if isinstance(job.result, Result):
            return job.result
        raise


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

    def watch(self, session_id: str) -> threading.Event:
        ev = threading.Event()
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
    deadline: float | None = None,
    min_interval: float = 0.25,
    heartbeat: float = 1.0,
    stop: threading.Event | None = None,
) -> bool:
    """Keep ``sink`` up to date until the job settles or ``deadline``
    (a ``time.monotonic()`` value) passes. Returns True if the job settled.

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
            timeout = heartbeat
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                timeout = min(timeout, remaining)
            wake.wait(timeout)
            since = time.monotonic() - last
            if since < min_interval and not job.done:
                pause = min_interval - since
                if deadline is not None:
                    pause = min(pause, max(0.0, deadline - time.monotonic()))
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
        tail = self.tail if not r.done else self.final_tail
        if r.done:  # the final view: the screen as the job left it
            colours = output_colours(self.registry, r, tail)
        elif self._colours_from is not None:
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


def screen_bundle(r: Result, screen: dict[str, Any]) -> dict[str, str]:
    """A running job shown as its header and the terminal's screen."""
    head = dataclasses.replace(r, output="", omitted_lines=0, dropped_lines=0)
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
