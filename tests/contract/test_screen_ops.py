"""``screen`` and ``resize`` on every backend: the screen is what an xterm of
the terminal's size shows, and a resize reaches the program as SIGWINCH."""

from __future__ import annotations

import json

import pytest

from dsh_magics.errors import DshError
from dsh_magics.terminal import Engine, Result

from ..conftest import wait_until


def _done(engine: Engine, session: str, command: str, tty: bool = False) -> Result:
    out = engine.exec(session, command, wait_ms=20_000, tty=tty)
    assert isinstance(out, Result), f"{command!r} did not finish in 20 s"
    return out


def test_screen_shows_the_output_with_cursor_title_and_styles(engine: Engine) -> None:
    engine.attach("c-scr")
    _done(engine, "c-scr", r"printf '\033[H\033[2J\033]2;the title\007\033[7mSEL\033[m plain\nnext'")
    snap = engine.screen("c-scr")
    assert json.loads(json.dumps(snap)) == snap
    cols, rows = engine.config.cols, engine.config.rows
    assert (snap["cols"], snap["rows"]) == (cols, rows) and len(snap["lines"]) == rows
    assert snap["lines"][:2] == ["SEL plain", "next"]
    assert (snap["cursor_row"], snap["cursor_col"]) == (1, 4)
    assert snap["title"] == "the title" and snap["alt_screen"] is False
    assert "styles" not in snap
    styled = engine.screen("c-scr", styles=True)
    assert styled["styles"][0][0] == {"text": "SEL", "col": 0, "inverse": True}
    engine.close("c-scr")


def test_a_tty_job_sees_a_capable_term_and_others_stay_quiet(engine: Engine) -> None:
    engine.attach("c-term")
    cols, rows = engine.config.cols, engine.config.rows
    res = _done(engine, "c-term", 'true; echo "$TERM"; sh -c \'echo "$TERM"\'; stty size', tty=True)
    assert res.output == f"xterm-256color\nxterm-256color\n{rows} {cols}\n"
    assert _done(engine, "c-term", 'echo "$TERM"; sh -c \'echo "$TERM"\'').output == "dumb\ndumb\n"
    engine.close("c-term")


def test_the_alternate_screen_is_seen_and_kept_out_of_the_output(engine: Engine) -> None:
    engine.attach("c-alt")
    job = engine.exec(
        "c-alt", r"printf 'before\n\033[?1049h\033[HDRAWN\n'; read -r x; printf '\033[?1049lafter\n'", tty=True
    )
    engine.wait(job.id, timeout=20, idle_ms=300, on_input=False)
    snap = engine.screen("c-alt")
    assert snap["alt_screen"] is True and snap["lines"][0] == "DRAWN"
    res = engine.send("c-alt", "", wait_ms=20_000)
    assert res.done and res.output.count("DRAWN") == 0
    final = engine.result(job.id)
    assert final.output == "before\nafter\n"
    assert final.screen is not None and final.screen[0] == "DRAWN"
    assert "full screen" in (final.note or "")
    assert engine.screen("c-alt")["alt_screen"] is False
    engine.close("c-alt")


def test_resize_changes_the_pty_and_the_screen(engine: Engine) -> None:
    engine.attach("c-rsz")
    assert engine.resize("c-rsz", 100, 40) is True
    # A remote client passes the size on by itself, a moment later
    # (docs/engine.md, resize); a local PTY has it at once.
    wait_until(lambda: _done(engine, "c-rsz", "stty size", tty=True).output == "40 100\n", timeout=20)
    snap = engine.screen("c-rsz")
    assert (snap["cols"], snap["rows"]) == (100, 40) and len(snap["lines"]) == 40
    engine.close("c-rsz")


def test_a_running_program_gets_sigwinch_on_resize(engine: Engine) -> None:
    engine.attach("c-winch")
    job = engine.exec(
        "c-winch",
        r"""bash -c 'trap "echo winch \$(stty size); kill \$p; exit 0" WINCH; sleep 60 & p=$!; echo ready; wait'""",
        tty=True,
    )
    assert engine.wait(job.id, timeout=20, until="^ready").reason == "matched"
    engine.resize("c-winch", 90, 20)
    res = engine.wait(job.id, timeout=20)
    assert res.done and res.exit_code == 0
    assert res.output == "ready\nwinch 20 90\n"
    engine.close("c-winch")


