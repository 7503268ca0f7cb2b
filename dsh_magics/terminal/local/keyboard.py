"""The input side of a local terminal: typing into a running job, echo for it, and
the quiet check that notes a job waiting for typed input (docs/interactive.md)."""

from __future__ import annotations

import fcntl
import struct
import termios
import time

from ... import jobs
from .. import interaction
from ..core import fdwait, procs, tty_state
from ..core.input_record import Typed
from ..core.jobcore import JobCore
from ..core.jobview import Running
from ..result import DEAD
from . import quiet, shell
from .local_shell import LocalShell
from .scratch import close_fd


def send(core: JobCore, transport: LocalShell, typing: interaction.Typing) -> tuple[jobs.Job, int, str]:
    """:meth:`Terminal.send`: type into the running job's terminal (:func:`_into_job`)."""
    return _into_job(core, transport, typing.data(), typing)


def type_person(core: JobCore, transport: LocalShell, data: str, caller: str | None) -> tuple[jobs.Job, int, str]:
    """An attached person's raw keys into the running job (``Terminal.type_keys``):
    :func:`_into_job` without a ``Typing``. Every key a person types at
    ``dsh-magics attach`` comes here, and on a loaded machine each Python call
    on its way to the PTY costs about a microsecond (benchmarks/README.md,
    bench_attach session 36): no ``Typing`` is made per key."""
    return _into_job(core, transport, data.encode("utf-8", "surrogateescape"), None, data, caller)


def _into_job(
    core: JobCore,
    transport: LocalShell,
    data: bytes,
    typing: interaction.Typing | None,
    keys: str = "",
    caller: str | None = None,
) -> tuple[jobs.Job, int, str]:
    """Type ``data`` into the running job: the one path of :func:`send` and
    of a person's keys (``typing`` None: ``keys`` as their terminal sent them,
    by ``caller``).

    What must be known before the bytes go (a running job, the screen's key
    modes for named keys, whether the job asks for hidden entry) is looked at
    under the engine lock; the bytes are written next, and recorded by that
    write after them (``Pty.write``): on an attached person's key, the record
    overlaps with the echo on its way (benchmarks/README.md, ``bench_attach.py``).
    A person's keys skip what only ``send`` has: named keys and their modes,
    the refusal of secret text (a person may type a password, which is
    recorded as ``[secret]``) and a Ctrl-C of ``key="ctrl-c"`` (a person's
    Ctrl-C is the engine's interrupt, never a byte: host/tty_in.py). Pinned by
    tests/attach/test_input_record.py and tests/contract/test_person.py (a
    person's keys, a password typed at ``read -s``)."""
    with core.lock:
        run = core.input_run()
        hidden = run.echo_on and tty_state.hidden_entry(transport.proc.fd)
        if typing is not None:
            if typing.keyed:  # as an xterm in the screen's current modes sends them
                data = typing.data(core.screen.modes())
            elif hidden and not typing.allow_secret:
                raise interaction.hidden_entry_refused(core.session_id, run.job.id)
            if typing.key == "ctrl-c":
                run.intr.asked()  # the line it aborts was ours to abort
        # What it waited for is answered: look again once the program has
        # had a moment with the input.
        run.answered(quiet.QUIET_S)
        due = run.quiet.at
        start_line, prompt = core.ring.next_line, core.ring.partial
        transport.typed = True
        job = run.job
    if typing is None:
        record = interaction.InputRecord(
            interaction.PERSON, time.time(), interaction.REDACTED if hidden else keys, hidden, None, caller, False
        )
    else:
        record = typing.record(hidden)
    typed = Typed(core.session_id, job.id, record, run.inputs.append, core.emit)
    with transport.send_lock:  # outside the engine lock: a full input queue blocks the write
        transport.pty.write(data, typed=typed)  # recorded once written
    transport.wake.due(due)  # type: ignore[arg-type]  # answered(QUIET_S) set it
    return job, start_line, prompt


def echo_for_job(transport: LocalShell, run: Running) -> None:
    """Echo on for the job, then open its gate (see gate.Gate):
    the job line was typed with echo off, and the kernel is made to take
    it first, so it is never echoed."""
    if transport.gate is None:
        return
    fd = transport.tty_fd if transport.tty_fd is not None else tty_state.open_tty(transport.tty)
    try:
        tty_state.line_taken(fd)
        tty_state.set_echo(transport.proc.fd, True)
    finally:
        if fd is not None and fd != transport.tty_fd:
            close_fd(fd)
    run.echo_switched_on()
    transport.gate.release()


def before_typing(transport: LocalShell) -> None:
    """Before the engine types a line: input sent to the last job that
    nobody read would otherwise run as (or corrupt) the shell's next line."""
    if transport.typed:
        transport.typed = False
        tty_state.discard_typed_input(transport.tty)


