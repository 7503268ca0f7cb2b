"""The hand-over at its edges, with a real client in a tmux pane: the host's
copies of the person's terminal are close-on-exec (no child of the host gets
them), a host that stops gives the terminal back in its person's modes, and a
bell reaches a window drawn from screens (host/tty_out.py, host/server.py's
stop, host/bells.py)."""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Iterator

import pytest

from dsh_magics.host import HostClient, HostPaths, stop_host
from dsh_magics.terminal import Result

from ..conftest import wait_until
from ..host.conftest import new_dir, stop_everything
from .conftest import T, Tmux, attach_command
from .test_handover import _fds_to, _handed_over, _host_pid, _pane_tty, _viewers


def _fd_flags(pid: int, path: str) -> list[int]:
    """The open flags of each descriptor of ``pid`` on ``path`` (``/proc/<pid>/fdinfo``)."""
    flags = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != path:
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                flags += [int(line.split()[1], 8) for line in f if line.startswith("flags:")]
        except OSError:
            continue  # closed while we looked
    return flags


def test_no_child_of_the_host_gets_the_persons_terminal(engine: HostClient, attach_dir: str, tmuxes: list[Tmux]) -> None:
    """The host receives the terminal close-on-exec (``MSG_CMSG_CLOEXEC``).
    The fdinfo flag check is what pins that: the listing after it (a shell
    the host starts while it holds the terminal, and that shell's job, have
    no descriptor of it) would pass without the flag too, as every way the
    host starts a process closes the descriptors above 2; it guards that."""
    sid = f"e-exec-{time.monotonic_ns()}"
    other = f"{sid}-new"
    try:
        t, _pid, host, tty = _handed_over(engine, tmuxes, sid, attach_dir)
        flags = _fd_flags(host, tty)
        assert len(flags) == 2 and all(f & os.O_CLOEXEC for f in flags), [oct(f) for f in flags]
        listed = engine.exec(other, 'for f in /proc/$$/fd/* /proc/$BASHPID/fd/*; do readlink "$f"; done', wait_ms=20_000)
        assert isinstance(listed, Result) and "/dev/pts/" in listed.output
        assert tty not in listed.output.split()
        t.keys("C-]")
        t.wait_for("TTY-RESTORED")
    finally:
        engine.close(sid)
        engine.close(other)


@pytest.fixture
def own_host() -> Iterator[tuple[HostClient, str]]:
    """A host of the test's own (the test stops it)."""
    d = new_dir()
    client = HostClient(HostPaths.for_name("att", d))
    try:
        client.connect()
        yield client, d
    finally:
        client.detach()
        stop_everything(d)
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("how", ["sigterm", "host-stop"])
def test_a_host_that_stops_gives_the_terminal_back(own_host: tuple[HostClient, str], tmuxes: list[Tmux], how: str) -> None:
    """The host stops (SIGTERM, ``dsh-magics host stop``) while it writes a
    running job's output to the person's terminal and reads its keys: the
    client says the host went away, the terminal is back in the person's
    modes (cooked, echo, the normal screen, cursor and keypad modes reset),
    and nothing is written after the client's last line."""
    engine, d = own_host
    sid = "e-stop"
    t, _pid, host, _tty = _handed_over(engine, tmuxes, sid, d)
    # Output that keeps coming to the last moment, and the modes a full-screen program sets.
    engine.exec(sid, "printf '\\033[?1h\\033=\\033[?2004h'; while :; do echo tick; read -t 0.02 _ || :; done",
                tty=True, wait_ms=0)  # fmt: skip
    t.wait_for("tick")
    wait_until(lambda: _pane_flag(t, "keypad_cursor_flag") == "1", T, msg="the job's modes never reached the pane")
    if how == "sigterm":
        os.kill(host, signal.SIGTERM)
    else:
        stop_host(HostPaths.for_name("att", d), timeout=T)
    t.wait_for("TTY-RESTORED")
    rows = [r for r in t.rows() if r]
    said = next(i for i, r in enumerate(rows) if "HOST_UNAVAILABLE" in r)
    assert "went away" in " ".join(rows[said:])
    assert rows[-2:] == ["EXITED 1", "TTY-RESTORED"], rows
    assert "tick" not in " ".join(rows[said:]), rows
    for flag, value in (("alternate_on", "0"), ("keypad_cursor_flag", "0"), ("keypad_flag", "0"), ("cursor_flag", "1")):
        assert _pane_flag(t, flag) == value, flag
    wait_until(lambda: not os.path.exists(f"/proc/{host}"), T)


