"""Fixtures and helpers of the remote terminal tests. The real OpenSSH
server on 127.0.0.1 they reach, ``sshd``, is one for the whole session,
shared by every test directory from tests/conftest.py (tests/sshd.py)."""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

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
#: The login start (the default outside tests: sshd starts the user's login shell).
LOGIN = TerminalConfig(login=True, start_timeout=20.0)


def open_terminal(
    opened: list[RemoteTerminal], target: str, session: str, cwd: str | None = None, config: TerminalConfig = CONFIG
) -> RemoteTerminal:
    """A RemoteTerminal on ``target`` (its session id made unique from
    ``session``), kept in ``opened`` for the test's end to close."""
    parsed = parse_target(target)
    assert parsed is not None, "a remote target"
    t = RemoteTerminal(f"{session}-{time.monotonic_ns()}", config, parsed, cwd=cwd, job_table=jobs.JobTable())
    opened.append(t)
    return t


@pytest.fixture
def open_remote(sshd) -> Iterator:
    """Open RemoteTerminals on a target (default: the test sshd); all are
    closed at the end and must leave no client process behind."""
    opened: list[RemoteTerminal] = []

    def make(target: str | None = None, session: str = "r", cwd: str | None = None, config=CONFIG) -> RemoteTerminal:
        return open_terminal(opened, target or sshd.target, session, cwd, config)

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


_ENGINE = """
import sys
from dsh_magics import jobs
from dsh_magics.terminal.config import TerminalConfig
from dsh_magics.terminal.remote import RemoteTerminal, parse_target
term = RemoteTerminal(sys.argv[2], TerminalConfig(login=sys.argv[3] == "1"), parse_target(sys.argv[1]), job_table=jobs.JobTable())
job = term.exec("read -p 'x? ' x", tty=True)
while term.info().awaiting_input is None:  # (the test's deadline is on its read of this process's line)
    term.wait_output(term.output_seq, 1.0)
shell, _ = term.stream.where
master = term.master.pid() if term.master is not None else None
print(term.transport.control_dir, term.pid, term.side.pid, master, shell, term.watch.probes, flush=True)
sys.stdin.read()
"""


@dataclass
class Engine:
    """Another Python process with one ssh terminal whose job waits at a
    prompt, seen through the side channel (so its session is open too)."""

    proc: subprocess.Popen
    control: str  # the terminal's private control directory (in its ssh processes' argv)
    client: int  # the terminal's ssh
    side: int  # the side channel's ssh
    master: int | None  # the pid that answers on the control socket
    shell: int  # the remote bash (on this machine: the sshd is local)
    probes: int


@contextmanager
def engine_with_a_prompt(target: str, session: str, login: bool = False) -> Iterator[Engine]:
    """Start the engine process and read its one line (60 s deadline); at the
    end it is killed if the test did not, and its private directory removed
    (its watchdog removes it too, later). ``login``: its terminal's config."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _ENGINE, target, session, "1" if login else "0"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    control = ""
    try:
        assert proc.stdout is not None
        assert select.select([proc.stdout], [], [], 60)[0], "the engine did not start its terminal"
        control, *pids = proc.stdout.readline().split()
        assert control.startswith("/") and len(pids) == 5, "the engine did not start its terminal"
        client, side, master, shell, probes = pids
        yield Engine(proc, control, int(client), int(side), None if master == "None" else int(master), int(shell), int(probes))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        for stream in (proc.stdout, proc.stdin):
            if stream is not None:
                stream.close()
        if control.startswith("/"):
            shutil.rmtree(control, ignore_errors=True)
