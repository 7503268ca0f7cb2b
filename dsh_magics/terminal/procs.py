"""Finding and killing everything a terminal started.

Killing the shell's pid is not enough: background jobs live in their own
process groups, and a child that called ``setsid`` has left the shell's
session. So we collect the whole descendant tree from /proc before killing
anything (killing first would reparent children to init and lose them), plus
any process that still carries the terminal's private environment token,
which catches daemons that double-forked away from the tree.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterable

_PROC = "/proc"


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, ppid) of a process, or None if it is gone."""
    try:
        with open(f"{_PROC}/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # comm may contain spaces and parentheses: split after the last ')'.
    rest = data[data.rfind(b")") + 2 :].split()
    try:
        return rest[0].decode(), int(rest[1])
    except (IndexError, ValueError):
        return None


def _all_pids() -> list[int]:
    return [int(name) for name in os.listdir(_PROC) if name.isdigit()]


def descendants(root: int) -> list[int]:
    """Every live descendant of ``root`` (not including it), parents first."""
    children: dict[int, list[int]] = {}
    for pid in _all_pids():
        st = _stat(pid)
        if st is not None:
            children.setdefault(st[1], []).append(pid)
    out: list[int] = []
    queue = [root]
    while queue:
        pid = queue.pop(0)
        for child in children.get(pid, ()):
            out.append(child)
            queue.append(child)
    return out


def tagged(token: str) -> list[int]:
    """Processes whose environment carries ``DSH_MAGICS_TOKEN=<token>``."""
    needle = f"DSH_MAGICS_TOKEN={token}".encode()
    me = os.getpid()
    out = []
    for pid in _all_pids():
        if pid == me:
            continue
        try:
            with open(f"{_PROC}/{pid}/environ", "rb") as f:
                env = f.read()
        except OSError:
            continue
        if needle in env.split(b"\0"):
            out.append(pid)
    return out


def alive(pid: int) -> bool:
    """True if the process exists and is not a zombie."""
    st = _stat(pid)
    return st is not None and st[0] not in ("Z", "X")


def _signal_all(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def kill_tree(root: int | None, token: str | None = None, grace: float = 0.5) -> list[int]:
    """SIGHUP the shell, its descendants and tagged processes; SIGKILL whatever
    is still alive after ``grace`` seconds. Returns the pids that were targeted.

    SIGHUP first because that is what a closing terminal sends: well-behaved
    programs flush and exit. Our own process is never targeted.
    """
    me = os.getpid()
    targets: list[int] = []
    if root is not None and alive(root):
        targets.append(root)
    if root is not None:
        targets.extend(descendants(root))
    if token:
        targets.extend(p for p in tagged(token) if p not in targets)
    targets = [p for p in targets if p != me]
    if not targets:
        return []
    # Stopped processes ignore SIGHUP until continued.
    _signal_all(targets, signal.SIGHUP)
    _signal_all(targets, signal.SIGCONT)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not any(alive(p) for p in targets):
            return targets
        time.sleep(0.01)
    _signal_all([p for p in targets if alive(p)], signal.SIGKILL)
    return targets
