"""The engine's process layer, picked once (``proclayer``: ``/proc`` or the
portable one), and what it builds on it: killing a shell's whole tree and
collecting its exit status."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterable
from typing import Any

from .proclayer import (
    BUSY_OR_UNKNOWN,
    INPUT_FD,
    TOP_LEVEL,
    TTY_READ_ELSEWHERE,
    ProcessLayer,
    implementation,
)

__all__ = ["BUSY_OR_UNKNOWN", "INPUT_FD", "LAYER", "TOP_LEVEL", "TTY_READ_ELSEWHERE", "alive", "kill_tree", "reap"]

#: The one process layer every question goes to.
LAYER: ProcessLayer = implementation()


def alive(pid: int) -> bool:
    """The process exists and is not a zombie (the host asks this too)."""
    return LAYER.alive(pid)


def descendants(root: int) -> list[int]:
    """Every live descendant of ``root`` (the host's orphan sweep asks this too)."""
    return LAYER.descendants(root)


def _signal_all(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def kill_tree(root: int | None, token: str | None = None, grace: float = 0.5) -> list[int]:
    """SIGHUP the shell, its descendants and tagged processes; SIGKILL whatever
    is still alive after ``grace`` seconds. Returns the pids that were targeted.

    Killing the shell's pid is not enough: background jobs live in their own
    process groups, and a child that called ``setsid`` has left the session.
    So the whole tree is collected before anything is killed (killing first
    would reparent children to init and lose them), plus any process still
    carrying the terminal's token (daemons that double-forked away). SIGHUP
    first, as a closing terminal sends it. Our own process is never targeted.
    """
    me = os.getpid()
    targets: list[int] = []
    if root is not None and LAYER.alive(root):
        targets.append(root)
    if root is not None:
        targets.extend(LAYER.descendants(root))
    if token:
        targets.extend(p for p in LAYER.tagged(token) if p not in targets)
    targets = [p for p in targets if p != me]
    if not targets:
        return []
    # Stopped processes ignore SIGHUP until continued.
    _signal_all(targets, signal.SIGHUP)
    _signal_all(targets, signal.SIGCONT)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not any(LAYER.alive(p) for p in targets):
            return targets
        time.sleep(0.01)
    _signal_all([p for p in targets if LAYER.alive(p)], signal.SIGKILL)
    return targets


def reap(proc: Any, token: str | None, timeout: float) -> tuple[int, int | None]:
    """Wait for a ``PtyProcess`` to exit (killing its tree if it will not)
    and collect its status, so no zombie is left: (exit code, signal)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            running = proc.isalive()
        except Exception:  # noqa: BLE001
            running = False
        if not running:
            break
        if time.monotonic() >= deadline:
            kill_tree(proc.pid, token, grace=0.2)
            deadline = time.monotonic() + 1.0
        time.sleep(0.005)
    sig = getattr(proc, "signalstatus", None)
    if sig is not None:
        return 128 + sig, sig
    status = getattr(proc, "exitstatus", None)
    return (status if status is not None else -1), None

