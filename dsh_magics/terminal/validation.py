"""Argument checks for every entry point of the engine contract: one check
per parameter name (:data:`.requests.CHECKS`), one wording each.

``check(value, name) -> value``, ``None`` meaning "not given": the host's table relies on both.
Each is the check of a row of :data:`.requests.FIELDS` (the table of a request's
fields); a request is checked once, where it is built, and engine internals trust it.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable
from typing import Any

from ..errors import InvalidArgument

MAX_SESSION_ID = 200
#: Longest ``until`` pattern (a regex is compiled and run on every line).
MAX_PATTERN_CHARS = 1000
#: Who typed an input (``send(source=...)``).
#: Who typed: a person (an attached terminal, an answer box), an agent (a tool
#: call), the notebook (a magic), the panel.
SOURCES = ("person", "agent", "notebook", "panel")

Check = Callable[[Any, str], Any]


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
    if "\0" in value:
        # bash drops NUL bytes from the text it reads: the command would
        # silently become another one
        raise _bad(
            "command contains a NUL byte, which bash would drop from the command's text (the command "
            "would silently change); to produce one, print it: printf '\\0'",
            "command",
        )
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
    if value is not None and (not _is_number(value) or value < 0 or not math.isfinite(value)):  # type: ignore[operator, arg-type]
        raise _bad(f"{name} must be a number of milliseconds >= 0", name)
    return value  # type: ignore[return-value]


def timeout(value: object, name: str = "timeout") -> float | None:
    if value is not None and (not _is_number(value) or value < 0 or math.isnan(value)):  # type: ignore[operator, arg-type]
        raise _bad("timeout must be a number of seconds >= 0", "timeout")
    return value  # type: ignore[return-value]


def count(value: object, name: str = "count") -> int | None:
    """A line number or a number of lines (``since``, ``last``, ``tail_lines``, ``after_seq``)."""
    if value is not None and (not _is_int(value) or value < 0):  # type: ignore[operator]
        raise _bad(f"{name} must be an integer >= 0", name)
    return value  # type: ignore[return-value]


def flag(value: object, name: str = "flag") -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise _bad(f"{name} must be true or false", name)
    return value


def text(value: object, name: str = "text") -> str | None:
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


def until(value: object, name: str = "until") -> str | None:
    """A non-empty Python regular expression that compiles."""
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise _bad("until must be a non-empty regular expression", "until")
    if len(value) > MAX_PATTERN_CHARS:
        raise _bad(f"until is {len(value)} characters long; the limit is {MAX_PATTERN_CHARS}", "until")
    try:
        re.compile(value)
    except re.error as e:
        raise _bad(f"until is not a valid regular expression: {e}", "until") from None
    return value


def until_screen(value: object, name: str = "until_screen") -> str | None:
    """A regular expression searched in the screen's rows (``wait``)."""
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise _bad("until_screen must be a non-empty regular expression", "until_screen")
    if len(value) > MAX_PATTERN_CHARS:
        raise _bad(f"until_screen is {len(value)} characters long; the limit is {MAX_PATTERN_CHARS}", "until_screen")
    try:
        re.compile(value)
    except re.error as e:
        raise _bad(f"until_screen is not a valid regular expression: {e}", "until_screen") from None
    return value


def idle_ms(value: object, name: str = "idle_ms") -> int | None:
    if value is not None and (not _is_int(value) or value < 1):  # type: ignore[operator]
        raise _bad("idle_ms must be an integer number of milliseconds >= 1", "idle_ms")
    return value  # type: ignore[return-value]


#: Largest terminal side (the screen's emulator counts cells in 16 bits).
MAX_SIZE = 10_000


def size(value: object, name: str) -> int | None:
    """A terminal's ``cols`` or ``rows``."""
    if value is not None and (not _is_int(value) or not 2 <= value <= MAX_SIZE):  # type: ignore[operator]
        raise _bad(f"{name} must be an integer from 2 to {MAX_SIZE}", name)
    return value  # type: ignore[return-value]


def source(value: object, name: str = "source") -> str | None:
    if value is not None and value not in SOURCES:
        raise _bad(f"source must be one of {', '.join(SOURCES)}", "source")
    return value  # type: ignore[return-value]


#: Most characters one ``type_keys`` call carries (a paste is split by the client).
MAX_KEYS_CHARS = 64 * 1024


def keys_data(value: object, name: str = "data") -> str:
    """What an attached terminal sent: any characters, at least one."""
    if not isinstance(value, str) or not value:
        raise _bad(f"{name} must be a non-empty string", name)
    if len(value) > MAX_KEYS_CHARS:
        raise _bad(f"{name} is {len(value)} characters long; one call takes at most {MAX_KEYS_CHARS}", name)
    return value


def caller(value: object, name: str = "caller") -> str | None:
    if value is not None and (not isinstance(value, str) or len(value) > MAX_SESSION_ID):
        raise _bad("caller must be a session id (a string)", "caller")
    return value


__all__ = [
    "MAX_PATTERN_CHARS",
    "MAX_SESSION_ID",
    "SOURCES",
    "caller",
    "command",
    "count",
    "cwd",
    "flag",
    "idle_ms",
    "job_id",
    "mapping",
    "session_id",
    "size",
    "source",
    "strings",
    "text",
    "timeout",
    "until",
    "until_screen",
    "wait_ms",
]
