"""libghostty-vt's own SGR parser (``ghostty_sgr_*``, through pyghostty's raw
binding) reading ``ESC [ params m`` into the pen of ``core/sgr.py``: the
reference ``tests/terminal/test_sgr_agrees.py`` holds ours to, and the other
side of ``benchmarks/bench_sgr.py``. Not thread-safe (one parser)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pyghostty import ffi, lib  # type: ignore[import-untyped]

_SPLIT = re.compile(r"([;:])")
_parser: Any = None
_attr: Any = None
# libghostty's attribute tag -> (the pen's slot, the slot's new value from the
# attribute's value); UNSET resets the whole pen. Slots: fg, bg, bold,
# underline, inverse.
_SETS: dict[int, tuple[int, Callable[[Any], Any]]] = {}


def _setup() -> None:
    global _parser, _attr
    out = ffi.new("GhosttySgrParser*")
    if lib.ghostty_sgr_new(ffi.NULL, out) != lib.GHOSTTY_SUCCESS:
        raise RuntimeError("ghostty_sgr_new failed")
    _parser, _attr = out[0], ffi.new("GhosttySgrAttribute*")
    a = "GHOSTTY_SGR_ATTR_"
    for name, slot, value in (
        ("BOLD", 2, lambda v: True),
        ("RESET_BOLD", 2, lambda v: False),
        ("UNDERLINE", 3, lambda v: v.underline != lib.GHOSTTY_SGR_UNDERLINE_NONE),
        ("INVERSE", 4, lambda v: True),
        ("RESET_INVERSE", 4, lambda v: False),
        ("FG_8", 0, lambda v: v.fg_8),
        ("BRIGHT_FG_8", 0, lambda v: v.bright_fg_8),
        ("FG_256", 0, lambda v: v.fg_256),
        ("DIRECT_COLOR_FG", 0, lambda v: _hex(v.direct_color_fg)),
        ("RESET_FG", 0, lambda v: None),
        ("BG_8", 1, lambda v: v.bg_8),
        ("BRIGHT_BG_8", 1, lambda v: v.bright_bg_8),
        ("BG_256", 1, lambda v: v.bg_256),
        ("DIRECT_COLOR_BG", 1, lambda v: _hex(v.direct_color_bg)),
        ("RESET_BG", 1, lambda v: None),
    ):
        _SETS[getattr(lib, a + name)] = (slot, value)


def _hex(c: Any) -> str:
    return f"#{c.r:02x}{c.g:02x}{c.b:02x}"


_NO_PEN = (None, None, False, False, False)


def apply(pen: tuple[Any, ...] | None, params: str) -> tuple[Any, ...] | None:
    """As ``core.sgr.apply``, read by libghostty-vt."""
    if _parser is None:
        _setup()
    slots = list(pen or _NO_PEN)
    parts = _SPLIT.split(params)
    nums = [min(int(p), 65535) if p else 0 for p in parts[::2]]
    seps = "".join(parts[1::2]) + ";"
    lib.ghostty_sgr_set_params(_parser, ffi.new("uint16_t[]", nums), ffi.new("char[]", seps.encode()), len(nums))
    while lib.ghostty_sgr_next(_parser, _attr):
        tag = _attr.tag
        if tag == lib.GHOSTTY_SGR_ATTR_UNSET:
            slots = list(_NO_PEN)
        elif tag in _SETS:
            slot, value = _SETS[tag]
            slots[slot] = value(_attr.value)
    out = tuple(slots)
    return None if out == _NO_PEN else out
