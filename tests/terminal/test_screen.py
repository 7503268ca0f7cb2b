"""The screen (dsh_magics.terminal.screen) fed by real programs in a real PTY
with TERM=xterm-256color, as an xterm would show them."""

from __future__ import annotations

import random
import sys

import pytest

from dsh_magics.terminal import keys
from dsh_magics.terminal.screen import Screen
from dsh_magics.terminal.snapshot import marked_text
from tests.programs import MENU
from tests.terminal.ptyprog import COLS, ROWS, Prog


@pytest.fixture
def shell(tmp_path):
    prog = Prog(["bash", "--norc", "--noprofile", "-i"], cwd=str(tmp_path))
    prog.wait_text("$")
    yield prog
    prog.close()


def test_vim_insert_and_quit_restores_the_primary_screen(shell, tmp_path):
    shell.send("echo before-vim\r")
    shell.wait(lambda s: sum("before-vim" in line for line in s.text()) == 2)
    assert not shell.screen.snapshot().alt_screen
    shell.send("vim -u NONE -N -i NONE notes.txt\r")
    shell.wait(lambda s: s.snapshot().alt_screen, msg="vim enters the alternate screen")
    shell.wait(lambda s: s.modes().app_cursor, msg="vim turns on application cursor keys")
    shell.send("i")
    shell.wait_text("-- INSERT --")
    shell.send("hello world")
    snap = shell.wait(lambda s: (sn := s.snapshot()).lines[0] == "hello world" and sn.cursor_col == 11 and sn)
    assert snap.cursor_row == 0
    assert snap.lines[1].startswith("~")
    assert shell.screen.snapshot(styles=True).lines == snap.lines
    shell.key("esc")
    shell.send(":q!\r")
    snap = shell.wait(lambda s: not (sn := s.snapshot()).alt_screen and sn)
    shell.wait(lambda s: not s.modes().app_cursor, msg="vim turns application cursor keys off")
    snap = shell.screen.snapshot()
    assert snap.used_alt_screen
    assert sum("before-vim" in line for line in snap.lines) == 2
    assert not any("hello world" in line or "INSERT" in line for line in snap.lines)
    assert not (tmp_path / "notes.txt").exists()


def test_less_page_end_quit(shell):
    shell.send("echo before-less\r")
    shell.wait(lambda s: sum("before-less" in line for line in s.text()) == 2)
    shell.send("seq 1 500 | less\r")
    shell.wait(lambda s: s.snapshot().alt_screen and s.text()[0] == "1")
    shell.key("pgdn")
    shell.wait(lambda s: s.text()[0] not in ("1", ""), msg="page down")
    shell.send("G")
    shell.wait(lambda s: "500" in s.text()[ROWS - 2] and "(END)" in s.text()[ROWS - 1], msg="G shows the end")
    styled = shell.screen.snapshot(styles=True)
    assert styled.lines == shell.screen.snapshot().lines
    assert styled.styles is not None and any(r.inverse for r in styled.styles[ROWS - 1])  # less's prompt
    shell.send("q")
    snap = shell.wait(lambda s: not (sn := s.snapshot()).alt_screen and sn)
    assert snap.used_alt_screen
    assert sum("before-less" in line for line in snap.lines) == 2
    assert "500" not in snap.lines


def test_top_header_then_q(shell):
    shell.send("top -d 5\r")
    snap = shell.wait(lambda s: (sn := s.snapshot()).lines[0].startswith("top - ") and sn)
    assert any(line.lstrip().startswith("PID") for line in snap.lines)
    # procps top draws on the main screen (no alternate screen), keypad on.
    assert snap.modes.app_cursor
    shell.send("q")
    snap = shell.wait(lambda s: (sn := s.snapshot()).lines[sn.cursor_row] == "$" and sn, msg="prompt back")
    assert not snap.modes.app_cursor


