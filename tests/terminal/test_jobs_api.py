"""exec / wait / busy / output semantics of jobs."""

from __future__ import annotations

import json
import resource

import pytest

from dsh_magics import jobs
from dsh_magics.errors import InvalidArgument, NoSuchJob, NoSuchSession, SessionBusy
from dsh_magics.terminal import Registry, Result

from ..conftest import wait_until
from .conftest import run


def test_exec_returns_job_at_once_and_wait_ms_returns_result(reg, gate):
    job = reg.exec("t", f"{gate.shell}; echo slow")
    assert isinstance(job, jobs.Job) and not job.done and job.owner == "t"
    gate.open()
    res = reg.wait(job.id, timeout=10)
    assert isinstance(res, Result) and res.output == "slow\n" and res.status == "completed"
    fast = reg.exec("t", "echo fast", wait_ms=10_000)
    assert isinstance(fast, Result) and fast.output == "fast\n"
    slow = reg.exec("t", gate.shell, wait_ms=1)
    assert isinstance(slow, jobs.Job)
    gate.open()
    reg.wait(slow.id, timeout=10)


def test_second_exec_on_busy_terminal_is_refused(reg, gate):
    job = reg.exec("t", f"{gate.shell}; echo first")
    with pytest.raises(SessionBusy) as e:
        reg.exec("t", "echo second")
    assert e.value.code == "SESSION_BUSY" and job.id in e.value.message
    gate.open()
    assert reg.wait(job.id, timeout=10).output == "first\n"


def test_wait_timeout_leaves_command_running_with_partial_output(reg, gate):
    job = reg.exec("t", f"echo part1; {gate.shell}; echo part2")
    wait_until(lambda: reg.result(job.id).output, 10, msg="part1 printed")
    snap = reg.wait(job.id, timeout=0)
    assert snap.timed_out is True and snap.status == "running" and snap.exit_code is None
    assert snap.output == "part1\n"
    gate.open()
    final = reg.wait(job.id, timeout=10)
    assert final.timed_out is False and final.output == "part1\npart2\n"


def test_result_fields_and_json(reg, tmp_path):
    r = run(reg, f"cd {tmp_path}; echo hi; exit_code_is=3; (exit 3)")
    d = r.to_dict()
    json.dumps(d)
    assert d["exit_code"] == 3 and d["status"] == "completed" and d["cwd"] == str(tmp_path)
    assert d["job_id"].startswith("bash-") and d["session_id"] == "t"
    assert r.duration >= 0 and r.ended_at >= r.started_at
    assert r.lines == ["hi"]


def test_unknown_job_and_session(reg):
    with pytest.raises(NoSuchJob):
        reg.wait("bash-deadbeef", timeout=0)
    with pytest.raises(NoSuchSession):
        reg.read("never-opened")
    with pytest.raises(InvalidArgument):
        reg.exec("t", "   ")
    with pytest.raises(InvalidArgument):
        reg.wait(run(reg, "true").job_id, timeout=-1)


def test_ansi_and_progress_bars_are_cleaned(reg):
    r = run(reg, r"printf '\033[1;31mred\033[0m\n'; for i in $(seq 0 10 100); do printf '\r%3d%%' $i; done; echo")
    assert r.output == "red\n100%\n"
    r = run(reg, "head -c 3000 /dev/urandom; echo; echo survived")
    assert r.output.endswith("survived\n")


def test_output_larger_than_ring_reports_dropped_lines():
    reg = Registry(login=False, max_lines=100)
    try:
        r = run(reg, "seq 1 1000")
        assert r.dropped_lines == 900
        assert r.output.splitlines() == [str(i) for i in range(901, 1001)]
        rd = reg.read("t", since=0)
        assert rd.dropped == 900 and rd.lines[-1] == "1000"
        rd = reg.read("t", last=5)
        assert rd.lines == ["996", "997", "998", "999", "1000"]
        assert reg.read("t", since=rd.next_line).lines == []
    finally:
        reg.close_all()


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_memory_stays_bounded_for_200mb_of_output(reg):
    run(reg, "seq 1 1000 >/dev/null")
    before = _rss_mb()
    # 200 MB: lines of 99 characters, plus some very long lines.
    r = run(reg, "yes $(printf 'x%.0s' $(seq 1 98)) | head -c 190000000; head -c 10000000 /dev/zero | tr '\\0' y; echo", timeout_ms=300_000)
    assert r.exit_code == 0 and r.dropped_lines > 1_000_000
    growth = _rss_mb() - before
    assert growth < 30, f"RSS grew by {growth:.1f} MB"


def test_wait_output_wakes_when_a_silent_job_settles(reg, gate):
    import threading

    job = reg.exec("t", gate.shell)
    woke = threading.Event()

    def waiter() -> None:
        seq = reg.output_seq("t")
        while not job.done:
            seq = reg.wait_output("t", seq, timeout=60)
        woke.set()

    threading.Thread(target=waiter, daemon=True).start()
    gate.open()
    assert woke.wait(20), "wait_output slept through the job settling"
