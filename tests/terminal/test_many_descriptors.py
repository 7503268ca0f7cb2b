"""A process with more than 1024 files open can still open and drive
terminals: ``select`` refuses descriptors numbered FD_SETSIZE (1024) or more,
and a terminal's reader started there died at once (the shell "exited during
start-up"). Linux only: elsewhere the engine still uses ``select``."""

from __future__ import annotations

import os
import resource
import sys
import time
from collections.abc import Iterator

import pytest

from dsh_magics import jobs
from dsh_magics.terminal import Registry
from dsh_magics.terminal.config import TerminalConfig
from dsh_magics.terminal.remote import RemoteTerminal, parse_target

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="poll is used on Linux only")

_FD_SETSIZE = 1024


@pytest.fixture
def high_descriptors() -> Iterator[None]:
    """Hold files open until the next descriptor is numbered above FD_SETSIZE."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = _FD_SETSIZE + 200
    if soft < want:
        if hard != resource.RLIM_INFINITY and hard < want:
            pytest.skip(f"the hard limit of open files is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    held: list[int] = []
    try:
        while not held or held[-1] < _FD_SETSIZE + 20:
            held.append(os.open(os.devnull, os.O_RDONLY))
        yield
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_local_terminal_works_with_descriptors_above_fd_setsize(high_descriptors):
    reg = Registry(login=False)
    try:
        res = reg.exec("many-fds", "cd /tmp && echo hi", wait_ms=20_000)
        assert getattr(res, "status", None) == "completed", res
        assert res.output == "hi\n" and res.cwd == "/tmp"
        term = reg._terms["many-fds"]
        assert term.transport.proc.fd > _FD_SETSIZE  # the reader's PTY is above the limit
        # a job that runs on, a real Ctrl-C, and the terminal goes on
        job = reg.exec("many-fds", "sleep 30")
        reg.interrupt("many-fds")
        r = reg.wait(job.id, timeout=10)
        assert (r.status, r.exit_code) == ("interrupted", 130), r.to_dict()
        again = reg.exec("many-fds", "echo $((6 * 7))", wait_ms=20_000)
        assert again.output == "42\n"
    finally:
        reg.close_all()


def test_a_remote_terminal_works_with_descriptors_above_fd_setsize(high_descriptors):
    term = RemoteTerminal(
        f"many-fds-{time.monotonic_ns()}",
        TerminalConfig(login=False, start_timeout=20.0),
        parse_target("cmd:bash --noprofile --norc -i"),
        job_table=jobs.JobTable(),
    )
    try:
        job = term.exec("echo remote-$((6 * 7))")
        assert job.wait(20), term.snapshot(job).to_dict()
        assert job.result.output == "remote-42\n"
    finally:
        term.close()
