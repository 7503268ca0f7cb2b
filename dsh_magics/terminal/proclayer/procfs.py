"""The ``/proc`` process layer: the engine's own probes, as written in
``procs`` (tree, tokens, liveness, and what the shell and its foreground
group are doing). Linux only. ``procs.PROCFS`` holds them before ``procs``
binds the portable answers in their place (``DSH_MAGICS_PROCFS=0``), so the
names here are the /proc ones whichever layer the engine uses.
"""

from __future__ import annotations

from ..procs import PROCFS as _P

alive = _P["alive"]
children = _P["children"]
command_launched = _P["command_launched"]
command_name = _P["command_name"]
cwd = _P["cwd"]
descendants = _P["descendants"]
identity = _P["identity"]
input_state = _P["input_state"]
tagged = _P["tagged"]
terminal_reader = _P["terminal_reader"]
