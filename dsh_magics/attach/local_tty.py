"""The local terminal while attached: raw mode on, put back on every way out.

:class:`RawTerminal` saves the terminal's settings, switches it to raw mode and
the alternate screen, and restores both on :meth:`restore` (idempotent). The
attach loop calls it in ``finally``; SIGTERM and SIGHUP are turned into a
wake-up of that loop (:class:`Signals`), so they leave through the same path.
SIGTSTP too: the loop then puts the terminal back and stops the client
(attach/handover.py ``suspend``), and enters raw mode again when continued.
"""

from __future__ import annotations

import os
import signal
import termios
import tty
from collections.abc import Callable
from types import FrameType
from typing import Any

from . import render


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except InterruptedError:
            continue
        view = view[n:]


class RawTerminal:
    """Raw mode and the alternate screen on ``fd_in``/``fd_out`` (both a tty)."""

    def __init__(self, fd_in: int, fd_out: int) -> None:
        self.fd_in = fd_in
        self.fd_out = fd_out
        self._saved: list[Any] | None = None
        #: Start the restore with CAN: the host wrote here (attach/handover.py).
        self.cancel = False

    def enter(self) -> None:
        self._saved = termios.tcgetattr(self.fd_in)
        tty.setraw(self.fd_in, termios.TCSANOW)
        write_all(self.fd_out, render.ENTER.encode())

    def restore(self) -> None:
        saved, self._saved = self._saved, None
        if saved is None:
            return
        try:
            write_all(self.fd_out, (b"\x18" if self.cancel else b"") + render.LEAVE.encode())
        except OSError:
            pass  # the terminal is gone (SIGHUP): nothing to draw on
        try:
            termios.tcsetattr(self.fd_in, termios.TCSAFLUSH, saved)
        except (OSError, termios.error):
            pass  # the terminal is gone: no mode left to restore

    def size(self) -> tuple[int, int]:
        """(cols, rows) of the local terminal."""
        sz = os.get_terminal_size(self.fd_out)
        return max(sz.columns, 1), max(sz.lines, 1)


class Signals:
    """SIGWINCH, SIGTERM, SIGHUP and SIGTSTP as wake-ups of the attach loop:
    the handler only notes the signal and writes a byte to a pipe."""

    WATCHED = (signal.SIGWINCH, signal.SIGTERM, signal.SIGHUP, signal.SIGTSTP)

    def __init__(self) -> None:
        self.read_fd, self._write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        os.set_blocking(self._write_fd, False)
        self.pending: set[int] = set()
        self._old: dict[int, Any] = {}

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        self.pending.add(signum)
        self.wake()

    def wake(self) -> None:
        try:
            os.write(self._write_fd, b"x")
        except OSError:
            pass  # the pipe is full: a wake-up is already pending

    def install(self) -> None:
        for sig in self.WATCHED:
            self._old[sig] = signal.signal(sig, self._handler)

    def take(self) -> set[int]:
        try:
            while os.read(self.read_fd, 512):
                pass
        except BlockingIOError:
            pass  # drained: the pipe is non-blocking
        got, self.pending = self.pending, set()
        return got

    def uninstall(self) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old.clear()
        for fd in (self.read_fd, self._write_fd):
            try:
                os.close(fd)
            except OSError:
                pass  # already closed


Wake = Callable[[], None]

__all__ = ["RawTerminal", "Signals", "write_all"]
