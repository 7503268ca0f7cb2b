"""``dsh-magics attach`` in tmux, the real terminal: what a person sees and
types reaches the same terminal the notebook and agents use (docs/attach.md)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from dsh_magics import jobs
from dsh_magics.attach.link import Conn
from dsh_magics.errors import InvalidArgument
from dsh_magics.host import HostClient, HostPaths
from dsh_magics.terminal import Result

from ..conftest import wait_until
from ..host.conftest import new_dir, stop_everything
from .conftest import ROOT, T, Tmux, attach_command


def _attach(tmuxes: list[Tmux], session: str, attach_dir: str, *extra: str, cols: int = 100, rows: int = 30) -> Tmux:
    t = Tmux(attach_command(session, attach_dir, *extra), cols, rows)
    tmuxes.append(t)
    return t


def _attached(engine: HostClient, session: str, count: int = 1) -> None:
    """Until ``count`` viewers of ``session`` are attached and drawn."""
    def ok() -> bool:
        status = engine.status()
        return len([a for a in status.get("attached", []) if a["session_id"] == session]) >= count

    wait_until(ok, T, msg="attach client not connected")


def _sized(engine: HostClient, session: str, cols: int, rows: int) -> None:
    """Until the attached client has given the terminal its window's size (a
    program started before that gets a SIGWINCH, and vim then redraws)."""
    wait_until(lambda: (engine.screen(session)["cols"], engine.screen(session)["rows"]) == (cols, rows), T)


def _person_jobs(engine: HostClient, session: str) -> list[jobs.Job]:
    return [j for j in engine.jobs.all() if j.owner == session and j.source == "person" and not j.label.startswith("#")]


def test_a_notebook_jobs_output_appears(engine: HostClient, attach_dir: str, tmuxes: list[Tmux]) -> None:
    engine.exec("a-out", "echo before-attach", wait_ms=20_000, source="notebook")
    t = _attach(tmuxes, "a-out", attach_dir)
    t.wait_for("before-attach")
    _attached(engine, "a-out")
    res = engine.exec("a-out", "for i in 1 2 3; do echo live-line-$i; done", wait_ms=20_000, source="notebook")
    assert isinstance(res, Result) and res.exit_code == 0
    t.wait_for("live-line-3")


def test_read_p_is_answered_by_keys(
    engine: HostClient, attach_dir: str, tmuxes: list[Tmux], fresh_session: Callable[[str], str]
) -> None:
    sid = fresh_session("a-read")  # (a fixed id's record would hold the last run's input)
    engine.attach(sid)
    t = _attach(tmuxes, sid, attach_dir)
    _attached(engine, sid)
    job = engine.exec(sid, "read -r -p 'Your name? ' n; echo \"hello [$n]\"", tty=True, source="notebook")
    assert isinstance(job, jobs.Job)
    t.wait_for("Your name?")
    t.text("ada")
    t.keys("Enter")
    assert job.wait(T) and isinstance(job.result, Result)
    assert "hello [ada]" in job.result.output
    t.wait_for("hello [ada]")
    typed = [r for r in engine.inputs(sid) if r["kind"] == "input"]
    assert [(r["source"], r["text"]) for r in typed] == [("person", "ada\r")]
    assert typed[0]["caller"].startswith("attach-")


def test_ls_typed_at_the_prompt_is_a_person_job(
    engine: HostClient, attach_dir: str, tmuxes: list[Tmux], tmp_path: Path, fresh_session: Callable[[str], str]
) -> None:
    (tmp_path / "listed-file-xq").write_text("")
    sid = fresh_session("a-ls")  # (a fixed id's jobs would hold the last run's)
    engine.attach(sid, cwd=str(tmp_path))
    t = _attach(tmuxes, sid, attach_dir)
    _attached(engine, sid)
    t.text("ls")
    t.keys("Enter")
    wait_until(lambda: [j for j in _person_jobs(engine, sid) if j.done], T, msg=t.screen())
    (job,) = _person_jobs(engine, sid)
    assert job.label == "ls"
    assert isinstance(job.result, Result) and job.result.source == "person"
    assert "listed-file-xq" in job.result.output
    t.wait_for("listed-file-xq")
    assert any(j.id == job.id for j in engine.jobs.all())


def test_tab_completes_a_file_name(
    engine: HostClient, attach_dir: str, tmuxes: list[Tmux], tmp_path: Path, fresh_session: Callable[[str], str]
) -> None:
    (tmp_path / "zebra-unique-name.txt").write_text("striped\n")
    sid = fresh_session("a-tab")  # (a fixed id's jobs would hold the last run's)
    engine.attach(sid, cwd=str(tmp_path))
    t = _attach(tmuxes, sid, attach_dir)
    _attached(engine, sid)
    t.text("cat zebra-u")
    t.keys("Tab")
    t.wait_for("cat zebra-unique-name.txt")
    t.keys("Enter")
    t.wait_for("striped")
    wait_until(lambda: [j for j in _person_jobs(engine, sid) if j.done], T)
    (job,) = _person_jobs(engine, sid)
    assert job.label.strip() == "cat zebra-unique-name.txt"


def test_vim_is_driven_detached_and_reattached(
    engine: HostClient, attach_dir: str, tmuxes: list[Tmux], tmp_path: Path
) -> None:
    engine.attach("a-vim", cwd=str(tmp_path))
    t = _attach(tmuxes, "a-vim", attach_dir)
    _attached(engine, "a-vim")
    _sized(engine, "a-vim", 100, 30)
    job = engine.exec("a-vim", "vim -u NONE -N notes.txt", tty=True, source="notebook")
    assert isinstance(job, jobs.Job)
    t.wait_for('"notes.txt" [New')
    t.text("ityped in vim by a person")
    t.keys("Escape")
    t.wait_for("typed in vim by a person")
    t.keys("C-]")
    t.wait_for("[detached from session a-vim")
    t.wait_for("EXITED 0")
    t.wait_for("TTY-RESTORED")
    assert not job.done
    again = _attach(tmuxes, "a-vim", attach_dir, cols=90, rows=26)
    again.wait_for("typed in vim by a person")
    again.text(":wq")
    again.keys("Enter")
    assert job.wait(T)
    assert (tmp_path / "notes.txt").read_text() == "typed in vim by a person\n"


def test_resizing_tmux_changes_stty_size(engine: HostClient, attach_dir: str, tmuxes: list[Tmux]) -> None:
    sid = f"a-size-{time.monotonic_ns()}"  # a fresh terminal each run (tests/rerun.py runs it again in one host)
    try:
        engine.attach(sid)
        t = _attach(tmuxes, sid, attach_dir, cols=100, rows=30)
        _attached(engine, sid)
        wait_until(lambda: engine.screen(sid)["cols"] == 100 and engine.screen(sid)["rows"] == 30, T)
        t.resize(73, 21)
        wait_until(lambda: engine.screen(sid)["cols"] == 73 and engine.screen(sid)["rows"] == 21, T)
        t.text("stty size")
        t.keys("Enter")
        wait_until(lambda: [j for j in _person_jobs(engine, sid) if j.done], T, msg=t.screen())
        (job,) = _person_jobs(engine, sid)
        assert isinstance(job.result, Result) and job.result.output == "21 73\n"
        t.wait_for("21 73")
    finally:
        engine.close(sid)  # a run leaves no terminal behind (max_sessions)


def test_a_read_only_viewers_keys_change_nothing(engine: HostClient, attach_dir: str, tmuxes: list[Tmux]) -> None:
    sid = f"a-ro-{time.monotonic_ns()}"  # a fresh terminal each run (tests/rerun.py runs it again in one host)
    try:
        job = engine.exec(sid, "read -r -p 'Answer? ' x; echo \"got [$x]\"", tty=True)
        assert isinstance(job, jobs.Job)
        t = _attach(tmuxes, sid, attach_dir, "--read-only")
        t.wait_for("Answer?")
        _attached(engine, sid)
        t.text("typed by a viewer")
        t.keys("Enter", "C-c", "C-]")
        # The client reads its keys in order: once it has left, any it would have sent went first.
        t.wait_for("TTY-RESTORED")
        assert not job.done and engine.info(sid).awaiting_input is not None
        assert [r for r in engine.inputs(sid) if r["kind"] != "command"] == []
        assert "typed by a viewer" not in "\n".join(engine.screen(sid)["lines"])
        # And the host refuses writes on a read-only viewer's connection.
        paths = HostPaths.for_name("att", attach_dir)
        conn = Conn(paths, {"pid": os.getpid(), "purpose": "attach", "session": sid, "read_only": True})
        try:
            with pytest.raises(InvalidArgument, match="read-only"):
                conn.call("type_keys", {"session_id": sid, "data": "x\r"})
            with pytest.raises(InvalidArgument, match="read-only"):
                conn.call("interrupt", {"session_id": sid})
            assert conn.call("screen", {"session_id": sid})["lines"][0].startswith("Answer?")
        finally:
            conn.close()
        assert not job.done and [r for r in engine.inputs(sid) if r["kind"] != "command"] == []
        engine.send(sid, "fine", wait_ms=20_000, source="notebook")
        assert job.wait(T) and "got [fine]" in job.result.output
    finally:
        engine.close(sid)  # a run leaves no terminal behind (max_sessions)


def test_two_viewers_see_the_same_screen(engine: HostClient, attach_dir: str, tmuxes: list[Tmux]) -> None:
    engine.attach("a-two")
    one = _attach(tmuxes, "a-two", attach_dir, cols=80, rows=20)
    two = _attach(tmuxes, "a-two", attach_dir, "--read-only", cols=80, rows=20)
    _attached(engine, "a-two", 2)
    res = engine.exec("a-two", "printf 'row-%s\\n' 1 2 3 4 5", wait_ms=20_000)
    assert isinstance(res, Result)
    one.wait_for("row-5")
    two.wait_for("row-5")
    wait_until(lambda: one.rows() == two.rows(), T, msg=f"{one.screen()}\n---\n{two.screen()}")


# -- bad input and ways out ------------------------------------------------------------
def _run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dsh_magics.cli", *args],
        capture_output=True, text=True, timeout=60, env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )  # fmt: skip


def test_a_missing_session_lists_those_that_exist(engine: HostClient, attach_dir: str) -> None:
    engine.attach("a-exists")
    out = _run_cli("attach", "no-such-session", "--host-dir", attach_dir)
    assert out.returncode == 1
    assert "NO_SUCH_SESSION" in out.stderr and "a-exists" in out.stderr
    assert "Traceback" not in out.stderr
    out = _run_cli("attach", "no-such-session", "--host", "att", "--host-dir", attach_dir)
    assert out.returncode == 1 and "a-exists" in out.stderr


def test_no_host_names_the_setting_and_a_dead_host_is_said() -> None:
    d = new_dir()
    try:
        out = _run_cli("attach", "s", "--host-dir", d)
        assert out.returncode == 1 and "HOST_UNAVAILABLE" in out.stderr
        assert "DSH_MAGICS_HOST=1" in out.stderr and "plain IPython" in out.stderr
        client = HostClient(HostPaths.for_name("doomed", d))
        client.connect()
        client.attach("s")
        pid = client.host_info()["pid"]
        client.detach()
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: subprocess.run(["kill", "-0", str(pid)], capture_output=True).returncode != 0, T)
        out = _run_cli("attach", "s", "--host", "doomed", "--host-dir", d)
        assert out.returncode == 1 and "host doomed is not running" in out.stderr
    finally:
        stop_everything(d)
        import shutil

        shutil.rmtree(d, ignore_errors=True)


def test_a_closed_terminal_ends_the_attach_and_restores_the_tty(
    engine: HostClient, attach_dir: str, tmuxes: list[Tmux]
) -> None:
    engine.exec("a-close", "echo about-to-close", wait_ms=20_000)
    t = _attach(tmuxes, "a-close", attach_dir)
    t.wait_for("about-to-close")
    _attached(engine, "a-close")
    engine.close("a-close")
    t.wait_for("[session a-close was closed]")
    t.wait_for("TTY-RESTORED")


def test_a_dead_shell_is_refused(engine: HostClient, attach_dir: str) -> None:
    engine.exec("a-dead", "exit", wait_ms=20_000)
    wait_until(lambda: engine.info("a-dead").status == "dead", T)
    out = _run_cli("attach", "a-dead", "--host-dir", attach_dir)
    # Found first, then refused; without a tty the tty check speaks first.
    assert out.returncode == 1 and "Traceback" not in out.stderr


def test_sigterm_and_a_lost_host_restore_the_tty(tmuxes: list[Tmux]) -> None:
    d = new_dir()
    try:
        client = HostClient(HostPaths.for_name("victim", d))
        client.connect()
        client.exec("v", "echo victim-ready", wait_ms=20_000)
        t = _attach(tmuxes, "v", d)
        t.wait_for("victim-ready")
        wait_until(lambda: client.status().get("attached"), T)
        pids = [a["pid"] for a in client.status()["attached"]]
        os.kill(pids[0], signal.SIGTERM)
        t.wait_for("[SIGTERM: detached from session v")
        t.wait_for("TTY-RESTORED")
        u = _attach(tmuxes, "v", d)
        u.wait_for("victim-ready")
        wait_until(lambda: client.status().get("attached"), T)
        pid = client.host_info()["pid"]
        client.detach()
        os.kill(pid, signal.SIGKILL)
        u.wait_for("HOST_UNAVAILABLE")
        u.wait_for("EXITED 1")
        u.wait_for("TTY-RESTORED")
    finally:
        stop_everything(d)
        import shutil

        shutil.rmtree(d, ignore_errors=True)


def test_colours_and_a_narrow_viewer(engine: HostClient, attach_dir: str, tmuxes: list[Tmux]) -> None:
    engine.attach("a-col")
    wide = _attach(tmuxes, "a-col", attach_dir, cols=80, rows=20)
    _attached(engine, "a-col")
    wait_until(lambda: engine.screen("a-col")["cols"] == 80, T)
    narrow = _attach(tmuxes, "a-col", attach_dir, "--read-only", cols=30, rows=20)
    _attached(engine, "a-col", 2)
    engine.exec("a-col", "printf 'plain \\033[31mRED-TEXT\\033[0m %s\\n' $(seq -s- 1 30)", wait_ms=20_000)
    wide.wait_for("RED-TEXT")
    coloured = wide.tmux("capture-pane", "-p", "-e", "-t", "0")
    red = re.compile(r"\x1b\[(?:31|38;5;1)mRED-TEXT")  # palette red, however tmux spells it
    assert red.search(coloured), coloured
    # A viewer narrower than the terminal sees its left part, cut at its edge, in colour too.
    narrow.wait_for("plain RED-TEXT 1-2-3")
    assert all(len(r) <= 30 for r in narrow.rows())
    assert red.search(narrow.tmux("capture-pane", "-p", "-e", "-t", "0"))


def test_log_shows_who_typed_what_and_never_a_secret(engine: HostClient, attach_dir: str) -> None:
    engine.exec("a-log", "echo logged-cmd", wait_ms=20_000, source="notebook", caller="nb-7")
    job = engine.exec("a-log", "read -rs -p 'Password: ' p; echo \"n=${#p}\"", tty=True, source="agent")
    assert isinstance(job, jobs.Job)
    wait_until(lambda: (engine.info("a-log").awaiting_input or {}).get("secret"), T)
    engine.type_keys("a-log", "pw-Zx81-log\r", caller="attach-test")
    assert job.wait(T)
    out = _run_cli("log", "a-log", "--host-dir", attach_dir)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert any("command" in ln and "notebook (nb-7)" in ln and "echo logged-cmd" in ln for ln in lines), out.stdout
    assert any("input" in ln and "person (attach-test)" in ln and "[secret]" in ln for ln in lines), out.stdout
    assert "pw-Zx81-log" not in out.stdout
    rows = json.loads(_run_cli("log", "a-log", "--host-dir", attach_dir, "--json", "--last", "1").stdout)
    assert [(r["kind"], r["source"], r["text"]) for r in rows] == [("input", "person", "[secret]")]


def test_closing_the_local_terminal_leaves_nothing_attached(engine: HostClient, attach_dir: str, tmuxes: list[Tmux]) -> None:
    engine.exec("a-hup", "echo hup-ready", wait_ms=20_000)
    t = _attach(tmuxes, "a-hup", attach_dir)
    t.wait_for("hup-ready")
    _attached(engine, "a-hup")
    (viewer,) = [a for a in engine.status()["attached"] if a["session_id"] == "a-hup"]
    t.kill()  # the terminal goes away: the client gets SIGHUP and leaves
    wait_until(lambda: not [a for a in engine.status()["attached"] if a["session_id"] == "a-hup"], T)
    wait_until(lambda: subprocess.run(["kill", "-0", str(viewer["pid"])], capture_output=True).returncode != 0, T)
    res = engine.exec("a-hup", "echo still-here", wait_ms=20_000)
    assert isinstance(res, Result) and res.output == "still-here\n"
