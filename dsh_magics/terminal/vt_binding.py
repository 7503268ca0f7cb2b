"""The VT emulator behind :mod:`~dsh_magics.terminal.screen`: a libghostty-vt
terminal driven through the raw C binding of ``pyghostty`` (its ``ffi`` and
``lib``), with every C type this module needs taken from one parse.

Why not ``pyghostty.Terminal``: in cffi's ABI mode each C type written as a
string is parsed, the first time it is used in a process, together with the
whole library's declarations (25-80 ms each on the test machine). Reading a
screen through ``pyghostty.Terminal`` used eleven such strings, so the first
look at any screen in a process took a quarter of a second and more
(benchmarks/README.md, ``bench_screen_cost.py``'s ``first_screen_ms``); here
they are one parse, made when the first terminal is created.

Not thread-safe: :class:`~dsh_magics.terminal.screen.Screen` holds its
caller's lock around every call.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable
from functools import cache
from typing import Any

from pyghostty import GhosttyError, ffi, lib  # type: ignore[import-untyped]

#: OSC sequences (the formatter's palette prefix): not part of a row's drawing.
_OSC = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")

#: Every C type used below, as the parameters of one function type: parsed once.
_SIGNATURE = (
    "void(*)(GhosttyTerminal*, size_t*, bool*, uint16_t*, int*, GhosttyString*,"
    " GhosttyTerminalModeConfig*, GhosttyPointS*, GhosttyGridRef*, GhosttySelection*,"
    " GhosttyTerminalSelectionFormatOptions*, uint8_t(*)[], GhosttyCell*, GhosttyCellWide*,"
    " GhosttyCellContentTag*, GhosttyColorPaletteIndex*, GhosttyColorRgb*, uint32_t(*)[16],"
    " GhosttyStyle*, GhosttyTerminalWritePtyFn,"
    " GhosttyResult(*)(GhosttyTerminal, GhosttyPointS, GhosttyGridRef*))"
)
_NAMES = (
    "terminal size bool u16 int string mode_config point grid_ref selection format_options"
    " byte_array cell wide content_tag palette rgb codepoints style write_pty grid_ref_fn"
).split()


@cache
def types() -> dict[str, Any]:
    """The C types by short name (arrays as array types, the rest as pointers)."""
    args = ffi.typeof(_SIGNATURE).args
    out = dict(zip(_NAMES, args, strict=True))
    out["byte_array"] = out["byte_array"].item
    out["codepoints"] = out["codepoints"].item
    return out


@cache
def _grid_ref_fn() -> Any:
    """``ghostty_terminal_grid_ref`` typed to take the point by value: ABI-mode
    cffi cannot pass a union, so the binding declares a struct of the same
    layout (``GhosttyPointS``) and the call goes through that type."""
    return ffi.cast(types()["grid_ref_fn"], ffi.addressof(lib, "ghostty_terminal_grid_ref"))


def new_sized(name: str) -> Any:
    """A zeroed struct ``name`` (a key of :func:`types`) whose ``size`` fields,
    also of nested structs, hold their struct's size, as the C API asks."""
    p = ffi.new(types()[name])
    _fill_sizes(p)
    return p


def _fill_sizes(p: Any) -> None:
    struct = ffi.typeof(p).item
    for field, info in struct.fields:
        if field == "size":
            p.size = ffi.sizeof(struct)
        elif info.type.kind == "struct":
            _fill_sizes(ffi.addressof(p[0], field))


#: Resolved once: a ``lib`` attribute looked up in a finalizer can deadlock
#: on cffi's lock when the collector runs inside cffi (tests/terminal/test_screen.py
#: hung that way with a ``__del__``).
_FREE = lib.ghostty_terminal_free


def _check(res: int, what: str) -> None:
    if res:
        raise GhosttyError(f"{what} failed: {res}")


