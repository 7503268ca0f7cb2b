"""One Ctrl-C for a running job: when to send SIGINT, and when once more.

The states and why each exists are drawn in docs/internals.md.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from typing import Protocol

from ..core import procs
from ..core.run_state import InterruptState, Phase

# How long an interrupt may be held back while bash forks a pipeline, and how
# often it looks (tests/reliability/test_interrupt_race.py, pipeline cases).
LAUNCH_GRACE_S = 0.03
LAUNCH_POLL_S = 0.002
# How soon an unconfirmed SIGINT is checked, and how early in a job a
# signal may have fallen between fork and exec of its first command.
VERIFY_AFTER_S = 0.1
EARLY_S = 0.05


class _Run(Protocol):
    intr: InterruptState
    saw_begin: bool
    begin_at: float | None


class Interrupter:
    """Sends a terminal's SIGINTs. Holds no lock: the terminal calls it under
    its own, and the reader thread calls ``step`` once ``state.due`` passes."""

    def __init__(self, shell_pid: int, pty_fd: int, poke: Callable[[], None]) -> None:
        self._pid = shell_pid
        self._fd = pty_fd
        self._poke = poke

    def request(self, run: _Run) -> None:
        """``interrupt()`` was called for ``run``."""
        st = run.intr
        st.asked()
        if run.saw_begin or self._foreground_is_command():
            self._send_when_launched(run)
        else:
            # The shell may still be reading the job's line. A SIGINT then
            # makes bash throw away the input it has queued (the job's line),
            # so the command would never run or never be reported. Deliver
            # it when the begin marker proves the line runs (or a command has
            # taken the terminal, if the begin marker cannot arrive).
            self._schedule(st, Phase.AWAIT_BEGIN, VERIFY_AFTER_S)

    def on_begin(self, run: _Run) -> None:
        if run.intr.phase is Phase.AWAIT_BEGIN:
            self._send_when_launched(run)

    def step(self, run: _Run) -> None:
        """The reader's call once ``run.intr.due`` has passed."""
        st = run.intr
        st.due_taken()
        if st.phase is Phase.HOLD:
            launched, checked = self._launched()
            if launched is not False or time.monotonic() >= (st.hold_until or 0.0):
                self._send(run, checked)
            else:
                self._schedule(st, Phase.HOLD, LAUNCH_POLL_S)
        elif st.phase is Phase.AWAIT_BEGIN:
            if self._foreground_is_command():
                self._send_when_launched(run)
            else:
                self._schedule(st, Phase.AWAIT_BEGIN, VERIFY_AFTER_S)
        elif st.phase is Phase.VERIFY:
            st.delivered()  # looked at once more: nothing after this
            try:
                pgrp = os.tcgetpgrp(self._fd)
            except OSError:
                return
            if st.taken:
                return
            if pgrp != st.sent_pgrp or st.early or self._exec_ed_since(st.copies, pgrp):
                _killpg(pgrp)

    # ------------------------------------------------------------------
    def _send_when_launched(self, run: _Run) -> None:
        """SIGINT now if the shell has finished starting its command, else soon.

        While bash is still forking the members of a pipeline (or a member
        has not ``exec``-ed yet), a Ctrl-C can miss one of them (see
        ``procs.LAYER.command_launched``). So the signal is held back, re-checked
        every ``LAUNCH_POLL_S``, for at most ``LAUNCH_GRACE_S``: a shell
        busy with a builtin loop or reading a terminal never waits, and a
        subshell never ``exec``-s; they get the signal then.
        """
        launched, checked = self._launched()
        if launched is not False:
            self._send(run, checked)
            return
        run.intr.launch_held(time.monotonic() + LAUNCH_GRACE_S)
        self._schedule(run.intr, Phase.HOLD, LAUNCH_POLL_S)

    def _send(self, run: _Run, checked: int | None) -> None:
        """SIGINT to the foreground process group, once.

        ``checked``: the group of a fully launched command that had the
        terminal while the shell waited for it. If that group still has it,
        the signal reached every member and nothing is re-sent (a program
        that counts its Ctrl-Cs sees exactly one; pinned by
        tests/contract/test_fidelity.py::test_one_interrupt_is_one_sigint).
        Otherwise the signal may have fallen between bash forking a command
        and handing it the terminal (it then reaches only bash, which lets
        the child run) or between fork and exec (the child still has bash's
        handlers): if the job still runs a moment later, the group of that
        moment gets one more SIGINT when it is another group, when the job
        was only just started (``EARLY_S``), or when a member that was a copy
        of the shell at the send has ``exec``-ed since
        (tests/reliability/test_interrupt_race.py), unless a member of the
        group it went to may have caught it
        (``procs.LAYER.sigint_taken``): then a second one would be a second
        Ctrl-C (tests/reliability/test_one_ctrl_c.py).
        """
        st = run.intr
        try:
            pgrp = os.tcgetpgrp(self._fd)
        except OSError:
            pgrp = self._pid
        if pgrp == checked:
            _killpg(pgrp)
            st.delivered()
            return
        # Looked at before the kill: a copy of the shell then runs bash's
        # handlers, and if it ``exec``-s after taking the signal, the signal
        # is lost (the command it became never saw it).
        copies = tuple(procs.LAYER.shell_copies(self._pid, pgrp))
        _killpg(pgrp)
        now = time.monotonic()
        # Looked at after the kill: a member seen then as a copy of the shell,
        # or without a handler, had not caught it when it was sent.
        taken = procs.LAYER.sigint_taken(self._pid, pgrp, copies)
        st.sent(pgrp, copies, taken, early=not run.saw_begin or now - (run.begin_at or now) < EARLY_S)
        self._schedule(st, Phase.VERIFY, VERIFY_AFTER_S)

    def _exec_ed_since(self, copies: tuple[int, ...], pgrp: int) -> bool:
        """A member that was a copy of the shell when the SIGINT was sent is
        alive and runs another program now: it took the signal in bash's
        handler and then ``exec``-ed, so the program never got it (``sleep``
        in ``echo x; sleep 30`` pressed while bash forks it, on a loaded
        machine past the launch hold: tests/reliability/test_interrupt_race.py)."""
        if not copies:
            return False
        still = set(procs.LAYER.shell_copies(self._pid, pgrp))
        for pid in copies:
            if pid in still or not procs.LAYER.alive(pid):
                continue
            try:
                if os.getpgid(pid) == pgrp:
                    return True
            except OSError:
                continue  # gone meanwhile
        return False

    def _schedule(self, st: InterruptState, phase: Phase, after: float) -> None:
        st.scheduled(phase, time.monotonic() + after)
        self._poke()

    def _launched(self) -> tuple[bool | None, int | None]:
        """(has the shell finished starting its command, the foreground
        group that was checked); the group is None unless it was a command's
        (not the shell's own), which a launched check can then vouch for."""
        try:
            pgrp = os.tcgetpgrp(self._fd)
        except OSError:
            return None, None
        launched = procs.LAYER.command_launched(self._pid, pgrp)
        try:
            own = os.getpgid(self._pid)
        except OSError:
            own = pgrp
        return launched, (pgrp if launched is True and pgrp != own else None)

    def _foreground_is_command(self) -> bool:
        try:
            return os.tcgetpgrp(self._fd) != os.getpgid(self._pid)
        except OSError:
            return False


def _killpg(pgrp: int) -> None:
    """SIGINT to ``pgrp``, never to our own group: a terminal whose session has
    no foreground group (its shell just died) reports 0, and ``killpg(0)``
    would hit the caller (pinned by tests/terminal/test_interrupt.py::test_no_sigint_to_our_own_group)."""
    if pgrp <= 1 or pgrp == os.getpgrp():
        return
    try:
        os.killpg(pgrp, signal.SIGINT)
    except (ProcessLookupError, PermissionError):
        pass  # the group ended (or is not ours) before the signal: nothing to interrupt
