"""The portable process layer: psutil, and ``ps`` for wait channels.

psutil answers most questions on every desktop platform (children, parent,
environment, cwd, executable, argv, number of open descriptors). It does not
say *what a sleeping process waits on*, and without ``/proc/<pid>/syscall``
that is the only way to tell a process blocked reading the terminal from one
that is merely quiet. ``ps -o wchan=`` gives it: the kernel's sleep channel,
``ttyin`` on macOS and the BSDs for a terminal read, ``wait`` for
``wait4``; on Linux the function the process sleeps in (``wait_woken`` or
``n_tty_read`` for a terminal read, ``do_wait`` for ``wait4``).

Weaker than ``procfs`` in two places (docs/portability.md has the details):

- On Linux ``wait_woken`` also covers a blocked TCP or inotify read, so a
  quiet foreground program waiting on the network can be named as waiting
  for terminal input (a note only; nothing is typed). macOS's ``ttyin`` is
  exact.
- Whether the shell reads its *own* input or a job's ``read x </dev/tty``
  cannot be asked with ``kcmp``. A job runs inside ``eval`` whose three
  redirections (stdin, stdout, stderr) make bash hold a saved copy of each
  until the job ends, so during any job the shell has at least three more
  descriptors open than at top level. The top-level count is noted when
  the shell is first seen ready (its first ``identity``, taken while it
  sleeps at its prompt) and lowered whenever fewer are seen while it reads
  the terminal.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Collection

try:
    import psutil  # type: ignore[import-untyped]
except ImportError as e:  # pragma: no cover - psutil is installed where tests run
    raise ImportError(
        "dsh-magics needs psutil where /proc is missing (or with DSH_MAGICS_PROCFS=0): "
        "pip install psutil"
    ) from e

from .layer import BUSY_OR_UNKNOWN, TOKEN_VAR, TOP_LEVEL, TTY_READ_ELSEWHERE

#: Sleep channels of a process blocked reading a terminal.
TTY_READ_WCHANS = frozenset({"ttyin", "n_tty_read", "wait_woken"})
#: Sleep channels of a process blocked in ``wait4`` / ``waitpid``.
WAIT_WCHANS = frozenset({"wait", "do_wait", "kernel_wait4"})
#: Descriptors bash saves while a job's ``eval`` runs with its stdin, stdout
#: and stderr redirected (pinned by tests/portable/test_portable_layer.py::
#: test_input_state_tells_top_level_from_a_jobs_tty_read).
EVAL_SAVED_FDS = 3
_MAX_SCAN = 256

# (pid, start time) -> open descriptors of that shell at top level.
_top_level_fds: dict[tuple[int, float], int] = {}
_identified: set[tuple[int, float]] = set()  # shells whose first identity was taken


def _ps(args: list[str]) -> str | None:
    """What ``ps ARGS`` prints (C locale), or None if it cannot be run."""
    try:
        return subprocess.run(
            ["ps", *args],
            capture_output=True,
            text=True,
            errors="replace",
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"},
            timeout=5,
            check=False,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None


def wchans(pids: list[int]) -> dict[int, str]:
    """Wait channel of each pid (``-`` when running), from one ``ps``.
    Linux suffixes such as ``.constprop.0`` are dropped. Empty if ``ps``
    cannot be run."""
    return {pid: wchan for pid, (wchan, _tty) in _wchans_and_ttys(pids).items()}


def _wchans_and_ttys(pids: list[int]) -> dict[int, tuple[str, str | None]]:
    """Wait channel (as :func:`wchans`) and controlling terminal (as
    :func:`_tty_of`) of each pid, from one ``ps``."""
    if not pids:
        return {}
    # The wait channel last: ps cuts a column other than the last to its
    # default width (``do_wai`` for ``do_wait``).
    out = _ps(["-o", "pid=", "-o", "tty=", "-o", "wchan=", "-p", ",".join(str(p) for p in pids)])
    if out is None:
        return {}
    found: dict[int, tuple[str, str | None]] = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0].isdigit():
            found[int(parts[0])] = (parts[2].split(".", 1)[0], _tty_path(parts[1]))
    return found


def _tty_path(name: str) -> str | None:
    """``ps``'s terminal column as a path (None for no terminal)."""
    if not name or name in ("?", "??"):
        return None
    return name if name.startswith("/") else "/dev/" + name


