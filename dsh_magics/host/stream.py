"""An attached viewer's live stream: the terminal's raw output, passed on as it arrives.

A viewer (``dsh-magics attach``) whose window has the terminal's size writes
these bytes to its own terminal as they come, so a key's echo takes one hop
from the terminal's reader to the viewer instead of a screen fetch. The stream
starts with the terminal's screen (drawn by the viewer), and a screen takes the
place of the bytes whenever they alone would draw wrong:

- after a resize (the emulator reflowed the screen), and for a new terminal
  under the same session id (:meth:`ViewerStream.restart`);
- at a switch of the alternate screen: the viewer draws on its own terminal's
  alternate screen and cannot switch it back to the terminal's normal screen;
- when the viewer falls :data:`MAX_BEHIND` bytes behind: what is queued is
  dropped and one screen says it all (flow control for a slow reader).

A screen has no bell: if what it replaces rang one (host/bells.py), one bell
piece follows the screen.

Events on the connection: ``{"type": "screen", "session_id", "screen"}``
(``Engine.screen(vt=True)``) and ``{"type": "bytes", "session_id", "data"}``
(base64). Pieces come from the terminal's reader thread under its lock. A
piece with nothing queued before it (a key's echo, as a rule) is written by
that thread at once if the socket takes it (``Connection.send_stream``: no
queue on the echo's way); otherwise pieces are queued here and written by
that same thread when the socket takes them at once (``Connection.wake``),
else by the connection's sender thread. The reader is told
(``reader.handed_to_viewer``), so it parses its screen only after a moment of
quiet and the woken viewer draws first.

**A handed terminal** (:meth:`ViewerStream.hand`, host/tty_out.py): a client
that passed its terminal gets no ``bytes`` events while it draws live; the
reader writes each piece to its terminal. Each screen event then carries
``"tty": N`` and the host *holds*: it writes nothing to that terminal and keeps
the pieces after the screen, until the client, having painted screen N,
answers ``tty_go`` (:meth:`go`): ``live`` (the held pieces go to the terminal
and the pieces after them too) or not (its window has another size: they go
as ``bytes`` events, as without a terminal, until the next screen). A piece
that would put the terminal :data:`MAX_BEHIND` behind, or an alternate-screen
switch, stops the writes at once and sends a screen (so the client paints
with nothing of the host's under way). The bell and leaving (``tty_bell``,
``tty_release``) are the client's other writes: docs/attach.md, docs/internals.md.
"""

from __future__ import annotations

import re
import threading
from binascii import b2a_base64
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ..terminal.core import reader
from . import protocol as P
from .bells import rings
from .tty_out import TtyOut

if TYPE_CHECKING:
    from ..terminal import Registry


class HandedKeys(Protocol):
    """The person's keyboard read by the host (host/tty_in.py ``TtyKeys``)."""

    fd: int | None

    def close(self) -> None: ...


#: Bytes queued for one viewer before they are replaced by one screen.
MAX_BEHIND = 4 * 1024 * 1024

#: Set or reset of an alternate-screen mode (xterm 1049, 1047, 47), also among other modes.
_ALT = re.compile(rb"\x1b\[\?(?:[0-9;]*;)?(?:1049|1047|47)(?:;[0-9;]*)?[hl]")
_TAIL = 24  # bytes kept to find a sequence split across two pieces

TakeScreen = Callable[[], dict[str, Any]]


#: The bell, as a piece of its own.
BEL = b"\x07"


def _rings(
    queue: list[bytes | dict[str, Any]], held: list[bytes] | None, piece: bytes | None, dropped: list[bytes] | None = None
) -> bool:
    """Do the pieces a screen replaces (those the person's terminal had not
    taken yet, queued, held, and the one that brought it) ring a bell (host/bells.py ``rings``: no Python step per byte or escape,
    as this runs under the terminal's lock)? Looked at only then, never on a
    piece's way. They are parsed as if no control string were open before
    them: a queue that begins inside a title (its opener sent before, the
    socket then busy) rings once for that title's BEL (docs/attach.md)."""
    pieces = (dropped or []) + [p for p in queue if type(p) is bytes] + (held or []) + ([piece] if piece else [])
    return any(BEL in p for p in pieces) and rings(b"".join(pieces))


