"""The wire format on its own: line splitting with a size limit, engine
values and errors surviving the round trip."""

from __future__ import annotations

import json
import socket
import threading

import pytest

from dsh_magics import errors
from dsh_magics.host import protocol as P
from dsh_magics.terminal import ReadResult, Result, TerminalInfo


def _reader_over(chunks: list[bytes], limit: int) -> list[object]:
    a, b = socket.socketpair()

    def feed() -> None:
        for c in chunks:
            a.sendall(c)
        a.close()

    t = threading.Thread(target=feed)
    t.start()
    items = list(P.LineReader(b, limit))
    t.join()
    b.close()
    return items


def test_lines_split_across_and_within_chunks() -> None:
    items = _reader_over([b'{"a":', b'1}\n{"b":2}\n{"c"', b":3}\n"], limit=100)
    assert items == [b'{"a":1}', b'{"b":2}', b'{"c":3}']


def test_oversized_line_is_reported_once_and_skipped() -> None:
    big = b"x" * 5000
    items = _reader_over([b"ok1\n", big[:3000], big[3000:], b"\nok2\n"], limit=1000)
    assert items[0] == b"ok1"
    assert isinstance(items[1], P.Oversized) and items[1].size == 5000
    assert items[2:] == [b"ok2"]


def test_oversized_line_in_one_chunk_with_followers() -> None:
    items = _reader_over([b"y" * 2000 + b"\nafter\n"], limit=1000)
    assert isinstance(items[0], P.Oversized)
    assert items[1:] == [b"after"]


def test_result_round_trip_keeps_times_and_flags() -> None:
    r = Result(
        job_id="bash-1", session_id="s", command="echo é", status="completed", exit_code=3,
        output="é\udcff\n", timed_out=False, started_at=1.25, ended_at=2.5, cwd="/tmp",
        dropped_lines=4, fresh_shell=True, signal=None, note="n",
    )  # fmt: skip
    line = P.ok_reply(1, P.result_to_wire(r))
    assert line.isascii() and line.endswith(b"\n")
    back = P.result_from_wire(json.loads(line)["value"])
    assert back == r
    assert back.duration == pytest.approx(1.25)


def test_info_and_read_round_trip() -> None:
    info = TerminalInfo("s", "busy", "/", "bash-2", 42, 10.0, job_started_at=11.0, lines=3)
    assert P.info_from_wire(json.loads(P.encode(P.info_to_wire(info)))) == info
    rr = ReadResult("s", ["a", "b"], 5, 7, 2, "par", None)
    assert P.read_from_wire(json.loads(P.encode(P.read_to_wire(rr)))) == rr


def test_unknown_fields_from_a_newer_host_are_ignored() -> None:
    info = P.info_to_wire(TerminalInfo("s", "idle", "/", None, 1, 1.0))
    info["something_new"] = 1
    assert P.info_from_wire(info).session_id == "s"


@pytest.mark.parametrize(
    "exc",
    [errors.SessionBusy("busy", session_id="s", job_id="j"), errors.NoSuchJob("gone"), errors.InvalidArgument("bad")],
)
def test_errors_come_back_as_the_same_class(exc: errors.DshError) -> None:
    wire = json.loads(P.error_reply(3, exc))
    assert wire["ok"] is False and wire["id"] == 3
    back = P.error_from_wire(wire["error"])
    assert type(back) is type(exc) and back.message == exc.message and back.details == exc.details


def test_unknown_error_code_keeps_its_code() -> None:
    back = P.error_from_wire({"code": "SOMETHING_NEW", "message": "m", "details": {"code": "x"}})
    assert isinstance(back, errors.DshError) and back.code == "SOMETHING_NEW"
