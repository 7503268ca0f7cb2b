"""Styled text as HTML: a colour (palette index, ``#rrggbb``) as CSS, a run of
one style as an escaped ``<span>``, and an output's lines with the colours the
engine kept for them (``Result.styles``). Shared by the screen and the result views."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from ..terminal.snapshot import Colour, Run

DEFAULT_FG = "#1f2328"
DEFAULT_BG = "#ffffff"

#: xterm's 16 standard colours.
_BASE16 = (
    "#000000", "#cd0000", "#00cd00", "#cdcd00", "#0000ee", "#cd00cd", "#00cdcd", "#e5e5e5",
    "#7f7f7f", "#ff0000", "#00ff00", "#ffff00", "#5c5cff", "#ff00ff", "#00ffff", "#ffffff",
)  # fmt: skip


def palette(index: int) -> str:
    """The xterm-256 colour of a palette index."""
    if index < 16:
        return _BASE16[index]
    if index < 232:
        i = index - 16
        steps = [0, 95, 135, 175, 215, 255]
        r, g, b = steps[i // 36], steps[(i // 6) % 6], steps[i % 6]
        return f"#{r:02x}{g:02x}{b:02x}"
    level = 8 + 10 * (index - 232)
    return f"#{level:02x}{level:02x}{level:02x}"


def _css(c: Colour) -> str | None:
    if c is None:
        return None
    if isinstance(c, int):
        return palette(c)
    return c


def cell_style(run: Run) -> str:
    fg, bg = _css(run.fg), _css(run.bg)
    if run.inverse:
        fg, bg = (bg or DEFAULT_BG), (fg or DEFAULT_FG)
    parts = []
    if fg:
        parts.append(f"color:{fg}")
    if bg:
        parts.append(f"background:{bg}")
    if run.bold:
        parts.append("font-weight:bold")
    if run.underline:
        parts.append("text-decoration:underline")
    return ";".join(parts)


def span(text: str, style: str, cls: str = "") -> str:
    body = html.escape(text, quote=False)
    attrs = f' class="{cls}"' if cls else ""
    if style:
        attrs += f' style="{style}"'
    return f"<span{attrs}>{body}</span>" if attrs else body


def output_styles(styles: Sequence[Sequence[Any]], lines: Sequence[str], offset: int = 0) -> dict[int, str]:
    """HTML with colours, bold and underline for those of ``lines`` (an
    output's lines from index ``offset``, as a view shows them) that
    ``styles`` (``Result.styles`` rows, kept by the engine for the whole
    output) colours, by index into ``lines``. A row that does not fit its
    line (the output was cut or replaced) leaves that line plain, so a colour
    never lands on the wrong text."""
    rows: dict[int, list[Sequence[Any]]] = {}
    for row in styles:
        if len(row) == 8 and isinstance(row[0], int) and 0 <= row[0] - offset < len(lines):
            rows.setdefault(row[0] - offset, []).append(row)
    out: dict[int, str] = {}
    for i, line_rows in rows.items():
        line = lines[i]
        parts, at = [], 0
        for _, start, end, fg, bg, bold, underline, inverse in sorted(line_rows, key=lambda r: r[1]):
            if not (isinstance(start, int) and isinstance(end, int) and at <= start < end <= len(line)):
                break
            run = Run(line[start:end], fg, bg, bool(bold), bool(inverse), bool(underline))
            parts.append(html.escape(line[at:start], quote=False))
            parts.append(span(run.text, cell_style(run)))
            at = end
        else:
            parts.append(html.escape(line[at:], quote=False))
            out[i] = "".join(parts)
    return out
