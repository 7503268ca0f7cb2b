"""Whatever a peer sends, the host answers with an error and keeps serving:
random bytes, oversized and endless lines, unknown versions and operations,
wrong argument types, deep nesting, pipelined requests."""

from __future__ import annotations

import json
import random
import socket

import psutil
import pytest

from dsh_magics.host import HostClient
from dsh_magics.host import protocol as P


class Raw:
    """A bare protocol connection, for sending exactly the bytes we want."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(30)
        self.sock.connect(path)
        self.reader = P.LineReader(self.sock, P.MAX_REPLY)

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def reply(self) -> dict:
        line = self.reader.next_item()
        assert isinstance(line, bytes), f"connection ended: {line!r}"
        return json.loads(line)

    def ping(self, msg_id: int = 99) -> None:
        self.send(P.request(msg_id, "exists", {"session_id": "fuzz-nothing"}))
        r = self.reply()
        assert r == {"v": 1, "id": msg_id, "ok": True, "value": False}, r

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def raw(client: HostClient):
    r = Raw(client.paths.socket)
    yield r
    r.close()


def _error(r: dict, reason: str | None = None) -> dict:
    assert r["v"] == 1 and r["ok"] is False, r
    err = r["error"]
    assert err["code"] == "INVALID_ARGUMENT", err
    if reason is not None:
        assert err["details"]["protocol"] == reason, err
    return err


def test_random_bytes_each_get_an_error(raw: Raw) -> None:
    rng = random.Random(1234)
    for _ in range(300):
        n = rng.randint(1, 300)
        junk = bytes(rng.randrange(256) for _ in range(n)).replace(b"\n", b"")
        junk = b"\x01" + junk  # never blank: blank lines are ignored, not answered
        raw.send(junk + b"\n")
        r = raw.reply()
        assert r["ok"] is False and r["id"] is None, r
    raw.ping()


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"not json", "malformed"),
        (b"[1, 2, 3]", "malformed"),
        (b'"just a string"', "malformed"),
        (b"{" * 3 + b'"v"', "malformed"),
        (b"[" * 200_000 + b"]" * 200_000, "malformed"),
        (json.dumps({"v": 2, "id": 1, "op": "list"}).encode(), "version"),
        (json.dumps({"id": 1, "op": "list"}).encode(), "version"),
        (json.dumps({"v": "1", "id": 1, "op": "list"}).encode(), "version"),
        (json.dumps({"v": 1, "id": 1, "op": "rm -rf"}).encode(), "op"),
        (json.dumps({"v": 1, "id": 1}).encode(), "op"),
        (json.dumps({"v": 1, "id": 1, "op": "list", "args": []}).encode(), "malformed"),
        (json.dumps({"v": 1, "id": [1], "op": "list"}).encode(), "malformed"),
    ],
)
def test_bad_messages(raw: Raw, payload: bytes, reason: str) -> None:
    raw.send(payload + b"\n")
    _error(raw.reply(), reason)
    raw.ping()


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"session_id": 5, "command": "true"},
        {"session_id": "s", "command": ["true"]},
        {"session_id": "s", "command": "true", "wait_ms": True},
        {"session_id": "s", "command": "true", "wait_ms": -1},
        {"session_id": "s", "command": "true", "surprise": 1},
        {"session_id": "bad/id", "command": "true"},
        {"session_id": "", "command": "true"},
    ],
)
def test_bad_arguments(raw: Raw, args: dict) -> None:
    raw.send(P.request(7, "exec", args))
    r = raw.reply()
    assert r["id"] == 7
    _error(r)
    raw.ping()


def test_oversized_line_gets_an_error_and_the_connection_goes_on(raw: Raw) -> None:
    raw.send(b'{"v":1,"id":1,"op":"list","args":{"pad":"' + b"x" * (P.MAX_REQUEST + 10) + b'"}}\n')
    err = _error(raw.reply(), "oversized")
    assert str(P.MAX_REQUEST) in err["message"]
    raw.ping()


def test_endless_line_does_not_grow_the_host(raw: Raw, client: HostClient) -> None:
    host = psutil.Process(client.host_info()["pid"])
    before = host.memory_info().rss
    chunk = b"y" * (1024 * 1024)
    for _ in range(3 * P.MAX_REQUEST // len(chunk)):  # 48 MB without a newline
        raw.send(chunk)
    raw.send(b"\n")
    _error(raw.reply(), "oversized")
    raw.ping()
    grown = host.memory_info().rss - before
    assert grown < 2 * P.MAX_REQUEST, f"host RSS grew by {grown / 1e6:.0f} MB"


def test_pipelined_requests_are_answered_in_order(raw: Raw) -> None:
    batch = b"".join(P.request(i, "exists", {"session_id": f"fuzz-{i}"}) for i in range(50))
    raw.send(batch + b"garbage\n" + P.request(50, "list", {}))
    ids = [raw.reply()["id"] for _ in range(52)]
    assert ids == list(range(50)) + [None, 50]


def test_a_peer_that_vanishes_mid_message_does_not_matter(client: HostClient) -> None:
    for _ in range(20):
        r = Raw(client.paths.socket)
        r.send(b'{"v":1,"id":1,"op":"exec","args":{"session_id":"fuzz-gone","comm')
        r.close()
    r = Raw(client.paths.socket)
    r.ping()
    r.close()
    assert client.exec("fuzz-after", "echo alive", wait_ms=10_000).output == "alive\n"
