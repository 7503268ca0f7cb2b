"""The ``/proc`` process layer: the engine's own probes, as written in
``procs`` (tree, tokens, liveness, and what the shell and its
foreground group are doing). Linux only.
"""

from __future__ import annotations

import os

from .. import procs as _procs

descendants = _procs.descendants
tagged = _procs.tagged
alive = _procs.alive
children = _procs.children
identity = _procs.identity
command_launched = _procs.command_launched
terminal_reader = _procs.terminal_reader
input_state = _procs.input_state
command_name = _procs.command_name


def cwd(pid: int) -> str | None:
    try:
        path = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None
    return path[: -len(" (deleted)")] if path.endswith(" (deleted)") else path
