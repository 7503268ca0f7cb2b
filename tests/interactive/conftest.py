"""Fixtures for the interaction tests: a real registry (real bash in a real
PTY) per module, and a bare bash on its own PTY for the detection tests."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest
from ptyprocess import PtyProcess

from dsh_magics.terminal import Registry
from dsh_magics.terminal.core.proclayer.procfs import children


@pytest.fixture(scope="module")
def reg() -> Iterator[Registry]:
    r = Registry(login=False)
    yield r
    r.close_all()


@pytest.fixture
def sid(request: pytest.FixtureRequest, reg: Registry) -> Iterator[str]:
    """A session of its own per test, closed afterwards."""
    name = f"i{os.getpid()}-{request.node.name[:50]}"
    yield name
    if reg.exists(name):
        reg.close(name)


@pytest.fixture
def bare_bash() -> Iterator[PtyProcess]:
    """An interactive bash on a PTY of its own (no engine): the detection
    functions look at a terminal from outside, whoever drives it."""
    p = PtyProcess.spawn(
        ["bash", "--norc", "--noprofile", "--noediting", "-i"],
        echo=False,
        env={**os.environ, "PS1": "", "TERM": "dumb"},
    )
    yield p
    # The programs a test started go first, by pid: ending the shell hangs up
    # its foreground job only where SIGHUP is not ignored, and a suite started
    # under nohup passes an ignored SIGHUP down to them (a `python3 ... accept()`
    # of test_detect.py's [network] case outlived two such runs).
    queue, found = children(p.pid), []
    while queue:
        pid = queue.pop(0)
        found.append(pid)
        queue.extend(children(pid))
    for pid in found:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass  # ended by itself meanwhile
    p.terminate(force=True)
    p.close(force=True)
