"""Ctrl-C pressed right after a command's first output must land.

``echo x; sleep 30`` interrupted the moment ``x`` appears is the worst case:
bash is then between forking ``sleep`` and handing it the terminal, and a
SIGINT sent to the foreground group at that instant reaches only bash (which
ignores it while it waits for a foreground child) or a child that has not yet
restored default signal handling. Measured on bare bash in a PTY, that loses
roughly one Ctrl-C in ten. The engine has to notice and deliver it again; an
agent that gets "running" back from an interrupt has no way to tell.
"""

from __future__ import annotations

import pytest

from dsh_magics.terminal import Registry

from .conftest import run, wait_for_output


def _interrupt_rounds(reg: Registry, template: str, rounds: int) -> None:
    pid = reg.attach("race").pid
    for i in range(rounds):
        job = reg.exec("race", template.format(i=i))
        wait_for_output(reg, job.id, f"s{i}")
        assert reg.interrupt("race") is job
        res = reg.wait(job.id, timeout=3)
        assert res.status == "interrupted" and res.exit_code == 130, (i, res.to_dict())
        assert res.output == f"s{i}\n", (i, res.output)
        assert reg.info("race").pid == pid, f"the shell died at round {i}"
    assert run(reg, "race", "echo after").output == "after\n"


@pytest.mark.parametrize(
    "template,rounds",
    [("echo s{i}; sleep 30", 60), ("echo s{i}; (sleep 30; echo never)", 20)],
    ids=["sleep", "subshell"],
)
def test_ctrl_c_right_after_first_output_always_lands(
    reliability_reg: Registry, template: str, rounds: int
) -> None:
    _interrupt_rounds(reliability_reg, template, rounds)


@pytest.mark.parametrize(
    "template,rounds",
    [
        ("echo s{i}; sleep 30 | cat", 60),
        ("echo s{i}; sleep 30 | cat | cat", 20),
        ("f() {{ sleep 30; }}; echo s{i}; f | cat", 20),
    ],
    ids=["two-stage", "three-stage", "function-stage"],
)
def test_ctrl_c_on_a_pipeline_right_after_first_output(reliability_reg: Registry, template: str, rounds: int) -> None:
    # The Ctrl-C falls while bash is still forking the pipeline; the engine
    # holds it until every stage exists and has exec'd (or briefly, for a
    # stage that stays a copy of the shell).
    _interrupt_rounds(reliability_reg, template, rounds)
