"""What a process we fork onto a PTY (the local shell, a remote target's
client) does between fork and exec.

A terminal emulator starts its shell with every signal at its default
action and none blocked. A Python process ignores SIGPIPE and SIGXFSZ, and
an ignored signal stays ignored across ``exec``; bash passes what it
inherited on to every command, so ``yes | head -1`` printed ``yes: standard
output: Broken pipe`` and ended with status 1 instead of 141 (pinned by
tests/terminal/test_child_signals.py). A host started under ``nohup``
would likewise hand its jobs an ignored SIGHUP.

This runs in the forked child of a thread that is not the main one, where
Python's ``signal.signal`` refuses to work, so libc is called directly.
"""

from __future__ import annotations

import ctypes
import signal

PR_SET_PDEATHSIG = 1
_SIG_DFL = ctypes.c_void_p(0)
# Catchable signals a terminal's shell must not inherit ignored. SIGKILL and
# SIGSTOP cannot be ignored; SIGCHLD ignored would also change wait().
_RESET = tuple(
    s for s in signal.Signals if s not in (signal.SIGKILL, signal.SIGSTOP) and s < getattr(signal, "SIGRTMIN", 32)
)


def setup(libc: ctypes.CDLL | None = None) -> None:
    """In the child: hang up when this process dies (``PR_SET_PDEATHSIG``;
    an interactive bash passes SIGHUP on to its jobs), every signal at its
    default action and none blocked. Best effort: a failure here must not
    stop the exec (the terminal still works, as before)."""
    try:
        libc = libc or ctypes.CDLL(None, use_errno=True)
    except OSError:  # no libc to call: nothing of this can be done
        return
    try:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGHUP, 0, 0, 0)
    except AttributeError:  # not Linux: no parent-death signal
        pass
    handler = libc.signal
    handler.restype = ctypes.c_void_p
    handler.argtypes = (ctypes.c_int, ctypes.c_void_p)
    for signo in _RESET:
        handler(int(signo), _SIG_DFL)
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, ())
    except (OSError, ValueError):  # no mask to clear on this platform
        pass
