"""Named keys (dsh_magics.terminal.keys): xterm's bytes in each mode, checked
against a table and against what real programs in a real PTY understand."""

from __future__ import annotations

import os
import sys
import textwrap

import pytest

from dsh_magics.terminal import interaction, keys
from dsh_magics.terminal.snapshot import Modes
from tests.terminal.ptyprog import Prog

APP = Modes(app_cursor=True, app_keypad=True)

#: xterm's encodings (ctlseqs, "PC-Style Function Keys"), normal and application mode.
XTERM = {
    "up": (b"\x1b[A", b"\x1bOA"),
    "down": (b"\x1b[B", b"\x1bOB"),
    "right": (b"\x1b[C", b"\x1bOC"),
    "left": (b"\x1b[D", b"\x1bOD"),
    "home": (b"\x1b[H", b"\x1bOH"),
    "end": (b"\x1b[F", b"\x1bOF"),
    "insert": (b"\x1b[2~",) * 2,
    "delete": (b"\x1b[3~",) * 2,
    "pgup": (b"\x1b[5~",) * 2,
    "pgdn": (b"\x1b[6~",) * 2,
    "f1": (b"\x1bOP",) * 2,
    "f4": (b"\x1bOS",) * 2,
    "f5": (b"\x1b[15~",) * 2,
    "f6": (b"\x1b[17~",) * 2,
    "f10": (b"\x1b[21~",) * 2,
    "f11": (b"\x1b[23~",) * 2,
    "f12": (b"\x1b[24~",) * 2,
    "backspace": (b"\x7f",) * 2,
    "tab": (b"\t",) * 2,
    "shift-tab": (b"\x1b[Z",) * 2,
    "enter": (b"\r",) * 2,
    "esc": (b"\x1b",) * 2,
    "space": (b" ",) * 2,
    "ctrl-a": (b"\x01",) * 2,
    "ctrl-c": (b"\x03",) * 2,
    "ctrl-z": (b"\x1a",) * 2,
    "alt-x": (b"\x1bx",) * 2,
    "kp-0": (b"0", b"\x1bOp"),
    "kp-9": (b"9", b"\x1bOy"),
    "kp-enter": (b"\r", b"\x1bOM"),
    "kp-minus": (b"-", b"\x1bOm"),
}


@pytest.mark.parametrize("name", sorted(XTERM))
def test_xterm_bytes_in_both_modes(name):
    normal, app = XTERM[name]
    assert keys.encode(name) == normal
    assert keys.encode(name, Modes()) == normal
    assert keys.encode(name, APP) == app
    assert keys.encode(name.upper(), APP) == app


def test_cursor_keys_follow_only_cursor_mode_and_keypad_only_keypad_mode():
    cursor_only = Modes(app_cursor=True)
    assert keys.encode("up", cursor_only) == b"\x1bOA"
    assert keys.encode("kp-1", cursor_only) == b"1"
    keypad_only = Modes(app_keypad=True)
    assert keys.encode("up", keypad_only) == b"\x1b[A"
    assert keys.encode("kp-1", keypad_only) == b"\x1bOq"


def test_the_engines_named_keys_mean_the_same():
    for name, data in interaction.KEYS.items():
        assert keys.encode(name) == data, name
        assert keys.is_key(name)


def test_every_valid_name_encodes_and_all_letters_are_there():
    for name in keys.VALID_KEYS:
        assert keys.encode(name) and keys.encode(name, APP)
    for c in "abcdefghijklmnopqrstuvwxyz":
        assert f"ctrl-{c}" in keys.VALID_KEYS and f"alt-{c}" in keys.VALID_KEYS
    assert [f"f{n}" for n in range(1, 13)] == [k for k in keys.VALID_KEYS if k[0] == "f" and k[1:].isdigit()]


def test_invalid_names_are_listed_without_raising():
    assert keys.invalid(["down", "DOWN", "enter"]) == []
    assert keys.invalid(["down", "dwn", 3, None, "ctrl-1"]) == ["dwn", "3", "None", "ctrl-1"]
    message = keys.describe_valid()
    for word in ("pgup", "shift-tab", "f1-f12", "ctrl-a..ctrl-z", "alt-a..alt-z"):
        assert word in message
    with pytest.raises(ValueError, match="not a named key"):
        keys.encode("dwn")


def _expand(described: str) -> list[str]:
    """The names a describe_valid() text stands for (its ranges spelled out)."""
    out: list[str] = []
    for part in described.split(", "):
        if ".." in part:
            a, b = part.split("..")
            prefix = a[:-1]
            out += [prefix + chr(c) for c in range(ord(a[-1]), ord(b[-1]) + 1)]
        elif part[0] == "f" and "-" in part and part[1].isdigit():
            a, b = part.split("-")
            out += [f"f{n}" for n in range(int(a[1:]), int(b[1:]) + 1)]
        else:
            out.append(part)
    return out


def test_the_described_names_are_exactly_the_keys_but_aliases():
    described = _expand(keys.describe_valid())
    assert len(described) == len(set(described))
    assert set(described) == set(keys.VALID_KEYS) - set(keys.ALIASES)
    for alias, name in keys.ALIASES.items():
        assert keys.encode(alias) == keys.encode(name) and keys.encode(alias, APP) == keys.encode(name, APP)


def test_several_keys_in_order():
    assert keys.encode_all(["down", "down", "enter"], APP) == b"\x1bOB\x1bOB\r"


READER = textwrap.dedent(
    """
    import curses
    def main(win):
        win.keypad(True)
        names = []
        while len(names) < 12:
            k = win.getch()
            names.append(curses.keyname(k).decode().removeprefix("KEY_"))
        return names
    print("got:", " ".join(curses.wrapper(main)))
    """
)


def test_curses_decodes_every_key_we_send_in_its_mode(tmp_path):
    """curses (keypad on, so application cursor mode) reads our bytes back
    as the keys we named, from xterm-256color's terminfo."""
    (tmp_path / "reader.py").write_text(READER)
    prog = Prog([sys.executable, str(tmp_path / "reader.py")], cwd=str(tmp_path))
    try:
        prog.wait(lambda s: s.modes().app_cursor, msg="curses keypad mode")
        prog.key("up", "down", "left", "right", "home", "end", "pgup", "pgdn", "delete", "f1", "f5", "shift-tab")
        prog.wait(lambda s: any("got:" in line for line in s.text()), msg="reader done")
        line = next(line for line in prog.screen.text() if "got:" in line)
    finally:
        prog.close()
    assert line.split()[1:] == [
        "UP", "DOWN", "LEFT", "RIGHT", "HOME", "END", "PPAGE", "NPAGE", "DC", "F(1)", "F(5)", "BTAB",
    ]  # fmt: skip


def test_normal_mode_arrows_reach_a_line_editor(tmp_path):
    """bash's readline (no keypad mode) takes the ESC [ form: Up recalls history."""
    env_home = str(tmp_path)
    os.makedirs(env_home, exist_ok=True)
    prog = Prog(["bash", "--norc", "--noprofile", "-i"], cwd=env_home)
    try:
        prog.wait_text("$")
        prog.send("echo recalled-$((40+2))\r")
        prog.wait_text("recalled-42")
        assert not prog.screen.modes().app_cursor
        prog.key("up")
        prog.wait(lambda s: s.text()[s.snapshot().cursor_row].endswith("echo recalled-$((40+2))"))
        prog.key("enter")
        prog.wait(lambda s: sum("recalled-42" in line for line in s.text()) == 2)
    finally:
        prog.close()
