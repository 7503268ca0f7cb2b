"""Waits that end on events: matched, settled, idle, timeout; bad regex.

The canonical case runs a real server: ``python3 -m http.server 0``, waits
until it says it serves, reads the port from the matched line and fetches a
page from it."""

from __future__ import annotations

import re
import threading
import urllib.request
from typing import Any

import pytest

from dsh_magics.errors import InvalidArgument
from dsh_magics.terminal import Registry, waits
from dsh_magics.terminal.requests import WaitRequest
from tests.conftest import Gate, wait_until


def _wait(engine: Any, job_id: str, timeout: float, **options: Any) -> Any:
    """The wait itself (waits.run) on ``engine``, which may be a spy around
    the registry; the request is built, and checked, as the engine builds it."""
    return waits.run(engine, WaitRequest.build(job_id=job_id, timeout=timeout, **options))


class _Started:
    """Delegates to the real registry and says when a wait has taken its
    starting point (its first ``read``), so a test can produce output that
    is certainly *after* the wait began."""

    def __init__(self, reg: Registry) -> None:
        self._reg = reg
        self.began = threading.Event()

    def read(self, *a: Any, **kw: Any) -> Any:
        out = self._reg.read(*a, **kw)
        self.began.set()
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._reg, name)


def test_http_server_port_from_the_matched_line(reg: Registry, sid: str) -> None:
    job = reg.exec(sid, "python3 -m http.server 0 --bind 127.0.0.1")
    try:
        res = _wait(reg, job.id, 30, until=r"Serving HTTP")
        assert res.reason == "matched", res
        assert res.status == "running" and not res.timed_out
        port = int(re.search(r"port (\d+)", res.match_text).group(1))  # type: ignore[union-attr]
        # The line number is the ring's: reading from it gives that line.
        # (the line may still be the unfinished last one, as bash_read shows it)
        rr = reg.read(sid, since=res.match_line)
        assert (rr.lines[0] if rr.lines else rr.partial) == res.match_text
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as page:
            assert page.status == 200
    finally:
        reg.interrupt(sid)
        assert reg.wait(job.id, 15).done  # the server exits 0 on Ctrl-C


def test_a_late_first_wait_still_matches(reg: Registry, sid: str) -> None:
    """exec, then a wait that comes after the line was printed (a person
    running the next cell, a model's next turn): the first wait on a job
    looks at all of its output."""
    job = reg.exec(sid, "echo Serving on port 4321; sleep 30")
    wait_until(lambda: "Serving" in reg.read(sid).text, 10)
    res = _wait(reg, job.id, 10, until=r"port (\d+)")
    assert res.reason == "matched" and res.match_text == "Serving on port 4321"
    reg.interrupt(sid)
    reg.wait(job.id, 15)


def test_a_later_wait_never_returns_the_same_line(reg: Registry, sid: str, gate: Gate) -> None:
    job = reg.exec(sid, f"echo ready-1; {gate.shell}; echo ready-2; sleep 30")
    first = _wait(reg, job.id, 10, until="ready")
    assert first.reason == "matched" and first.match_text == "ready-1"
    # ready-1 was returned: a second wait does not match it again.
    again = _wait(reg, job.id, 0.3, until="ready")
    assert again.reason == "timeout" and again.timed_out and again.match_line is None
    spy = _Started(reg)
    out: list[Any] = []
    t = threading.Thread(target=lambda: out.append(_wait(spy, job.id, 30, until=r"ready-\d")))
    t.start()
    assert spy.began.wait(10)
    gate.open()
    t.join(30)
    res = out[0]
    assert res.reason == "matched" and res.match_text == "ready-2"
    assert res.match_line == first.match_line + 1
    rr = reg.read(sid, since=res.match_line)
    assert (rr.lines[0] if rr.lines else rr.partial) == "ready-2"
    reg.interrupt(sid)
    reg.wait(job.id, 15)


def test_unfinished_line_can_match(reg: Registry, sid: str, gate: Gate) -> None:
    job = reg.exec(sid, f"{gate.shell}; printf 'Password for x: '; sleep 30")
    spy = _Started(reg)
    out: list[Any] = []
    t = threading.Thread(target=lambda: out.append(_wait(spy, job.id, 30, until=r"Password.*: $")))
    t.start()
    assert spy.began.wait(10)
    gate.open()
    t.join(30)
    assert out[0].reason == "matched" and out[0].match_text == "Password for x: "
    reg.interrupt(sid)
    reg.wait(job.id, 15)


def test_settled_before_anything_else(reg: Registry, sid: str) -> None:
    job = reg.exec(sid, "echo done; exit 3")
    res = _wait(reg, job.id, 30, until="never-printed", idle_ms=60_000)
    assert res.reason == "settled" and res.done and not res.timed_out
    assert res.exit_code == 3


def test_idle_after_output_stops(reg: Registry, sid: str) -> None:
    job = reg.exec(sid, "for i in 1 2 3; do echo $i; done; sleep 30")
    res = _wait(reg, job.id, 30, idle_ms=300)
    assert res.reason == "idle" and res.status == "running" and not res.timed_out
    assert "3" in reg.read(sid).text
    reg.interrupt(sid)
    reg.wait(job.id, 15)


def test_timeout_when_nothing_happens(reg: Registry, sid: str) -> None:
    job = reg.exec(sid, "sleep 30")
    res = _wait(reg, job.id, 0.2, until="x")
    assert res.reason == "timeout" and res.timed_out and res.status == "running"
    reg.interrupt(sid)
    reg.wait(job.id, 15)


@pytest.mark.parametrize(
    "kwargs,field",
    [
        ({"until": "("}, "until"),
        ({"until": ""}, "until"),
        ({"until": 5}, "until"),
        ({"idle_ms": 0}, "idle_ms"),
        ({"idle_ms": True}, "idle_ms"),
        ({"on_input": "yes"}, "on_input"),
    ],
)
def test_bad_options_are_invalid_argument(reg: Registry, sid: str, kwargs: dict, field: str) -> None:
    job = reg.exec(sid, "true", wait_ms=10_000)
    with pytest.raises(InvalidArgument) as e:
        _wait(reg, job.job_id, 1, **kwargs)
    assert e.value.code == "INVALID_ARGUMENT" and e.value.details["field"] == field


def test_a_wait_on_a_job_of_a_closed_terminal(sid: str) -> None:
    """The terminal is gone: the wait reports the settled job (a wait that
    went back to the engine's own wait here recursed without end)."""
    from dsh_magics.terminal import Registry as R

    reg = R(login=False)
    try:
        job = reg.exec(sid, "sleep 30")
        reg.close(sid)
        res = _wait(reg, job.id, 5, until="x", idle_ms=100)
        assert res.reason == "settled" and res.done and res.status == "shell_exited"
    finally:
        reg.close_all()
