"""Finding processes, for the tests and for benchmarks/soak.py alike: what runs
(``ps``), what is alive, and which processes carry a variable in their environment
(a terminal's shell has ``DSH_MAGICS_SESSION``; a host's terminals are not our
descendants, so that is how a test or the soak finds them). No pytest here: the
soak imports it as a plain module.
"""

from __future__ import annotations

import os
import subprocess


def ps_lines() -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid,ppid,pgid,stat,args"], capture_output=True, text=True, check=True)
    return out.stdout.splitlines()[1:]


def live_pids() -> set[int]:
    pids = set()
    for line in ps_lines():
        parts = line.split(None, 4)
        if len(parts) >= 4 and not parts[3].startswith("Z"):
            pids.add(int(parts[0]))
    return pids


def pids_with_env(key: str, value: str, *, prefix: bool = False) -> list[int]:
    """Live processes (not zombies) whose environment has key=value (or, with
    ``prefix``, a value starting with it). Ours only: another user's environment
    cannot be read."""
    needle = f"{key}={value}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{name}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue  # gone meanwhile (or its stat read as it went): not a live process
        hit = any(v.startswith(needle) for v in env) if prefix else needle in env
        if hit and state not in (b"Z", b"X"):
            found.append(int(name))
    return found


def ps_matching(*needles: str) -> list[str]:
    """The ``ps`` rows (pid ppid pgid stat args) of live (non-zombie) processes whose
    command line contains one of ``needles``."""
    rows = []
    for line in ps_lines():
        parts = line.split(None, 4)
        if len(parts) == 5 and not parts[3].startswith("Z") and any(n in parts[4] for n in needles):
            rows.append(line)
    return rows


def pids_matching(*needles: str) -> list[int]:
    """The pids of :func:`ps_matching`'s rows."""
    return [int(row.split(None, 1)[0]) for row in ps_matching(*needles)]
