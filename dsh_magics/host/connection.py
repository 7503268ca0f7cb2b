"""One client connection of the host: its socket, its write lock, and (once it
subscribed) the event queue its sender thread writes, with per-session
coalescing of ``output`` and the live streams of attached viewers
(host/stream.py)."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections import deque
from typing import Any

from . import protocol as P
from .interest import Interest
from .keys import KeysLane
from .stream import ViewerStream

log = logging.getLogger("dsh_magics.host")

#: Events queued for one subscriber before it is considered stuck and dropped.
MAX_QUEUED_EVENTS = 20_000

EVENT_TYPES = ("output", "job_started", "job_done", "terminal")
#: The subscription of a client without listeners: its job stand-ins only.
_SETTLES_ONLY = frozenset(("job_done",))

#: How long the event sender lets a burst gather before writing it.
EVENT_GATHER = 0.002

#: Least time between two ``output`` events for one session on one connection.
OUTPUT_INTERVAL = 0.005


class Connection:
    """One client connection: its socket, a write lock and (once it has
    subscribed) an event queue with per-session coalescing of ``output``."""

    def __init__(self, sock: socket.socket, peer: tuple[int, int, int], interest: Interest) -> None:
        self.interest = interest
        self.sock = sock
        self.peer_pid, self.peer_uid, _ = peer
        self.wlock = threading.Lock()
        self.closed = False
        self.subscribed = False
        self.types: frozenset[str] = frozenset(EVENT_TYPES)
        self.msg_id: Any = None
        self._events: deque[dict[str, Any]] = deque()
        self._pending_output: dict[Any, None] = {}  # sessions with unsent output, in order
        self._output_sent: dict[Any, float] = {}
        self._ev_cond = threading.Condition()
        self.client: dict[str, Any] = {}
        self.streams: dict[str, ViewerStream] = {}  # sessions it watches (host/stream.py)
        self._unsent = b""  # the part of a stream write the socket did not take (wake)
        self.keys: KeysLane | None = None  # a person's keys lines, once one was checked (host/keys.py)

    def send(self, data: bytes) -> None:
        """A reply or an event line, now. A stream line cut by the socket
        (``_unsent``, left by :meth:`wake`/:meth:`send_stream`) is finished
        first: a line spliced into another would be lost to the client."""
        with self.wlock:
            if self._unsent:
                data, self._unsent = self._unsent + data, b""
            self.sock.sendall(data)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        with self._ev_cond:
            self._ev_cond.notify_all()
        for stream in list(self.streams.values()):
            stream.close()  # a handed terminal's copy is closed before the client sees the end
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # the peer already went
        try:
            self.sock.close()
        except OSError:
            pass  # already closed

    # -- events --------------------------------------------------------------
    def wake(self) -> None:
        """A viewer stream has something to send. Called on a terminal's
        reader thread: it writes the stream itself when nothing is being sent
        and the socket takes it without waiting (a key's echo then skips a
        thread switch), and otherwise leaves it to the sender thread. Stream
        events are only taken with ``wlock`` held, so they go out in order."""
        if self.wlock.acquire(blocking=False):
            try:
                if not self._unsent and not self.closed:
                    data = self._stream_bytes()
                    try:
                        sent = self.sock.send(data, socket.MSG_DONTWAIT)
                    except BlockingIOError:
                        sent = 0
                    except OSError:
                        sent = len(data)  # the connection is gone; its sender notices and closes
                    self._unsent = data[sent:]
            finally:
                self.wlock.release()
            if not self._unsent:
                return
        with self._ev_cond:
            self._ev_cond.notify()

    def send_stream(self, line: bytes) -> bool:
        """A viewer stream's line with nothing queued before it, from a
        terminal's reader thread: written now if nothing is being sent (the
        rest, if the socket takes only part, is left to the sender thread);
        False if it must be queued instead (``ViewerStream._on_piece``, which
        calls this under its own lock: so ``wlock`` is only tried here,
        never waited for, while the sender takes the streams' locks under
        ``wlock``)."""
        if not self.wlock.acquire(blocking=False):
            return False
        try:
            if self._unsent or self.closed:
                return False
            try:
                sent = self.sock.send(line, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return False
            except OSError:
                return True  # the connection is gone; its sender notices and closes
            if sent == len(line):
                return True
            self._unsent = line[sent:]
        finally:
            self.wlock.release()
        with self._ev_cond:
            self._ev_cond.notify()
        return True

    def _stream_bytes(self) -> bytes:
        """The streams' queued events as wire lines (``wlock`` held)."""
        streams = list(self.streams.values())
        if len(streams) == 1:
            return streams[0].take() if streams[0].pending else b""
        return b"".join(stream.take() for stream in streams if stream.pending)

    def _stream_waiting(self) -> bool:
        return bool(self._unsent) or any(s.pending for s in list(self.streams.values()))

    def start_sender(self) -> None:
        if not self.subscribed:
            self.subscribed = True
            threading.Thread(target=self.sender, name=f"dsh-host-events-{self.peer_pid}", daemon=True).start()

    def push(self, event: dict[str, Any]) -> None:
        """Called on engine threads: enqueue only, never block or write."""
        if event.get("type") not in self.types:
            return
        if self.types == _SETTLES_ONLY and not self.interest.wants(self.peer_pid, event.get("session_id")):
            return  # a job this client never asked about (dsh_magics/host/interest.py)
        with self._ev_cond:
            if event.get("type") == "output":
                sid = event.get("session_id")
                if sid in self._pending_output:
                    return  # one pending "output" per session says it all
                self._pending_output[sid] = None
            else:
                if len(self._events) >= MAX_QUEUED_EVENTS:
                    log.warning("dropping subscriber pid %s: %d events unread", self.peer_pid, len(self._events))
                    threading.Thread(target=self.close, daemon=True).start()
                    return
                sid = event.get("session_id")
                if sid in self._pending_output:
                    # Output that came before this event is said before it, and what
                    # comes after it, after (pinned for both backends by
                    # tests/contract/test_contract.py::test_subscribe_delivers_job_and_output_events).
                    del self._pending_output[sid]
                    self._events.append({"type": "output", "session_id": sid})
                self._events.append(event)
            self._ev_cond.notify()

    def _take(self) -> list[dict[str, Any]] | None:
        """Wait for events to send. ``output`` for a session goes out at once,
        then at most every :data:`OUTPUT_INTERVAL` seconds: a chatty job
        produces a few hundred PTY reads per second, and one wake-up per
        interval tells a follower just as much."""
        with self._ev_cond:
            while not self.closed and not self._events and not self._pending_output:
                if self._stream_waiting():
                    return []  # a viewer's stream waits for nothing (sent by sender())
                self._ev_cond.wait()
            if self.closed:
                return None
            if self._stream_waiting():
                return []
        # Events come in bursts (a short command: job_started, output,
        # job_done within a millisecond). Gathering them for a moment makes
        # one write and one wake-up of the client instead of three, and keeps
        # that work off the critical path of the command's own reply.
        time.sleep(EVENT_GATHER)
        with self._ev_cond:
            while True:
                if self.closed:
                    return None
                now = time.monotonic()
                due = [
                    sid for sid in self._pending_output
                    if now - self._output_sent.get(sid, 0.0) >= OUTPUT_INTERVAL
                ]  # fmt: skip
                if due or self._events:
                    break
                wait = None
                if self._pending_output:
                    wait = min(self._output_sent[sid] + OUTPUT_INTERVAL - now for sid in self._pending_output)
                self._ev_cond.wait(wait)
            batch: list[dict[str, Any]] = []
            while self._events and len(batch) < 256:
                event = self._events.popleft()
                if event.get("type") == "output":
                    self._output_sent[event.get("session_id")] = now
                batch.append(event)
            if not self._events:
                # Pending output is newer than every queued event: it goes last.
                for sid in due:
                    if sid in self._pending_output:
                        del self._pending_output[sid]
                        self._output_sent[sid] = now
                        batch.append({"type": "output", "session_id": sid})
            return batch

    def sender(self) -> None:
        while True:
            batch = self._take()
            if batch is None:
                return
            try:
                with self.wlock:
                    data = self._unsent + b"".join(P.event_line(P.event_to_wire(e)) for e in batch)
                    self._unsent = b""
                    self.sock.sendall(data + self._stream_bytes())
            except OSError:
                self.close()
                return



__all__ = ["EVENT_GATHER", "EVENT_TYPES", "MAX_QUEUED_EVENTS", "OUTPUT_INTERVAL", "Connection"]
