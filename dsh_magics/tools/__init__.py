"""Agent tools: the ``bash_*`` tools for LLM agents, over the engine.

``schemas(format=...)`` and ``call(name, args, caller_session=...)`` (always a JSON-ready dict): docs/tools.md.

May import: terminal/ (the Engine contract and its values), fanout/ (group commands),
errors. Must not
import: host/ (the caller hands in the engine), notebook/, mcp/, widgets/, attach/,
answer/, harness/, lab/.
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