def bytes_prefix(session_id: str) -> bytes:
    """The start of a bytes event's wire line for ``session_id``, up to its base64 data."""
    line = P.event_line({"type": "bytes", "session_id": session_id, "data": ""})
    return line[: -len(b'"}}\n')]


class ViewerStream:
    """One session's stream to one connection; ``wake`` tells its sender,
    ``send`` writes a line at once when it can (``Connection.send_stream``)."""

    def __init__(
        self, session_id: str, wake: Callable[[], None], send: Callable[[bytes], bool] = lambda line: False
    ) -> None:
        self.session_id = session_id
        self._wake = wake
        self._send = send  # a line out now if nothing is being sent (True), else False: queue it
        self._lock = threading.Lock()
        self._queue: list[bytes | dict[str, Any]] = []  # pieces, and screens that replace them
        self._queued = 0
        self._tail = b""
        self._unwatch: Callable[[], None] | None = None
        self.resyncs = 0  # screens sent because the viewer fell behind
        self._prefix = bytes_prefix(session_id)
        self.tty: TtyOut | None = None  # the person's terminal, if handed (hand)
        self.keys_in: HandedKeys | None = None  # ... and its keys (host/tty_in.py)
        self.size: tuple[int, int] | None = None  # the last screen's (cols, rows)
        self._direct = False  # pieces go to ``tty`` (the client paints nothing now)
        self._held: list[bytes] | None = None  # pieces after screen ``_screen_no``, until its answer
        self._held_n = 0  # bytes in _held
        self._screen_no = 0

    def hand(self, tty: TtyOut, keys_in: HandedKeys | None = None) -> None:
        """Write live pieces to the person's terminal (module docstring), and
        read its keys (``keys_in``); before :meth:`start`."""
        self.tty = tty
        self.keys_in = keys_in

    @property
    def direct(self) -> bool:
        """The person's terminal shows the live bytes the host writes (its window has the size)."""
        return self._direct

    def start(self, engine: Registry) -> None:
        """Watch through the registry's ``watch_screen`` (host-internal: not
        part of the engine contract, which clients also implement)."""
        self._unwatch = engine.watch_screen(self.session_id, self._on_piece)

    def restart(self, engine: Registry) -> None:
        """Follow a new terminal under the same session id (recreated, or
        restarted after its shell died): its screen first, then its bytes."""
        self.stop()
        self.start(engine)

    def stop(self) -> None:
        if self._unwatch is not None:
            self._unwatch()
            self._unwatch = None

    def close(self) -> None:
        """Stop, and close the host's copy of a handed terminal (the client left
        or its connection ended, the session closed, the host stops)."""
        self.stop()
        self.release()

    def release(self) -> None:
        """Give the person's terminal back: nothing more is written to it (the
        client's ``tty_release``); the stream goes on as ``bytes`` events."""
        if self.keys_in is not None:
            self.keys_in.close()
        with self._lock:
            tty, self.tty = self.tty, None
            if tty is None:
                return
            self._direct = False
            held, self._held = self._held, None
            if held:
                self._queue_bytes(held)
            tty.close()  # (in the lock: a screen between would stop and hold a terminal gone)
        if held:
            self._wake()

    def go(self, screen_no: int, live: bool) -> None:
        """The client painted screen ``screen_no`` (``tty_go``): go on writing to
        its terminal (``live``), or send bytes events (its window has another size)."""
        tty = self.tty
        with self._lock:
            if tty is None or self._held is None or screen_no != self._screen_no:
                return  # a later screen is on its way: its answer decides
            held, self._held = self._held, None
            if live and tty.open:
                self._direct = True
                tty.go()
                if held:
                    tty.put(b"".join(held))
                return
            self._queue_bytes(held)
        if held:
            self._wake()

    def bell(self) -> bool:
        """The client's bell, in order with the pieces (``tty_bell``); False:
        the client writes it (its window is drawn)."""
        with self._lock:
            if self._direct and self.tty is not None:
                self.tty.put(BEL)
            elif self._held is not None:
                self._held.append(BEL)
            else:
                return False
        return True

    def _queue_bytes(self, pieces: list[bytes]) -> None:
        for piece in pieces:
            self._queue.append(piece)
            self._queued += len(piece)

    def _on_piece(self, piece: bytes | None, take: TakeScreen) -> None:
        """On the terminal's reader thread (or a resize), under its lock."""
        with self._lock:
            behind = switch = False
            if piece is not None:
                joined = self._tail + piece if self._tail else piece
                end = joined[-_TAIL:]
                self._tail = end if b"\x1b" in end else b""  # a sequence may go on in the next piece
                switch = b"\x1b[?" in joined and _ALT.search(joined) is not None
                if self._direct:  # a handed terminal, drawn live: the reader writes to it
                    tty = self.tty
                    assert tty is not None
                    behind = tty.queued + len(piece) > MAX_BEHIND
                    if not (switch or behind):
                        tty.put(piece)
                        reader.handed_to_viewer()
                        return
                elif self._held is not None:  # a screen is being painted: its answer decides
                    behind = self._held_n + len(piece) > MAX_BEHIND
                    if not (switch or behind):
                        self._held.append(piece)
                        self._held_n += len(piece)
                        return
                else:
                    behind = self._queued + len(piece) > MAX_BEHIND
                if not (switch or behind or self._queue or self._held is not None) and self._send(self._bytes_line(piece)):
                    # The usual piece (a key's echo): nothing waited before it, and
                    # the socket took it at once (Connection.send_stream).
                    reader.handed_to_viewer()  # the reader's idle parse lets the viewer draw first
                    return
            if piece is None or behind or switch:
                # A screen holds everything before it: what is queued can go, but
                # for its bells (a screen has none): one rings after the screen.
                tty = self.tty if self.tty is not None and self.tty.open else None
                # Nothing more goes to the terminal until the client painted this screen.
                dropped = tty.stop() if tty is not None else []
                rang = _rings(self._queue, self._held, piece, dropped)
                self._queue.clear()
                self._queued = 0
                self._tail = b""
                self.resyncs += behind
                event: dict[str, Any] = {"type": "screen", "session_id": self.session_id, "screen": take()}
                self.size = (int(event["screen"]["cols"]), int(event["screen"]["rows"]))
                if tty is not None:
                    self._direct = False
                    self._held, self._held_n = [BEL] if rang else [], 0
                    self._screen_no += 1
                    event["tty"] = self._screen_no
                    rang = False  # (held: written or sent once the client painted the screen)
                self._queue.append(event)
                if rang:
                    self._queue.append(BEL)
                    self._queued += 1
            else:
                self._queue.append(piece)
                self._queued += len(piece)
        self._wake()
        reader.handed_to_viewer()  # the reader's idle parse lets the viewer draw first

    def take(self) -> bytes:
        """What is queued, as wire lines (consecutive bytes joined into one event)."""
        with self._lock:
            queue, self._queue, self._queued = self._queue, [], 0
        if len(queue) == 1 and type(queue[0]) is bytes:
            return self._bytes_line(queue[0])
        out: list[bytes] = []
        chunk: list[bytes] = []
        for item in queue:
            if type(item) is bytes:
                chunk.append(item)
                continue
            if chunk:
                out.append(self._bytes_line(b"".join(chunk)))
                chunk = []
            out.append(P.event_line(item))  # type: ignore[arg-type]
        if chunk:
            out.append(self._bytes_line(b"".join(chunk)))
        return b"".join(out)

    @property
    def pending(self) -> bool:
        return bool(self._queue)

    def _bytes_line(self, data: bytes) -> bytes:
        """``P.event_line`` of a bytes event, without building and encoding a
        dict per piece: it is on the path of every key's echo. The keys keep
        the order ``event_line`` gives them (the client reads this exact
        prefix: attach/link.py ``Pipe``)."""
        return self._prefix + b2a_base64(data, newline=False) + b'"}}\n'


__all__ = ["MAX_BEHIND", "ViewerStream", "bytes_prefix"]
