"""What a screen shows at one moment (:class:`Snapshot`) and the text made of it
for a model (:func:`marked_text`): plain data, without the emulator.

Kept apart from :mod:`.screen` so that code which only carries or shows
snapshots (the tools, the host's clients, the notebook views) does not load
the emulator's C binding, whose import parses the library's declarations
(0.15-0.35 s; benchmarks/README.md, ``bench_startup.py``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

Colour = int | str | None  # palette index 0-255, "#rrggbb", or the default



@dataclass(frozen=True)
class Run:
    """Consecutive cells of one row with the same style."""

    text: str
    fg: Colour = None
    bg: Colour = None
    bold: bool = False
    inverse: bool = False
    underline: bool = False
    col: int = 0  # the cell where the run starts


@dataclass(frozen=True)
class Modes:
    """The terminal modes that change what a key sends."""

    app_cursor: bool = False
    app_keypad: bool = False
    bracketed_paste: bool = False


@dataclass(frozen=True)
class Snapshot:
    """The screen at one moment. Rows are text with trailing blanks cut;
    ``cursor_col`` counts cells (a wide character takes two)."""

    cols: int
    rows: int
    lines: tuple[str, ...]
    cursor_row: int
    cursor_col: int
    cursor_visible: bool
    alt_screen: bool
    used_alt_screen: bool
    title: str
    modes: Modes
    styles: tuple[tuple[Run, ...], ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["lines"] = list(self.lines)
        if self.styles is None:
            del d["styles"]
        else:
            d["styles"] = [[_run_dict(r) for r in row] for row in self.styles]
        return d


def snapshot_from_dict(d: dict[str, Any]) -> Snapshot:
    """The :class:`Snapshot` a :meth:`Snapshot.to_dict` came from (e.g.
    ``Engine.screen``'s value, through the host)."""
    styles = d.get("styles")
    return Snapshot(
        cols=d["cols"],
        rows=d["rows"],
        lines=tuple(d["lines"]),
        cursor_row=d["cursor_row"],
        cursor_col=d["cursor_col"],
        cursor_visible=d["cursor_visible"],
        alt_screen=d["alt_screen"],
        used_alt_screen=d["used_alt_screen"],
        title=d["title"],
        modes=Modes(**d["modes"]),
        styles=None if styles is None else tuple(tuple(Run(**r) for r in row) for row in styles),
    )


def _run_dict(run: Run) -> dict[str, Any]:
    d = {"text": run.text, "col": run.col}
    for key in ("fg", "bg"):
        if getattr(run, key) is not None:
            d[key] = getattr(run, key)
    for key in ("bold", "inverse", "underline"):
        if getattr(run, key):
            d[key] = True
    return d


# -- a compact marking for agents ----------------------------------------

HIGHLIGHT_OPEN, HIGHLIGHT_CLOSE = "\u27e6", "\u27e7"  # ⟦ ⟧


def marked_text(snap: Snapshot) -> str:
    """The screen as text a model can read: a header with the size, the
    cursor (1-based row and column) and the screen in use, then the rows,
    numbered, with highlighted cells between ⟦ and ⟧ (a menu's selected
    item): inverse video, or a background other than the screen's usual one
    (the one most cells have). Trailing empty rows are summarised."""
    where = "alternate screen" if snap.alt_screen else "main screen"
    cursor = f"cursor row {snap.cursor_row + 1} col {snap.cursor_col + 1}"
    if not snap.cursor_visible:
        cursor += " (hidden)"
    head = f"[{snap.cols}x{snap.rows}, {cursor}, {where}"
    if snap.title:
        head += f", title {snap.title!r}"
    lines = [head + "]"]
    usual = _usual_background(snap)
    rows = [_marked_row(snap, r, usual) for r in range(snap.rows)]
    last = max((i for i, row in enumerate(rows) if row), default=-1)
    width = len(str(snap.rows))
    for i in range(last + 1):
        lines.append(f"{i + 1:>{width}}|{rows[i]}")
    if last + 1 < snap.rows:
        lines.append(f"(rows {last + 2}-{snap.rows} empty)")
    return "\n".join(lines)


def _usual_background(snap: Snapshot) -> tuple[Colour, bool]:
    counts: dict[tuple[Colour, bool], int] = {}
    for row in snap.styles or ():
        for run in row:
            key = (run.bg, run.inverse)
            counts[key] = counts.get(key, 0) + len(run.text)
    return max(counts, key=lambda k: counts[k]) if counts else (None, False)


def _marked_row(snap: Snapshot, r: int, usual: tuple[Colour, bool]) -> str:
    if snap.styles is None:
        return snap.lines[r]
    parts: list[str] = []
    for run in snap.styles[r]:
        if (run.bg, run.inverse) != usual and run.text.strip():
            text = run.text.rstrip()
            pad = " " * (len(run.text) - len(text))
            parts.append(f"{HIGHLIGHT_OPEN}{text}{HIGHLIGHT_CLOSE}{pad}")
        else:
            parts.append(run.text)
    return "".join(parts).rstrip()
