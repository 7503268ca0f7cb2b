"""The input side of a local terminal: typing into a running job, echo for it, and
the quiet check that notes a job waiting for typed input (docs/interactive.md)."""

from __future__ import annotations

import select
import time
from typing import TYPE_CHECKING

from .. import jobs
from ..errors import NotRunning, SecretInput
from . import interaction, procs, quiet, shell
from .core.jobview import Running
from .core.markers import new_nonce
from .result import DEAD, SHELL_EXITED
from .scratch import close_fd

if TYPE_CHECKING:
    from .terminal import Terminal


def send(
    term: Terminal,
    text: str | None,
    *,
    key: str | None,
    enter: bool,
    source: str,
    caller: str | None,
    secret: bool,
    allow_secret: bool,
) -> tuple[jobs.Job, int, str]:
    """:meth:`Terminal.send`: type into the running job's terminal."""
    data = interaction.encode(text, enter=enter, key=key)
    with term._lock:
        run = term._running
        if run is None or term._dead:
            raise NotRunning(
                f"session {term.session_id!r} runs no job: typed text would be a command "
                "of the shell itself; start the program with exec first",
                session_id=term.session_id,
            )
        hidden = run.echo_on and interaction.hidden_entry(term._proc.fd)
        if key is None and hidden and not allow_secret:
            raise SecretInput(
                f"job {run.job.id} asks for hidden entry (a password or passphrase): a person "
                "must answer it (%bash_send --secret, or the panel's password box); an agent "
                "may only send keys such as ctrl-c",
                session_id=term.session_id,
                job_id=run.job.id,
            )
        record = interaction.InputRecord.make(
            source, text, secret=key is None and (secret or hidden), key=key, caller=caller, enter=enter
        )
        run.inputs.append(record)
        run.awaiting = None
        run.quiet.reader = None
        if key == "ctrl-c":
            run.intr.requested = True  # the line it aborts was ours to abort
        start_line, prompt = term._ring.next_line, term._ring.partial
        term._typed = True
        # Look again once the program has had a moment with the input.
        run.quiet.at = time.monotonic() + quiet.QUIET_S
        run.quiet.tries = 0
        job = run.job
    with term._send_lock:  # outside the engine lock: a full input queue blocks the write
        term._write_bytes(data)
    term._poke_reader()
    term._emit({"type": "input", "session_id": term.session_id, "job_id": job.id, "input": record.to_dict()})
    return job, start_line, prompt


def echo_for_job(term: Terminal, run: Running) -> None:
    """Echo on for the job, then open its gate (see interaction.Gate):
    the job line was typed with echo off, and the kernel is made to take
    it first, so it is never echoed."""
    if term._gate is None:
        return
    fd = term._tty_fd if term._tty_fd is not None else interaction.open_tty(term._tty)
    try:
        interaction.line_taken(fd)
        interaction.set_echo(term._proc.fd, True)
    finally:
        if fd is not None and fd != term._tty_fd:
            close_fd(fd)
    run.echo_on = True
    term._gate.release()


def before_typing(term: Terminal) -> None:
    """Before the engine types a line: input sent to the last job that
    nobody read would otherwise run as (or corrupt) the shell's next line."""
    if term._typed:
        term._typed = False
        interaction.discard_typed_input(term._tty)


def after_job(term: Terminal, run: Running) -> None:
    """The job's end marker came: echo off again, and input nobody read dropped."""
    interaction.set_echo(term._proc.fd, False)
    if run.tty:
        # The shell waits at the end gate: drop input nobody read, then let it go on.
        term._typed = False
        interaction.discard_typed_input(term._tty)
        if term._gate is not None:
            term._gate.release(end=True)
    elif term._typed:
        interaction.discard_typed_input(term._tty)


def note_awaiting(term: Terminal, run: Running) -> None:
    """The job waits for typed input: say what for (in its snapshots and
    the terminal's row), and wake waits that end on it."""
    assert run.quiet.reader is not None
    pid, name = run.quiet.reader
    run.awaiting = interaction.AwaitingInput(
        pid=pid,
        name=name,
        prompt=term._ring.partial[-interaction.MAX_PROMPT_CHARS :],
        # Echo off means the program asked for it only once the engine
        # switched echo on for the job (interaction.Gate).
        secret=run.echo_on and interaction.hidden_entry(term._proc.fd),
    )
    term._output_seq += 1
    term._out_cond.notify_all()


def _unread_output(fd: int) -> bool:
    """Has the PTY output the reader has not taken yet? (A slow look at the
    process, e.g. ``ps`` on the portable layer, lets a prompt arrive meanwhile;
    pinned by tests/terminal/test_terminal_input.py under DSH_MAGICS_PROCFS=0.)"""
    try:
        return bool(select.select([fd], [], [], 0)[0])
    except (OSError, ValueError):
        return False


def quiet_check(term: Terminal) -> None:
    """A running job has been quiet for a moment (see ``quiet.check``)."""
    with term._lock:
        run = term._running
        if run is None or term._dead or term._closed:
            return
        term._quiet_checks += 1
        pid = term._proc.pid
        verdict = quiet.check(
            run.quiet, pid, term._proc.fd, term._identity, run.sync_nonce is not None, tty=term._tty
        )
        if verdict is quiet.Verdict.LATER:
            run.quiet.again_later()
        elif verdict is quiet.Verdict.ABORTED:
            # The shell waits for a line although the job never reported:
            # its line was aborted. A probe (no signal) confirms it.
            run.quiet.unsent_sigint = True
            run.sync_nonce = new_nonce()
            before_typing(term)
            shell.quiet_tty(term._proc.fd)
            term._type(shell.sync_line(run.sync_nonce))
        elif verdict in (quiet.Verdict.WAITING, quiet.Verdict.STILL_WAITING) and run.quiet.reader:
            if _unread_output(term._proc.fd):
                # The prompt it printed before blocking is not read yet; its
                # arrival would clear the note at once. Decide after it.
                verdict = quiet.Verdict.LATER
                run.quiet.reader = None
                run.quiet.again_later()
            elif run.awaiting is None:
                note_awaiting(term, run)
        elif verdict is quiet.Verdict.REPLACED:
            term._finish(run, SHELL_EXITED, None, term._cwd, note=quiet.REPLACED_NOTE)
            term._dead = True
            term._out_cond.notify_all()
    if verdict is quiet.Verdict.WAITING:
        term._emit({"type": "output", "session_id": term.session_id})  # views show the note
    elif verdict is quiet.Verdict.REPLACED:
        # Kill it and whatever it started, then report; the pidfd (or the
        # read loop's EOF) collects the exit status afterwards.
        procs.kill_tree(pid, term._token)
        term._deliver()
        term._ready.set()
        term._emit({"type": "terminal", "session_id": term.session_id, "status": DEAD})
