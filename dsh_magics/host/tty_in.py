"""A person's keyboard handed to the host: the host reads an attached terminal's keys.

With its terminal's output (host/tty_out.py) the attach client may hand over its
input too (a second descriptor in the same ``SCM_RIGHTS`` message, ``watch``
with ``keys``). The thread of the connection that carries the stream then waits
on that terminal as well as on the socket, and a key goes from the person's
terminal to the engine's keyboard without waking the client (benchmarks/README.md,
bench_attach, session 37). The rules the client kept move here, unchanged
(docs/attach.md, "What you type"):

- the detach key: the keys before it are typed, then the client is told
  (``{"type": "keys", "what": "detach"}``) and the host reads no more;
- Ctrl-C is the engine's interrupt of the running job (``source: person``),
  never a byte;
- a read-only viewer's keys are dropped (only the detach key counts);
- the last to type sets the size: while the stream is not drawn live, the
  window's size is compared with the last screen's before a key, and the
  terminal resized to it;
- a key that fails rings the bell (``NOT_RUNNING``, ``SESSION_BUSY``) or ends
  the attach (any other error: the client is told and says it);
- the end of the terminal's input ends the attach.

The descriptor is the client's own open of its terminal (read-only,
``O_NONBLOCK``). It is read and closed only under :attr:`TtyKeys.lock`; it
may be closed by another thread (the session closed, the host stopping), and
the connection's wait then ends and looks again (host/server.py). Pinned by
tests/attach/test_handover.py.
"""

from __future__ import annotations

import fcntl
import os
import struct
import termios
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import errors

if TYPE_CHECKING:
    from ..terminal import Registry
    from ..terminal.person_keys import PersonKeys
    from .stream import ViewerStream

CTRL_C = b"\x03"

#: Keys typed in pieces of at most this many characters (a paste), as the client did.
CHUNK = 16 * 1024


class TtyKeys:
    """The keys of one person's terminal, read by the host (module docstring).
    ``tell`` sends the client one event line."""

    def __init__(
        self,
        fd: int,
        stream: ViewerStream,
        registry: Registry,
        keys: PersonKeys | None,
        detach: bytes,
        tell: Callable[[dict[str, Any]], None],
    ) -> None:
        self.fd: int | None = fd
        self.lock = threading.Lock()
        self._stream = stream
        self._registry = registry
        self._keys = keys  # None: a read-only viewer
        self._detach = detach
        self._tell = tell

    def close(self) -> None:
        with self.lock:
            fd, self.fd = self.fd, None
            if fd is not None:
                os.close(fd)

    def readable(self) -> None:
        """The terminal has input (or ended): read it and do what it says."""
        with self.lock:
            if self.fd is None:
                return
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return
            except OSError:
                data = b""
        if not data:
            self._end("closed")
            return
        keys = self._keys
        cut = data.find(self._detach)
        if cut >= 0:
            if keys is not None and cut:
                self._keys_and_interrupts(keys, data[:cut])
            self._end("detach")
            return
        if keys is None:
            return  # a viewer's keys change nothing
        if not self._stream.direct:
            self._size()  # the last to type sets the size
        if CTRL_C not in data and len(data) <= CHUNK:
            self._type(keys, data)  # the usual key
        else:
            self._keys_and_interrupts(keys, data)

    def _keys_and_interrupts(self, keys: PersonKeys, data: bytes) -> None:
        while data:
            i = data.find(CTRL_C)
            if i < 0:
                i = len(data)
            for start in range(0, i, CHUNK):
                if not self._type(keys, data[start : min(i, start + CHUNK)]):
                    return
            if i < len(data):
                try:
                    self._registry.interrupt(keys.session_id, source="person", caller=keys.caller)
                except errors.DshError as e:
                    if not self._failed(e):
                        return
            data = data[i + 1 :]

    def _type(self, keys: PersonKeys, data: bytes) -> bool:
        try:
            keys.press(data.decode("utf-8", "surrogateescape"))
        except errors.DshError as e:
            return self._failed(e)
        return True

    def _failed(self, e: errors.DshError) -> bool:
        """A key or an interrupt failed: the bell (go on), or the end (False)."""
        if isinstance(e, (errors.NotRunning, errors.SessionBusy)):  # a remote terminal at rest, or another caller's job
            if not self._stream.bell():
                self._tell({"type": "keys", "what": "bell"})  # its window is drawn: the client rings
            return True
        self._tell({"type": "keys", "what": "error", "error": {"code": e.code, "message": e.message}})
        self.close()
        return False

    def _size(self) -> None:
        with self.lock:
            if self.fd is None:
                return
            try:
                rows, cols = struct.unpack("HHHH", fcntl.ioctl(self.fd, termios.TIOCGWINSZ, b"\0" * 8))[:2]
            except OSError:
                return
        if (cols, rows) != self._stream.size and cols >= 2 and rows >= 2:
            try:
                self._registry.resize(self._stream.session_id, cols, rows)
            except errors.DshError:
                return  # its shell exited: the next key says so

    def _end(self, what: str) -> None:
        """Read no more, and tell the client why (``detach``, ``closed``)."""
        self.close()
        self._tell({"type": "keys", "what": what})


__all__ = ["TtyKeys"]
