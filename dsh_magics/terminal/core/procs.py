"""The engine's process layer, picked once (``proclayer``: ``/proc`` or the
portable one), and what it builds on it: killing a shell's whole tree and
collecting its exit status."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterable
from typing import Any

from ptyprocess import PtyProcessError  # type: ignore[import-untyped]

from . import fdwait
from .proclayer import (
    BUSY_OR_UNKNOWN,
    INPUT_FD,
    TOKEN_VAR,
    TOP_LEVEL,
    TTY_READ_ELSEWHERE,
    ProcessLayer,
    implementation,
)

__all__ = ["BUSY_OR_UNKNOWN", "INPUT_FD", "LAYER", "TOKEN_VAR", "TOP_LEVEL", "TTY_READ_ELSEWHERE", "alive", "kill_tree", "exited_within", "reap"]

#: The one process layer every question goes to.
LAYER: ProcessLayer = implementation()


def alive(pid: int) -> bool:
    """The process exists and is not a zombie (the host asks this too)."""
    return LAYER.alive(pid)


def exited_within(pid: int, timeout: float) -> bool:
    """Wait up to ``timeout`` for ``pid`` to exit (a zombie counts as
    gone): on its pidfd where there is one, else by looking every 20 ms.
    True once it is gone."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    except (AttributeError, OSError):  # (no pidfd here: a kernel before 5.3, or no os.pidfd_open at all)
        pidfd = None
    try:
        if pidfd is not None:
            ready = fdwait.readable([pidfd], timeout)
            return bool(ready) or not alive(pid)
        deadline = time.monotonic() + timeout
        while alive(pid):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
        return True
    finally:
        if pidfd is not None:
            os.close(pidfd)


def descendants(root: int) -> list[int]:
    """Every live descendant of ``root`` (the host's orphan sweep asks this too)."""
    return LAYER.descendants(root)


#: How long a hung-up shell gets to end its own tree (its profile's EXIT
#: traps, the jobs it passes SIGHUP to) before the rest is hung up too.
HANGUP_WAIT_S = 1.5
#: Between two looks at whether the tree is gone: the first, and the most.
_FIRST_POLL_S, _POLL_S = 0.001, 0.01


def _signal_all(pids: Iterable[int], *sigs: int) -> None:
    for pid in pids:
        for sig in sigs:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                break


def _session(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None


class _Tree:
    """The processes a kill is after, looked up afresh whenever asked: the
    shell, its descendants while it lives, anything carrying its token, and
    what the last look found that still lives (a job of an exited shell that
    cleared its environment is in none of the others). A process once seen
    gone is dropped, so a reused pid is not picked up. Never our own
    process; ``root`` may be it, for its descendants."""

    def __init__(self, root: int | None, token: str | None) -> None:
        self.me = os.getpid()
        self.root = root
        self.shell = root if root != self.me else None
        self.token = token
        self.known: list[int] = []

    def collect(self, tagged: bool = True) -> list[int]:
        found = [p for p in self.known if LAYER.alive(p)]
        if self.shell is not None and self.shell not in found and LAYER.alive(self.shell):
            found.append(self.shell)
        # Once the shell is gone its children belong to someone else.
        if self.root is not None and (self.shell is None or self.shell in found):
            found.extend(p for p in LAYER.descendants(self.root) if p not in found)
        if tagged and self.token:
            found.extend(p for p in LAYER.tagged(self.token) if p not in found)
        self.known = [p for p in found if p != self.me]
        return self.known

    def wait_gone(self, timeout: float, session: int | None = None) -> list[int]:
        """Wait until a fresh look finds none of the processes waited for
        (all, or those of ``session``), or ``timeout`` passes; return what
        the last look found. In between only the processes already known
        are checked, which is cheap; the fresh look, which also finds new
        forks such as an EXIT trap's ``rm``, comes once they are gone.
        What was known before may come from a look without the token: a
        shell that exited between ``kill_tree``'s look and that one left
        its jobs to init and none of them in its tree, so "nothing to wait
        for" is only believed after a fresh look (a ``nohup`` child outlived
        a kernel restart: tests/reliability/test_exit_leftovers.py)."""
        deadline = time.monotonic() + timeout
        left, fresh = self.known, False
        pause = _FIRST_POLL_S  # an idle shell is gone within a few ms
        while True:
            waited = [p for p in left if session is None or _session(p) == session]
            if not waited:
                if fresh:
                    return left
                left, fresh = self.collect(), True
                continue
            if time.monotonic() >= deadline:
                return self.collect()
            time.sleep(pause)
            pause = min(pause * 2, _POLL_S)
            if not any(LAYER.alive(p) for p in waited):
                left, fresh = self.collect(), True


def kill_tree(root: int | None, token: str | None = None, grace: float = 0.5) -> None:
    """End a shell and everything it started, the way a closing terminal
    does first: (a) SIGHUP (and SIGCONT) to the shell alone, which passes
    it to its jobs and exits, and up to ``HANGUP_WAIT_S`` until nothing of
    its session is left; (b) SIGHUP and SIGCONT to whatever is left,
    ``grace`` seconds; (c) SIGKILL to the rest. Each step looks again.

    Hanging up the shell alone first lets a profile that holds something
    (pyenv's rehash lock) release it in its EXIT trap: hung up all at once,
    the shell's forwarded SIGHUP killed the trap's own ``rm``
    (tests/terminal/test_shell_setup.py::
    test_a_shell_ended_during_start_up_is_hung_up_before_it_is_killed).
    Step (a) waits only for the shell's session (its jobs): a daemon that
    called ``setsid`` is not reached by that hangup and waits for (b). The
    tree, not the shell's pid alone: background jobs live in their own
    process groups, and a daemon that double-forked away still carries the
    terminal's token. With no ``root``, or our own pid as ``root`` (its
    descendants), step (a) is skipped. Stopped processes ignore SIGHUP
    until continued, hence SIGCONT. Our own process is never targeted.
    """
    tree = _Tree(root, token)
    if tree.shell is not None and LAYER.alive(tree.shell):
        # Its tree as it stands (its exit hands the children to init), then
        # the shell alone; tagged processes are looked for once it is gone.
        tree.collect(tagged=False)
        _signal_all([tree.shell], signal.SIGHUP, signal.SIGCONT)
        left = tree.wait_gone(HANGUP_WAIT_S, session=tree.shell)
    else:
        left = tree.collect()
    if left:
        _signal_all(left, signal.SIGHUP, signal.SIGCONT)
        left = tree.wait_gone(grace)
    if left:
        _signal_all(left, signal.SIGKILL)


def reap(proc: Any, token: str | None, timeout: float) -> tuple[int, int | None]:
    """Wait for a ``PtyProcess`` to exit (killing its tree if it will not)
    and collect its status, so no zombie is left: (exit code, signal)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            running = proc.isalive()
        except (OSError, PtyProcessError):  # already collected elsewhere: nothing left to wait for
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

