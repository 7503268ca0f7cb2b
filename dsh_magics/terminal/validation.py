"""Argument checks for every entry point of the engine contract, one wording each.

``check(value, name) -> value``, ``None`` meaning "not given": the host's table relies on both.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from ..errors import InvalidArgument

MAX_SESSION_ID = 200


def _bad(message: str, field: str, **details: Any) -> InvalidArgument:
    return InvalidArgument(message, field=field, **details)


def _is_number(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float))


def _is_int(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, int)


def session_id(value: object, name: str = "session_id") -> str:
    """Session ids become part of thread names, listings and host messages,
    so refuse the ones that would be ambiguous or unsafe."""
    if not isinstance(value, str) or not value:
        raise _bad("session id must be a non-empty string", "session_id")
    if len(value) > MAX_SESSION_ID:
        raise _bad(f"session id is longer than {MAX_SESSION_ID} characters", "session_id")
    if "/" in value or "\\" in value or "\0" in value:
        raise _bad("session id must not contain path separators", "session_id")
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in value):
        raise _bad("session id must not contain control characters", "session_id")
    if value.strip() != value:
        raise _bad("session id must not start or end with whitespace", "session_id")
    return value


def command(value: object, name: str = "command") -> str:
    if not isinstance(value, str):
        raise _bad("command must be a string", "command")
    if not value.strip():
        raise _bad("command must not be empty or only whitespace", "command")
    return value


def job_id(value: object, name: str = "job_id") -> str:
    if not isinstance(value, str) or not value:
        raise _bad("job id must be a non-empty string", "job_id")
    return value


def cwd(value: object, name: str = "cwd") -> str | None:
    if value is not None and (not isinstance(value, str) or not value):
        raise _bad("cwd must be a non-empty string", "cwd")
    return value


def wait_ms(value: object, name: str = "wait_ms") -> float | None:
    if value is not None and (not _is_number(value) or value < 0):  # type: ignore[operator]
        raise _bad("wait_ms must be a number of milliseconds >= 0", "wait_ms")
    return value  # type: ignore[return-value]


def timeout(value: object, name: str = "timeout") -> float | None:
    if value is not None and (not _is_number(value) or value < 0):  # type: ignore[operator]
        raise _bad("timeout must be a number of seconds >= 0", "timeout")
    return value  # type: ignore[return-value]


def count(value: object, name: str) -> int | None:
    """A line number or a number of lines (``since``, ``last``, ``tail_lines``, ``after_seq``)."""
    if value is not None and (not _is_int(value) or value < 0):  # type: ignore[operator]
        raise _bad(f"{name} must be an integer >= 0", name)
    return value  # type: ignore[return-value]


def flag(value: object, name: str) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise _bad(f"{name} must be true or false", name)
    return value


def text(value: object, name: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise _bad(f"{name} must be a string", name)
    return value


def mapping(value: object, name: str) -> dict[str, Any] | None:
    if value is not None and not isinstance(value, dict):
        raise _bad(f"{name} must be an object", name)
    return value


def strings(value: object, name: str) -> list[str] | None:
    if value is not None and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
        raise _bad(f"{name} must be a list of strings", name)
    return value


__all__ = [
    "MAX_SESSION_ID",
    "command",
    "count",
    "cwd",
    "flag",
    "job_id",
    "mapping",
    "session_id",
    "strings",
    "text",
    "timeout",
    "wait_ms",
]
