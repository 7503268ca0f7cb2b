"""The engine's own ssh connection of one ``ssh://`` terminal: a control
master holding a socket in a private directory, which the terminal's own
ssh starts (``ControlMaster=yes`` with ``ControlPersist``). Once it has
authenticated, that ssh forks the master into the background and goes on as
the first session over it (a mux client); the side channel's ``sh`` is a
second session, so the terminal's ssh ends when its remote shell does,
whatever the side channel's session does, and a probe is one round trip on
a session that is already open (docs/remote.md, "Prompts and passwords").

Who owns the master: ssh does (it is a daemon, not a child of this
process). The engine ends it whenever the terminal ends (``stop``: its pid,
asked on its own socket, then a signal); if the engine's process dies
instead, the terminal's ssh is hung up with it and the side channel's ``sh``
reads the end of its input, so the master has no session left and exits
``PERSIST_S`` seconds later (tests/remote/test_control_master.py).

Before (session 32 and earlier) the engine started the master itself
(``ssh -N`` with a ``LocalCommand`` saying when its socket listened) and the
terminal's ssh after it: a second local ssh and a wait on every first
command, about half of a terminal's start (benchmarks/README.md,
``bench_fanout.py``). Before that, the terminal's own ssh was the master
without ``ControlPersist``; while any other session was open it outlived
the remote shell (tests/remote/test_remote_prompts.py::
test_ssh_exit_ends_the_terminal_with_the_side_channel_open)."""

from __future__ import annotations

import os
import signal
import socket
import struct
import threading
import time

from ..core import fdwait
from .connection import last_words
from .targets import CONTROL_LOG, CONTROL_PERSIST_S, CONTROL_SOCKET

PERSIST_S = CONTROL_PERSIST_S
STOP_WAIT_S = 2.0
ASK_TIMEOUT_S = 2.0

# ssh's multiplexing protocol (OpenSSH's PROTOCOL.mux): a hello each way,
# then requests carrying a request id.
_MUX_HELLO = 0x00000001
_MUX_VERSION = 4
_MUX_ALIVE_CHECK = 0x10000004
_MUX_ALIVE = 0x80000005


def control_path(control_dir: str) -> str:
    return os.path.join(control_dir, CONTROL_SOCKET)


def log_path(control_dir: str) -> str:
    return os.path.join(control_dir, CONTROL_LOG)


class ControlMaster:
    """The master of one terminal's connection, as the engine sees it: its
    log, and ``stop``. ``ready`` marks the end of start-up in the log."""

    def __init__(self, control_dir: str) -> None:
        self.control_dir = control_dir
        self.socket = control_path(control_dir)
        self.log = log_path(control_dir)
        self._logged_at_ready = 0  # what the log held once the terminal's shell answered
        self._lock = threading.Lock()

    def ready(self) -> None:
        """The terminal's shell answered: later words in the log are about
        the connection (``said(since_ready=True)``)."""
        self._logged_at_ready = self._log_size()

    def said(self, since_ready: bool = False) -> str:
        """ssh's last words in the log (with ``since_ready``, only what it
        said about the connection after the start: a timeout, a reset)."""
        start = self._logged_at_ready if since_ready else 0
        try:
            with open(self.log, "rb") as f:
                f.seek(max(start, self._log_size() - 4096))
                raw = f.read(4096)
        except OSError:
            return ""
        return last_words(raw)

    def _log_size(self) -> int:
        try:
            return os.path.getsize(self.log)
        except OSError:
            return 0

    def pid(self) -> int | None:
        """The master's pid, as it answers on its socket; None when nothing
        answers there (no master: it never started, or it ended)."""
        return ask_pid(self.socket, ASK_TIMEOUT_S)

    def stop(self) -> None:
        """End the master (the server hangs up every session over it) and
        wait until it is gone; again, or with no master, nothing. A master
        that does not answer on its socket has no session left (the caller
        ended the terminal's ssh first) and exits ``PERSIST_S`` later."""
        with self._lock:
            pid = self.pid()
            if pid is None or pid == os.getpid():
                return
            pidfd = _pidfd(pid)
            try:
                _end(pid, pidfd)
            finally:
                if pidfd is not None:
                    os.close(pidfd)


def _pidfd(pid: int) -> int | None:
    """A descriptor for the process (Linux): None where there are none, or
    when it is gone already; it is then signalled by pid."""
    try:
        return os.pidfd_open(pid)
    except (OSError, AttributeError):
        return None


def _end(pid: int, pidfd: int | None) -> None:
    """SIGTERM (ssh sends the server its disconnect and exits), SIGKILL after
    ``STOP_WAIT_S``. Through the pidfd when there is one: a pid alone could
    be reused once the master has exited."""

    def send(sig: signal.Signals) -> None:
        try:
            if pidfd is not None:
                signal.pidfd_send_signal(pidfd, sig)
            else:
                os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass  # the master already exited (or is not ours): nothing to end

    def gone(timeout: float) -> bool:
        if pidfd is not None:
            return bool(fdwait.readable([pidfd], timeout))  # a pidfd reads when its process exited
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
            time.sleep(0.01)
        return False

    send(signal.SIGTERM)
    if not gone(STOP_WAIT_S):
        send(signal.SIGKILL)
        gone(STOP_WAIT_S)


def ask_pid(path: str, timeout: float) -> int | None:
    """Ask the ssh master listening on ``path`` for its pid (an alive check
    of the multiplexing protocol, ``ssh -O check`` without starting ssh):
    one round trip on a local socket. None when nothing answers."""
    if not os.path.exists(path):
        return None
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(path)
            s.sendall(_packet(_MUX_HELLO, _MUX_VERSION) + _packet(_MUX_ALIVE_CHECK, 1))
            hello = _read_packet(s)
            if struct.unpack(">I", hello[:4])[0] != _MUX_HELLO:
                return None
            answer = _read_packet(s)
            kind, request, pid = struct.unpack(">III", answer[:12])
            return pid if kind == _MUX_ALIVE and request == 1 and pid > 0 else None
    except (OSError, struct.error):
        return None


def _packet(*words: int) -> bytes:
    body = b"".join(struct.pack(">I", w) for w in words)
    return struct.pack(">I", len(body)) + body


def _read_packet(s: socket.socket) -> bytes:
    size = struct.unpack(">I", _read_exactly(s, 4))[0]
    if size > 65536:
        raise OSError("not an ssh control socket")
    return _read_exactly(s, size)


def _read_exactly(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise OSError("the control socket closed")
        buf += chunk
    return buf
