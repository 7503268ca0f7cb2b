"""Text and HTML renderings of engine values, for IPython reprs.

Pure functions with no IPython import, so the engine's values can show
themselves well in a notebook without the engine depending on Jupyter.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .result import Result

TAIL_LINES = 40

_STATUS_COLOURS = {
    "running": "#1f6feb",
    "completed": "#1a7f37",
    "interrupted": "#9a6700",
    "shell_exited": "#cf222e",
}


def _tail(output: str, n: int = TAIL_LINES) -> tuple[list[str], int]:
    lines = output.splitlines()
    if len(lines) <= n:
        return lines, 0
    return lines[-n:], len(lines) - n


def status_word(r: Result) -> str:
    if r.status == "completed":
        return "ok" if r.exit_code == 0 else f"failed (exit {r.exit_code})"
    if r.status == "running":
        return "running"
    if r.status == "interrupted":
        return "interrupted"
    return f"shell exited (code {r.exit_code})"


def result_text(r: Result) -> str:
    head = f"[{r.job_id} @ {r.session_id}] {status_word(r)} in {r.duration:.2f}s"
    if r.timed_out:
        head += " (still running)"
    lines, omitted = _tail(r.output)
    parts = [head]
    if r.dropped_lines:
        parts.append(f"... {r.dropped_lines} earlier lines dropped by the ring")
    if omitted:
        parts.append(f"... {omitted} lines omitted")
    parts.extend(lines)
    if r.note:
        parts.append(f"({r.note})")
    return "\n".join(parts)


def result_html(r: Result) -> str:
    colour = _STATUS_COLOURS.get(r.status, "#57606a")
    lines, omitted = _tail(r.output)
    notes = []
    if r.dropped_lines:
        notes.append(f"{r.dropped_lines} earlier lines dropped by the ring")
    if omitted:
        notes.append(f"{omitted} lines omitted above")
    if r.note:
        notes.append(r.note)
    exit_txt = "" if r.exit_code is None else f" · exit {r.exit_code}"
    still = " · still running" if r.timed_out else ""
    note_html = "".join(f'<div style="color:#57606a;font-style:italic">{html.escape(n)}</div>' for n in notes)
    body = html.escape("\n".join(lines))
    return (
        '<div class="dsh-result" style="font-family:monospace;font-size:12px">'
        f'<div><span style="background:{colour};color:white;border-radius:3px;padding:0 6px">'
        f"{html.escape(r.status)}</span> <b>{html.escape(r.job_id)}</b> @ {html.escape(r.session_id)}"
        f"{exit_txt} · {r.duration:.2f}s{still}</div>"
        f"{note_html}"
        f'<pre style="margin:4px 0;max-height:30em;overflow:auto">{body}</pre></div>'
    )
