"""The engine contract, run against every backend (``engine`` fixture): the
same calls give the same values, job handles, events and error codes
in-process and through the terminal host."""

from __future__ import annotations

import os
from typing import Any

import pytest

from dsh_magics import jobs
from dsh_magics.errors import DshError, InvalidArgument, NoSuchJob, NoSuchSession, SessionBusy
from dsh_magics.terminal import (
    COMPLETED,
    INTERRUPTED,
    RUNNING,
    Engine,
    ReadResult,
    Result,
    TerminalInfo,
)
from dsh_magics.terminal.config import TerminalConfig

from ..conftest import Gate, wait_until


def _done(engine: Engine, session: str, command: str) -> Result:
    out = engine.exec(session, command, wait_ms=20_000)
    assert isinstance(out, Result), f"{command!r} did not finish in 20 s"
    return out


def test_both_backends_satisfy_the_protocol(engine: Engine) -> None:
    assert isinstance(engine, Engine)
    assert isinstance(engine.config, TerminalConfig) and engine.config.max_lines > 0
    assert len(engine.jobs) >= 0


# -- attach -------------------------------------------------------------------
def test_attach_opens_in_cwd_and_cds_an_open_terminal(engine: Engine, tmp_path) -> None:
    info = engine.attach("c-attach", cwd=str(tmp_path))
    assert isinstance(info, TerminalInfo)
    assert info.session_id == "c-attach" and info.cwd == str(tmp_path) and info.pid
    (tmp_path / "sub").mkdir()
    again = engine.attach("c-attach", cwd=str(tmp_path / "sub"))
    assert again.pid == info.pid and again.cwd == str(tmp_path / "sub")
    assert _done(engine, "c-attach", "pwd").output == f"{tmp_path / 'sub'}\n"


def test_attach_recreate_replaces_the_shell(engine: Engine) -> None:
    first = engine.attach("c-recreate")
    _done(engine, "c-recreate", "MARK=1")
    second = engine.attach("c-recreate", recreate=True)
    assert second.pid != first.pid
    assert _done(engine, "c-recreate", 'echo "[$MARK]"').output == "[]\n"


def test_attach_to_a_missing_directory_changes_nothing(engine: Engine, tmp_path) -> None:
    info = engine.attach("c-badcwd", cwd=str(tmp_path))
    with pytest.raises(InvalidArgument) as e:
        engine.attach("c-badcwd", cwd=str(tmp_path / "missing"))
    assert e.value.code == "INVALID_ARGUMENT" and "is not a directory" in e.value.message
    assert engine.info("c-badcwd").pid == info.pid and engine.info("c-badcwd").cwd == str(tmp_path)
    with pytest.raises(InvalidArgument):
        engine.attach("c-badcwd-new", cwd=str(tmp_path / "missing"))
    assert not engine.exists("c-badcwd-new")


# -- exec and wait --------------------------------------------------------------
def test_exec_returns_a_job_handle_at_once(engine: Engine, gate: Gate) -> None:
    job = engine.exec("c-exec", f"{gate.shell}; echo done")
    assert isinstance(job, jobs.Job) and not job.done
    assert job.id.startswith("bash-") and job.owner == "c-exec"
    gate.open()
    res = engine.wait(job.id, timeout=20)
    assert isinstance(res, Result)
    assert res.status == COMPLETED and res.exit_code == 0 and res.output == "done\n" and not res.timed_out
    assert res.job_id == job.id and res.session_id == "c-exec"
    assert job.wait(5) and job.done


def test_exec_with_wait_ms_returns_the_result(engine: Engine) -> None:
    res = _done(engine, "c-waitms", "echo out; echo err >&2; (exit 3)")
    assert res.status == COMPLETED and res.exit_code == 3
    assert res.output == "out\nerr\n"
    slow = engine.exec("c-waitms", "sleep 30", wait_ms=50)
    assert isinstance(slow, jobs.Job) and not slow.done
    engine.interrupt("c-waitms")
    assert engine.wait(slow.id, timeout=20).status == INTERRUPTED


