"""A person's keyboard handed to the host: the host reads an attached terminal's keys.

With its terminal's output (host/tty_out.py) the attach client may hand over its
input too (a second descriptor in the same ``SCM_RIGHTS`` message, ``watch``
with ``keys``). A thread of its own (:meth:`TtyKeys.start`) then reads that
terminal, and a key goes from the person's terminal to the engine's keyboard
without waking the client (benchmarks/README.md,
bench_attach, session 37). The rules the client kept move here, unchanged
(docs/attach.md, "What you type"):

- the detach key: the keys before it are queued for typing, the host reads
  no more and the client is told (``{"type": "keys", "what": "detach"}``) at
  once, whatever the typing waits for;
- Ctrl-C is the engine's interrupt of the running job (``source: person``),
  never a byte; it is sent at once, and the typing still queued is dropped
  (as a terminal's line discipline flushes its input at an interrupt);
- a read-only viewer's keys are dropped (only the detach key counts);
- the last to type sets the size: while the stream is not drawn live, the
  window's size is compared with the last screen's before a key, and the
  terminal resized to it;
- a key that fails rings the bell (``NOT_RUNNING``, ``SESSION_BUSY``) or ends
  the attach (any other error: the client is told and says it);
- the end of the terminal's input ends the attach.

Two threads, so that no key waits for the socket and the socket for no key:
the reader finds the detach key and Ctrl-C as it reads, and queues what is
typed for the typist, whose ``press`` may wait (a paste into a job that does
not read, the person's prompt being opened: up to 5 s); the connection's
thread serves only its socket, so ``tty_release`` is answered while a key
waits. The descriptor is the client's own open of its terminal (read-only,
``O_NONBLOCK``); it is read and closed only under :attr:`TtyKeys.lock`, so
once :meth:`TtyKeys.close` returned (the client's ``tty_release``, its
connection's end, the session closed, the host stopping) the host reads
nothing more of it. Closing a descriptor does not end a ``select`` on it in
another thread (Linux): :meth:`TtyKeys.close` writes a byte to a pipe the
reader waits on too. Pinned by tests/attach/test_handover.py.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import errors
from ..terminal.core import fdwait

if TYPE_CHECKING:
    from ..terminal import Registry
    from ..terminal.person_keys import PersonKeys
    from .stream import ViewerStream

CTRL_C = b"\x03"

#: Keys typed in pieces of at most this many characters (a paste), as the client did.
CHUNK = 16 * 1024


class TtyKeys:
    """The keys of one person's terminal, read by the host (module docstring).
    ``tell`` sends the client one event line. :meth:`start` starts the reader
    thread."""

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
        self._wake_r = self._wake_w = -1  # close() writes a byte there: the reader's wait ends (start)
        self._typing: deque[bytes] = deque()  # keys read, not yet typed (the typist's)
        self._typed = threading.Condition()
        self._reading = True  # False once the reader thread ended: the typist ends when it is done
        self._typist: threading.Thread | None = None

    def start(self) -> None:
        """The reader thread, and the pipe that wakes it; nothing if closed
        before (a connection gone during the hand-over)."""
        with self.lock:
            if self.fd is None:
                return
            self._wake_r, self._wake_w = os.pipe()
        threading.Thread(target=self._read_loop, name="dsh-host-keys", daemon=True).start()

    def close(self) -> None:
        """Read no more: the descriptor is closed now, and the reader thread woken
        (a ``select`` does not end when another thread closes its descriptor)."""
        with self.lock:
            fd, self.fd = self.fd, None
            if fd is None:
                return
            os.close(fd)
            if self._wake_w >= 0:
                try:
                    os.write(self._wake_w, b"x")
                except OSError:
                    pass  # a byte already waits there: it is woken anyway

    # -- the reader thread ------------------------------------------------------
    def _read_loop(self) -> None:
        try:
            while True:
                with self.lock:
                    fd = self.fd
                if fd is None:
                    return
                try:
                    fdwait.readable([fd, self._wake_r], None)
                except (OSError, ValueError):
                    continue  # closed under the wait: looked at above
                with self.lock:
                    if self.fd is None:
                        return
                    try:
                        data = os.read(self.fd, 65536)
                    except BlockingIOError:
                        continue
                    except OSError:
                        data = b""
                self._got(data)
        finally:
            with self.lock:
                for wfd in (self._wake_r, self._wake_w):
                    os.close(wfd)
                self._wake_r = self._wake_w = -1
            with self._typed:
                self._reading = False
                self._typed.notify()

    def _got(self, data: bytes) -> None:
        """What the terminal gave, on the reader thread: the detach key and
        Ctrl-C act now; what is typed goes to the typist."""
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
        if keys is not None:
            self._keys_and_interrupts(keys, data)
        # (a viewer's keys change nothing)

    def _keys_and_interrupts(self, keys: PersonKeys, data: bytes) -> None:
        i = data.rfind(CTRL_C)
        if i >= 0:
            # The engine's interrupt, at once: the typing that waits is dropped
            # (as a terminal's line discipline flushes its input at Ctrl-C).
            with self._typed:
                self._typing.clear()
            try:
                self._registry.interrupt(keys.session_id, source="person", caller=keys.caller)
            except errors.DshError as e:
                if not self._failed(e):
                    return
            data = data[i + 1 :]
        if data:
            with self._typed:
                self._typing.append(data)
                self._typed.notify()
                if self._typist is None:
                    self._typist = threading.Thread(target=self._type_loop, name="dsh-host-typist", daemon=True)
                    self._typist.start()

    # -- the typist thread -------------------------------------------------------
    def _type_loop(self) -> None:
        """Types what the reader queued, in order; a ``press`` that waits
        (a paste into a job that does not read, a prompt being opened) holds
        only this thread."""
        keys = self._keys
        assert keys is not None
        while True:
            with self._typed:
                while not self._typing and self._reading:
                    self._typed.wait()
                if not self._typing:
                    return
                data = self._typing.popleft()
            if not self._stream.direct:
                self._size()  # the last to type sets the size
            for start in range(0, len(data), CHUNK):
                if not self._type(keys, data[start : start + CHUNK]):
                    with self._typed:
                        self._typing.clear()
                    break

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
                self._say({"type": "keys", "what": "bell"})  # its window is drawn: the client rings
            return True
        self.close()
        self._say({"type": "keys", "what": "error", "error": {"code": e.code, "message": e.message}})
        return False

    def _size(self) -> None:
        tty = self._stream.tty
        size = tty.size() if tty is not None else None
        if size is not None and size != self._stream.size and size[0] >= 2 and size[1] >= 2:
            try:
                self._registry.resize(self._stream.session_id, *size)
            except errors.DshError:
                return  # its shell exited: the next key says so

    def _end(self, what: str) -> None:
        """Read no more, and tell the client why (``detach``, ``closed``)."""
        self.close()
        self._say({"type": "keys", "what": what})

    def _say(self, event: dict[str, Any]) -> None:
        """Tell the client, if its connection is still there: the host may
        have closed it meanwhile (the client left, the host stops), and then
        there is nobody to tell; the reader or typist thread ends quietly
        (tests/attach/test_bells.py pins it)."""
        try:
            self._tell(event)
        except OSError:
            return  # the connection is closed: nobody to tell


__all__ = ["TtyKeys"]
