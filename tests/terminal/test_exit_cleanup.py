"""Interpreter exit closes every terminal of the default registry."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

from tests.conftest import pids_with_env, wait_until

SCRIPT = textwrap.dedent(
    """
    import sys
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
        [sys.executable, "-c", SCRIPT, mode], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert p.stdout.readline().strip() == "up"
    return p


def test_normal_exit_leaves_no_process():
    p = _run("exit", "exit-normal")
    p.wait(30)
    assert pids_with_env("DSH_TEST_MARK", "exit-normal") == []


def test_sigterm_of_interpreter_leaves_no_process():
    p = _run("wait", "exit-term")
    assert len(pids_with_env("DSH_TEST_MARK", "exit-term")) >= 5
    p.send_signal(signal.SIGTERM)
    p.wait(30)
    wait_until(lambda: pids_with_env("DSH_TEST_MARK", "exit-term") == [], 10, msg="orphans after SIGTERM")