def test_a_busy_terminal_refuses_a_second_command(engine: Engine) -> None:
    job = engine.exec("c-busy", "sleep 30")
    assert isinstance(job, jobs.Job)
    with pytest.raises(SessionBusy) as e:
        engine.exec("c-busy", "true")
    assert e.value.code == "SESSION_BUSY" and job.id in e.value.message
    engine.interrupt("c-busy")
    engine.wait(job.id, timeout=20)
    assert _done(engine, "c-busy", "echo free").output == "free\n"


@pytest.mark.parametrize("command", ["", "   ", "\n\t"])
def test_an_empty_command_is_refused_with_one_wording(engine: Engine, command: str) -> None:
    with pytest.raises(InvalidArgument) as e:
        engine.exec("c-empty", command)
    assert e.value.message == "command must not be empty or only whitespace"
    assert e.value.details.get("field") == "command"
    assert not engine.exists("c-empty")


def test_a_timed_out_wait_leaves_the_job_running(engine: Engine) -> None:
    job = engine.exec("c-timeout", "echo started; sleep 30")
    assert isinstance(job, jobs.Job)
    snap = engine.wait(job.id, timeout=0.3)
    assert snap.timed_out and snap.status == RUNNING and snap.exit_code is None
    assert engine.info("c-timeout").job_id == job.id
    assert not job.done
    engine.interrupt("c-timeout")
    settled = engine.wait(job.id, timeout=20)
    assert settled.status == INTERRUPTED and not settled.timed_out
    assert settled.output.startswith("started\n")


# -- read ----------------------------------------------------------------------
def test_read_since_and_last(engine: Engine) -> None:
    _done(engine, "c-read", "printf 'l%s\\n' 1 2 3 4 5")
    rr = engine.read("c-read", last=2)
    assert isinstance(rr, ReadResult) and rr.lines == ["l4", "l5"]
    mark = rr.next_line
    _done(engine, "c-read", "echo l6")
    new = engine.read("c-read", since=mark)
    assert new.lines == ["l6"] and new.first_line == mark and new.next_line == mark + 1
    assert engine.read("c-read", since=new.next_line).lines == []
    assert engine.read("c-read", last=0).lines == []


# -- interrupt, close, list ---------------------------------------------------------
def test_interrupt_stops_the_job_and_keeps_the_shell(engine: Engine) -> None:
    engine.attach("c-int")
    pid = engine.info("c-int").pid
    assert engine.interrupt("c-int") is None  # nothing runs
    job = engine.exec("c-int", "sleep 30")
    assert isinstance(job, jobs.Job)
    got = engine.interrupt("c-int")
    assert got is not None and got.id == job.id
    assert engine.wait(job.id, timeout=20).status == INTERRUPTED
    assert engine.info("c-int").pid == pid
    assert _done(engine, "c-int", "echo alive").output == "alive\n"


def test_close_one_and_close_all(engine: Engine) -> None:
    engine.attach("c-close-a")
    engine.attach("c-close-b")
    engine.attach("c-close-c")
    assert engine.close("c-close-a") is True
    assert not engine.exists("c-close-a")
    with pytest.raises(NoSuchSession) as e:
        engine.close("c-close-a")
    assert e.value.code == "NO_SUCH_SESSION"
    with pytest.raises(NoSuchSession):
        engine.read("c-close-a")
    assert sorted(i.session_id for i in engine.list()) == ["c-close-b", "c-close-c"]
    assert engine.close_all() == 2
    assert engine.list() == []


def test_list_says_what_runs_where(engine: Engine, tmp_path) -> None:
    engine.attach("c-list-idle", cwd=str(tmp_path))
    job = engine.exec("c-list-busy", "sleep 30")
    assert isinstance(job, jobs.Job)
    rows = {i.session_id: i for i in engine.list()}
    assert set(rows) == {"c-list-idle", "c-list-busy"}
    assert rows["c-list-idle"].status == "idle" and not rows["c-list-idle"].running
    assert rows["c-list-idle"].cwd == str(tmp_path)
    assert rows["c-list-busy"].status == "busy" and rows["c-list-busy"].job_id == job.id
    assert engine.info("c-list-busy").job_id == job.id
    engine.interrupt("c-list-busy")
    engine.wait(job.id, timeout=20)


