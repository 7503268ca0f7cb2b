"""When a local terminal's shell ends: drain its last output, collect its exit
status, and settle the running job as SHELL_EXITED."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import procs
from .core import reader
from .result import DEAD, SHELL_EXITED
from .scratch import close_fd

if TYPE_CHECKING:
    from .terminal import Terminal


def on_shell_gone(term: Terminal, fd: int) -> None:
    """The reader saw the shell exit (pidfd or EOF on the PTY)."""
    # Our slave descriptor would keep the master from reading EOF (and
    # the drain would wait out its deadline).
    with term._lock:
        tty_fd, term._tty_fd = term._tty_fd, None
    close_fd(tty_fd)
    reader.drain(fd, term._on_pty)
    reap(term, timeout=2.0)
    with term._lock:
        code, sig, run = term._exit_code, term._exit_signal, term._running
        if run is not None:
            how = "exited" if sig is None else f"was killed by signal {sig}"
            note = f"the shell {how}; the next command starts a fresh shell"
            term._finish(run, SHELL_EXITED, code, term._cwd, signal_no=sig, note=note)
    # Dead before the job settles: a caller woken by it may exec at once, and
    # must get a fresh shell, not this one (pinned by
    # tests/terminal/test_lifecycle.py::test_terminal_is_dead_when_its_job_settles_shell_exited).
    mark_dead(term)


def reap(term: Terminal, timeout: float) -> None:
    """Collect the shell's exit status (so no zombie is left)."""
    if term._proc is None or term._exit_code is not None:
        return
    code, sig = procs.reap(term._proc, term._token, timeout)
    with term._lock:
        term._exit_code, term._exit_signal = code, sig


def mark_dead(term: Terminal, note: str | None = None) -> None:
    """The terminal is dead: settle its job, wake every waiter, say so once."""
    with term._lock:
        was_dead = term._dead
        term._dead = True
        run = term._running
        if run is not None:
            term._finish(run, SHELL_EXITED, term._exit_code, term._cwd, note=note or "the shell exited")
        term._out_cond.notify_all()
    term._deliver()
    term._ready.set()
    if not was_dead:
        term._emit({"type": "terminal", "session_id": term.session_id, "status": DEAD})
