"""A job may turn line editing on (``set -o vi``, ``set -o emacs``, directly
or from a sourced start-up file): it ends with its own status, the terminal
works on, and between jobs the shell reads its input without readline.

Bash switches its input to readline when ``set -o vi`` runs at the
interactive level; inside the job's ``eval`` that used to replace the text
the ``eval`` was reading, so the rest of the job's text and the end marker
were lost and the terminal stayed busy (terminal/local/shell.py, ``EDIT_ON``).
"""

from __future__ import annotations

import pytest

from dsh_magics.terminal import INTERRUPTED, Registry, Result
from dsh_magics.terminal.core import procs
from tests.conftest import wait_until

from .conftest import run

MODES = ["vi", "emacs"]


def _done(reg: Registry, command: str, session: str = "t") -> Result:
    """The job's result; a job that never ends is closed (so the test fails
    instead of leaving a busy terminal) and reported."""
    res = reg.exec(session, command, wait_ms=10_000)
    if not isinstance(res, Result):
        reg.close(session)
        pytest.fail(f"{command!r} did not end: {res}")
    return res


def _reads_without_readline(reg: Registry, session: str = "t") -> None:
    """The idle shell sits in a plain read of its own terminal input (readline
    would wait in ``pselect`` with the terminal in raw mode, where the
    engine's quiet check cannot see it)."""
    pid = reg.info(session).pid
    assert pid is not None
    wait_until(
        lambda: procs.LAYER.input_state(pid) == procs.TOP_LEVEL,
        timeout=5,
        msg="the idle shell does not read its input as a plain read",
    )


@pytest.mark.parametrize("mode", MODES)
def test_set_o_mode_then_more_on_the_same_line(fresh_reg, mode):
    res = _done(fresh_reg, f"set -o {mode}; echo after; (exit 3)")
    assert (res.status, res.exit_code, res.output) == ("completed", 3, "after\n")
    assert run(fresh_reg, "echo $?").output == "3\n"
    _reads_without_readline(fresh_reg)


@pytest.mark.parametrize("mode", MODES)
def test_the_lines_after_it_run_too(fresh_reg, mode):
    res = _done(fresh_reg, f"set -o {mode}\necho line2\nX=kept\n(exit 4)")
    assert (res.exit_code, res.output) == (4, "line2\n")
    assert run(fresh_reg, "echo $X").output == "kept\n"


def test_set_o_emacs_in_a_sourced_rc_file(fresh_reg, tmp_path):
    rc = tmp_path / "bashrc"
    rc.write_text("set -o emacs\nalias hello='echo from-rc'\necho rc-done\n")
    res = _done(fresh_reg, f"source {rc}; echo after")
    assert (res.exit_code, res.output) == (0, "rc-done\nafter\n")
    assert run(fresh_reg, "hello").output == "from-rc\n"
    _reads_without_readline(fresh_reg)


def test_a_login_profile_with_set_o_vi_sourced_again(tmp_path, monkeypatch):
    """The profile's ``set -o vi`` at start-up, and the same file sourced by
    a job (``source ~/.bashrc`` after editing it)."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bash_profile").write_text("set -o vi\nexport FROM_PROFILE=yes\n")
    monkeypatch.setenv("HOME", str(home))
    reg = Registry(login=True)
    try:
        assert _done(reg, "echo $FROM_PROFILE").output == "yes\n"
        res = _done(reg, "source ~/.bash_profile; echo again")
        assert (res.exit_code, res.output) == (0, "again\n")
        # the mode the user chose stays theirs
        assert _done(reg, "[[ -o vi ]] && echo vi").output == "vi\n"
        _reads_without_readline(reg)
    finally:
        reg.close_all()


@pytest.mark.parametrize("mode", MODES)
def test_a_second_job_runs_in_the_mode_the_first_chose(fresh_reg, mode):
    other = "emacs" if mode == "vi" else "vi"
    run(fresh_reg, f"set -o {other}")
    _done(fresh_reg, f"set -o {mode}")
    res = _done(fresh_reg, f"[[ -o {mode} ]] && echo {mode}; [[ -o {other} ]] || echo not-{other}")
    assert res.output == f"{mode}\nnot-{other}\n"
    for i in range(3):
        assert run(fresh_reg, f"echo {i}").output == f"{i}\n"
    _reads_without_readline(fresh_reg)


@pytest.mark.parametrize("mode", MODES)
def test_interrupted_while_line_editing_is_on(fresh_reg, mode):
    """A Ctrl-C aborts the job's line before the engine turns editing off:
    the shell must not be left reading its next line with readline."""
    job = fresh_reg.exec("t", f"set -o {mode}; echo go; sleep 30; echo never")
    wait_until(lambda: fresh_reg.result(job.id).output == "go\n", timeout=10, msg="job started")
    fresh_reg.interrupt("t")
    res = fresh_reg.wait(job.id, timeout=10)
    assert (res.status, res.exit_code, res.output) == (INTERRUPTED, 130, "go\n"), res
    assert run(fresh_reg, "echo $?").output == "130\n"
    _reads_without_readline(fresh_reg)
    # and again, now that the job's mode is the shell's
    job = fresh_reg.exec("t", "echo go; sleep 30")
    wait_until(lambda: fresh_reg.result(job.id).output == "go\n", timeout=10, msg="job started")
    fresh_reg.interrupt("t")
    assert fresh_reg.wait(job.id, timeout=10).status == INTERRUPTED
    assert run(fresh_reg, "[[ -o " + mode + " ]] && echo still-" + mode).output == f"still-{mode}\n"
    _reads_without_readline(fresh_reg)


def test_turning_it_off_mid_command_does_not_hang(fresh_reg):
    """The limit that stays (docs/engine.md): ``set +o emacs`` run directly by
    a job's command makes bash drop the rest of the command's text and read
    the terminal inside the ``eval``. With /proc the quiet check sees bash
    reading its own input and the job settles as an abandoned line; the
    portable layer cannot tell that read from a job's, so the job shows as
    waiting for input until an interrupt ends it. Either way the terminal
    works on."""
    job = fresh_reg.exec("t", "set +o emacs; echo off\necho dropped")
    res = fresh_reg.wait(job.id, timeout=10)  # settled, or waiting for input
    if res.status == "running":
        assert res.awaiting_input is not None, res
        fresh_reg.interrupt("t")
        res = fresh_reg.wait(job.id, timeout=10)
    else:
        assert res.note and "line editing" in res.note, res
    assert (res.status, res.output) == (INTERRUPTED, "off\n"), res
    assert run(fresh_reg, "echo next").output == "next\n"
    job = fresh_reg.exec("t", "echo go; sleep 30")
    wait_until(lambda: fresh_reg.result(job.id).output == "go\n", timeout=10, msg="job started")
    fresh_reg.interrupt("t")
    assert fresh_reg.wait(job.id, timeout=10).status == INTERRUPTED
    assert run(fresh_reg, "echo after").output == "after\n"
    _reads_without_readline(fresh_reg)
