"""The person's terminal handed to the host (host/tty_out.py, attach/handover.py):
the host writes a live viewer's bytes to it, so the attach client is off the
echo's way; it gives the terminal back on every way out, and a client that
cannot hand it over gets the stream as ``bytes`` events.

The person's terminal is a tmux pane (or, for a terminal that does not read,
a PTY of the test's own); the host's copies are looked up in
``/proc/<host>/fd``."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh_magics import jobs
from dsh_magics.attach import handover
from dsh_magics.attach.link import Conn, Pipe
from dsh_magics.host import HostClient, HostPaths
from dsh_magics.host.stream import bytes_prefix
from dsh_magics.terminal import Result
from dsh_magics.terminal.screen import Screen

from ..conftest import wait_until
from .conftest import ROOT, T, Tmux, attach_command


def _host_pid(engine: HostClient) -> int:
    return int(engine.host_info()["pid"])


def _fds_to(pid: int, path: str) -> int:
    """How many descriptors of ``pid`` are open on ``path``."""
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == path:
                n += 1
        except OSError:
            continue  # closed while we looked
    return n


def _pane_tty(t: Tmux) -> str:
    return t.tmux("display-message", "-p", "-t", "0", "#{pane_tty}").strip()


def _viewers(engine: HostClient, session: str) -> list[int]:
    return [a["pid"] for a in engine.status().get("attached", []) if a["session_id"] == session]


def _attach(engine: HostClient, tmuxes: list[Tmux], session: str, attach_dir: str, env: str = "") -> tuple[Tmux, int]:
    """A client in a new tmux pane, attached and live; its pid."""
    before = set(_viewers(engine, session))
    t = Tmux(env + attach_command(session, attach_dir), 100, 30)
    tmuxes.append(t)
    pids = wait_until(lambda: set(_viewers(engine, session)) - before, T)
    t.wait_for("ready-" + session)
    return t, pids.pop()


def _handed_over(engine: HostClient, tmuxes: list[Tmux], session: str, attach_dir: str) -> tuple[Tmux, int, int, str]:
    """``session`` ready, a client of it in a new tmux pane, and the pane's
    terminal handed over to the host (its two copies, output and keys): the
    pane, the client's pid, the host's pid and the pane's terminal."""
    engine.exec(session, f"echo ready-{session}", wait_ms=20_000)
    t, pid = _attach(engine, tmuxes, session, attach_dir)
    host, tty = _host_pid(engine), _pane_tty(t)
    wait_until(lambda: _fds_to(host, tty) == 2, T)
    return t, pid, host, tty


@pytest.fixture
def stopped() -> Iterator[list[int]]:
    """Pids the test stopped with SIGSTOP: continued at the end, whatever happened."""
    pids: list[int] = []
    try:
        yield pids
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass  # it ended meanwhile: nothing to continue


@pytest.mark.parametrize("handover", ["all", "output"])
def test_the_host_writes_the_echo_with_the_client_stopped(
    engine: HostClient, attach_dir: str, tmuxes: list[Tmux], stopped: list[int], handover: str
) -> None:
    """With the keys handed over too, a key typed in the pane reaches the job and
    its echo the pane while the client is stopped; with the output only, the
    keys come from elsewhere (the client reads the pane's)."""
    sid = f"h-echo-{handover}-{time.monotonic_ns()}"  # a fresh screen each run (tests/rerun.py runs it again in one host)
    try:
        engine.exec(sid, f"echo ready-{sid}", wait_ms=20_000)
        t, pid = _attach(engine, tmuxes, sid, attach_dir, env=f"DSH_MAGICS_ATTACH_HANDOVER={handover} ")
        host = _host_pid(engine)
        held = 2 if handover == "all" else 1
        wait_until(lambda: _fds_to(host, _pane_tty(t)) == held, T, msg="the host holds the pane's terminal")
        job = engine.exec(sid, "cat", tty=True, source="notebook", wait_ms=0)
        assert isinstance(job, jobs.Job)
        os.kill(pid, signal.SIGSTOP)  # the client cannot read or write anything now
        stopped.append(pid)
        wait_until(lambda: open(f"/proc/{pid}/stat").read().split(")")[1].split()[0] == "T", T)
        if handover == "all":
            t.text("typed-while-the-client-sleeps")
            t.keys("Enter")
        else:
            engine.type_keys(sid, "typed-while-the-client-sleeps\r")
        t.wait_for("typed-while-the-client-sleeps")  # cat's echo, and cat's line after it
        wait_until(lambda: t.screen().count("typed-while-the-client-sleeps") == 2, T, msg=t.screen())
        if handover == "all":
            t.keys("C-c")  # the engine's interrupt, from the host reading the keys
            assert job.wait(T)
            assert [e for e in engine.inputs(sid) if e.get("source") == "person"]
            return
        os.kill(pid, signal.SIGCONT)
        engine.interrupt(sid)
        assert job.wait(T)
    finally:
        engine.close(sid)


