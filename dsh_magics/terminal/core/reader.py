"""The reader thread's loop: it blocks in ``select`` on the PTY, a wake-up
pipe and the shell's pidfd (no polling, so an idle terminal costs no CPU).

When output it read went to an attached viewer (host/stream.py, which says
so with :func:`handed_to_viewer`), the screen's idle parse (``on_idle``)
waits for :data:`IDLE_S` of quiet instead of running at once: the viewer
woken by that output then gets a core while the reader waits, instead of
waiting behind the parse (a key's echo in vim: benchmarks/README.md,
``bench_attach.py``).
"""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from . import fdwait


@dataclass(frozen=True)
class Handlers:
    """What the reader asks and tells its terminal."""

    closed: Callable[[], bool]  # stop reading
    next_due: Callable[[], float | None]  # the running job's next deadline (monotonic)
    on_data: Callable[[bytes], None]  # bytes from the PTY
    on_due: Callable[[], None]  # the deadline has passed
    on_gone: Callable[[], None]  # the process is gone (called once)
    on_idle: Callable[[], None] = lambda: None  # output stopped: nothing more to read right now
    #: The loop failed while the terminal was open (called once; None: the error propagates).
    on_failed: Callable[[BaseException], None] | None = None


#: ``WakePipe.armed`` while the reader is between two waits (its deadline not yet known).
UNKNOWN = -1.0

#: Quiet after output handed to a viewer before the screen's idle parse (seconds).
IDLE_S = 0.002

_local = threading.local()  # ``viewer``: this reader's output went to a viewer since its last wait


def handed_to_viewer() -> None:
    """Output this thread read went to an attached viewer: if it is a
    terminal's reader, its idle parse waits for a moment of quiet (module
    docstring). Elsewhere nothing."""
    if getattr(_local, "viewer", None) is not None:
        _local.viewer = True


class WakePipe:
    """A pipe whose read end the reader watches: written to wake it, so it
    picks up a new deadline. ``armed`` is the deadline the reader waits
    with (None: none, :data:`UNKNOWN`: it is about to look again), so a new
    deadline that is not earlier needs no wake-up (:meth:`due`)."""

    def __init__(self) -> None:
        r, w = os.pipe()
        os.set_blocking(r, False)
        self.r: int | None = r
        self.w: int | None = w
        self.armed: float | None = UNKNOWN

    def poke(self) -> None:
        if self.w is not None:
            try:
                os.write(self.w, b"x")
            except OSError:
                pass  # closed with its terminal: nobody reads to be woken

    def due(self, deadline: float) -> None:
        """A deadline was set (after it was stored where ``next_due`` reads
        it): wake the reader only if it waits without one or for a later
        one. Keys typed into a job set one each, and their echo wakes the
        reader anyway; a poke per key cost the host a thread switch on the
        echo's path (benchmarks/README.md, ``bench_attach.py``). The reader
        marks itself :data:`UNKNOWN` before it reads ``next_due``, so a
        deadline stored meanwhile is either seen there or poked."""
        armed = self.armed
        if armed is None or armed == UNKNOWN or armed > deadline:
            self.poke()

    def close(self) -> None:
        for fd in (self.r, self.w):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass  # already closed: closing twice is the same as once
        self.r = self.w = None


def loop(proc: Any, pidfd: int | None, wake: int | WakePipe, h: Handlers) -> None:
    """Read ``proc``'s PTY until the shell is gone (``on_gone`` once) or the
    terminal is closed; ``on_due`` runs when ``next_due()`` (a monotonic
    deadline of the running job: an interrupt or quiet check) has passed.
    Without a pidfd, the shell's exit shows as EOF, or a 0.5 s look.

    If reading fails while the terminal is open (a descriptor closed under
    it, an error in a handler), ``on_failed`` gets the error: once nothing
    reads the PTY no job could settle, and a terminal that looked alive
    would make every wait run out its time (tests/terminal/test_reader_failure.py).
    Given the :class:`WakePipe` (not only its read end), the loop keeps its
    ``armed`` deadline up to date (:meth:`WakePipe.due`)."""
    try:
        _loop(proc, pidfd, wake, h)
    except BaseException as e:  # noqa: BLE001 - handed to the terminal, which ends itself
        if h.on_failed is None or h.closed():
            raise
        h.on_failed(e)


def failure(error: BaseException) -> str:
    """The first words of a note about a failed reader (bounded)."""
    text = f"{type(error).__name__}: {error}"
    if len(text) > 200:
        text = text[:197] + "..."
    return f"the terminal's reader failed ({text})"


def _loop(proc: Any, pidfd: int | None, pipe: int | WakePipe, h: Handlers) -> None:
    _local.viewer = False
    try:
        _read(proc, pidfd, pipe, h)
    finally:
        _local.viewer = None


def _read(proc: Any, pidfd: int | None, pipe: int | WakePipe, h: Handlers) -> None:
    fd = proc.fd
    arm: Any = pipe if isinstance(pipe, WakePipe) else SimpleNamespace(armed=None)  # a bare fd: nobody to tell
    wake = pipe.r if isinstance(pipe, WakePipe) else pipe
    assert wake is not None
    watch = [fd, wake] if pidfd is None else [fd, wake, pidfd]
    fresh = False  # data was read since the last ``on_idle``
    while not h.closed():
        arm.armed = UNKNOWN
        due = h.next_due()
        arm.armed = due
        timeout = max(0.0, due - time.monotonic()) if due is not None else (None if pidfd is not None else 0.5)
        try:
            if fresh:
                first = 0.0
                if _local.viewer:  # a viewer has output to draw: let it, parse later
                    _local.viewer = False
                    first = IDLE_S if timeout is None else min(IDLE_S, timeout)
                readable = fdwait.readable(watch, first)
                if not readable:
                    fresh = False
                    h.on_idle()  # e.g. parse the screen before anybody looks
                    if due is not None:
                        timeout = max(0.0, due - time.monotonic())
                    readable = fdwait.readable(watch, timeout)
            else:
                readable = fdwait.readable(watch, timeout)
        except (OSError, ValueError):
            if h.closed():
                return  # the terminal closed its descriptors under the select
            raise
        arm.armed = UNKNOWN
        if wake in readable:
            try:
                os.read(wake, 4096)
            except OSError:
                pass  # closed under us: the loop's condition ends it
        if fd in readable:
            try:
                data = os.read(fd, 65536)
            except OSError as e:
                data = b""
                if e.errno not in (errno.EIO, errno.EBADF):
                    raise
            if data:
                h.on_data(data)
                fresh = True
            elif pidfd is None:
                h.on_gone()
                return
            else:
                watch.remove(fd)
        if (pidfd is not None and pidfd in readable) or (pidfd is None and not readable and not proc.isalive()):
            h.on_gone()
            return
        due = h.next_due()
        if due is not None and due <= time.monotonic():
            h.on_due()


def drain(fd: int, on_data: Callable[[bytes], None], within: float = 0.2) -> None:
    """Read what a dead shell wrote, without blocking forever: background
    children may keep the PTY open."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            r = fdwait.readable([fd], max(0.0, deadline - time.monotonic()))
            if not r:
                return
            data = os.read(fd, 65536)
        except OSError:
            return
        if not data:
            return
        on_data(data)
