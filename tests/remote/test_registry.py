"""Remote terminals through the registry: attach(target=...), list(), a
dead connection replaced on the next command, configuration that disables
targets."""

from __future__ import annotations

import os
import signal

import pytest

from dsh_magics.errors import InvalidArgument, TargetUnreachable
from dsh_magics.terminal import Registry, Result
from tests.conftest import done, wait_until


@pytest.fixture
def reg(sshd):
    r = Registry(login=False)
    yield r
    r.close_all()


def test_attach_with_a_target_and_list_shows_it(reg, sshd, tmp_path):
    info = reg.attach("r1", target=sshd.target, cwd=str(tmp_path))
    assert info.target == sshd.target and info.cwd == str(tmp_path) and info.status == "idle"
    reg.attach("l1")
    rows = {i.session_id: i.target for i in reg.list()}
    assert rows == {"r1": sshd.target, "l1": "local"}
    assert done(reg, "r1", "pwd").output == f"{tmp_path}\n"
    # attach again: same terminal, cd on the remote side
    (tmp_path / "sub").mkdir()
    again = reg.attach("r1", cwd="sub")
    assert again.pid == info.pid and again.cwd == str(tmp_path / "sub")
    with pytest.raises(InvalidArgument, match="is not a directory on"):
        reg.attach("r1", cwd="/no/such/dir")
    assert reg.info("r1").to_dict()["target"] == sshd.target


def test_a_dead_connection_is_replaced_by_the_next_command(reg, sshd):
    reg.attach("r2", target=sshd.target)
    shell = int(done(reg, "r2", "cd /tmp; echo $$").output)
    os.kill(shell, signal.SIGKILL)
    wait_until(lambda: reg.info("r2").status == "dead", timeout=10)
    res = done(reg, "r2", "pwd; echo $$")
    assert res.fresh_shell and res.output.split()[0] == "/tmp"
    assert int(res.output.split()[1]) != shell
    assert reg.info("r2").target == sshd.target


def test_target_changes_need_recreate(reg, sshd):
    reg.attach("r3")
    with pytest.raises(InvalidArgument, match="runs on local"):
        reg.attach("r3", target=sshd.target)
    info = reg.attach("r3", target=sshd.target, recreate=True)
    assert info.target == sshd.target
    assert reg.attach("r3", target="local", recreate=True).target == "local"


def test_bad_and_disabled_targets(reg, sshd, monkeypatch):
    with pytest.raises(InvalidArgument) as e:
        reg.attach("r4", target="gopher://x")
    assert e.value.code == "INVALID_ARGUMENT" and not reg.exists("r4")
    monkeypatch.setenv("DSH_MAGICS_TARGETS", "local")
    with pytest.raises(InvalidArgument, match="disabled"):
        reg.attach("r4", target=sshd.target)
    assert not reg.exists("r4")
    assert reg.attach("r4", target="local").target == "local"


def test_unreachable_target_opens_nothing(reg, sshd, ssh_options):
    ssh_options(sshd.client_config("reg-wrong", key="id_other"))
    with pytest.raises(TargetUnreachable):
        reg.attach("r5", target=sshd.target)
    assert not reg.exists("r5") and reg.list() == []


def test_a_registry_with_a_default_target(sshd):
    reg = Registry(login=False, target=sshd.target)
    try:
        res = done(reg, "d1", "echo $DSH_MAGICS_SESSION")
        assert res.output == "d1\n"
        assert reg.info("d1").target == sshd.target
        assert reg.attach("d2", target="local").target == "local"
    finally:
        reg.close_all()


def test_through_the_terminal_host(sshd):
    """attach(target=...) crosses the host socket, and TerminalInfo.target
    comes back."""
    import shutil

    from dsh_magics.host import HostClient, HostPaths
    from tests.host.conftest import new_dir, stop_everything

    d = new_dir()
    client = HostClient(HostPaths.for_name("remote", d))
    try:
        client.connect()
        info = client.attach("h1", target=sshd.target)
        assert info.target == sshd.target
        res = client.exec("h1", "echo via host; pwd", wait_ms=20_000)
        assert isinstance(res, Result) and res.output.startswith("via host\n")
        assert [i.target for i in client.list()] == [sshd.target]
        with pytest.raises(InvalidArgument):
            client.attach("h2", target="nope://x")
    finally:
        try:
            client.close_all()
        finally:
            client.detach()
            stop_everything(d)
            shutil.rmtree(d, ignore_errors=True)


def test_agent_tools_attach_a_target_and_list_it(reg, sshd):
    """bash_attach {"target": ...}; bash_list shows each terminal's target;
    results match the tools' output schemas."""
    from tests.tools.conftest import Agent

    agent = Agent(reg, "tool-remote")
    row = agent.ok("bash_attach", {"target": sshd.target})
    assert row["target"] == sshd.target and row["opened"]
    out = agent.ok("bash_exec", {"command": "echo over ssh", "wait_ms": 20_000})
    assert out["output"] == "over ssh\n"
    rows = agent.ok("bash_list", {})["terminals"]
    assert [r["target"] for r in rows] == [sshd.target]
    err = agent.err("bash_attach", {"target": "telnet://x", "session_id": "other"}, "INVALID_ARGUMENT")
    assert "cannot parse target" in err["message"]