def test_without_the_hand_over_the_stream_comes_as_bytes_events(
    engine: HostClient, attach_dir: str, tmuxes: list[Tmux]
) -> None:
    engine.exec("h-bytes", "echo ready-h-bytes", wait_ms=20_000)
    t, _pid = _attach(engine, tmuxes, "h-bytes", attach_dir, env="DSH_MAGICS_ATTACH_HANDOVER=0 ")
    engine.exec("h-bytes", "printf 'through-the-%s\\n' client", wait_ms=20_000)
    t.wait_for("through-the-client")
    assert _fds_to(_host_pid(engine), _pane_tty(t)) == 0
    t.text("echo typed-$((6*7))")
    t.keys("Enter")
    t.wait_for("typed-42")


@pytest.mark.parametrize("how", ["detach", "kill"])
def test_the_host_gives_the_terminal_back(engine: HostClient, attach_dir: str, tmuxes: list[Tmux], how: str) -> None:
    sid = f"h-{how}"
    t, pid, host, tty = _handed_over(engine, tmuxes, sid, attach_dir)
    if how == "detach":
        t.keys("C-]")
        t.wait_for("[detached from session")
        t.wait_for("TTY-RESTORED")
        # Given back before the client's last writes: the host holds nothing once it left.
        assert _fds_to(host, tty) == 0
    else:
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: _fds_to(host, tty) == 0, T, msg="the host still holds the killed client's terminal")
    engine.exec(sid, "echo after-the-client", wait_ms=20_000)
    assert _fds_to(host, tty) == 0


def test_the_session_closed_gives_the_terminal_back(engine: HostClient, attach_dir: str, tmuxes: list[Tmux]) -> None:
    t, _pid, host, tty = _handed_over(engine, tmuxes, "h-close", attach_dir)
    engine.close("h-close")
    t.wait_for("[session h-close was closed]")
    t.wait_for("TTY-RESTORED")
    assert _fds_to(host, tty) == 0


def test_attach_and_detach_leak_no_descriptor_in_the_host(
    engine: HostClient, attach_dir: str, tmuxes: list[Tmux]
) -> None:
    engine.exec("h-leak", "echo ready-h-leak", wait_ms=20_000)
    host = _host_pid(engine)
    t, _pid = _attach(engine, tmuxes, "h-leak", attach_dir)  # one attach first: lazily made things exist
    t.keys("C-]")
    t.wait_for("EXITED 0")
    wait_until(lambda: not _viewers(engine, "h-leak"), T)
    before = len(os.listdir(f"/proc/{host}/fd"))
    for _ in range(8):
        t, _pid = _attach(engine, tmuxes, "h-leak", attach_dir)
        wait_until(lambda t=t: _fds_to(host, _pane_tty(t)) == 2, T)
        t.keys("C-]")
        t.wait_for("EXITED 0")
        wait_until(lambda: not _viewers(engine, "h-leak"), T)
        tmuxes.remove(t)
        t.kill()
    wait_until(lambda: len(os.listdir(f"/proc/{host}/fd")) == before, T,
               msg=lambda: f"{before} descriptors before, {len(os.listdir(f'/proc/{host}/fd'))} after")  # fmt: skip


