"""JSON Schemas of what each tool returns, success or error, in the harness's JSON Schema subset.

Every result the test suite produces is validated against them (docs/internals.md, "Module notes").
"""

from __future__ import annotations

import copy
from typing import Any

from ..errors import ERROR_CODES
from ..terminal.interaction import SOURCES
from ..terminal.result import JOB_STATUSES
from ..terminal.waits import REASONS

#: Code of an unexpected failure inside the dispatcher (a bug, never a
#: validation problem); ``call()`` reports it instead of raising.
INTERNAL_ERROR_CODE = "ERROR"

TERMINAL_STATUSES = ("idle", "busy", "dead")


def _t(type_: str, **extra: Any) -> dict[str, Any]:
    return {"type": type_, **extra}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"oneOf": [schema, {"type": "null"}]}


def _obj(required: dict[str, Any], optional: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {**required, **(optional or {})},
        "required": list(required),
        "additionalProperties": False,
    }


_COUNT = _t("integer")
_JOB_STATUS = _t("string", enum=list(JOB_STATUSES))

STARTED_JOB = _obj(
    {"job_id": _t("string"), "session_id": _t("string"), "status": _JOB_STATUS},
)

AWAITING_INPUT = _obj(
    {"pid": _t("integer"), "name": _t("string"), "prompt": _t("string"), "secret": _t("boolean")}
)

INPUT_RECORD = _obj(
    {
        "source": _t("string", enum=list(SOURCES)),
        "at": _t("string"),
        "text": _t("string"),
        "secret": _t("boolean"),
        "enter": _t("boolean"),
    },
    {"key": _t("string"), "caller": _t("string")},
)

JOB_RESULT = _obj(
    {
        "job_id": _t("string"),
        "session_id": _t("string"),
        "status": _JOB_STATUS,
        "exit_code": _nullable(_t("integer")),
        "timed_out": _t("boolean"),
        "output": _t("string"),
        "output_chars": _COUNT,
        "output_lines": _COUNT,
        "omitted_chars": _COUNT,
        "omitted_lines": _COUNT,
        "dropped_lines": _COUNT,
        "cwd": _nullable(_t("string")),
        "duration_s": _t("number"),
    },
    {
        "signal": _t("integer"),
        "note": _t("string"),
        "fresh_shell": _t("boolean", const=True),
        "awaiting_input": AWAITING_INPUT,
        "reason": _t("string", enum=list(REASONS)),
        "match_line": _COUNT,
        "match_text": _t("string"),
        "inputs": {"type": "array", "items": INPUT_RECORD},
    },
)

#: bash_exec with targets: the group, started (dsh_magics/tools/group_tools.py).
GROUP_STARTED = _obj(
    {"group_id": _t("string"), "status": _t("string", enum=["running"]), "targets": _COUNT, "nodes": _t("string")}
)

GROUP_ROW = _obj(
    {
        "target": _t("string"),
        "session_id": _t("string"),
        "status": _t("string"),
        "job_id": _nullable(_t("string")),
        "exit_code": _nullable(_t("integer")),
        "duration_s": _nullable(_t("number")),
        "last_line": _t("string"),
    },
    {
        "code": _t("string", enum=list(ERROR_CODES) + [INTERNAL_ERROR_CODE]),
        "message": _t("string"),
        "timed_out": _t("boolean", const=True),
        "awaiting_input": AWAITING_INPUT,
    },
)

#: bash_wait / bash_read on a group: the merged view first, rows on request.
GROUP_RESULT = _obj(
    {
        "group_id": _t("string"),
        "status": _t("string", enum=["running", "done"]),
        "timed_out": _t("boolean"),
        "targets": _COUNT,
        "counts": {"type": "object"},
        "merged": _t("string"),
        "omitted_chars": _COUNT,
    },
    {
        "detail": {"type": "array", "items": GROUP_ROW},
        "reason": _t("string", enum=["awaiting_input"]),
        "note": _t("string"),  # over MCP: members' password prompts routed to a person (mcp/person_rounds.py)
    },
)

