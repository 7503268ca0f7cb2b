"""host/bells.py: which BELs of a terminal's output are bells, across the
pieces it comes in (a window drawn from screens rings them itself)."""

from __future__ import annotations

import os
import pty
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_magics.host import stream
from dsh_magics.host.bells import Bells, rings
from dsh_magics.host.tty_out import TtyOut

LONG = b"x" * 100_000  # a string far longer than a title


@pytest.mark.parametrize(
    ("pieces", "rang"),
    [
        ([b"plain text\r\n"], [False]),
        ([b"\x07"], [True]),
        ([b"a\x07b\x07"], [True]),
        ([b"\x1b]2;a title\x07"], [False]),  # a title set with xterm's terminator
        ([b"\x1b]2;a title\x1b\\\x07"], [True]),  # ST ends it: the BEL after rings
        ([b"\x1b]0;split ", b"title\x07", b"\x07"], [False, False, True]),  # a string across pieces
        ([b"\x1b", b"]2;t\x07"], [False, False]),  # ESC at a piece's end
        ([b"\x1b]2;t\x1b", b"\\\x07"], [False, True]),  # ST split across pieces
        ([b"\x1bP+q\x07more\x1b\\"], [False]),  # in a DCS string
        ([b"\x1b]2;t\x18\x07"], [True]),  # CAN ends the string
        ([b"\x1b[1m\x07\x1b[0m"], [True]),  # a CSI is not a string
        ([b"\x1b\x07"], [True]),  # a C0 control in an escape is done at once
        ([b"\x1b", b"\x07"], [False, True]),  # ... also across pieces
        (
            [b"\x1b]52;c;" + LONG + b"\x07"],
            [False],
        ),  # a long string (a clipboard): its opener far back
        ([b"\x1b]52;c;", LONG, LONG + b"\x07"], [False, False, False]),
        ([LONG + b"\x1b[0m" + LONG + b"\x07"], [True]),  # a bell after long output
        ([b"\x1b]0;t\x07" * 1000 + b"\x1b[m\x07"], [True]),  # many titles, then a bell
        ([b"\x1b]0;t\x07\x07\x1b]0;unfinished"], [True]),  # a bell, then a string left open ...
        (
            [b"\x1b]0;t\x07\x07\x1b]0;unfinished", b"\x07"],
            [True, False],
        ),  # ... that the next BEL ends
        ([b"\x1b]0;t\x1b[1m x\x07"], [True]),  # as in xterm, an ESC ends the string
        ([b"\x1b]0;t", b"\x1b[0m", b"\x07"], [False, False, True]),  # ... also across pieces
        ([b"\x1b\x1b]0;t\x07"], [False]),  # ESC ESC ]: the second ESC opens the string
        ([b"\x1b]0;t\x1a\x07"], [True]),  # SUB ends it, as CAN does
        ([b"\x1b]0;t\x07" * 100_000], [False]),  # a flood of titles (past the look-by-look BELs)
        ([b"\x1b]0;t\x07" * 100 + b"\x1b]0;" + LONG + b"\x07"], [False]),  # ... one long at the end
        ([b"\x1b]0;t\x07" * 100 + b"\x1b]0;t\x18\x07"], [True]),  # ... then CAN and a bell
    ],
)
def test_bells(pieces: list[bytes], rang: list[bool]) -> None:
    bells = Bells()
    assert [bells.rings(p) for p in pieces] == rang
    assert rings(b"".join(pieces)) == any(rang)


def _reference(data: bytes) -> list[bool]:
    """A byte-by-byte parser of the same rule (host/bells.py's docstring):
    for each byte, did it ring?"""
    out, esc, string = [], False, False
    for b in data:
        rang = False
        if string:
            if b in (0x07, 0x18, 0x1A):
                string = False
            elif b == 0x1B:
                string, esc = False, True
                out.append(False)
                continue
        elif esc:
            esc = False
            if b in b"]PX^_":
                string = True
            elif b == 0x07:
                rang = True  # a C0 control in an escape is done at once
            elif b == 0x1B:
                esc = True
        elif b == 0x1B:
            esc = True
        elif b == 0x07:
            rang = True
        out.append(rang)
    return out


ALPHABET = [b"\x07", b"\x1b", b"]", b"P", b"[", b"\\", b"\x18", b"x", b"\x1b]0;", b"\x1b\\"]


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(ALPHABET), max_size=60), st.lists(st.integers(0, 200), max_size=6))
def test_bells_agree_with_a_byte_by_byte_parser_however_the_output_is_cut(parts: list[bytes], cuts: list[int]) -> None:
    data = b"".join(parts)
    rang = _reference(data)
    edges = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    bells = Bells()
    for lo, hi in pairwise(edges):
        assert bells.rings(data[lo:hi]) == any(rang[lo:hi]), (data, lo, hi)
    assert rings(data) == any(rang), data


def test_reset_forgets_an_unfinished_string() -> None:
    """A screen restarts the stream's bytes (attach/client.py ``_on_screen``):
    a title left open before it does not swallow a bell after it."""
    bells = Bells()
    assert not bells.rings(b"\x1b]0;ti")
    bells.reset()
    assert bells.rings(b"\x07")


def test_a_queue_that_begins_inside_a_title_rings_once() -> None:
    """host/stream.py ``_rings`` parses what a screen replaces as if no string
    were open before it: the rest of a title whose opener was sent before
    rings (documented in docs/attach.md: a spurious bell rather than a lost one)."""
    assert stream._rings([b"title\x07", b"output"], None, None)
    assert not stream._rings([b"\x1b]0;title\x07", b"output"], None, None)
    assert stream._rings([b"\x1b]0;title\x07"], [b"\x07"], None)
    assert stream._rings([], None, b"rang\x07")


def test_what_the_persons_terminal_had_not_taken_rings_after_the_screen() -> None:
    """host/tty_out.py ``stop`` (a screen replaces the live bytes) returns what
    the person's terminal had not taken yet, for its bells (host/stream.py)."""
    reader, tty_fd = pty.openpty()  # nobody reads ``reader``: the terminal fills up
    os.set_blocking(tty_fd, False)
    tty = TtyOut(tty_fd)
    try:
        for _ in range(10_000):  # (a pty holds far less than 40 MiB)
            if tty.queued:
                break
            tty.put(b"x" * 4096)
        assert tty.queued, "the terminal took everything"
        tty.put(b"ring\x07")
        dropped = tty.stop()
        assert dropped[-1] == b"ring\x07" and tty.queued == 0
        assert stream._rings([], None, None, dropped)
        assert not stream._rings([], None, None, dropped[:-1])
    finally:
        tty.close()
        os.close(reader)
