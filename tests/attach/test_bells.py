"""host/bells.py: which BELs of a terminal's output are bells, across the
pieces it comes in (a window drawn from screens rings them itself)."""

from __future__ import annotations

import pytest

from dsh_magics.host.bells import Bells


@pytest.mark.parametrize(
    ("pieces", "rings"),
    [
        ([b"plain text\r\n"], 0),
        ([b"\x07"], 1),
        ([b"a\x07b\x07"], 2),
        ([b"\x1b]2;a title\x07"], 0),  # a title set with xterm's terminator
        ([b"\x1b]2;a title\x1b\\\x07"], 1),  # ST ends it: the BEL after rings
        ([b"\x1b]0;split ", b"title\x07", b"\x07"], 1),  # a string across pieces
        ([b"\x1b", b"]2;t\x07"], 0),  # ESC at a piece's end
        ([b"\x1bP+q\x07more\x1b\\"], 0),  # in a DCS string
        ([b"\x1b]2;t\x18\x07"], 1),  # CAN ends the string
        ([b"\x1b[1m\x07\x1b[0m"], 1),  # a CSI is not a string
        ([b"\x1b\x07"], 1),  # a C0 control in an escape is done at once
    ],
)
def test_bells(pieces: list[bytes], rings: int) -> None:
    bells = Bells()
    assert sum(bells.feed(p) for p in pieces) == rings
