"""The live views of jobs: output areas kept up to date by background
threads, and the foreground wait that streams a job while the engine waits.

Owned by the extension (one per loaded extension); the magics ask it for
views and hand it their settings with each request, so a ``%config``
change applies to the next view.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import threading
import uuid
from collections.abc import Callable
from typing import Any

from .. import jobs
from ..errors import DshError
from ..terminal import Result
from ..terminal.api import Engine
from ..terminal.deadline import Deadline
from ..terminal.requests import WaitRequest
from . import following as fol
from . import render
from .magic_args import seconds_text
from .values import snapshot

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class ViewSettings:
    """What a view needs from the magics' configuration (docs/magics.md)."""

    live: bool = True
    tail: int = 20
    update_interval: float = 0.25
    heartbeat: float = 1.0
    interrupt_grace: float = 5.0


class ViewManager:
    """Every live output area of one extension, by job. ``publish`` is the
    shell's display publisher (safe from a background thread under ipykernel)."""

    def __init__(self, registry: Engine, publish: Callable[..., Any]) -> None:
        self.registry = registry
        self._publish = publish
        self.signals = fol.OutputSignals(registry)
        self._views: dict[str, list[fol.LiveView]] = {}
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()

    # ------------------------------------------------------------------
    # the table of views
    def _new_view(self, job: jobs.Job, settings: ViewSettings) -> fol.LiveView:
        view = fol.LiveView(
            self.registry, job, self._publish, tail=settings.tail, screen_probe=settings.heartbeat
        )
        with self._lock:
            self._views.setdefault(job.id, []).append(view)
        return view

    def _forget(self, view: fol.LiveView) -> None:
        with self._lock:
            views = self._views.get(view.job.id)
            if views and view in views:
                views.remove(view)
                if not views:
                    del self._views[view.job.id]

    def finalize(self, job: jobs.Job) -> None:
        """Render the final state into every live view of a settled job, now,
        from the calling thread, so the cell that waited ends with all of the
        job's output areas final (no race with the background threads)."""
        with self._lock:
            views = list(self._views.get(job.id, ()))
        for view in views:
            view.refresh()

    def show_final(self, r: Result) -> None:
        """The one area of a job that settled before one was drawn: final at once."""
        display_id = f"dsh-{r.job_id}-{uuid.uuid4().hex[:8]}"
        bundle = fol.final_bundle(self.registry, r)
        self._publish(data=bundle, metadata={}, transient={"display_id": display_id})

    # ------------------------------------------------------------------
    # background views
    def show_live(self, job: jobs.Job, settings: ViewSettings) -> fol.LiveView:
        """Open an output area for the job and keep it updated in the background."""
        view = self._new_view(job, settings)
        view.show()
        if view.final:
            self._forget(view)
            return view

        def run() -> None:
            try:
                fol.follow(
                    job,
                    view,
                    self.signals,
                    min_interval=settings.update_interval,
                    heartbeat=settings.heartbeat,
                    stop=self._stop,
                )
            except Exception:  # noqa: BLE001 - a display thread must never kill anything
                log.exception("live view for %s failed", job.id)
            finally:
                self._forget(view)

        t = threading.Thread(target=run, name=f"dsh-live-{job.id[:13]}", daemon=True)
        self._threads = [x for x in self._threads if x.is_alive()]
        self._threads.append(t)
        t.start()
        return view

    def publish(self, **kwargs: Any) -> None:
        """Publish a display message (the shell's publisher)."""
        self._publish(**kwargs)

    def background(self, name: str, run: Callable[[threading.Event], None]) -> None:
        """Run ``run(stop)`` in a daemon thread this manager stops and joins (a group's view)."""

        def guarded() -> None:
            try:
                run(self._stop)
            except Exception:  # noqa: BLE001 - a display thread must never kill anything
                log.exception("live view %s failed", name)

        t = threading.Thread(target=guarded, name=f"dsh-live-{name}", daemon=True)
        self._threads = [x for x in self._threads if x.is_alive()]
        self._threads.append(t)
        t.start()

    # ------------------------------------------------------------------
    # waiting in the foreground (streams; Ctrl-C becomes a real Ctrl-C)
    def wait_streaming(
        self,
        job: jobs.Job,
        request: WaitRequest,
        settings: ViewSettings,
        *,
        interrupt_now: bool = False,
        after_send: tuple[int, int] | None = None,
        waited_first: bool = False,
    ) -> Result:
        """Stream the job (a live view, or stdout in plain IPython) while the
        engine's wait decides when to return (settled, matched, idle,
        awaiting input, timeout). ``request`` was built, and checked, by the
        magic: it goes to the engine's ``run_wait`` as it is, with what is left
        of its ``timeout_ms``.

        ``after_send`` is (output counter, milliseconds) when the input wait the
        job is in was already reported by ``%bash_send``: the program is
        still acting on those keys (vim takes ~0.1 s to exit after ``:q!``),
        so that input wait does not end this one until the job prints or
        ends, or that many milliseconds pass. ``waited_first``: the caller already
        gave the job update_interval to end (``exec`` with ``wait_ms``)."""
        deadline = Deadline.after_ms(request.timeout_ms)
        stop = threading.Event()
        ended: list[Any] = []

        def waiter() -> None:
            try:
                if after_send is not None:
                    seq, grace_ms = after_send
                    self.registry.wait_output(job.owner, seq, Deadline.after_ms(grace_ms).earlier(deadline).left_s())
                ended.append(self.registry.run_wait(dataclasses.replace(request, timeout_ms=deadline.left_ms())))
            except BaseException as e:  # noqa: BLE001 - reported by the streaming side
                ended.append(e)
            finally:
                stop.set()

        def start_waiter() -> None:
            threading.Thread(target=waiter, name=f"dsh-wait-{job.id[:13]}", daemon=True).start()

        # A plain wait (no --until, --idle, --until-screen, keys just sent) under
        # a live display first gives the job update_interval to end on its own,
        # in this thread: a quick job then costs no thread, no hand-off and one
        # display message, drawn final (issue 34 §5). Its input wait is noticed
        # from then on.
        plain = request.until is None and request.idle_ms is None and request.until_screen is None and after_send is None
        quick_first = settings.live and plain and not interrupt_now and not waited_first
        if not quick_first:
            start_waiter()
        sink: fol.Sink | None = None
        view: fol.LiveView | None = None
        interrupted = False
        try:
            # Everything from the first display on is inside the try: the
            # interrupt can land at any point, also while the view is created.
            try:
                if quick_first:
                    first = settings.update_interval
                    left = deadline.left_s()
                    if job.wait(first if left is None else min(first, left)):
                        stop.set()  # settled: nothing left for the engine's wait to say
                    else:
                        start_waiter()
                elif settings.live and not interrupt_now and not waited_first:
                    # Drawn once, final, if the job ends (or the wait does) meanwhile.
                    stop.wait(settings.update_interval)
                if settings.live:
                    view = self._new_view(job, settings)
                    view.show()
                    sink = view
                else:
                    sink = fol.StdoutStream(self.registry, job, _stdout_write)
                if interrupt_now:
                    raise KeyboardInterrupt
                fol.follow(
                    job,
                    sink,
                    self.signals,
                    deadline=deadline,
                    min_interval=settings.update_interval,
                    heartbeat=settings.heartbeat,
                    stop=stop,
                )
            except KeyboardInterrupt:
                interrupted = True
                self._interrupt(job, settings.interrupt_grace)
            result = snapshot(self.registry, job)
            why = ended[0] if ended and isinstance(ended[0], Result) else None
            if why is not None and not job.done and not interrupted and why.reason != "timeout":
                result = dataclasses.replace(
                    result,
                    reason=magic_reason(why),
                    match_line=why.match_line,
                    match_text=why.match_text,
                    awaiting_input=why.awaiting_input or result.awaiting_input,
                    timed_out=False,
                    note=_wait_note(why),
                )
            elif not job.done and not interrupted and request.timeout_ms is not None:
                timed_out = f"the wait timed out after {seconds_text(request.timeout_ms)}; the job keeps running"
                # Why it still runs: the job waits for typed input (one phrasing).
                why_note = render.input_note(result.awaiting_input) if result.awaiting_input else result.note
                note = f"{timed_out}. {why_note}" if why_note else timed_out
                result = dataclasses.replace(result, note=note, reason="timeout", timed_out=True)
            elif interrupted:
                result = dataclasses.replace(result, reason="interrupted")
            elif job.done:
                result = dataclasses.replace(result, reason="settled")
            if result.reason is None:  # e.g. the wait was stopped a second time
                result = dataclasses.replace(result, reason="settled" if job.done else "timeout")
            if job.done:
                self.finalize(job)
            elif view is not None:
                view.refresh(result)
            if sink is not None and view is None:
                sink.refresh()
        finally:
            if view is not None:
                self._forget(view)
        if interrupted:
            if job.done:
                _stdout_write(f"Interrupted: sent Ctrl-C to job {job.id} ({result.status}).\n")
            else:
                _stdout_write(
                    f"Sent Ctrl-C to job {job.id}, but it is still running after "
                    f"{settings.interrupt_grace:g}s: it ignores or handles Ctrl-C. Next: "
                    f"%bash_send --session {job.owner} --key 'ctrl-\\' (SIGQUIT), or "
                    f"%bash_close --session {job.owner} (ends the shell and all it started).\n"
                )
        return result

    def _interrupt(self, job: jobs.Job, grace: float) -> None:
        """Ctrl-C for the job, then give it a moment to settle. A second
        KeyboardInterrupt while we wait stops the waiting, not the job."""
        try:
            if not job.done:
                self.registry.interrupt(job.owner)
            job.wait(grace)
        except KeyboardInterrupt:
            pass  # a second Ctrl-C stops the waiting; the caller reports the job as it is
        except DshError:
            pass  # the terminal is gone: closing it settled the job, nothing to interrupt

    # ------------------------------------------------------------------
    def stop(self) -> None:
        """Background views stop publishing (at exit: the front end is going)."""
        self._stop.set()

    def close(self) -> None:
        """Stop background views and the event subscription (terminals stay)."""
        self._stop.set()
        self.signals.close()
        for t in self._threads:
            t.join(timeout=1.0)
        self._threads = []


def magic_reason(res: Result) -> str | None:
    """The engine's reason as the magics name it: a match is ``until`` (a
    line of output) or ``until_screen`` (a row of the screen)."""
    if res.reason == "matched":
        return "until" if res.match_line is not None else "until_screen"
    return res.reason


def _wait_note(res: Result) -> str | None:
    """Why a wait returned before the job ended, in one line."""
    if res.reason == "awaiting_input" and res.awaiting_input:
        return render.input_note(res.awaiting_input)
    if res.reason == "matched" and res.match_line is None:
        return f"the screen shows: {res.match_text}"  # --until-screen
    if res.reason == "matched":
        return f"matched line {res.match_line}: {res.match_text}"
    if res.reason == "idle":
        return "no output for the --idle spell; the job keeps running"
    return res.note


def _stdout_write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


__all__ = ["ViewManager", "ViewSettings"]
