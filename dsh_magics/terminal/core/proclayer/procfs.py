"""The ``/proc`` process layer (Linux): the process tree, tokens and
liveness, what the shell and its foreground group are doing
(``/proc/<pid>/syscall``, ``kcmp``, ``SigCgt``), and the probe of a process
waiting for typed input (``read``, ``select``, ``poll`` or ``epoll`` on the
terminal, from ``/proc/<pid>/syscall``, ``fd``, ``fdinfo`` and ``mem``)."""

from __future__ import annotations

import ctypes
import os
import signal
import struct
from collections.abc import Collection

from .layer import BUSY_OR_UNKNOWN, INPUT_FD, TOKEN_VAR, TOP_LEVEL, TTY_READ_ELSEWHERE

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
    needle = f"{TOKEN_VAR}={token}".encode()
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


_SYSCALLS = {"x86_64": (0, 312, 61), "aarch64": (63, 272, 260)}  # (read, kcmp, wait4) per machine
_READ_NR, _KCMP_NR, _WAIT4_NR = _SYSCALLS.get(os.uname().machine, (None, None, None))
_KCMP_FILE = 0
_libc: ctypes.CDLL | None = None



def executable(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None


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
    moment later reads EOF and exits 0, and the line carries on. A stage
    that stays a copy of the shell (a function or subshell: ``f`` in
    ``f | cat``) counts as started once it, too, waits in ``wait4``: it has
    set up its signals, and what it forked is checked the same way (its
    ``sleep`` has ``exec``-ed). A copy that never waits (a builtin loop)
    callers wait for only briefly. Before, every such stage waited out that
    hold and got the SIGINT on a timer, which on a loaded machine could fall
    while its ``sleep`` was still an un-``exec``-ed copy: the signal was lost
    and ``sleep`` ran on (tests/terminal/test_launch_check.py). The portable
    layer answers alike (tests/portable/test_portable_layer.py).
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
    copies = [pid]
    while copies:  # the shell, then each copy of it that waits: their children too
        for child in children(copies.pop()):
            try:
                if os.getpgid(child) != pgrp or _cmdline(child) != shell:
                    continue
                if not _in_wait4(child):
                    return False
            except OSError:
                continue  # gone already
            copies.append(child)
    return True


def _in_wait4(pid: int) -> bool:
    """``pid`` sleeps in ``wait4`` (OSError when it is gone)."""
    with open(f"/proc/{pid}/syscall", "rb") as f:
        return f.read().split(maxsplit=1)[:1] == [str(_WAIT4_NR).encode()]


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


def sigint_taken(shell_pid: int, pgrp: int, copies: Collection[int] = ()) -> bool:
    """May a member of group ``pgrp`` (below the shell) have taken a SIGINT
    just sent to it and lived on? Yes once a member is a program of its own
    (not a forked copy of the shell: another argv) with a SIGINT handler.
    A copy of the shell loses the signal when it ``exec``-s; a member with no
    handler dies of it, and one more cannot make a second catch. A member
    that was a copy when it was sent (in ``copies``) is not counted: a
    handler it has now came with an ``exec`` after the signal."""
    try:
        shell = _cmdline(shell_pid)
    except OSError:
        return True
    for pid in descendants(shell_pid):
        try:
            if pid in copies or os.getpgid(pid) != pgrp or _cmdline(pid) == shell:
                continue
        except OSError:
            continue  # gone already
        if _catches_sigint(pid):
            return True
    return False


def shell_copies(shell_pid: int, pgrp: int) -> list[int]:
    """Members of ``pgrp`` below the shell that are still forked copies of
    it (its argv: not ``exec``-ed yet, or a subshell)."""
    try:
        shell = _cmdline(shell_pid)
    except OSError:
        return []
    out = []
    for pid in descendants(shell_pid):
        try:
            if os.getpgid(pid) == pgrp and _cmdline(pid) == shell:
                out.append(pid)
        except OSError:
            continue  # gone already
    return out


def command_name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip() or "?"
    except OSError:
        return "?"


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
    except (OSError, AttributeError):  # no libc or no syscall(): never guess
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
