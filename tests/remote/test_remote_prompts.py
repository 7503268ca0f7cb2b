"""Prompts and passwords of remote jobs, seen through the side channel
(a real sshd on 127.0.0.1 and a real podman container): what waits for
input, what is hidden entry, what an agent may type, and what the probe
costs. The shared cases (read -s, getpass, y/N, REPL, sleep, cat on a pipe)
also run in tests/contract/test_interactive.py on both backends."""

from __future__ import annotations

import os
import shutil

import pytest

from dsh_magics import jobs
from dsh_magics.errors import SecretInput
from dsh_magics.terminal.core.procs import alive, descendants
from dsh_magics.terminal.remote import RemoteTerminal, inband, parse_target, side_channel, ssh_start
from tests.conftest import pids_with_env, wait_until
from tests.containers import Box
from tests.remote.conftest import connection_processes


@pytest.fixture(params=["ssh", "podman"])
def remote(request: pytest.FixtureRequest, open_remote):
    """A RemoteTerminal over ssh, or into the session's test container."""
    if request.param == "ssh":
        return open_remote(session="prompts")
    box: Box = request.getfixturevalue("podman_box")
    return open_remote(target=box.target, session="prompts")


def _awaiting(term: RemoteTerminal, job: jobs.Job) -> dict:
    wait_until(lambda: term.info().awaiting_input is not None or job.done, timeout=20)
    info = term.info().awaiting_input
    assert info is not None, term.snapshot(job)
    return info


def test_input_is_awaiting_input_and_not_secret(remote: RemoteTerminal) -> None:
    job = remote.exec("python3 -c 'input(\"name: \")'", tty=True)
    got = _awaiting(remote, job)
    assert got["secret"] is False and got["prompt"] == "name: " and got["name"].startswith("python")
    remote.send("ada", allow_secret=False, source="agent")
    assert job.wait(20) and job.result.exit_code == 0


def test_read_s_is_secret_and_only_a_person_answers(remote: RemoteTerminal) -> None:
    job = remote.exec("read -s -p 'Password: ' pw; echo; echo \"len ${#pw}\"", tty=True)
    got = _awaiting(remote, job)
    assert got["secret"] is True and got["prompt"] == "Password: "
    with pytest.raises(SecretInput):
        remote.send("hunter2", allow_secret=False, source="agent")
    remote.send("hunter2", secret=True)
    assert job.wait(20) and job.result.output.endswith("len 7\n")
    assert "hunter2" not in job.result.output


@pytest.mark.parametrize("command", ["sleep 5", "sleep 5 | cat"], ids=["sleep", "cat-pipe"])
def test_quiet_jobs_are_not_awaiting_input(remote: RemoteTerminal, command: str) -> None:
    job = remote.exec("echo started; " + command, tty=True)
    wait_until(lambda: "started" in remote.snapshot(job).output, timeout=20)
    # the first probe comes after a quiet spell; wait until it was made
    before = remote.watch.probes
    wait_until(lambda: remote.watch.probes > before, timeout=20)
    assert remote.info().awaiting_input is None
    remote.interrupt()
    assert job.wait(20)


def test_an_idle_terminal_is_never_probed(remote: RemoteTerminal) -> None:
    for _ in range(3):
        assert remote.exec("true").wait(20)
        # no job, no deadline: the reader never calls the probe while idle
        assert remote.watch.next_due() is None
    assert remote.info().awaiting_input_unavailable is None


def test_the_side_channel_names_the_shells_terminal_at_its_first_use(remote: RemoteTerminal) -> None:
    """The shell runs no ``tty`` at start-up (a process per terminal that a
    fleet's quick commands never need): the side channel names the terminal
    when it first looks, the one the shell keeps on its own descriptor."""
    assert remote.exec("true").wait(20)
    assert remote.watch.terminal is None and remote.side is not None and remote.side.pid is None
    job = remote.exec(f"tty <&{inband.INPUT_FD}; read -p 'x: ' v", tty=True)
    _awaiting(remote, job)
    named = remote.snapshot(job).output.splitlines()[0].strip()
    assert named.startswith("/dev/") and remote.watch.terminal == named, (named, remote.watch.terminal)
    remote.send("y", allow_secret=False, source="agent")
    assert job.wait(20) and job.result.exit_code == 0


