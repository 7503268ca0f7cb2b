"""Failures are clear, never hang, and leave nothing running locally:
a stopped sshd, a wrong key, an unknown or changed host key, a network
drop in the middle of a job, the remote shell killed."""

from __future__ import annotations

import logging
import os
import signal
import tempfile
import threading
import time

import pytest

from dsh_magics import jobs
from dsh_magics.errors import TargetUnreachable
from dsh_magics.terminal import Result
from dsh_magics.terminal.core.procs import alive
from dsh_magics.terminal.remote import RemoteTerminal, parse_target
from tests.conftest import pids_with_env, wait_until
from tests.remote.conftest import (
    CONFIG,
    connection_processes,
    engine_with_a_prompt,
    processes_with_arg,
    run,
    start_sshd,
)

# a local bash driven only through its PTY (as in test_remote_terminal.py)
CMD_TARGET = "cmd:--probe=sh bash --noprofile --norc -i"


def _unreachable(target: str, session: str) -> TargetUnreachable:
    with pytest.raises(TargetUnreachable) as e:
        RemoteTerminal(session, CONFIG, parse_target(target), job_table=jobs.JobTable())
    assert e.value.code == "TARGET_UNREACHABLE"
    # the client's words, not the echo of the set-up typed to it (ssh's own
    # PTY echoes until ssh takes it over: Target.hands_modes)
    assert "6973" not in e.value.message and "__dsh_magics" not in e.value.message, e.value.message
    # nothing of it is left running here
    assert pids_with_env("DSH_MAGICS_SESSION", session) == []
    return e.value


def test_connection_refused_after_sshd_stopped(tmp_path, ssh_options):
    server = start_sshd(tmp_path / "sshd")
    ssh_options(server.client_config("stopped"))
    target = server.target
    server.stop()
    err = _unreachable(target, "refused")
    assert "Connection refused" in err.message


@pytest.mark.parametrize("side", ["1", "0"], ids=["own-connection", "no-side-channel"])
def test_wrong_key(sshd, ssh_options, monkeypatch, side):
    # with a side channel the terminal's ssh would start the engine's own
    # connection and says why not in its log (-E), without one on its PTY:
    # the same words come back
    monkeypatch.setenv("DSH_MAGICS_SIDE_CHANNEL", side)
    ssh_options(sshd.client_config("wrong", key="id_other"))
    err = _unreachable(sshd.target, f"wrongkey{side}")
    assert "Permission denied" in err.message and "before a shell was ready (exit code 255)" in err.message


def test_unknown_host_key(sshd, ssh_options):
    ssh_options(sshd.client_config("unknown", known=""))
    err = _unreachable(sshd.target, "unknownhost")
    assert "Host key verification failed" in err.message
    assert "No ED25519 host key is known" in err.message


def test_changed_host_key(sshd, ssh_options):
    other = (sshd.dir / "id_other.pub").read_text()
    ssh_options(sshd.client_config("changed", known=f"[127.0.0.1]:{sshd.port} {other}"))
    err = _unreachable(sshd.target, "changedhost")
    assert "REMOTE HOST IDENTIFICATION HAS CHANGED" in err.message
    assert "Host key verification failed" in err.message


def test_remote_shell_killed_mid_job(open_remote):
    term = open_remote()
    shell = int(run(term, "echo $$").output)
    job = term.exec("echo before; sleep 30")
    wait_until(lambda: "before" in term.snapshot(job).output, timeout=10)
    os.kill(shell, signal.SIGKILL)
    assert job.wait(10)
    r = job.result
    assert r.status == "shell_exited"
    assert r.output.startswith("before\n"), "output up to the end is kept"
    # ssh's own words: "Shared connection to ... closed." (a session over the
    # engine's control connection; "Connection to ..." without a side channel)
    assert "connection to 127.0.0.1 closed." in r.note.lower()
    assert term.dead and not alive(term.pid)
    # the engine's connection and the side channel went with it, before any close()
    wait_until(lambda: not connection_processes(term), timeout=10, msg="ssh processes left")


def test_network_drop_mid_job(open_remote, sshd, ssh_options):
    # Keep-alives every second, two missed: the drop is noticed in ~3 s.
    ssh_options(sshd.client_config("drop") + " -o ServerAliveInterval=1 -o ServerAliveCountMax=2")
    term = open_remote()
    mine = sshd.connection_of(int(run(term, "echo $$").output))
    job = term.exec("for i in 1 2 3; do echo line$i; done; sleep 60")
    wait_until(lambda: "line3" in term.snapshot(job).output, timeout=10)
    # The server side stops answering: as if the network went away.
    for pid in mine:
        os.kill(pid, signal.SIGSTOP)
    try:
        assert job.wait(20), "a dropped connection is noticed by the keep-alives"
        r = job.result
        assert r.status == "shell_exited"
        assert r.output.startswith("line1\nline2\nline3\n")
        assert "not responding" in r.note
        assert term.dead and not alive(term.pid)
        wait_until(lambda: not connection_processes(term), timeout=10, msg="ssh processes left")
    finally:
        for pid in mine:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass


