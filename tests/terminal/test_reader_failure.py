"""A terminal whose reader fails ends itself and says why, instead of
looking alive while nothing reads its PTY (every wait would run out its
time, and the job would stay "running" for ever)."""

from __future__ import annotations

import logging
import os
import time

import pytest

from dsh_magics import jobs
from dsh_magics.errors import ShellExited, TargetUnreachable
from dsh_magics.terminal import Registry
from dsh_magics.terminal.config import TerminalConfig
from dsh_magics.terminal.core import reader
from dsh_magics.terminal.core.procs import alive
from dsh_magics.terminal.remote import RemoteTerminal, parse_target
from dsh_magics.terminal.remote.job_stream import InbandStream
from tests.conftest import pids_with_env
from tests.terminal.conftest import run

#: Printed by the job (not typed: the command builds it with printf); the
#: test's wrapper around the terminal's data handler fails on it.
_TRIGGER = b"BOOM-7d1"
_COMMAND = "sleep 300 & printf 'BOOM-%s\\n' 7d1; wait"
_NOTE = "the terminal's reader failed (RuntimeError: injected by the test)"


def test_a_failed_reader_ends_the_local_shell_and_says_so(fresh_reg, caplog):
    reg = fresh_reg
    session = f"rf-{time.monotonic_ns()}"
    run(reg, "true", session=session)
    term = reg._terms[session]
    shell_pid = term.pid
    original = term._on_pty

    def failing(data: bytes) -> None:
        if _TRIGGER in data:
            raise RuntimeError("injected by the test")
        original(data)

    term._on_pty = failing  # tests wrap _on_pty (the reader calls it through a lambda)
    with caplog.at_level(logging.ERROR):
        job = reg.exec(session, _COMMAND)
        # settles at once, not after the 300 s the job would take
        assert job.wait(10), reg.result(job.id).to_dict()
    r = job.result
    assert r.status == "shell_exited", r.to_dict()
    assert r.note is not None and r.note.startswith(_NOTE), r.note
    assert "the next command starts a fresh shell" in r.note
    assert "the terminal's reader failed" in caplog.text
    # the shell and the job's background sleep are gone
    assert not alive(shell_pid)
    assert pids_with_env("DSH_MAGICS_SESSION", session) == []
    info = reg.info(session)
    assert info.status == "dead", info
    again = run(reg, "echo ok", session=session)
    assert again.output == "ok\n" and again.fresh_shell, again.to_dict()


def test_a_failed_reader_ends_a_remote_terminal_and_says_so(monkeypatch):
    original = InbandStream.on_pty

    def failing(self: InbandStream, data: bytes) -> None:
        if _TRIGGER in data:
            raise RuntimeError("injected by the test")
        original(self, data)

    monkeypatch.setattr(InbandStream, "on_pty", failing)
    session = f"rf-remote-{time.monotonic_ns()}"
    term = RemoteTerminal(
        session,
        TerminalConfig(login=False, start_timeout=20.0),
        parse_target("cmd:bash --noprofile --norc -i"),
        job_table=jobs.JobTable(),
    )
    try:
        client = term.pid
        assert client is not None
        job = term.exec(_COMMAND)
        assert job.wait(10), term.snapshot(job).to_dict()
        r = job.result
        assert r.status == "shell_exited", r.to_dict()
        assert r.note is not None and r.note.startswith(_NOTE), r.note
        assert "the next command opens a new connection" in r.note
        assert term.dead
        assert not alive(client)
        assert pids_with_env("DSH_MAGICS_SESSION", session) == []
    finally:
        term.close()


@pytest.mark.parametrize("closed", [True, False], ids=["closed-under-it", "open"])
def test_an_error_in_select(closed):
    """An error in ``select`` ends the loop quietly only when the terminal
    was closed (its descriptors go away under the reader); otherwise it is a
    failure, handed to ``on_failed``."""
    wake_r, wake_w = os.pipe()
    failed: list[BaseException] = []
    looks = iter([False] + [closed] * 10)  # open when the loop starts; then closed, or not

    class Proc:
        fd = 10_000_000  # beyond select's limit: it raises

    handlers = reader.Handlers(
        closed=lambda: next(looks),
        next_due=lambda: None,
        on_data=lambda data: None,
        on_due=lambda: None,
        on_gone=lambda: None,
        on_failed=failed.append,
    )
    try:
        reader.loop(Proc(), None, wake_r, handlers)
    finally:
        os.close(wake_r)
        os.close(wake_w)
    if closed:
        assert failed == []
    else:
        assert len(failed) == 1 and isinstance(failed[0], (OSError, ValueError)), failed


def _always_failing(self: object, data: bytes) -> None:
    raise RuntimeError("injected by the test")


def test_a_reader_that_fails_during_start_up_is_named_in_the_error(monkeypatch):
    from dsh_magics.terminal.local.terminal import Terminal

    monkeypatch.setattr(Terminal, "_on_pty", _always_failing)
    reg = Registry(login=False)
    session = f"rf-start-{time.monotonic_ns()}"
    try:
        with pytest.raises(ShellExited) as e:
            reg.exec(session, "true", wait_ms=20_000)
        assert str(e.value.message).startswith(_NOTE), e.value.message
        assert pids_with_env("DSH_MAGICS_SESSION", session) == []
    finally:
        reg.close_all()


def test_a_remote_reader_that_fails_during_start_up_is_named_in_the_error(monkeypatch):
    monkeypatch.setattr(InbandStream, "on_pty", _always_failing)
    session = f"rf-remote-start-{time.monotonic_ns()}"
    with pytest.raises(TargetUnreachable) as e:
        RemoteTerminal(
            session,
            TerminalConfig(login=False, start_timeout=20.0),
            parse_target("cmd:bash --noprofile --norc -i"),
            job_table=jobs.JobTable(),
        )
    assert _NOTE in e.value.message, e.value.message
    assert pids_with_env("DSH_MAGICS_SESSION", session) == []
