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
from ..terminal import Engine, Result, TerminalInfo, default_registry, waits
from ..terminal import validation as V
from ..terminal.result import iso_time
from ..terminal.snapshot import marked_text, snapshot_from_dict
from .argcheck import Checker, Violation
from .output_schemas import INTERNAL_ERROR_CODE
from .schemas import (
    DEFAULT_SEND_WAIT_MS,
    DEFAULT_WAIT_TIMEOUT_MS,
    SPECS,
    TOOL_NAMES,
    validation_schema,
)
from .truncate import MIN_BUDGET_CHARS, OUTPUT_BUDGET_CHARS, bound

log = logging.getLogger(__name__)

_CHECKERS = {name: Checker(validation_schema(name)) for name in TOOL_NAMES}
_PARAM_TYPES = {name: {p.name: p.type for p in spec.params} for name, spec in SPECS.items()}
_MAX_MESSAGE_CHARS = 1000
#: Arguments the engine checks itself: a schema violation on one of them is
#: reported in the engine's words (one wording per error, whoever checks).
_ENGINE_CHECKS: dict[str, Callable[[Any, str], Any]] = {
    name: V.CHECKS[name] for name in ("session_id", "command", "job_id", "cwd")
}
_READ_HINT = "bash_read with since pages through it"


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
        return _checked_session(sid, "session_id")


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
            _checked_session(caller_session, "caller_session")
        if (
            isinstance(output_budget, bool)
            or not isinstance(output_budget, int)
            or output_budget < MIN_BUDGET_CHARS
        ):
            raise InvalidArgument(
                f"output_budget: must be an integer >= {MIN_BUDGET_CHARS}", field="output_budget"
            )
        args = _parse(name, arguments)
        ctx = _Ctx(
            registry if registry is not None else default_registry(), caller_session, output_budget
        )
        return _HANDLERS[name](ctx, args)
    except DshError as e:
        return _error(e.code, e.message, e.details)
    except Exception as e:  # noqa: BLE001 - the contract is "never raises"
        log.exception("tool %r failed unexpectedly", name)
        return _error(INTERNAL_ERROR_CODE, f"internal error ({type(e).__name__}): {e}", {})


# -- argument checking --------------------------------------------------------
def _parse(name: str, arguments: Any) -> dict[str, Any]:
    if arguments is None:
        arguments = {}
    if isinstance(arguments, (str, bytes)):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError as e:
            raise InvalidArgument(f"arguments: not valid JSON ({e})", field="arguments") from None
    if not isinstance(arguments, dict):
        raise InvalidArgument(
            f"arguments: expected a JSON object, got {_json_type(arguments)}", field="arguments"
        )
    errors = sorted(
        _CHECKERS[name].violations(arguments), key=lambda e: (len(e.path), list(e.path))
    )
    if errors:
        described = [_describe(name, e) for e in errors[:3]]
        raise InvalidArgument("; ".join(m for _, m in described), field=described[0][0])
    # JSON has one number type: 5.0 passes as an integer; hand the engine ints.
    return {
        k: int(v) if isinstance(v, float) and _PARAM_TYPES[name].get(k) == "integer" else v
        for k, v in arguments.items()
    }


