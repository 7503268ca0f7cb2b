"""The engine API through a real host process: the same calls, types and
errors as in-process, job handles that outlive the client that made them,
and events for live output."""

from __future__ import annotations

import os
import threading

import pytest

from dsh_magics import jobs
from dsh_magics.errors import (
    HostUnavailable,
    InvalidArgument,
    NoSuchJob,
    NoSuchSession,
    SessionBusy,
)
from dsh_magics.host import HostClient, HostPaths
from dsh_magics.terminal import Result, TerminalInfo

from ..conftest import Gate
from .conftest import served_host, wait_until


def test_exec_wait_read_list(client: HostClient, tmp_path, gate: Gate) -> None:
    info = client.attach("api-basic", cwd=str(tmp_path))
    assert isinstance(info, TerminalInfo) and info.cwd == str(tmp_path)
    r = client.exec("api-basic", "export GREETING=hi; f() { echo \"$GREETING $1\"; }; cd ..", wait_ms=10_000)
    assert isinstance(r, Result) and r.exit_code == 0
    r = client.exec("api-basic", "f there; pwd", wait_ms=10_000)
    assert isinstance(r, Result)
    assert r.output == f"hi there\n{tmp_path.parent}\n"
    assert r.cwd == str(tmp_path.parent)
    job = client.exec("api-basic", f"{gate.shell}; echo late")
    assert isinstance(job, jobs.Job) and job.id.startswith("bash-") and job.owner == "api-basic"
    gate.open()
    res = client.wait(job.id, timeout=10)
    assert res.status == "completed" and res.output == "late\n"
    assert client.read("api-basic", last=1).lines == ["late"]
    rows = {i.session_id: i for i in client.list()}
    assert rows["api-basic"].status == "idle"
    assert client.exists("api-basic") and not client.exists("api-never-made")


def test_new_terminal_starts_in_the_callers_directory(client: HostClient, tmp_path, monkeypatch) -> None:
    # As in-process: a kernel's terminal starts where the kernel runs, not
    # where the host happens to run.
    monkeypatch.chdir(tmp_path)
    try:
        r = client.exec("api-cwd", "pwd", wait_ms=10_000)
        assert isinstance(r, Result) and r.output == f"{tmp_path}\n"
        (tmp_path / "sub").mkdir()
        info = client.attach("api-cwd-rel", cwd="sub")
        assert info.cwd == str(tmp_path / "sub")
    finally:  # new terminals in a run again (tests/rerun.py shares the module's host)
        client.close("api-cwd")
        client.close("api-cwd-rel")


def test_engine_errors_keep_their_classes(client: HostClient) -> None:
    job = client.exec("api-err", "sleep 5")
    assert isinstance(job, jobs.Job)
    with pytest.raises(SessionBusy) as e:
        client.exec("api-err", "true")
    assert e.value.details["job_id"] == job.id
    with pytest.raises(NoSuchJob):
        client.wait("bash-" + "0" * 32, timeout=0)
    with pytest.raises(NoSuchSession):
        client.read("api-no-such")
    with pytest.raises(InvalidArgument):
        client.exec("bad/id", "true")
    with pytest.raises(InvalidArgument):
        client.exec("api-err2", "   ")
    assert client.interrupt("api-err") is not None
    assert client.wait(job.id, timeout=10).status == "interrupted"


def test_timed_out_wait_leaves_the_job_running(client: HostClient, gate: Gate) -> None:
    job = client.exec("api-timeout", f"echo started; {gate.shell}; echo finished")
    snap = client.wait(job.id, timeout=0.2)
    assert snap.timed_out and snap.status == "running"
    wait_until(lambda: "started" in client.result(job.id).output, timeout=5)
    gate.open()
    final = client.wait(job.id, timeout=10)
    assert not final.timed_out and final.output == "started\nfinished\n"


def test_exec_wait_ms_longer_than_one_host_slice(module_dir: str, monkeypatch) -> None:
    # The host caps a request's wait (protocol.MAX_BLOCK_SECONDS, the table
    # row's block argument); the client finishes the wait on its job proxy.
    from dsh_magics.host import protocol as P

    monkeypatch.setattr(P, "MAX_BLOCK_SECONDS", 0.2)
    with served_host(module_dir, "slices") as (_server, client):
        r = client.exec("api-slices", "sleep 0.6; echo done", wait_ms=10_000)
        assert isinstance(r, Result) and r.output == "done\n"