def test_curses_menu_keypad_turns_on_app_cursor_and_keys_follow(shell, tmp_path):
    (tmp_path / "menu.py").write_text(MENU)
    shell.send(f"{sys.executable} menu.py\r")
    shell.wait_text("? Select a framework")
    assert shell.wait(lambda s: s.modes().app_cursor), "keypad(True) sends DECCKM"
    snap = shell.screen.snapshot(styles=True)
    assert "\u27e6react\u27e7" in marked_text(snap)
    shell.key("down", "down")
    snap = shell.wait(lambda s: "\u27e6svelte\u27e7" in marked_text(sn := s.snapshot(styles=True)) and sn)
    text = marked_text(snap)
    assert "\u27e6react\u27e7" not in text and "  react" in text
    shell.key("enter")
    shell.wait_text("picked svelte")
    assert not shell.screen.snapshot().alt_screen
    assert not shell.screen.modes().app_cursor


def test_wide_characters_and_cursor_in_cells(shell):
    shell.send("printf '\\x1b[2J\\x1b[Ha\\xe4\\xb8\\xadb\\xe6\\x96\\x87'; read -r\r")
    snap = shell.wait(lambda s: (sn := s.snapshot()).lines[0] == "a\u4e2db\u6587" and sn)
    assert (snap.cursor_row, snap.cursor_col) == (0, 6)
    runs = shell.screen.snapshot(styles=True).styles
    assert runs is not None and runs[0][0].text.startswith("a\u4e2db\u6587")
    shell.send("\r")


def test_scroll_region_keeps_rows_outside_it(shell):
    script = (
        f"printf '\\x1b[2J\\x1b[Htop line\\x1b[{ROWS};1Hbottom line\\x1b[2;5r\\x1b[5;1H'; "
        "for i in 1 2 3 4 5 6; do printf '\\nL%s' $i; done; printf '\\x1b[r'; read -r\r"
    )
    shell.send(script)
    snap = shell.wait(lambda s: "L6" in s.text()[4] and s.snapshot())
    assert snap.lines[0] == "top line"
    assert [line.strip() for line in snap.lines[1:5]] == ["L3", "L4", "L5", "L6"]
    assert snap.lines[ROWS - 1] == "bottom line"
    shell.send("\r")


def test_carriage_return_redraws_and_title(shell):
    shell.send("printf '\\x1b]0;my title\\x07'; for p in 10 50 99; do printf '\\rprogress %s%%' $p; done; read -r\r")
    snap = shell.wait(lambda s: any(line == "progress 99%" for line in s.text()) and s.snapshot())
    assert snap.title == "my title"
    assert not any("progress 10" in line for line in snap.lines)
    shell.send("\r")


def test_sgr_styles_per_cell(shell):
    shell.send("printf '\\x1b[2J\\x1b[H\\x1b[1;31;44mBR\\x1b[0;7mIN\\x1b[0;4mUL\\x1b[0m\\x1b[38;5;208mX\\x1b[38;2;1;2;3mY\\x1b[0m'; read -r\r")
    snap = shell.wait(lambda s: (sn := s.snapshot(styles=True)).lines[0] == "BRINULXY" and sn)
    assert snap.styles is not None
    runs = {r.text: r for r in snap.styles[0]}
    assert runs["BR"].bold and runs["BR"].fg == 1 and runs["BR"].bg == 4
    assert runs["IN"].inverse and not runs["IN"].bold
    assert runs["UL"].underline
    assert runs["X"].fg == 208
    assert runs["Y"].fg == "#010203"
    shell.send("\r")


def test_keypad_and_bracketed_paste_modes(shell):
    shell.send("printf '\\x1b=\\x1b[?2004h'; read -r\r")
    shell.wait(lambda s: s.modes().app_keypad and s.modes().bracketed_paste)
    assert keys.encode("kp-5", shell.screen.modes()) == b"\x1bOu"
    shell.send("\r")
    shell.send("printf '\\x1b>\\x1b[?2004l'; read -r\r")
    shell.wait(lambda s: not s.modes().app_keypad and not s.modes().bracketed_paste)
    shell.send("\r")


def test_replies_a_real_terminal_would_send(shell):
    screen = Screen(COLS, ROWS)
    screen.feed(b"\x1b[3;5H\x1b[6n")
    assert screen.take_replies() == b"\x1b[3;5R"
    assert screen.take_replies() == b""


def test_resize_reflows_to_the_new_size():
    screen = Screen(20, 5)
    screen.feed(b"hello\r\nworld")
    screen.resize(30, 8)
    snap = screen.snapshot()
    assert (snap.cols, snap.rows, len(snap.lines)) == (30, 8, 8)
    assert snap.lines[:2] == ("hello", "world")