def _describe(tool: str, error: Violation) -> tuple[str, str]:
    """(field, message) for one violation; the message starts with the field."""
    path = list(error.path)
    kind = error.keyword
    if not path:
        instance = error.value if isinstance(error.value, dict) else {}
        if kind == "required":
            missing = [k for k in error.expected if k not in instance]
            field = missing[0] if missing else "arguments"
            return field, f"{field}: missing; {tool} requires it"
        if kind == "additionalProperties":
            allowed = _PARAM_TYPES[tool]
            extra = [k for k in instance if k not in allowed]
            field = _short(str(extra[0])) if extra else "arguments"
            takes = ", ".join(allowed) or "no arguments"
            return field, f"{field}: unknown argument; {tool} takes {takes}"
        return "arguments", f"arguments: fails the schema's {kind!r} ({_short(repr(error.expected), 80)})"
    field = ".".join(str(p) for p in path)
    value = error.value
    schema = error.schema
    engine_check = _ENGINE_CHECKS.get(field)
    if engine_check is not None and kind != "type":
        try:
            engine_check(value, field)
        except InvalidArgument as e:
            return field, f"{field}: {e.message}"  # the engine's wording, as for any other caller
    if kind == "type":
        return field, f"{field}: expected {error.expected}, got {_json_type(value)}"
    if kind in ("minimum", "maximum"):
        low, high = schema.get("minimum"), schema.get("maximum")
        rng = (
            f"from {low} to {high}"
            if low is not None and high is not None
            else f"{kind} {error.expected}"
        )
        return field, f"{field}: must be {rng}, got {_short(repr(value), 40)}"
    if kind in ("minLength", "minItems"):
        if error.expected == 1:
            return field, f"{field}: must not be empty"
        least = f"be at least {error.expected} characters" if kind == "minLength" else f"have at least {error.expected} items"
        return field, f"{field}: must {least}"
    if kind in ("maxLength", "maxItems"):
        size = f"is {len(value)} characters long" if kind == "maxLength" else f"has {len(value)} items"
        return field, f"{field}: {size}; the limit is {error.expected}"
    if kind == "enum":
        options = ", ".join(str(o) for o in error.expected)
        return field, f"{field}: must be one of {_short(options, 300)}; got {_short(repr(value), 40)}"
    return field, f"{field}: fails the schema's {kind!r} ({_short(repr(error.expected), 80)})"


def _checked(check: Callable[[Any, str], Any], value: Any, field: str) -> Any:
    """The engine's own check (:mod:`dsh_magics.terminal.validation`), its
    message prefixed with the tool argument it is about."""
    try:
        return check(value, field)
    except InvalidArgument as e:
        raise InvalidArgument(f"{field}: {e.message}", field=field) from None


def _checked_session(sid: Any, field: str) -> str:
    return _checked(V.session_id, sid, field)  # type: ignore[no-any-return]


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _error(code: str, message: str, details: dict[str, Any]) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": _short(str(message), _MAX_MESSAGE_CHARS)}
    details = dict(details or {})
    field = details.pop("field", None)
    if isinstance(field, str):
        err["field"] = field
    if details:
        try:
            err["details"] = json.loads(json.dumps(details, default=str))
        except (TypeError, ValueError):
            pass
    return {"error": err}


# -- results ------------------------------------------------------------------
def _job_result(res: Result, budget: int) -> dict[str, Any]:
    out = bound(res.output, budget, hint=_READ_HINT)
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
        d["awaiting_input"] = _awaiting(res.awaiting_input)
    if res.reason:
        d["reason"] = res.reason
    if res.match_line is not None:
        d["match_line"] = int(res.match_line)
        d["match_text"] = res.match_text or ""
    if res.inputs:
        d["inputs"] = [_input_row(r) for r in res.inputs]
    return d


def _awaiting(a: dict[str, Any]) -> dict[str, Any]:
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


def _typed_rows(ctx: _Ctx, session_id: str) -> list[dict[str, Any]]:
    """Who typed what into the terminal lately (its input record, newest last)."""
    try:
        entries = ctx.registry.inputs(session_id, last=TYPED_ROWS)
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


def _terminal_row(info: TerminalInfo, caller: str | None) -> dict[str, Any]:
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
        row["awaiting_input"] = _awaiting(info.awaiting_input)
    if info.awaiting_input_unavailable:
        row["awaiting_input_unavailable"] = info.awaiting_input_unavailable
    return row


