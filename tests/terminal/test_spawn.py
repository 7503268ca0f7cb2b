"""How a terminal's child is started (``terminal/core/pty.py`` with
``core/child.py``): forked with ``child.setup``, or, where it can be,
started without forking the interpreter (``child.Launcher``: the C
library's ``posix_spawn`` of ``setpriv --pdeathsig HUP``). Either way the
child gets the same: a session of its own led by itself, the PTY as its
controlling terminal on fds 0-2 and nothing else open, every signal at its
default and none blocked (also what the engine's process ignores), echo off
and the size asked for; and SIGHUP when the engine's process dies, also
while something else holds the PTY open (so the death signal, not the PTY's
hang-up, is what ends it)."""

from __future__ import annotations

import fcntl
import os
import signal
import struct
import subprocess
import sys
import termios
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh_magics.terminal.core import child, procs, pty
from tests.conftest import wait_until

ROOT = Path(__file__).resolve().parents[2]
TIOCGPTN = 0x80045430  # Linux: the number N of a master's /dev/pts/N
ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TERM": "dumb", "LC_ALL": "C"}

@pytest.fixture(params=["fork", "launch", "launch-listing"])
def way(request, monkeypatch) -> Iterator[str]:
    """Each test runs both ways of starting a child (and the launch where
    the C library has no ``addclosefrom_np``: open descriptors are listed)."""
    if request.param == "fork":
        monkeypatch.setattr(child.launcher, "_ready", False)
    elif not child.launcher.usable(None):
        pytest.skip("no posix_spawn or setpriv --pdeathsig here: every child is forked")
    elif request.param == "launch-listing":
        monkeypatch.setattr(child.launcher, "_closefrom", None)
    yield request.param


def _stat(pid: int) -> list[str]:
    """The fields of /proc/PID/stat after the command's name (state first)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def test_the_child_leads_its_session_on_the_pty_with_defaults(way: str) -> None:
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as under nohup
    r, w = os.pipe()
    os.set_inheritable(w, True)  # a descriptor an exec would keep: the child must not get it
    p = pty.Pty(f"spawn-{way}")
    try:
        p.spawn(["sleep", "60"], env=ENV, size=(91, 27))
        wait_until(lambda: Path(f"/proc/{p.pid}/exe").resolve().name == "sleep", 10, msg="the child is sleep")
        fields = _stat(p.pid)
        # Right after the exec the loader still has a library open (fd 3: ci12,
        # two CPU hogs); a descriptor the child was given stays for good.
        listed: list[list[int]] = []

        def only_its_terminal() -> bool:
            listed.append(sorted(int(fd) for fd in os.listdir(f"/proc/{p.pid}/fd")))
            return listed[-1] == [0, 1, 2]

        try:
            wait_until(only_its_terminal, 10)
        except AssertionError:
            pass  # (reported below, with what the child kept)
        fds = listed[-1]
        number = struct.unpack("I", fcntl.ioctl(p.proc.fd, TIOCGPTN, b"\0" * 4))[0]
        tty = os.stat(f"/dev/pts/{number}").st_rdev  # the PTY's slave
        assert all(os.stat(f"/proc/{p.pid}/fd/{fd}").st_rdev == tty for fd in (0, 1, 2))
        status = dict(line.split(":\t", 1) for line in Path(f"/proc/{p.pid}/status").read_text().splitlines())
        lflag = termios.tcgetattr(p.proc.fd)[3]
        rows, cols = struct.unpack("HHHH", fcntl.ioctl(p.proc.fd, termios.TIOCGWINSZ, b"\0" * 8))[:2]
    finally:
        signal.signal(signal.SIGHUP, previous)
        os.close(r)
        os.close(w)
        procs.kill_tree(p.pid, grace=0.2)
        procs.reap(p.proc, None, 5.0)
        p.close_pidfd()
        p.close()
    # its own session and process group, the PTY its controlling terminal and the terminal's foreground group
    ppid, pgrp, sid, tty_nr, tpgid = (int(x) for x in fields[1:6])
    assert ppid == os.getpid() and pgrp == sid == tpgid == p.pid, fields
    assert tty_nr == tty, (fields, tty)
    assert fds == [0, 1, 2], fds
    assert status["SigIgn"] == status["SigBlk"] == "0000000000000000", status
    assert not lflag & termios.ECHO and (rows, cols) == (27, 91), (lflag, rows, cols)


def test_a_missing_program_is_file_not_found(way: str) -> None:
    p = pty.Pty(f"spawn-missing-{way}")
    with pytest.raises(FileNotFoundError):
        p.spawn(["no-such-program-dsh-spawn"], env=ENV, size=(80, 24))
    assert p.proc is None


# An engine in a process of its own: it starts `sleep` on a terminal from a
# short-lived thread (the spawn itself runs on the spawner thread), waits
# until it runs (the command runs only once its death signal is set), hands
# the PTY's master to another process that keeps it open (so the PTY never
# hangs up), prints both pids once the caller's thread has ended, and waits
# to be killed.
ENGINE = """
import os, subprocess, sys, threading
from dsh_magics.terminal.core import child, pty
from tests.conftest import wait_until
if sys.argv[1] == "fork":
    child.launcher._ready = False