def test_a_terminal_that_does_not_read_blocks_nobody(engine: HostClient, attach_dir: str) -> None:
    """The person's terminal is a PTY nobody reads: a flood fills it, the host's
    writes to it wait (its reader thread does not), jobs go on; read again, the
    terminal gets a screen and the bytes after it."""
    engine.exec("h-slow", "echo ready-h-slow", wait_ms=20_000)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    env = dict(os.environ, PYTHONPATH=str(ROOT), TERM="xterm-256color")
    proc = subprocess.Popen(
        [sys.executable, "-m", "dsh_magics.cli", "attach", "h-slow", "--host-dir", attach_dir],
        stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True, cwd=str(ROOT),
    )  # fmt: skip
    os.close(slave)
    screen = Screen(100, 30)

    def read_some(within: float) -> None:
        end = time.monotonic() + within
        while time.monotonic() < end:
            r, _, _ = select.select([master], [], [], max(0.0, end - time.monotonic()))
            if not r:
                return
            try:
                screen.feed(os.read(master, 65536))
            except OSError:
                return

    try:
        wait_until(lambda: read_some(0.05) or "ready-h-slow" in "\n".join(screen.text()), T)
        host = _host_pid(engine)
        tty = os.readlink(f"/proc/{proc.pid}/fd/1")
        wait_until(lambda: _fds_to(host, tty) == 2, T)
        # 5.9 MB, more than the pty holds and more than MAX_BEHIND: nobody reads it now.
        flood = engine.exec("h-slow", "seq 1 800000", wait_ms=60_000)
        assert isinstance(flood, Result) and flood.ok
        still = engine.exec("h-slow", "echo still-$((40+2))", wait_ms=20_000)
        assert isinstance(still, Result) and still.output.strip() == "still-42"
        wait_until(lambda: read_some(0.05) or "still-42" in "\n".join(screen.text()), T,
                   msg=lambda: "\n".join(screen.text()))  # fmt: skip
        assert "800000" in "\n".join(screen.text())
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            wait_until(lambda: read_some(0.05) or proc.poll() is not None, T)  # its last writes need room
        finally:
            os.close(master)
            if proc.poll() is None:
                proc.kill()
            proc.wait(T)


def test_a_read_only_viewer_in_the_live_mode_hands_its_terminal_over_and_types_nothing(
    engine: HostClient, attach_dir: str, tmuxes: list[Tmux]
) -> None:
    sid = f"h-ro-{time.monotonic_ns()}"  # a fresh terminal each run (tests/rerun.py runs it again in one host)
    try:
        engine.exec(sid, f"echo ready-{sid}", wait_ms=20_000)
        engine.resize(sid, 100, 30)  # the pane's size: the viewer draws live
        before = set(_viewers(engine, sid))
        t = Tmux(attach_command(sid, attach_dir, "--read-only"), 100, 30)
        tmuxes.append(t)
        wait_until(lambda: set(_viewers(engine, sid)) - before, T)
        t.wait_for(f"ready-{sid}")
        host, tty = _host_pid(engine), _pane_tty(t)
        wait_until(lambda: _fds_to(host, tty) == 2, T)
        job = engine.exec(sid, "read -r -p 'Answer? ' x; echo \"got [$x]\"", tty=True, wait_ms=0)
        assert isinstance(job, jobs.Job)
        t.wait_for("Answer?")  # written by the host
        t.text("typed by a viewer")
        t.keys("Enter", "C-c", "C-]")  # the host reads them in order: the detach key last
        t.wait_for("TTY-RESTORED")
        assert _fds_to(host, tty) == 0
        assert not job.done and [r for r in engine.inputs(sid) if r["kind"] != "command"] == []
        engine.send(sid, "fine", wait_ms=20_000, source="notebook")
        assert job.wait(T)
    finally:
        engine.close(sid)


def test_a_key_that_waits_holds_neither_the_detach_key_nor_the_hand_back(
    engine: HostClient, attach_dir: str, tmuxes: list[Tmux], tmp_path: Path
) -> None:
    """A paste into a job that does not read waits in the session's PTY: the
    host's typing of it waits too, but the detach key is still read and the
    terminal given back at once (the keys are read on a thread of their own,
    host/tty_in.py): nothing of the person's own shell goes to the session after."""
    sid = f"h-stall-{time.monotonic_ns()}"
    fifo = tmp_path / "go"
    os.mkfifo(fifo)
    paste = tmp_path / "paste"
    paste.write_bytes(b"x" * 65536)
    try:
        t, pid, host, tty = _handed_over(engine, tmuxes, sid, attach_dir)
        job = engine.exec(
            sid, f"stty -icanon -echo; echo go-{sid}; read -r _ < {fifo}; head -c 65536 >/dev/null; stty sane; echo done-{sid}",
            tty=True, source="notebook", wait_ms=0,
        )  # fmt: skip
        assert isinstance(job, jobs.Job)
        t.wait_for(f"go-{sid}")
        t.tmux("load-buffer", str(paste))
        t.tmux("paste-buffer", "-t", "0")  # more than the session's PTY holds: the typing waits
        t.keys("C-]")
        t.wait_for("[detached from session")
        t.wait_for("TTY-RESTORED")
        assert _fds_to(host, tty) == 0  # given back, not given up on
        with open(fifo, "w") as f:  # the job reads the paste now: the host's typing ends
            f.write("\n")
        assert job.wait(T) and isinstance(job.result, Result) and f"done-{sid}" in job.result.output
        assert pid not in _viewers(engine, sid)
    finally:
        engine.close(sid)


