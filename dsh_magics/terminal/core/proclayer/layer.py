"""What the engine asks about processes: the interface both process layers
implement (``procfs`` and ``portable``), and the answers it shares."""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol

#: The environment variable that marks a terminal's processes with its
#: token (a local shell's, a ``cmd:`` client's, a container's shell): what
#: ``tagged`` looks for and the owner watchdog ends.
TOKEN_VAR = "DSH_MAGICS_TOKEN"
#: ``input_state`` answers.
TOP_LEVEL, TTY_READ_ELSEWHERE, BUSY_OR_UNKNOWN = "top_level", "tty_read_elsewhere", "busy"
#: The shell's private duplicate of its terminal input (``shell`` opens it;
#: ``input_state`` compares the shell's fd 0 with it).
INPUT_FD = 210


class ProcessLayer(Protocol):
    """What the engine asks about processes (a module satisfies it)."""

    def descendants(self, root: int) -> list[int]:
        """Every live descendant of ``root`` (not itself), parents first;
        also found when ``root`` has already exited."""
        ...

    def tagged(self, token: str) -> list[int]:
        """Processes (other than ours) whose environment carries
        ``DSH_MAGICS_TOKEN=<token>``: catches a daemon that left the tree."""
        ...

    def alive(self, pid: int) -> bool:
        """The process exists and is not a zombie."""
        ...

    def executable(self, pid: int) -> str | None:
        """The program ``pid`` runs now, with no side effect (unlike
        ``identity``, whose first call for a shell is taken at its prompt)."""
        ...

    def identity(self, pid: int) -> tuple[str, bytes] | None:
        """Executable and argv, to notice an ``exec`` into the shell's pid.
        The engine takes it first when the shell is ready at top level."""
        ...

    def command_launched(self, pid: int, pgrp: int) -> bool | None:
        """The shell waits for its foreground group ``pgrp`` and every member
        that is still a copy of the shell (not ``exec``-ed) waits too, for
        members checked the same way; None if unknowable."""
        ...

    def sigint_taken(self, shell_pid: int, pgrp: int, copies: Collection[int] = ()) -> bool:
        """A member of ``pgrp`` below the shell may have taken a SIGINT just
        sent and lived on (a program of its own, with a handler where that
        can be seen): then no second one is sent. Members in ``copies``
        (copies of the shell when it was sent) are not counted: whatever
        they run now was ``exec``-ed after it."""
        ...

    def shell_copies(self, shell_pid: int, pgrp: int) -> list[int]:
        """Members of ``pgrp`` below the shell that are still copies of it
        (forked, not ``exec``-ed: the shell's argv)."""
        ...

    def tty_path(self, shell_pid: int) -> str | None:
        """The shell's terminal device (``/dev/pts/N``), once it is ready."""
        ...

    def tty_waiter(self, shell_pid: int, fg_pgrp: int, tty: str | None) -> int | None:
        """A process of foreground group ``fg_pgrp`` below the shell blocked
        waiting for typed input on ``tty`` (and nothing else), or None. The
        /proc layer sees ``read``, ``select``, ``poll`` and ``epoll``; the
        portable one only a blocked ``read`` (see docs/portability.md)."""
        ...

    def input_state(self, pid: int) -> str:
        """``TOP_LEVEL`` (the shell reads its own input), ``TTY_READ_ELSEWHERE``
        (it reads the terminal for a job, e.g. ``read x </dev/tty``), or
        ``BUSY_OR_UNKNOWN``. ``TOP_LEVEL`` only when sure: it lets the
        engine type a probe."""
        ...

    def command_name(self, pid: int) -> str:
        """Short program name, ``"?"`` if gone."""
        ...

    def cwd(self, pid: int) -> str | None:
        """Current directory, or None if it cannot be read."""
        ...
