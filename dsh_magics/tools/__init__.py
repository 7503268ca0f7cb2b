"""Agent tools: the ``bash_*`` tools for LLM agents, over the engine.

The same terminals that people drive with magics, driven by a model through
tool calls::

    from dsh_magics import tools
    specs = tools.schemas(format="openai")         # or "plain", "anthropic"
    result = tools.call("bash_exec", {"command": "ls", "wait_ms": 5000},
                        caller_session="agent-1")  # always a JSON-ready dict

``session_id`` may be passed to every tool; omitted, it means the caller's
own session (``caller_session``). Errors come back as
``{"error": {"code", "message"}}`` with the engine's stable codes.
"""

from __future__ import annotations

from .dispatch import call
from .output_schemas import ERROR_RESULT, INTERNAL_ERROR_CODE, OUTPUT_SCHEMAS, output_schema
from .schemas import (
    DEFAULT_WAIT_TIMEOUT_MS,
    MAX_COMMAND_CHARS,
    MAX_WAIT_MS,
    TOOL_NAMES,
    schemas,
    validation_schema,
)
from .truncate import OUTPUT_BUDGET_CHARS

__all__ = [
    "DEFAULT_WAIT_TIMEOUT_MS",
    "ERROR_RESULT",
    "INTERNAL_ERROR_CODE",
    "MAX_COMMAND_CHARS",
    "MAX_WAIT_MS",
    "OUTPUT_BUDGET_CHARS",
    "OUTPUT_SCHEMAS",
    "TOOL_NAMES",
    "call",
    "output_schema",
    "schemas",
    "validation_schema",
]