def after_job(transport: LocalShell, run: Running) -> None:
    """The job's end marker came: echo off again, and input nobody read dropped."""
    tty_state.set_echo(transport.proc.fd, False)
    if run.tty:
        # The shell waits at the end gate: drop input nobody read, then let it go on.
        transport.typed = False
        tty_state.discard_typed_input(transport.tty)
        if transport.gate is not None:
            transport.gate.release(end=True)
    elif transport.typed:
        tty_state.discard_typed_input(transport.tty)


def note_awaiting(core: JobCore, transport: LocalShell, run: Running) -> None:
    """The job waits for typed input: say what for (in its snapshots and
    the terminal's row), and wake waits that end on it."""
    assert run.quiet.reader is not None
    pid, name = run.quiet.reader
    run.prompt_seen(
        pid=pid,
        name=name,
        prompt=core.ring.partial[-interaction.MAX_PROMPT_CHARS :],
        # Echo off means the program asked for it only once the engine
        # switched echo on for the job (gate.Gate).
        secret=run.echo_on and tty_state.hidden_entry(transport.proc.fd),
    )
    core.touched()


def _unread_output(fd: int) -> bool:
    """Has the PTY output the reader has not taken yet? (A slow look at the
    process, e.g. ``ps`` on the portable layer, lets a prompt arrive meanwhile;
    pinned by tests/terminal/test_terminal_input.py under DSH_MAGICS_PROCFS=0.)"""
    try:
        return bool(fdwait.readable([fd], 0))
    except (OSError, ValueError):
        return False


def _unread_input(transport: LocalShell) -> bool:
    """Has the terminal typed input no program has read yet? Then nothing
    waits for input: the reader has a line to take and merely has not run
    yet (on a loaded machine a ``read`` sent its answer still sat in its
    read when the quiet check looked, and a wait returned "awaiting input"
    with the answer unread: benchmarks/soak.py, 1 of 877 answers)."""
    fd = transport.tty_fd if transport.tty_fd is not None else tty_state.open_tty(transport.tty)
    if fd is None:
        return False
    try:
        return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0] > 0
    except OSError:  # the terminal is gone: nothing is pending
        return False
    finally:
        if fd != transport.tty_fd:
            close_fd(fd)


def quiet_check(core: JobCore, transport: LocalShell) -> None:
    """A running job has been quiet for a moment (see ``quiet.check``)."""
    with core.lock:
        run = core.running
        if run is None or core.dead or core.closed:
            return
        now = time.monotonic()
        if run.quiet.at is None or run.quiet.at > now:
            # Input came while this check waited for the lock (``send`` moved the
            # look past it): a look now would see the reader still blocked, its
            # bytes not written yet, and note a wait that predates them, so the
            # send's own wait returned "awaiting input" with no output
            # (tests/magics/test_kernel_as_ipython.py::test_send_text_is_unquoted_as_a_shell_does,
            # 1 run in a loaded suite). The remote prompt watch looks the same way.
            return
        if transport.send_lock.locked():  # typed bytes on their way: look once they are written
            run.quiet.look_in(quiet.QUIET_S)
            return
        transport.quiet_checks += 1
        pid = transport.proc.pid
        verdict = quiet.check(
            run.quiet, pid, transport.proc.fd, transport.identity, run.sync_nonce is not None, tty=transport.tty
        )
        if verdict is quiet.Verdict.LATER:
            run.quiet.again_later()
        elif verdict is quiet.Verdict.ABORTED:
            # The shell waits for a line although the job never reported:
            # its line was aborted. A probe (no signal) confirms it.
            run.quiet.line_abandoned()
            nonce = core.resync(run)
            before_typing(transport)
            shell.quiet_tty(transport.proc.fd)
            transport.type(shell.sync_line(nonce))
        elif verdict in (quiet.Verdict.WAITING, quiet.Verdict.STILL_WAITING) and run.quiet.reader:
            if _unread_output(transport.proc.fd) or _unread_input(transport):
                # The prompt it printed before blocking is not read yet (its
                # arrival would clear the note at once), or a line typed to it
                # is not taken yet. Decide after that.
                verdict = quiet.Verdict.LATER
                run.quiet.reader_unsure()
            elif run.awaiting is None:
                note_awaiting(core, transport, run)
        elif verdict is quiet.Verdict.REPLACED:
            core.shell_replaced(run, quiet.REPLACED_NOTE)
    if verdict is quiet.Verdict.WAITING:
        core.emit({"type": "output", "session_id": core.session_id})  # views show the note
    elif verdict is quiet.Verdict.REPLACED:
        # Kill it and whatever it started, then report; the pidfd (or the
        # read loop's EOF) collects the exit status afterwards.
        procs.kill_tree(pid, transport.token)
        core.deliver()
        core.ready.set()
        core.emit({"type": "terminal", "session_id": core.session_id, "status": DEAD})