GROUP_INTERRUPTED = _obj({"group_id": _t("string"), "interrupted": _t("string"), "count": _COUNT})

_TERMINAL_FIELDS = {
    "session_id": _t("string"),
    "status": _t("string", enum=list(TERMINAL_STATUSES)),
    "cwd": _nullable(_t("string")),
    "running": _t("boolean"),
    "job_id": _nullable(_t("string")),
    "pid": _nullable(_t("integer")),
    "own": _t("boolean"),
}

_TERMINAL_OPTIONAL = {
    "awaiting_input": AWAITING_INPUT,
    "target": _t("string"),
    "awaiting_input_unavailable": _t("string"),
}
_TERMINAL_ROW = _obj(_TERMINAL_FIELDS, _TERMINAL_OPTIONAL)

#: ``bash_list``'s ``typed``: the terminal's input record, last entries
#: (dsh_magics/terminal/core/input_record.py); secret input is ``[secret]``.
TYPED = {
    "type": "array",
    "items": _obj(
        {
            "kind": _t("string", enum=["command", "input", "interrupt"]),
            "source": _t("string", enum=[*SOURCES, "unknown"]),
            "at": _t("string"),
            "text": _t("string"),
        },
        {"caller": _t("string"), "key": _t("string"), "job_id": _t("string")},
    ),
}

OUTPUT_SCHEMAS: dict[str, dict[str, Any]] = {
    "bash_attach": _obj({**_TERMINAL_FIELDS, "opened": _t("boolean")}, _TERMINAL_OPTIONAL),
    "bash_exec": {"oneOf": [STARTED_JOB, JOB_RESULT, GROUP_STARTED]},
    "bash_wait": {"oneOf": [JOB_RESULT, GROUP_RESULT]},
    "bash_read": {"oneOf": [GROUP_RESULT, _obj(
        {
            "session_id": _t("string"),
            "text": _t("string"),
            "first_line": _COUNT,
            "next_line": _COUNT,
            "end_line": _COUNT,
            "more": _t("boolean"),
            "omitted_chars": _COUNT,
            "omitted_lines": _COUNT,
            "dropped": _COUNT,
            "running_job_id": _nullable(_t("string")),
        }
    )]},
    "bash_interrupt": {"oneOf": [GROUP_INTERRUPTED, _obj(
        {
            "session_id": _t("string"),
            "interrupted": _t("boolean"),
            "job_id": _nullable(_t("string")),
        }
    )]},
    "bash_close": _obj({"closed": {"type": "array", "items": _t("string")}, "count": _COUNT}),
    "bash_send": JOB_RESULT,
    "bash_screen": _obj(
        {
            "session_id": _t("string"),
            "lines": {"type": "array", "items": _t("string")},
            "cursor_row": _COUNT,
            "cursor_col": _COUNT,
            "cursor_visible": _t("boolean"),
            "alt_screen": _t("boolean"),
            "title": _t("string"),
            "cols": _COUNT,
            "rows": _COUNT,
            "app_cursor": _t("boolean"),
        },
        {"marked": _t("string")},
    ),
    "bash_list": _obj(
        {
            "terminals": {"type": "array", "items": _obj(_TERMINAL_FIELDS, {**_TERMINAL_OPTIONAL, "typed": TYPED})},
            "own_session": _nullable(_t("string")),
        }
    ),
}

ERROR_RESULT = _obj(
    {
        "error": _obj(
            {
                "code": _t("string", enum=[*ERROR_CODES, INTERNAL_ERROR_CODE]),
                "message": _t("string"),
            },
            {"field": _t("string"), "details": {"type": "object"}},
        )
    }
)


def output_schema(name: str) -> dict[str, Any]:
    """Everything ``call(name, ...)`` may return: the tool's result or an error."""
    return {"oneOf": [copy.deepcopy(OUTPUT_SCHEMAS[name]), copy.deepcopy(ERROR_RESULT)]}
