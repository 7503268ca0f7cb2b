"""Shell death, attach, recreate, close, list, limits: nothing is orphaned."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from dsh_magics.errors import InvalidArgument, NoSuchSession, TooManySessions
from dsh_magics.terminal import Registry
from tests.conftest import live_pids, pids_with_env, wait_until

from .conftest import run


def _token_of(reg: Registry, session: str) -> str:
    return reg._terms[session].transport.token


def test_exit_inside_command_settles_shell_exited_then_fresh_shell(fresh_reg):
    reg = fresh_reg
    run(reg, "export KEEP=1")
    pid = reg.info("t").pid
    r = run(reg, "echo bye; exit 3")
    # bash announces the exit of an interactive shell, as in a terminal
    assert r.status == "shell_exited" and r.exit_code == 3 and r.output == "bye\nexit\n"
    info = reg.info("t")
    assert info.status == "dead" and info.exit_code == 3
    r = run(reg, "echo [${KEEP:-}]")
    assert r.fresh_shell is True and r.output == "[]\n"
    assert reg.info("t").pid != pid and reg.info("t").status == "idle"


def test_shell_killed_from_outside_mid_job(fresh_reg):
    reg = fresh_reg
    job = reg.exec("t", "echo started; sleep 30")
    wait_until(lambda: "started" in reg.result(job.id).output, 10)
    os.kill(reg.info("t").pid, signal.SIGKILL)
    r = reg.wait(job.id, timeout=10)
    assert r.status == "shell_exited" and r.signal == signal.SIGKILL and r.exit_code == 137
    assert "killed by signal 9" in (r.note or "")
    assert run(reg, "echo again").fresh_shell is True


def test_terminal_is_dead_when_its_job_settles_shell_exited(fresh_reg):
    """Whoever is woken by a shell_exited job sees the terminal dead already,
    so an exec right then starts a fresh shell instead of typing into the old one."""
    reg = fresh_reg
    job = reg.exec("t", "echo started; sleep 30")
    wait_until(lambda: "started" in reg.result(job.id).output, 10)
    seen: list[str] = []
    job.add_done_listener(lambda j: seen.append(reg.info("t").status))
    os.kill(reg.info("t").pid, signal.SIGKILL)
    assert reg.wait(job.id, timeout=10).status == "shell_exited"
    wait_until(lambda: seen, 5)
    assert seen == ["dead"]


def test_attach_cwd_missing_dir_and_recreate(fresh_reg, tmp_path):
    reg = fresh_reg
    info = reg.attach("t", cwd=str(tmp_path))
    assert info.cwd == str(tmp_path)
    run(reg, "export MARK=1")
    with pytest.raises(InvalidArgument):
        reg.attach("t", cwd=str(tmp_path / "missing"))
    assert run(reg, "pwd; echo $MARK").output == f"{tmp_path}\n1\n"
    sub = tmp_path / "sub"
    sub.mkdir()
    assert reg.attach("t", cwd="sub").cwd == str(sub)  # relative to the shell's cwd
    bg = int(run(reg, "sleep 300 & echo $!").output.split()[-1])
    old_pid = reg.info("t").pid
    info = reg.attach("t", recreate=True)
    assert info.pid != old_pid
    wait_until(lambda: bg not in live_pids(), 5, msg="old shell's child survived recreate")
    assert run(reg, "echo [${MARK:-}]").output == "[]\n"


def test_close_kills_everything_including_setsid_children_and_temp_files(tmp_path):
    reg = Registry(login=False)
    run(reg, "sleep 301 & setsid sleep 302 & (setsid sh -c 'sleep 303 & wait' &)")
    token = _token_of(reg, "t")
    tmpdir = reg._terms["t"]._tmpdir
    # the shell, sleep 301, sleep 302, sh and sleep 303 (once they started)
    wait_until(lambda: len(pids_with_env("DSH_MAGICS_TOKEN", token)) >= 5, 10, msg="all started")
    shell_pid = reg.info("t").pid
    reg.close("t")
    assert pids_with_env("DSH_MAGICS_TOKEN", token) == []
    assert shell_pid not in live_pids()
    assert not os.path.exists(tmpdir)
    with pytest.raises(NoSuchSession):
        reg.read("t")


def test_close_while_busy_settles_job(fresh_reg):
    reg = fresh_reg
    job = reg.exec("t", "sleep 30")
    reg.close("t")
    assert job.done and job.status == "shell_exited"


def test_list_reports_status_cwd_job_pid(fresh_reg, tmp_path):
    reg = fresh_reg
    reg.attach("a", cwd=str(tmp_path))
    job = reg.exec("b", f"cd {tmp_path}; echo go; sleep 30")
    wait_until(lambda: "go" in reg.result(job.id).output, 10)
    rows = {i.session_id: i for i in reg.list()}
    assert rows["a"].status == "idle" and rows["a"].job_id is None and rows["a"].cwd == str(tmp_path)
    assert rows["b"].status == "busy" and rows["b"].job_id == job.id and rows["b"].cwd == str(tmp_path)
    assert rows["b"].pid and rows["b"].created_at > 0
    assert rows["b"].to_dict()["running"] is True
    reg.interrupt("b")
    reg.wait(job.id, timeout=10)


def test_max_sessions_and_session_id_validation():
    reg = Registry(login=False, max_sessions=2)
    try:
        reg.attach("one")
        reg.attach("two")
        with pytest.raises(TooManySessions) as e:
            reg.attach("three")
        assert e.value.code == "TOO_MANY_SESSIONS"
        for bad in ["", "a/b", "a\nb", "x\x00", "\x1b[31m", " lead"]:
            with pytest.raises(InvalidArgument):
                reg.exec(bad, "true")
        assert run(reg, "echo fine", session="one").output == "fine\n"
    finally:
        reg.close_all()


def test_threads_exec_wait_read_list_concurrently(fresh_reg):
    reg = fresh_reg
    errors: list[BaseException] = []
    stop = threading.Event()

    def worker(session: str) -> None:
        try:
            for i in range(30):
                r = reg.exec(session, f"echo {session}-{i}", wait_ms=20_000)
                assert r.output == f"{session}-{i}\n", r.output
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    def watcher() -> None:
        try:
            while not stop.is_set():
                for info in reg.list():
                    reg.read(info.session_id, last=3)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(f"s{k}",)) for k in range(4)]
    w = threading.Thread(target=watcher)
    w.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    stop.set()
    w.join(10)
    assert not errors, errors


def test_same_session_from_two_threads_one_wins_other_busy(fresh_reg, gate):
    reg = fresh_reg
    reg.attach("t")
    results: list[str] = []
    barrier = threading.Barrier(2)

    def go() -> None:
        barrier.wait()
        try:
            results.append(reg.exec("t", gate.shell).id)
        except Exception as e:  # noqa: BLE001
            results.append(getattr(e, "code", "?"))

    ts = [threading.Thread(target=go) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(10)
    assert len(results) == 2 and results.count("SESSION_BUSY") == 1, results
    gate.open()
    (job_id,) = (r for r in results if r != "SESSION_BUSY")
    assert reg.wait(job_id, timeout=10).status == "completed"


def test_listener_may_call_back_into_registry_during_start(fresh_reg):
    reg = fresh_reg
    seen: list[int] = []
    unsubscribe = reg.subscribe(lambda event: seen.append(len(reg.list())))
    try:
        reg.attach("cb", cwd=None)
        assert run(reg, "echo ok", session="cb").output == "ok\n"
    finally:
        unsubscribe()
    assert seen, "no events delivered"


def test_concurrent_start_of_one_session_gives_one_terminal(fresh_reg):
    reg = fresh_reg
    infos: list = []
    barrier = threading.Barrier(4)

    def go() -> None:
        barrier.wait()
        infos.append(reg.attach("same"))

    ts = [threading.Thread(target=go) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(30)
    assert len({i.pid for i in infos}) == 1 and len(reg.list()) == 1
