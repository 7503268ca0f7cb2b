"""Interpreter exit closes every terminal of the default registry."""

from __future__ import annotations

import resource
import signal
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import pids_with_env, wait_until

SCRIPT = textwrap.dedent(
    """
    import faulthandler, sys
    faulthandler.enable()  # SIGABRT from the test prints every thread's stack
    from dsh_magics import terminal
    for s in ("a", "b"):
        terminal.exec(s, "sleep 311 & setsid sleep 312 & echo ready", wait_ms=10000)
    print("up", flush=True)
    if sys.argv[1] == "wait":
        sys.stdin.read()
    """
)


def _run(mode: str, marker: str) -> subprocess.Popen:
    env = {"DSH_TEST_MARK": marker, "PATH": "/usr/bin:/bin", "HOME": "/tmp"}
    import os

    env = dict(os.environ, DSH_TEST_MARK=marker)
    p = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, mode],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # no core file from the SIGABRT that _ended sends a hung interpreter
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)),
    )
    assert p.stdout.readline().strip() == "up"
    return p


def _ended(p: subprocess.Popen, why: str) -> None:
    """Wait for the interpreter to exit; if it does not, fail with the stack
    of each of its threads (it hung once in CI with DSH_MAGICS_PROCFS=0, and
    could not be made to again)."""
    hung = False
    try:
        p.wait(30)  # stdin stays open: its end would let the script return
    except subprocess.TimeoutExpired:
        hung = True
        p.send_signal(signal.SIGABRT)
        p.wait(30)
    assert p.stdin is not None and p.stdout is not None and p.stderr is not None
    p.stdin.close()
    p.stdout.close()
    err = p.stderr.read()
    p.stderr.close()
    if hung:
        pytest.fail(f"the interpreter did not exit within 30 s {why}; its threads:\n{err}")


def test_normal_exit_leaves_no_process():
    p = _run("exit", "exit-normal")
    _ended(p, "at the end of its script")
    assert pids_with_env("DSH_TEST_MARK", "exit-normal") == []


def test_sigterm_of_interpreter_leaves_no_process():
    p = _run("wait", "exit-term")
    assert len(pids_with_env("DSH_TEST_MARK", "exit-term")) >= 5
    p.send_signal(signal.SIGTERM)
    _ended(p, "of SIGTERM")
    wait_until(lambda: pids_with_env("DSH_TEST_MARK", "exit-term") == [], 10, msg="orphans after SIGTERM")
