"""When a local terminal's shell ends: drain its last output, collect its exit
status, and settle the running job as SHELL_EXITED."""

from __future__ import annotations

import logging
from collections.abc import Callable

from ..core import procs, reader
from ..core.jobcore import JobCore
from ..result import SHELL_EXITED
from .local_shell import LocalShell
from .scratch import close_fd

log = logging.getLogger(__name__)


def on_shell_gone(core: JobCore, transport: LocalShell, on_data: Callable[[bytes], None]) -> None:
    """The reader saw the shell exit (pidfd or EOF on the PTY)."""
    # Our slave descriptor would keep the master from reading EOF (and
    # the drain would wait out its deadline).
    with core.lock:
        tty_fd, transport.tty_fd = transport.tty_fd, None
    close_fd(tty_fd)
    reader.drain(transport.proc.fd, on_data)
    reap(core, transport, timeout=2.0)
    with core.lock:
        code, sig, run = core.exit_code, core.exit_signal, core.running
        if run is not None and not core.closed:  # (closing: close() settles it, "terminal closed")
            how = "exited" if sig is None else f"was killed by signal {sig}"
            note = f"the shell {how}; the next command starts a fresh shell"
            core.finish(run, SHELL_EXITED, code, core.last_cwd, signal_no=sig, note=note)
    # Dead before the job settles: a caller woken by it may exec at once, and
    # must get a fresh shell, not this one (pinned by
    # tests/terminal/test_lifecycle.py::test_terminal_is_dead_when_its_job_settles_shell_exited).
    core.mark_dead(note="terminal closed" if core.closed else None)


def reap(core: JobCore, transport: LocalShell, timeout: float) -> None:
    """Collect the shell's exit status (so no zombie is left)."""
    if transport.proc is None or core.exit_code is not None:
        return
    core.exited(*procs.reap(transport.proc, transport.token, timeout))


def on_reader_failed(core: JobCore, transport: LocalShell, error: BaseException) -> None:
    """The reader failed while the terminal was open: nothing reads its PTY
    any more, so no job could settle. End the shell and everything it
    started, and settle the running job saying why, as when the shell exits
    (pinned by tests/terminal/test_reader_failure.py)."""
    log.error("session %s: the terminal's reader failed", core.session_id, exc_info=error)
    why = reader.failure(error)
    core.failed(why)
    pid = transport.proc.pid if transport.proc is not None else None
    procs.kill_tree(pid, transport.token)
    reap(core, transport, timeout=2.0)
    core.mark_dead(note=f"{why}; its shell was ended; the next command starts a fresh shell")
