"""The quiet check: a running job went quiet; did bash abandon its line, was
the shell replaced, or does the job wait for someone to type?
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from enum import Enum

from . import interaction, procs

QUIET_S = 0.05
"""Quiet spell after a running job's last output before the check."""
QUIET_RETRIES = 4
"""Re-checks (doubling the delay) while the shell is busy but not reading."""
# After the prompt hint, re-check this often, this many times, before the
# usual backoff (bash prints the hint just before it reads its input).
HINT_POLL_S = 0.002
HINT_POLLS = 25
# After an interrupt: covers a shell that gives no hint (replaced by a
# program that neither exits nor prompts).
AFTER_INTERRUPT_S = 0.25
UNSENT_SIGINT_NOTE = (
    "the shell aborted the job's line after a SIGINT the engine did not send "
    "(a command in it died of SIGINT, or signalled the shell)"
)
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


@dataclass
class QuietState:
    """Quiet-check bookkeeping of one running job."""

    at: float | None = None  # when to check next
    fast: int = 0  # quick re-checks left after a prompt hint
    tries: int = 0  # slow re-checks used
    verdict: str | None = None  # what ``procs.LAYER.input_state`` said last (tests look)
    reader: tuple[int, str] | None = None  # (pid, name) reading the terminal
    unsent_sigint: bool = False  # the line ended by a SIGINT the engine did not send

    def after_output(self, hint: bool) -> None:
        """Output arrived (``hint``: the prompt's hint was in it)."""
        self.at = time.monotonic() + (0.0 if hint else QUIET_S)
        if hint:
            self.fast = HINT_POLLS
        self.tries = 0
        self.reader = None

    def again_later(self) -> None:
        if self.fast:
            # After a prompt hint bash is a few instructions away from
            # reading its input: look again almost at once.
            self.fast -= 1
            self.at = time.monotonic() + HINT_POLL_S
        elif self.tries < QUIET_RETRIES:
            self.tries += 1
            self.at = time.monotonic() + QUIET_S * 2**self.tries

    def read_note(self, secret: bool = False) -> str | None:
        """For a running job's snapshot: it waits for typed input."""
        if self.reader is None:
            return None
        pid, name = self.reader
        if secret:
            return (
                f"waiting for input on the terminal: {name} (pid {pid}) asks for hidden entry "
                "(a password); a person must answer it (%bash_send --secret, the panel), or "
                "interrupt the job"
            )
        return (
            f"waiting for input on the terminal: {name} (pid {pid}) is reading it; answer with "
            "send (%bash_send, bash_send), or interrupt the job"
        )


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
    state.at = None
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
        # read, select, poll or epoll on the terminal only (interaction.detect)
        reader = interaction.foreground_reader(shell_pid, pty_fd, tty)
        return Verdict.LATER if reader is None else _waiting(state, reader)
    verdict = procs.LAYER.input_state(shell_pid)
    state.verdict = verdict
    if verdict == procs.BUSY_OR_UNKNOWN:
        return Verdict.LATER
    if verdict != procs.TOP_LEVEL:
        return _waiting(state, shell_pid)
    return Verdict.ABORTED


def _waiting(state: QuietState, reader: int) -> Verdict:
    first = state.reader is None
    state.reader = (reader, procs.LAYER.command_name(reader))
    return Verdict.WAITING if first else Verdict.STILL_WAITING