# -- lazy feeding -----------------------------------------------------------


def _eager(data: bytes, cols: int = COLS, rows: int = ROWS) -> Screen:
    """Feeds in pieces of a few lines and settles each, so nothing is skipped."""
    screen = Screen(cols, rows)
    for i in range(0, len(data), 64):
        screen.feed(data[i : i + 64])
        screen.settle()
    assert screen.skipped_bytes == 0
    return screen


def _same(a: Screen, b: Screen) -> None:
    sa, sb = a.snapshot(styles=True), b.snapshot(styles=True)
    assert sa == sb
    assert a.snapshot().lines == sa.lines  # the text-only rows agree with the runs


def test_lazy_skip_of_real_seq_output_gives_the_same_screen():
    prog = Prog(["seq", "1", "200000"])
    try:
        prog.wait(lambda s: b"200000\r\n" in prog.raw[-16:], msg="seq finished")
    finally:
        prog.close()
    lazy = prog.screen
    snap = lazy.snapshot()
    assert lazy.skipped_bytes > len(prog.raw) // 2
    assert snap.lines[ROWS - 2] == "200000" and snap.lines[0] == str(200000 - ROWS + 2)
    assert (snap.cursor_row, snap.cursor_col) == (ROWS - 1, 0)
    _same(lazy, _eager(bytes(prog.raw)))


def test_lazy_skip_keeps_colours_set_before_the_plain_stretch():
    data = b"\x1b[1;32m" + b"".join(b"line %d\r\n" % i for i in range(5000)) + b"tail"
    lazy = Screen(COLS, ROWS)
    for i in range(0, len(data), 4095):  # as a PTY hands it over
        lazy.feed(data[i : i + 4095])
    lazy.settle()
    assert lazy.skipped_bytes > 0
    _same(lazy, _eager(data))


def test_lazy_skip_with_bare_line_feeds_starts_the_tail_at_column_0():
    """Raw-mode output (no CR before LF): the tail's columns carry over from
    the cut, where the real cursor is at column 0 after the CR LF."""
    head = b"\x1b[1mabc"
    stretch = b"x\n" * 3000 + b"cut\r\n" + b"y\n" * 30
    lazy = Screen(40, 10)
    lazy.feed(head)
    for i in range(0, len(stretch), 4095):
        lazy.feed(stretch[i : i + 4095])
    lazy.settle()
    assert lazy.skipped_bytes > 0
    _same(lazy, _eager(head + stretch, 40, 10))


@pytest.mark.parametrize(
    "setup",
    [
        b"\x1b[2J\x1b[Hheader\x1b[2;10r\x1b[10;1H",  # scroll region: rows outside it stay
        b"\x1b[?69h\x1b[5;30s",  # left/right margins
        b"\x1b[?7h\x1b[?45h",  # reverse wraparound: a backspace can go up a row
    ],
)
def test_lazy_skip_not_used_when_line_feeds_may_not_scroll_the_whole_screen(setup):
    data = setup + b"".join(b"row %d\r\n" % i for i in range(5000))
    lazy = Screen(COLS, ROWS)
    for i in range(0, len(data), 4095):
        lazy.feed(data[i : i + 4095])
    lazy.settle()
    assert lazy.skipped_bytes == 0
    _same(lazy, _eager(data))


def test_lazy_skip_after_a_sequence_split_across_feeds():
    lazy = Screen(COLS, ROWS)
    lazy.feed(b"\x1b[3")  # a CSI cut in two reads
    lazy.settle()
    rest = b"1m" + b"".join(b"n %d\r\n" % i for i in range(5000))
    lazy.feed(rest)
    lazy.settle()
    _same(lazy, _eager(b"\x1b[3" + rest))


@pytest.mark.parametrize("seed", range(12))
def test_lazy_equals_eager_on_random_output(seed):
    rng = random.Random(seed)
    pieces = [
        b"word ",
        b"\r\n",
        b"\n",
        b"\r",
        b"\t",
        b"\x08",
        "wide \u4e2d ".encode(),
        b"\x1b[1;31m",
        b"\x1b[0m",
        b"\x1b[K",
        b"\x1b[5;3H",
        b"\x1b[2;8r",
        b"\x1b[r",
        b"\x1b[?1049h",
        b"\x1b[?1049l",
        b"x" * 100,
        b"\x1b)0\x0eqqq",  # SO: line drawing from G1, a plain-looking byte that is not plain
        b"\x0f",
    ]
    weights = [20, 30, 3, 3, 2, 1, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2, 1, 1]
    data = b"".join(rng.choices(pieces, weights, k=6000))
    lazy = Screen(40, 10)
    for i in range(0, len(data), 4096):
        lazy.feed(data[i : i + 4096])
    _same(lazy, _eager(data, 40, 10))


