"""How a screen shows itself in the notebook, from the engine's ``screen()``
dict (what ``%bash_screen`` and a live view of a full-screen program draw):
the dict turns back into the same snapshot, the text form and the HTML keep
text literal, and a live view's screen bundle carries the job header."""

from __future__ import annotations

import html
import json
import re
import time

from dsh_magics.notebook.following import screen_bundle
from dsh_magics.notebook.screen_html import screen_html, screen_text, snapshot_from_dict
from dsh_magics.notebook.values import ScreenView
from dsh_magics.terminal import Result
from dsh_magics.terminal.screen import Screen

NASTY = "$x$ <i>it</i> &amp; \\(y\\)"
STYLED = (
    b"\x1b]2;my $title$\x07"
    b"\x1b[?1049h\x1b[?1h\x1b[H"
    b"\x1b[1;31mred\x1b[0m \x1b[7mpicked\x1b[0m \x1b[38;5;208m" + NASTY.encode() + b"\x1b[0m"
    b"\r\n\xe4\xb8\xad wide\r\n\x1b[2;3H"
)


def _screen(data: bytes = STYLED, cols: int = 40, rows: int = 5) -> Screen:
    s = Screen(cols, rows)
    s.feed(data)
    return s


def _text(fragment: str) -> str:
    body = re.sub(r"<style>.*?</style>", "", fragment)
    return html.unescape(re.sub(r"<[^>]+>", "", body))


def test_the_dict_turns_back_into_the_same_snapshot_also_through_json() -> None:
    screen = _screen()
    for styles in (True, False):
        snap = screen.snapshot(styles=styles)
        assert snapshot_from_dict(snap.to_dict()) == snap
        assert snapshot_from_dict(json.loads(json.dumps(snap.to_dict()))) == snap
    snap = screen.snapshot(styles=True)
    assert snap.alt_screen and snap.modes.app_cursor and snap.title == "my $title$"


def test_html_from_the_dict_is_the_html_from_the_snapshot() -> None:
    snap = _screen().snapshot(styles=True)
    assert screen_html(snap.to_dict(), caption="c") == screen_html(snap, caption="c")


def test_text_form_has_a_header_and_the_rows_as_they_are() -> None:
    d = _screen().snapshot().to_dict()
    text = screen_text(d, caption="session s")
    head, *rows = text.split("\n")
    assert head == "session s \u00b7 40x5, alternate screen \u2014 my $title$"
    assert rows == ["red picked " + NASTY, "\u4e2d wide"]  # trailing empty rows left out


def test_screen_view_reprs_are_literal() -> None:
    view = ScreenView("s1", _screen().snapshot(styles=True).to_dict())
    assert view.lines[0] == "red picked " + NASTY
    assert view.cursor == (1, 2) and view.alt_screen and view.title == "my $title$"
    assert repr(view).startswith("session s1 \u00b7 40x5, alternate screen")
    page = view._repr_html_()
    assert "<i>" not in page and "&lt;i&gt;" in page and "&amp;amp;" in page
    assert "tex2jax_ignore" in page and "mathjax_ignore" in page
    assert "red picked " + NASTY in _text(page)
    assert view.to_dict()["session_id"] == "s1" and view.to_dict()["lines"] == view.lines


def _running(note: str | None = None) -> Result:
    now = time.time()
    return Result(
        job_id="job-1",
        session_id="s1",
        command="less 'f $x$.txt'",
        status="running",
        exit_code=None,
        output="garbled\nlines",
        timed_out=True,
        started_at=now - 1,
        ended_at=None,
        cwd="/tmp",
        note=note,
    )


def test_a_live_screen_bundle_shows_the_header_and_the_screen_not_the_lines() -> None:
    screen = _screen().snapshot(styles=True).to_dict()
    bundle = screen_bundle(_running(), screen)
    plain, page = bundle["text/plain"], bundle["text/html"]
    assert plain.startswith("[job-1 @ s1] running for")
    assert "garbled" not in plain and "garbled" not in page
    assert "red picked " + NASTY in plain
    assert "red picked " + NASTY in _text(page)
    assert "less 'f $x$.txt'" in _text(page)
    assert "<i>" not in page and 'class="dsh-screen' in page


def test_a_finished_full_screen_job_shows_its_last_screen_literally() -> None:
    import dataclasses

    r = dataclasses.replace(
        _running(), status="completed", exit_code=0, ended_at=time.time(), timed_out=False,
        output="", screen=["top row " + NASTY, "", "bottom", "", ""],
    )  # fmt: skip
    from dsh_magics.notebook.render import result_html, result_text

    plain = result_text(r)
    assert plain.split("\n")[1:4] == ["--- the program's last screen ---", "top row " + NASTY, ""]
    assert plain.split("\n")[4] == "bottom" and "garbled" not in plain
    page = result_html(r)
    last = re.search(r'<pre class="dsh-last-screen"[^>]*>(.*?)</pre>', page, re.S)
    assert last and html.unescape(last.group(1)) == f"top row {NASTY}\n\nbottom"
    assert "<i>" not in page
    ordinary = dataclasses.replace(r, screen=None, output="just lines")
    assert "last screen" not in result_text(ordinary) + result_html(ordinary)
