"""The client's connections to the terminal host: one event connection plus
a pool of request/reply connections, and the connection state they share.

A host that goes away is noticed here (a failed request or the end of the
event stream) and reported once through ``on_lost``; docs/host.md, "Internals".
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
from collections.abc import Callable
from typing import Any

from ..errors import HostUnavailable
from . import protocol as P
from .lifecycle import ensure_host, probe
from .runtime import HostPaths

log = logging.getLogger(__name__)

NEW, CONNECTED, LOST, LOST_REPORTED, DETACHED = "new", "connected", "lost", "lost-reported", "detached"

_POOL = 8


class Closed(ConnectionError):
    """The host closed a connection while we waited for a reply."""


class Link:
    """One strictly request/reply connection to the host."""

    def __init__(self, path: str, generation: int, connect_timeout: float = 5.0) -> None:
        self.generation = generation
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.sock.settimeout(connect_timeout)
            self.sock.connect(path)
            self.sock.settimeout(None)
        except BaseException:
            self.sock.close()
            raise
        self.reader = P.LineReader(self.sock, P.MAX_REPLY)
        self._next = 0

    def call(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        self._next += 1
        msg_id = self._next
        try:
            self.sock.sendall(P.request(msg_id, op, args))
        except (BrokenPipeError, ConnectionResetError):
            # Refused and closed at once: read the reason, if the host left one.
            line = self.reader.next_item()
            if isinstance(line, bytes):
                msg = json.loads(line)
                if isinstance(msg, dict) and msg.get("ok") is False:
                    return msg
            raise
        while True:
            line = self.reader.next_item()
            if line is None:
                raise Closed(f"the host closed the connection during {op!r}")
            if isinstance(line, P.Oversized):
                raise Closed("the host sent an oversized reply")
            msg = json.loads(line)
            if not isinstance(msg, dict) or "event" in msg:
                continue
            if msg.get("id") == msg_id or (msg.get("id") is None and msg.get("ok") is False):
                return msg

    def send_only(self, op: str, args: dict[str, Any]) -> None:
        """Write a request whose reply nobody waits for (the event
        connection: its reader skips replies)."""
        self.sock.sendall(P.request("filter", op, args))

    def close(self) -> None:
        # shutdown first: close() alone leaves the connection open while
        # another thread is blocked reading it (the event reader), so the
        # host would count a detached client until its next event.
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already shut (the host closed it first)
        try:
            self.sock.close()
        except OSError:
            pass  # already closed


def expect(reply: dict[str, Any]) -> Any:
    """The value of a reply, or the engine's exception it carries."""
    if reply.get("ok"):
        return reply.get("value")
    raise P.error_from_wire(reply.get("error"))


