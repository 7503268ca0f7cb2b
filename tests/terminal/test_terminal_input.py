"""Commands that wait for someone to type on the terminal (password and
confirmation prompts). Nothing types into a job's terminal, so the engine
says why such a job is quiet, and its Ctrl-C must land without the engine
ever feeding the program a line of its own."""

from __future__ import annotations

import sys

import pytest

from dsh_magics.terminal import Registry

from ..conftest import Gate, wait_until
from .conftest import run

READERS = {
    "builtin-read": "echo asking; read -r x </dev/tty; echo got=$x",
    "head": "echo asking; head -n1 /dev/tty; echo got",
    "python-getpass": f"{sys.executable} -c 'import getpass; print(\"got\", getpass.getpass())'",
}


@pytest.mark.parametrize("command", READERS.values(), ids=READERS.keys())
def test_a_prompt_on_the_terminal_is_named_and_ctrl_c_lands(reg: Registry, command: str) -> None:
    pid = reg.attach("ask").pid
    job = reg.exec("ask", command)
    note = wait_until(lambda: reg.result(job.id).note, 10, msg="the job is seen waiting for input")
    assert "waiting for input on the terminal" in note and "interrupt" in note, note
    res = reg.wait(job.id, timeout=0.05, on_input=False)
    assert res.timed_out and res.status == "running" and res.note == note
    assert reg.interrupt("ask") is job
    res = reg.wait(job.id, timeout=10)
    assert (res.status, res.exit_code) == ("interrupted", 130), res.to_dict()
    assert "got" not in res.output and "6973" not in res.output, res.output  # no probe was read
    assert reg.info("ask").pid == pid
    assert run(reg, "echo fine", session="ask").output == "fine\n"


def test_a_quiet_command_gets_no_such_note(reg: Registry, gate: Gate) -> None:
    job = reg.exec("quiet", f"echo a; {gate.shell}; echo b")
    wait_until(lambda: "a" in reg.result(job.id).output, 10, msg="started")
    term = reg._terms["quiet"]
    before = term.transport.quiet_checks
    wait_until(lambda: term.transport.quiet_checks > before, 10, msg="a quiet check ran")
    assert reg.result(job.id).note is None
    gate.open()
    res = reg.wait(job.id, timeout=10)
    assert (res.status, res.output, res.note) == ("completed", "a\nb\n", None)
