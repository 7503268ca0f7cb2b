"""Finding the host that holds a session, and the attach client's connections to it.

The client speaks the host protocol directly (host/protocol.py) over its own
connections: one for keys, one for screens, one for events. Each says in its
``hello`` that it is an attach client (and whether read-only), so the host
counts the person as a client and refuses a read-only viewer's writes.

The keys and events connections are read and written from the client's one
poll loop (:class:`Pipe`): a request is written without waiting for its reply
(the host does a connection's requests in order, so keys keep theirs), and
what the host sends is taken as it comes. Keys ask for a reply only when they
fail (``"reply": "errors"``, host/requests.py).
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import os
import select
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import DshError, HostUnavailable, InvalidArgument, NoSuchSession
from ..host import protocol as P
from ..host.lifecycle import probe
from ..host.runtime import HostPaths, list_names
from ..host.transport import Closed, Link, expect

_RECV = 256 * 1024

if sys.version_info >= (3, 11):
    #: A bytes event's data, refused (binascii.Error, a ValueError) unless it is
    #: base64: one C call on the way of every key's echo, where
    #: ``b64decode(validate=True)`` checks with a regular expression first.
    _unb64 = functools.partial(binascii.a2b_base64, strict_mode=True)
else:  # no strict_mode before 3.11

    def _unb64(data: bytes) -> bytes:
        return base64.b64decode(data, validate=True)

#: What names the setting that puts a kernel's terminals in a host (docs/host.md).
HOST_SETTING = (
    "DSH_MAGICS_HOST=1 in the kernel's environment (or c.BashMagics.host = \"on\"), "
    "or DSH_MAGICS_HOST_NAME=NAME to share a named host"
)


@dataclass(frozen=True)
class Found:
    name: str
    paths: HostPaths
    sessions: tuple[str, ...]


def _running(host_dir: str | None) -> tuple[list[Found], list[str]]:
    """Running hosts with their sessions, and the names of dead ones."""
    found: list[Found] = []
    dead: list[str] = []
    for name in list_names(host_dir):
        paths = HostPaths.for_name(name, host_dir)
        try:
            hello = probe(paths)
        except DshError:
            dead.append(name)
            continue
        if hello is None:
            dead.append(name)
            continue
        try:
            link = Link(paths.socket, 0)
        except OSError:
            dead.append(name)
            continue
        try:
            rows = expect(link.call("list", {}))
        except (OSError, DshError):
            dead.append(name)
            continue
        finally:
            link.close()
        found.append(Found(name, paths, tuple(str(r.get("session_id")) for r in rows)))
    return found, dead


def find(session: str, host: str | None, host_dir: str | None) -> Found:
    """The running host that has ``session`` (clear errors otherwise)."""
    if host is not None:
        paths = HostPaths.for_name(host, host_dir)
        try:
            hello = probe(paths)
        except HostUnavailable as e:
            raise HostUnavailable(f"host {host}: {e.message}") from None
        if hello is None:
            stale = os.path.lexists(paths.socket) or os.path.exists(paths.info)
            raise HostUnavailable(
                f"host {host} is not running"
                + (" (its process is gone; only its files are left)" if stale else "")
                + f"; running: {_names(_running(host_dir)[0])}",
                host=host,
            )
        found, _ = _running(host_dir)
        for f in found:
            if f.name == host:
                if session not in f.sessions:
                    raise NoSuchSession(
                        f"host {host} has no terminal session {session!r}; "
                        f"its sessions: {', '.join(f.sessions) or 'none'}",
                        session_id=session,
                    )
                return f
        raise HostUnavailable(f"host {host} stopped while we looked", host=host)
    found, dead = _running(host_dir)
    if not found:
        raise HostUnavailable(
            "no terminal host is running"
            + (f" (hosts {', '.join(dead)} left files but are gone)" if dead else "")
            + ". A terminal inside a kernel without a host (plain IPython) cannot be reached "
            f"from outside; to put terminals in a host set {HOST_SETTING}"
        )
    having = [f for f in found if session in f.sessions]
    if len(having) == 1:
        return having[0]
    if not having:
        raise NoSuchSession(
            f"no terminal session {session!r} in the running host(s); sessions: "
            + "; ".join(f"host {f.name}: {', '.join(f.sessions) or 'none'}" for f in found)
            + f". A terminal inside a kernel without a host cannot be reached; set {HOST_SETTING}",
            session_id=session,
        )
    raise InvalidArgument(
        f"session {session!r} exists in several hosts; choose one with --host: "
        + ", ".join(f.name for f in having),
        field="host",
    )


def _names(found: list[Found]) -> str:
    return ", ".join(f.name for f in found) or "none"


class Conn:
    """One request/reply connection, introduced as an attach client."""

    def __init__(self, paths: HostPaths, client: dict[str, Any]) -> None:
        try:
            self.link = Link(paths.socket, 0)
        except OSError as e:
            raise HostUnavailable(f"cannot connect to the terminal host at {paths.socket}: {e}") from None
        self.lock = threading.Lock()
        self.hello = self.call("hello", {"client": client})

    def call(self, op: str, args: dict[str, Any]) -> Any:
        """The value, the engine's error, or HOST_UNAVAILABLE when the host is gone."""
        args = {k: v for k, v in args.items() if v is not None}
        with self.lock:
            try:
                reply = self.link.call(op, args)
            except (OSError, Closed, ValueError) as e:
                raise HostUnavailable(f"the terminal host went away ({e})") from None
        return expect(reply)

    def close(self) -> None:
        self.link.close()


