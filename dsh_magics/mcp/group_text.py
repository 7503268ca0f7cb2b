"""The text of a group's results (``bash_exec`` with ``targets``, and
``bash_wait``/``bash_read``/``bash_interrupt`` on its group id) for hosts that
give a model only the text content (docs/mcp.md, "What the client sees").

A model reads it once: the merged view the tools made (``merged``: the
outcome lines, then each distinct output once under the folded targets that
printed it, ``clubak -b`` style, from the fan-out's report), then, when the
call asked for ``detail``, the per-target table. Made from the result alone,
so the text says what the structured content says, nothing later.
"""

from __future__ import annotations

from typing import Any

from ..tools.truncate import OUTPUT_BUDGET_CHARS, bound

#: The table's columns (a session column joins when a target's session is not its name).
_HEAD = ("target", "status", "exit", "time", "last line")
_LAST_LINE = 80
_TABLE_HINT = "the structured content has every row; bash_read with a row's session_id pages through its output"


def is_group(result: dict[str, Any]) -> bool:
    return isinstance(result.get("group_id"), str)


def render_group(result: dict[str, Any]) -> str:
    """Text for a group result; KeyError/TypeError for a shape it does not know."""
    gid = result["group_id"]
    if "merged" in result:
        return _view(gid, result)
    if "nodes" in result:
        return (
            f"group {gid}: {result['status']} on {result['targets']} target(s): {result['nodes']}; "
            f"bash_wait with job_id {gid} returns the merged output once all end"
        )
    if "interrupted" in result:
        if not result["count"]:
            return f"group {gid}: no target was running"
        return (
            f"group {gid}: Ctrl-C sent to {result['count']} target(s): {result['interrupted']}; "
            f"bash_wait with job_id {gid} shows how they ended"
        )
    raise KeyError("merged")


def _view(gid: str, r: dict[str, Any]) -> str:
    parts = [r["merged"].rstrip("\n") or f"group {gid}: (no output)"]
    if r.get("reason") == "awaiting_input":
        parts.append(
            f"(returned early: a target waits for input, see 'awaiting input' above; "
            f"bash_wait with job_id {gid} waits on)"
        )
    elif r.get("timed_out"):
        parts.append(f"(timed out with targets still running; bash_wait with job_id {gid} to keep waiting)")
    if r.get("note"):
        parts.append(f"note: {r['note']}")
    rows = r.get("detail")
    if isinstance(rows, list) and rows:
        # set apart from the last output block, which it must not seem part of
        parts.append("\nper target:\n" + bound(table(rows), OUTPUT_BUDGET_CHARS, hint=_TABLE_HINT).text.rstrip("\n"))
    return "\n".join(parts)


def table(rows: list[dict[str, Any]]) -> str:
    """One line per target: target, [session,] status (or error code), exit
    code, duration, last line; columns aligned, the last line last."""
    with_session = any(row["session_id"] != row["target"] for row in rows)
    head = _HEAD[:1] + (("session",) if with_session else ()) + _HEAD[1:]
    body = [
        (
            str(row["target"]),
            *((str(row["session_id"]),) if with_session else ()),
            _status(row),
            "" if row.get("exit_code") is None else str(row["exit_code"]),
            "" if row.get("duration_s") is None else f"{row['duration_s']:.2f}s",
            _one_line(str(row.get("last_line") or "")),
        )
        for row in rows
    ]
    n = len(head) - 1
    widths = [max(len(line[i]) for line in (head, *body)) for i in range(n)]
    return "".join(
        ("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(line[:n])) + "  " + line[n]).rstrip() + "\n"
        for line in (head, *body)
    )


def _status(row: dict[str, Any]) -> str:
    status = str(row.get("code") or row["status"])
    if row.get("timed_out"):
        status += " (target timeout)"
    waiting = row.get("awaiting_input")
    if isinstance(waiting, dict):
        status += " (secret prompt: a person answers)" if waiting.get("secret") else " (waits for input)"
    return status


def _one_line(text: str) -> str:
    """A last line as one table cell: control characters shown, at most 80 characters."""
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return shown if len(shown) <= _LAST_LINE else shown[: _LAST_LINE - 3] + "..."


__all__ = ["is_group", "render_group", "table"]
