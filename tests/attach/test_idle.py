"""The host's idle policy (host/idle.py): no client, no attached person and no
running job for the idle time stops the host, and its log says why."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh_magics.errors import InvalidArgument
from dsh_magics.host import HostClient, HostPaths
from dsh_magics.host.idle import DEFAULT_IDLE, configured, parse_idle

from ..conftest import wait_until
from ..host.conftest import new_dir, stop_everything
from .conftest import T, Tmux, attach_command


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def idle_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("DSH_MAGICS_HOST_IDLE", "1")
    monkeypatch.setenv("DSH_MAGICS_LOGIN", "0")
    d = new_dir()
    try:
        yield d
    finally:
        stop_everything(d)
        shutil.rmtree(d, ignore_errors=True)


def _retired_log(d: str, name: str) -> str:
    """The log of a host that stopped as idle (kept, see docs/host.md)."""
    path = HostPaths.for_name(name, d).log
    return open(path).read() if os.path.exists(path) else ""


def test_parse_idle() -> None:
    assert parse_idle("90") == 90 and parse_idle("30m") == 1800 and parse_idle("4h") == 4 * 3600
    assert parse_idle("0") is None and parse_idle("off") is None
    assert configured({}) == DEFAULT_IDLE and configured({"DSH_MAGICS_HOST_IDLE": "2m"}) == 120
    with pytest.raises(InvalidArgument, match="4h"):
        parse_idle("soon")


def test_an_idle_host_stops_and_says_why(idle_dir: str) -> None:
    c = HostClient(HostPaths.for_name("idle1", idle_dir))
    pid = c.connect()["pid"]
    c.exec("i1", "echo hi", wait_ms=20_000)
    c.detach()
    wait_until(lambda: not _alive(pid), T, msg="the idle host kept running")
    assert "idle for 1 s: no client, no attached person and no running job" in _retired_log(idle_dir, "idle1")


def test_a_running_job_keeps_the_host(idle_dir: str, tmp_path: Path) -> None:
    c = HostClient(HostPaths.for_name("idle2", idle_dir))
    pid = c.connect()["pid"]
    done = tmp_path / "done"
    c.exec("i2", f"sleep 3; echo finished > {done}")  # runs 3x the idle time with no client
    c.detach()
    wait_until(done.exists, T, msg="the host stopped under a running job")
    wait_until(lambda: not _alive(pid), T, msg="the host kept running once idle")


def test_an_attached_person_keeps_the_host(idle_dir: str) -> None:
    c = HostClient(HostPaths.for_name("idle3", idle_dir))
    pid = c.connect()["pid"]
    c.exec("i3", "echo person-here", wait_ms=20_000)
    t = Tmux(attach_command("i3", idle_dir))
    try:
        t.wait_for("person-here")
        c.detach()  # the attached person is the host's only client now
        # Observe a window of three idle times: the host must live through it.
        start = time.monotonic()
        wait_until(lambda: not _alive(pid) or time.monotonic() - start > 3, T)
        assert _alive(pid), "the host stopped under an attached person"
        t.keys("C-]")
        t.wait_for("TTY-RESTORED")
        wait_until(lambda: not _alive(pid), T, msg="the host kept running once the person left")
    finally:
        t.kill()