def test_ssh_control_socket_is_private_and_removed(open_remote) -> None:
    term = open_remote(session="ctl")
    control = term.transport.control_dir
    assert control is not None and os.path.isdir(control)
    assert oct(os.stat(control).st_mode & 0o777) == "0o700"
    job = term.exec("read -p 'x? ' x </dev/tty; echo got $x")
    _awaiting(term, job)
    term.send("1")
    assert job.wait(20)
    term.close()
    assert not os.path.exists(control)


def test_cmd_without_a_probe_says_unavailable_and_needs_allow_unknown_prompt(open_remote) -> None:
    bash = shutil.which("bash")
    assert bash is not None
    term = open_remote(target=f"cmd:{bash} --noprofile --norc -i", session="cmd")
    assert "no side channel" in (term.info().awaiting_input_unavailable or "")
    job = term.exec("read -p 'name? ' n </dev/tty; echo \"hi $n\"")
    wait_until(lambda: "name? " in term.snapshot(job).output, timeout=20)
    with pytest.raises(SecretInput) as e:
        term.send("ada", allow_secret=False, source="agent")
    assert e.value.details.get("unknown_prompt") is True
    term.send("ada", allow_secret=False, allow_unknown_prompt=True, source="agent")
    assert job.wait(20) and job.result.output.endswith("hi ada\n")
    assert term.info().awaiting_input is None


def test_probe_argv_never_uses_the_users_control_socket(monkeypatch) -> None:
    target = parse_target("ssh://me@example.org:2222")
    assert target is not None
    monkeypatch.setenv(
        "DSH_MAGICS_SSH_OPTIONS", "-o ControlMaster=auto -o ControlPath=~/.ssh/cm-%r@%h -o ControlPersist=yes -E /tmp/mine"
    )
    main = target.argv(login=False, control_dir="/tmp/dsh-ssh-x")
    probe = side_channel.probe_argv(target, "/tmp/dsh-ssh-x")
    assert probe is not None
    # ssh keeps the first value of an option: the engine's come before the user's
    for argv, mode in ((main, "yes"), (probe, "no")):
        assert argv.index("ControlPath=/tmp/dsh-ssh-x/c") < argv.index("ControlPath=~/.ssh/cm-%r@%h")
        assert argv.index(f"ControlMaster={mode}") < argv.index("ControlMaster=auto")
        # never a daemon master, whatever the user's options say
        assert argv.index("ControlPersist=no") < argv.index("ControlPersist=yes")
    # the terminal's ssh is the master and logs to the private directory (ssh keeps the last -E);
    # its bash runs under the wrapper that says when it has ended
    assert main[-1] == ssh_start.wrapped_shell(["bash", "--noprofile", "--norc", "-i"])
    assert main[-1].startswith("exec sh -c ") and "bash --noprofile --norc -i 2>&3" in main[-1]
    last_log = max(i for i, arg in enumerate(main) if arg == "-E")
    assert main[last_log + 1] == "/tmp/dsh-ssh-x/log"
    # the side channel's session has no terminal
    assert probe[-1] == "exec sh" and "-T" in probe and "-tt" not in probe


@pytest.mark.parametrize(
    "ending, code, output",
    [
        ("exit 3", 3, "exit\n"),
        # a user's EXIT trap runs inside bash, before the wrapper's marker
        ("trap 'echo on-exit' EXIT; exit 5", 5, "exit\non-exit\n"),
        # killed: ssh says 255, as for a bash killed under no wrapper
        ("kill -9 $$", 255, ""),
    ],
)
def test_ssh_exit_ends_the_terminal_with_the_side_channel_open(open_remote, ending, code, output) -> None:
    """The side channel's session stays open, and yet the remote shell's
    end ends the terminal at once. The terminal's ssh is the connection's
    master, which stays up while any session over it is open: the wrapper's
    end-of-shell marker tells the engine to close the side channel, and the
    master then exits, before any close()."""
    term = open_remote(session="exit")
    job = term.exec("read -p 'n? ' n; echo got $n", tty=True)
    _awaiting(term, job)
    assert term.side is not None and term.side.pid is not None and alive(term.side.pid)
    term.send("1")
    assert job.wait(20)
    control = term.transport.control_dir
    assert control is not None and len(connection_processes(term)) == 2  # the terminal's ssh (the master), the side channel's
    job = term.exec(ending)
    assert job.wait(20), term.snapshot(job)
    assert (job.result.status, job.result.exit_code) == ("shell_exited", code), job.result
    # then ssh's own "Connection to ... closed." (and no marker of the wrapper)
    assert job.result.output.startswith(output) and "\x1b" not in job.result.output, job.result
    # no keep-alive timeout, no close(): it ended because its remote shell did
    wait_until(lambda: term.dead, timeout=20, msg="the terminal did not end with its remote shell")
    wait_until(lambda: not connection_processes(term), timeout=20, msg="ssh processes of the terminal left")
    assert pids_with_env("DSH_MAGICS_SESSION", term.session_id) == []
    term.close()
    assert not os.path.exists(control)