# -- jobs ----------------------------------------------------------------------
def test_job_lookup_and_latest_job(engine: Engine) -> None:
    first = engine.exec("c-jobs", "true")
    assert isinstance(first, jobs.Job)
    engine.wait(first.id, timeout=20)
    second = engine.exec("c-jobs-other", "true")
    assert isinstance(second, jobs.Job)
    engine.wait(second.id, timeout=20)
    found = engine.job(first.id)
    assert found.id == first.id and found.owner == "c-jobs" and found.done
    latest = engine.latest_job("c-jobs")
    assert latest is not None and latest.id == first.id
    newest = engine.latest_job()
    assert newest is not None and newest.id == second.id
    assert engine.latest_job("c-jobs-none") is None
    assert {first.id, second.id} <= {j.id for j in engine.jobs.all()}
    assert engine.jobs.get(first.id).id == first.id
    with pytest.raises(NoSuchJob) as e:
        engine.job("bash-" + "0" * 32)
    assert e.value.code == "NO_SUCH_JOB"


def test_jobs_view_lists_running_jobs(engine: Engine) -> None:
    job = engine.exec("c-running", "sleep 30")
    assert isinstance(job, jobs.Job)
    assert [j.id for j in engine.jobs.running("c-running")] == [job.id]
    latest = engine.jobs.latest("c-running")
    assert latest is not None and latest.id == job.id
    engine.interrupt("c-running")
    engine.wait(job.id, timeout=20)
    assert engine.jobs.running("c-running") == []


def test_result_snapshot_of_a_running_and_a_settled_job(engine: Engine) -> None:
    job = engine.exec("c-snap", "echo first; sleep 30")
    assert isinstance(job, jobs.Job)
    snap = wait_until(
        lambda: (r := engine.result(job.id)).output == "first\n" and r, timeout=20, msg="first line"
    )
    assert isinstance(snap, Result) and snap.status == RUNNING and snap.ended_at is None
    engine.interrupt("c-snap")
    engine.wait(job.id, timeout=20)
    final = engine.result(job.id)
    assert final.status == INTERRUPTED and final.output.startswith("first\n")


def test_result_tail_lines_keeps_only_the_last_lines(engine: Engine) -> None:
    res = _done(engine, "c-tail", "seq 1 500")
    full = engine.result(res.job_id)
    assert full.output == "".join(f"{i}\n" for i in range(1, 501)) and full.omitted_lines == 0
    tail = engine.result(res.job_id, tail_lines=3)
    assert tail.output == "498\n499\n500\n" and tail.omitted_lines == 497
    assert tail.status == COMPLETED and tail.exit_code == 0 and tail.job_id == res.job_id
    assert engine.result(res.job_id, tail_lines=0).output == ""
    assert engine.result(res.job_id, tail_lines=10_000).output == full.output
    # A running job's snapshot too: a live view pulls only what it draws.
    job = engine.exec("c-tail", "seq 1 300; sleep 30")
    assert isinstance(job, jobs.Job)
    snap = wait_until(
        lambda: (r := engine.result(job.id, tail_lines=2)).output == "299\n300\n" and r, timeout=20, msg="tail"
    )
    assert isinstance(snap, Result) and snap.status == RUNNING and snap.omitted_lines == 298
    engine.interrupt("c-tail")
    engine.wait(job.id, timeout=20)


