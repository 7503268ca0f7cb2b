"""A terminal's screen: what a person would see on an xterm of the terminal's
size, kept by a VT emulator fed the terminal's output.

The emulator is libghostty-vt (through ``pyghostty``'s C binding,
:mod:`.vt_binding`), chosen by measurement (docs/internals.md,
benchmarks/bench_screen.py): it keeps the alternate screen, application cursor
and keypad modes, wide characters, scroll regions, the title and per-cell
styles, and parses about a hundred times faster than ``pyte``. Nothing outside
this module and its binding knows which emulator it is.

**Lazy feeding.** :meth:`Screen.feed` only queues bytes (a few hundred KiB at
most); they are parsed when somebody looks (:meth:`snapshot`, :meth:`modes`,
:meth:`settle`), when the queue is full, or before output with escape codes
joins a long plain stretch (and the terminal settles a queue holding escape
codes when its output pauses, :attr:`escapes_queued`). While settling, the head of a long
*plain* stretch (no ESC and no control byte other than BEL, BS, TAB, LF, CR)
is skipped when it cannot be on screen any more: the stretch's tail is kept
from the ``2*rows``-th line feed from its end, cut right after a ``\\r\\n``,
and only applied when the parser is in its ground state and the scroll
margins are the whole screen. Plain bytes change nothing but cells and the
cursor; after ``2*rows - 1`` line feeds on full margins every visible row has
scrolled in blank and was written by the tail alone, from column 0 (a ``\\r``
is fed in place of the skipped head). So the screen is exactly what feeding
every byte gives; only the emulator's scrollback, which nothing reads, lacks
the skipped lines. Output with escape codes (colours, full-screen programs)
is fed whole. Pinned by tests/terminal/test_screen.py::test_lazy_skip_*.

Not thread-safe: the caller holds its lock around every call.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .snapshot import Colour, Modes, Run, Snapshot

if TYPE_CHECKING:
    from .vt_binding import Vt

#: Queue at most this many bytes before parsing them (bounds the time a
#: snapshot takes and the memory an idle screen holds).
SETTLE_BYTES = 256 * 1024

#: A plain stretch this long is settled (so skipped where it can be) before
#: output with escape codes is queued behind it.
_SKIP_WORTH = 16 * 1024

#: Scrollback lines the emulator keeps. Nothing reads them, but libghostty-vt
#: scrolls several times slower with a limit under ~2000 lines
#: (benchmarks/bench_screen.py --scrollback; figures in benchmarks/README.md).
SCROLLBACK_LINES = 2000

#: Plain bytes: anything but ESC and the C0 controls other than BEL, BS,
#: TAB, LF, CR (SO/SI switch charsets, ENQ answers back, VT/FF move down).
_NOT_PLAIN = bytes([*range(0x00, 0x07), 0x0B, 0x0C, *range(0x0E, 0x20)])
_PLAIN = bytes(b for b in range(256) if b not in _NOT_PLAIN)

#: Entering an alternate screen (xterm's 1049, 1047 and 47), also among other
#: modes in one sequence.
_ALT_ENTER = re.compile(rb"\x1b\[\?(?:[0-9;]*;)?(?:1049|1047|47)(?:;[0-9;]*)?h")
_ALT_TAIL = 24  # bytes kept to find a sequence split across two feeds

_DECRQSS_MARGINS = b"\x1bP$qr\x1b\\"

_MODE_APP_CURSOR = 1  # DECCKM
_MODE_APP_KEYPAD = 66  # DECNKM, also set by DECKPAM (ESC =)
_MODE_BRACKETED_PASTE = 2004
_MODES_AGAINST_SKIP = (69, 45, 1045)  # DECLRMM, reverse wraparound, extended reverse wraparound

#: The emulator counts cells in 16 bits; the engine's config allows up to 10,000.
MAX_SIZE = 10_000


def _check_size(cols: int, rows: int) -> None:
    for name, value in (("cols", cols), ("rows", rows)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_SIZE:
            raise ValueError(f"screen {name} must be a whole number from 1 to {MAX_SIZE}, not {value!r}")


class Screen:
    """One terminal's screen; see the module docstring for lazy feeding."""

    def __init__(self, cols: int = 80, rows: int = 24) -> None:
        _check_size(cols, rows)
        self._cols, self._rows = cols, rows
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._plain_from = 0  # index into _pending where the trailing plain stretch starts
        self._plain_bytes = 0  # bytes in that stretch
        self._replies = bytearray()
        self._alt_tail = b""
        self._used_alt = False
        self.skipped_bytes = 0  # bytes never parsed (lazy skip); for benchmarks and tests
        self._gen = 0  # bumped whenever what a snapshot shows may have changed
        self._cached: tuple[int, Snapshot] | None = None
        self._vt: Vt | None = None

    @property
    def _term(self) -> Vt:
        """The emulator, made when first needed (a look, or output to
        parse). Its binding parses its C declarations when first imported
        (about 0.16 s of CPU), which a process whose terminals' output is
        never looked at (a fleet's ``hostname``) never pays: it fell on the
        first terminal of every new process (issue 35 §5, benchmarks/README.md,
        ``bench_fanout.py``, session 35)."""
        if self._vt is None:
            from .vt_binding import Vt

            self._vt = Vt(self._cols, self._rows, SCROLLBACK_LINES, self._replies.extend)
        return self._vt

    # -- input -----------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Queue output of the terminal; parsed lazily (module docstring)."""
        if not data:
            return
        if data.translate(None, _PLAIN):  # has a byte that is not plain
            if self._plain_bytes >= _SKIP_WORTH:
                self.settle()  # skip what it can of the plain stretch before this
            self._plain_from = len(self._pending) + 1
            self._plain_bytes = 0
        else:
            self._plain_bytes += len(data)
        self._pending.append(data if type(data) is bytes else bytes(data))
        self._pending_bytes += len(data)
        if self._pending_bytes >= SETTLE_BYTES:
            self.settle()

    @property
    def escapes_queued(self) -> bool:
        """Does the queue hold output with escape codes? Only such output is
        worth parsing ahead of a look: a queue of plain text alone is parsed
        from its last ``2*rows`` lines, in well under a millisecond."""
        return self._plain_from > 0

    def settle(self) -> None:
        """Parse everything queued (skipping what cannot be on screen)."""
        if not self._pending:
            return
        self._gen += 1
        head = b"".join(self._pending[: self._plain_from])
        plain = b"".join(self._pending[self._plain_from :])
        self._pending.clear()
        self._pending_bytes = 0
        self._plain_from = 0
        self._plain_bytes = 0
        if head:
            self._write(head)
        if plain:
            cut = self._skip_point(plain)
            if cut:
                self.skipped_bytes += cut
                self._term.feed(b"\r")
                plain = plain[cut:]
            self._write(plain)

    def _write(self, data: bytes) -> None:
        """Parse bytes that may hold escape sequences, noting an alternate screen."""
        if not self._used_alt:
            joined = self._alt_tail + data
            if b"\x1b[?" in joined and _ALT_ENTER.search(joined):
                self._used_alt = True
            self._alt_tail = data[-_ALT_TAIL:]
        self._term.feed(data)
        if not self._used_alt and self._term.alt_screen():
            self._used_alt = True

    def _skip_point(self, plain: bytes) -> int:
        """Where the part of a plain stretch that can still be on screen
        begins, or 0 when all of it must be parsed (module docstring)."""
        need = 2 * self._rows
        if plain.count(b"\n") <= need:
            return 0
        pos = len(plain)
        for _ in range(need):
            pos = plain.rfind(b"\n", 0, pos)
        # `pos` is the need-th line feed from the end; cut after one preceded by CR.
        while pos > 0 and plain[pos - 1] != 0x0D:
            pos = plain.rfind(b"\n", 0, pos)
        if pos <= 0:
            return 0
        if not self._term.vt_ground() or not self._skip_safe():
            return 0
        return pos + 1

    def _skip_safe(self) -> bool:
        """Do line feeds scroll the whole screen and nothing moves the cursor
        up? Scroll margins are the whole screen (asked of the emulator itself,
        DECRQSS), left/right margins and reverse wraparound are off."""
        if any(self._term.mode(m) for m in _MODES_AGAINST_SKIP):
            return False
        mark = len(self._replies)
        self._term.feed(_DECRQSS_MARGINS)
        answer = bytes(self._replies[mark:])
        del self._replies[mark:]
        return answer == b"\x1bP1$r1;%dr\x1b\\" % self._rows

    def resize(self, cols: int, rows: int) -> None:
        _check_size(cols, rows)
        self.settle()
        if self._vt is not None:  # (one made later has the new size)
            self._vt.resize(cols, rows)
        self._cols, self._rows = cols, rows
        self._gen += 1

    def reset(self) -> None:
        """A fresh screen of the same size (and ``used_alt_screen`` cleared)."""
        self._pending.clear()
        self._pending_bytes = 0
        self._plain_from = 0
        self._plain_bytes = 0
        self._replies.clear()
        self._alt_tail = b""
        self._used_alt = False
        self._gen += 1
        self.close()  # a new emulator is made when next needed

    def clear_used_alt_screen(self) -> None:
        """Start a new span for :attr:`used_alt_screen` (e.g. at a job's start);
        a program still on the alternate screen keeps it set."""
        self.settle()
        self._used_alt = self._term.alt_screen()
        self._alt_tail = b""
        self._gen += 1

    # -- output ----------------------------------------------------------

    @property
    def size(self) -> tuple[int, int]:
        return self._cols, self._rows

    @property
    def used_alt_screen(self) -> bool:
        """Has a program entered the alternate screen since the last
        :meth:`reset` or :meth:`clear_used_alt_screen`?"""
        self.settle()
        return self._used_alt

    def take_replies(self) -> bytes:
        """What a real terminal would have answered the program (cursor
        position reports, device attributes, ...), oldest first; cleared."""
        self.settle()
        out = bytes(self._replies)
        self._replies.clear()
        return out

    def modes(self) -> Modes:
        self.settle()
        t = self._term
        return Modes(
            app_cursor=t.mode(_MODE_APP_CURSOR),
            app_keypad=t.mode(_MODE_APP_KEYPAD),
            bracketed_paste=t.mode(_MODE_BRACKETED_PASTE),
        )

    def text(self) -> list[str]:
        """The visible rows as text (cheaper than a snapshot)."""
        self.settle()
        lines = self._term.text(self._cols, self._rows).split("\n")
        return (lines + [""] * self._rows)[: self._rows]

    def vt_rows(self) -> tuple[str, ...]:
        """Each row as text with SGR sequences, as the emulator serialises it:
        what a terminal needs to draw the screen (``dsh-magics attach``), at
        about a tenth of the cost of :meth:`snapshot` with ``styles``."""
        self.settle()
        return tuple(self._term.row_vt(y, self._cols) for y in range(self._rows))

    def snapshot(self, styles: bool = False) -> Snapshot:
        """The screen now; ``styles`` adds each row's runs (slower: one look per
        cell). Taken again without new output, it is the same snapshot."""
        self.settle()
        if self._cached is not None and self._cached[0] == self._gen:
            snap = self._cached[1]
            if snap.styles is not None:
                return snap if styles else replace(snap, styles=None)
            if not styles:
                return snap
        snap = self._take(styles)
        self._cached = (self._gen, snap)
        return snap

    def _take(self, styles: bool) -> Snapshot:
        t = self._term
        x, y = t.cursor()
        runs = tuple(self._row_runs(r) for r in range(self._rows)) if styles else None
        if runs is not None:
            lines = tuple("".join(run.text for run in row).rstrip() for row in runs)
        else:
            lines = tuple(self.text())
        return Snapshot(
            cols=self._cols,
            rows=self._rows,
            lines=lines,
            cursor_row=y,
            cursor_col=x,
            cursor_visible=t.cursor_visible(),
            alt_screen=t.alt_screen(),
            used_alt_screen=self._used_alt,
            title=t.title(),
            modes=self.modes(),
            styles=runs,
        )

    def _row_runs(self, y: int) -> tuple[Run, ...]:
        from pyghostty import ffi, lib  # type: ignore[import-untyped]

        from .vt_binding import new_sized, types

        runs: list[Run] = []
        c = types()
        cell = ffi.new(c["cell"])
        wide = ffi.new(c["wide"])
        tag = ffi.new(c["content_tag"])
        palette = ffi.new(c["palette"])
        rgb = ffi.new(c["rgb"])
        flag = ffi.new(c["bool"])
        cps = ffi.new(c["codepoints"])
        n = ffi.new(c["size"])
        style = new_sized("style")
        ref = new_sized("grid_ref")
        text: list[str] = []
        key: _Style | None = None
        start = 0
        for x in range(self._cols):
            self._term.ref(x, y, ref)
            if lib.ghostty_grid_ref_cell(ref, cell) != 0:
                continue
            lib.ghostty_cell_get(cell[0], lib.GHOSTTY_CELL_DATA_WIDE, wide)
            if wide[0] in (lib.GHOSTTY_CELL_WIDE_SPACER_TAIL, lib.GHOSTTY_CELL_WIDE_SPACER_HEAD):
                continue
            lib.ghostty_cell_get(cell[0], lib.GHOSTTY_CELL_DATA_HAS_TEXT, flag)
            ch = " "
            if flag[0] and lib.ghostty_grid_ref_graphemes(ref, cps, 16, n) == 0 and n[0]:
                ch = "".join(chr(cps[i]) for i in range(n[0]))
            lib.ghostty_cell_get(cell[0], lib.GHOSTTY_CELL_DATA_HAS_STYLING, flag)
            lib.ghostty_cell_get(cell[0], lib.GHOSTTY_CELL_DATA_CONTENT_TAG, tag)
            if tag[0] == lib.GHOSTTY_CELL_CONTENT_BG_COLOR_PALETTE:
                lib.ghostty_cell_get(cell[0], lib.GHOSTTY_CELL_DATA_COLOR_PALETTE, palette)
                cur: _Style = (None, int(palette[0]), False, False, False)
            elif tag[0] == lib.GHOSTTY_CELL_CONTENT_BG_COLOR_RGB:
                lib.ghostty_cell_get(cell[0], lib.GHOSTTY_CELL_DATA_COLOR_RGB, rgb)
                cur = (None, f"#{rgb.r:02x}{rgb.g:02x}{rgb.b:02x}", False, False, False)
            elif flag[0]:
                lib.ghostty_grid_ref_style(ref, style)
                cur = (
                    _colour(style.fg_color, lib),
                    _colour(style.bg_color, lib),
                    bool(style.bold),
                    bool(style.inverse),
                    bool(style.underline),
                )
            else:
                cur = (None, None, False, False, False)
            if cur != key:
                if text and key is not None:
                    runs.append(_run("".join(text), key, start))
                text, key, start = [], cur, x
            text.append(ch)
        if text and key is not None:
            runs.append(_run("".join(text), key, start))
        return tuple(runs)

    def close(self) -> None:
        if self._vt is not None:
            self._vt.close()
            self._vt = None


_Style = tuple[Colour, Colour, bool, bool, bool]  # fg, bg, bold, inverse, underline


def _run(text: str, style: _Style, col: int) -> Run:
    fg, bg, bold, inverse, underline = style
    return Run(text, fg, bg, bold, inverse, underline, col)


def _colour(c: Any, lib: Any) -> Colour:
    if c.tag == lib.GHOSTTY_STYLE_COLOR_PALETTE:
        return int(c.value.palette)
    if c.tag == lib.GHOSTTY_STYLE_COLOR_RGB:
        rgb = c.value.rgb
        return f"#{rgb.r:02x}{rgb.g:02x}{rgb.b:02x}"
    return None
