"""The result schemas MCP clients get: ``tools.OUTPUT_SCHEMAS``, in an equivalent
form that is cheaper to check.

Clients check every result against the tool's output schema (the Python SDK
with ``jsonschema``, the TypeScript SDK with Ajv), and in Python that check was
the largest part of a call's cost above the protocol's floor
(benchmarks/README.md, ``bench_mcp.py``). Two rewrites accept exactly the same
results:

- ``oneOf: [T, {"type": "null"}]`` becomes ``type: [T, "null"]``;
- a ``oneOf`` of closed objects (``additionalProperties: false``) that exclude
  each other (each requires a property the other does not allow) becomes an
  ``anyOf``, the object with the most required properties first: it stops at
  the first branch that fits instead of trying every branch.

tests/mcp/test_result_schema.py checks both forms agree on every result the
test corpus makes.
"""

from __future__ import annotations

import copy
from itertools import combinations
from typing import Any

from .. import tools


def output_schema(name: str) -> dict[str, Any] | None:
    """The tool's result schema as MCP wants it (an object at the root)."""
    schema = tools.OUTPUT_SCHEMAS.get(name)
    if schema is None:
        return None
    schema = cheaper(copy.deepcopy(schema))
    if schema.get("type") != "object":
        # bash_exec returns one of two objects: say so at the root too, as MCP requires
        # (pinned by tests/mcp/test_mcp_server.py::test_initialize_lists_every_tool_with_valid_schemas).
        schema = {"type": "object", **schema}
    return schema


def cheaper(schema: Any) -> Any:
    """``schema`` with the two rewrites above applied everywhere."""
    if isinstance(schema, list):
        return [cheaper(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: cheaper(v) for k, v in schema.items()}
    branches = out.get("oneOf")
    if isinstance(branches, list):
        nullable = _nullable_type(branches)
        if nullable is not None and set(out) == {"oneOf"}:
            return {"type": nullable}
        if _exclusive_objects(branches):
            del out["oneOf"]
            out["anyOf"] = sorted(branches, key=lambda b: -len(b.get("required", ())))
    return out


def _nullable_type(branches: list[Any]) -> list[str] | None:
    """``[T, "null"]`` for ``[{"type": T}, {"type": "null"}]`` (either order)."""
    if len(branches) != 2 or not all(isinstance(b, dict) and set(b) == {"type"} for b in branches):
        return None
    types = [b["type"] for b in branches]
    if "null" not in types or not all(isinstance(t, str) for t in types) or types[0] == types[1]:
        return None
    return [t for t in types if t != "null"] + ["null"]


def _exclusive_objects(branches: list[Any]) -> bool:
    """No value can match two of these branches."""
    for b in branches:
        if not (
            isinstance(b, dict)
            and b.get("type") == "object"
            and b.get("additionalProperties") is False
            and isinstance(b.get("properties"), dict)
        ):
            return False
    for a, b in combinations(branches, 2):
        a_needs_more = not set(a.get("required", ())) <= set(b["properties"])
        b_needs_more = not set(b.get("required", ())) <= set(a["properties"])
        if not (a_needs_more or b_needs_more):
            return False
    return True