class Events:
    """The event connection: ``next()`` gives each event, None when the host is gone."""

    def __init__(self, paths: HostPaths, client: dict[str, Any], types: list[str]) -> None:
        self.conn = Conn(paths, client)
        self.conn.call("subscribe", {"types": types})

    def watch(self, session: str) -> None:
        """Start the session's live stream on this connection (host/stream.py)."""
        self.conn.call("watch", {"session_id": session})

    def rewatch(self, session: str) -> None:
        """Ask for a fresh start of the stream (its screen first) while
        :meth:`next` reads this connection: the reply is skipped there."""
        try:
            with self.conn.lock:
                self.conn.link.send_only("watch", {"session_id": session})
        except OSError:
            pass  # the host is gone: next() says so

    def next(self) -> dict[str, Any] | None:
        reader = self.conn.link.reader
        while True:
            try:
                line = reader.next_item()
            except OSError:
                return None
            if line is None:
                return None
            if not isinstance(line, bytes):
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if isinstance(msg, dict) and isinstance(msg.get("event"), dict):
                return msg["event"]  # type: ignore[no-any-return]

    def close(self) -> None:
        try:
            self.conn.link.sock.shutdown(socket.SHUT_RDWR)  # wakes a blocked next()
        except OSError:
            pass  # already shut (the host closed it first)
        self.conn.close()


