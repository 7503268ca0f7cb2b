"""``procs.exited_within``: a wait for one process's exit, on its pidfd, or
by looking where ``os`` has no ``pidfd_open`` (which raised before session
40's review: the host's stop and the orphan sweeper use it)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from dsh_magics.terminal.core import procs


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "no-pidfd"])
def test_a_process_that_runs_on_times_out_and_one_that_exits_is_gone(pidfd: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not pidfd:
        monkeypatch.delattr(os, "pidfd_open", raising=False)
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        assert procs.exited_within(child.pid, 0.05) is False
        assert child.stdin is not None
        child.stdin.close()  # it exits on the end of its input; left unreaped, a zombie counts as gone
        assert procs.exited_within(child.pid, 30.0) is True
    finally:
        child.kill()
        child.wait()
    assert procs.exited_within(child.pid, 0.05) is True  # reaped: no such process
