"""The ``/proc`` process layer: the engine's own probes, as written in
``procs`` (tree, tokens, liveness, and what the shell and its foreground
group are doing), plus the probe of a process waiting for typed input
(:func:`tty_waiter`: ``read``, ``select``, ``poll`` or ``epoll`` on the
terminal, from ``/proc/<pid>/syscall``, ``fd``, ``fdinfo`` and ``mem``).
Linux only. ``procs.PROCFS`` holds them before ``procs`` binds the portable
answers in their place (``DSH_MAGICS_PROCFS=0``), so the names here are the
/proc ones whichever layer the engine uses.
"""

from __future__ import annotations

import os
import struct

# ----------------------------------------------------------------------------
# a process waiting for typed input
_MACHINE = os.uname().machine
# (read-like, select-like, poll-like, epoll-like) syscall numbers
if _MACHINE == "x86_64":
    _READS = {0, 17, 19}  # read, pread64, readv
    _SELECTS = {23, 270}  # select, pselect6
    _POLLS = {7, 271}  # poll, ppoll
    _EPOLLS = {232, 281, 441}  # epoll_wait, epoll_pwait, epoll_pwait2
elif _MACHINE == "aarch64":
    _READS = {63, 65, 67}
    _SELECTS = {72}
    _POLLS = {73}
    _EPOLLS = {22, 441}
else:  # unknown machine: never claim a job waits for input
    _READS = _SELECTS = _POLLS = _EPOLLS = set()

_POLLIN = 0x001
_EPOLLIN = 0x001


def _syscall(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/syscall") as f:
            return f.read().split()
    except OSError:
        return None


def _fd_target(pid: int, fd: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/fd/{fd}")
    except OSError:
        return None


def _is_tty(target: str | None, tty: str | None) -> bool:
    """The job's terminal: its device path, or ``/dev/tty`` (the controlling
    terminal, which for everything in this shell's session is ours)."""
    if target is None:
        return False
    return target == "/dev/tty" or (tty is not None and target == tty)


def _is_other_input(target: str | None) -> bool:
    """A descriptor through which input can arrive from elsewhere: a pipe, a
    socket, another terminal or a file. Event and signal descriptors
    (``anon_inode:``) are an event loop's own machinery, not input."""
    if target is None:
        return True
    return not target.startswith("anon_inode:")


def _read_mem(pid: int, addr: int, size: int) -> bytes | None:
    if addr == 0 or size <= 0 or size > 65536:
        return None
    try:
        fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
    except OSError:
        return None
    try:
        data = os.pread(fd, size, addr)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data if len(data) == size else None


def _waits_on_tty(pid: int, tty: str | None) -> bool:
    """Is ``pid`` blocked waiting for the terminal and nothing else?

    ``read`` on a descriptor that is the terminal, or a ``select``/``poll``/
    ``epoll`` whose only input sources include the terminal (REPLs such as
    ``python3 -i`` wait in ``pselect6`` on fd 0, ``node`` in ``epoll``). A
    wait that includes a pipe, a socket or a file is not counted: the
    program may as well be waiting for the network.
    """
    fields = _syscall(pid)
    if not fields or len(fields) < 3 or not fields[0].isdigit():
        return False
    nr = int(fields[0])
    try:
        args = [int(a, 16) for a in fields[1:7]]
    except ValueError:
        return False
    if nr in _READS:
        return _is_tty(_fd_target(pid, args[0]), tty)
    if nr in _SELECTS:
        nfds, readfds = args[0], args[1]
        if nfds <= 0 or nfds > 1024:
            return False
        data = _read_mem(pid, readfds, (nfds + 7) // 8)
        if data is None:
            # Memory not readable (another user's or a non-dumpable process):
            # only the unambiguous case, a select on fd 0 alone.
            return nfds == 1 and _is_tty(_fd_target(pid, 0), tty)
        fds = [i for i in range(nfds) if data[i // 8] >> (i % 8) & 1]
        return _only_tty(pid, fds, tty)
    if nr in _POLLS:
        ptr, nfds = args[0], args[1]
        if nfds <= 0 or nfds > 1024:
            return False
        data = _read_mem(pid, ptr, 8 * nfds)
        if data is None:
            return False
        fds = []
        for i in range(nfds):
            fd, events, _ = struct.unpack_from("iHH", data, 8 * i)
            if fd >= 0 and events & _POLLIN:
                fds.append(fd)
        return _only_tty(pid, fds, tty)
    if nr in _EPOLLS:
        return _only_tty(pid, _epoll_fds(pid, args[0]), tty)
    return False


def _epoll_fds(pid: int, epfd: int) -> list[int]:
    """Descriptors registered for input in an epoll instance (from fdinfo)."""
    out: list[int] = []
    try:
        with open(f"/proc/{pid}/fdinfo/{epfd}") as f:
            for line in f:
                if line.startswith("tfd:"):
                    parts = line.split()
                    fd = int(parts[1])
                    events = int(parts[3], 16) if len(parts) > 3 and parts[2] == "events:" else _EPOLLIN
                    if events & _EPOLLIN:
                        out.append(fd)
    except (OSError, ValueError, IndexError):
        return []
    return out


def _only_tty(pid: int, fds: list[int], tty: str | None) -> bool:
    targets = [_fd_target(pid, fd) for fd in fds]
    if not any(_is_tty(t, tty) for t in targets):
        return False
    others = [t for t in targets if not _is_tty(t, tty)]
    if any(t is not None and t.startswith("pipe:") for t in others):
        own = _self_pipes(pid)
        others = [t for t in others if t not in own]
    return not any(_is_other_input(t) for t in others)


def _self_pipes(pid: int) -> set[str]:
    """Pipes the process holds both ends of: an event loop's wake-up pipe
    (libuv's signal pipe in ``node``), which brings no input from outside."""
    seen: dict[str, int] = {}
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return set()
    for name in names:
        target = _fd_target(pid, int(name))
        if target and target.startswith("pipe:"):
            seen[target] = seen.get(target, 0) + 1
    return {t for t, n in seen.items() if n > 1}


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            continue
    return out


def tty_path(shell_pid: int) -> str | None:
    """The shell's terminal device (``/dev/pts/N``), from its fds 0-2."""
    for fd in (0, 1, 2):
        target = _fd_target(shell_pid, fd)
        if target and target.startswith("/dev/pts/"):
            return target
    return None


def tty_waiter(shell_pid: int, fg_pgrp: int, tty: str | None) -> int | None:
    """A process of foreground group ``fg_pgrp`` below the shell blocked
    waiting for the terminal ``tty`` and nothing else (see
    :func:`_waits_on_tty`), or None."""
    if not (_READS or _SELECTS or _POLLS or _EPOLLS):
        return None
    queue, seen = _children(shell_pid), 0
    while queue and seen < 256:
        pid = queue.pop(0)
        seen += 1
        try:
            in_group = os.getpgid(pid) == fg_pgrp
        except OSError:
            continue
        if in_group and _waits_on_tty(pid, tty):
            return pid
        queue.extend(_children(pid))
    return None


# Defined above before ``procs`` is imported: ``procs`` imports
# ``tty_waiter`` and ``tty_path`` from here while it loads.
from ..procs import PROCFS as _P  # noqa: E402

alive = _P["alive"]
children = _P["children"]
command_launched = _P["command_launched"]
command_name = _P["command_name"]
cwd = _P["cwd"]
descendants = _P["descendants"]
identity = _P["identity"]
input_state = _P["input_state"]
sigint_taken = _P["sigint_taken"]
tagged = _P["tagged"]
terminal_reader = _P["terminal_reader"]
