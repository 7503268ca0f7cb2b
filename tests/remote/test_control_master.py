"""Who owns an ssh terminal's control master, and how long it can outlive us.

The terminal's own ssh starts the master (``ControlMaster=yes`` with
``ControlPersist``): ssh forks it into the background, so it is a daemon, not
a child of the engine. The engine ends it when the terminal closes (its pid
asked on its socket); when the engine's process is killed, its sessions end
(the terminal's ssh is hung up, the side channel's ``sh`` reads the end of its
input) and the master exits ``ControlPersist`` seconds later. Processes are
found by the terminal's private control directory, never by a broad name.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import sys

from dsh_magics.terminal.core.procs import alive
from dsh_magics.terminal.remote import control_master
from dsh_magics.terminal.remote.targets import CONTROL_PERSIST_S
from tests.conftest import wait_until
from tests.remote.conftest import processes_with_arg


def _ppid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rpartition(")")[2].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _awaiting(term, command: str = "read -s -p 'pw: ' pw; echo got") -> None:
    """A job waiting for input, seen through the side channel: its session is open too."""
    job = term.exec(command, tty=True)
    wait_until(lambda: term.info().awaiting_input is not None or job.done, timeout=60)
    assert term.info().awaiting_input is not None, term.snapshot(job)
    assert term.side is not None and term.side.pid is not None


def test_the_master_is_sshs_daemon_and_ends_when_the_terminal_closes(open_remote) -> None:
    term = open_remote(session="cm-close")
    control = term.transport.control_dir
    assert control is not None and term.master is not None
    _awaiting(term)
    master = term.master.pid()
    assert master is not None and alive(master)
    # ssh forked it away: not the engine's child, nor the terminal's ssh
    assert master not in (term.pid, os.getpid()) and _ppid(master) not in (os.getpid(), term.pid)
    assert f"{control}/c".encode() in open(f"/proc/{master}/cmdline", "rb").read()
    # one master: the terminal's ssh and the side channel's are its sessions
    assert sorted(processes_with_arg(control)) == sorted({master, term.pid, term.side.pid})
    term.close()
    # ended by close itself, not by ControlPersist running out later
    assert not alive(master), "the master outlived close()"
    assert processes_with_arg(control) == [] and not os.path.exists(control)


def test_the_master_ends_with_its_terminal_when_the_remote_shell_exits(open_remote) -> None:
    term = open_remote(session="cm-exit")
    assert term.master is not None
    master = term.master.pid()
    assert master is not None
    job = term.exec("exit 4")
    assert job.wait(30) and job.result.status == "shell_exited"
    wait_until(lambda: term.dead, timeout=30, msg="the terminal did not end with its remote shell")
    # ended with it, before it counted as dead: not by ControlPersist later
    assert not alive(master), "the master outlived its terminal"


_ENGINE = """
import sys
from dsh_magics import jobs
from dsh_magics.terminal.config import TerminalConfig
from dsh_magics.terminal.remote import RemoteTerminal, parse_target
term = RemoteTerminal("cm-killed", TerminalConfig(login=False), parse_target(sys.argv[1]), job_table=jobs.JobTable())
job = term.exec("read -p 'x? ' x", tty=True)
while term.info().awaiting_input is None:  # (the test's deadline is on its read below)
    term.wait_output(term.output_seq, 1.0)
print(term.transport.control_dir, term.pid, term.side.pid, term.master.pid(), flush=True)
sys.stdin.read()
"""


def test_a_killed_engine_leaves_its_master_for_control_persist_at_most(sshd) -> None:
    """SIGKILL to the engine's process: the terminal's ssh is hung up at once
    (PR_SET_PDEATHSIG) and the side channel's ends when its ``sh`` reads the
    end of its input; the master, a daemon, then has no session and exits
    ``ControlPersist`` seconds later (docs/remote.md states the bound)."""
    engine = subprocess.Popen(
        [sys.executable, "-c", _ENGINE, sshd.target], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    control = ""
    try:
        assert engine.stdout is not None
        assert select.select([engine.stdout], [], [], 60)[0], "the engine did not start its terminal"
        control, *pids = engine.stdout.readline().split()
        assert control.startswith("/") and len(pids) == 3, "the engine did not start its terminal"
        client, side, master = (int(p) for p in pids)
        assert _ppid(master) != engine.pid and _ppid(client) == engine.pid
        assert sorted(processes_with_arg(control)) == sorted({client, side, master})
        engine.kill()
        engine.wait(10)
        wait_until(lambda: not alive(client) and not alive(side), timeout=20, msg="the sessions outlived the engine")
        wait_until(
            lambda: not processes_with_arg(control), timeout=CONTROL_PERSIST_S + 20, msg="the master outlived its bound"
        )
    finally:
        if engine.poll() is None:
            engine.kill()
            engine.wait(10)
        for stream in (engine.stdout, engine.stdin):
            if stream is not None:
                stream.close()
        if control.startswith("/"):
            shutil.rmtree(control, ignore_errors=True)


def test_asking_for_the_pid_where_no_master_listens(tmp_path) -> None:
    assert control_master.ask_pid(str(tmp_path / "none"), 1.0) is None
    plain = tmp_path / "file"
    plain.write_text("not a socket")
    assert control_master.ask_pid(str(plain), 1.0) is None
