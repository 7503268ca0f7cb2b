"""The process layer: every question the engine asks about processes.

The engine never reads process state itself; it asks this small interface
(see :class:`ProcessLayer`), which has two implementations:

``procfs``
    Reads ``/proc`` directly (``/proc/<pid>/syscall``, ``kcmp``): the most
    exact answers, Linux only. Chosen automatically where ``/proc/self``
    exists.
``portable``
    psutil, plus ``ps -o wchan=`` for the one thing psutil does not report:
    what a sleeping process waits on. Runs wherever psutil and a ``ps``
    with a ``wchan`` column exist (Linux, macOS, the BSDs). Chosen where
    ``/proc`` is missing; ``DSH_MAGICS_PROCFS=0`` forces it on Linux, which
    is how it is tested.

Both answer with the same meaning; where the portable one cannot be as
exact, it errs on the side that never types into a program reading the
terminal (see docs/portability.md for each difference).

A later backend (a Windows ConPTY through pywinpty, say) joins by providing
the same functions: it may answer ``None`` / ``BUSY_OR_UNKNOWN`` where it
has no notion of a foreground process group or a blocked read, and the
engine then falls back to waiting for output and markers.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Protocol

from ...errors import InvalidArgument

#: ``input_state`` answers.
TOP_LEVEL, TTY_READ_ELSEWHERE, BUSY_OR_UNKNOWN = "top_level", "tty_read_elsewhere", "busy"

ENV_VAR = "DSH_MAGICS_PROCFS"


class ProcessLayer(Protocol):
    """What the engine asks about processes (a module satisfies it)."""

    def descendants(self, root: int) -> list[int]:
        """Every live descendant of ``root`` (not itself), parents first;
        also found when ``root`` has already exited."""
        ...

    def children(self, pid: int) -> list[int]:
        """Direct children of ``pid``."""
        ...

    def tagged(self, token: str) -> list[int]:
        """Processes (other than ours) whose environment carries
        ``DSH_MAGICS_TOKEN=<token>``: catches a daemon that left the tree."""
        ...

    def alive(self, pid: int) -> bool:
        """The process exists and is not a zombie."""
        ...

    def identity(self, pid: int) -> tuple[str, bytes] | None:
        """Executable and argv, to notice an ``exec`` into the shell's pid.
        The engine takes it first when the shell is ready at top level."""
        ...

    def command_launched(self, pid: int, pgrp: int) -> bool | None:
        """The shell waits for its foreground group ``pgrp`` and no member
        is still an un-``exec``-ed copy of the shell; None if unknowable."""
        ...

    def sigint_taken(self, shell_pid: int, pgrp: int) -> bool:
        """A member of ``pgrp`` below the shell may have taken a SIGINT just
        sent and lived on (a program of its own, with a handler where that
        can be seen): then no second one is sent."""
        ...

    def terminal_reader(self, shell_pid: int, pgrp: int) -> int | None:
        """A process of foreground group ``pgrp`` below the shell that is
        blocked reading the terminal, or None."""
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


def use_procfs(environ: dict[str, str] | None = None) -> bool:
    """``/proc`` where it exists, unless ``DSH_MAGICS_PROCFS=0``."""
    env = os.environ if environ is None else environ
    raw = env.get(ENV_VAR, "").strip().lower()
    if raw in ("0", "false", "no", "off"):
        return False
    if raw not in ("", "1", "true", "yes", "on"):
        raise InvalidArgument(f"{ENV_VAR} must be 0 or 1, got {raw!r}")
    return os.path.exists("/proc/self/stat")


def implementation(environ: dict[str, str] | None = None) -> ModuleType:
    """The chosen implementation module (imported on demand: psutil is only
    needed where the portable one is used)."""
    if use_procfs(environ):
        from . import procfs

        return procfs
    from . import portable

    return portable
