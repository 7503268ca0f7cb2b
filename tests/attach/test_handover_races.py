"""The hand-over's races and rules that a client in a tmux pane cannot hit on
purpose (host/requests.py ``watch``, host/stream.py ``release``, host/tty_in.py
``_size``): a host served from a thread of this process, real terminals
(PTYs of the test's own as the person's terminal, handed over by
``attach/handover.py`` or by the same steps), and a hook where a race needs
one, released by an Event, never a sleep."""

from __future__ import annotations

import base64
import fcntl
import json
import os
import pty
import select
import socket
import struct
import termios
import threading
import tty
from collections.abc import Iterator
from typing import Any

import pytest

from dsh_magics import jobs
from dsh_magics.attach import handover
from dsh_magics.attach.link import Conn, Pipe
from dsh_magics.errors import NoSuchSession
from dsh_magics.host import HostClient, HostPaths
from dsh_magics.host import protocol as P
from dsh_magics.host import requests as host_requests
from dsh_magics.host.connection import Connection
from dsh_magics.host.server import HostServer
from dsh_magics.host.stream import ViewerStream, bytes_prefix
from dsh_magics.host.tty_in import TtyKeys
from dsh_magics.host.tty_out import FD_BYTE, TtyOut

from ..conftest import wait_until
from ..host.conftest import private_host_dir, served_host
from .conftest import T


@pytest.fixture
def served() -> Iterator[tuple[HostServer, HostClient, HostPaths]]:
    """A host served from a thread of this process (its descriptors are ours to count)."""
    with private_host_dir() as d, served_host(d, "races") as (server, client):
        yield server, client, client.paths


def _fds_to(path: str) -> int:
    """How many descriptors of this process are open on ``path``."""
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == path:
                n += 1
        except OSError:
            continue  # closed while we looked (the listing's own)
    return n


def _person_terminal(cols: int = 100, rows: int = 30) -> tuple[int, int, str]:
    """A PTY standing for the person's terminal: its master, its slave, the slave's path."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    return master, slave, os.ttyname(slave)


def _opened_for_host(path: str) -> list[int]:
    """The terminal opened again as ``handover.open_for_host`` does: output, then input."""
    flags = os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC
    return [os.open(path, os.O_WRONLY | flags), os.open(path, os.O_RDONLY | flags)]


def _client(sid: str) -> dict[str, Any]:
    return {"pid": os.getpid(), "purpose": "attach", "session": sid, "read_only": False}


class _Master:
    """What the host wrote to the person's terminal, read from its master."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.got = b""

    def has(self, text: bytes) -> bool:
        while select.select([self.fd], [], [], 0.05)[0]:
            try:
                self.got += os.read(self.fd, 65536)
            except OSError:
                break
        return text in self.got


def _screen_event(pipe: Pipe, got: list[Any], sid: str) -> dict[str, Any] | None:
    """The first ``screen`` event of ``sid`` the pipe brought (with what else
    came kept in ``got``): a watch subscribes the connection to every session's
    events (the class of tests/attach/test_handover.py's refused hand-over failure)."""
    if select.select([pipe.fileno()], [], [], 0.05)[0]:
        got.extend(pipe.read() or [])
    for m in got:
        event = m.get("event") if isinstance(m, dict) else None
        if isinstance(event, dict) and event.get("type") == "screen" and event.get("session_id") == sid:
            return event
    return None


def _handed(conn: Conn, sid: str, fds: list[int]) -> tuple[Pipe, dict[str, Any]]:
    """``fds`` (output, keys) handed over as the attach client does (the host
    takes both; closed here either way), then the connection as the client's
    started pipe, and the stream's first screen."""
    try:
        assert handover.hand(conn, sid, fds, "p", b"\x1d") == 2
    finally:
        for fd in fds:
            os.close(fd)
    pipe = Pipe(conn)
    pipe.bytes_prefix = bytes_prefix(sid)
    pipe.start()
    got: list[Any] = []
    return pipe, wait_until(lambda: _screen_event(pipe, got, sid), T)


