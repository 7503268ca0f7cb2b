"""Ctrl-C (SIGINT in the main thread) held back while the engine starts or
closes a terminal. Raised half-way through either, it left a shell behind
that nobody would close (tests/magics/test_engine_gaps.py::
test_ctrl_c_during_terminal_start_leaves_no_shell). A start is still cut
short by Ctrl-C: its waits run in an :func:`allowed` region.

Only the main thread gets Python's signal handlers, so in any other thread
both are no-ops. A Ctrl-C held back goes, at the end, to the handler that
was there before: ``KeyboardInterrupt`` (Python's and IPython's), a
script's own handler, or the default action; several count as one.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["allowed", "deferred"]

Handler = Callable[[int, Any], Any] | int | None

#: One entry per :func:`deferred` region open in the main thread, outermost
#: first: the handler it replaced and the Ctrl-Cs it caught.
_open: list[tuple[Handler, list[int]]] = []


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Hold back Ctrl-C for the duration; deliver it at the end."""
    if not _main_thread():
        yield
        return
    try:
        previous = signal.getsignal(signal.SIGINT)
        if previous is None or previous == signal.SIG_IGN:
            yield  # nothing would act on a Ctrl-C: nothing to hold back
            return
        caught: list[int] = []
        signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    except (ValueError, OSError):  # (an embedding interpreter that refuses handlers)
        yield
        return
    _open.append((previous, caught))
    try:
        yield
    finally:
        _open.pop()
        signal.signal(signal.SIGINT, previous)
        if caught:
            signal.raise_signal(signal.SIGINT)  # to ``previous``, or an outer region's catcher


@contextlib.contextmanager
def allowed() -> Iterator[None]:
    """Inside :func:`deferred` regions, a stretch where Ctrl-C acts at once
    (a wait the person may want to cut short). One held back so far is
    delivered on entry. The caller must leave nothing half-done here that
    its own ``except BaseException`` would not clean up."""
    if not _open or not _main_thread():
        yield
        return
    original = _open[0][0]
    catcher = signal.getsignal(signal.SIGINT)
    pending = any(caught for _, caught in _open)
    for _, caught in _open:
        caught.clear()
    signal.signal(signal.SIGINT, original)
    try:
        if pending:
            signal.raise_signal(signal.SIGINT)
        yield
    finally:
        signal.signal(signal.SIGINT, catcher)
