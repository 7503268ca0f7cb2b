"""The local transport's handles: bash in a PTY of ours, how a line reaches
it (typed on the PTY master) and how its end is seen (pidfd, or EOF), plus
the terminal device and the gate a job waits at. The local terminal, its
keyboard and its shell-end handling share this object."""

from __future__ import annotations

import threading
from typing import Any

from ..core.markers import new_nonce
from ..core.pty import Pty
from ..core.reader import WakePipe
from .gate import Gate
from .scratch import close_fd


class LocalShell:
    """Handles of one local shell. Fields are set as the shell starts."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.token = new_nonce()  # marks the shell's descendants (DSH_MAGICS_TOKEN)
        self.pty = Pty(session_id, "shell")  # spawns the shell; every byte typed goes through it
        self.wake = WakePipe()
        self.identity: tuple[str, bytes] | None = None  # exe and argv at the prompt
        self.gate: Gate | None = None
        self.tty: str | None = None  # the terminal's device path (/dev/pts/N)
        self.tty_fd: int | None = None  # its slave side, for core.tty_state.line_taken
        self.typed = False  # input was sent since the engine last typed a line
        self.send_lock = threading.Lock()
        self.quiet_checks = 0  # how many quiet checks ran (tests wait on it)

    @property
    def proc(self) -> Any:
        """The shell's ``PtyProcess`` (None until spawned)."""
        return self.pty.proc

    @property
    def pidfd(self) -> int | None:
        return self.pty.pidfd

    @property
    def pid(self) -> int | None:
        return self.pty.pid

    def type(self, text: str) -> None:
        """Type one of the engine's own lines (input goes through ``pty.write`` with its record)."""
        self.pty.write(text.encode("utf-8", "surrogateescape"), typed=None)

    def set_size(self, cols: int, rows: int) -> None:
        """Set the PTY's size (the kernel signals SIGWINCH to its foreground group)."""
        self.pty.set_size(cols, rows)

    def poke(self) -> None:
        """Wake the reader so it picks up a new deadline."""
        self.wake.poke()

    def close_fds(self) -> None:
        self.pty.close_pidfd()
        close_fd(self.tty_fd)
        self.tty_fd = None
        self.wake.close()
