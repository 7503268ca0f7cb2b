"""Per-job bookkeeping of a running job that its terminal's parts share:
interrupts (``InterruptState``) and quiet checks (``QuietState``). The
logic that uses them is the local terminal's ``interrupts`` and ``quiet``;
a remote terminal uses the fields it can fill."""

from __future__ import annotations

import time
from dataclasses import dataclass
from enum import Enum

QUIET_S = 0.05
"""Quiet spell after a running job's last output before the check."""
QUIET_RETRIES = 4
"""Re-checks (doubling the delay) while the shell is busy but not reading."""
# After the prompt hint, re-check this often, this many times, before the
# usual backoff (bash prints the hint just before it reads its input).
HINT_POLL_S = 0.002
HINT_POLLS = 25
UNSENT_SIGINT_NOTE = (
    "the shell abandoned the job's line before its end: a SIGINT the engine did not send "
    "(a command in it died of SIGINT, or signalled the shell), or a command that turned "
    "line editing off (`set +o emacs`) in the middle of it"
)

class Phase(Enum):
    IDLE = "idle"  # no interrupt asked for
    AWAIT_BEGIN = "await_begin"  # asked while bash may still read the job's line
    HOLD = "hold"  # waiting (briefly) until the command is fully launched
    VERIFY = "verify"  # sent without proof it reached the command: look again once
    SENT = "sent"  # delivered; nothing more to do


@dataclass
class InterruptState:
    """Interrupt bookkeeping of one running job."""

    requested: bool = False
    phase: Phase = Phase.IDLE
    due: float | None = None  # when the reader thread should call ``step``
    hold_until: float | None = None
    sent_pgrp: int | None = None
    early: bool = False
    taken: bool = False  # a member of the group it went to may have caught it
    copies: tuple[int, ...] = ()  # members that were copies of the shell when it was sent
    pending: int = 0  # remote: Ctrl-Cs held for the launch (typed once ``due`` passes)


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
