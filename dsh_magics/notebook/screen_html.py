"""A terminal screen as HTML: monospace cells with their colours, bold,
underline, inverse and the cursor. Every character is escaped and the root
carries the classes MathJax skips (render.LITERAL), so text stays literal."""

from __future__ import annotations

import html
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

from ..terminal.snapshot import Modes, Run, Snapshot
from .render import LITERAL
from .styles_html import DEFAULT_BG, DEFAULT_FG, cell_style, palette, span

__all__ = ["DEFAULT_BG", "DEFAULT_FG", "palette", "screen_html", "screen_text", "snapshot_from_dict", "styled_lines"]

def _row_html(snap: Snapshot, r: int) -> str:
    runs = snap.styles[r] if snap.styles is not None else (Run(snap.lines[r]),)
    cursor_col = snap.cursor_col if (snap.cursor_visible and r == snap.cursor_row) else -1
    out: list[str] = []
    col = 0
    for run in runs:
        style = cell_style(run)
        width = _cells(run.text)
        if cursor_col >= 0 and col <= cursor_col < col + width:
            i = _index_at(run.text, cursor_col - col)
            out.append(span(run.text[:i], style))
            out.append(span(run.text[i], style, "dsh-screen-cursor"))
            out.append(span(run.text[i + 1 :], style))
        else:
            out.append(span(run.text, style))
        col += width
    if cursor_col >= col:  # the cursor is past the row's text
        out.append(" " * (cursor_col - col))
        out.append(span(" ", "", "dsh-screen-cursor"))
    return "".join(out)


def _has_style(run: Run) -> bool:
    return bool(run.fg is not None or run.bg is not None or run.bold or run.underline or run.inverse)


def styled_lines(snap: Snapshot | Mapping[str, Any], lines: Sequence[str]) -> dict[int, str]:
    """HTML with colours, bold and underline for those of ``lines`` (a job's
    last output lines, ANSI already stripped by the engine) that the screen
    still shows, by index into ``lines``; lines without any style are left out.

    The job's lines and the screen's rows are matched from the bottom up,
    text for text (a line wider than the screen spans several rows); the
    first line that does not match (a tab, a line the screen never showed,
    a full-screen program) ends the match, so a colour is never put on the
    wrong line."""
    if not isinstance(snap, Snapshot):
        snap = snapshot_from_dict(snap)
    if snap.styles is None or snap.alt_screen or not lines:
        return {}
    rows = list(snap.lines)
    bottom = len(rows)
    while bottom and not rows[bottom - 1]:
        bottom -= 1  # the blank rows below the output (the cursor's)
    last = len(lines)
    while last and not lines[last - 1].rstrip():
        last -= 1
    out: dict[int, str] = {}
    for k in range(last - 1, -1, -1):
        want = lines[k].rstrip()
        height = max(1, -(-_cells(want) // snap.cols)) if snap.cols else 1
        if height > bottom:
            break
        got = "".join(rows[bottom - height : bottom]) if height > 1 else rows[bottom - 1]
        if got.rstrip() != want or "\t" in want:
            break
        runs = [run for r in range(bottom - height, bottom) for run in snap.styles[r]]
        if any(_has_style(run) for run in runs):
            out[k] = "".join(span(run.text, cell_style(run)) for run in runs).rstrip()
        bottom -= height
    return out


def _width(ch: str) -> int:
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def _cells(text: str) -> int:
    return sum(_width(ch) for ch in text)


def _index_at(text: str, cell: int) -> int:
    """The index of the character that covers ``cell`` (cells from 0)."""
    at = 0
    for i, ch in enumerate(text):
        at += _width(ch)
        if at > cell:
            return i
    return len(text) - 1


def snapshot_from_dict(d: Mapping[str, Any]) -> Snapshot:
    """A :class:`Snapshot` back from its ``to_dict()`` form (what the engine's
    ``screen()`` returns, also through the terminal host)."""
    styles = d.get("styles")
    modes = d.get("modes") or {}
    return Snapshot(
        cols=int(d["cols"]),
        rows=int(d["rows"]),
        lines=tuple(str(x) for x in d["lines"]),
        cursor_row=int(d["cursor_row"]),
        cursor_col=int(d["cursor_col"]),
        cursor_visible=bool(d.get("cursor_visible", True)),
        alt_screen=bool(d.get("alt_screen", False)),
        used_alt_screen=bool(d.get("used_alt_screen", False)),
        title=str(d.get("title") or ""),
        modes=Modes(
            **{
                k: bool(modes.get(k, False))
                for k in ("app_cursor", "app_keypad", "bracketed_paste")
            }
        ),
        styles=None
        if styles is None
        else tuple(tuple(_run_from_dict(r) for r in row) for row in styles),
    )


def _run_from_dict(r: Mapping[str, Any]) -> Run:
    return Run(
        text=str(r["text"]),
        fg=r.get("fg"),
        bg=r.get("bg"),
        bold=bool(r.get("bold", False)),
        inverse=bool(r.get("inverse", False)),
        underline=bool(r.get("underline", False)),
        col=int(r.get("col", 0)),
    )


def _info(snap: Snapshot) -> str:
    info = f"{snap.cols}x{snap.rows}" + (", alternate screen" if snap.alt_screen else "")
    if snap.title:
        info += f" \u2014 {snap.title}"
    return info


def screen_text(snap: Snapshot | Mapping[str, Any], *, caption: str | None = None) -> str:
    """The screen as plain text (the ``text/plain`` form): a header line, then
    the rows as they are, trailing empty rows left out."""
    if not isinstance(snap, Snapshot):
        snap = snapshot_from_dict(snap)
    head = caption + " \u00b7 " + _info(snap) if caption else _info(snap)
    last = max((i for i, row in enumerate(snap.lines) if row), default=-1)
    return "\n".join([head, *snap.lines[: last + 1]])


def screen_html(snap: Snapshot | Mapping[str, Any], *, caption: str | None = None) -> str:
    """The snapshot (or its ``to_dict()`` form) as one HTML fragment (styles
    are used when it has them). A wide character is drawn by the browser's
    font, about two cells wide."""
    if not isinstance(snap, Snapshot):
        snap = snapshot_from_dict(snap)
    rows = "\n".join(_row_html(snap, r) for r in range(snap.rows))
    info = _info(snap)
    head = html.escape(caption + " \u00b7 " + info if caption else info, quote=False)
    return (
        f'<div class="dsh-screen {LITERAL}">'
        "<style>.dsh-screen-cursor{outline:1px solid #1f6feb;background:#1f6feb;color:#fff}</style>"
        f'<div style="font-size:11px;color:#57606a">{head}</div>'
        f'<pre style="font-family:var(--jp-code-font-family,monospace);font-size:12px;'
        f"line-height:1.2;margin:0;padding:4px;color:{DEFAULT_FG};background:{DEFAULT_BG};"
        f'border:1px solid #d0d7de;display:inline-block;min-width:{snap.cols}ch">'
        f"<code>{rows}</code></pre></div>"
    )
