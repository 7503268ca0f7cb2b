"""A terminal's shell starts with every signal at its default action, as a
terminal emulator starts it, whatever the Python process around the engine
ignores (Python itself ignores SIGPIPE and SIGXFSZ; a host run under
``nohup`` ignores SIGHUP). An ignored signal survives ``exec`` and bash hands
it to every command: ``yes | head -1`` then printed ``Broken pipe`` and
ended with status 1 instead of dying of SIGPIPE (141)."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator

import pytest

from dsh_magics import jobs
from dsh_magics.terminal import Registry
from dsh_magics.terminal.config import TerminalConfig
from dsh_magics.terminal.remote import RemoteTerminal, parse_target
from tests.terminal.conftest import run

SIGNALS = "grep -E '^Sig(Ign|Blk)' /proc/self/status"
PIPE = "yes | head -1; echo \"${PIPESTATUS[@]}\""


@pytest.fixture
def ignoring_sighup() -> Iterator[None]:
    """The engine's process ignores SIGHUP while the terminal starts (nohup)."""
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGHUP, previous)


def test_a_local_jobs_signals_are_at_their_defaults(fresh_reg: Registry, ignoring_sighup: None) -> None:
    res = run(fresh_reg, f"{SIGNALS}; {PIPE}")
    assert res.output == "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\ny\n141 0\n", res.output


def test_a_cmd_targets_jobs_signals_are_at_their_defaults(ignoring_sighup: None) -> None:
    term = RemoteTerminal(
        f"sig-cmd-{time.monotonic_ns()}",
        TerminalConfig(login=False, start_timeout=20.0),
        parse_target("cmd:bash --noprofile --norc -i"),
        job_table=jobs.JobTable(),
    )
    try:
        job = term.exec(f"{SIGNALS}; {PIPE}")
        assert job.wait(20), term.snapshot(job).to_dict()
        assert job.result.output == "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\ny\n141 0\n", (
            job.result.output
        )
    finally:
        term.close()