# -- events and output sequence -------------------------------------------------------
def test_subscribe_delivers_job_and_output_events(engine: Engine) -> None:
    events: list[dict[str, Any]] = []

    def listener(event: dict[str, Any]) -> None:
        if event.get("session_id") == "c-events":
            events.append(event)

    unsubscribe = engine.subscribe(listener)
    try:
        job = engine.exec("c-events", "echo hello")
        assert isinstance(job, (jobs.Job, Result))
        job_id = job.id if isinstance(job, jobs.Job) else job.job_id

        def at(kind: str) -> int | None:
            # This job's event: under the host, a run before this one (tests/rerun.py
            # shares the module's engine) may still deliver its last events here.
            return next((i for i, e in enumerate(events) if e["type"] == kind and e.get("job_id") == job_id), None)

        wait_until(lambda: at("job_done") is not None, 20, msg="no job_done event of this job")
    finally:
        unsubscribe()
    types = [e["type"] for e in events]
    started_at, done_at = at("job_started"), at("job_done")
    assert started_at is not None and done_at is not None, types
    # Events come in the order things happened: the job's output between
    # its start and its end (the terminal's own start-up may print before).
    assert "output" in types[started_at:done_at], types
    result = events[done_at]["result"]
    assert isinstance(result, Result) and result.output == "hello\n"
    count = len(events)
    _done(engine, "c-events", "echo after")
    assert len(events) == count  # unsubscribed: nothing more


def test_output_seq_and_wait_output(engine: Engine, gate: Gate) -> None:
    _done(engine, "c-seq", "true")
    seq = engine.output_seq("c-seq")
    assert isinstance(seq, int)
    job = engine.exec("c-seq", f"{gate.shell}; echo tick")
    assert isinstance(job, jobs.Job)
    gate.open()
    assert engine.wait_output("c-seq", seq, timeout=20) != seq
    engine.wait(job.id, timeout=20)
    # An idle terminal: the wait times out and says nothing changed.
    quiet = engine.output_seq("c-seq")
    assert engine.wait_output("c-seq", quiet, timeout=0.2) == quiet


# -- errors --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "code", "message"),
    [
        (lambda e: e.exec("bad/id", "true"), "INVALID_ARGUMENT", "session id must not contain path separators"),
        (lambda e: e.exec("", "true"), "INVALID_ARGUMENT", "session id must be a non-empty string"),
        (lambda e: e.exec("c-err", 5), "INVALID_ARGUMENT", "command must be a string"),
        (lambda e: e.exec("c-err", "true", wait_ms=-1), "INVALID_ARGUMENT", "wait_ms must be a number of milliseconds >= 0"),
        (lambda e: e.wait("bash-x", timeout=-1), "INVALID_ARGUMENT", "timeout must be a number of seconds >= 0"),
        (lambda e: e.wait("", timeout=1), "INVALID_ARGUMENT", "job id must be a non-empty string"),
        (lambda e: e.result("bash-x", tail_lines=-1), "INVALID_ARGUMENT", "tail_lines must be an integer >= 0"),
        (lambda e: e.read("c-err", since=-1), "INVALID_ARGUMENT", "since must be an integer >= 0"),
        (lambda e: e.read("c-err", last=True), "INVALID_ARGUMENT", "last must be an integer >= 0"),
        (lambda e: e.attach("c-err", cwd=""), "INVALID_ARGUMENT", "cwd must be a non-empty string"),
        (lambda e: e.read("c-err-none"), "NO_SUCH_SESSION", None),
        (lambda e: e.interrupt("c-err-none"), "NO_SUCH_SESSION", None),
        (lambda e: e.info("c-err-none"), "NO_SUCH_SESSION", None),
        (lambda e: e.wait("bash-" + "1" * 32, timeout=0), "NO_SUCH_JOB", None),
        (lambda e: e.result("bash-" + "1" * 32), "NO_SUCH_JOB", None),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_errors_have_stable_codes_and_one_wording(engine: Engine, call: Any, code: str, message: str | None) -> None:
    with pytest.raises(DshError) as e:
        call(engine)
    assert e.value.code == code
    if message is not None:
        assert e.value.message == message


def test_exists_never_raises(engine: Engine) -> None:
    assert engine.exists("c-never") is False
    assert engine.exists("bad/id") is False
    assert engine.exists("") is False


def test_commands_run_in_a_shell_with_the_process_environment(engine: Engine) -> None:
    # Both backends hand the shell the starting process's environment.
    res = _done(engine, "c-env", 'echo "${DSH_MAGICS_LOGIN-unset}"')
    assert res.output == f"{os.environ.get('DSH_MAGICS_LOGIN', 'unset')}\n"
