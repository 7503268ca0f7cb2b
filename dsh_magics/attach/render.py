"""Drawing a screen (``Engine.screen(styles=True)``) on the local terminal.

The local terminal is put on its alternate screen while attached; each frame
rewrites only the rows that changed since the last one, then puts the cursor,
its visibility and the key modes (application cursor and keypad, bracketed
paste) where the attached screen has them, so the local emulator encodes keys
as the program expects.
"""

from __future__ import annotations

import re
from typing import Any

ESC = "\x1b"

#: In a ``vt`` row: SGR sequences are kept, any other escape sequence or control goes.
_VT_PARTS = re.compile(r"(\x1b\[[0-9;:]*m)|\x1b\[[0-9;:?]*[ -/]*[@-~]|\x1b.?|[\x00-\x1f\x7f]")

#: Entering and leaving: alternate screen on/off, attributes and modes back to normal.
ENTER = f"{ESC}[?1049h{ESC}[H{ESC}[2J"
LEAVE = f"{ESC}[0m{ESC}[?1l{ESC}>{ESC}[?2004l{ESC}[?25h{ESC}[?1049l"


def _colour(value: Any, base: int) -> str:
    """SGR parameters for a palette index or ``#rrggbb`` (``base`` 38 or 48)."""
    if isinstance(value, bool):
        return ""
    if isinstance(value, int) and 0 <= value <= 255:
        return f"{base};5;{value}"
    if isinstance(value, str) and len(value) == 7 and value.startswith("#"):
        try:
            r, g, b = int(value[1:3], 16), int(value[3:5], 16), int(value[5:7], 16)
        except ValueError:
            return ""
        return f"{base};2;{r};{g};{b}"
    return ""


def sgr(run: dict[str, Any]) -> str:
    """The SGR sequence for one run's style (from a reset)."""
    parts = ["0"]
    if run.get("bold"):
        parts.append("1")
    if run.get("underline"):
        parts.append("4")
    if run.get("inverse"):
        parts.append("7")
    for key, base in (("fg", 38), ("bg", 48)):
        c = _colour(run.get(key), base)
        if c:
            parts.append(c)
    return f"{ESC}[{';'.join(parts)}m"


def _printable(text: str) -> str:
    # The screen's text is cells, never controls; be sure of it.
    return "".join(ch if ch >= " " and ch != "\x7f" else " " for ch in text)


def row_text(screen: dict[str, Any], y: int, cols: int) -> str:
    """Row ``y`` as drawing commands, clipped to ``cols`` local columns."""
    styles = screen.get("styles")
    out = [f"{ESC}[{y + 1};1H{ESC}[0m{ESC}[2K"]
    runs = styles[y] if styles is not None and y < len(styles) else None
    if runs is None:
        line = screen["lines"][y] if y < len(screen["lines"]) else ""
        runs = [{"text": line, "col": 0}]
    for run in runs:
        col = int(run.get("col") or 0)
        if col >= cols:
            break
        text = _printable(str(run.get("text") or ""))[: cols - col]
        if not text:
            continue
        out.append(f"{ESC}[{y + 1};{col + 1}H{sgr(run)}{text}")
    out.append(f"{ESC}[0m")
    return "".join(out)


def _keep_sgr(m: re.Match[str]) -> str:
    return m.group(1) or ""


def vt_row_text(screen: dict[str, Any], y: int) -> str:
    """Row ``y`` from the screen's ``vt`` rows (the emulator's own serialisation)."""
    rows = screen.get("vt") or []
    text = rows[y] if y < len(rows) else ""
    return f"{ESC}[{y + 1};1H{ESC}[0m{ESC}[2K{_VT_PARTS.sub(_keep_sgr, str(text))}{ESC}[0m"


class Painter:
    """Frames for one local terminal: full the first time (and after a
    resize), then only what changed."""

    def __init__(self) -> None:
        self._rows: list[str] = []
        self._tail: tuple[Any, ...] = ()
        self._title: str | None = None
        self._size: tuple[int, int] | None = None

    def invalidate(self) -> None:
        self._rows = []
        self._tail = ()
        self._size = None

    def frame(self, screen: dict[str, Any], cols: int, rows: int) -> str:
        """The bytes (as text) that bring the local terminal to ``screen``."""
        out: list[str] = []
        full = self._size != (cols, rows)
        if full:
            out.append(f"{ESC}[0m{ESC}[H{ESC}[2J")
            self._rows = []
            self._size = (cols, rows)
        shown = min(int(screen["rows"]), rows)
        if screen.get("vt") is not None and cols >= int(screen["cols"]):
            new_rows = [vt_row_text(screen, y) for y in range(shown)]
        else:  # a narrower window: runs can be cut at its edge
            new_rows = [row_text(screen, y, cols) for y in range(shown)]
        for y, text in enumerate(new_rows):
            if full or y >= len(self._rows) or self._rows[y] != text:
                out.append(text)
        self._rows = new_rows
        title = _printable(str(screen.get("title") or ""))[:200]
        if title != self._title:
            out.append(f"{ESC}]2;{title}\x07")
            self._title = title
        modes = screen.get("modes") or {}
        tail = (
            min(int(screen["cursor_row"]), rows - 1),
            min(int(screen["cursor_col"]), cols - 1),
            bool(screen.get("cursor_visible", True)),
            bool(modes.get("app_cursor")),
            bool(modes.get("app_keypad")),
            bool(modes.get("bracketed_paste")),
        )
        if out or tail != self._tail:
            r, c, visible, app_cursor, app_keypad, paste = tail
            out.append(f"{ESC}[?1{'h' if app_cursor else 'l'}")
            out.append(f"{ESC}{'=' if app_keypad else '>'}")
            out.append(f"{ESC}[?2004{'h' if paste else 'l'}")
            out.append(f"{ESC}[{r + 1};{c + 1}H{ESC}[?25{'h' if visible else 'l'}")
            self._tail = tail
        return "".join(out)


__all__ = ["ENTER", "LEAVE", "Painter", "row_text", "sgr", "vt_row_text"]
