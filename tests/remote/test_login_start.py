"""An ssh terminal's login start (the default, ``login=True``) runs no
remote command: sshd starts the user's login shell itself, which reads the
profile and, through it, ``~/.bashrc`` once (issue 35 §5: ``bash -l -i`` run
as a command read it twice, once in the shell sshd ran the command with).
Its ssh is no control master, so it ends with its one session, also while
the side channel (then a connection of its own) is open; a login shell that
is not bash execs a wrapped ``bash -l -i``; with no bash there the start
fails with a clear error.

Against a real sshd on 127.0.0.1 whose sessions get a private HOME (its
``.profile`` sources ``.bashrc`` as Debian's does, and each counts its
reads), and, for the other login shell, a throwaway user whose shell is
``/bin/sh`` (created and removed here; skipped when not root)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh_magics.errors import TargetUnreachable
from dsh_magics.terminal.core.procs import alive
from dsh_magics.terminal.remote import RemoteTerminal, inband, ssh_start
from tests.conftest import pids_with_env, wait_until
from tests.remote.conftest import (
    LOGIN,
    connection_processes,
    engine_with_a_prompt,
    open_terminal,
    processes_with_arg,
    run,
)
from tests.sshd import Sshd, sshd_for_users, sshd_with_home, throwaway_user

PROFILE = '[ -n "$BASH" ] && . "$HOME/.bashrc"\n'


@pytest.fixture(scope="module")
def home_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Sshd, Path]]:
    yield from sshd_with_home(tmp_path_factory, "login")


@pytest.fixture
def remote(home_sshd, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Sshd, Path]]:
    server, home = home_sshd
    for f in home.iterdir():
        f.unlink()
    (home / ".profile").write_text(f'echo p >> "$HOME/reads"\n{PROFILE}')
    (home / ".bashrc").write_text('echo r >> "$HOME/reads"\n')
    monkeypatch.setenv("DSH_MAGICS_SSH_OPTIONS", server.client_config("login"))
    yield server, home


@pytest.fixture
def opened() -> Iterator[list[RemoteTerminal]]:
    terms: list[RemoteTerminal] = []
    yield terms
    for t in terms:
        pid = t.pid
        t.close()
        assert pid is None or not os.path.exists(f"/proc/{pid}") or _zombie(pid), "the client outlived close()"


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_the_login_shell_is_sshds_own_and_reads_bashrc_once(remote, opened) -> None:
    server, home = remote
    term = open_terminal(opened, server.target, "login", config=LOGIN)
    assert (home / "reads").read_text().split() == ["p", "r"]  # the profile, and ~/.bashrc once through it
    res = run(term, 'echo "$0"; shopt -q login_shell && echo login; [[ $- == *i* ]] && echo interactive')
    assert res.output.split() == ["-bash", "login", "interactive"], res
    # no remote command: the session's shell is the one sshd started, and no wrapper is its parent
    res = run(term, "read -r c </proc/$PPID/comm; echo $c")
    assert res.output.strip() == "sshd", res
    assert term.master is None and term.side is not None
    ssh = Path(f"/proc/{term.pid}/cmdline").read_bytes().split(b"\0")
    assert b"ControlPath=none" in ssh and ssh[-3:] == [b"--", b"127.0.0.1", b""], ssh  # (no remote command)


def test_a_remote_command_of_the_users_config_never_runs(remote, opened, monkeypatch) -> None:
    """A ``RemoteCommand`` in the user's ssh config would run in place of the
    login shell, and the start would type its first line into whatever that
    started (a ``tmux attach``, a psql prompt): the engine's ssh overrides it
    (``targets.NO_REMOTE_COMMAND``), for the terminal and its side channel."""
    server, home = remote
    options = server.client_config("remote-command")
    cfg = Path(options.split(" ", 1)[1])
    cfg.write_text(cfg.read_text() + f'  RemoteCommand echo hijacked >> {home}/hijacked; exec cat\n')
    monkeypatch.setenv("DSH_MAGICS_SSH_OPTIONS", options)
    term = open_terminal(opened, server.target, "login", config=LOGIN)
    res = run(term, 'echo "$0"; echo ok')
    assert res.output.split() == ["-bash", "ok"], res
    assert not (home / "hijacked").exists()
    pid = term.stream.where[0]
    assert term.side is not None and pid is not None
    assert (term.side.locate(pid) or "").startswith("/dev/pts/")  # the side channel (a command line) runs too


@pytest.mark.parametrize("control", ["ignoreboth", ""], ids=["ignoreboth", "no-histcontrol"])
def test_the_check_stays_out_of_a_history_that_ignores_spaced_lines(remote, opened, control) -> None:
    """Debian's ``~/.bashrc`` has ``HISTCONTROL=ignoreboth``; with a prompt
    command that appends each line to the history file at once, the check
    line (typed before the set-up turns history off) must not be there.
    Nor without ``HISTCONTROL``: the check unsets ``PROMPT_COMMAND``
    (``ssh_start.QUIET_PROMPT``), so its ``history -a`` does not run again
    before the set-up unsets ``HISTFILE``."""
    server, home = remote
    (home / ".bashrc").write_text(
        f'HISTCONTROL={control}; HISTFILE={home}/hist; history -c; PROMPT_COMMAND="history -a"\n'
    )
    term = open_terminal(opened, server.target, "login", config=LOGIN)
    assert run(term, "echo ok").output.strip() == "ok"
    hist = (home / "hist").read_text() if (home / "hist").exists() else ""
    assert "/bin/sh" not in hist and "6973" not in hist, hist


def test_a_shell_end_with_the_checks_nonce_ends_nothing(remote, opened) -> None:
    """Under a bash login shell the scanner's key is the check's nonce
    (printed by the check, which had it in ``/bin/sh``'s argv: other users
    of the host may read it there). No wrapper runs around that bash, so a
    ``SHELL_END`` marker with it, printed by a job, ends nothing
    (``inband.ShellScanner.expect_check``): the terminal goes on."""
    server, _home = remote
    term = open_terminal(opened, server.target, "login", config=LOGIN)
    nonce = term.scanner.key
    assert nonce is not None and nonce == term.scanner.check  # (the check's own, not a wrapper's)
    res = run(term, f"printf '\\033]6973;{inband.SHELL_END};{nonce}\\007'; echo after")
    assert res.output == "after\n", res
    assert not term.scanner.ended
    assert run(term, "echo $((6*7))").output == "42\n"


@pytest.mark.parametrize(("read", "runs"), [(False, 2), (True, 1)], ids=["plain", "a-read-in-bashrc"])
def test_the_login_start_runs_prompt_command_once_a_line_read(remote, opened, read, runs) -> None:
    """The user's ``PROMPT_COMMAND`` (pyenv-virtualenv's hook on this
    machine: a process each run) runs before the login shell's first prompt
    and after the one empty line (a ``read`` in ~/.bashrc takes that line
    instead), and no more: the check line's bash-only branch unsets it
    (``ssh_start.QUIET_PROMPT``), with ``PS1`` (whose ``$(...)`` runs at each
    prompt) and ``PS0`` (at each line read). Seven runs of the hook before
    session 37's round 2 (two empty lines first, two before the set-up, and
    its first line), three until session 38 (one after the check)."""
    server, home = remote
    (home / ".bashrc").write_text(
        ('read -r -t 5 answer; echo "r[$answer]" >> "$HOME/reads"\n' if read else "echo r >> \"$HOME/reads\"\n")
        + 'PROMPT_COMMAND=\'echo c >> "$HOME/prompts"\'\n'
        + 'PS1=\'$(echo s >> "$HOME/ps1")$ \' PS0=\'$(echo z >> "$HOME/ps0")\'\n'
    )
    term = open_terminal(opened, server.target, "login", config=LOGIN)
    assert run(term, "echo $((6*7))").output.strip() == "42"
    assert (home / "reads").read_text().split() == ["p", "r[]" if read else "r"]
    assert (home / "prompts").read_text().split() == ["c"] * runs
    assert (home / "ps1").read_text().split() == ["s"] * runs
    # (PS0 comes after a line is read, before it runs: the check line's is the one left)
    assert (home / "ps0").read_text().split() == ["z"]


def test_the_login_start_keeps_the_set_up_guarantees(remote, opened) -> None:
    """History holds no line of the engine (the check is typed into the
    login shell's readline, as the set-up's first line is), and a job runs
    as in any other start."""
    server, _ = remote
    term = open_terminal(opened, server.target, "login", config=LOGIN)
    res = run(term, "history; cd /tmp && pwd")
    assert "6973" not in res.output and "/bin/sh" not in res.output, res
    assert res.output.strip().endswith("/tmp") and term.cwd == "/tmp", res


@pytest.mark.parametrize(
    ("ending", "dropped"),
    [("exit 3", False), ("trap 'echo bye' EXIT; exit 4", False), ("kill -9 $$", False), ("kill -9 $PPID", True)],
    ids=["exit", "exit-trap", "kill-9", "connection-drops"],
)
def test_the_shells_end_ends_the_terminal_with_the_side_channel_open(remote, opened, ending, dropped) -> None:
    """The side channel's connection is open (a probe saw a prompt), and
    yet the terminal ends with its remote shell (or its connection: ``kill
    -9`` of the session's sshd), before any close(), and nothing of ssh is
    left: the terminal's ssh has no other session to wait for."""
    server, _ = remote
    term = open_terminal(opened, server.target, "login", config=LOGIN)
    job = term.exec("read -s -p 'pw: ' x; echo got", tty=True)
    wait_until(lambda: term.info().awaiting_input is not None or job.done, timeout=20)
    assert term.info().awaiting_input is not None and term.info().awaiting_input["secret"], term.snapshot(job)
    assert term.side is not None and term.side.pid is not None
    term.send("x", secret=True)
    assert job.wait(20) and job.result.output.strip().endswith("got"), term.snapshot(job)
    assert len(connection_processes(term)) == 2  # the terminal's ssh, the side channel's
    job = term.exec(ending)
    assert job.wait(20), term.snapshot(job)
    assert job.result.status == "shell_exited", job.result
    wait_until(lambda: term.dead, timeout=20, msg="the terminal did not end with its remote shell")
    wait_until(lambda: not connection_processes(term), timeout=20, msg="ssh processes of the terminal left")
    assert pids_with_env("DSH_MAGICS_SESSION", term.session_id) == []
    if not dropped:
        assert "\x1b" not in job.result.output, job.result


def test_a_killed_engine_leaves_no_ssh_and_no_remote_shell(remote) -> None:
    """SIGKILL to the engine's process while a job waits at a prompt (the
    side channel's connection open): the terminal's ssh is hung up (its
    death signal, its PTY), the side channel's ``sh`` reads the end of its
    input, and both connections end, the remote shell with them; the
    engine's watchdog removes the private directory (both ssh logs)."""
    server, _ = remote
    with engine_with_a_prompt(server.target, "login-killed", login=True) as engine:
        assert engine.master is None and engine.probes > 0 and alive(engine.shell)
        assert sorted(processes_with_arg(engine.control)) == sorted({engine.client, engine.side})
        engine.proc.kill()
        engine.proc.wait(10)
        wait_until(lambda: not alive(engine.shell), timeout=10, msg="the remote shell outlived the engine")
        wait_until(lambda: not processes_with_arg(engine.control), timeout=10, msg="ssh processes outlived the engine")
        wait_until(lambda: not os.path.exists(engine.control), timeout=10, msg="the private directory outlived the engine")


def test_the_check_line_reads_alike_in_every_shell() -> None:
    """One line of two commands joined by ``&&``, whose scripts are plain
    single-quoted words: nothing in them that csh (``!``) or fish (``\\\\``,
    ``\\'``) reads differently inside single quotes; then bash's own branch
    (only parsed elsewhere: test_login_shells.py runs it in each shell)."""
    line = ssh_start.login_check(inband.new_nonce())
    # (the leading space keeps it out of a history that ignores such lines)
    assert "\n" not in line and line.startswith(" /bin/sh -c '") and "' && exec sh -c '" in line
    words = re.findall(r"'([^']*)'", line)
    assert len(words) == 5 and words[2:] == ["PROMPT_COMMAND", "PS0", "PS1"]  # (quoted: see ssh_start.QUIET_PROMPT)
    words = words[:2]
    assert line == f" /bin/sh -c '{words[0]}' && exec sh -c '{words[1]}' || \\builtin unset 'PROMPT_COMMAND' 'PS0' 'PS1'"
    for word in words:
        assert "!" not in word and "\\\\" not in word and "\\'" not in word


# ----------------------------------------------------------------------
# a login shell that is not bash


@pytest.fixture(scope="module")
def sh_user() -> Iterator[tuple[str, Path]]:
    """A throwaway user whose login shell is /bin/sh (dash here), with a
    home of its own; the test sshd's one authorized key lets it in."""
    with throwaway_user("sh", "/bin/sh") as user:
        yield user


@pytest.fixture(scope="module")
def user_sshd(sh_user) -> Iterator[Sshd]:
    """Its own sshd (sessions keep the user's own HOME)."""
    yield from sshd_for_users()


def test_a_login_shell_that_is_not_bash_execs_a_login_bash(user_sshd, sh_user, opened, monkeypatch) -> None:
    name, home = sh_user
    monkeypatch.setenv("DSH_MAGICS_SSH_OPTIONS", user_sshd.client_config("sh-user"))
    (home / ".profile").write_text(f'echo "p ${{BASH_VERSION:+bash}}" >> "$HOME/reads"\n{PROFILE}')
    (home / ".bashrc").write_text('echo r >> "$HOME/reads"\n')
    (home / "reads").unlink(missing_ok=True)
    term = open_terminal(opened, user_sshd.target_for(name), "sh-login", config=LOGIN)
    res = run(term, 'echo "${BASH_VERSINFO[0]}"; shopt -q login_shell && echo login; whoami')
    assert res.output.split()[1:] == ["login", name] and int(res.output.split()[0]) >= 4, res
    # the login shell's profile, then bash's (-l): the wrapper is bash's parent, as in a login=False start
    assert (home / "reads").read_text().split() == ["p", "p", "bash", "r"]
    res = run(term, "read -r c </proc/$PPID/comm; echo $c")
    assert res.output.strip() == "sh", res
    # its side channel works (a connection of its own) and it ends with its shell
    job = term.exec("read -s -p 'pw: ' x", tty=True)
    wait_until(lambda: term.info().awaiting_input is not None or job.done, timeout=20)
    assert term.info().awaiting_input is not None and term.info().awaiting_input["secret"], term.snapshot(job)
    term.send("x", secret=True)
    assert job.wait(20)
    job = term.exec("kill -9 $$")
    assert job.wait(20) and job.result.status == "shell_exited", job.result
    wait_until(lambda: not connection_processes(term), timeout=20, msg="ssh processes of the terminal left")


def test_no_bash_there_is_a_clear_error(user_sshd, sh_user, tmp_path, opened, monkeypatch) -> None:
    """The login shell finds no ``bash`` (its PATH has only ``sh``): the
    start fails at once with the shell's own words, not a timeout."""
    name, home = sh_user
    only_sh = home / "only-sh"
    only_sh.mkdir(exist_ok=True)
    sh = only_sh / "sh"
    if not sh.exists():
        sh.symlink_to("/bin/sh")
    (home / ".profile").write_text(f"PATH={only_sh}; export PATH\n")
    monkeypatch.setenv("DSH_MAGICS_SSH_OPTIONS", user_sshd.client_config("sh-nobash"))
    with pytest.raises(TargetUnreachable) as e:
        open_terminal(opened, user_sshd.target_for(name), "sh-nobash", config=LOGIN)
    assert "no bash" in str(e.value) and "bash: not found" in str(e.value), e.value
    (home / ".profile").unlink()
