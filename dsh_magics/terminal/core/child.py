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

Where it can, the child is not forked at all (:class:`Launcher`: the same
set-up as ``posix_spawn`` attributes and a small exec'd helper).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
from typing import Any

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



# posix_spawn's attribute flags (glibc and musl agree on these).
_SETSIGDEF, _SETSIGMASK, _SETSID = 0x04, 0x08, 0x80
_OPAQUE = 1024  # bytes for posix_spawnattr_t / posix_spawn_file_actions_t (glibc's are 336 and 80)
_SIGSET_WORDS = 16  # sigset_t as the C library has it: 1024 bits


class Launcher:
    """A child started without forking this interpreter: the C library's
    ``posix_spawn`` (a ``vfork`` and an ``exec``) of util-linux's ``setpriv
    --pdeathsig HUP``, which sets the death signal and execs the command.

    Why it exists: a fork copies the page tables of the whole Python
    process, every page either side writes afterwards is copied once more
    (copy on write), and the forked child runs ptyprocess's and
    :func:`setup`'s Python before its ``exec``. A group's 16 ssh clients
    paid that 16 times, on the cores its connections need (issue 35 §5;
    benchmarks/README.md, ``bench_fanout.py``, session 35).

    What the child gets is what :func:`setup` and ptyprocess give a forked
    one: a session of its own (``setsid``) whose controlling terminal is the
    PTY (its slave opened by name after ``setsid``, without ``O_NOCTTY``) on
    fds 0-2; every signal at its default action and none blocked; SIGHUP
    when the spawning thread ends (``setpriv``, in the spawned process
    before it execs the command); no descriptor above 2. ``os.posix_spawn``
    cannot give the first of those: glibc sets its two internal signals (32
    and 33) to ignored in the child unless they are in the attribute's
    default set, and ``sigaddset``, which Python fills that set with,
    refuses them; so the attribute is filled here, through ctypes.

    ``setpriv`` arms the death signal a moment after the spawn returns
    (the forked child had it before ``exec``), and always before the command
    runs; an engine that dies within that moment leaves the command to the
    PTY's hang-up (its session's controlling terminal), as every client is.

    It does not change directory: a spawn with a ``cwd`` (a local shell)
    forks as before, and so does every spawn where the C library or
    ``setpriv`` lacks what this needs (``usable`` is False).
    Pinned by tests/terminal/test_spawn.py."""

    def __init__(self) -> None:
        self._ready: bool | None = None
        self._libc: Any = None
        self._helper: bytes = b""
        self._closefrom: Any = None

    def usable(self, cwd: str | None) -> bool:
        if self._ready is None:
            self._ready = self._look()
        return cwd is None and self._ready

    def _look(self) -> bool:
        """The C library's posix_spawn and a ``setpriv`` that has ``--pdeathsig`` (util-linux 2.33+)."""
        helper = shutil.which("setpriv")
        if helper is None or not hasattr(os, "openpty"):
            return False
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            for name in ("posix_spawn", "posix_spawnattr_init", "posix_spawnattr_setflags",
                         "posix_spawnattr_setsigdefault", "posix_spawnattr_setsigmask", "posix_spawnattr_destroy",
                         "posix_spawn_file_actions_init", "posix_spawn_file_actions_addopen",
                         "posix_spawn_file_actions_adddup2", "posix_spawn_file_actions_addclose",
                         "posix_spawn_file_actions_destroy"):  # fmt: skip
                getattr(libc, name)
            usage = subprocess.run([helper, "--help"], capture_output=True, text=True, timeout=10).stdout
        except (OSError, AttributeError, subprocess.SubprocessError):  # no such C library or helper here
            return False
        if "--pdeathsig" not in usage:
            return False
        self._libc, self._helper = libc, os.fsencode(helper)
        self._closefrom = getattr(libc, "posix_spawn_file_actions_addclosefrom_np", None)  # glibc 2.34+
        return self._closefrom is not None or os.path.isdir("/proc/self/fd")  # (else no way to find them)

    def spawn(self, command: str, argv: list[str], env: dict[str, str], tty: str) -> int:
        """Start ``command`` (a path) with ``argv`` on the terminal ``tty``
        (the slave's path, kept open by the caller until this returns);
        returns its pid. OSError when ``posix_spawn`` fails."""
        libc = self._libc
        attr, actions = ctypes.create_string_buffer(_OPAQUE), ctypes.create_string_buffer(_OPAQUE)
        everything, nothing = (ctypes.c_ulong * _SIGSET_WORDS)(), (ctypes.c_ulong * _SIGSET_WORDS)()
        bits = ctypes.sizeof(ctypes.c_ulong) * 8
        for signo in range(1, signal.NSIG):
            if signo not in (signal.SIGKILL, signal.SIGSTOP):
                everything[(signo - 1) // bits] |= 1 << ((signo - 1) % bits)
        words = [self._helper, b"--pdeathsig", b"HUP", b"--", os.fsencode(command), *map(os.fsencode, argv[1:])]
        args = (ctypes.c_char_p * (len(words) + 1))(*words, None)
        pairs = [os.fsencode(k) + b"=" + os.fsencode(v) for k, v in env.items()]
        envp = (ctypes.c_char_p * (len(pairs) + 1))(*pairs, None)
        path = os.fsencode(tty)  # (kept alive to the spawn: an older C library keeps the pointer)
        pid = ctypes.c_int()
        libc.posix_spawnattr_init(attr)
        libc.posix_spawn_file_actions_init(actions)
        try:
            _check(libc.posix_spawnattr_setflags(attr, ctypes.c_short(_SETSIGDEF | _SETSIGMASK | _SETSID)))
            _check(libc.posix_spawnattr_setsigdefault(attr, everything))
            _check(libc.posix_spawnattr_setsigmask(attr, nothing))
            _check(libc.posix_spawn_file_actions_addopen(actions, 0, path, os.O_RDWR, 0))
            _check(libc.posix_spawn_file_actions_adddup2(actions, 0, 1))
            _check(libc.posix_spawn_file_actions_adddup2(actions, 0, 2))
            if self._closefrom is not None:
                _check(self._closefrom(actions, 3))
            else:  # Python's own descriptors are close-on-exec; any other one is closed
                for fd in _inheritable():
                    _check(libc.posix_spawn_file_actions_addclose(actions, fd))
            _check(libc.posix_spawn(ctypes.byref(pid), self._helper, actions, attr, args, envp))
        finally:
            libc.posix_spawn_file_actions_destroy(actions)
            libc.posix_spawnattr_destroy(attr)
        return pid.value


def _check(rc: int) -> None:
    if rc != 0:  # the posix_spawn functions return the error number
        raise OSError(rc, os.strerror(rc))


def _inheritable() -> list[int]:
    """Our descriptors above 2 that an ``exec`` would not close."""
    found = []
    for name in os.listdir("/proc/self/fd"):
        try:
            if int(name) > 2 and os.get_inheritable(int(name)):
                found.append(int(name))
        except OSError:  # the listing's own descriptor, closed by now
            continue
    return found


launcher = Launcher()
