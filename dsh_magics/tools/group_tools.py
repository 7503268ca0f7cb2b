"""The tools on groups: ``bash_exec`` with ``targets`` starts one job per target
(dsh_magics.fanout); ``bash_wait``, ``bash_read`` and ``bash_interrupt`` take
the group id. A group result leads with the merged view (identical outputs
folded under their targets), compact for a model; per-target rows on request.
"""

from __future__ import annotations

import re
from typing import Any

from .. import fanout
from ..errors import InvalidArgument, NoSuchJob
from ..terminal import Engine
from .truncate import bound

GROUP_ID = re.compile(r"^g[1-9][0-9]{0,9}$")
#: The longest last line a per-target row carries.
LAST_LINE_CHARS = 200
_HINT = "bash_wait with detail true lists each target's session_id; bash_read there pages through its output"
#: bash_exec arguments that address one terminal, not a group.
_SINGLE_ONLY = ("session_id", "wait_ms", "tty")


def is_group_id(value: object) -> bool:
    return isinstance(value, str) and GROUP_ID.match(value) is not None


def exec_group(engine: Engine, args: dict[str, Any], caller: str | None) -> dict[str, Any]:
    """Start the command on every target; the group id at once."""
    for key in _SINGLE_ONLY:
        if key in args:
            raise InvalidArgument(
                f"{key}: not with targets (a group returns at once; bash_wait takes its group_id)", field=key
            )
    timeout_ms = args.get("target_timeout_ms")
    group = fanout.start(  # checks the command, once for every member
        engine,
        args["targets"],
        args["command"],
        width=args.get("fanout", fanout.DEFAULT_FANOUT),
        member_timeout_ms=timeout_ms,
        source="agent",
        caller=caller,
    )
    labels = [run.member.label for run in group.runs]
    return {"group_id": group.id, "status": "running", "targets": len(labels), "nodes": fanout.fold(labels)}


def group_of(engine: Engine, group_id: str, caller: str | None) -> fanout.GroupJob:
    """The group, if this caller started it (as jobs are scoped to their session)."""
    group = fanout.table_for(engine).get(group_id)
    if group is None or (caller is not None and group.caller not in (None, caller)):
        raise NoSuchJob(f"job_id: no group {group_id!r} here (groups are forgotten some time after they end)", field="job_id")
    return group


def members(engine: Engine, group_id: str) -> list[dict[str, Any]]:
    """Each member of the group now: ``target``, ``session_id``, ``job_id`` and
    ``awaiting`` (what its job waits for, else None); none for an unknown
    group. (The MCP server routes members' password prompts with it.)"""
    group = fanout.table_for(engine).get(group_id)
    if group is None:
        return []
    waiting = {id(r) for r in group.awaiting()}
    return [
        {"target": r.member.label, "session_id": r.member.session_id, "job_id": r.job_id,
         "awaiting": r.awaiting if id(r) in waiting else None}
        for r in list(group.runs)
    ]


def wait_group(engine: Engine, args: dict[str, Any], caller: str | None, budget: int, timeout_ms: int) -> dict[str, Any]:
    for key in ("until", "until_screen", "idle_ms"):
        if key in args:
            raise InvalidArgument(f"{key}: a group wait takes only timeout_ms, detail and diff", field=key)
    group = group_of(engine, args["job_id"], caller)
    on_input = bool(args.get("on_input", True))
    finished = group.wait(timeout_ms=timeout_ms, on_input=on_input)
    waiting = on_input and not finished and bool(group.awaiting())
    out = group_result(
        fanout.report(group), budget, bool(args.get("detail")), bool(args.get("diff")), not finished and not waiting
    )
    if waiting:
        out["reason"] = "awaiting_input"
    return out


def read_group(engine: Engine, args: dict[str, Any], caller: str | None, budget: int) -> dict[str, Any]:
    for key in ("session_id", "since", "last"):
        if key in args:
            raise InvalidArgument(f"{key}: not with group_id (read a member by its session_id instead)", field=key)
    group = group_of(engine, args["group_id"], caller)
    return group_result(fanout.report(group), budget, bool(args.get("detail")), bool(args.get("diff")), False)


def interrupt_group(engine: Engine, args: dict[str, Any], caller: str | None) -> dict[str, Any]:
    if "session_id" in args:
        raise InvalidArgument("session_id: not with group_id", field="session_id")
    group = group_of(engine, args["group_id"], caller)
    hit = group.interrupt(source="agent", caller=caller)
    return {"group_id": group.id, "interrupted": fanout.fold(hit), "count": len(hit)}


def group_result(
    report: fanout.GroupReport, budget: int, detail: bool, diff: bool, timed_out: bool
) -> dict[str, Any]:
    merged = bound(report.text(diff=diff), budget, hint=_HINT)
    out: dict[str, Any] = {
        "group_id": report.group_id,
        "status": "done" if report.done else "running",
        "timed_out": timed_out,
        "targets": len(report.rows),
        "counts": report.counts(),
        "merged": merged.text,
        "omitted_chars": merged.omitted_chars,
    }
    if detail:
        rows = []
        for row in report.rows:
            d = row.to_dict()
            d["last_line"] = d["last_line"][:LAST_LINE_CHARS]
            if "awaiting_input" in d:
                a = d["awaiting_input"]
                d["awaiting_input"] = {"pid": int(a["pid"]), "name": str(a["name"]), "prompt": str(a["prompt"]), "secret": bool(a["secret"])}
            rows.append(d)
        out["detail"] = rows
    return out
