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
rings nothing), across the pieces the output comes in. The rule: a BEL ends
a control string if the last string opener (``ESC`` and one of ``]P_^X``)
before it comes after the last end before it (a BEL, ST = ``ESC \\``, CAN,
SUB); otherwise it rings.

The cost is bounded, as both callers look under a lock or on an event thread
(host/stream.py looks at up to :data:`~dsh_magics.host.stream.MAX_BEHIND`
queued bytes at once): no Python step per byte or per escape sequence. BELs
are found with ``bytes.find``; for each, the opener and end before it are
looked for with ``rfind`` in a window growing back from it (a title's opener
is a few dozen bytes before its BEL); the first BEL that rings ends the
search, and a piece without a BEL costs only the look for its end state.
benchmarks/bench_bells.py measures it against ``bytes.find``. Pinned by
tests/attach/test_bells.py and
tests/attach/test_handover_edges.py::test_a_bell_rings_in_a_window_drawn_from_screens.
"""

from __future__ import annotations

_BEL, _ESC = b"\x07", b"\x1b"

#: What opens a control string: OSC, DCS, SOS, PM, APC (ESC and one of ``]P_^X``); OSC first,
#: the usual one (a title), so the others are looked for in the short stretch after it.
_OPENERS = (b"\x1b]", b"\x1bP", b"\x1bX", b"\x1b^", b"\x1b_")

#: What ends a control string besides a BEL: ST (``ESC \\``), CAN and SUB (which end any sequence).
_ENDS = (b"\x1b\\", b"\x18", b"\x1a")

#: The first window looked at before a BEL (a title's opener is in it); it grows fourfold.
_WINDOW = 256


def _last(data: bytes, needles: tuple[bytes, ...], lo: int, hi: int) -> int:
    """The start of the last of ``needles`` in ``data[lo:hi]``, or -1."""
    best = -1
    for needle in needles:
        i = data.rfind(needle, max(lo, best), hi)
        if i > best:
            best = i
    return best


def _in_string(data: bytes, lo: int, hi: int) -> bool:
    """Is ``data[hi]`` inside a control string, ``data[lo:hi]`` having no BEL
    and ``data[lo]`` being outside one?"""
    window = _WINDOW
    while True:
        start = max(lo, hi - window)
        # (output without escapes has no opener or ST: one memrchr instead of six searches)
        escapes = data.rfind(_ESC, start, hi) >= 0
        opener = _last(data, _OPENERS, start, hi) if escapes else -1
        end = _last(data, _ENDS if escapes else _ENDS[1:], max(start, opener), hi)
        if opener > end:
            return True
        if end >= 0 or start == lo:
            return False
        window *= 4  # (an opener on the window's edge is found in the next one)


def _first_end(data: bytes) -> int:
    """Just past the first end of a control string in ``data`` (a BEL among them), or -1."""
    first, past = len(data), -1
    for end in (_BEL, *_ENDS):
        i = data.find(end, 0, first)
        if i >= 0:
            first, past = i, i + len(end)
    return past


def _first_bell(data: bytes, pos: int) -> tuple[bool, int]:
    """Does ``data[pos:]`` ring (``data[pos]`` outside a control string), and
    from where on is the end state still to be found?"""
    while (bel := data.find(_BEL, pos)) >= 0:
        if not _in_string(data, pos, bel):
            return True, data.rfind(_BEL) + 1  # (after any BEL, no string is open)
        pos = bel + 1  # that BEL ended the string
    return False, pos


def rings(data: bytes) -> bool:
    """Does output that starts with ``data`` ring a bell (``Bells().rings``
    without finding the end state: host/stream.py, which parses once)?"""
    return _BEL in data and _first_bell(data, 0)[0]


class Bells:
    """Says which pieces of a stream of output ring a bell (module docstring)."""

    def __init__(self) -> None:
        self._esc = False  # the last byte seen was an ESC
        self._string = False  # inside a control string (a BEL, ST, CAN or SUB ends it)

    def rings(self, data: bytes) -> bool:
        """Does ``data`` ring a bell, given the pieces before it?"""
        if self._esc:
            data = _ESC + data  # (the ESC's sequence goes on here)
            self._esc = False
        elif not self._string and _BEL not in data and _ESC not in data:
            return False  # the usual piece: nothing to look at
        pos = 0
        if self._string:
            pos = _first_end(data)
            if pos < 0:
                self._esc = data.endswith(_ESC)
                return False  # still inside it
            self._string = False
        rang, pos = _first_bell(data, pos)
        self._string = _in_string(data, pos, len(data))
        self._esc = data.endswith(_ESC)
        return rang

    def reset(self) -> None:
        """Forget the pieces before: the stream's bytes start afresh (a screen came)."""
        self._esc = self._string = False


__all__ = ["Bells", "rings"]
