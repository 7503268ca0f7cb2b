"""``call(name, arguments)``: validate a model's tool call and run it.

Nothing raises out of here and no message echoes an unbounded value (docs/internals.md, "Module notes").
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import DshError, InvalidArgument, NoSuchJob, UnknownTool
from ..terminal import Engine, Result, default_registry
from ..terminal.requests import ExecRequest, SendRequest, WaitRequest
from ..terminal.snapshot import marked_text, snapshot_from_dict
from . import group_tools
from .arguments import built, checked_session, parse, short
from .output_schemas import INTERNAL_ERROR_CODE
from .results import fit_lines, job_result, terminal_row, typed_rows
from .schemas import DEFAULT_SEND_WAIT_MS, DEFAULT_WAIT_TIMEOUT_MS, TOOL_NAMES
from .truncate import MIN_BUDGET_CHARS, OUTPUT_BUDGET_CHARS

log = logging.getLogger(__name__)

_MAX_MESSAGE_CHARS = 1000


@dataclass(frozen=True)
class _Ctx:
    registry: Engine
    caller: str | None
    budget: int

    def session(self, args: dict[str, Any]) -> str:
        """The terminal a call addresses: explicit ``session_id``, else the caller's own."""
        sid = args.get("session_id", self.caller)
        if sid is None:
            raise InvalidArgument(
                "session_id: required here, because this caller has no session of its own",
                field="session_id",
            )
        return checked_session(sid, "session_id")

    def session_unchecked(self, args: dict[str, Any]) -> Any:
        """:meth:`session`, for a call whose request checks it (once) when built."""
        sid = args.get("session_id", self.caller)
        if sid is None:
            self.session(args)  # the refusal, in its words
        return sid


def call(
    name: str,
    arguments: dict[str, Any] | str | None = None,
    *,
    caller_session: str | None = None,
    registry: Engine | None = None,
    output_budget: int = OUTPUT_BUDGET_CHARS,
) -> dict[str, Any]:
    """Run tool ``name`` with ``arguments`` and return a JSON-serialisable dict.

    ``arguments`` may be a dict or the JSON text of one (OpenAI-style tool
    calls carry a string). ``caller_session`` is the calling agent's own
    session id: the terminal meant when ``session_id`` is omitted.
    ``registry`` defaults to the process-wide one. Failures come back as
    ``{"error": {"code", "message"[, "field", "details"]}}``; never raises.
    """
    try:
        if not isinstance(name, str) or name not in _HANDLERS:
            shown = repr(name)[:80]
            raise UnknownTool(f"no tool named {shown}; the tools are {', '.join(TOOL_NAMES)}")
        if caller_session is not None:
            checked_session(caller_session, "caller_session")
        if (
            isinstance(output_budget, bool)
            or not isinstance(output_budget, int)
            or output_budget < MIN_BUDGET_CHARS
        ):
            raise InvalidArgument(
                f"output_budget: must be an integer >= {MIN_BUDGET_CHARS}", field="output_budget"
            )
        args = parse(name, arguments)
        ctx = _Ctx(
            registry if registry is not None else default_registry(), caller_session, output_budget
        )
        return _HANDLERS[name](ctx, args)
    except DshError as e:
        return _error(e.code, e.message, e.details)
    except Exception as e:  # noqa: BLE001 - the contract is "never raises"
        log.exception("tool %r failed unexpectedly", name)
        return _error(INTERNAL_ERROR_CODE, f"internal error ({type(e).__name__}): {e}", {})


def _error(code: str, message: str, details: dict[str, Any]) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": short(str(message), _MAX_MESSAGE_CHARS)}
    details = dict(details or {})
    field = details.pop("field", None)
    if isinstance(field, str):
        err["field"] = field
    if details:
        try:
            err["details"] = json.loads(json.dumps(details, default=str))
        except (TypeError, ValueError) as e:  # a circular value: the code and message still go out
            log.warning("error details of %s dropped, not JSON: %s", code, e)
    return {"error": err}


