"""The attach client's ``Pipe`` never drops a line in silence: a line that
is not JSON (a stream line cut into by another, once: host/connection.py)
ends the attach with a clear HOST_UNAVAILABLE, as the stream cannot go on
without it. A real socket pair; the host's end is written by the test."""

from __future__ import annotations

import socket
from types import SimpleNamespace
from typing import Any

import pytest

from dsh_magics.attach.link import Pipe
from dsh_magics.errors import HostUnavailable
from dsh_magics.host import protocol as P
from dsh_magics.host.stream import bytes_prefix


def test_a_line_that_is_not_json_is_an_error_not_a_silence() -> None:
    host_end, client_end = socket.socketpair()
    conn: Any = SimpleNamespace(link=SimpleNamespace(sock=client_end), close=client_end.close)
    pipe = Pipe(conn, blocking=True)
    pipe.bytes_prefix = bytes_prefix("s")
    try:
        good = P.event_line({"type": "keys", "session_id": "s", "what": "bell"})
        host_end.sendall(good)
        assert pipe.read() == [{"v": P.VERSION, "event": {"type": "keys", "session_id": "s", "what": "bell"}}]
        cut = bytes_prefix("s") + b"QUFB" + good  # a bytes line with a keys line spliced into it
        host_end.sendall(cut)
        with pytest.raises(HostUnavailable, match="not JSON"):
            pipe.read()
    finally:
        host_end.close()
        client_end.close()