def _child_map() -> dict[int, list[int]]:
    # psutil's own parent map (what Process.children uses) is one pass
    # over the process table, 3-4x faster than iterating Process objects;
    # it is not public API, so fall back if a release drops it.
    ppids = getattr(psutil, "_ppid_map", None)
    pairs: dict[int, int | None]
    try:
        pairs = ppids() if ppids is not None else {}
    except Exception:  # noqa: BLE001 - fall back to the public way
        pairs = {}
    if not pairs:
        pairs = {p.pid: p.info.get("ppid") for p in psutil.process_iter(["ppid"])}
    tree: dict[int, list[int]] = {}
    for pid, ppid in pairs.items():
        if ppid is not None:
            tree.setdefault(ppid, []).append(pid)
    return tree


def descendants(root: int) -> list[int]:
    tree = _child_map()
    out: list[int] = []
    queue = [root]
    while queue:
        for child in tree.get(queue.pop(0), ()):
            if child not in out and child != root:
                out.append(child)
                queue.append(child)
    return out


def children(pid: int) -> list[int]:
    try:
        return [c.pid for c in psutil.Process(pid).children()]
    except psutil.Error:
        return []


def tagged(token: str) -> list[int]:
    me = os.getpid()
    out = []
    for proc in psutil.process_iter():
        if proc.pid == me:
            continue
        try:
            env = proc.environ()
        except (psutil.Error, OSError):
            continue
        if env.get(TOKEN_VAR) == token:
            out.append(proc.pid)
    return out


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
    except psutil.NoSuchProcess:  # includes ZombieProcess
        return False
    except psutil.AccessDenied:
        return True


def executable(pid: int) -> str | None:
    try:
        return str(psutil.Process(pid).exe())
    except (psutil.Error, OSError):
        return None


def identity(pid: int) -> tuple[str, bytes] | None:
    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            exe = proc.exe()
            argv = "\0".join(proc.cmdline()).encode()
            key = (pid, proc.create_time())
    except (psutil.Error, OSError):
        return None
    if key not in _identified:
        _identified.add(key)
        _note_top_level(proc, key)
    return exe, argv


def _note_top_level(proc: psutil.Process, key: tuple[int, float]) -> None:
    """Count the shell's descriptors at its prompt (its first identity is
    taken when it has answered the ready probe). The probe's ``printf``
    briefly holds one more (its redirection's saved copy), so the count is
    taken only while the shell sleeps, before and after: nothing is typed
    then, so it sleeps in the read of its next line. A count one too high
    would let a tty job's ``read`` pass for the prompt (pinned by
    tests/portable/test_portable_layer.py::test_the_prompt_count_is_taken_at_the_prompt).
    """
    if len(_identified) >= 64:  # forget shells that are gone
        for old in [k for k in _identified if not psutil.pid_exists(k[0])]:
            _identified.discard(old)
            _top_level_fds.pop(old, None)
    deadline = time.monotonic() + 0.05
    while True:
        try:
            if proc.status() == psutil.STATUS_SLEEPING:
                fds = proc.num_fds()
                if proc.status() == psutil.STATUS_SLEEPING:
                    _top_level_fds[key] = fds
                    return
        except (psutil.Error, OSError):
            return
        if time.monotonic() >= deadline:
            return  # never settled: input_state answers BUSY_OR_UNKNOWN for it (no guess)
        time.sleep(0.0005)


def command_launched(pid: int, pgrp: int) -> bool | None:
    channel = wchans([pid]).get(pid)
    if channel is None:
        return None
    if channel not in WAIT_WCHANS:
        return False
    try:
        shell = psutil.Process(pid).cmdline()
    except psutil.Error:
        return None
    # As the /proc layer: a copy of the shell in the group counts once it
    # waits too, and what it forked is checked the same way.
    copies = [pid]
    while copies:
        found = []
        for child in children(copies.pop()):
            try:
                if os.getpgid(child) == pgrp and psutil.Process(child).cmdline() == shell:
                    found.append(child)
            except (OSError, psutil.Error):
                continue  # gone already
        channels = wchans(found)
        for child in found:
            channel = channels.get(child)
            if channel is None:
                continue  # gone already
            if channel not in WAIT_WCHANS:
                return False
            copies.append(child)
    return True


