"""Plain terminal IPython, driven through a real PTY with pexpect: text reprs,
output streamed to stdout, Ctrl-C reaching the job, and no process left
behind when the interpreter exits."""

from __future__ import annotations

import os
import re
import signal
import sys
from pathlib import Path

import pexpect
import pytest

from tests.conftest import Gate, live_pids, wait_until
from tests.processes import ps_matching

PROMPT = re.compile(r"In \[\d+\]: ")


def _default_ctrl_c() -> None:
    """Between fork and exec: SIGINT and SIGQUIT at their default action, as a
    terminal emulator starts its programs. A suite started in the background
    by a non-interactive shell (``pytest &`` in a script, ``nohup``) runs with
    both ignored, an ignored signal stays ignored across ``exec``, and a Python
    started with SIGINT ignored installs no KeyboardInterrupt handler: the
    PTY echoes ``^C`` and nothing else happens (issue 32: the prompt never
    came back after the Ctrl-C below)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def _spawn_ipython(tmp_path: Path) -> pexpect.spawn:
    env = dict(os.environ, TERM="dumb", IPYTHONDIR=str(tmp_path / "ipdir"), PYTHONUNBUFFERED="1")
    env.pop("JPY_SESSION_NAME", None)
    child = pexpect.spawn(
        sys.executable,
        [
            "-m",
            "IPython",
            "--simple-prompt",
            "--no-banner",
            "--colors=NoColor",
            "--no-confirm-exit",
        ],
        env=env,
        cwd=str(tmp_path),
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 200),
        preexec_fn=_default_ctrl_c,
    )
    child.expect(PROMPT)
    return child


def _leave(child: pexpect.spawn) -> None:
    if child.isalive():  # a failed test: exit cleanly so no shell is orphaned
        child.sendintr()
        child.sendline("exit")
        child.expect([pexpect.EOF, pexpect.TIMEOUT], timeout=10)
        child.terminate(force=True)


@pytest.fixture
def ipython(tmp_path):
    child = _spawn_ipython(tmp_path)
    yield child
    _leave(child)


def _run(child: pexpect.spawn, line: str) -> str:
    child.sendline(line)
    child.expect(PROMPT)
    return child.before


def test_plain_ipython_streams_interrupts_and_cleans_up(ipython, gate: Gate) -> None:
    child = ipython
    mark = f"31{os.getpid()}"  # unique sleep durations identify this run's processes
    _run(child, "%load_ext dsh_magics")

    # output streams to stdout, then the value is the one-line summary
    out = _run(child, "%bash_exec --wait for i in 1 2 3; do echo line-$i; done; cd /")
    assert re.search(r"line-1\r?\nline-2\r?\nline-3", out), out
    assert re.search(r"Out\[\d+\]: \[bash-[0-9a-f]+ @ default\] ok in", out), out

    # state persisted; a job handle has a text repr
    out = _run(child, f"j = %bash_exec pwd; {gate.shell}")  # still running when the wait starts
    child.sendline("r = %bash_wait $j")
    child.expect(r"\n/\r?\n")  # the wait streams the job's output so far ...
    gate.open()  # ... before the job ends
    child.expect(PROMPT)
    out = _run(child, "print(r.exit_code, r.status, repr(r.output))")
    assert "0 completed '/\\n'" in out, out

    # Ctrl-C during a streaming wait interrupts the job, not IPython
    child.sendline(f"%bash_exec --wait echo waiting-$((6*7)); sleep {mark}1")
    child.expect("waiting-42")  # the job's output, not the echo of the typed line
    child.sendintr()
    child.expect(PROMPT)
    assert "Interrupted: sent Ctrl-C" in child.before and "interrupted" in child.before, (
        child.before
    )
    out = _run(child, "%bash_exec --wait echo still-alive")
    assert "still-alive" in out and "ok in" in out
    assert not ps_matching(f"sleep {mark}1")

    # the listing is plain text, marking the default session
    out = _run(child, "%bash_list")
    assert "default session: default" in out and "* [default] idle" in out
    pid = int(re.search(r"\* \[default\] idle pid (\d+)", out).group(1))

    # leave a job and a background child running, then exit the interpreter
    _run(child, f"%bash_exec sleep {mark}2 & sleep {mark}3")
    wait_until(lambda: ps_matching(f"sleep {mark}3"), 10)
    child.sendline("exit")
    child.expect(pexpect.EOF)
    child.wait()

    def gone() -> bool:
        return not ps_matching(f"sleep {mark}2", f"sleep {mark}3") and pid not in live_pids()

    wait_until(gone, 10, msg="shell or job processes survived IPython's exit")


def test_ctrl_c_reaches_ipython_when_the_suite_ignores_sigint(tmp_path: Path) -> None:
    """The pytest process started with SIGINT ignored (as under ``pytest &`` in
    a script): the IPython the tests spawn still gets Ctrl-C, as from a
    terminal. Without ``_default_ctrl_c`` the sleep below runs on."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        child = _spawn_ipython(tmp_path)
    finally:
        signal.signal(signal.SIGINT, previous)
    try:
        child.sendline("import time; print('slee' + 'ping'); time.sleep(600)")
        child.expect("sleeping")  # the output, not the echo of the typed line
        child.sendintr()
        child.expect("KeyboardInterrupt")
        child.expect(PROMPT)
    finally:
        _leave(child)
