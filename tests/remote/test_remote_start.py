"""What a remote terminal's start runs on the remote side (issue 35 §5:
the first group command against pdsh), and what it still does there.

Over ssh the remote terminal gets its modes from the engine's PTY for the
ssh client (echo on, control characters echoed as themselves), so the
set-up runs no ``stty``; only its first line is read with readline, which
still reads the user's ``~/.inputrc`` first; and what a failed start
reports is the remote side's words, never the echo of the set-up. Against
a real sshd on 127.0.0.1 whose sessions get a private HOME and a ``stty``
that logs each run before it runs the real one."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh_magics.errors import TargetUnreachable
from dsh_magics.terminal import Registry, Result
from dsh_magics.terminal.core import child
from tests.conftest import pids_with_env, wait_until
from tests.sshd import Sshd, start_sshd


@pytest.fixture(scope="module")
def home_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Sshd, Path, Path]]:
    home = tmp_path_factory.mktemp("start-home")
    bin_dir = tmp_path_factory.mktemp("start-bin")
    log = bin_dir / "stty.log"
    real = shutil.which("stty")
    assert real is not None
    stty = bin_dir / "stty"
    stty.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {real} "$@"\n')
    stty.chmod(0o755)
    server = start_sshd(
        tmp_path_factory.mktemp("start-sshd"), env={"HOME": str(home), "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin"}
    )
    yield server, home, log
    server.stop()


@pytest.fixture
def remote(home_sshd, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Sshd, Path, Path]]:
    server, home, log = home_sshd
    for f in home.iterdir():
        f.unlink()
    log.unlink(missing_ok=True)
    monkeypatch.setenv("DSH_MAGICS_SSH_OPTIONS", server.client_config("start"))
    yield server, home, log


def _run(reg: Registry, command: str) -> Result:
    res = reg.exec("r", command, wait_ms=20_000)
    assert isinstance(res, Result), f"{command!r} did not finish: {res}"
    return res


def _starts_without_stty_and_echoes(server: Sshd, log: Path, login: bool) -> None:
    reg = Registry(login=login)
    try:
        reg.attach("r", target=server.target)
        assert _run(reg, "echo ready").output == "ready\n"
        assert not log.exists(), f"the start ran stty: {log.read_text()}"
        # the remote terminal echoes, control characters as themselves
        modes = _run(reg, "stty -a </dev/tty").output.split()
        assert "echo" in modes and "-echoctl" in modes, modes
        # what is typed to a job shows once, as in a terminal window
        job = reg.exec("r", "read -r -p 'name? ' x; echo \"got $x\"", tty=True)
        wait_until(lambda: "name? " in reg.result(job.id).output, timeout=20, msg="the prompt")
        reg.send("r", "bob")
        assert job.wait(20), reg.result(job.id)
        assert job.result.output == "name? bob\ngot bob\n", job.result.output
    finally:
        reg.close_all()


@pytest.mark.parametrize("login", [False, True], ids=["no-login", "login"])
@pytest.mark.parametrize("side", ["1", "0"], ids=["own-connection", "no-side-channel"])
def test_an_ssh_terminal_starts_without_stty_and_echoes(remote, monkeypatch, login, side):
    server, home, log = remote
    if login:  # /etc/profile sets PATH anew: the logging stty goes first again
        (home / ".bash_profile").write_text(f"PATH={log.parent}:$PATH\n")
    monkeypatch.setenv("DSH_MAGICS_SIDE_CHANNEL", side)
    _starts_without_stty_and_echoes(server, log, login)


def test_the_same_when_the_client_is_forked(remote, monkeypatch):
    """Where no ``setpriv`` launches the client, the forked child sets the
    PTY's modes before its exec."""
    server, _, log = remote
    monkeypatch.setattr(child.launcher, "_ready", False)
    _starts_without_stty_and_echoes(server, log, login=False)


def test_the_editing_mode_of_the_users_inputrc_is_kept(remote):
    server, home, _ = remote
    (home / ".inputrc").write_text("set editing-mode vi\n")
    reg = Registry(login=False)
    try:
        reg.attach("r", target=server.target)
        assert _run(reg, "[[ -o vi ]] && echo vi").output == "vi\n"
    finally:
        reg.close_all()


def test_a_failed_start_reports_none_of_the_set_up(remote):
    """A ~/.bashrc that replaces the shell with ``cat``: cat hands back what
    the engine typed, and the remote terminal echoes it; neither is what the
    remote side said."""
    server, home, _ = remote
    (home / ".bashrc").write_text("exec cat\n")
    reg = Registry(login=False, start_timeout=3)
    try:
        with pytest.raises(TargetUnreachable) as err:
            reg.attach("r", target=server.target)
        assert "no shell answered within 3s" in err.value.message
        assert "6973" not in err.value.message and "__dsh_magics" not in err.value.message, err.value.message
        wait_until(lambda: not pids_with_env("DSH_MAGICS_SESSION", "r"), timeout=20, msg="processes left")
    finally:
        reg.close_all()
