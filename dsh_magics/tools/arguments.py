"""A model's tool arguments: parsed, checked against the tool's schema, and described in one line per problem.

Messages start with the field and never echo an unbounded value.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import InvalidArgument
from ..terminal import requests as R
from ..terminal import validation as V
from .argcheck import Checker, Violation
from .schemas import SPECS, TOOL_NAMES, validation_schema

_CHECKERS = {name: Checker(validation_schema(name)) for name in TOOL_NAMES}
_PARAM_TYPES = {name: {p.name: p.type for p in spec.params} for name, spec in SPECS.items()}
#: Arguments the engine checks itself: a schema violation on one of them is
#: reported in the engine's words (one wording per error, whoever checks).
_ENGINE_CHECKS: dict[str, Callable[[Any, str], Any]] = {
    name: R.CHECKS[name] for name in ("session_id", "command", "job_id", "cwd")
}


def parse(name: str, arguments: Any) -> dict[str, Any]:
    if arguments is None:
        arguments = {}
    if isinstance(arguments, (str, bytes)):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError as e:
            raise InvalidArgument(f"arguments: not valid JSON ({e})", field="arguments") from None
    if not isinstance(arguments, dict):
        raise InvalidArgument(
            f"arguments: expected a JSON object, got {json_type(arguments)}", field="arguments"
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
            field = short(str(extra[0])) if extra else "arguments"
            takes = ", ".join(allowed) or "no arguments"
            return field, f"{field}: unknown argument; {tool} takes {takes}"
        return "arguments", f"arguments: fails the schema's {kind!r} ({short(repr(error.expected), 80)})"
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
        return field, f"{field}: expected {error.expected}, got {json_type(value)}"
    if kind in ("minimum", "maximum"):
        low, high = schema.get("minimum"), schema.get("maximum")
        rng = (
            f"from {low} to {high}"
            if low is not None and high is not None
            else f"{kind} {error.expected}"
        )
        return field, f"{field}: must be {rng}, got {short(repr(value), 40)}"
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
        return field, f"{field}: must be one of {short(options, 300)}; got {short(repr(value), 40)}"
    return field, f"{field}: fails the schema's {kind!r} ({short(repr(error.expected), 80)})"


def checked(check: Callable[[Any, str], Any], value: Any, field: str) -> Any:
    """The engine's own check (:mod:`dsh_magics.terminal.validation`), its
    message prefixed with the tool argument it is about."""
    try:
        return check(value, field)
    except InvalidArgument as e:
        raise InvalidArgument(f"{field}: {e.message}", field=field) from None


R_ = TypeVar("R_")


def built(build: Callable[..., R_], **given: Any) -> R_:
    """A request built (and checked, once) from a tool call's arguments; a bad
    one's message prefixed with the tool argument it is about."""
    try:
        return build(**given)
    except InvalidArgument as e:
        field = e.details.get("field")
        if not isinstance(field, str):
            raise
        raise InvalidArgument(f"{field}: {e.message}", field=field) from None


def checked_session(sid: Any, field: str) -> str:
    return checked(V.session_id, sid, field)  # type: ignore[no-any-return]


def json_type(value: Any) -> str:
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


def short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
