"""Engine values as the JSON the tools return: job results, terminal rows, input records, pages of lines."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import DshError
from ..terminal import Engine, Result, TerminalInfo
from ..terminal.result import iso_time
from .truncate import bound

READ_HINT = "bash_read with since pages through it"


def job_result(res: Result, budget: int) -> dict[str, Any]:
    out = bound(res.output, budget, hint=READ_HINT)
    d: dict[str, Any] = {
        "job_id": res.job_id,
        "session_id": res.session_id,
        "status": res.status,
        "exit_code": None if res.exit_code is None else int(res.exit_code),
        "timed_out": bool(res.timed_out),
        "output": out.text,
        "output_chars": out.total_chars,
        "output_lines": out.total_lines,
        "omitted_chars": out.omitted_chars,
        "omitted_lines": out.omitted_lines,
        "dropped_lines": int(res.dropped_lines),
        "cwd": res.cwd,
        "duration_s": round(res.duration, 3),
    }
    if res.signal is not None:
        d["signal"] = int(res.signal)
    if res.note:
        d["note"] = res.note
    if res.fresh_shell:
        d["fresh_shell"] = True
    d.update(_interaction_fields(res))
    return d


def _interaction_fields(res: Result) -> dict[str, Any]:
    """awaiting_input, reason, match_line/text and inputs, only when relevant."""
    d: dict[str, Any] = {}
    if res.awaiting_input:
        d["awaiting_input"] = awaiting(res.awaiting_input)
    if res.reason:
        d["reason"] = res.reason
    if res.match_line is not None:
        d["match_line"] = int(res.match_line)
        d["match_text"] = res.match_text or ""
    if res.inputs:
        d["inputs"] = [_input_row(r) for r in res.inputs]
    return d


def awaiting(a: dict[str, Any]) -> dict[str, Any]:
    return {
        "pid": int(a["pid"]),
        "name": str(a["name"]),
        "prompt": str(a["prompt"]),
        "secret": bool(a["secret"]),
    }


def _input_row(r: dict[str, Any]) -> dict[str, Any]:
    row = {
        "source": r["source"],
        "at": iso_time(r["at"]) or "",
        "text": r["text"],
        "secret": bool(r["secret"]),
        "enter": bool(r.get("enter", True)),
    }
    if r.get("key"):
        row["key"] = r["key"]
    if r.get("caller"):
        row["caller"] = r["caller"]
    return row


#: Entries of a terminal's input record in a ``bash_list`` row, and their text's bound.
TYPED_ROWS, TYPED_CHARS = 5, 200


def typed_rows(engine: Engine, session_id: str) -> list[dict[str, Any]]:
    """Who typed what into the terminal lately (its input record, newest last)."""
    try:
        entries = engine.inputs(session_id, last=TYPED_ROWS)
    except DshError:
        return []  # closed meanwhile
    rows = []
    for e in entries:
        row: dict[str, Any] = {
            "kind": str(e["kind"]),
            "source": e.get("source") or "unknown",
            "at": iso_time(e["at"]) or "",
            "text": str(e.get("text") or "")[:TYPED_CHARS],
        }
        for key in ("caller", "key", "job_id"):
            if e.get(key):
                row[key] = str(e[key])
        rows.append(row)
    return rows


def terminal_row(info: TerminalInfo, caller: str | None) -> dict[str, Any]:
    row: dict[str, Any] = {
        "session_id": info.session_id,
        "status": info.status,
        "cwd": info.cwd,
        "running": info.running,
        "job_id": info.job_id,
        "pid": info.pid,
        "own": info.session_id == caller,
        "target": info.target,
    }
    if info.awaiting_input:
        row["awaiting_input"] = awaiting(info.awaiting_input)
    if info.awaiting_input_unavailable:
        row["awaiting_input_unavailable"] = info.awaiting_input_unavailable
    return row


@dataclass(frozen=True)
class Page:
    text: str
    count: int  # lines returned (a line cut to the budget counts)
    omitted_chars: int
    omitted_lines: int


def fit_lines(lines: list[str], budget: int, *, forward: bool) -> Page:
    """Whole lines that fit ``budget`` characters, from the front (paging
    forward) or from the back (the newest). A single line longer than the
    whole budget comes back head-and-tail bounded, so paging always advances."""
    order = lines if forward else lines[::-1]
    picked: list[str] = []
    used = 0
    for line in order:
        cost = len(line) + (1 if picked else 0)
        if used + cost > budget:
            break
        picked.append(line)
        used += cost
    total = len("\n".join(lines))
    if not picked and lines:
        cut = bound(order[0], budget, hint="an over-long line")
        shown = cut.total_chars - cut.omitted_chars
        return Page(cut.text, 1, total - shown, len(lines))
    if not forward:
        picked.reverse()
    text = "\n".join(picked)
    return Page(text, len(picked), total - len(text), len(lines) - len(picked))
