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

Events on the connection: ``{"type": "screen", "session_id", "screen"}``
(``Engine.screen(vt=True)``) and ``{"type": "bytes", "session_id", "data"}``
(base64). Pieces come from the terminal's reader thread under its lock: they
are only queued here, and the connection's sender thread writes them.
"""

from __future__ import annotations

import base64
import re
import threading
from collections.abc import Callable
from typing import Any

from ..errors import InvalidArgument

#: Bytes queued for one viewer before they are replaced by one screen.
MAX_BEHIND = 4 * 1024 * 1024

#: Set or reset of an alternate-screen mode (xterm 1049, 1047, 47), also among other modes.
_ALT = re.compile(rb"\x1b\[\?(?:[0-9;]*;)?(?:1049|1047|47)(?:;[0-9;]*)?[hl]")
_TAIL = 24  # bytes kept to find a sequence split across two pieces

TakeScreen = Callable[[], dict[str, Any]]


class ViewerStream:
    """One session's stream to one connection; ``wake`` tells its sender."""

    def __init__(self, session_id: str, wake: Callable[[], None]) -> None:
        self.session_id = session_id
        self._wake = wake
        self._lock = threading.Lock()
        self._queue: list[dict[str, Any]] = []
        self._queued = 0
        self._tail = b""
        self._unwatch: Callable[[], None] | None = None
        self.resyncs = 0  # screens sent because the viewer fell behind

    def start(self, engine: object) -> None:
        """Watch through the engine's ``watch_screen`` (``Registry`` has it; it is
        not part of the engine contract, which clients also implement)."""
        watch = getattr(engine, "watch_screen", None)
        if watch is None:
            raise InvalidArgument("this terminal host's engine cannot stream a terminal's output to a viewer")
        self._unwatch = watch(self.session_id, self._on_piece)

    def restart(self, engine: object) -> None:
        """Follow a new terminal under the same session id (recreated, or
        restarted after its shell died): its screen first, then its bytes."""
        self.stop()
        self.start(engine)

    def stop(self) -> None:
        if self._unwatch is not None:
            self._unwatch()
            self._unwatch = None

    def _on_piece(self, piece: bytes | None, take: TakeScreen) -> None:
        """On the terminal's reader thread (or a resize), under its lock."""
        with self._lock:
            joined = self._tail + piece if piece is not None else b""
            self._tail = joined[-_TAIL:]
            behind = piece is not None and self._queued + len(piece) > MAX_BEHIND
            if piece is None or behind or (b"\x1b[?" in joined and _ALT.search(joined)):
                # A screen holds everything before it: what is queued can go.
                self._queue.clear()
                self._queued = 0
                self._tail = b""
                self.resyncs += behind
                self._queue.append({"type": "screen", "session_id": self.session_id, "screen": take()})
            else:
                self._queue.append({"type": "bytes", "session_id": self.session_id, "data": piece})
                self._queued += len(piece)
        self._wake()

    def take(self) -> list[dict[str, Any]]:
        """What is queued, as wire events (consecutive bytes joined into one)."""
        with self._lock:
            queue, self._queue, self._queued = self._queue, [], 0
        out: list[dict[str, Any]] = []
        chunk: list[bytes] = []
        for event in queue:
            if event["type"] == "bytes":
                chunk.append(event["data"])
                continue
            if chunk:
                out.append(self._bytes_event(b"".join(chunk)))
                chunk = []
            out.append(event)
        if chunk:
            out.append(self._bytes_event(b"".join(chunk)))
        return out

    @property
    def pending(self) -> bool:
        return bool(self._queue)

    def _bytes_event(self, data: bytes) -> dict[str, Any]:
        return {"type": "bytes", "session_id": self.session_id, "data": base64.b64encode(data).decode("ascii")}


__all__ = ["MAX_BEHIND", "ViewerStream"]