# -- the tools -------------------------------------------------------------------
def _attach(ctx: _Ctx, args: dict[str, Any]) -> dict[str, Any]:
    sid = ctx.session(args)
    reg = ctx.registry
    before = reg.info(sid).pid if reg.exists(sid) else None
    info = reg.attach(
        sid, cwd=args.get("cwd"), recreate=bool(args.get("recreate", False)), target=args.get("target")
    )
    return {**terminal_row(info, ctx.caller), "opened": info.pid != before}


def _exec(ctx: _Ctx, args: dict[str, Any]) -> dict[str, Any]:
    if "targets" in args:
        return group_tools.exec_group(ctx.registry, args, ctx.caller)
    for key in ("fanout", "target_timeout_ms"):
        if key in args:
            raise InvalidArgument(f"{key}: only with targets", field=key)
    request = built(
        ExecRequest.build,
        session_id=ctx.session_unchecked(args),
        command=args["command"],
        wait_ms=args.get("wait_ms"),
        tty=bool(args.get("tty")),
        source="agent",
        caller=ctx.caller,
    )
    res = ctx.registry.run_exec(request)
    if isinstance(res, Result):
        return job_result(res, ctx.budget)
    return {"job_id": res.id, "session_id": res.owner, "status": res.status}


def _wait(ctx: _Ctx, args: dict[str, Any]) -> dict[str, Any]:
    if group_tools.is_group_id(args["job_id"]):
        timeout = args.get("timeout_ms", DEFAULT_WAIT_TIMEOUT_MS)
        return group_tools.wait_group(ctx.registry, args, ctx.caller, ctx.budget, timeout)
    _no_group_views(args)
    sid = args.get("session_id", ctx.caller)
    job = ctx.registry.job(args["job_id"])
    if sid is not None and job.owner != checked_session(sid, "session_id"):
        # Jobs are scoped like terminals: another session's job needs its
        # session_id, so one agent does not wait on another's work by accident.
        # (A caller with no session of its own addresses jobs by id alone.)
        raise NoSuchJob(
            f"job_id: job {job.id} belongs to session {job.owner!r}, not {sid!r}; "
            f"pass session_id={job.owner!r} to wait for it",
            field="job_id",
        )
    request = built(
        WaitRequest.build,
        job_id=job.id,
        timeout_ms=args.get("timeout_ms", DEFAULT_WAIT_TIMEOUT_MS),
        until=args.get("until"),
        idle_ms=args.get("idle_ms"),
        on_input=bool(args.get("on_input", True)),
        until_screen=args.get("until_screen"),
    )
    return job_result(ctx.registry.run_wait(request), ctx.budget)


def _send(ctx: _Ctx, args: dict[str, Any]) -> dict[str, Any]:
    sid = ctx.session_unchecked(args)
    if "key" in args and args.get("text"):
        raise InvalidArgument("key: send either text or a key, not both", field="key")
    request = built(
        SendRequest.build,
        session_id=sid,
        text=args.get("text"),
        key=args.get("key"),
        keys=args.get("keys"),
        enter=bool(args.get("enter", True)),
        wait_ms=args.get("wait_ms", DEFAULT_SEND_WAIT_MS),
        source="agent",
        caller=ctx.caller,
        allow_secret=False,  # a model never types a password: a person must
        allow_unknown_prompt=bool(args.get("allow_unknown_prompt", False)),
    )
    return job_result(ctx.registry.run_send(request), ctx.budget)