def test_a_killed_engine_leaves_no_remote_shell(sshd):
    """The engine's process dies (SIGKILL) with a job waiting for input, seen
    through the side channel: its connection goes with it
    (tests/remote/test_control_master.py), so sshd hangs up the session and
    the remote shell ends, its job with it. The private directory goes too:
    the engine's watchdog removes it (it was left for good)."""
    with engine_with_a_prompt(sshd.target, "killed-engine") as engine:
        assert engine.probes > 0 and alive(engine.shell)  # (the sshd is on this machine)
        assert os.path.isdir(engine.control)
        engine.proc.kill()
        engine.proc.wait(10)
        wait_until(lambda: not alive(engine.shell), timeout=10, msg="the remote shell outlived the engine")
        wait_until(lambda: not processes_with_arg(engine.control), timeout=10, msg="ssh processes outlived the engine")
        wait_until(lambda: not os.path.exists(engine.control), timeout=10, msg="the private directory outlived the engine")


def test_a_missing_ssh_client_leaves_no_private_directory(sshd, tmp_path, monkeypatch):
    """The ssh client cannot start (no such program): TARGET_UNREACHABLE,
    and the terminal's private directory, made before the spawn, is gone
    with it (it was left behind, the owner alive and well)."""
    monkeypatch.setenv("DSH_MAGICS_SSH", str(tmp_path / "no-such-ssh"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # (where the directory is made)
    err = _unreachable(sshd.target, "no-ssh")
    assert "cannot start" in err.message, err.message
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "target, said",
    [
        ("docker://dsh-no-such-container", "docker"),
        ("podman://dsh-no-such-container", "podman"),
        ("kubectl://default/dsh-no-such-pod", "kubectl"),
    ],
)
def test_container_clients_without_an_engine_or_cluster(target, said):
    """There is no Docker engine or cluster on the test machine, and podman
    has no such container: the client's own complaint comes back as
    TARGET_UNREACHABLE at once (a missing client too). Where a Docker engine
    runs, its case is skipped, not faked."""
    import shutil

    client = shutil.which(said)
    if client is not None and said == "docker" and os.path.exists("/var/run/docker.sock"):
        pytest.skip("a Docker engine is running here")
    err = _unreachable(target, f"nocluster-{said}")
    if client is None:
        assert f"cannot start {said!r}" in err.message
    else:
        assert "before a shell was ready" in err.message and len(err.message) > 80


@pytest.mark.parametrize("attempt", range(20))
def test_a_client_that_ends_at_once_is_unreachable(attempt):
    """``cmd:false`` may end before the set-up is typed (the write then
    fails) or after: either way it is TARGET_UNREACHABLE with its exit code,
    never SHELL_EXITED (a race; looped)."""
    err = _unreachable("cmd:false", f"false-{attempt}")
    assert "before a shell was ready (exit code 1)" in err.message, err.message


def test_a_stuck_spawner_holds_up_one_close_only(monkeypatch, caplog):
    """The spawner thread stuck (here on an event) while a registry closes
    three ``cmd:`` terminals: the first close waits for its forget
    (``FORGET_TIMEOUT_S``, short here) and gives up; the other two, whose
    forgets are queued behind it, do not wait. Each waited the whole time:
    a host's close_all of N terminals took N x 5 s, each under a held-back
    Ctrl-C (and a host's shutdown runs it twice, against stop_host's 30 s)."""
    from dsh_magics.terminal import Registry
    from dsh_magics.terminal.core import pty
    from dsh_magics.terminal.remote import remote_terminal

    monkeypatch.setattr(remote_terminal, "FORGET_TIMEOUT_S", 0.3)
    sessions = [f"stuck-{os.getpid()}-{time.monotonic_ns()}-{n}" for n in range(3)]
    reg = Registry(login=False)
    release = threading.Event()
    stuck = None
    try:
        for s in sessions:
            reg.attach(s, target=CMD_TARGET)
        stuck = pty.housekeeping(release.wait, 60)
        with caplog.at_level(logging.WARNING, logger=remote_terminal.__name__):
            assert reg.close_all() == 3
    finally:
        release.set()
        reg.close_all()
        if stuck is not None:
            stuck.result(timeout=60)
    said = [r.getMessage() for r in caplog.records if r.name == remote_terminal.__name__]
    assert sum("not told within" in m for m in said) == 1, said
    assert sum("the spawner is stuck" in m for m in said) == 2, said
    for s in sessions:
        assert pids_with_env("DSH_MAGICS_SESSION", s) == []


def test_a_forget_that_fails_is_logged_and_the_close_completes(monkeypatch, caplog):
    """The watchdog's bookkeeping raising during a close (here after the
    real forget): logged, and the close returns, its client gone. The
    close re-raised it, and a registry's close_all stopped half-way."""
    from dsh_magics.terminal import Registry
    from dsh_magics.terminal.core import watchdog
    from dsh_magics.terminal.remote import remote_terminal

    forget = watchdog.forget

    def failing(token: str) -> None:
        forget(token)
        raise RuntimeError("injected after the forget")

    sessions = [f"forget-fails-{os.getpid()}-{time.monotonic_ns()}-{n}" for n in range(2)]
    reg = Registry(login=False)
    try:
        for s in sessions:
            reg.attach(s, target=CMD_TARGET)
        monkeypatch.setattr(watchdog, "forget", failing)
        with caplog.at_level(logging.WARNING, logger=remote_terminal.__name__):
            assert reg.close_all() == 2
    finally:
        monkeypatch.setattr(watchdog, "forget", forget)
        reg.close_all()
    said = [r.getMessage() for r in caplog.records if r.name == remote_terminal.__name__]
    assert sum("could not be told" in m for m in said) == 2, said
    for s in sessions:
        assert pids_with_env("DSH_MAGICS_SESSION", s) == []


def test_sshd_connection_killed_mid_job_then_the_session_reconnects(sshd):
    """The server side of the connection dies (SIGKILL to the connection's
    sshd processes) while a job runs: the job settles ``shell_exited`` with
    its output so far and ssh's own words, nothing of the connection is left
    here, and the session's next command gets a fresh shell over a new
    connection."""
    from dsh_magics.terminal import Registry

    sid = f"cut-{os.getpid()}"  # (the leftover check below looks machine-wide)
    reg = Registry(login=False)
    try:
        reg.attach(sid, target=sshd.target)
        shell = reg.exec(sid, "echo $$", wait_ms=20_000)
        assert isinstance(shell, Result) and shell.ok, shell
        mine = sshd.connection_of(int(shell.output))
        job = reg.exec(sid, "echo before; sleep 30")
        wait_until(lambda: "before" in reg.result(job.id).output, 10)
        for pid in mine:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        res = reg.wait(job.id, timeout=20)
        assert res.status == "shell_exited", res.to_dict()
        assert res.output.startswith("before\n") and res.note, res.to_dict()
        assert reg.info(sid).status == "dead"
        again = reg.exec(sid, "echo again", wait_ms=30_000)
        assert (again.status, again.output, again.fresh_shell) == ("completed", "again\n", True), again.to_dict()
    finally:
        reg.close_all()
    assert pids_with_env("DSH_MAGICS_SESSION", sid) == []


@pytest.mark.parametrize("kind", ["ssh", "cmd"])
def test_the_terminal_is_dead_when_its_job_settles_shell_exited(sshd, kind):
    """Whoever is woken by a job settled because the client ended sees the
    terminal dead already, so a command run right then opens a new connection
    instead of going to the dead one (which settled it at once, ``shell_exited``
    with no output). The local twin: tests/terminal/test_lifecycle.py."""
    from dsh_magics.terminal import Registry

    sid = f"dead-first-{kind}-{os.getpid()}"
    reg = Registry(login=False)
    try:
        reg.attach(sid, target=sshd.target if kind == "ssh" else "cmd:bash --noprofile --norc -i")
        shell = reg.exec(sid, "echo $$", wait_ms=20_000)
        assert isinstance(shell, Result) and shell.ok, shell
        job = reg.exec(sid, "echo started; sleep 30")
        wait_until(lambda: "started" in reg.result(job.id).output, 10)
        seen: list[str] = []
        job.add_done_listener(lambda j: seen.append(reg.info(sid).status))
        os.kill(int(shell.output), signal.SIGKILL)
        assert reg.wait(job.id, timeout=20).status == "shell_exited"
        wait_until(lambda: seen, 5)
        assert seen == ["dead"]
    finally:
        reg.close_all()


def test_container_removed_mid_job(podman_box):
    """A container removed under a running job: the job settles
    ``shell_exited`` with its output so far; the next command cannot reach
    the target and says so with a stable code; nothing is left here."""
    import uuid

    from dsh_magics.terminal import Registry
    from tests.containers import PREFIX, RUN_OPTIONS, podman

    name = f"{PREFIX}{os.getpid()}-gone-{uuid.uuid4().hex[:6]}"
    started = podman("run", "-d", "--name", name, *RUN_OPTIONS, podman_box.image, "sleep", "infinity", check=False)
    assert started.returncode == 0, started.stderr
    reg = Registry(login=False)
    try:
        reg.attach("gone", target=f"podman://{name}")
        job = reg.exec("gone", "echo before; sleep 30")
        wait_until(lambda: "before" in reg.result(job.id).output, 20)
        podman("rm", "-f", "-t", "0", name)
        res = reg.wait(job.id, timeout=30)
        assert res.status == "shell_exited", res.to_dict()
        assert res.output.startswith("before\n") and res.note, res.to_dict()
        with pytest.raises(TargetUnreachable) as e:
            reg.exec("gone", "echo again", wait_ms=30_000)
        assert e.value.code == "TARGET_UNREACHABLE"
    finally:
        reg.close_all()
        podman("rm", "-f", "-t", "0", name, check=False)
    wait_until(lambda: pids_with_env("DSH_MAGICS_SESSION", "gone") == [], 10, msg="client processes gone")