class Pipe:
    """A :class:`Conn` used from a poll loop: :meth:`send` queues a request and
    writes what the socket takes now (:meth:`flush` the rest when it is
    writable); :meth:`read` gives the messages (replies and events) that have
    arrived, None once the host closed the connection."""

    def __init__(self, conn: Conn, *, blocking: bool = False) -> None:
        self.conn = conn
        self.sock = conn.link.sock
        self.sock.setblocking(blocking)  # blocking: calls on ``conn`` until :meth:`start`
        self._in = bytearray()
        #: The requests not yet written (one bytearray for the pipe's life,
        #: changed in place: a poll loop may hold it and look at its length).
        self.out = bytearray()
        # One reused receive buffer: a fresh 256 KB bytes per recv() goes
        # through mmap and munmap, on the path of every key's echo.
        self._chunk = bytearray(_RECV)
        self._view = memoryview(self._chunk)
        self._next = 0
        self.pending: set[str] = set()  # ids of the requests whose reply is awaited
        #: A viewer stream's bytes events (``host.stream.bytes_prefix``) are
        #: taken apart without JSON: :meth:`read` gives their bytes.
        self.bytes_prefix: bytes | None = None

    def start(self) -> None:
        """From now on only through this pipe (``conn.call`` no more)."""
        self.sock.setblocking(False)

    def fileno(self) -> int:
        return self.sock.fileno()

    def send(self, op: str, args: dict[str, Any], *, errors_only: bool = False) -> None:
        """Queue ``op``; ``errors_only``: the host answers only if it fails.
        A reply's id names its operation (``"<n>:<op>"``)."""
        self._next += 1
        msg: dict[str, Any] = {"v": P.VERSION, "id": f"{self._next}:{op}", "op": op,
                               "args": {k: v for k, v in args.items() if v is not None}}  # fmt: skip
        if errors_only:
            msg["reply"] = P.ERRORS_ONLY
        else:
            self.pending.add(msg["id"])
        self.send_line(P.encode(msg))

    def send_line(self, line: bytes) -> None:
        """Queue one encoded request (errors only: no reply is awaited) and write what the socket takes."""
        if self.out:
            self.out += line
            self.flush()
            return
        try:
            n = self.sock.send(line)
        except (BlockingIOError, InterruptedError):
            n = 0
        if n < len(line):
            self.out += line[n:]

    @property
    def unsent(self) -> int:
        return len(self.out)

    def flush(self) -> None:
        """Write what the socket takes without waiting (OSError: the host is gone)."""
        while self.out:
            try:
                n = self.sock.send(self.out)
            except (BlockingIOError, InterruptedError):
                return
            del self.out[:n]

    def read(self) -> list[Any] | None:
        """The whole messages received so far (dicts, and the raw bytes of a
        viewer stream's bytes events when :attr:`bytes_prefix` is set); None
        at the end of the stream. A line that is not JSON raises
        HOST_UNAVAILABLE (the stream cannot go on without it)."""
        try:
            n = self.sock.recv_into(self._view)
        except (BlockingIOError, InterruptedError):
            return []
        except OSError:
            return None
        if not n:
            return None
        buf = self._in
        prefix = self.bytes_prefix
        if not buf and self._chunk[n - 1] == 0x0A and self._chunk.count(b"\n", 0, n) == 1:
            line = bytes(self._view[: n - 1])  # the usual case: one message, whole (a key's echo)
            if prefix is not None and line.startswith(prefix) and line.endswith(b'"}}'):
                try:
                    return [_unb64(line[len(prefix) : -3])]
                except ValueError:
                    pass  # not what it looked like: JSON below
            lines = [line]
        else:
            buf += self._view[:n]
            end = buf.rfind(b"\n") + 1
            if not end:
                if len(buf) > P.MAX_REPLY:
                    return None  # no host sends that: treat the connection as broken
                return []
            lines = bytes(buf[:end]).split(b"\n")
            del buf[:end]
        out: list[Any] = []
        for line in lines:
            if not line:
                continue
            if prefix is not None and line.startswith(prefix) and line.endswith(b'"}}'):
                try:
                    raw = _unb64(line[len(prefix) : -3])
                except ValueError:
                    pass  # not what it looked like: JSON below
                else:
                    out.append(raw)
                    continue
            try:
                msg = json.loads(line)
            except ValueError:
                # Never dropped in silence: a lost line may be a detach or a screen.
                raise HostUnavailable(f"the terminal host sent a line that is not JSON: {line[:120]!r}") from None
            if isinstance(msg, dict):
                rid = msg.get("id")
                if "event" not in msg and isinstance(rid, str):
                    self.pending.discard(rid)
                    msg["op"] = rid.partition(":")[2]  # what the reply answers
                out.append(msg)
        return out

    def wait_replies(self, on_replies: Callable[[list[Any] | None], None], stop: Callable[[], bool], within: float) -> None:
        """Until every awaited reply came (each batch to ``on_replies``), ``stop()``, or ``within`` seconds."""
        deadline = time.monotonic() + within
        while self.pending and not stop():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                ready, writable, _ = select.select([self.fileno()], [self.fileno()] if self.out else [], [], left)
            except InterruptedError:
                continue
            if writable:
                self.flush()
            if ready:
                on_replies(self.read())

    def close(self) -> None:
        self.conn.close()


__all__ = ["HOST_SETTING", "Conn", "Events", "Found", "Pipe", "find"]