def test_a_second_client_sees_the_same_terminal_and_job(client: HostClient, module_dir: str, gate: Gate) -> None:
    """What a restarted kernel does: a new client of the same host finds the
    terminal's state and can wait, read and interrupt a job by its id."""
    client.exec("api-shared", "cd /tmp; export MARK=kept", wait_ms=10_000)
    job = client.exec("api-shared", f"{gate.shell}; echo survived; sleep 30")
    other = HostClient(HostPaths.for_name("api", module_dir))
    try:
        assert other.connect()["instance"] == client.host_info()["instance"]
        seen = other.job(job.id)
        assert seen is not job and seen.id == job.id and not seen.done
        gate.open()
        wait_until(lambda: "survived" in other.result(job.id).output, timeout=10)
        assert other.read("api-shared", last=1).lines == ["survived"]
        assert other.interrupt("api-shared").id == job.id
        res = other.wait(job.id, timeout=10)
        assert res.status == "interrupted" and res.output.startswith("survived\n")
        assert job.wait(10) and job.status == "interrupted"  # the first client's proxy too
        r = other.exec("api-shared", 'echo "$PWD $MARK"', wait_ms=10_000)
        assert isinstance(r, Result) and r.output == "/tmp kept\n"
        assert other.latest_job("api-shared").id == r.job_id
        assert any(j.id == job.id for j in other.jobs.all())
    finally:
        other.detach()


def test_detach_leaves_terminals_running(client: HostClient, module_dir: str, gate: Gate) -> None:
    other = HostClient(HostPaths.for_name("api", module_dir))
    job = other.exec("api-detach", f"{gate.shell}; echo after-detach")
    other.detach()
    # What atexit and the engine's exit handler would call: no effect now.
    with pytest.raises(HostUnavailable, match="detached"):
        other.close_all()
    gate.open()  # the job outlived the detach
    assert client.wait(job.id, timeout=10).output == "after-detach\n"
    assert client.exists("api-detach")


def test_events_stream_output_and_completion(client: HostClient, gate: Gate) -> None:
    events: list[dict] = []
    got_done = threading.Event()

    def listener(ev: dict) -> None:
        if ev.get("session_id") == "api-events":
            events.append(ev)
            if ev["type"] == "job_done":
                got_done.set()

    unsubscribe = client.subscribe(listener)
    try:
        client.attach("api-events")
        wait_until(lambda: client._events is not None, timeout=5)
        job = client.exec("api-events", f"echo 1; {gate.shell}; echo 2; echo 3")
        wait_until(lambda: any(e["type"] == "output" for e in events), timeout=10)
        gate.open()
        assert got_done.wait(10)
    finally:
        unsubscribe()
    types = [e["type"] for e in events]
    assert "job_started" in types and "output" in types
    done = [e for e in events if e["type"] == "job_done"]
    assert done[0]["job_id"] == job.id and isinstance(done[0]["result"], Result)
    assert done[0]["result"].output == "1\n2\n3\n"
    assert types.index("output") < types.index("job_done")


def test_wait_output_and_output_seq(client: HostClient, gate: Gate) -> None:
    client.attach("api-seq")
    seq = client.output_seq("api-seq")
    client.exec("api-seq", f"{gate.shell}; echo x")
    gate.open()
    assert client.wait_output("api-seq", seq, timeout=10) != seq


def test_done_listener_on_a_proxy_fires(client: HostClient, gate: Gate) -> None:
    job = client.exec("api-listener", gate.shell)
    fired = threading.Event()
    job.add_done_listener(lambda j: fired.set())
    assert not fired.is_set()
    gate.open()
    assert fired.wait(10) and job.done


def test_close_kills_the_shell_and_its_children(client: HostClient) -> None:
    from ..conftest import pids_with_env

    client.exec("api-close", "sleep 300 &", wait_ms=10_000)
    wait_until(lambda: len(pids_with_env("DSH_MAGICS_SESSION", "api-close")) >= 2, timeout=10)
    assert client.close("api-close") is True
    wait_until(lambda: not pids_with_env("DSH_MAGICS_SESSION", "api-close"), timeout=10)
    assert not client.exists("api-close")


def test_config_is_the_hosts(client: HostClient) -> None:
    assert client.config.max_lines == client.host_info()["config"]["max_lines"]
    assert os.path.isabs(client.paths.socket)


def test_threads_share_one_client(client: HostClient) -> None:
    """A widget thread and the kernel's main thread use the same client."""
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(15):
                r = client.exec(f"api-thread-{n}", f"echo {n}-{i}", wait_ms=10_000)
                assert isinstance(r, Result) and r.output == f"{n}-{i}\n", r
                client.list()
                client.read(f"api-thread-{n}", last=1)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    for n in range(4):
        client.close(f"api-thread-{n}")


def test_job_listing_fetches_results_only_when_read(client: HostClient, module_dir: str) -> None:
    r = client.exec("api-list", "echo listed", wait_ms=10_000)
    assert isinstance(r, Result)
    other = HostClient(HostPaths.for_name("api", module_dir))
    try:
        listed = {j.id: j for j in other.jobs.all()}
        job = listed[r.job_id]
        assert job.done and job.status == "completed"
        assert job._result is None  # listed without its output ...
        assert job.result.output == "listed\n"  # ... fetched on first read
        assert job.result is job.result
        assert other.wait(r.job_id, timeout=0).output == "listed\n"
    finally:
        other.detach()
