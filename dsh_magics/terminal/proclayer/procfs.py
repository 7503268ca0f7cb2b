"""The ``/proc`` process layer: the engine's own probes, as written in
``procs`` (tree, tokens, liveness) and ``shell`` (what the shell and its
foreground group are doing). Linux only.
"""

from __future__ import annotations

import os

from .. import procs as _procs
from .. import shell as _shell

descendants = _procs.descendants
tagged = _procs.tagged
alive = _procs.alive
children = _shell._children
identity = _shell.identity
command_launched = _shell.command_launched
terminal_reader = _shell.terminal_reader
input_state = _shell.input_state
command_name = _shell.command_name


def cwd(pid: int) -> str | None:
    try:
        path = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None
    return path[: -len(" (deleted)")] if path.endswith(" (deleted)") else path