@pytest.mark.parametrize("when", ["before-the-reply", "before-the-start"])
def test_a_connection_gone_during_the_hand_over_leaves_no_descriptor_in_the_host(
    served: tuple[HostServer, HostClient, HostPaths], monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    """The client goes away once the host has its terminal, before the host
    answered what it took (the answer fails: the client is gone), or the
    connection is closed just before the stream starts: either way the host
    closes its copies of the terminal (and reads no key of it). The stream is
    the connection's before anything can fail or close it (host/requests.py
    ``_op_watch``)."""
    server, engine, paths = served
    sid = f"r-gone-{when}"
    engine.exec(sid, f"echo ready-{sid}", wait_ms=20_000)
    master, slave, path = _person_terminal()
    received, gone = threading.Event(), threading.Event()
    real_receive = host_requests.receive

    def receive(sock: socket.socket) -> list[int]:
        fds = real_receive(sock)
        received.set()  # in the host's hands now (in flight, they were in nobody's)
        if when == "before-the-reply":
            assert gone.wait(T), "the test's client did not go"
        return fds

    monkeypatch.setattr(host_requests, "receive", receive)
    if when == "before-the-start":
        real_start = Connection.start_sender

        def start_sender(self: Connection) -> None:
            if self.client.get("session") == sid:
                self.close()  # as a host stopping, or the sender seeing the peer gone, would
            real_start(self)

        monkeypatch.setattr(Connection, "start_sender", start_sender)
    before = len(os.listdir("/proc/self/fd"))
    try:
        conn = Conn(paths, _client(sid))
        reply = conn.call("watch", {"session_id": sid, "tty": True, "keys": True, "caller": "p", "detach": "\x1d"})
        assert reply == {"tty": "send"}
        fds = _opened_for_host(path)
        socket.send_fds(conn.link.sock, [FD_BYTE], fds)
        for fd in fds:
            os.close(fd)
        assert received.wait(T)
        if when == "before-the-reply":
            conn.close()
            gone.set()
        wait_until(lambda: _fds_to(path) == 1, T, msg="the host still holds the terminal")
        if when == "before-the-start":
            conn.close()
        # Nothing of the watch stays: not the terminal, not the keys' wake-up pipe, not the socket.
        wait_until(lambda: len(os.listdir("/proc/self/fd")) <= before, T,
                   msg=f"more descriptors than the {before} before")  # fmt: skip
        engine.exec(sid, f"echo still-{sid}", wait_ms=20_000)  # the host serves on
    finally:
        gone.set()
        os.close(master)
        os.close(slave)


def test_a_bad_watch_again_leaves_the_handed_stream_working(served: tuple[HostServer, HostClient, HostPaths]) -> None:
    """A watch again with a detach key the host refuses is answered with
    INVALID_ARGUMENT before the old stream goes: the host still holds the
    terminal and writes the session's output to it."""
    server, engine, paths = served
    sid = "r-rewatch"
    engine.exec(sid, f"echo ready-{sid}", wait_ms=20_000)
    engine.resize(sid, 100, 30)
    master, slave, path = _person_terminal(100, 30)
    out = _Master(master)
    conn = Conn(paths, _client(sid))
    try:
        pipe, screen = _handed(conn, sid, _opened_for_host(path))
        pipe.send("tty_go", {"session_id": sid, "screen": screen["tty"], "live": True}, errors_only=True)
        engine.exec(sid, "printf 'live-%s\\n' before", wait_ms=20_000)
        wait_until(lambda: out.has(b"live-before"), T, msg="the host did not write the output")
        got: list[Any] = []
        pipe.send("watch", {"session_id": sid, "tty": True, "keys": True, "caller": "p", "detach": "\x03"})

        def refused() -> dict[str, Any] | None:
            if select.select([pipe.fileno()], [], [], 0.05)[0]:
                got.extend(pipe.read() or [])
            return next((m for m in got if isinstance(m, dict) and m.get("op") == "watch"), None)

        reply = wait_until(refused, T)
        assert reply["ok"] is False and reply["error"]["code"] == "INVALID_ARGUMENT", reply
        assert reply["error"]["details"].get("field") == "detach", reply
        assert _fds_to(path) == 3  # the test's slave, and the host's two copies
        engine.exec(sid, "printf 'live-%s\\n' after", wait_ms=20_000)
        wait_until(lambda: out.has(b"live-after"), T, msg="the host no longer writes the output")
    finally:
        conn.close()
        wait_until(lambda: _fds_to(path) == 1, T)
        os.close(master)
        os.close(slave)


def test_a_screen_during_the_release_does_not_keep_the_terminal(
    served: tuple[HostServer, HostClient, HostPaths],
) -> None:
    """``release`` gives the terminal back under the stream's lock: a screen
    (here a resize) that comes while the host's copy is being closed finds
    the terminal gone, so the stream does not hold its pieces for a client
    that will never answer; they go on as ``bytes`` events. The hook delivers
    the screen at the one moment the old code allowed it: the terminal's
    ``close`` with the stream's lock free."""
    server, engine, paths = served
    sid = "r-release"
    engine.exec(sid, f"echo ready-{sid}", wait_ms=20_000)
    engine.resize(sid, 100, 30)
    master, slave, path = _person_terminal(100, 30)
    lines: list[bytes] = []
    stream = ViewerStream(sid, lambda: lines.append(stream.take()), lambda line: bool(lines.append(line)) or True)
    handed = TtyOut(os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC))
    real_close = handed.close
    screens_in_close: list[bool] = []

    def close() -> None:
        if not stream._lock.locked():  # the stream's lock is free: a screen can come now
            server.registry.resize(sid, 90, 28)
            screens_in_close.append(True)
        real_close()

    handed.close = close  # type: ignore[method-assign]
    stream.hand(handed)
    try:
        stream.start(server.registry)
        assert stream.tty is not None
        screen = wait_until(lambda: next((e for e in [_event(x) for x in lines] if e and e.get("type") == "screen"), None), T)
        stream.go(screen["tty"], True)
        assert stream.direct
        stream.release()
        assert not stream.direct
        assert not screens_in_close, "the terminal was closed with the stream's lock free"
        engine.exec(sid, "printf 'after-%s\\n' release", wait_ms=20_000)
        wait_until(lambda: any(b"after-release" in _bytes_of(x, sid) for x in lines), T,
                   msg="the stream holds the pieces for a terminal given back")  # fmt: skip
        assert _fds_to(path) == 1
    finally:
        stream.close()
        os.close(master)
        os.close(slave)


