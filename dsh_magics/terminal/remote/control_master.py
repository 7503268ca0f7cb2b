"""The engine's own ssh connection of one ``ssh://`` terminal started with
``login=False`` (a login start runs no remote command and has no master:
``Target.starts_login_shell``; its ssh log is read through this class too):
a control master holding a socket in a private directory. The terminal's own ssh is
that master (``ControlMaster=yes``, ``ControlPersist=no``): it connects,
authenticates, listens on the socket and carries the terminal's session
itself, with no daemon and no mux hop for the terminal's bytes. The side
channel's ``sh`` is a second session over it, so a probe is one round trip
on a session that is already open (docs/remote.md, "Prompts and
passwords").

Who owns the master: the engine does (it is the terminal's ssh, a child on
the terminal's PTY), so it ends with the terminal (``close``, the reader's
failure) and with the engine's process (``PR_SET_PDEATHSIG`` and the PTY's
hang-up), and nothing of it outlives a killed engine
(tests/remote/test_control_master.py).

An ssh master stays up while any session over it is open, also once its own
session (the terminal's) has ended. So the remote bash runs under a wrapper
that prints an in-band end-of-shell marker when bash returns
(``ssh_start.wrapped_shell``), and the engine then closes the side channel:
the master has no session left and exits, and the terminal ends as any
client's end (remote_terminal.py). Limits: docs/remote.md ("The engine's ssh
connection").

Before: in session 33 the terminal's ssh started a daemon master
(``ControlPersist=5``) and went on as a mux client of it, a fork and one more
process hop on every byte, and up to 5 s a master could outlive a killed
engine; in session 32 and earlier the engine started the master itself
(``ssh -N``) and the terminal's ssh after it (benchmarks/README.md,
``bench_fanout.py``). Before that, the terminal's own ssh was the master
with no end-of-shell marker; while the side channel's session was open it
outlived the remote shell (tests/remote/test_remote_prompts.py::
test_ssh_exit_ends_the_terminal_with_the_side_channel_open)."""

from __future__ import annotations

import os
import socket
import struct

from .connection import last_words
from .targets import CONTROL_LOG, CONTROL_SOCKET

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
    log, and its pid as it answers on its socket. ``ready`` marks the end of
    start-up in the log."""

    def __init__(self, control_dir: str) -> None:
        self.control_dir = control_dir
        self.socket = control_path(control_dir)
        self.log = log_path(control_dir)
        self._logged_at_ready = 0  # what the log held once the terminal's shell answered

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
