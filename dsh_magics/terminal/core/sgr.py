"""SGR (``ESC [ ... m``) parameters to a pen: the colours and attributes of the
text that follows. The ring keeps them beside its plain lines (core/ring.py).

Why our own reader when the emulator we depend on has one (libghostty-vt's
``ghostty_sgr_*``, reachable through pyghostty's raw binding): it reads every
well-formed sequence as this one does (tests/terminal/test_sgr_agrees.py holds
them together), but through cffi it costs 1.6 to 14 times as much per sequence
(benchmarks/bench_sgr.py; a result works out its last 1,000 lines' colours when
it is built), its first use in a process parses C types (90 to 150 ms on a
loaded test machine), and its attributes still need mapping onto a pen here, so no code goes away.
Malformed sequences are read differently: an unknown colour kind after 38/48
(``38;7``) is skipped here with the 38, where the emulator reads it as an
attribute of its own, and a 256-colour index past 255 is no colour here where
the emulator wraps it."""

from __future__ import annotations

from ..snapshot import Colour

#: A pen: (fg, bg, bold, underline, inverse); a colour is a palette index
#: 0-255, ``"#rrggbb"`` or None (the default), as in ``snapshot.Run``.
#: The default pen is None, never a tuple, so "no style" is one test.
Pen = tuple[Colour, Colour, bool, bool, bool]

_DEFAULT: Pen = (None, None, False, False, False)


def apply(pen: Pen | None, params: str) -> Pen | None:
    """The pen after ``ESC [ params m`` (parameters by ``;``, sub-parameters
    by ``:`` as in ``38:2::r:g:b``); what it does not know it ignores."""
    fg, bg, bold, underline, inverse = pen or _DEFAULT
    groups = params.split(";")
    i, n = 0, len(groups)
    while i < n:
        group = groups[i]
        i += 1
        if ":" in group:
            sub = group.split(":")
            code = _int(sub[0])
            if code in (38, 48):
                colour = _extended(sub[1:], colon=True)[0]
                if code == 38:
                    fg = colour
                else:
                    bg = colour
            elif code == 4:
                underline = _int(sub[1]) != 0 if len(sub) > 1 else True
            continue
        code = _int(group) if group else 0
        if code == 0:
            fg, bg, bold, underline, inverse = _DEFAULT
        elif code == 1:
            bold = True
        elif code == 22:
            bold = False
        elif code in (4, 21):
            underline = True
        elif code == 24:
            underline = False
        elif code == 7:
            inverse = True
        elif code == 27:
            inverse = False
        elif 30 <= code <= 37:
            fg = code - 30
        elif 90 <= code <= 97:
            fg = code - 90 + 8
        elif code == 39:
            fg = None
        elif 40 <= code <= 47:
            bg = code - 40
        elif 100 <= code <= 107:
            bg = code - 100 + 8
        elif code == 49:
            bg = None
        elif code in (38, 48):
            colour, used = _extended(groups[i:], colon=False)
            i += used
            if code == 38:
                fg = colour
            else:
                bg = colour
    out: Pen = (fg, bg, bold, underline, inverse)
    return None if out == _DEFAULT else out


def _extended(args: list[str], *, colon: bool) -> tuple[Colour, int]:
    """A 256-colour (``5;n``) or true colour (``2;r;g;b``; with colons an
    optional colour space id first) and how many parameters it took."""
    if not args:
        return None, 0
    kind = _int(args[0])
    if kind == 5 and len(args) > 1:
        index = _int(args[1])
        return (index if 0 <= index <= 255 else None), 2
    if kind == 2:
        rgb = args[1:]
        if colon and len(rgb) >= 4:
            rgb = rgb[1:]  # 38:2:<colour space>:r:g:b
        if len(rgb) >= 3:
            r, g, b = (min(255, max(0, _int(x))) for x in rgb[:3])
            return f"#{r:02x}{g:02x}{b:02x}", 4
    if kind in (2, 5):
        return None, len(args)  # cut short: the rest belongs to it
    return None, 1


def _int(text: str) -> int:
    return int(text) if text.isdigit() and len(text) < 8 else -1