def _pane_size(t: Tmux) -> tuple[int, int]:
    cols, rows = t.tmux("display-message", "-p", "-t", "0", "#{pane_width} #{pane_height}").split()
    return int(cols), int(rows)


def _pane_flag(t: Tmux, name: str) -> str:
    return t.tmux("display-message", "-p", "-t", "0", f"#{{{name}}}").strip()


@pytest.mark.parametrize("when", ["drawn", "held", "replaced", "after-title"])
def test_a_bell_rings_in_a_window_drawn_from_screens(
    engine: HostClient, attach_dir: str, tmuxes: list[Tmux], when: str
) -> None:
    """A read-only viewer whose window is larger than the terminal is drawn
    from screens; a bell the session's program rings (``printf '\\a'``) still
    rings there, also when it came while the host held the output for a
    screen the client had not painted yet (the client stopped meanwhile; the
    held pieces then reach it as ``bytes``), and when a second screen replaced
    the held pieces (a screen has no bell: the host keeps it after the screen),
    and after a screen that came while a title was unfinished (the screen
    restarts the stream's bytes: the client's parser starts afresh)."""
    sid = f"e-bell-{when}-{time.monotonic_ns()}"
    pid = 0
    try:
        engine.exec(sid, f"echo ready-{sid}", wait_ms=20_000)
        engine.resize(sid, 80, 24)
        before = set(_viewers(engine, sid))
        t = Tmux(attach_command(sid, attach_dir, "--read-only"), 100, 30)
        tmuxes.append(t)
        pid = wait_until(lambda: set(_viewers(engine, sid)) - before, T).pop()
        t.wait_for(f"ready-{sid}")
        host, tty = _host_pid(engine), _pane_tty(t)
        wait_until(lambda: _fds_to(host, tty) == 2, T)
        assert _pane_flag(t, "window_bell_flag") == "0"
        if when == "after-title":
            # A title begun in the drawn window, ended while it was live (the
            # client saw no more of it), then drawn again after a screen.
            engine.exec(sid, "printf '\\033]0;ti'", wait_ms=20_000)
            engine.resize(sid, *_pane_size(t))  # a screen the window fits: live
            engine.exec(sid, f"printf 'tle\\033\\\\'; echo live-{sid}", wait_ms=20_000)
            t.wait_for(f"live-{sid}")
            engine.resize(sid, 81, 24)  # drawn again
        elif when != "drawn":
            os.kill(pid, signal.SIGSTOP)  # it cannot answer the screen below: the host holds
            wait_until(lambda: open(f"/proc/{pid}/stat").read().split(")")[1].split()[0] == "T", T)
            engine.resize(sid, 81, 24)
        engine.exec(sid, "printf 'ring\\a%s\\n' -bell", wait_ms=20_000)
        if when == "replaced":
            engine.resize(sid, 82, 24)  # a screen in place of the held pieces
        if when in ("held", "replaced"):
            os.kill(pid, signal.SIGCONT)
        t.wait_for("ring-bell")
        wait_until(lambda: _pane_flag(t, "window_bell_flag") == "1", T, msg="no bell in the pane")
        t.keys("C-]")
        t.wait_for("TTY-RESTORED")
    finally:
        if pid:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass  # it ended: nothing to continue
        engine.close(sid)