def _read(ctx: _Ctx, args: dict[str, Any]) -> dict[str, Any]:
    if "group_id" in args:
        return group_tools.read_group(ctx.registry, args, ctx.caller, ctx.budget)
    _no_group_views(args)
    sid = ctx.session(args)
    since = args.get("since")
    rr = ctx.registry.read(sid, since=since, last=args.get("last"))
    lines = list(rr.lines)
    if rr.partial:
        lines.append(rr.partial)  # the unfinished current line, not numbered yet
    forward = since is not None
    page = fit_lines(lines, ctx.budget, forward=forward)
    with_partial = bool(rr.partial) and page.count > 0 and (not forward or page.count == len(lines))
    numbered = page.count - (1 if with_partial else 0)
    if forward:
        first, nxt = rr.first_line, rr.first_line + numbered
    else:
        nxt = rr.next_line
        first = nxt - numbered
    return {
        "session_id": rr.session_id,
        "text": page.text,
        "first_line": first,
        "next_line": nxt,
        "end_line": rr.next_line,
        "more": forward and page.count < len(lines),
        "omitted_chars": page.omitted_chars,
        "omitted_lines": page.omitted_lines,
        "dropped": rr.dropped,
        "running_job_id": rr.job_id,
    }


def _interrupt(ctx: _Ctx, args: dict[str, Any]) -> dict[str, Any]:
    if "group_id" in args:
        return group_tools.interrupt_group(ctx.registry, args, ctx.caller)
    sid = ctx.session(args)
    job = ctx.registry.interrupt(sid, source="agent", caller=ctx.caller)
    return {"session_id": sid, "interrupted": job is not None, "job_id": job.id if job else None}


def _close(ctx: _Ctx, args: dict[str, Any]) -> dict[str, Any]:
    if args.get("all"):
        if "session_id" in args:
            raise InvalidArgument("all: cannot be combined with session_id", field="all")
        ids = [t.session_id for t in ctx.registry.list()]
        count = ctx.registry.close_all()
        return {"closed": ids, "count": count}
    sid = ctx.session(args)
    ctx.registry.close(sid)
    return {"closed": [sid], "count": 1}


def _list(ctx: _Ctx, args: dict[str, Any]) -> dict[str, Any]:
    only = checked_session(args["session_id"], "session_id") if "session_id" in args else None
    rows = [
        {**terminal_row(info, ctx.caller), "typed": typed_rows(ctx.registry, info.session_id)}
        for info in ctx.registry.list()
        if only is None or info.session_id == only
    ]
    return {"terminals": rows, "own_session": ctx.caller}


def _screen(ctx: _Ctx, args: dict[str, Any]) -> dict[str, Any]:
    sid = ctx.session(args)
    cols, rows = args.get("cols"), args.get("rows")
    if (cols is None) != (rows is None):
        raise InvalidArgument("cols and rows: give both to resize, or neither", field="cols" if cols is None else "rows")
    if cols is not None and rows is not None:
        ctx.registry.resize(sid, cols, rows)
    marks = bool(args.get("marks", False))
    snap = ctx.registry.screen(sid, styles=marks)
    out: dict[str, Any] = {
        "session_id": sid,
        "lines": snap["lines"],
        "cursor_row": snap["cursor_row"],
        "cursor_col": snap["cursor_col"],
        "cursor_visible": snap["cursor_visible"],
        "alt_screen": snap["alt_screen"],
        "title": snap["title"],
        "cols": snap["cols"],
        "rows": snap["rows"],
        "app_cursor": snap["modes"]["app_cursor"],
    }
    if marks:
        out["marked"] = marked_text(snapshot_from_dict(snap))
    return out


def _no_group_views(args: dict[str, Any]) -> None:
    for key in ("detail", "diff"):
        if key in args:
            raise InvalidArgument(f"{key}: only for a group (a group_id)", field=key)


_HANDLERS: dict[str, Callable[[_Ctx, dict[str, Any]], dict[str, Any]]] = {
    "bash_attach": _attach,
    "bash_exec": _exec,
    "bash_wait": _wait,
    "bash_read": _read,
    "bash_interrupt": _interrupt,
    "bash_close": _close,
    "bash_list": _list,
    "bash_send": _send,
    "bash_screen": _screen,
}
assert tuple(_HANDLERS) == TOOL_NAMES
