"""Text and HTML of a group command (``%bash_exec --on``): the per-target rows with a
progress bar while it runs, then the table and the merged output (``clubak -b``).

Pure functions over :class:`~dsh_magics.fanout.GroupReport` (no IPython). Long lists
fold: rows alike (status, exit code, last line) are one row headed by their folded
names, and past ``max_rows`` the rest fold by status alone. HTML is :data:`.render.LITERAL`:
every target, line and output escaped inside ``<code>``/``<pre>``.
"""

from __future__ import annotations

import html
import time

from ..fanout import GroupReport, Row, fold
from .render import LITERAL, badge, code, command_header, output_box

#: Rows a view shows before the rest fold by status.
MAX_ROWS = 24
BAR_CELLS = 24
_MONO = "font-family:var(--jp-code-font-family,monospace);font-size:12px"
_MUTED = "color:#57606a;font-style:italic"
_BADGE_KEYS = {"starting": "running", "timed_out": "failed", "cancelled": "interrupted"}
_ORDER = {"running": 0, "starting": 1, "queued": 2, "failed": 3, "timed_out": 4, "interrupted": 5,
          "shell_exited": 6, "cancelled": 7, "completed": 8}


def status_of(r: Row) -> str:
    """A row's status as shown: its code for a failure, the exit code of a completed job."""
    if r.code:
        return r.code
    if r.status == "completed":
        return "ok" if r.exit_code == 0 else f"exit {r.exit_code}"
    if r.awaiting_input:
        return "awaiting input (secret)" if r.awaiting_input.get("secret") else "awaiting input"
    return r.status.replace("_", " ")


def elapsed(r: Row, now: float, started: dict[str, float | None]) -> str:
    if r.duration_s is not None and r.status not in ("running", "starting"):
        return f"{r.duration_s:.2f}s"
    since = started.get(r.target)
    return "" if since is None else f"{max(0.0, now - since):.1f}s"


def folded_rows(rows: list[Row], times: dict[str, str], max_rows: int = MAX_ROWS) -> list[tuple[str, int, Row, str]]:
    """``(names, count, a row, elapsed)``: rows alike folded; unfinished and failed ones first;
    past ``max_rows`` the rest folded by status alone (last line ``…``)."""
    alike: dict[tuple[str, str], list[Row]] = {}
    for r in rows:
        alike.setdefault((status_of(r), r.last_line), []).append(r)
    groups = sorted(alike.values(), key=lambda rs: _ORDER.get(rs[0].status, 9))
    out: list[tuple[str, int, Row, str]] = []
    for rs in groups[: max_rows if len(groups) > max_rows else len(groups)]:
        t = times.get(rs[0].target, "") if len(rs) == 1 else ""
        out.append((fold(r.target for r in rs), len(rs), rs[0], t))
    rest: dict[str, list[Row]] = {}
    for rs in groups[max_rows:] if len(groups) > max_rows else []:
        for r in rs:
            rest.setdefault(status_of(r), []).append(r)
    for rs in rest.values():
        first = rs[0]
        out.append((fold(r.target for r in rs), len(rs), Row(first.target, first.session_id, first.status,
                    None, first.exit_code, None, "…", None, first.code), ""))
    return out


def progress(rep: GroupReport) -> tuple[int, int]:
    done = sum(1 for r in rep.rows if r.status not in ("queued", "starting", "running"))
    return done, len(rep.rows)


def bar_text(done: int, total: int) -> str:
    filled = BAR_CELLS * done // total if total else BAR_CELLS
    return "[" + "#" * filled + "." * (BAR_CELLS - filled) + f"] {done}/{total} done"


def head_line(rep: GroupReport) -> str:
    counts = ", ".join(f"{n} {s.replace('_', ' ')}" for s, n in rep.counts().items())
    state = "done" if rep.done else "running"
    return f"group {rep.group_id} ({state}): {len(rep.rows)} targets: {counts}"


def live_text(rep: GroupReport, started: dict[str, float | None], max_rows: int = MAX_ROWS) -> str:
    """The running view as text: head, command, progress bar, one row per target (folded)."""
    now = time.time()
    times = {r.target: elapsed(r, now, started) for r in rep.rows}
    done, total = progress(rep)
    lines = [head_line(rep), "$ " + command_header(rep.command), bar_text(done, total)]
    for names, n, r, t in folded_rows(rep.rows, times, max_rows):
        who = names + (f" ({n})" if n > 1 else "")
        lines.append(f"  {who}  {status_of(r)}  {t}  {r.last_line[:100]}".rstrip())
    return "\n".join(lines) + "\n"


def final_text(rep: GroupReport, diff: bool = False) -> str:
    """A settled (or timed-out) group: the table, then the summary and merged output."""
    return f"$ {command_header(rep.command)}\n{rep.table()}{rep.text(diff)}"


def _bar_html(done: int, total: int) -> str:
    pct = 100 * done // total if total else 100
    return (
        f'<div style="display:flex;align-items:center;gap:6px"><div class="dsh-group-bar" '
        f'style="width:16em;height:8px;background:rgba(127,127,127,0.2);border-radius:4px">'
        f'<div style="width:{pct}%;height:8px;background:#1a7f37;border-radius:4px"></div></div>'
        f"<span>{done}/{total} done</span></div>"
    )


def _rows_html(rows: list[tuple[str, int, Row, str]]) -> str:
    body = []
    for names, n, r, t in rows:
        count = f" ({n})" if n > 1 else ""
        key = "failed" if r.code or (r.status == "completed" and r.exit_code not in (0, None)) else r.status
        body.append(
            f"<tr><td>{code(names)}{count}</td><td>{badge(status_of(r), _BADGE_KEYS.get(key, key))}</td>"
            f"<td>{code(t)}</td><td>{code(r.last_line[:200])}</td></tr>"
        )
    th = "".join(f'<th style="text-align:left">{h}</th>' for h in ("target", "status", "time", "last line"))
    return f'<table class="dsh-group-rows"><thead><tr>{th}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def group_html(
    rep: GroupReport, started: dict[str, float | None], diff: bool = False, max_rows: int = MAX_ROWS,
    note: str | None = None,
) -> str:
    """The group's HTML: head, command, progress bar, the rows; once it is done (or
    stopped waiting), the summary and the merged output (or the diff view) below."""
    now = time.time()
    times = {r.target: elapsed(r, now, started) for r in rep.rows}
    done, total = progress(rep)
    state = "done" if rep.done else "running"
    merged = ""
    if rep.done or note:
        merged = output_box(html.escape(rep.text(diff)), "dsh-group-merged")
    notes = f'<div style="{_MUTED}">{code(note)}</div>' if note else ""
    return (
        f'<div class="dsh-group dsh-group-{state} {LITERAL}" style="{_MONO}">'
        f"<div>{code(head_line(rep))}</div>"
        f'<div style="{_MUTED}" title="{html.escape(rep.command)}">{code("$ " + command_header(rep.command))}</div>'
        f"{_bar_html(done, total)}{_rows_html(folded_rows(rep.rows, times, max_rows))}{notes}{merged}</div>"
    )