def test_the_host_says_what_it_took_and_a_refused_hand_over_streams_bytes(engine: HostClient, attach_dir: str) -> None:
    """Descriptors that are not terminals are refused: the host says it took
    none (``hand`` gives 0, so the client keeps its keys and writes the
    bytes), and the stream comes as ``bytes`` events."""
    sid = f"h-refused-{time.monotonic_ns()}"
    engine.exec(sid, f"echo ready-{sid}", wait_ms=20_000)
    client = {"pid": os.getpid(), "purpose": "attach", "session": sid, "read_only": False}
    conn = Conn(HostPaths.for_name("att", attach_dir), client)
    r, w = os.pipe()
    try:
        assert handover.hand(conn, sid, [w, r], "person", b"\x1d") == 0
        pipe = Pipe(conn)
        pipe.bytes_prefix = bytes_prefix(sid)
        pipe.start()
        got: list[object] = []

        def streamed() -> bool:
            if select.select([pipe.fileno()], [], [], 0.05)[0]:
                got.extend(pipe.read() or [])
            return any(isinstance(m, bytes) and b"after-the-refusal" in m for m in got)

        def screened() -> bool:
            # This session's screen: the connection takes every session's events
            # (a watch subscribes it), and an earlier test's may come first
            # (ci of stop 44: a late event of another session failed the old check).
            streamed()
            return any(isinstance(m, dict) and m.get("event", {}).get("type") == "screen"
                       and m["event"].get("session_id") == sid for m in got)  # fmt: skip

        wait_until(screened, T, msg="no screen event for this session")
        engine.exec(sid, "printf 'after-the-%s\\n' refusal", wait_ms=20_000)
        wait_until(streamed, T)
    finally:
        os.close(r)
        os.close(w)
        conn.close()
        engine.close(sid)


def test_sigtstp_gives_the_terminal_back_and_sigcont_takes_it_again(
    engine: HostClient, attach_dir: str, tmuxes: list[Tmux], stopped: list[int]
) -> None:
    """A stopped client (SIGTSTP, as a shell's job control sends it) has given
    the terminal back first: the host neither holds nor writes it; continued,
    the client draws the session again and hands the terminal over again."""
    sid = f"h-tstp-{time.monotonic_ns()}"
    try:
        t, pid, host, tty = _handed_over(engine, tmuxes, sid, attach_dir)
        os.kill(pid, signal.SIGTSTP)
        stopped.append(pid)
        wait_until(lambda: open(f"/proc/{pid}/stat").read().split(")")[1].split()[0] == "T", T)
        assert _fds_to(host, tty) == 0  # given back before it stopped
        engine.exec(sid, "printf 'while-%s\\n' stopped", wait_ms=20_000)
        # The person's own screen, back from the alternate one, and nothing of the host's on it.
        assert t.tmux("display-message", "-p", "-t", "0", "#{alternate_on}").strip() == "0"
        assert "while-stopped" not in t.screen()
        os.kill(pid, signal.SIGCONT)
        t.wait_for("while-stopped")  # a fresh screen
        wait_until(lambda: _fds_to(host, tty) == 2, T, msg="handed over again")
        job = engine.exec(sid, "cat", tty=True, source="notebook", wait_ms=0)
        assert isinstance(job, jobs.Job)
        os.kill(pid, signal.SIGSTOP)  # the echo and the keys without the client again
        wait_until(lambda: open(f"/proc/{pid}/stat").read().split(")")[1].split()[0] == "T", T)
        t.text("typed-after-the-resume")
        t.keys("Enter")
        wait_until(lambda: t.screen().count("typed-after-the-resume") == 2, T, msg=t.screen)
        os.kill(pid, signal.SIGCONT)
        t.keys("C-c")
        assert job.wait(T)
        t.keys("C-]")
        t.wait_for("TTY-RESTORED")
    finally:
        engine.close(sid)
