"""The bells in a terminal's output, where the output's bytes do not reach the person's terminal.

Two places need them. A window drawn from the emulator's screens
(attach/client.py: a window of another size than the terminal's) never writes
the output's bytes, and a screen has no bell in it: without this, a program's
``printf '\\a'``, readline's bell at a Tab with several matches, and the
host's ``tty_bell`` held for a screen the client then painted drawn
(host/stream.py ``go``) were all dropped there. And a screen that replaces
pieces (host/stream.py: a resize, an alternate-screen switch, a viewer fallen
behind) drops their bytes: their bells go on after the screen.
:class:`Bells` finds each BEL that is a bell, not the end of a control string
(``ESC ] 2 ; title BEL`` sets a title and rings nothing), across the pieces
the output comes in. Pinned by
tests/attach/test_handover_edges.py::test_a_bell_rings_in_a_window_drawn_from_screens
and tests/attach/test_bells.py.
"""

from __future__ import annotations

import re

#: The bytes that can change what a BEL means: BEL, ESC, and CAN and SUB (which end any sequence).
_SPECIAL = re.compile(rb"[\x07\x18\x1a\x1b]")

#: What follows ESC to open a control string: OSC, DCS, APC, PM, SOS.
_STRINGS = frozenset(b"]P_^X")

_BEL, _ESC, _ST_END = 0x07, 0x1B, ord("\\")


class Bells:
    """Counts the bells in a stream of output pieces (module docstring)."""

    def __init__(self) -> None:
        self._esc = False  # the last byte seen was an ESC
        self._string = False  # inside a control string (its BEL or ST ends it)

    def feed(self, data: bytes) -> int:
        """How many bells ``data`` rings, given the pieces before it."""
        if not (self._esc or self._string) and b"\x07" not in data and b"\x1b" not in data:
            return 0  # the usual piece: nothing to look at
        rings = 0
        start = 0
        if self._esc and data:
            self._after_esc(data[0])
            start = 1
        skip = -1
        for m in _SPECIAL.finditer(data, start):
            i = m.start()
            if i == skip:
                continue  # the byte after an ESC, taken with it
            c = data[i]
            if c == _BEL:
                if self._string:
                    self._string = False  # the string's end (xterm's OSC terminator)
                else:
                    rings += 1
            elif c == _ESC:
                if i + 1 < len(data) and data[i + 1] == _BEL and not self._string:
                    continue  # a C0 control inside an escape is done as it comes: the BEL rings
                if i + 1 < len(data):
                    self._after_esc(data[i + 1])
                    skip = i + 1
                else:
                    self._esc = True
            else:  # CAN, SUB: any sequence ends
                self._string = False
        return rings

    def _after_esc(self, c: int) -> None:
        self._esc = False
        if self._string:
            if c == _ST_END:
                self._string = False  # ST (ESC \\)
        elif c in _STRINGS:
            self._string = True


__all__ = ["Bells"]
