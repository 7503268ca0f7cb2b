"""The launch check an interrupt waits for (``command_launched`` of both
process layers): a pipeline stage that stays a copy of the shell (a
function: ``f | cat``) counts as started once it waits for a command of its
own, so a Ctrl-C is not sent on a timer while that command may still be an
un-``exec``-ed copy of the shell, which loses the signal (the likely cause of
a CI failure of tests/reliability/test_interrupt_race.py, function-stage:
``sleep`` kept running after the Ctrl-C)."""

from __future__ import annotations

import os
from types import ModuleType

import pytest

from dsh_magics.terminal import Registry
from dsh_magics.terminal.core.proclayer import procfs
from tests.conftest import wait_until
from tests.procinfo import comm

pytestmark = pytest.mark.skipif(procfs._WAIT4_NR is None, reason="no syscall table for this machine")


@pytest.fixture(params=["procfs", "portable"])
def layer(request: pytest.FixtureRequest) -> ModuleType:
    if request.param == "procfs":
        return procfs
    from dsh_magics.terminal.core.proclayer import portable

    return portable


@pytest.mark.parametrize(
    "command",
    ["f() { sleep 30; }; f | cat", "(sleep 30; echo never) | cat", "sleep 30 | cat"],
    ids=["function-stage", "subshell-stage", "plain"],
)
def test_a_stage_that_is_a_copy_of_the_shell_counts_as_launched_once_it_waits(
    layer: ModuleType, command: str
) -> None:
    reg = Registry(login=False)
    try:
        shell = reg.attach("launch").pid
        assert shell is not None
        job = reg.exec("launch", command)
        sleep = wait_until(
            lambda: next((p for p in procfs.descendants(shell) if comm(p) == "sleep"), None), timeout=20
        )
        pgrp = os.getpgid(sleep)
        wait_until(
            lambda: layer.command_launched(shell, pgrp) is True,
            timeout=20,
            msg="never seen launched: an interrupt would wait out its hold and be sent on a timer",
        )
        reg.interrupt("launch")
        assert job.wait(20) and job.result.status == "interrupted", job.result
    finally:
        reg.close_all()


def test_both_layers_name_the_same_copies_of_the_shell(layer: ModuleType) -> None:
    """``shell_copies``: the members of a group that are still copies of the
    shell (a subshell stage), not those that ``exec``-ed (``sleep``, ``cat``).
    The interrupter notes them before a SIGINT it cannot vouch for, and sends
    one more if one of them has ``exec``-ed since (it took the signal in
    bash's handler, so the program it became never saw it)."""
    reg = Registry(login=False)
    try:
        shell = reg.attach("copies").pid
        assert shell is not None
        job = reg.exec("copies", "(sleep 30; echo never) | cat")
        sleep = wait_until(
            lambda: next((p for p in procfs.descendants(shell) if comm(p) == "sleep"), None), timeout=20
        )
        pgrp = os.getpgid(sleep)
        subshell = next(p for p in procfs.descendants(shell) if comm(p) == "bash")
        assert layer.shell_copies(shell, pgrp) == [subshell]
        # The copy is not counted as having taken it; cat and sleep have no
        # handler (the portable layer cannot see handlers: any program counts).
        assert layer.sigint_taken(shell, pgrp, [subshell]) is (layer is not procfs)
        reg.interrupt("copies")
        assert job.wait(20) and job.result.status == "interrupted", job.result
    finally:
        reg.close_all()