def _event(line: bytes) -> dict[str, Any] | None:
    for one in line.splitlines():
        try:
            msg = json.loads(one)
        except ValueError:
            continue
        if isinstance(msg, dict) and isinstance(msg.get("event"), dict) and msg["event"].get("type") == "screen":
            return msg["event"]  # type: ignore[no-any-return]
    return None


def _bytes_of(line: bytes, sid: str) -> bytes:
    out = b""
    for one in line.splitlines():
        try:
            event = json.loads(one).get("event") or {}
        except ValueError:
            continue
        if event.get("type") == "bytes" and event.get("session_id") == sid:
            out += base64.b64decode(event["data"])
    return out


def test_the_last_to_type_sets_the_size_of_its_output_terminal(
    served: tuple[HostServer, HostClient, HostPaths],
) -> None:
    """A client whose keyboard and screen are two terminals (``attach < /dev/pts/A``
    in pane B): the host, reading the keys while the window is drawn, resizes
    the session to the window the person sees, the output terminal's."""
    server, engine, paths = served
    sid = "r-size"
    engine.exec(sid, f"echo ready-{sid}", wait_ms=20_000)
    engine.resize(sid, 90, 28)
    out_master, out_slave, out_path = _person_terminal(101, 31)
    in_master, in_slave, in_path = _person_terminal(81, 25)
    conn = Conn(paths, _client(sid))
    try:
        pipe, screen = _handed(conn, sid, [
            os.open(out_path, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC),
            os.open(in_path, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC),
        ])  # fmt: skip
        assert (screen["screen"]["cols"], screen["screen"]["rows"]) == (90, 28)
        pipe.send("tty_go", {"session_id": sid, "screen": screen["tty"], "live": False}, errors_only=True)
        job = engine.exec(sid, "cat", tty=True, source="notebook", wait_ms=0)
        assert isinstance(job, jobs.Job)
        tty.setraw(in_slave)  # as the client leaves its terminal: each key read as typed
        os.write(in_master, b"k")
        size = wait_until(lambda: (lambda s: (s["cols"], s["rows"]) != (90, 28) and (s["cols"], s["rows"]))(engine.screen(sid)), T)
        assert size == (101, 31)
        engine.interrupt(sid)
        assert job.wait(T)
    finally:
        conn.close()
        wait_until(lambda: _fds_to(out_path) == 1 and _fds_to(in_path) == 1, T)
        for fd in (out_master, out_slave, in_master, in_slave):
            os.close(fd)


def test_a_failed_key_after_the_connection_closed_ends_quietly() -> None:
    """host/tty_in.py ``_say``: a key that fails once the host has closed the
    client's connection (the client left, the host stops) has nobody to be
    told to; the reader or typist thread ends without an uncaught error."""
    gone, other = socket.socketpair()
    other.close()
    gone.close()  # as Connection.close leaves its socket
    keys = TtyKeys(os.open(os.devnull, os.O_RDONLY), ViewerStream("s", lambda: None), None, None, b"\x1d",  # type: ignore[arg-type]
                   lambda event: gone.sendall(P.event_line(event)))  # fmt: skip
    assert keys._failed(NoSuchSession("no session s")) is False
    assert keys.fd is None