def _children(pid: int) -> set[int]:
    return {p for p in descendants(pid) if _stat(p)[1] == pid}


def _stat(pid: int) -> tuple[str, int | None]:
    """(comm, ppid) of a live process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            head, _, tail = f.read().rpartition(")")
        return head.partition("(")[2], int(tail.split()[1])
    except (OSError, ValueError, IndexError):
        return "", None


def _argv(pid: int) -> list[bytes]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")[:-1]
    except OSError:
        return []


def test_ssh_side_channel_is_one_long_lived_session(open_remote, sshd) -> None:
    """Over a job that goes quiet several times, every probe goes to the same
    `sh`, in one session over the terminal's one connection."""
    connections = _children(sshd.proc.pid)
    term = open_remote(session="longlived")
    mine = _children(sshd.proc.pid) - connections
    assert len(mine) == 1, "one connection carries the terminal and its side channel"
    side = term.side
    assert side is not None
    before = term.watch.probes
    job = term.exec("for i in 1 2 3 4 5; do echo $i; sleep 0.5; done")
    seen = set()
    while not job.done:
        probes = term.watch.probes
        wait_until(lambda n=probes: term.watch.probes > n or job.done, timeout=20)
        # the remote end of the side channel (sshd's sessions run here), not the terminal's wrapper (sh -c)
        shells = tuple(p for p in descendants(sshd.proc.pid) if _stat(p)[0] == "sh" and _argv(p) == [b"sh"])
        seen.add((side.pid, shells))
    assert job.wait(20) and job.result.exit_code == 0
    assert term.watch.probes - before >= 3, "several probes"
    assert len(seen) == 1, f"the side channel changed between probes: {seen}"
    ((pid, shells),) = seen
    assert pid is not None and alive(pid) and len(shells) == 1
    assert _children(sshd.proc.pid) - connections == mine


def test_the_remote_bash_reports_its_version_and_an_old_one_is_refused(remote: RemoteTerminal) -> None:
    from dsh_magics.terminal.remote.remote_terminal import too_old

    job = remote.exec("echo ${BASH_VERSINFO[0]}.${BASH_VERSINFO[1]}.${BASH_VERSINFO[2]}")
    assert job.wait(20)
    assert remote.stream.bash_version == job.result.output.strip()
    assert too_old(remote.stream.bash_version) is None
    assert too_old("4.4.23") == "5.0" and too_old("3.2.57") == "5.0" and too_old(None) is None


HINT = "printf '\\033]6973;P\\007'"  # the prompt hint bash prints after an aborted line


