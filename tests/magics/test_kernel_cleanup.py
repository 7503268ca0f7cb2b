"""Kernel shutdown, restart and SIGTERM close every terminal: checked with ps
that no bash and no job (nor a job's background child) survives."""

from __future__ import annotations

import os
import signal

import pytest

from tests.conftest import live_pids, wait_until
from tests.magics.kernel_support import Kernel
from tests.processes import ps_matching

pytestmark = pytest.mark.kernel


def _start_jobs(k: Kernel, mark: str) -> set[int]:
    """Two terminals, one with a job that left a background child running;
    returns the shells' pids once everything is visible in ps."""
    k.run("%load_ext dsh_magics")
    # nohup: the child ignores the hangup a dying shell passes on; only an
    # explicit close (kill_tree) ends it.
    k.run(f"%bash_exec nohup sleep {mark}1 >/dev/null 2>&1 & sleep {mark}2")
    k.run(f"%bash_exec --session second sleep {mark}3")
    wait_until(lambda: len(ps_matching(f"sleep {mark}")) == 3, 10, msg="jobs started")
    shells = {int(p) for p in k.run("t = %bash_list\nprint(*[i.pid for i in t])").stream().split()}
    assert len(shells) == 2 and shells <= live_pids()
    return shells


class _Survivors(Exception):
    """What is still running (the wait reports the last one: the rare CI
    failure of the restart case did not say what survived)."""


def _all_gone(mark: str, shells: set[int]) -> bool:
    left, shells_left = ps_matching(f"sleep {mark}"), shells & live_pids()
    if left or shells_left:
        raise _Survivors(f"processes {left}, shells {sorted(shells_left)}")
    return True


def test_shutdown_and_restart_leave_no_process_behind() -> None:
    mark = f"33{os.getpid()}"
    k = Kernel()
    try:
        shells = _start_jobs(k, mark + "1")
        k.km.restart_kernel(now=False)
        wait_until(
            lambda: _all_gone(mark + "1", shells), 15, msg="processes survived a kernel restart", retry=(_Survivors,)
        )
        k.kc.wait_for_ready(timeout=60)
        shells = _start_jobs(k, mark + "2")
        kernel_pid = k.pid
    finally:
        k.shutdown()
    wait_until(lambda: kernel_pid not in live_pids(), 15, msg="the kernel did not exit")
    wait_until(
        lambda: _all_gone(mark + "2", shells), 15, msg="processes survived a kernel shutdown", retry=(_Survivors,)
    )


def test_sigterm_closes_the_terminals_before_the_kernel_dies() -> None:
    mark = f"34{os.getpid()}"
    k = Kernel()
    try:
        shells = _start_jobs(k, mark)
        os.kill(k.pid, signal.SIGTERM)
        k.km.provisioner.process.wait(15)  # type: ignore[union-attr]
        # died of SIGTERM, as it would have without the extension ...
        assert k.km.provisioner.process.returncode == -signal.SIGTERM  # type: ignore[union-attr]
        # ... but only after closing every terminal
        wait_until(lambda: _all_gone(mark, shells), 15, msg="processes survived SIGTERM", retry=(_Survivors,))
    finally:
        k.kc.stop_channels()
        k.km.cleanup_resources()
