"""Jobs that end without a marker, found by the quiet check.

A command that dies of a SIGINT the engine never sent makes bash abort the
job's line (no end marker); a command that ``exec``-s an interactive program
on the terminal keeps the shell's pid (no exit). Both must settle on their
own, truthfully, and the session must take the next command. And the check
must never type its probe into a job that reads the terminal itself.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from dsh_magics.terminal import Registry, Result
from dsh_magics.terminal.core import procs
from tests.conftest import Gate, live_pids, wait_until


def _done(reg: Registry, session: str, command: str, timeout_s: float = 10.0) -> Result:
    res = reg.exec(session, command, wait_ms=int(timeout_s * 1000))
    assert isinstance(res, Result), f"still {reg.result(res.id).status} after {timeout_s}s: {command!r}"
    return res


def _usable(reg: Registry, session: str, *, fresh: bool = False) -> None:
    res = _done(reg, session, "echo usable-$((6 * 7))")
    assert (res.status, res.exit_code, res.output, res.fresh_shell) == ("completed", 0, "usable-42\n", fresh)


@pytest.mark.parametrize(
    "command,printed",
    [
        (f"{sys.executable} -c 'raise KeyboardInterrupt'; echo not-reached", "KeyboardInterrupt"),
        ("echo before; sh -c 'kill -INT $$'; echo not-reached", "before"),
        ("echo before; kill -INT $$; echo not-reached", "before"),
    ],
    ids=["python-reraises", "child-kills-itself", "builtin-kill-of-the-shell"],
)
def test_line_aborted_by_a_sigint_the_engine_did_not_send(reg: Registry, command: str, printed: str) -> None:
    pid = reg.attach("q-sigint").pid
    res = _done(reg, "q-sigint", command)
    assert (res.status, res.exit_code, res.signal) == ("interrupted", 130, signal.SIGINT), res.to_dict()
    assert res.note and "did not send" in res.note
    assert printed in res.output and "not-reached" not in res.output, res.output
    assert reg.info("q-sigint").pid == pid
    _usable(reg, "q-sigint")


def test_an_interrupt_the_engine_sent_has_no_such_note(reg: Registry) -> None:
    job = reg.exec("q-sent", "echo s; sleep 30")
    wait_until(lambda: "s" in reg.result(job.id).output, 10, msg="job started")
    reg.interrupt("q-sent")
    res = reg.wait(job.id, timeout=10)
    assert (res.status, res.exit_code, res.note) == ("interrupted", 130, None), res.to_dict()


@pytest.mark.parametrize(
    "command",
    [
        "echo a; {gate}; echo b",  # a command holds the terminal while quiet
        "echo a; until [ -e {flag} ]; do :; done; echo b",  # the shell is busy itself
    ],
    ids=["command", "busy-shell"],
)
def test_quiet_jobs_are_left_alone(reg: Registry, gate: Gate, tmp_path: Path, command: str) -> None:
    flag = tmp_path / "flag"
    reg.attach("q-quiet")
    term = reg._terms["q-quiet"]
    before = term.transport.quiet_checks
    job = reg.exec("q-quiet", command.format(gate=gate.shell, flag=flag))
    wait_until(lambda: term.transport.quiet_checks > before, 10, msg="a quiet check of the quiet spell")
    if "{gate}" in command:
        gate.open()
    else:
        flag.touch()
    res = reg.wait(job.id, timeout=10)
    assert (res.status, res.exit_code, res.output, res.note) == ("completed", 0, "a\nb\n", None), res.to_dict()


def test_a_job_reading_the_terminal_is_never_fed_the_probe(reg: Registry) -> None:
    """``read x </dev/tty`` puts bash in a read of fd 0 on the same terminal,
    like its top-level input; a probe typed now would become ``$x``."""
    reg.attach("q-tty")
    term = reg._terms["q-tty"]
    job = reg.exec("q-tty", "echo ready; read x </dev/tty; echo got=$x")
    run = term.core.running
    assert run is not None
    wait_until(
        lambda: run.quiet.verdict == procs.TTY_READ_ELSEWHERE,
        10,
        msg="a quiet check saw the job's read of the terminal",
    )
    assert not job.done and run.sync_nonce is None
    # What the read gets is what someone types, not an engine probe. (Not an
    # interrupt here: its probe line can reach this read before its SIGINT
    # does, a separate limit of interrupt() for jobs that read the tty.)
    os.write(term.transport.proc.fd, b"typed-by-test\n")
    res = reg.wait(job.id, timeout=10, on_input=False)
    # (the terminal echoes what is typed during a job, as a person's does)
    expected = "ready\ntyped-by-test\ngot=typed-by-test\n"
    assert (res.status, res.exit_code, res.output) == ("completed", 0, expected), res.to_dict()
    _usable(reg, "q-tty")


# `--norc`: the replacing bash is killed by the engine, and killing a shell in
# the middle of this machine's ~/.bashrc (pyenv's rehash holds a lock file
# there) left ~/.pyenv/shims/.pyenv-shim behind; every login shell then
# waited 60 s for it. Tests never run the real profile in a shell they kill.
@pytest.mark.parametrize("command", ["exec sh </dev/tty", "exec bash --norc -i </dev/tty", "exec cat </dev/tty"])
def test_shell_replaced_on_the_terminal(fresh_reg: Registry, command: str) -> None:
    reg = fresh_reg
    pid = reg.attach("q-exec").pid
    assert pid is not None
    job = reg.exec("q-exec", command)
    if not job.wait(2.0):  # `cat` prints nothing: an interrupt's silence finds it
        reg.interrupt("q-exec")
    res = reg.wait(job.id, timeout=10)
    assert res.status == "shell_exited" and res.note and "replaced" in res.note, res.to_dict()
    assert reg.info("q-exec").status == "dead"
    wait_until(lambda: pid not in live_pids(), 10, msg="the replacing program killed")
    _usable(reg, "q-exec", fresh=True)
    assert reg.info("q-exec").pid != pid


def test_a_command_printing_the_prompt_hint_does_not_end_its_job(reg: Registry, gate: Gate) -> None:
    # The hint only makes the engine look at the shell; a running job stays.
    reg.attach("q-hint")
    term = reg._terms["q-hint"]
    before = term.transport.quiet_checks
    job = reg.exec("q-hint", f"printf 'x\\033]6973;P\\007y\\n'; {gate.shell}; echo done")
    wait_until(lambda: "xy" in reg.result(job.id).output and term.transport.quiet_checks > before, 10, msg="the look")
    assert not job.done, reg.result(job.id).to_dict()
    gate.open()
    res = reg.wait(job.id, timeout=10)
    assert (res.status, res.exit_code, res.output) == ("completed", 0, "xy\ndone\n"), res.to_dict()
    assert res.note is None
