"""libghostty-vt's own SGR parser (``ghostty_sgr_*``, through pyghostty's raw
binding) reading ``ESC [ params m`` into the pen of ``core/sgr.py``: the
reference ``tests/terminal/test_sgr_agrees.py`` holds ours to, and the other
side of ``benchmarks/bench_sgr.py``. Not thread-safe (one parser)."""

from __future__ import annotations

import re
from typing import Any

from pyghostty import ffi, lib  # type: ignore[import-untyped]

_SPLIT = re.compile(r"([;:])")
_parser: Any = None
_attr: Any = None


def _setup() -> None:
    global _parser, _attr
    out = ffi.new("GhosttySgrParser*")
    if lib.ghostty_sgr_new(ffi.NULL, out) != lib.GHOSTTY_SUCCESS:
        raise RuntimeError("ghostty_sgr_new failed")
    _parser, _attr = out[0], ffi.new("GhosttySgrAttribute*")


def _hex(c: Any) -> str:
    return f"#{c.r:02x}{c.g:02x}{c.b:02x}"


def apply(pen: tuple[Any, ...] | None, params: str) -> tuple[Any, ...] | None:
    """As ``core.sgr.apply``, read by libghostty-vt."""
    if _parser is None:
        _setup()
    fg, bg, bold, underline, inverse = pen or (None, None, False, False, False)
    parts = _SPLIT.split(params)
    nums = [min(int(p), 65535) if p else 0 for p in parts[::2]]
    seps = "".join(parts[1::2]) + ";"
    lib.ghostty_sgr_set_params(_parser, ffi.new("uint16_t[]", nums), ffi.new("char[]", seps.encode()), len(nums))
    T = lib
    while lib.ghostty_sgr_next(_parser, _attr):
        tag, v = _attr.tag, _attr.value
        if tag == T.GHOSTTY_SGR_ATTR_UNSET:
            fg, bg, bold, underline, inverse = None, None, False, False, False
        elif tag == T.GHOSTTY_SGR_ATTR_BOLD:
            bold = True
        elif tag == T.GHOSTTY_SGR_ATTR_RESET_BOLD:
            bold = False
        elif tag == T.GHOSTTY_SGR_ATTR_UNDERLINE:
            underline = v.underline != T.GHOSTTY_SGR_UNDERLINE_NONE
        elif tag == T.GHOSTTY_SGR_ATTR_INVERSE:
            inverse = True
        elif tag == T.GHOSTTY_SGR_ATTR_RESET_INVERSE:
            inverse = False
        elif tag == T.GHOSTTY_SGR_ATTR_FG_8:
            fg = v.fg_8
        elif tag == T.GHOSTTY_SGR_ATTR_BRIGHT_FG_8:
            fg = v.bright_fg_8
        elif tag == T.GHOSTTY_SGR_ATTR_FG_256:
            fg = v.fg_256
        elif tag == T.GHOSTTY_SGR_ATTR_DIRECT_COLOR_FG:
            fg = _hex(v.direct_color_fg)
        elif tag == T.GHOSTTY_SGR_ATTR_RESET_FG:
            fg = None
        elif tag == T.GHOSTTY_SGR_ATTR_BG_8:
            bg = v.bg_8
        elif tag == T.GHOSTTY_SGR_ATTR_BRIGHT_BG_8:
            bg = v.bright_bg_8
        elif tag == T.GHOSTTY_SGR_ATTR_BG_256:
            bg = v.bg_256
        elif tag == T.GHOSTTY_SGR_ATTR_DIRECT_COLOR_BG:
            bg = _hex(v.direct_color_bg)
        elif tag == T.GHOSTTY_SGR_ATTR_RESET_BG:
            bg = None
    out = (fg, bg, bold, underline, inverse)
    return None if out == (None, None, False, False, False) else out
