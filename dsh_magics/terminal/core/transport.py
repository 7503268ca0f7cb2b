"""The seam between a terminal's job core and what carries its bytes.

A transport knows two things: how a line reaches bash (``type``), and how
bash's answers and its end are seen (its reader thread calls the
``reader.Handlers`` it was given: every output byte, the deadline, the end).
The local one is ``local.local_shell.LocalShell`` (bash in a PTY of ours);
the remote one is ``remote.connection.Client`` (ssh, a container, ``cmd:``).
Both hold a :class:`.pty.Pty`, which spawns their process and is the one path
every byte written to the terminal takes."""

from __future__ import annotations

from typing import Protocol

from .pty import Pty


class Transport(Protocol):
    pty: Pty  # the terminal's PTY: spawn, size, the one write path

    @property
    def pid(self) -> int | None:
        """The local process at the other end of the PTY (the shell, or the client)."""
        ...

    def type(self, text: str) -> None:
        """Type ``text`` on the terminal (SHELL_EXITED when it cannot)."""
        ...

    def set_size(self, cols: int, rows: int) -> None:
        """Set the PTY's size: the kernel signals SIGWINCH to its foreground
        process group (a remote client forwards the change)."""
        ...

    def poke(self) -> None:
        """Wake the reader: the running job has a new deadline."""
        ...
