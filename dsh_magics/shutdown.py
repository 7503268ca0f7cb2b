"""One owner for process exit: steps run in a fixed order (VIEWS, DETACH, TERMINALS, BRIDGES, REPORT).

Modules register a callback for a step, never ``atexit``/``signal`` themselves (docs/engine.md).
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import threading
from collections.abc import Callable
from typing import Any

VIEWS = 10
DETACH = 20
TERMINALS = 30
BRIDGES = 40
REPORT = 50  # last words, after everything else (a server's "exited" line)
STEPS = (VIEWS, DETACH, TERMINALS, BRIDGES, REPORT)

log = logging.getLogger(__name__)

_lock = threading.RLock()
_callbacks: list[tuple[int, int, Callable[[], Any]]] = []
_counter = 0
_ran = False
_running = False
_previous: dict[int, Any] = {}
_atexit_installed = False


def register(step: int, fn: Callable[[], Any]) -> Callable[[], None]:
    """Run ``fn()`` at exit in ``step``; returns a function that unregisters it."""
    global _counter, _atexit_installed
    if step not in STEPS:
        raise ValueError(f"unknown shutdown step {step!r}; use one of {STEPS}")
    with _lock:
        _counter += 1
        entry = (step, _counter, fn)
        _callbacks.append(entry)
        if not _atexit_installed:
            atexit.register(run)
            _atexit_installed = True

    def unregister() -> None:
        with _lock:
            if entry in _callbacks:
                _callbacks.remove(entry)

    return unregister


def run() -> None:
    """Run every step once, in order (later calls do nothing)."""
    global _ran, _running
    with _lock:
        if _ran or _running:
            return  # a signal during the exit sequence must not start it again
        _running = True
        todo = sorted(_callbacks, key=lambda e: (e[0], e[1]))
    try:
        for _step, _n, fn in todo:
            try:
                fn()
            except Exception:  # noqa: BLE001 - one failing step must not stop the others
                log.exception("shutdown step %r failed", fn)
    finally:
        with _lock:
            _ran = True
            _running = False


def handle_signals(*signals: int, chain: bool = True) -> list[int]:
    """Run the steps when one of ``signals`` ends the process (SIGTERM and
    SIGHUP skip atexit), then end it as it would have ended without us:
    the previous Python handler is called (``chain``), or the default
    action is taken. A signal that is ignored is left alone, and with
    ``chain=False`` so is one that already has a handler. Main thread only;
    returns the signals now handled here."""
    handled: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        return handled
    for signum in signals:
        try:
            prev = signal.getsignal(signum)
            if prev is _on_signal:
                handled.append(signum)
                continue
            if prev == signal.SIG_IGN or (prev not in (signal.SIG_DFL, None) and not chain):
                continue
            _previous[signum] = prev
            signal.signal(signum, _on_signal)
            handled.append(signum)
        except (ValueError, OSError):
            pass  # a signal this platform or thread cannot handle: leave it as it was
    return handled


def raise_on_signals(*signals: int) -> Callable[[], None]:
    """Make ``signals`` raise ``SystemExit(128 + signum)`` in the main thread,
    so a server's own cleanup (``finally``) runs as for any other exit;
    returns the function that puts the previous handlers back. Main thread
    only (elsewhere nothing changes)."""
    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in signals:
            previous[signum] = signal.getsignal(signum)
            signal.signal(signum, _raise_exit)

    def restore() -> None:
        for signum, prev in previous.items():
            signal.signal(signum, prev if prev is not None else signal.SIG_DFL)
        previous.clear()

    return restore


def _raise_exit(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def _on_signal(signum: int, frame: Any) -> None:
    run()
    prev = _previous.get(signum, signal.SIG_DFL)
    if callable(prev):
        prev(signum, frame)
        return
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


__all__ = [
    "BRIDGES",
    "DETACH",
    "REPORT",
    "STEPS",
    "TERMINALS",
    "VIEWS",
    "handle_signals",
    "raise_on_signals",
    "register",
    "run",
]
