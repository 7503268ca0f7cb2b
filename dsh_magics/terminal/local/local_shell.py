"""The local transport's handles: bash in a PTY of ours, how a line reaches
it (typed on the PTY master) and how its end is seen (pidfd, or EOF), plus
the terminal device and the gate a job waits at. The local terminal, its
keyboard and its shell-end handling share this object."""

from __future__ import annotations

import os
import threading
from typing import Any

from ...errors import ShellExited
from ..core.markers import new_nonce
from ..core.reader import WakePipe
from ..core.transport import set_pty_size
from .gate import Gate
from .scratch import close_fd


class LocalShell:
    """Handles of one local shell. Fields are set as the shell starts."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.token = new_nonce()  # marks the shell's descendants (DSH_MAGICS_TOKEN)
        self.proc: Any = None  # the PtyProcess
        self.pidfd: int | None = None
        self.wake = WakePipe()
        self.identity: tuple[str, bytes] | None = None  # exe and argv at the prompt
        self.gate: Gate | None = None
        self.tty: str | None = None  # the terminal's device path (/dev/pts/N)
        self.tty_fd: int | None = None  # its slave side, for core.tty_state.line_taken
        self.typed = False  # input was sent since the engine last typed a line
        self.send_lock = threading.Lock()
        self.quiet_checks = 0  # how many quiet checks ran (tests wait on it)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def type(self, text: str) -> None:
        self.write_bytes(text.encode("utf-8", "surrogateescape"))

    def write_bytes(self, data: bytes) -> None:
        while data:
            try:
                n = os.write(self.proc.fd, data)
            except OSError as e:
                raise ShellExited(f"cannot write to the shell: {e}", session_id=self.session_id) from None
            data = data[n:]

    def set_size(self, cols: int, rows: int) -> None:
        """Set the PTY's size (the kernel signals SIGWINCH to its foreground group)."""
        set_pty_size(self.proc, self.session_id, cols, rows)

    def poke(self) -> None:
        """Wake the reader so it picks up a new deadline."""
        self.wake.poke()

    def close_fds(self) -> None:
        for fd in (self.pidfd, self.tty_fd):
            close_fd(fd)
        self.pidfd = self.tty_fd = None
        self.wake.close()
