"""What every magic shares: the ``--session`` option and one way to report bad input.

Declared once, as IPython's ``script_args`` is for its script magics, so the magics cannot drift.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument, parse_argstring

from .errors import DshError, InvalidArgument

F = TypeVar("F", bound=Callable[..., Any])

SESSION_HELP = "Session id (default: this notebook's)."


def session_arg(help: str = SESSION_HELP) -> Callable[[F], F]:  # noqa: A002 - argparse's name
    """The ``--session/-s`` option (a decorator, under ``@magic_arguments()``)."""
    return argument("--session", "-s", default=None, help=help)  # type: ignore[no-any-return]


def usage_line(exc: DshError) -> UsageError:
    """The one line a magic shows for bad input: ``CODE: message``."""
    return UsageError(" ".join(f"{exc.code}: {exc.message}".split("\n")))


def usage_errors(fn: F) -> F:
    """Engine and argument errors become one ``UsageError`` line, never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except DshError as e:
            raise usage_line(e) from None

    return wrapper  # type: ignore[return-value]


def parse(magic: Callable[..., Any], line: str) -> Any:
    """``parse_argstring`` whose argparse errors carry the stable code too."""
    try:
        return parse_argstring(magic, line)
    except UsageError as e:
        name = getattr(magic, "__name__", "magic")
        raise InvalidArgument(f"%{name}: {e}") from None
