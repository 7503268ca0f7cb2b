"""The quiet check: a running job went quiet; did bash abandon its line, was
the shell replaced, or does the job wait for someone to type?
"""

from __future__ import annotations

import os
from enum import Enum

from ..core import procs, tty_state
from ..core.run_state import HINT_POLLS, QUIET_RETRIES, QUIET_S, UNSENT_SIGINT_NOTE, QuietState  # noqa: F401 - used as quiet.*

# After an interrupt: covers a shell that gives no hint (replaced by a
# program that neither exits nor prompts).
AFTER_INTERRUPT_S = 0.25
REPLACED_NOTE = (
    "the shell was replaced by `exec` of another program on the terminal; "
    "it was killed, and the next command starts a fresh shell"
)


class Verdict(Enum):
    REPLACED = "replaced"  # the shell's pid runs another program now
    ABORTED = "aborted"  # bash reads its own input: the job's line was abandoned
    WAITING = "waiting"  # a process of the job reads the terminal (first seen)
    STILL_WAITING = "still_waiting"  # the same, seen before
    LATER = "later"  # busy, or nothing to tell yet: look again (or give up)
    NOTHING = "nothing"  # a probe is already on its way, or the terminal is gone


def check(
    state: QuietState,
    shell_pid: int,
    pty_fd: int,
    identity: tuple[str, bytes] | None,
    probe_pending: bool = False,
    tty: str | None = None,
) -> Verdict:
    """Look at the shell from outside (a few /proc reads; only after output
    or an interrupt, so an idle terminal and a quick job pay nothing).

    A command that ``exec``-s another program on the terminal keeps the pid,
    so the shell's executable and argv are compared with ``identity``. A job
    whose command has the terminal is left alone unless one of its processes
    reads the terminal (a password prompt). When the shell itself sits in a
    read of its own top-level input (``procs.LAYER.input_state``), the job's line
    was abandoned (a SIGINT the engine did not send); a read of the terminal
    through another file (``read x </dev/tty``) is a job waiting for input,
    never fed a probe (tests/terminal/test_quiet_check.py).
    """
    state.looking()
    if identity is not None:
        now_is = procs.LAYER.identity(shell_pid)
        if now_is is not None and now_is != identity:
            return Verdict.REPLACED
    if probe_pending:
        return Verdict.NOTHING
    try:
        fg = os.tcgetpgrp(pty_fd)
    except OSError:
        return Verdict.NOTHING
    if fg != shell_pid:
        # read, select, poll or epoll on the terminal only (core.tty_state.detect)
        reader = tty_state.foreground_reader(shell_pid, pty_fd, tty)
        return Verdict.LATER if reader is None else _waiting(state, reader)
    verdict = procs.LAYER.input_state(shell_pid)
    state.judged(verdict)
    if verdict == procs.BUSY_OR_UNKNOWN:
        return Verdict.LATER
    if verdict != procs.TOP_LEVEL:
        return _waiting(state, shell_pid)
    return Verdict.ABORTED


def _waiting(state: QuietState, reader: int) -> Verdict:
    first = state.reader_seen(reader, procs.LAYER.command_name(reader))
    return Verdict.WAITING if first else Verdict.STILL_WAITING
