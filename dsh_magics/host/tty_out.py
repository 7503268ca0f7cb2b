"""A person's terminal handed to the host: the host writes a live viewer's bytes to it.

``dsh-magics attach`` passes its terminal's output (``SCM_RIGHTS`` on the
host's Unix socket, :func:`receive`) when its stream starts; while the viewer
draws live, the terminal's reader thread writes each piece straight to it,
and the attach client is off the echo's way (docs/attach.md, "How output
travels"; benchmarks/README.md, bench_attach, session 37).

:class:`TtyOut` is that descriptor and what waits to be written to it. Its
rules:

- A write never blocks: the descriptor is the client's own open of its
  terminal with ``O_NONBLOCK`` (that flag is per open, so the person's shell
  never sees it). What the terminal does not take at once waits here and a
  writer thread of its own (started at the first such backlog) writes it when
  the terminal takes more; the reader thread and other viewers go on.
- :meth:`stop` drops what waits (the stream sends a screen instead) and writes
  nothing more until :meth:`put` after :meth:`go`. Every write happens under
  one lock, so once :meth:`stop` or :meth:`close` returns no write of the host
  is under way or to come: the client may paint. A piece cut by a partial
  write is not finished then; the client's next write starts with CAN
  (``\\x18``), which ends any escape sequence the terminal was in.
- :meth:`close` closes the host's copy of the descriptor at once (under the
  lock: a write can never land on a number reused by another file).

Pinned by tests/attach/test_handover.py.
"""

from __future__ import annotations

import fcntl
import logging
import os
import select
import socket
import struct
import termios
import threading

from ..terminal.core import fdwait

log = logging.getLogger("dsh_magics.host")

#: How long the host waits for the descriptor after saying "send it".
RECEIVE_S = 5.0

#: The one byte that carries the descriptor.
FD_BYTE = b"\0"


def receive(sock: socket.socket) -> list[int]:
    """The terminal descriptors a client sends right after the ``watch`` reply
    that asked for them (its output, then its input if it hands its keys
    over too): all terminals, or none (nothing came in time, or not
    terminals: the stream then goes as ``bytes`` events)."""
    try:
        if not fdwait.readable([sock.fileno()], RECEIVE_S):
            return []
        data, fds = _recv_fds(sock)
    except OSError as e:
        log.info("no terminal received: %s", e)
        return []
    if data == FD_BYTE and 1 <= len(fds) <= 2 and all(os.isatty(fd) for fd in fds):
        return list(fds)
    for fd in fds:
        os.close(fd)
    return []


#: Received descriptors close-on-exec at once (Linux), so no child the host starts gets them.
_CLOEXEC = getattr(socket, "MSG_CMSG_CLOEXEC", 0)


def _recv_fds(sock: socket.socket) -> tuple[bytes, list[int]]:
    """One byte and up to four descriptors, close-on-exec. Not
    ``socket.recv_fds``: before Python 3.12 it drops its ``flags`` argument,
    so ``MSG_CMSG_CLOEXEC`` never reached the kernel and a shell the host
    started while it held the terminal got a copy (pinned by
    tests/attach/test_handover_edges.py::test_no_child_of_the_host_gets_the_persons_terminal)."""
    room = socket.CMSG_SPACE(4 * struct.calcsize("i"))
    data, ancdata, _flags, _addr = sock.recvmsg(1, room, socket.MSG_DONTWAIT | _CLOEXEC)
    fds: list[int] = []
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            whole = len(payload) - len(payload) % struct.calcsize("i")
            fds += struct.unpack(f"{whole // struct.calcsize('i')}i", payload[:whole])
    if not _CLOEXEC:  # no atomic flag here: set it now (before any other thread can fork, as a rule)
        for fd in fds:
            os.set_inheritable(fd, False)
    return data, fds


class TtyOut:
    """The host's copy of a person's terminal (module docstring)."""

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._waiting: list[bytes] = []  # what the terminal did not take yet, in order
        self.queued = 0  # bytes in _waiting (MAX_BEHIND, host/stream.py)
        self._stopped = False
        self._writer: threading.Thread | None = None

    @property
    def open(self) -> bool:
        return self._fd is not None

    def size(self) -> tuple[int, int] | None:
        """(cols, rows) of the person's window; None once closed."""
        with self._lock:
            if self._fd is None:
                return None
            try:
                rows, cols = struct.unpack("HHHH", fcntl.ioctl(self._fd, termios.TIOCGWINSZ, b"\0" * 8))[:2]
            except OSError:
                return None
        return cols, rows

    def put(self, data: bytes) -> None:
        """Write ``data`` now as far as the terminal takes it; the rest waits
        for the writer thread. Never blocks for the terminal."""
        with self._lock:
            fd = self._fd
            if fd is None or self._stopped:
                return
            if not self._waiting:
                try:
                    n = os.write(fd, data)
                except BlockingIOError:
                    n = 0
                except OSError:
                    self._close_locked()  # the terminal is gone (hung up)
                    return
                if n == len(data):
                    return
                data = data[n:]
            self._waiting.append(data)
            self.queued += len(data)
            if self._writer is None:
                self._writer = threading.Thread(target=self._write_loop, name="dsh-host-tty", daemon=True)
                self._writer.start()
            self._ready.notify()

    def stop(self) -> list[bytes]:
        """Drop what waits and write nothing until :meth:`go`; what was dropped
        (never written: its bells ring after the screen, host/stream.py)."""
        with self._lock:
            self._stopped = True
            dropped, self._waiting = self._waiting, []
            self.queued = 0
        return dropped

    def go(self) -> None:
        with self._lock:
            self._stopped = False

    def close(self) -> None:
        """Close the host's copy now; nothing is written after this returns."""
        with self._lock:
            self._close_locked()

    def _close_locked(self) -> None:
        fd, self._fd = self._fd, None
        self._waiting.clear()
        self.queued = 0
        self._ready.notify_all()
        if fd is not None:
            os.close(fd)

    def _write_loop(self) -> None:
        """What the terminal did not take at once, as it takes more."""
        while True:
            with self._lock:
                while self._fd is not None and not self._waiting:
                    self._ready.wait()
                fd = self._fd
                if fd is None:
                    self._writer = None
                    return
            poll = select.poll()
            poll.register(fd, select.POLLOUT)
            poll.poll(500)  # (the lock is not held: put and close go on; closed meanwhile: looked at below)
            with self._lock:
                if self._fd is None or not self._waiting:
                    continue
                data = self._waiting[0]
                try:
                    n = os.write(self._fd, data)
                except BlockingIOError:
                    continue
                except OSError:
                    self._close_locked()
                    continue
                self.queued -= n
                if n == len(data):
                    self._waiting.pop(0)
                else:
                    self._waiting[0] = data[n:]


__all__ = ["FD_BYTE", "TtyOut", "receive"]
