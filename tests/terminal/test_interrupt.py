"""A real Ctrl-C: SIGINT to the PTY's foreground process group."""

from __future__ import annotations

import pytest

from tests.conftest import wait_until

from .conftest import run

CASES = {
    "sleep": "echo started; sleep 30",
    "builtin_loop": "echo started; while :; do :; done",
    "pipeline": "echo started; sleep 30 | cat",
    "subshell": "echo started; (sleep 30; echo never)",
}


@pytest.mark.parametrize("name", list(CASES))
def test_interrupt_settles_job_and_shell_survives(reg, name):
    before = reg.list()[0].pid if reg.list() else None
    job = reg.exec("t", CASES[name])
    wait_until(lambda: "started" in reg.result(job.id).output, 10)
    assert reg.interrupt("t") is job
    res = reg.wait(job.id, timeout=10)
    assert res.status == "interrupted", res
    assert res.exit_code == 130
    assert "never" not in res.output and res.output.startswith("started\n")
    # The same shell takes the next job cleanly, with no stale output.
    nxt = run(reg, "echo next")
    assert nxt.output == "next\n" and nxt.status == "completed"
    if before is not None:
        assert reg.list()[0].pid == before


def test_program_ignoring_sigint_keeps_running(reg, gate):
    # The program (the gate's cat) inherits the ignored SIGINT; it can only
    # end when the test opens the gate, so "completed" proves it outlived
    # the interrupt.
    job = reg.exec("t", f"trap '' INT; echo started; {gate.shell}; echo finished")
    wait_until(lambda: "started" in reg.result(job.id).output, 10)
    reg.interrupt("t")
    snap = reg.wait(job.id, timeout=0)
    assert snap.status == "running" and snap.timed_out
    gate.open()
    res = reg.wait(job.id, timeout=10)
    assert res.status == "completed" and res.output == "started\nfinished\n"
    run(reg, "trap - INT")
    assert run(reg, "echo after").output == "after\n"


def test_interrupt_when_idle_is_a_no_op(reg):
    run(reg, "true")
    assert reg.interrupt("t") is None
    assert run(reg, "echo ok").output == "ok\n"


def test_job_cancel_interrupts(reg):
    job = reg.exec("t", "sleep 30")
    wait_until(lambda: reg.info("t").status == "busy", 5)
    job.cancel()
    assert reg.wait(job.id, timeout=10).status == "interrupted"


def test_user_int_trap_still_settles(reg):
    job = reg.exec("t", "trap 'echo caught' INT; echo started; sleep 30")
    wait_until(lambda: "started" in reg.result(job.id).output, 10)
    reg.interrupt("t")
    res = reg.wait(job.id, timeout=10)
    assert res.status == "interrupted"
    run(reg, "trap - INT")
    assert run(reg, "echo fine").output == "fine\n"


def test_no_sigint_to_our_own_group():
    """A foreground group of 0 (a terminal whose shell just died) or our own
    group never gets the engine's SIGINT: it would interrupt the caller."""
    import os
    import signal

    from dsh_magics.terminal.local import interrupts

    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        interrupts._killpg(0)
        interrupts._killpg(os.getpgrp())
        os.kill(os.getpid(), 0)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert caught == []


def _foreground_group(shell_pid: int) -> int:
    """The terminal's foreground group, as the shell's /proc stat reports it (tpgid)."""
    with open(f"/proc/{shell_pid}/stat", "rb") as f:
        return int(f.read().rsplit(b")", 1)[1].split()[5])


def test_a_bash_script_is_a_launched_command_that_may_take_sigint(reg, tmp_path):
    """``bash script.sh`` has the shell's executable but its own argv: it is a
    launched command (so a Ctrl-C goes at once and is not re-sent), and with
    its INT trap it may have taken a SIGINT (so none is sent twice)."""
    from dsh_magics.terminal.core import procs

    script = tmp_path / "loop.sh"
    script.write_text("trap 'echo caught' INT\necho first\nwhile :; do sleep 0.1; done\n")
    pid = reg.attach("s").pid
    job = reg.exec("s", f"bash {script}")
    wait_until(lambda: "first\n" in reg.result(job.id).output, 10)
    wait_until(lambda: procs.LAYER.command_launched(pid, _foreground_group(pid)) is True, 10, msg="never launched")
    assert procs.LAYER.sigint_taken(pid, _foreground_group(pid)) is True
    reg.interrupt("s")
    wait_until(lambda: "caught" in reg.result(job.id).output, 10)
    assert not job.done  # the trap caught it; the script runs on
    reg.close("s")  # so a rerun in the same process (tests/rerun.py) starts a fresh "s"