assert sys.argv[1] == "fork" or child.launcher.usable(None)
if sys.argv[1] == "launch-listing":
    child.launcher._closefrom = None
p = pty.Pty("dying")
t = threading.Thread(target=p.spawn, args=(["sleep", "300"],), kwargs={"env": {"PATH": "/usr/bin:/bin"}, "size": (80, 24)})
t.start()
t.join()
# launched: the helper arms the death signal a moment after the spawn returns, then execs the command
wait_until(lambda: os.path.basename(os.readlink(f"/proc/{p.pid}/exe")) == "sleep", 10)
holder = subprocess.Popen(["sleep", "300"], pass_fds=[p.proc.fd], start_new_session=True)
print(p.pid, holder.pid, flush=True)
sys.stdin.read()
"""


def _gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def test_the_child_gets_sighup_when_the_engine_dies_not_before(way: str) -> None:
    engine = subprocess.Popen(
        [sys.executable, "-c", ENGINE, way], env=dict(os.environ, PYTHONPATH=str(ROOT)),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    pids: list[int] = []
    try:
        assert engine.stdout is not None
        pids = [int(x) for x in engine.stdout.readline().split()]
        assert len(pids) == 2, pids
        shell, holder = pids
        assert not _gone(shell), "hung up when the calling thread ended, not with the engine"
        engine.kill()  # no orderly close, and the PTY stays open in the holder
        engine.wait(30)
        wait_until(lambda: _gone(shell), 15, msg=f"the child {shell} outlived the engine")
        assert not _gone(holder)
    finally:
        if engine.poll() is None:
            engine.kill()
            engine.wait(30)
        for pid in pids:
            if not _gone(pid):
                os.kill(pid, signal.SIGKILL)


def test_spawns_without_a_cwd_are_launched_where_they_can_be() -> None:
    """On this machine (Linux, util-linux) a client's spawn forks nothing;
    a local shell's (with a cwd) still forks."""
    if not child.launcher.usable(None):
        pytest.skip("no posix_spawn or setpriv --pdeathsig here")
    assert not child.launcher.usable("/")
    seen: list[int] = []
    real = child.launcher.spawn

    def counted(*args, **kwargs):
        seen.append(1)
        return real(*args, **kwargs)

    child.launcher.spawn = counted  # type: ignore[method-assign]
    try:
        p = pty.Pty("spawn-counted")
        p.spawn(["true"], env=ENV, size=(80, 24))
        procs.reap(p.proc, None, 5.0)
        p.close_pidfd()
        p.close()
    finally:
        del child.launcher.spawn
    assert seen == [1]
