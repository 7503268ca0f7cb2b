"""What the engine asks about processes, answered from ``/proc`` (Linux): the
process tree, what the shell and its foreground group are doing, small facts.
``proclayer`` offers the same plain functions portably."""

from __future__ import annotations

import ctypes
import os
import signal
import time
from collections.abc import Iterable

_PROC = "/proc"
#: The shell's private duplicate of its terminal input (``shell`` opens it).
INPUT_FD = 210


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


def pid_alive(pid: int) -> bool:
    """True if the process exists and is not a zombie."""
    st = _stat(pid)
    return st is not None and st[0] not in ("Z", "X")


alive = pid_alive  # the name ``proclayer`` uses


def _signal_all(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def kill_tree(root: int | None, token: str | None = None, grace: float = 0.5) -> list[int]:
    """SIGHUP the shell, its descendants and tagged processes; SIGKILL whatever
    is still alive after ``grace`` seconds. Returns the pids that were targeted.

    Killing the shell's pid is not enough: background jobs live in their own
    process groups, and a child that called ``setsid`` has left the session.
    So the whole tree is collected before anything is killed (killing first
    would reparent children to init and lose them), plus any process still
    carrying the terminal's token (daemons that double-forked away). SIGHUP
    first, as a closing terminal sends it. Our own process is never targeted.
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


def reap(proc, token: str | None, timeout: float) -> tuple[int, int | None]:  # type: ignore[no-untyped-def]
    """Wait for a ``PtyProcess`` to exit (killing its tree if it will not)
    and collect its status, so no zombie is left: (exit code, signal)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            running = proc.isalive()
        except Exception:  # noqa: BLE001
            running = False
        if not running:
            break
        if time.monotonic() >= deadline:
            kill_tree(proc.pid, token, grace=0.2)
            deadline = time.monotonic() + 1.0
        time.sleep(0.005)
    sig = getattr(proc, "signalstatus", None)
    if sig is not None:
        return 128 + sig, sig
    status = getattr(proc, "exitstatus", None)
    return (status if status is not None else -1), None


# ----------------------------------------------------------------------------
# What the shell and its foreground group are doing (only after a quiet spell
# in a running job, or to time an interrupt; never on a job's normal path).
_SYSCALLS = {"x86_64": (0, 312, 61), "aarch64": (63, 272, 260)}  # (read, kcmp, wait4) per machine
_READ_NR, _KCMP_NR, _WAIT4_NR = _SYSCALLS.get(os.uname().machine, (None, None, None))
_KCMP_FILE = 0
_libc: ctypes.CDLL | None = None

TOP_LEVEL, TTY_READ_ELSEWHERE, BUSY_OR_UNKNOWN = "top_level", "tty_read_elsewhere", "busy"


def identity(pid: int) -> tuple[str, bytes] | None:
    """What the shell process is running (executable and argv), to notice
    later that a command ``exec``-ed something else into its place: the pid
    stays, so neither the pidfd nor a status change tells."""
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return exe, f.read()
    except OSError:
        return None


def children(pid: int) -> list[int]:
    """Direct children of ``pid``."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as f:
            return [int(c) for c in f.read().split()]
    except (OSError, ValueError):
        return []


def command_launched(pid: int, pgrp: int) -> bool | None:
    """Has the shell finished starting its foreground command?

    True once bash blocks in ``wait4`` (it waits only after every process of
    a pipeline is forked and in its group) and none of its children in the
    foreground group ``pgrp`` is still an un-``exec``-ed copy of the shell
    (such a child still runs bash's own SIGINT handler, and loses the signal
    when it then ``exec``-s). Until then a SIGINT to the foreground group can
    miss a member: ``sleep`` in ``sleep 30 | cat`` dies, the ``cat`` forked a
    moment later reads EOF and exits 0, and the line carries on. A subshell
    stays a copy of the shell for good; callers wait for it only briefly.
    None when the machine is unknown or /proc cannot tell.
    """
    if _WAIT4_NR is None:
        return None
    try:
        with open(f"/proc/{pid}/syscall", "rb") as f:
            if f.read().split(maxsplit=1)[:1] != [str(_WAIT4_NR).encode()]:
                return False
        shell = _cmdline(pid)
    except OSError:
        return None
    for child in children(pid):
        try:
            if os.getpgid(child) == pgrp and _cmdline(child) == shell:
                return False
        except OSError:
            continue  # gone already
    return True


def _cmdline(pid: int) -> bytes:
    """argv as /proc has it. A forked copy of the shell shares the shell's
    (``bash script.sh`` has the shell's executable, not its argv)."""
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read()


def _catches_sigint(pid: int) -> bool:
    """SIGINT has a handler in ``pid`` (its ``SigCgt`` mask)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"SigCgt:"):
                    return bool(int(line.split()[1], 16) >> (signal.SIGINT - 1) & 1)
    except (OSError, ValueError, IndexError):
        return True  # cannot tell: assume it may count a second one
    return False


def sigint_taken(shell_pid: int, pgrp: int) -> bool:
    """May a member of group ``pgrp`` (below the shell) have taken a SIGINT
    just sent to it and lived on? Yes once a member is a program of its own
    (not a forked copy of the shell: another argv) with a SIGINT handler.
    A copy of the shell loses the signal when it ``exec``-s; a member with no
    handler dies of it, and one more cannot make a second catch."""
    try:
        shell = _cmdline(shell_pid)
    except OSError:
        return True
    for pid in descendants(shell_pid):
        try:
            if os.getpgid(pid) != pgrp or _cmdline(pid) == shell:
                continue
        except OSError:
            continue  # gone already
        if _catches_sigint(pid):
            return True
    return False


def _reads_a_terminal(pid: int) -> bool:
    """Blocked in ``read`` on a terminal device (never on stdin: a job's
    stdin is /dev/null, so this is something that opened the tty itself)."""
    try:
        with open(f"/proc/{pid}/syscall", "rb") as f:
            fields = f.read().split()
        if len(fields) < 2 or fields[0] != str(_READ_NR).encode():
            return False
        target = os.readlink(f"/proc/{pid}/fd/{int(fields[1], 16)}")
    except (OSError, ValueError):
        return False
    return target == "/dev/tty" or target.startswith("/dev/pts/")


def command_name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip() or "?"
    except OSError:
        return "?"


def terminal_reader(shell_pid: int, pgrp: int) -> int | None:
    """A process of the terminal's foreground group ``pgrp`` (below the
    shell) that sits in ``read`` on the terminal: a password or confirmation
    prompt (``sudo``, ``ssh``, ``passwd``, ``read </dev/tty``). Nothing types
    into a job's terminal, so such a job waits until it is interrupted; the
    engine says so instead of leaving its user to guess why it is quiet.
    """
    if _READ_NR is None:
        return None
    queue, seen = children(shell_pid), 0
    while queue and seen < 256:
        pid = queue.pop(0)
        seen += 1
        try:
            in_group = os.getpgid(pid) == pgrp
        except OSError:
            continue
        if in_group and _reads_a_terminal(pid):
            return pid
        queue.extend(children(pid))
    return None


def input_state(pid: int) -> str:
    """Is the shell blocked reading its own terminal input at top level?

    /proc/<pid>/syscall tells that it sleeps in ``read`` on fd 0. That alone
    is not enough: a job running the builtin ``read x </dev/tty`` also reads
    fd 0 of the same terminal, and a probe typed then would become that
    read's input. Bash's top-level fd 0 is the very open file description
    that fd ``INPUT_FD`` duplicates (set up once; the prompt guard restores
    fd 0 from it), whereas ``</dev/tty`` opens a new one; ``kcmp`` compares
    exactly that. Without ``kcmp`` (or on an unknown machine) the answer is
    ``BUSY_OR_UNKNOWN``, so no probe is ever typed on a guess.
    """
    global _libc
    if _READ_NR is None:
        return BUSY_OR_UNKNOWN
    try:
        with open(f"/proc/{pid}/syscall", "rb") as f:
            fields = f.read().split()
    except OSError:
        return BUSY_OR_UNKNOWN
    if len(fields) < 2 or fields[0] != str(_READ_NR).encode() or int(fields[1], 16) != 0:
        return BUSY_OR_UNKNOWN
    try:
        if _libc is None:
            _libc = ctypes.CDLL(None, use_errno=True)
        same = _libc.syscall(_KCMP_NR, pid, pid, _KCMP_FILE, 0, INPUT_FD)
    except Exception:  # noqa: BLE001 - no kcmp: never guess
        return BUSY_OR_UNKNOWN
    if same == 0:
        return TOP_LEVEL
    return TTY_READ_ELSEWHERE if same > 0 else BUSY_OR_UNKNOWN



def cwd(pid: int) -> str | None:
    """Current directory of ``pid`` (without a `` (deleted)`` suffix), or None."""
    try:
        path = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None
    return path[: -len(" (deleted)")] if path.endswith(" (deleted)") else path


# ----------------------------------------------------------------------------
# Where /proc is missing (macOS), or with DSH_MAGICS_PROCFS=0, the portable
# layer (psutil and ps) answers the same questions instead; docs/portability.md
# says where it is weaker. ``kill_tree`` and ``reap`` use whichever answers are
# bound here; ``PROCFS`` keeps the /proc ones (``proclayer.procfs``).
from . import proclayer as _proclayer  # noqa: E402

PROCFS = {
    "alive": alive,
    "children": children,
    "command_launched": command_launched,
    "command_name": command_name,
    "cwd": cwd,
    "descendants": descendants,
    "identity": identity,
    "input_state": input_state,
    "sigint_taken": sigint_taken,
    "tagged": tagged,
    "terminal_reader": terminal_reader,
}
# The typed-input probe lives in the /proc layer module itself. ``tty_path``
# stays the /proc one in both layers: psutil's ``terminal()`` of a just
# spawned shell is sometimes still None (measured: 13 of 20 spawns), and the
# engine takes the path right then (tests/contract/test_interactive.py::
# test_type_ahead_nobody_read_never_becomes_a_command leaked with it).
from .proclayer.procfs import tty_path, tty_waiter  # noqa: E402

PROCFS["tty_path"] = tty_path
PROCFS["tty_waiter"] = tty_waiter

if not _proclayer.use_procfs():
    from .proclayer.portable import (  # noqa: E402, F401, F811
        alive,
        children,
        command_launched,
        command_name,
        cwd,
        descendants,
        identity,
        input_state,
        sigint_taken,
        tagged,
        terminal_reader,
        tty_waiter,
    )

    pid_alive = alive
