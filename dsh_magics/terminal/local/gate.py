"""The gate a local job waits at until the engine has switched the terminal's
echo on (and a tty job's end gate), see :class:`Gate`."""

from __future__ import annotations

import os
import shlex

GATE_FD = 213  # the begin gate: the command waits here for echo on
GATE_END_FD = 214  # a tty job's end gate: the shell waits here for unread input to go
GATE_VAR = "__dsh_g"


class Gate:
    """Holds a job's command back until the engine has switched the
    terminal's echo on (and, for a tty job, holds the shell back after the
    job until the engine has thrown away input nobody read).

    Why: the engine types its own lines with echo off, so they never show;
    a job must run with echo on, as a person's terminal has it, or an
    echo-off terminal could not tell a password prompt from a ``y/N``. The
    switch has to fall after the kernel took the job's line (else the line
    is echoed) and before the command runs (else a ``read -s`` that turned
    echo off first would be overruled, and a password would show). The
    shell cannot change terminal modes without running ``stty`` (~3 ms a
    time here). So the job line reads one byte from a private FIFO right
    after its begin marker, and the engine writes that byte only after it
    has made the kernel process the typed line (:func:`..core.tty_state.line_taken`) and
    switched echo on. All of that happens while the shell is still waking
    up, so the byte is usually there before the shell asks: no extra
    wake-up on a job's path. The FIFOs are opened read-write on both ends,
    so neither open nor read ever sees end-of-file.

    The end gate has a FIFO of its own: a byte for it may still be on its
    way to the shell when the next job starts, and emptying the begin gate
    then (see :meth:`drain`) must not take it (a shell left waiting at an
    end gate runs no job again)."""

    def __init__(self, directory: str) -> None:
        self._paths = (os.path.join(directory, "gate"), os.path.join(directory, "gate-end"))
        self._fds: list[int | None] = []
        for path in self._paths:
            if not os.path.exists(path):
                os.mkfifo(path, 0o600)
            self._fds.append(os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC))

    def shell_open(self) -> str:
        """Shell code (for the setup script) that opens both gates."""
        begin, end = (shlex.quote(p) for p in self._paths)
        return f"exec {GATE_FD}<>{begin} {GATE_END_FD}<>{end}"

    @staticmethod
    def shell_wait(end: bool = False) -> str:
        """Shell code on the job line: wait for the engine's byte."""
        return f"\\builtin read -r -N1 -u {GATE_END_FD if end else GATE_FD} {GATE_VAR}"

    def release(self, end: bool = False) -> None:
        fd = self._fds[1 if end else 0]
        if fd is not None:
            try:
                os.write(fd, b"g")
            except OSError:
                pass  # gate closed (terminal closing) or full of unread bytes: no job waits on it

    def drain(self) -> None:
        """Drop a begin-gate byte no job took (its line was aborted before
        the read), so the next job waits for its own. Only while the shell
        is between jobs."""
        fd = self._fds[0]
        if fd is None:
            return
        while True:
            try:
                if not os.read(fd, 4096):
                    return
            except OSError:
                return

    def unlink(self) -> None:
        """Remove the FIFOs' names once the shell has opened them (both ends
        keep their descriptors): nothing is left in the scratch directory."""
        for path in self._paths:
            try:
                os.unlink(path)
            except OSError:
                pass  # already gone: the names only had to disappear

    def close(self) -> None:
        for i, fd in enumerate(self._fds):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass  # already closed: closing twice is the same as once
                self._fds[i] = None