@pytest.mark.parametrize(
    "read",
    ["read -r x </dev/tty", "read -r x"],
    ids=["dev-tty", "builtin-on-the-shells-own-terminal"],
)
def test_a_forged_prompt_hint_types_nothing(remote: RemoteTerminal, read: str) -> None:
    """A command prints the hint, then reads the terminal: the probe that
    settles an aborted line must not be typed into that read. The second
    case is the shell's own builtin ``read`` on the very terminal it reads
    its commands from (a tty job), which looks like bash at its prompt
    except for the job's redirections."""
    job = remote.exec(f"{HINT}; echo ready; {read}; echo \"got [$x]\"", tty=True)
    wait_until(lambda: remote.stream.hints_refused == 1, timeout=20, msg="the hint was not looked at")
    assert not job.done and "got" not in remote.snapshot(job).output, remote.snapshot(job)
    _awaiting(remote, job)
    remote.send("hello", secret=True)
    assert job.wait(20) and job.result.status == "completed", remote.snapshot(job)
    assert job.result.output.endswith("got [hello]\n")
    # forged again, then a real Ctrl-C: the hint that follows is the shell's own
    job = remote.exec(f"{HINT}; echo ready; {read}; echo \"got [$x]\"", tty=True)
    wait_until(lambda: remote.stream.hints_refused == 2, timeout=20, msg="the hint was not looked at")
    remote.interrupt()
    assert job.wait(20) and job.result.status == "interrupted", remote.snapshot(job)
    assert "got" not in job.result.output and job.result.note is None
    job = remote.exec('echo "[$?]"')
    assert job.wait(20) and job.result.output == "[130]\n"


# -- cmd: with a probe command the user names --------------------------------------
def _cmd_target(kind: str, request: pytest.FixtureRequest) -> str:
    """A ``cmd:`` target whose command opens a bash elsewhere, and whose
    ``--probe=`` command is a second way in to the same place: a local
    ``sh``; ``ssh ... sh`` to the test sshd; ``podman exec -i ... sh``."""
    import shlex

    bash = ["bash", "--noprofile", "--norc", "-i"]
    if kind == "local":
        main, probe = bash, ["sh"]
    elif kind == "ssh":
        server = request.getfixturevalue("sshd")
        opts = shlex.split(os.environ.get("DSH_MAGICS_SSH_OPTIONS", ""))
        where = [*opts, "-o", "BatchMode=yes", "-p", str(server.port), "--", server.target.removeprefix("ssh://").split(":")[0]]
        main = ["ssh", "-tt", *where, "exec " + " ".join(bash)]
        probe = ["ssh", "-T", *where, "exec sh"]
    else:
        box: Box = request.getfixturevalue("podman_box")
        main = ["podman", "exec", "-it", "-e", "TERM=dumb", box.name, *bash]
        probe = ["podman", "exec", "-i", box.name, "sh"]
    return "cmd:--probe=" + shlex.quote(shlex.join(probe)) + " " + shlex.join(main)


@pytest.fixture(params=["local", "ssh", "podman"])
def cmd_probed(request: pytest.FixtureRequest, open_remote) -> RemoteTerminal:
    return open_remote(target=_cmd_target(request.param, request), session="cmdprobe")


def test_cmd_with_a_probe_command_sees_prompts_and_passwords(cmd_probed: RemoteTerminal) -> None:
    term = cmd_probed
    assert term.info().awaiting_input_unavailable is None
    job = term.exec("python3 -c 'input(\"name: \")'", tty=True)
    got = _awaiting(term, job)
    assert got["secret"] is False and got["prompt"] == "name: "
    term.send("ada", allow_secret=False, source="agent")
    assert job.wait(20) and job.result.exit_code == 0
    job = term.exec("read -s -p 'Password: ' pw; echo; echo \"len ${#pw}\"", tty=True)
    assert _awaiting(term, job)["secret"] is True
    with pytest.raises(SecretInput) as e:
        term.send("hunter2", allow_secret=False, source="agent")
    assert not e.value.details.get("unknown_prompt")
    term.send("hunter2", secret=True)
    assert job.wait(20) and job.result.output.endswith("len 7\n")
    # quiet and idle cost nothing more than over the built-in side channels
    probes = term.watch.probes
    for _ in range(3):
        assert term.exec("true").wait(20)
    assert term.watch.next_due() is None and term.watch.probes == probes


def test_ctrl_c_reaches_a_shell_that_never_waits_for_a_command(remote: RemoteTerminal) -> None:
    """A builtin loop never looks launched to the side channel (bash runs,
    it does not wait): the press goes when the launch check gives up, and
    bash aborts the line."""
    job = remote.exec("echo go; while :; do :; done")
    wait_until(lambda: "go" in remote.snapshot(job).output, timeout=20)
    remote.interrupt()
    assert job.wait(20) and job.result.status == "interrupted", remote.snapshot(job)
