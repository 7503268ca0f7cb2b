"""Who owns an ssh terminal's control master, and how long it can outlive us.

The terminal's own ssh is the master (``ControlMaster=yes``, no
``ControlPersist``): a child of the engine on the terminal's PTY, not a
daemon. It ends when the terminal closes, when the remote shell ends (the
wrapper's end-of-shell marker closes the side channel, the master's other
session) and with the engine's process. Processes are found by the
terminal's private control directory, never by a broad name.
"""

from __future__ import annotations

import os

from dsh_magics import jobs
from dsh_magics.terminal.core.procs import alive
from dsh_magics.terminal.remote import RemoteTerminal, control_master, parse_target
from tests.conftest import wait_until
from tests.remote.conftest import CONFIG, engine_with_a_prompt, processes_with_arg

GONE_S = 3.0
"""How soon a killed engine's ssh processes must be gone: they end on the
hang-up itself; a master kept up by ``ControlPersist=5`` (session 33) took 4-5 s."""


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


def test_the_master_is_the_terminals_ssh_and_ends_when_the_terminal_closes(open_remote) -> None:
    term = open_remote(session="cm-close")
    control = term.transport.control_dir
    assert control is not None and term.master is not None
    _awaiting(term)
    # the terminal's own ssh answers on the socket: no daemon forked away
    master = term.master.pid()
    assert master == term.pid and _ppid(master) == os.getpid()
    assert f"{control}/c".encode() in open(f"/proc/{master}/cmdline", "rb").read()
    assert b"ControlPersist=no" in open(f"/proc/{master}/cmdline", "rb").read()
    # two processes: the master (the terminal's ssh) and the side channel's session over it
    assert sorted(processes_with_arg(control)) == sorted({term.pid, term.side.pid})
    term.close()
    assert not alive(master), "the master outlived close()"
    assert processes_with_arg(control) == [] and not os.path.exists(control)


def test_the_master_ends_with_its_terminal_when_the_remote_shell_exits(open_remote) -> None:
    term = open_remote(session="cm-exit")
    assert term.master is not None
    master = term.master.pid()
    assert master is not None
    job = term.exec("exit 4")
    assert job.wait(30) and job.result.status == "shell_exited" and job.result.exit_code == 4
    wait_until(lambda: term.dead, timeout=30, msg="the terminal did not end with its remote shell")
    assert not alive(master), "the master outlived its terminal"


def test_a_killed_engine_leaves_no_ssh_behind(sshd) -> None:
    """SIGKILL to the engine's process while a job waits at a prompt (the
    side channel's session open): the kernel hangs up the terminal's ssh,
    the master (``PR_SET_PDEATHSIG``, and its PTY), which ends, and the
    side channel's session with it. At once: nothing is left to run out a
    ``ControlPersist``."""
    with engine_with_a_prompt(sshd.target, "cm-killed") as engine:
        assert engine.master == engine.client and _ppid(engine.client) == engine.proc.pid
        assert sorted(processes_with_arg(engine.control)) == sorted({engine.client, engine.side})
        engine.proc.kill()
        engine.proc.wait(10)
        wait_until(
            lambda: not processes_with_arg(engine.control), timeout=GONE_S, msg="ssh processes outlived the engine"
        )


def test_asking_for_the_pid_where_no_master_listens(tmp_path) -> None:
    assert control_master.ask_pid(str(tmp_path / "none"), 1.0) is None
    plain = tmp_path / "file"
    plain.write_text("not a socket")
    assert control_master.ask_pid(str(plain), 1.0) is None


def test_without_a_nonce_there_is_no_side_channel_and_exit_still_ends_the_terminal(
    sshd, tmp_path, monkeypatch
) -> None:
    """A host where the wrapper cannot draw its nonce (no
    ``/proc/sys/kernel/random/uuid``, no ``od``: here a real ssh whose remote
    command names a missing file and tool instead, ``DSH_MAGICS_SSH``). Its
    end marker would not count, and an open side channel would keep the
    connection up after the shell. So the terminal has none (prompts are
    unknown, and it says why), and ``exit`` ends it."""
    ssh = tmp_path / "ssh"
    ssh.write_text(
        "#!/bin/bash\n"
        'last="${@: -1}"; last="${last//random\\/uuid/random/none}"; last="${last//od -An/no-such-od -An}"\n'
        'exec ssh "${@:1:$#-1}" "$last"\n'
    )
    ssh.chmod(0o755)
    monkeypatch.setenv("DSH_MAGICS_SSH", str(ssh))
    term = RemoteTerminal("cm-no-nonce", CONFIG, parse_target(sshd.target), job_table=jobs.JobTable())
    try:
        assert term.scanner.key is None and term.side is not None
        job = term.exec("read -p 'x? ' x", tty=True)
        assert "no nonce" in (term.info().awaiting_input_unavailable or "")
        term.send("1")
        assert job.wait(20), term.snapshot(job)
        assert term.side.pid is None, "the side channel started"
        job = term.exec("exit 3")
        assert job.wait(20) and (job.result.status, job.result.exit_code) == ("shell_exited", 3), job.result
        wait_until(lambda: term.dead, timeout=20, msg="the terminal did not end with its remote shell")
    finally:
        term.close()
