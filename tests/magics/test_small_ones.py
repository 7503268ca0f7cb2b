"""The small surprises of issue 36, in-process IPython with real bash: an
interrupt that a job ignores says so and what next, one phrasing of the
input-wait note, aligned ``%bash_list`` columns, multi-line commands in headers."""

from __future__ import annotations

import time
from typing import Any

from IPython.utils.capture import capture_output

from dsh_magics.notebook import render
from tests.magics.conftest import magics_of


def test_an_ignored_ctrl_c_says_so_and_what_to_do_next(ip: Any, session: str) -> None:
    m = magics_of(ip)
    grace = m.interrupt_grace
    m.interrupt_grace = 0.5
    try:
        ip.run_line_magic("bash_exec", "trap '' INT; echo armed; sleep 60")
        ip.run_line_magic("bash_wait", "--until armed --timeout 20")
        start = time.monotonic()
        with capture_output() as cap:
            r = ip.run_line_magic("bash_interrupt", "")
        assert time.monotonic() - start < 5
        assert r.status == "running"
        assert "still running after 0.5s: it ignores or handles Ctrl-C" in cap.stdout
        assert f"%bash_send --session {session} --key 'ctrl-\\'" in cap.stdout
        assert f"%bash_close --session {session}" in cap.stdout
        # the advice works: SIGQUIT ends it
        ip.run_line_magic("bash_send", "--key 'ctrl-\\'")
        assert ip.run_line_magic("bash_wait", "--no-raise-error --timeout 20").done
    finally:
        m.interrupt_grace = grace


def test_one_phrasing_of_the_input_wait_note(ip: Any) -> None:
    ip.run_line_magic("bash_exec", "--tty read -p 'name? ' n")
    waited = ip.run_line_magic("bash_wait", "--timeout 20")
    # the snapshot the engine gives (its own note names the agent tool)
    snap = magics_of(ip).registry.result(waited.job_id)
    assert snap.note and "bash_send" in snap.note
    for r in (waited, snap):
        for text in (render.result_text(r), render.result_html(r)):
            assert "waits for input" in text and "answer with %bash_send TEXT" in text, text
            assert "bash_send)" not in text and "send (" not in text, text
    ip.run_line_magic("bash_send", "ada")


def test_list_columns_are_aligned(ip: Any, session: str) -> None:
    other = f"{session}-a-much-longer-name"
    ip.run_line_magic("bash_attach", f"--session {other}")
    try:
        ip.run_line_magic("bash_exec", "--timeout 20 true")
        rows = [ln for ln in repr(ip.run_line_magic("bash_list", "")).splitlines() if "[" in ln]
        mine = [ln for ln in rows if f"[{session}]" in ln or f"[{other}]" in ln]
        assert len(mine) == 2
        assert len({ln.index(" pid ") for ln in mine}) == 1, mine
        assert len({ln.index("idle") for ln in mine}) == 1, mine
    finally:
        ip.run_line_magic("bash_close", f"--session {other}")


def test_a_multi_line_command_shows_its_first_line_and_an_ellipsis(ip: Any) -> None:
    ip.run_cell_magic("bash_exec", "--timeout 20", "echo first\necho second\n")
    r = ip.run_line_magic("bash_wait", "")
    html = render.result_html(r)
    assert "$ echo first …</code>" in html and "echo firstecho" not in html
    assert render.command_header("x" * 200, 20) == "x" * 19 + " …"


class _CtrlCInExec:
    """The real engine, with a Ctrl-C landing in ``exec``: before the job is
    started (``after=False``) or right after (``after=True``)."""

    def __init__(self, registry: Any, after: bool) -> None:
        self.registry = registry
        self.after = after

    def __getattr__(self, name: str) -> Any:
        return getattr(self.registry, name)

    def exec(self, *args: Any, **kwargs: Any) -> Any:
        if self.after:
            self.registry.exec(*args, **kwargs)
        raise KeyboardInterrupt


def test_ctrl_c_while_a_wait_starts_its_job(ip: Any, session: str, capsys: Any) -> None:
    """The job a Ctrl-C caught starting is stopped and reported; none is
    reported as not started, and an earlier job is not mistaken for it."""
    from dsh_magics.notebook.magics import BashMagics

    real = magics_of(ip).registry
    ip.run_line_magic("bash_exec", "--timeout 20 true")  # an earlier job of the session
    early = BashMagics(registry=_CtrlCInExec(real, after=False))  # no shell: not one of its configurables
    early.default_session, early.live_display = session, "off"
    assert early.bash_exec("--wait sleep 30") is None
    assert "Interrupted before the command started." in capsys.readouterr().out
    late = BashMagics(registry=_CtrlCInExec(real, after=True))
    late.default_session, late.live_display = session, "off"
    r = late.bash_exec("--wait --no-raise-error sleep 30")
    # The job it started is the one handled (whether a Ctrl-C in the very
    # instant of the start stops it is the engine's matter, not checked here).
    assert r.reason == "interrupted" and r.command == "sleep 30"
