"""A running job's engine-side state, and the results and reads assembled
from it and the terminal's line ring."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ... import jobs
from .. import interaction
from ..result import ReadResult, Result
from .ring import Ring
from .run_state import InterruptState, QuietState


@dataclass
class Running:
    """The job currently in a terminal's shell."""

    job: jobs.Job
    command: str
    nonce: str
    end_nonce: str
    started_at: float
    start_line: int
    fresh_shell: bool
    saw_begin: bool = False
    begin_at: float | None = None
    end_line: int | None = None
    ended_partial: bool = False
    sync_nonce: str | None = None
    intr: InterruptState = field(default_factory=InterruptState)
    quiet: QuietState = field(default_factory=QuietState)
    tty: bool = False  # the job reads the terminal (``exec(..., tty=True)``)
    echo_on: bool = False  # the engine switched echo on for it (local/gate.py: Gate)
    inputs: list[interaction.InputRecord] = field(default_factory=list)
    awaiting: interaction.AwaitingInput | None = None  # it waits for typed input now
    debug_trap: str | None = None  # remote: the user's DEBUG trap, as its end listed it

    # What happened to the job, as the transports see it. They call these
    # (under the terminal's lock, as for every field here) and never assign
    # a field themselves (tests/test_structure.py checks).
    def prompt_seen(self, *, pid: int, name: str, prompt: str, secret: bool) -> None:
        """It waits for typed input: ``name`` (``pid``) reads the terminal
        after printing ``prompt``; ``secret``: with echo off (a password)."""
        self.quiet.reader = (pid, name)
        self.awaiting = interaction.AwaitingInput(pid=pid, name=name, prompt=prompt, secret=secret)

    def prompt_left(self) -> None:
        """What it waited for was answered or is being left (input sent,
        output came, a Ctrl-C is on its way): it no longer awaits input,
        and nobody is known to read the terminal."""
        self.awaiting = None
        self.quiet.reader = None

    def answered(self, look_in: float | None) -> None:
        """As :meth:`prompt_left`, and the quiet check starts over: no
        retries used, the next look in ``look_in`` s (None: none)."""
        self.prompt_left()
        self.quiet.tries = 0
        if look_in is not None:
            self.quiet.at = time.monotonic() + look_in

    def output_seen(self, hint: bool) -> None:
        """A local job printed (``hint``: the prompt's hint was in it)."""
        self.quiet.after_output(hint)
        self.awaiting = None

    def echo_switched_on(self) -> None:
        """The engine switched the terminal's echo on for it (local/gate.py)."""
        self.echo_on = True

    def debug_trap_listed(self, text: str | None) -> None:
        """Remote: its end listed the user's DEBUG trap (None: there is none)."""
        self.debug_trap = text


def running_result(session_id: str, run: Running, ring: Ring, cwd: str | None) -> Result:
    """The job's result so far (its output includes an unfinished last line)."""
    lines, dropped = ring.get(run.start_line)
    text = "\n".join(lines)
    if ring.partial:
        text = text + ("\n" if lines else "") + ring.partial
    elif lines:
        text += "\n"
    return Result(
        job_id=run.job.id,
        session_id=session_id,
        command=run.command,
        status=run.job.status,
        exit_code=None,
        output=text,
        timed_out=True,
        started_at=run.started_at,
        ended_at=None,
        cwd=cwd,
        dropped_lines=dropped,
        fresh_shell=run.fresh_shell,
        start_line=run.start_line,
        styles=ring.style_rows(run.start_line, partial=bool(ring.partial)),
        note=run.quiet.read_note(secret=bool(run.awaiting and run.awaiting.secret)),
        awaiting_input=run.awaiting.to_dict() if run.awaiting else None,
        inputs=[r.to_dict() for r in run.inputs],
        source=run.job.source,
    )


def final_result(
    session_id: str,
    run: Running,
    ring: Ring,
    status: str,
    code: int | None,
    cwd: str | None,
    signal_no: int | None,
    note: str | None,
) -> Result:
    """The settled job's result: its lines from its begin to its end marker."""
    if run.end_line is None:
        run.ended_partial = ring.finish_partial()
        run.end_line = ring.next_line
    lines, dropped = ring.get(run.start_line, run.end_line)
    output = "\n".join(lines)
    if lines and not run.ended_partial:
        output += "\n"
    return Result(
        job_id=run.job.id,
        session_id=session_id,
        command=run.command,
        status=status,
        exit_code=code,
        output=output,
        timed_out=False,
        started_at=run.started_at,
        ended_at=time.time(),
        cwd=cwd,
        dropped_lines=dropped,
        fresh_shell=run.fresh_shell,
        signal=signal_no,
        note=note,
        start_line=run.start_line,
        styles=ring.style_rows(run.start_line, run.end_line),
        inputs=[r.to_dict() for r in run.inputs],
        source=run.job.source,
    )


def orphan_result(session_id: str, job: jobs.Job, cwd: str | None) -> Result:
    """A job this terminal no longer runs and that never settled here."""
    return Result(
        job_id=job.id,
        session_id=session_id,
        command=job.label,
        status=job.status,
        exit_code=None,
        output="",
        timed_out=True,
        started_at=job.created_at,
        ended_at=None,
        cwd=cwd,
        source=job.source,
    )


def read_result(session_id: str, ring: Ring, since: int | None, last: int | None, job_id: str | None) -> ReadResult:
    """The retained output from line ``since`` (or the oldest), its last
    ``last`` lines (both already checked by the entry point)."""
    start = ring.first_line if since is None else since
    lines, dropped = ring.get(start)
    if last is not None and last < len(lines):
        lines = lines[len(lines) - last :] if last else []
        start = ring.next_line - len(lines)
        dropped = 0 if since is None else dropped
    first = max(start, ring.first_line) if lines else ring.next_line
    return ReadResult(
        session_id=session_id,
        lines=lines,
        first_line=first,
        next_line=ring.next_line,
        dropped=dropped,
        partial=ring.partial,
        job_id=job_id,
        styles=ring.style_rows(first, partial=bool(ring.partial)),
    )
