"""Fixtures and helpers of the remote terminal tests. The real OpenSSH
server on 127.0.0.1 they reach, ``sshd``, is one for the whole session,
shared by every test directory from tests/conftest.py (tests/sshd.py)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from dsh_magics import jobs
from dsh_magics.terminal.config import TerminalConfig
from dsh_magics.terminal.core.procs import alive
from dsh_magics.terminal.remote import RemoteTerminal, parse_target
from dsh_magics.terminal.remote.targets import ENV_SSH_OPTIONS
from tests.sshd import Sshd, _free_port, start_sshd  # noqa: F401 - imported from here by other tests


@pytest.fixture
def ssh_options(monkeypatch):
    """Set the ssh options for one test (a scenario's client config)."""

    def use(options: str) -> None:
        monkeypatch.setenv(ENV_SSH_OPTIONS, options)

    return use


CONFIG = TerminalConfig(login=False, start_timeout=20.0)


@pytest.fixture
def open_remote(sshd) -> Iterator:
    """Open RemoteTerminals on a target (default: the test sshd); all are
    closed at the end and must leave no client process behind."""
    opened: list[RemoteTerminal] = []

    def make(target: str | None = None, session: str = "r", cwd: str | None = None, config=CONFIG) -> RemoteTerminal:
        t = RemoteTerminal(
            f"{session}-{time.monotonic_ns()}", config, parse_target(target or sshd.target), cwd=cwd,
            job_table=jobs.JobTable(),
        )
        opened.append(t)
        return t

    yield make
    for t in opened:
        pid = t.pid
        t.close()
        if pid is not None:
            assert not alive(pid), "the client process outlived close()"


def processes_with_arg(text: str) -> list[int]:
    """Live local processes with ``text`` in their command line."""
    found = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = f.read()
        except (OSError, ValueError):
            continue
        if name.isdigit() and text.encode() in argv and alive(int(name)):
            found.append(int(name))
    return found


def connection_processes(term: RemoteTerminal) -> list[int]:
    """Live local processes of an ssh terminal's connection: the engine's
    control master, the terminal's ssh and the side channel's (the private
    control path is in their argv)."""
    control = term.transport.control_dir
    assert control is not None
    return processes_with_arg(control)


def run(term: RemoteTerminal, command: str, timeout: float = 20.0):
    job = term.exec(command)
    assert job.wait(timeout), f"job did not finish within {timeout}s: {command[:80]!r}: {term.snapshot(job)}"
    return job.result