@pytest.mark.parametrize(
    ("call", "code", "message"),
    [
        (lambda e: e.resize("c-scr-err", 1, 24), "INVALID_ARGUMENT", "cols must be an integer from 2 to 10000"),
        (lambda e: e.resize("c-scr-err", 80, "24"), "INVALID_ARGUMENT", "rows must be an integer from 2 to 10000"),
        (lambda e: e.screen("c-scr-err", styles="yes"), "INVALID_ARGUMENT", "styles must be true or false"),
        (lambda e: e.screen("c-scr-none"), "NO_SUCH_SESSION", None),
        (lambda e: e.resize("c-scr-none", 80, 24), "NO_SUCH_SESSION", None),
    ],
    ids=["cols", "rows", "styles", "screen-none", "resize-none"],
)
def test_screen_and_resize_errors(engine: Engine, call, code: str, message: str | None) -> None:
    with pytest.raises(DshError) as e:
        call(engine)
    assert e.value.code == code
    if message is not None:
        assert e.value.message == message


@pytest.mark.parametrize(("mode", "sent"), [("l", "$'\\E[B\\E[D'"), ("h", "$'\\EOB\\EOD'")])
def test_keys_follow_the_screens_cursor_key_mode(engine: Engine, mode: str, sent: str) -> None:
    """``keys`` go out in order, as an xterm sends them in the mode the
    program set (DECCKM, ``ESC [ ? 1 h``, as curses' keypad() does)."""
    engine.attach("c-keys")
    job = engine.exec(
        "c-keys", f"stty -echo; printf '\\033[?1{mode}ready\\n'; IFS= read -rn6 k; printf '%q\\n' \"$k\"", tty=True
    )
    assert engine.wait(job.id, timeout=20, until="^ready").reason == "matched"
    assert engine.screen("c-keys")["modes"]["app_cursor"] is (mode == "h")
    res = engine.send("c-keys", keys=["down", "left"], wait_ms=20_000)
    assert res.done and res.output.splitlines()[-1] == sent
    assert res.inputs[-1]["key"] == "down left"
    engine.close("c-keys")


def test_bad_key_names_are_refused_with_the_valid_names(engine: Engine) -> None:
    engine.attach("c-badkeys")
    job = engine.exec("c-badkeys", "read -r x", tty=True)
    with pytest.raises(DshError) as e:
        engine.send("c-badkeys", keys=["down", "sideways"])
    assert e.value.code == "INVALID_ARGUMENT"
    assert "'sideways'" in e.value.message and "pgdn" in e.value.message and "f1-f12" in e.value.message
    with pytest.raises(DshError) as e:
        engine.send("c-badkeys", text="x", keys=["down"])
    assert e.value.code == "INVALID_ARGUMENT"
    assert engine.send("c-badkeys", "fine", wait_ms=20_000).done
    assert engine.result(job.id).status == "completed"
    engine.close("c-badkeys")


def test_wait_until_screen_matches_a_row_of_the_screen(engine: Engine) -> None:
    """A full-screen program's drawing is not in the output, so a wait on
    the screen is how to see it appear."""
    engine.attach("c-wscr")
    job = engine.exec(
        "c-wscr", r"printf '\033[?1049h\033[5;3Hpick: [x] third\033[H'; read -r x; printf '\033[?1049l'", tty=True
    )
    res = engine.wait(job.id, timeout=20, until_screen=r"^\s*pick: \[x\] (\w+)$", on_input=False)
    assert res.reason == "matched" and not res.done
    assert res.match_text == "  pick: [x] third" and res.match_line is None
    with pytest.raises(DshError) as e:
        engine.wait(job.id, timeout=1, until_screen="(")
    assert e.value.code == "INVALID_ARGUMENT" and e.value.message.startswith("until_screen is not a valid")
    assert engine.send("c-wscr", "", wait_ms=20_000).done
    engine.close("c-wscr")
