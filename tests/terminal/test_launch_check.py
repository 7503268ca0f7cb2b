"""The launch check an interrupt waits for (procfs.command_launched): a
pipeline stage that stays a copy of the shell (a function, ``f | cat``)
counts as started once it waits for a command of its own, so a Ctrl-C is
not sent on a timer while it may still be setting up its signals (the cause
of a CI failure of tests/reliability/test_interrupt_race.py, function-stage:
``sleep`` kept running after the Ctrl-C)."""

from __future__ import annotations

import os

import pytest

from dsh_magics.terminal import Registry
from dsh_magics.terminal.local.proclayer import procfs
from tests.conftest import wait_until

pytestmark = pytest.mark.skipif(procfs._WAIT4_NR is None, reason="no syscall table for this machine")


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


@pytest.mark.parametrize(
    "command",
    ["f() { sleep 30; }; echo go; f | cat", "echo go; (sleep 30; echo never) | cat", "echo go; sleep 30 | cat"],
    ids=["function-stage", "subshell-stage", "plain"],
)
def test_a_stage_that_is_a_copy_of_the_shell_counts_as_launched_once_it_waits(command: str) -> None:
    reg = Registry(login=False)
    try:
        shell = reg.attach("launch").pid
        assert shell is not None
        job = reg.exec("launch", command)
        wait_until(lambda: any(_comm(p) == "sleep" for p in procfs.descendants(shell)), timeout=20)
        sleep = next(p for p in procfs.descendants(shell) if _comm(p) == "sleep")
        pgrp = os.getpgid(sleep)
        wait_until(lambda: procfs.command_launched(shell, pgrp) is True, timeout=20,
                   msg="never seen launched: an interrupt would wait out its hold")
        reg.interrupt("launch")
        assert job.wait(20) and job.result.status == "interrupted"
    finally:
        reg.close_all()