def test_used_alt_screen_seen_inside_one_batch_and_cleared():
    screen = Screen(COLS, ROWS)
    screen.feed(b"\x1b[?1049hfull screen\x1b[?1049l")
    assert screen.used_alt_screen
    assert not screen.snapshot().alt_screen
    screen.clear_used_alt_screen()
    assert not screen.used_alt_screen
    screen.feed(b"\x1b[?10")
    screen.feed(b"49h")
    assert screen.used_alt_screen and screen.snapshot().alt_screen


def test_snapshot_to_dict_is_plain_data():
    import json

    screen = Screen(10, 3)
    screen.feed(b"\x1b]2;t\x07\x1b[7mab")
    d = screen.snapshot(styles=True).to_dict()
    assert json.loads(json.dumps(d)) == d
    assert d["lines"] == ["ab", "", ""]
    assert d["styles"][0][0] == {"text": "ab", "col": 0, "inverse": True}
    assert d["modes"] == {"app_cursor": False, "app_keypad": False, "bracketed_paste": False}


def test_the_engines_in_band_markers_leave_no_trace():
    """The core can feed raw PTY bytes: its markers are OSC strings the
    emulator drops, whatever the read boundaries."""
    from dsh_magics.terminal.core import markers

    marker = markers.PREFIX + b"B;0123456789abcdef\x07"
    data = b"a" + marker + b"b" + markers.PREFIX + b"P\x07c"
    for cut in range(len(data)):
        screen = Screen(40, 3)
        screen.feed(data[:cut])
        screen.settle()
        screen.feed(data[cut:])
        snap = screen.snapshot()
        assert snap.lines[0] == "abc" and snap.cursor_col == 3, cut
        assert screen.take_replies() == b""


def test_a_snapshot_is_reused_until_something_changes():
    screen = Screen(20, 4)
    screen.feed(b"\x1b[7mone")
    styled = screen.snapshot(styles=True)
    assert screen.snapshot(styles=True) is styled
    plain = screen.snapshot()
    assert plain.styles is None and plain.lines == styled.lines
    screen.feed(b"two")
    assert screen.snapshot().lines[0] == "onetwo"
    screen.resize(30, 5)
    assert screen.snapshot().cols == 30
    screen.feed(b"\x1b[?1049h\x1b[?1049l")
    assert screen.snapshot().used_alt_screen
    screen.clear_used_alt_screen()
    assert not screen.snapshot().used_alt_screen
    screen.reset()
    assert screen.snapshot().lines[0] == ""


def test_lazy_skip_of_plain_output_followed_by_escape_codes():
    """A job's plain output, then its end (a colour, a marker): the plain
    stretch is still skipped where it can be."""
    body = b"".join(b"out %d\r\n" % i for i in range(20000))
    lazy = Screen(COLS, ROWS)
    for i in range(0, len(body), 4095):
        lazy.feed(body[i : i + 4095])
    lazy.feed(b"\x1b[1mdone\x1b[0m\x1b]6973;P\x07")
    lazy.settle()
    assert lazy.skipped_bytes > len(body) // 2
    _same(lazy, _eager(body + b"\x1b[1mdone\x1b[0m\x1b]6973;P\x07"))


@pytest.mark.parametrize("size", [(0, 24), (80, 0), (10_001, 24), (80, -1), (80.0, 24), (True, 24)])
def test_a_bad_size_is_a_clear_error_and_the_screen_keeps_working(size):
    with pytest.raises(ValueError, match="must be a whole number from 1 to 10000"):
        Screen(*size)
    screen = Screen(20, 4)
    screen.feed(b"kept")
    with pytest.raises(ValueError):
        screen.resize(*size)
    assert screen.snapshot().lines[0] == "kept" and screen.size == (20, 4)
