"""The user's profile runs, and our setup still wins."""

from __future__ import annotations

import os

import pytest

from dsh_magics.terminal import Registry

from .conftest import run

NASTY_PROFILE = r"""
export FROM_PROFILE=yes
PS1='\[\e[1;32m\]\u@\h \w \$ \[\e[0m\]'
PROMPT_COMMAND='echo PROMPT-NOISE'
trap 'echo DEBUG-NOISE' DEBUG
trap 'echo ERR-NOISE' ERR
set -u
bind 'set enable-bracketed-paste on' 2>/dev/null
"""


@pytest.fixture
def profiled(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bash_profile").write_text(NASTY_PROFILE)
    monkeypatch.setenv("HOME", str(home))
    reg = Registry(login=True)
    yield reg, home
    reg.close_all()


def test_login_profile_applies_but_our_setup_wins(profiled):
    reg, home = profiled
    r = run(reg, "echo $FROM_PROFILE; echo ${UNSET_VARIABLE:-ok}; false; echo after")
    assert r.output == "yes\nok\nafter\n"
    r = run(reg, "echo second")
    assert r.output == "second\n"
    text = reg.read("t").text
    assert "NOISE" not in text and "\x1b" not in text and "@" not in text


def test_history_is_not_written(profiled):
    reg, home = profiled
    run(reg, "echo secret-command")
    reg.close("t")
    hist = home / ".bash_history"
    assert not hist.exists() or "secret-command" not in hist.read_text()


def test_no_profile_mode(tmp_path, monkeypatch):
    home = tmp_path / "h"
    home.mkdir()
    (home / ".bash_profile").write_text("export FROM_PROFILE=yes\n")
    (home / ".bashrc").write_text("export FROM_RC=yes\n")
    monkeypatch.setenv("HOME", str(home))
    reg = Registry(login=False)
    try:
        r = run(reg, "echo [${FROM_PROFILE:-}${FROM_RC:-}]")
        assert r.output == "[]\n"
    finally:
        reg.close_all()


def test_pagers_are_neutralised(reg, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    r = run(
        reg,
        f"cd {repo} && git init -q && git -c user.email=a@b -c user.name=n commit -q --allow-empty -m first"
        " && git log --oneline | wc -l && git log | head -1 | cut -c1-6 && echo $PAGER $GIT_PAGER $MANPAGER",
    )
    assert r.exit_code == 0
    assert r.output.splitlines()[0] == "1"
    assert r.output.splitlines()[1] == "commit"
    assert r.output.splitlines()[2] == "cat cat cat"


def test_man_does_not_hang(reg):
    r = run(reg, "man bash 2>/dev/null | head -3; echo done")
    assert r.output.endswith("done\n")


def test_window_size_and_echo_during_a_job(reg):
    # A job sees echo on, as a person's terminal has it (so echo off means a
    # password prompt); the engine's own lines are typed with echo off.
    r = run(reg, "stty size </dev/tty; stty -a </dev/tty | grep -o -- ' -\\?echo ' | head -1")
    assert r.output.splitlines() == ["30 120", " echo "]


def test_kernel_inline_matplotlib_backend_is_not_inherited(monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    reg = Registry(login=False)
    try:
        assert run(reg, "echo [${MPLBACKEND:-}]").output == "[]\n"
    finally:
        reg.close_all()


def test_session_env_vars(reg):
    r = run(reg, "echo $DSH_MAGICS_SESSION")
    assert r.output == "t\n"
    assert os.environ.get("DSH_MAGICS_SESSION") != "t"


def test_a_hanging_profile_gives_a_timeout_error_and_leaves_nothing(tmp_path, monkeypatch):
    from dsh_magics.errors import ShellExited

    from ..conftest import pids_with_env

    home = tmp_path / "home"
    home.mkdir()
    (home / ".bash_profile").write_text("sleep 300\n")
    monkeypatch.setenv("HOME", str(home))
    reg = Registry(login=True, start_timeout=1)
    try:
        with pytest.raises(ShellExited) as err:
            reg.attach("hang")
        assert "did not finish start-up within 1s" in str(err.value)
        assert "DSH_MAGICS_LOGIN=0" in str(err.value)
        assert pids_with_env("DSH_MAGICS_SESSION", "hang") == []
    finally:
        reg.close_all()


def test_a_shell_ended_during_start_up_is_hung_up_before_it_is_killed(tmp_path, monkeypatch):
    """A profile still running when the engine gives up on start-up gets
    SIGHUP and a moment before SIGKILL, so what it holds is released. The
    profile runs a script holding a lock file that its EXIT trap removes,
    as pyenv's rehash does (killed with SIGKILL there, it left
    ~/.pyenv/shims/.pyenv-shim behind and every login shell waited 60 s)."""
    from dsh_magics.errors import ShellExited

    from ..conftest import pids_with_env

    home = tmp_path / "home"
    home.mkdir()
    lock, held = tmp_path / "lock", tmp_path / "held"
    holder = home / "holder.sh"
    holder.write_text(f"trap 'rm -f {lock}' EXIT\n: >{lock}\n: >{held}\nsleep 300\n")
    (home / ".bash_profile").write_text(f"bash {holder}\n")
    monkeypatch.setenv("HOME", str(home))
    reg = Registry(login=True, start_timeout=3)
    try:
        with pytest.raises(ShellExited, match="did not finish start-up"):
            reg.attach("holding")
        assert held.exists(), "the profile never got to hold its lock (too slow a machine?)"
        assert not lock.exists(), "the profile was killed before it could release its lock"
        assert pids_with_env("DSH_MAGICS_SESSION", "holding") == []
    finally:
        reg.close_all()


def test_stdin_guard_puts_the_terminal_back():
    """The prompt's stdin guard, run by real bash whose stdin is not a terminal
    (as after a Ctrl-C that landed in a job's ``</dev/null`` set-up), makes fd 0
    the engine's private copy again, and that lasts past the guard."""
    import subprocess

    from dsh_magics.terminal.local import shell

    script = (
        f"exec {shell.INPUT_FD}</dev/null; {shell.STDIN_GUARD}; "
        "readlink /proc/$$/fd/0"
    )
    with open("/dev/zero", "rb") as zero:
        out = subprocess.run(
            ["bash", "--noprofile", "--norc", "-c", script],
            stdin=zero, capture_output=True, text=True, timeout=30,
        )
    assert out.stdout.strip() == "/dev/null", out
