"""A group's live output area: one display re-rendered in place (one row per target, a
progress bar of members done), woken by the group's changes and its members' output,
at most every ``update_interval`` seconds; and the foreground wait on a group, where
Ctrl-C (the stop button) interrupts every member.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from .. import fanout
from ..fanout import GroupJob
from . import following as fol
from .group_render import MAX_ROWS, final_text, group_html, live_text
from .group_values import GroupView, started_at
from .live_views import ViewManager, ViewSettings
from .magic_args import seconds_text, to_ms

#: Lines of each running member's output a live row needs (its last line).
ROW_TAIL = 3


class GroupLiveView:
    """One display id showing one group."""

    def __init__(self, group: GroupJob, publish: Callable[..., Any], diff: bool = False,
                 max_rows: int = MAX_ROWS) -> None:
        self.group = group
        self.display_id = f"dsh-{group.id}-{uuid.uuid4().hex[:8]}"
        self._publish = publish
        self.diff = diff
        self.max_rows = max_rows
        self._lock = threading.Lock()
        self.final = False
        self.updates = 0

    def bundle(self, note: str | None = None) -> tuple[dict[str, str], bool]:
        done = self.group.done
        rep = fanout.report(self.group, tail_lines=None if done else ROW_TAIL)
        started = started_at(self.group)
        text = final_text(rep, self.diff) if rep.done else live_text(rep, started, self.max_rows)
        if note:
            text += f"({note})\n"
        html = group_html(rep, started, self.diff, self.max_rows, note)
        return {"text/plain": text, "text/html": html}, rep.done

    def show(self) -> None:
        with self._lock:
            data, self.final = self.bundle()
            self._publish(data=data, metadata={}, transient={"display_id": self.display_id})

    def refresh(self, note: str | None = None) -> bool:
        """Re-render in place; True once the final state is shown (``note``: why a wait returned)."""
        with self._lock:
            if (self.final and note is None) or fol.closing.is_set():
                return True
            data, final = self.bundle(note)
            self._publish(data=data, metadata={}, transient={"display_id": self.display_id}, update=True)
            self.updates += 1
            self.final = final
            return final


def follow_group(
    group: GroupJob,
    view: GroupLiveView,
    signals: fol.OutputSignals,
    *,
    min_interval: float,
    heartbeat: float,
    stop: threading.Event,
) -> None:
    """Keep ``view`` up to date until the group ends or ``stop`` is set. Wakes on a
    member's change (started, ended, waiting for input), on a member's output, and
    every ``heartbeat`` seconds (the elapsed times move); never re-renders more often
    than every ``min_interval`` seconds. Blocking here is interruptible (Ctrl-C)."""
    wake = threading.Event()
    sessions = sorted({run.member.session_id for run in group.runs})
    for sid in sessions:
        signals.watch(sid, wake)
    group.add_listener(wake.set)
    last = 0.0
    try:
        while not group.done and not stop.is_set():
            wake.wait(heartbeat)
            since = time.monotonic() - last
            if since < min_interval:
                stop.wait(min_interval - since)  # a burst of output is one re-render
            wake.clear()
            if fol.closing.is_set() or stop.is_set():
                return
            view.refresh()
            last = time.monotonic()
    finally:
        group.remove_listener(wake.set)
        for sid in sessions:
            signals.unwatch(sid, wake)
    if group.done and not fol.closing.is_set():
        view.refresh()


def show_live(views: ViewManager, group: GroupJob, settings: ViewSettings) -> GroupLiveView:
    """A live area for the group, kept up to date from a background thread."""
    view = GroupLiveView(group, views.publish)
    view.show()
    if not view.final:
        views.background(group.id, lambda stop: follow_group(
            group, view, views.signals, min_interval=settings.update_interval,
            heartbeat=settings.heartbeat, stop=stop))
    return view


def wait_group(
    views: ViewManager,
    group: GroupJob,
    timeout_ms: int | None,
    settings: ViewSettings,
    *,
    diff: bool = False,
    on_input: bool = True,
    write: Callable[[str], Any],
) -> GroupView:
    """Wait for the group (all members ended, ``timeout_ms``, or a member waiting for
    typed input), with a live area under a Jupyter front end. Ctrl-C interrupts every
    member, then waits up to ``interrupt_grace`` seconds for them to settle."""
    ended = threading.Event()
    outcome: list[bool] = []

    def waiter() -> None:
        try:
            outcome.append(group.wait(timeout_ms=timeout_ms, on_input=on_input))
        finally:
            ended.set()

    view: GroupLiveView | None = None
    interrupted = False
    try:
        if settings.live:
            threading.Thread(target=waiter, name=f"dsh-wait-{group.id}", daemon=True).start()
            # a quick group is drawn once, final
            first = to_ms(settings.update_interval) or 0
            if not group.wait(timeout_ms=first if timeout_ms is None else min(timeout_ms, first)):
                view = GroupLiveView(group, views.publish, diff)
                view.show()
                follow_group(group, view, views.signals, min_interval=settings.update_interval,
                             heartbeat=settings.heartbeat, stop=ended)
            ended.wait()
        else:
            waiter()
    except KeyboardInterrupt:
        interrupted = True
        hit = group.interrupt(source="notebook")
        try:
            group.wait(timeout_ms=to_ms(settings.interrupt_grace))
        except KeyboardInterrupt:
            pass  # a second Ctrl-C stops the waiting, not the members: what follows says how they are
        write(f"Interrupted: sent Ctrl-C to {len(hit)} member{'s' if len(hit) != 1 else ''} of group "
              f"{group.id}" + ("" if group.done else "; some are still running") + ".\n")
    reason, note = _why(group, interrupted, timeout_ms)
    rep = fanout.report(group)
    result = GroupView(group, rep, reason, diff, note)
    if settings.live:
        if view is None:
            view = GroupLiveView(group, views.publish, diff)
            view.show()
        if not view.final or note:
            view.refresh(note)
    return result


def _why(group: GroupJob, interrupted: bool, timeout_ms: int | None) -> tuple[str, str | None]:
    if interrupted:
        return "interrupted", None if group.done else "some members still run after Ctrl-C"
    if group.done:
        return "settled", None
    waiting = group.awaiting()
    if waiting:
        labels = fanout.fold(r.member.label for r in waiting)
        secret = any((r.awaiting or {}).get("secret") for r in waiting)
        how = "a person answers with %bash_send --secret --session SESSION" if secret else \
            "answer with %bash_send --session SESSION TEXT"
        return "awaiting_input", f"{labels} wait{'s' if len(waiting) == 1 else ''} for typed input: {how}"
    after = "" if timeout_ms is None else f" after {seconds_text(timeout_ms)}"
    return "timeout", f"the wait timed out{after}; the members keep running"