def sigint_taken(shell_pid: int, pgrp: int, copies: Collection[int] = ()) -> bool:
    """As the /proc layer, without signal masks (psutil has none): any member
    of ``pgrp`` that is a program of its own (another argv than the shell)
    may have taken the SIGINT, so the engine sends no second one. Members
    in ``copies`` (copies of the shell when it was sent) are not counted."""
    try:
        shell = psutil.Process(shell_pid).cmdline()
    except psutil.Error:
        return True
    for pid in descendants(shell_pid):
        if pid in copies:
            continue
        try:
            if os.getpgid(pid) == pgrp and psutil.Process(pid).cmdline() != shell:
                return True
        except (OSError, psutil.Error):
            continue  # gone already
    return False


def shell_copies(shell_pid: int, pgrp: int) -> list[int]:
    """As the /proc layer: members of ``pgrp`` below the shell with its argv."""
    try:
        shell = psutil.Process(shell_pid).cmdline()
    except psutil.Error:
        return []
    out = []
    for pid in descendants(shell_pid):
        try:
            if os.getpgid(pid) == pgrp and psutil.Process(pid).cmdline() == shell:
                out.append(pid)
        except (OSError, psutil.Error):
            continue  # gone already
    return out


def terminal_reader(shell_pid: int, pgrp: int) -> int | None:
    return _reader_and_tty(shell_pid, pgrp)[0]


def _reader_and_tty(shell_pid: int, pgrp: int) -> tuple[int | None, str | None]:
    """The member of ``pgrp`` below the shell blocked reading a terminal, and
    its controlling terminal, from one ``ps``."""
    tree = _child_map()
    queue, seen, members = list(tree.get(shell_pid, ())), 0, []
    while queue and seen < _MAX_SCAN:
        pid = queue.pop(0)
        seen += 1
        try:
            if os.getpgid(pid) == pgrp:
                members.append(pid)
        except OSError:
            continue
        queue.extend(tree.get(pid, ()))
    if not members:
        return None, None
    rows = _wchans_and_ttys(members)
    for pid in members:
        row = rows.get(pid)
        if row is not None and row[0] in TTY_READ_WCHANS:
            return pid, row[1]
    return None, None


def input_state(pid: int) -> str:
    if wchans([pid]).get(pid) not in TTY_READ_WCHANS:
        return BUSY_OR_UNKNOWN
    try:
        proc = psutil.Process(pid)
        key = (pid, proc.create_time())
        fds = proc.num_fds()
    except (psutil.Error, OSError):
        return BUSY_OR_UNKNOWN
    top = _top_level_fds.get(key)
    if top is None:
        return BUSY_OR_UNKNOWN  # never seen ready: no reference, never guess
    if fds < top:
        _top_level_fds[key] = top = fds
    return TOP_LEVEL if fds < top + EVAL_SAVED_FDS else TTY_READ_ELSEWHERE


def command_name(pid: int) -> str:
    try:
        return psutil.Process(pid).name() or "?"
    except psutil.Error:
        return "?"


def cwd(pid: int) -> str | None:
    try:
        return psutil.Process(pid).cwd() or None
    except (psutil.Error, OSError):
        return None


def _tty_of(pid: int) -> str | None:
    """The controlling terminal of ``pid`` from ``ps -o tty=``, as a path.
    Not psutil's ``terminal()``: it maps device numbers through a table of
    ``/dev`` it reads once per process and never again, so a terminal opened
    after that first call is None (pinned by tests/portable/
    test_portable_layer.py::test_a_reader_on_a_terminal_opened_later_is_found)."""
    return _tty_path((_ps(["-o", "tty=", "-p", str(pid)]) or "").strip())


def tty_path(shell_pid: int) -> str | None:
    """The shell's controlling terminal (:func:`_tty_of`); without the path
    the echo gate let the engine's typed line show (tests/reliability/
    test_concurrency.py::test_sixteen_busy_terminals_then_refusal_then_nothing_left
    with DSH_MAGICS_PROCFS=0)."""
    return _tty_of(shell_pid)


def tty_waiter(shell_pid: int, fg_pgrp: int, tty: str | None) -> int | None:
    """A blocked ``read`` on the terminal only (:func:`terminal_reader`), by
    a process whose controlling terminal is ``tty``. A ``select``, ``poll``
    or ``epoll`` wait (``python3 -i``, ``node``) sleeps in the same channel
    as one on a socket, so it is not reported: weaker than ``procfs``."""
    pid, own = _reader_and_tty(shell_pid, fg_pgrp)
    if pid is None or tty is None:
        return pid
    return pid if own == tty else None