# -- the tools -------------------------------------------------------------------
def _attach(ctx: _Ctx, args: dict[str, Any]) -> dict[str, Any]:
    sid = ctx.session(args)
    reg = ctx.registry
    before = reg.info(sid).pid if reg.exists(sid) else None
    info = reg.attach(
        sid, cwd=args.get("cwd"), recreate=bool(args.get("recreate", False)), target=args.get("target")
    )
    return {**_terminal_row(info, ctx.caller), "opened": info.pid != before}


def _exec(ctx: _Ctx, args: dict[str, Any]) -> dict[str, Any]:
    sid = ctx.session(args)
    command = _checked(V.command, args["command"], "command")
    tty = bool(args.get("tty"))
    res = ctx.registry.exec(sid, command, wait_ms=args.get("wait_ms"), tty=tty, source="agent", caller=ctx.caller)
    if isinstance(res, Result):
        return _job_result(res, ctx.budget)
    return {"job_id": res.id, "session_id": res.owner, "status": res.status}


def _wait(ctx: _Ctx, args: dict[str, Any]) -> dict[str, Any]:
    sid = args.get("session_id", ctx.caller)
    job = ctx.registry.job(args["job_id"])
    if sid is not None and job.owner != _checked_session(sid, "session_id"):
        # Jobs are scoped like terminals: another session's job needs its
        # session_id, so one agent does not wait on another's work by accident.
        # (A caller with no session of its own addresses jobs by id alone.)
        raise NoSuchJob(
            f"job_id: job {job.id} belongs to session {job.owner!r}, not {sid!r}; "
            f"pass session_id={job.owner!r} to wait for it",
            field="job_id",
        )
    timeout_ms = args.get("timeout_ms", DEFAULT_WAIT_TIMEOUT_MS)
    res = waits.wait(
        ctx.registry,
        job.id,
        timeout_ms / 1000.0,
        until=args.get("until"),
        idle_ms=args.get("idle_ms"),
        on_input=bool(args.get("on_input", True)),
        until_screen=args.get("until_screen"),
    )
    return _job_result(res, ctx.budget)


def _send(ctx: _Ctx, args: dict[str, Any]) -> dict[str, Any]:
    sid = ctx.session(args)
    if "key" in args and args.get("text"):
        raise InvalidArgument("key: send either text or a key, not both", field="key")
    res = ctx.registry.send(
        sid,
        args.get("text"),
        key=args.get("key"),
        keys=args.get("keys"),
        enter=bool(args.get("enter", True)),
        wait_ms=args.get("wait_ms", DEFAULT_SEND_WAIT_MS),
        source="agent",
        caller=ctx.caller,
        allow_secret=False,  # a model never types a password: a person must
        allow_unknown_prompt=bool(args.get("allow_unknown_prompt", False)),
    )
    return _job_result(res, ctx.budget)


def _read(ctx: _Ctx, args: dict[str, Any]) -> dict[str, Any]:
    sid = ctx.session(args)
    since = args.get("since")
    rr = ctx.registry.read(sid, since=since, last=args.get("last"))
    lines = list(rr.lines)
    if rr.partial:
        lines.append(rr.partial)  # the unfinished current line, not numbered yet
    forward = since is not None
    page = _fit_lines(lines, ctx.budget, forward=forward)
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


@dataclass(frozen=True)
class _Page:
    text: str
    count: int  # lines returned (a line cut to the budget counts)
    omitted_chars: int
    omitted_lines: int


def _fit_lines(lines: list[str], budget: int, *, forward: bool) -> _Page:
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
        return _Page(cut.text, 1, total - shown, len(lines))
    if not forward:
        picked.reverse()
    text = "\n".join(picked)
    return _Page(text, len(picked), total - len(text), len(lines) - len(picked))


def _interrupt(ctx: _Ctx, args: dict[str, Any]) -> dict[str, Any]:
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
    only = _checked_session(args["session_id"], "session_id") if "session_id" in args else None
    rows = [
        {**_terminal_row(info, ctx.caller), "typed": _typed_rows(ctx, info.session_id)}
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