class Transport:
    """Connection state and requests. ``on_connect(hello, restarted)`` runs
    before a new connection is used (``restarted``: a different host
    instance than before), ``on_stream(link)`` gets its event connection
    once it is live, and ``on_lost(why)`` is called once per lost host."""

    def __init__(
        self,
        paths: HostPaths,
        *,
        watch_pid: int | None,
        autostart: bool,
        start_timeout: float,
        event_types: Callable[[], list[str]],
        on_connect: Callable[[dict[str, Any], bool], None],
        on_stream: Callable[[Link], None],
        on_lost: Callable[[str], None],
    ) -> None:
        self.paths = paths
        self.watch_pid = watch_pid
        self.autostart = autostart
        self.start_timeout = start_timeout
        self._event_types = event_types
        self._on_connect = on_connect
        self._on_stream = on_stream
        self._on_lost = on_lost
        self.lock = threading.RLock()
        self.state = NEW
        self.generation = 0
        self.hello: dict[str, Any] = {}
        self._instance: str | None = None
        self.lost_message = ""
        self._pool: list[Link] = []
        self._pool_lock = threading.Lock()
        self.events: Link | None = None

    def connect(self) -> dict[str, Any]:
        with self.lock:
            if self.state != CONNECTED:
                if self.state == DETACHED:
                    raise HostUnavailable("this client has detached from the terminal host")
                self._connect_locked()
            return dict(self.hello)

    def _connect_locked(self) -> None:
        if self.autostart:
            ensure_host(self.paths, watch_pid=self.watch_pid, timeout=self.start_timeout)
        elif probe(self.paths) is None:
            raise HostUnavailable(f"no terminal host is running at {self.paths.socket}")
        generation = self.generation + 1
        try:
            link = Link(self.paths.socket, generation)
        except OSError as e:
            raise HostUnavailable(f"cannot connect to the terminal host: {e}") from None
        try:
            hello = expect(link.call("hello", {"client": {"pid": os.getpid(), "purpose": "events"}}))
            expect(link.call("subscribe", {"types": self._event_types()}))
        except (OSError, ValueError) as e:
            link.close()
            raise HostUnavailable(f"the terminal host did not answer: {e}") from None
        except BaseException:
            link.close()
            raise
        restarted = self._instance is not None and hello.get("instance") != self._instance
        self._on_connect(hello, restarted)
        self._instance = hello.get("instance")
        self.hello = hello
        self.generation = generation
        self._drop_pool()
        self.events = link
        self.state = CONNECTED
        self._on_stream(link)

    def ready(self) -> int:
        """Make sure we are connected; returns the connection generation."""
        if self.state == CONNECTED:
            return self.generation
        with self.lock:
            if self.state == DETACHED:
                raise HostUnavailable("this client has detached from the terminal host")
            if self.state == LOST:
                # The event stream saw the host go: say so once, clearly.
                self.state = LOST_REPORTED
                raise HostUnavailable(self.lost_message)
            if self.state != CONNECTED:
                self._connect_locked()
            return self.generation

    def mark_lost(self, generation: int, why: str, reported: bool) -> None:
        with self.lock:
            if generation == self.generation and self.state == LOST and reported:
                # The event stream saw the loss first, and this caller is
                # being told now: once is enough, the next call starts a host
                # (pinned by tests/mcp/test_mcp_server.py::test_a_lost_host_is_a_tool_error_then_a_fresh_host,
                # which failed 2 runs in 3 before).
                self.state = LOST_REPORTED
                return
            if generation != self.generation or self.state != CONNECTED:
                return
            pid = self.hello.get("pid")
            self.lost_message = (
                f"the terminal host (pid {pid}) is gone ({why}): its terminals and their jobs are lost. "
                "The next call starts a fresh host."
            )
            self.state = LOST_REPORTED if reported else LOST
            events, self.events = self.events, None
            self._drop_pool()
        if events is not None:
            events.close()
        log.info("%s", self.lost_message)
        self._on_lost(why)

    def stream_ended(self, generation: int) -> None:
        """The event connection of ``generation`` ended."""
        if self.state == CONNECTED and generation == self.generation:
            self.mark_lost(generation, "its event stream ended", reported=False)

    def refilter(self) -> None:
        """Tell the host which events to stream (caller holds ``lock``).
        Written on the event connection; its reply is skipped by the event
        loop, and events are filtered from the moment the host reads it."""
        link = self.events
        if link is None or self.state != CONNECTED:
            return
        try:
            link.send_only("subscribe", {"types": self._event_types()})
        except OSError:
            pass  # the event loop notices a dead host on its own

    def call(self, op: str, args: dict[str, Any]) -> Any:
        generation = self.ready()
        link = self._checkout(generation)
        try:
            reply = link.call(op, args)
        except (OSError, ValueError) as e:
            link.close()
            why = "it closed the connection" if isinstance(e, Closed) else f"{type(e).__name__}: {e}"
            self.mark_lost(generation, why, reported=True)
            raise HostUnavailable(self.lost_message or f"the terminal host is unavailable: {why}") from None
        except BaseException:
            # Interrupted mid-request (Ctrl-C): the reply would arrive on
            # this connection later and confuse the next caller; drop it.
            link.close()
            raise
        self._checkin(link)
        return expect(reply)

    def _checkout(self, generation: int) -> Link:
        with self._pool_lock:
            while self._pool:
                link = self._pool.pop()
                if link.generation == generation:
                    return link
                link.close()
        try:
            return Link(self.paths.socket, generation)
        except OSError as e:
            self.mark_lost(generation, f"cannot connect: {e.strerror or e}", reported=True)
            raise HostUnavailable(self.lost_message or f"the terminal host is unavailable: {e}") from None

    def _checkin(self, link: Link) -> None:
        with self._pool_lock:
            if link.generation == self.generation and len(self._pool) < _POOL:
                self._pool.append(link)
                return
        link.close()

    def _drop_pool(self) -> None:
        with self._pool_lock:
            pool, self._pool = self._pool, []
        for link in pool:
            link.close()

    def detach(self) -> None:
        """Say goodbye on a fresh connection and close everything; nothing
        in the host is closed."""
        with self.lock:
            state, self.state = self.state, DETACHED
            events, self.events = self.events, None
        if state == CONNECTED:
            try:
                link = Link(self.paths.socket, -1, connect_timeout=2.0)
                try:
                    link.sock.settimeout(2.0)
                    link.call("detach", {})
                finally:
                    link.close()
            except (OSError, ValueError):
                pass  # the host is gone: there is nothing to detach from
        if events is not None:
            events.close()
        self._drop_pool()