class Vt:
    """One emulated terminal: feed it bytes, read its state."""

    def __init__(self, cols: int, rows: int, scrollback: int, on_reply: Callable[[bytes], None]) -> None:
        t = types()
        self._h = ffi.new(t["terminal"])
        _check(lib.ghostty_terminal_new(ffi.NULL, self._h, cols, rows), "terminal_new")
        self._t = self._h[0]
        lines = ffi.new(t["size"], scrollback)
        _check(lib.ghostty_terminal_set(self._t, lib.GHOSTTY_TERMINAL_OPT_SCROLLBACK_MAX_LINES, lines), "scrollback")
        self._free = weakref.finalize(self, _FREE, self._t)
        # Not at exit: a reader thread may still be feeding it then, and the
        # process's memory goes anyway.
        self._free.atexit = False
        # No reference back to self from the callback: a cycle would leave
        # the terminal to the cyclic collector instead of freeing it at once.
        self._errors: list[BaseException] = []
        errors = self._errors
        self._on_reply = ffi.callback(
            t["write_pty"],
            lambda _t, _u, data, n: on_reply(ffi.buffer(data, n)[:]),
            onerror=lambda _type, value, _tb: errors.append(value),
        )
        _check(lib.ghostty_terminal_set(self._t, lib.GHOSTTY_TERMINAL_OPT_WRITE_PTY, self._on_reply), "write_pty")
        self._bool = ffi.new(t["bool"])
        self._u16 = ffi.new(t["u16"])
        self._int = ffi.new(t["int"])
        self._mode = ffi.new(t["mode_config"])
        self._point = ffi.new(t["point"])
        self._point.tag = lib.GHOSTTY_POINT_TAG_ACTIVE

    def feed(self, data: bytes) -> None:
        lib.ghostty_terminal_vt_write(self._t, data, len(data))
        if self._errors:
            error = self._errors[0]
            self._errors.clear()
            raise error

    def _get(self, key: int, out: Any, what: str) -> Any:
        _check(lib.ghostty_terminal_get(self._t, key, out), what)
        return out[0]

    def vt_ground(self) -> bool:
        """Is the parser outside any escape sequence?"""
        return bool(self._get(lib.GHOSTTY_TERMINAL_DATA_VT_GROUND, self._bool, "vt_ground"))

    def alt_screen(self) -> bool:
        return int(self._get(lib.GHOSTTY_TERMINAL_DATA_ACTIVE_SCREEN, self._int, "active_screen")) == 1

    def cursor_visible(self) -> bool:
        return bool(self._get(lib.GHOSTTY_TERMINAL_DATA_CURSOR_VISIBLE, self._bool, "cursor_visible"))

    def cursor(self) -> tuple[int, int]:
        """Column and row of the cursor, 0-based."""
        x = int(self._get(lib.GHOSTTY_TERMINAL_DATA_CURSOR_X, self._u16, "cursor_x"))
        return x, int(self._get(lib.GHOSTTY_TERMINAL_DATA_CURSOR_Y, self._u16, "cursor_y"))

    def title(self) -> str:
        s = ffi.new(types()["string"])
        _check(lib.ghostty_terminal_get(self._t, lib.GHOSTTY_TERMINAL_DATA_TITLE, s), "title")
        return ffi.buffer(s.ptr, s.len)[:].decode("utf-8", "replace") if s.len else ""

    def mode(self, n: int) -> bool:
        """Is DEC private mode ``n`` set?"""
        self._mode.mode = n & 0x7FFF  # the packing of ghostty_mode_new (static inline, so not in the library)
        _check(lib.ghostty_terminal_get(self._t, lib.GHOSTTY_TERMINAL_DATA_MODE, self._mode), f"mode {n}")
        return bool(self._mode.value)

    def ref(self, x: int, y: int, out: Any | None = None) -> Any:
        """A grid ref (``GhosttyGridRef*``) for cell (x, y) of the active
        screen, valid until the next feed; ``out`` is reused when given."""
        ref = new_sized("grid_ref") if out is None else out
        self._point.value.x, self._point.value.y = x, y
        _check(_grid_ref_fn()(self._t, self._point[0], ref), f"grid_ref {x},{y}")
        return ref

    def text(self, cols: int, rows: int) -> str:
        """The visible rows as text, trailing blanks of each row cut."""
        sel = new_sized("selection")
        sel.start = self.ref(0, 0)[0]
        sel.end = self.ref(cols - 1, rows - 1)[0]
        opts = new_sized("format_options")
        opts.emit = lib.GHOSTTY_FORMATTER_FORMAT_PLAIN
        opts.unwrap, opts.trim, opts.selection = False, True, sel
        n = ffi.new(types()["size"])
        lib.ghostty_terminal_selection_format_buf(self._t, opts[0], ffi.NULL, 0, n)  # asks the size
        buf = ffi.new(types()["byte_array"], max(n[0], 1))
        _check(lib.ghostty_terminal_selection_format_buf(self._t, opts[0], buf, len(buf), n), "format")
        return ffi.buffer(buf, n[0])[:].decode("utf-8", "replace")

    def row_vt(self, y: int, cols: int) -> str:
        """Row ``y`` as the emulator's own VT serialisation (text with SGR
        sequences), the palette and other OSC sequences it prefixes taken out."""
        sel = new_sized("selection")
        sel.start = self.ref(0, y)[0]
        sel.end = self.ref(cols - 1, y)[0]
        opts = new_sized("format_options")
        opts.emit = lib.GHOSTTY_FORMATTER_FORMAT_VT
        opts.unwrap, opts.trim, opts.selection = False, True, sel
        n = ffi.new(types()["size"])
        lib.ghostty_terminal_selection_format_buf(self._t, opts[0], ffi.NULL, 0, n)  # asks the size
        buf = ffi.new(types()["byte_array"], max(n[0], 1))
        _check(lib.ghostty_terminal_selection_format_buf(self._t, opts[0], buf, len(buf), n), "format")
        return _OSC.sub("", ffi.buffer(buf, n[0])[:].decode("utf-8", "replace"))

    def resize(self, cols: int, rows: int) -> None:
        _check(lib.ghostty_terminal_resize(self._t, cols, rows, 8, 16), "resize")

    def close(self) -> None:
        """Free the terminal now (else when this object is collected)."""
        self._free()
