"""A host connection's lines stay whole: a line sent with ``Connection.send``
(a keys event, a reply) while a viewer stream's line is only partly written
(``Connection.send_stream`` left its tail) goes after that tail, never into
it (host/connection.py). Real sockets: the client end reads what the host
end wrote."""

from __future__ import annotations

import json
import os
import select
import socket
import threading
import time

from dsh_magics.host import protocol as P
from dsh_magics.host.connection import Connection
from dsh_magics.host.interest import Interest

from ..conftest import wait_until

T = 30.0


def test_an_event_sent_while_a_stream_line_is_cut_goes_after_it() -> None:
    host_end, client_end = socket.socketpair()
    host_end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    client_end.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    conn = Connection(host_end, (os.getpid(), os.getuid(), os.getgid()), Interest(lambda sid: None))
    try:
        screen = P.event_line({"type": "bytes", "session_id": "s", "data": "A" * 300_000})
        assert conn.send_stream(screen)  # the socket takes a part: the tail waits (no sender thread here)
        assert conn._unsent, "the socket took the whole line: nothing to cut into"
        detach = P.event_line({"type": "keys", "session_id": "s", "what": "detach"})
        sender = threading.Thread(target=conn.send, args=(detach,), daemon=True)
        sender.start()  # (it waits for the client end to read)
        got = bytearray()
        deadline = time.monotonic() + T
        while got.count(b"\n") < 2 and time.monotonic() < deadline:
            if select.select([client_end], [], [], 0.5)[0]:
                got += client_end.recv(65536)
        sender.join(T)
        lines = bytes(got).split(b"\n")
        assert len(lines) == 3 and lines[2] == b"", f"{len(got)} bytes in {len(lines) - 1} lines"
        assert lines[0] + b"\n" == screen
        assert json.loads(lines[1])["event"]["what"] == "detach"
    finally:
        conn.close()
        client_end.close()
        wait_until(lambda: conn.closed, T)
