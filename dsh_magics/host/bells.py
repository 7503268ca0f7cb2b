"""The bells in a terminal's output, where the output's bytes do not reach the person's terminal.

Two places need them. A window drawn from the emulator's screens
(attach/client.py: a window of another size than the terminal's) never writes
the output's bytes, and a screen has no bell in it: without this, a program's
``printf '\\a'``, readline's bell at a Tab with several matches, and the
host's ``tty_bell`` held for a screen the client then painted drawn
(host/stream.py ``go``) were all dropped there. And a screen that replaces
pieces (host/stream.py: a resize, an alternate-screen switch, a viewer fallen
behind) drops their bytes: their bells go on after the screen.

:class:`Bells` says whether a piece rings: whether one of its BELs is a bell,
not the end of a control string (``ESC ] 2 ; title BEL`` sets a title and
rings nothing), across the pieces the output comes in. The rule is xterm's: a
control string runs from its opener (``ESC`` and one of ``]P_^X``: OSC, DCS,
SOS, PM, APC) to the first BEL, CAN, SUB or ESC (ST is ``ESC \\``; any other
ESC ends the string too and starts a sequence of its own). So a BEL is inside
one when the last ESC before it (since the BEL before) opens a string and no
CAN or SUB comes between. A BEL ends every kind of string here; in the DEC
model it is data inside DCS, SOS, PM and APC, which differs only for a second
BEL in the same string (neither rings there).

The cost is bounded, as both callers look under a lock or on an event thread
(host/stream.py looks at up to :data:`~dsh_magics.host.stream.MAX_BEHIND`
queued bytes at once): no Python step per byte or per escape sequence. The
first BELs are looked at one by one (``bytes.find`` and one ``rfind`` of ESC
each, in C), and the first that rings ends the search; after
:data:`_LOOKS` BELs that ended strings (a flood of titles) the rest is
parsed by one regular expression, in C too (:data:`_STRING`). A piece
without a BEL costs only the look for its end state.
benchmarks/bench_bells.py measures it against ``bytes.find``. Pinned by
tests/attach/test_bells.py and
tests/attach/test_handover_edges.py::test_a_bell_rings_in_a_window_drawn_from_screens.
"""

from __future__ import annotations

import re

_BEL, _ESC, _CAN, _SUB = b"\x07", b"\x1b", b"\x18", b"\x1a"

#: What follows ESC in a string's opener: OSC, DCS, SOS, PM, APC.
_OPENERS = frozenset(b"]PX^_")

#: A whole control string, from its opener to its end (a BEL or ST taken with
#: it; an ESC, CAN or SUB, or the data's end, left after it).
_STRING = re.compile(rb"\x1b[\]PX^_][^\x07\x1b\x18\x1a]*(?:\x07|\x1b\\)?")

#: How many BELs that end strings are looked at one by one before the rest goes to :data:`_STRING`.
_LOOKS = 32


def _in_string(data: bytes, lo: int, hi: int) -> bool:
    """Is ``data[hi]`` inside a control string, ``data[lo]`` being outside
    one and ``data[lo:hi]`` holding no BEL?"""
    esc = data.rfind(_ESC, lo, hi)
    if esc < 0 or esc + 1 >= hi or data[esc + 1] not in _OPENERS:
        return False  # (an ESC right before: a C0 control in an escape is done at once)
    return data.find(_CAN, esc + 2, hi) < 0 and data.find(_SUB, esc + 2, hi) < 0


def _first_bell(data: bytes) -> bool:
    """Does ``data`` ring (``data[0]`` outside a control string)?"""
    pos = 0
    for _ in range(_LOOKS):
        bel = data.find(_BEL, pos)
        if bel < 0:
            return False
        if not _in_string(data, pos, bel):
            return True
        pos = bel + 1  # that BEL ended the string: outside again
    return _BEL in _STRING.sub(b"", data[pos:])


def rings(data: bytes) -> bool:
    """Does output that starts with ``data`` ring a bell (``Bells().rings``
    without finding the end state: host/stream.py, which parses once)?"""
    return _BEL in data and _first_bell(data)


class Bells:
    """Says which pieces of a stream of output ring a bell (module docstring)."""

    def __init__(self) -> None:
        self._esc = False  # the last byte seen was an ESC
        self._string = False  # inside a control string

    def rings(self, data: bytes) -> bool:
        """Does ``data`` ring a bell, given the pieces before it?"""
        if self._esc:
            data = _ESC + data  # (the ESC's sequence goes on here)
        elif self._string:
            data = b"\x1b]" + data  # (the string goes on here: any kind ends alike)
        elif _BEL not in data and _ESC not in data:
            return False  # the usual piece: nothing to look at
        rang = _BEL in data and _first_bell(data)
        # After any BEL no string is open (it rang or ended one); an ESC last ends one.
        self._string = _in_string(data, data.rfind(_BEL) + 1, len(data))
        self._esc = data.endswith(_ESC)
        return rang

    def reset(self) -> None:
        """Forget the pieces before: the stream's bytes start afresh (a screen came)."""
        self._esc = self._string = False


__all__ = ["Bells", "rings"]
