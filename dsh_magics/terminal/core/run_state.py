"""Per-job bookkeeping of a running job that its terminal's parts share:
interrupts (``InterruptState``) and quiet checks (``QuietState``). The
logic that uses them is the local terminal's ``interrupts`` and ``quiet``
and the remote terminal's keyboard and prompt watch. They read the fields
and change them only through the methods here, named for what happened
(tests/test_structure.py::test_no_transport_assigns_a_field_of_a_jobs_run_state)."""

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

    # What happens to an interrupt. The transports call these (under the
    # terminal's lock) and assign no field (tests/test_structure.py checks).
    def asked(self) -> None:
        """An interrupt was asked for (the line it aborts is ours to abort)."""
        self.requested = True

    def press_held(self) -> None:
        """Remote: a Ctrl-C was asked for and is held until it may go."""
        self.requested = True
        self.pending += 1

    def begin_awaited(self, until: float) -> None:
        """Remote: the held presses wait for the begin marker, at most
        ``until`` (monotonic; a wait already running keeps its deadline)."""
        if self.due is None:
            self.due = until

    def begin_came(self, now: float) -> None:
        """Remote: the begin marker came; held presses go through their
        launch check at once."""
        if self.pending:
            self.due = now

    def launch_checked(self) -> None:
        """Remote: a launch check is on its way; it types every press held."""
        self.phase = Phase.HOLD

    def presses_taken(self) -> int:
        """Remote: the held presses are being typed: how many."""
        count, self.pending = self.pending, 0
        self.phase, self.due = Phase.IDLE, None
        return count

    def due_taken(self) -> None:
        """The reader thread acts on ``due``, which has passed."""
        self.due = None

    def scheduled(self, phase: Phase, at: float) -> None:
        """Local: in ``phase``, the reader thread steps again at ``at``."""
        self.phase, self.due = phase, at

    def launch_held(self, until: float) -> None:
        """Local: the SIGINT waits for the command's launch, at most until ``until``."""
        self.hold_until = until

    def sent(self, pgrp: int, copies: tuple[int, ...], taken: bool, early: bool) -> None:
        """Local: a SIGINT went to ``pgrp``, not yet known to have reached
        the command (``copies``: members that were copies of the shell then;
        ``taken``: a member may have caught it; ``early``: the job had only
        just begun). The caller schedules the look that verifies it."""
        self.sent_pgrp, self.copies, self.taken, self.early = pgrp, copies, taken, early

    def delivered(self) -> None:
        """The SIGINT reached the command, or was looked at once more: done."""
        self.phase, self.due = Phase.SENT, None


@dataclass
class QuietState:
    """Quiet-check bookkeeping of one running job."""

    at: float | None = None  # when to check next
    fast: int = 0  # quick re-checks left after a prompt hint
    tries: int = 0  # slow re-checks used
    verdict: str | None = None  # what ``procs.LAYER.input_state`` said last (tests look)
    reader: tuple[int, str] | None = None  # (pid, name) reading the terminal
    unsent_sigint: bool = False  # the line ended by a SIGINT the engine did not send

    # What happens to the quiet check. The transports call these (under the
    # terminal's lock) and assign no field (tests/test_structure.py checks).
    def look_in(self, seconds: float) -> float:
        """A quiet spell begins: look in ``seconds`` (returns when)."""
        self.at = time.monotonic() + seconds
        return self.at

    def looking(self) -> None:
        """A look starts now: none is due until it says when."""
        self.at = None

    def retried(self, delays: tuple[float, ...]) -> bool:
        """A look saw nobody reading: look again after the next of
        ``delays`` (one per retry); False once they are used up."""
        if self.tries >= len(delays):
            return False
        self.at = time.monotonic() + delays[self.tries]
        self.tries += 1
        return True

    def judged(self, verdict: str) -> None:
        """What the process layer said of the shell's input (tests look)."""
        self.verdict = verdict

    def reader_seen(self, pid: int, name: str) -> bool:
        """``name`` (``pid``) reads the terminal; True when nobody was seen before."""
        first = self.reader is None
        self.reader = (pid, name)
        return first

    def reader_unsure(self) -> None:
        """The reader seen may be about to get its input: nobody is known to
        read; look again later."""
        self.reader = None
        self.again_later()

    def line_abandoned(self) -> None:
        """The shell abandoned the job's line without a SIGINT of the engine's."""
        self.unsent_sigint = True

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
