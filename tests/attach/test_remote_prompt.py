"""A person's prompt at an idle *remote* terminal (docs/attach.md, "What you type"):
``dsh-magics attach`` in tmux, the session's shell over the real sshd on 127.0.0.1
or in a real podman container. The line comes back in an in-band marker
(terminal/person.py, ``LineMarker``), never through the output."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator

import pytest

from dsh_magics import jobs
from dsh_magics.errors import SessionBusy
from dsh_magics.host import HostClient, HostPaths
from dsh_magics.terminal import Result
from dsh_magics.terminal.remote.targets import ENV_SSH_OPTIONS

from ..conftest import wait_until
from ..host.conftest import new_dir, stop_everything
from .conftest import T, Tmux, attach_command


@pytest.fixture(scope="module")
def remote_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[HostClient, str, str]]:
    """A host that reaches the test sshd (it inherits the ssh options), its
    directory, and the sshd's target."""
    from ..remote.conftest import start_sshd

    server = start_sshd(tmp_path_factory.mktemp("attach-sshd"))
    saved = {k: os.environ.get(k) for k in (ENV_SSH_OPTIONS, "DSH_MAGICS_LOGIN")}
    os.environ[ENV_SSH_OPTIONS] = server.client_config("attach")
    os.environ["DSH_MAGICS_LOGIN"] = "0"
    d = new_dir()
    client = HostClient(HostPaths.for_name("attr", d))
    try:
        client.connect()
        yield client, d, server.target
        client.close_all()
    finally:
        client.detach()
        stop_everything(d)
        shutil.rmtree(d, ignore_errors=True)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        server.stop()


@pytest.fixture(params=["ssh", "podman"])
def remote(
    request: pytest.FixtureRequest, remote_host: tuple[HostClient, str, str]
) -> Iterator[tuple[HostClient, str, str]]:
    """(host client, host dir, target) for each remote kind; the test's
    terminals are closed after it (the host allows 16)."""
    client, d, ssh_target = remote_host
    target = ssh_target if request.param == "ssh" else request.getfixturevalue("podman_box").target
    yield client, d, target
    client.close_all()


def _open(remote: tuple[HostClient, str, str], session: str, tmuxes: list[Tmux], cols: int = 120) -> Tmux:
    engine, d, target = remote
    engine.attach(session, target=target, recreate=True)
    res = engine.exec(session, "echo remote-ready", wait_ms=30_000, source="notebook")
    assert isinstance(res, Result) and res.output == "remote-ready\n", res
    t = Tmux(attach_command(session, d), cols, 30)
    tmuxes.append(t)
    t.wait_for("remote-ready")  # drawn by the client: its terminal is in raw mode
    return t


def _person_jobs(engine: HostClient, session: str) -> list[jobs.Job]:
    return [j for j in engine.jobs.all() if j.owner == session and j.source == "person" and not j.label.startswith("#")]


def _prompt_line(t: Tmux) -> str:
    rows = [r for r in t.rows() if r]
    return rows[-1] if rows else ""


def _done(engine: HostClient, session: str, count: int) -> list[jobs.Job]:
    def ok() -> list[jobs.Job] | None:
        found = _person_jobs(engine, session)
        return found if len(found) == count and all(j.done for j in found) else None

    return wait_until(ok, T, msg=f"{count} person jobs in {[j.label for j in _person_jobs(engine, session)]}")  # type: ignore[no-any-return]


def test_lines_typed_at_the_remote_prompt_are_person_jobs(remote: tuple[HostClient, str, str], tmuxes: list[Tmux]) -> None:
    engine = remote[0]
    session = f"rp-run-{uuid.uuid4().hex[:8]}"
    t = _open(remote, session, tmuxes)
    t.text("cd /tmp")
    t.keys("Enter")
    _done(engine, session, 1)
    t.text("pwd")
    t.keys("Enter")
    first, second = _done(engine, session, 2)
    assert (first.label, second.label) == ("cd /tmp", "pwd")
    assert isinstance(second.result, Result) and second.result.output == "/tmp\n" and second.result.source == "person"
    assert isinstance(first.result, Result) and first.result.exit_code == 0
    assert engine.info(session).cwd == "/tmp"
    rows = [(r["kind"], r["source"], r["text"]) for r in engine.inputs(session)]
    assert rows[-2:] == [("command", "person", "cd /tmp"), ("command", "person", "pwd")]
    # The hand-over marker never reaches the output a model reads.
    out = engine.read(session)
    assert "6973" not in repr(out) and "6973" not in t.screen()


def test_tab_completes_a_remote_file_name(remote: tuple[HostClient, str, str], tmuxes: list[Tmux]) -> None:
    engine = remote[0]
    session = f"rp-tab-{uuid.uuid4().hex[:8]}"
    t = _open(remote, session, tmuxes)
    # Made by the remote shell, where it runs (inside the container: not on this machine).
    made = "__d=/tmp/dsh-test-attach-$RANDOM$RANDOM && mkdir \"$__d\" && cd \"$__d\" && touch remote-only-file-xq && echo made"
    res = engine.exec(session, made, wait_ms=30_000)
    assert isinstance(res, Result) and res.output == "made\n", res
    t.wait_for("made")
    t.text("ls remote-on")
    t.keys("Tab")
    wait_until(lambda: _prompt_line(t).endswith("ls remote-only-file-xq"), T, msg=t.screen())
    t.keys("Enter")
    (job,) = _done(engine, session, 1)
    assert job.label == "ls remote-only-file-xq " and job.result.output == "remote-only-file-xq\n"
    engine.exec(session, "cd / && rm -r -- \"$__d\"", wait_ms=30_000)


def test_an_agents_exec_during_a_half_typed_remote_line_is_refused_and_the_line_kept(
    remote: tuple[HostClient, str, str], tmuxes: list[Tmux]
) -> None:
    engine = remote[0]
    session = f"rp-busy-{uuid.uuid4().hex[:8]}"
    t = _open(remote, session, tmuxes)
    t.text("echo half")
    wait_until(lambda: _prompt_line(t).endswith("# echo half"), T, msg=t.screen())
    with pytest.raises(SessionBusy, match="person is typing"):
        engine.exec(session, "echo intruder", source="agent")
    t.text("way")
    t.keys("Enter")
    (job,) = _done(engine, session, 1)
    assert job.label == "echo halfway" and job.result.output == "halfway\n"
    res = engine.exec(session, "echo after", wait_ms=30_000, source="agent")
    assert isinstance(res, Result) and res.output == "after\n"
    assert "intruder" not in repr(engine.read(session)) and "intruder" not in t.screen()
