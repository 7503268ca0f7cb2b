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

May import: errors and the standard library (and psutil). Must not import the
rest of terminal/: the engine asks it, never the other way round.
"""

from __future__ import annotations

import os

from ....errors import InvalidArgument
from .layer import BUSY_OR_UNKNOWN, INPUT_FD, TOKEN_VAR, TOP_LEVEL, TTY_READ_ELSEWHERE, ProcessLayer

__all__ = [
    "BUSY_OR_UNKNOWN",
    "ENV_VAR",
    "INPUT_FD",
    "TOKEN_VAR",
    "TOP_LEVEL",
    "TTY_READ_ELSEWHERE",
    "ProcessLayer",
    "implementation",
    "use_procfs",
]

ENV_VAR = "DSH_MAGICS_PROCFS"


def use_procfs(environ: dict[str, str] | None = None) -> bool:
    """``/proc`` where it exists, unless ``DSH_MAGICS_PROCFS=0``."""
    env = os.environ if environ is None else environ
    raw = env.get(ENV_VAR, "").strip().lower()
    if raw in ("0", "false", "no", "off"):
        return False
    if raw not in ("", "1", "true", "yes", "on"):
        raise InvalidArgument(f"{ENV_VAR} must be 0 or 1, got {raw!r}")
    return os.path.exists("/proc/self/stat")


def implementation(environ: dict[str, str] | None = None) -> ProcessLayer:
    """The chosen implementation module (imported on demand: psutil is only
    needed where the portable one is used)."""
    if use_procfs(environ):
        from . import procfs

        return procfs
    from . import portable

    return portable
