"""Fixtures for the interaction tests: a real registry (real bash in a real
PTY) per module, and a bare bash on its own PTY for the detection tests."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from ptyprocess import PtyProcess

from dsh_magics.terminal import Registry


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
    p.terminate(force=True)
    p.close(force=True)
