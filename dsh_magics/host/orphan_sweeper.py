"""The host's parent: a child subreaper that kills whatever outlives the host.

Why a SIGKILLed host still leaves no orphans: docs/host.md, "Internals".
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import time

from ..terminal.core import procs, watchdog
from ..terminal.core.boot import boot_argv

_PR_SET_CHILD_SUBREAPER = 36

WATCHDOG_WAIT_S = 25.0
"""How long the host's terminal watchdogs get to finish before the sweep
(a container's end command takes up to ``watchdog.END_TIMEOUT_S``; the
watchdog runs the end commands after every kill and removal, so a sweep
that comes first cuts off only end commands)."""


def become_subreaper() -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def split(close_fds: tuple[int | None, ...] = ()) -> None:
    """Fork: the child returns and goes on to serve; the parent becomes the
    reaper (it execs a fresh interpreter running :func:`main`, so ``ps``
    shows ``dsh_magics.host reap``; started as the host is, in its cwd, the
    user's home: terminal/core/boot.py) and never returns. Must run before
    any thread is started."""
    become_subreaper()  # before the fork, so no orphan can slip past
    pid = os.fork()
    if pid == 0:
        return
    for fd in close_fds:
        if fd is not None:
            try:
                os.close(fd)  # the start lock and the ready pipe belong to the host
            except OSError:
                pass  # not open in this process
    argv = boot_argv("dsh_magics.host", "reap", "--pid", str(pid))
    try:
        os.execv(argv[0], argv)
    except OSError:
        os._exit(reap(pid))


def reap(host_pid: int) -> int:
    """Wait for the host, then clear out everything below us. Returns the
    exit status to use (the host's)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the host
    signal.signal(signal.SIGHUP, signal.SIG_IGN)

    reaped = False

    def forward(signum: int, frame: object) -> None:
        if reaped:
            return  # (its pid may be another process's by now)
        try:
            os.kill(host_pid, signum)
        except ProcessLookupError:
            pass  # the host has exited: nothing to forward to

    signal.signal(signal.SIGTERM, forward)
    code = 1
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except InterruptedError:
            continue
        except ChildProcessError:
            reaped = True
            break  # no host (it never started, or was reaped elsewhere)
        if pid == host_pid:
            code = os.waitstatus_to_exitcode(status)
            reaped = True
            break
        # An orphan that exited while the host ran: reaped, nothing else.
    _let_watchdogs_finish(host_pid, WATCHDOG_WAIT_S)
    _clear_out()
    return code if code >= 0 else 128 - code


def _let_watchdogs_finish(host_pid: int, deadline: float) -> None:
    """The host's terminal watchdog, orphaned to us with the host, sees its
    end too: it ends the terminals' processes, removes their private
    directories (scratch, ``dsh-ssh-*``) and runs their end commands (a
    container's shell). Hung up with everything else, it died before that
    and left them (tests/host/test_litter.py::
    test_a_killed_hosts_terminals_leave_no_directory_or_process). Only the
    host's: one of a process started in a terminal waits for an owner
    that may still live. Orphaned with the host, it is our child: waited
    for on its pidfd, then reaped; looked for again until none is left."""
    end = time.monotonic() + deadline
    while True:
        _reap_children()
        dogs = [p for p in procs.descendants(os.getpid()) if watchdog.is_watchdog(p, host_pid)]
        if not dogs or time.monotonic() >= end:
            return
        for pid in dogs:
            procs.exited_within(pid, max(0.0, end - time.monotonic()))


def _clear_out(deadline: float = 10.0) -> None:
    """Hang up and kill every descendant until none is left. Orphans keep
    arriving for a moment (shells exiting on their hangup leave their jobs
    behind), hence the loop."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        below = procs.descendants(os.getpid())
        if below:
            procs.kill_tree(os.getpid(), grace=0.5)
        _reap_children()
        if not below and not procs.descendants(os.getpid()):
            return
        time.sleep(0.02)


def _reap_children() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        except OSError as e:
            if e.errno == errno.EINTR:
                continue
            return
        if pid == 0:
            return


def main(host_pid: int) -> int:
    return reap(host_pid)
