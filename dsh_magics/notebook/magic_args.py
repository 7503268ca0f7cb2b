"""What every magic shares: one way to read a magic's line, the ``--session`` option,
the ``seconds`` type, and one way to report bad input.

The options are declared with IPython's ``@magic_arguments``/``@argument`` (which also
write each magic's help), as IPython's script magics do; this module reads the line:

* words are split and unquoted as a shell does (``shlex``): ``--cwd "/tmp/a b"``,
  ``--session 'my build'`` and ``--cwd /tmp/a\\ b`` all give the bare value;
* an option must be written in full: an unknown one (a prefix, a typo, an old name)
  is a one-line error that names the magic's options, never a silent guess;
* ``-h``/``--help`` prints the magic's usage and options instead of running it;
* a magic whose line ends in free text (``%bash_exec``'s command, ``%bash_send``'s
  text) gets that text back from the first word that is not an option (or after
  ``--``), exactly as typed, to use verbatim or split itself.
"""

from __future__ import annotations

import argparse
import functools
import math
import re
import shlex
import subprocess
from collections.abc import Callable
from typing import Any, TypeVar

from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument

from ..errors import DshError, InvalidArgument
from ..terminal.requests import ms_from_seconds
from .render import command_header

F = TypeVar("F", bound=Callable[..., Any])

SESSION_HELP = "Session id (default: this notebook's)."
HELP_OPTIONS = ("-h", "--help")
# argparse actions that take no value
_FLAG_ACTIONS = {"store_true", "store_false", "store_const", "append_const", "count", "help", "version"}
_NUMBER = re.compile(r"-\d+(\.\d*)?|-\.\d+")


class HelpShown(Exception):
    """``--help`` was given: the magic prints its help and does nothing else."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def session_arg(help: str = SESSION_HELP) -> Callable[[F], F]:  # noqa: A002 - argparse's name
    """The ``--session/-s`` option (a decorator, under ``@magic_arguments()``)."""
    return argument("--session", "-s", default=None, help=help)  # type: ignore[no-any-return]


def seconds(text: str) -> float:
    """The one rule for durations in the magics: seconds, as a number (``10``, ``0.5``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds (a number such as 10 or 0.5), got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected seconds >= 0, got {text!r}")
    return value


def to_ms(value: float | None) -> int | None:
    """Seconds (the magics' unit) as the package's milliseconds: the edge's one conversion."""
    return ms_from_seconds(value)


def seconds_text(ms: int) -> str:
    """Milliseconds as the magics write durations to a person (``0.5s``): the way back out."""
    return f"{ms / 1000:g}s"


#: Each magic's options (and positional words) that set a field of a request, by the
#: field's name in the table of terminal/requests.py; durations are seconds here
#: (:func:`seconds`). tests/test_request_fields.py checks these against the parsers.
OPTION_FIELDS: dict[str, dict[str, str]] = {
    "bash_attach": {"--session": "session_id", "--cwd": "cwd", "--recreate": "recreate", "--target": "target"},
    "bash_close": {"--session": "session_id"},
    "bash_exec": {"--session": "session_id", "--timeout": "wait_ms", "--tty": "tty", "command": "command"},
    "bash_interrupt": {"--session": "session_id"},
    "bash_list": {},
    "bash_read": {"--session": "session_id", "--lines": "last"},
    "bash_screen": {"--session": "session_id"},
    "bash_send": {
        "--session": "session_id",
        "--no-enter": "enter",
        "--key": "keys",
        "--secret": "secret",
        "--timeout": "wait_ms",
        "text": "text",
    },
    "bash_wait": {
        "job_id": "job_id",
        "--session": "session_id",
        "--timeout": "timeout_ms",
        "--until": "until",
        "--until-screen": "until_screen",
        "--idle": "idle_ms",
    },
}
#: Options only the magics have: how the notebook runs or shows a call (no request field).
MAGIC_ONLY = frozenset(
    ("--help", "--wait", "--expand", "--on", "--fanout", "--target-timeout", "--diff", "--no-raise-error",
     "--all", "--plain", "group_id")
)  # fmt: skip


class JobFailed(subprocess.CalledProcessError):
    """A job the magic waited for ended badly (non-zero exit, interrupted, shell gone).

    Raised as IPython's ``%%bash`` raises ``CalledProcessError``, so *Run All*
    stops there; shown as one line (no traceback): the exit code and the job's
    last lines. ``.result`` is the job's Result; ``--no-raise-error`` returns it instead.
    """

    def __init__(self, result: Any) -> None:
        super().__init__(result.exit_code if result.exit_code is not None else -1, result.command)
        self.result = result

    def __str__(self) -> str:
        r = self.result
        if r.status == "completed":
            what = f"exit code {r.exit_code}"
        elif r.status == "interrupted":
            what = "interrupted" + (f" (exit code {r.exit_code})" if r.exit_code is not None else "")
        else:
            what = r.status.replace("_", " ")
        last = [ln.strip() for ln in r.output.splitlines() if ln.strip()][-3:]
        tail = " ⏎ ".join(ln if len(ln) <= 120 else ln[:120] + "…" for ln in last)
        cmd = command_header(r.command, 60)
        return f"`{cmd}` failed: {what}" + (f"; last lines: {tail}" if tail else "; no output")

    def _render_traceback_(self) -> list[str]:
        """IPython and ipykernel show these lines instead of a traceback."""
        return [f"{type(self).__name__}: {self}"]


def raise_if_failed(result: Any, raise_error: bool) -> Any:
    """The result, or :class:`JobFailed` for a job that ended badly."""
    if raise_error and result.done and not result.ok:
        raise JobFailed(result)
    return result


NO_RAISE_HELP = "Return the result of a job that failed instead of raising (Run All then carries on)."


def no_raise_arg() -> Callable[[F], F]:
    """``--no-raise-error``, as IPython's script magics spell it."""
    return argument(  # type: ignore[no-any-return]
        "--no-raise-error", action="store_false", dest="raise_error", help=NO_RAISE_HELP
    )


def usage_line(exc: DshError) -> UsageError:
    """The one line a magic shows for bad input: ``CODE: message``."""
    return UsageError(" ".join(f"{exc.code}: {exc.message}".split("\n")))


def usage_errors(fn: F) -> F:
    """Engine and argument errors become one ``UsageError`` line, never a traceback;
    ``--help`` prints the help and returns None."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except HelpShown as h:
            print(h.text)
            return None
        except DshError as e:
            raise usage_line(e) from None

    return wrapper  # type: ignore[return-value]


# ----------------------------------------------------------------------
# reading the line
def _name(magic: Callable[..., Any]) -> str:
    return "%" + getattr(magic, "__name__", "magic")


def option_table(magic: Callable[..., Any]) -> dict[str, bool]:
    """Each option string of a magic -> whether it takes a value, from the
    ``@argument`` declarations IPython keeps on the function."""
    table: dict[str, bool] = dict.fromkeys(HELP_OPTIONS, False)
    for deco in reversed(getattr(magic, "decorators", ())):
        names = [a for a in getattr(deco, "args", ()) if isinstance(a, str) and a.startswith("-")]
        kwds = getattr(deco, "kwds", {})
        takes_value = kwds.get("action", "store") not in _FLAG_ACTIONS and kwds.get("nargs") != 0
        for n in names:
            table[n] = takes_value
    return table


def _word_end(s: str, i: int) -> int:
    """Where the shell word starting at ``i`` ends (quotes and backslashes as POSIX sh)."""
    quote = None
    n = len(s)
    while i < n:
        c = s[i]
        if quote == "'":
            if c == "'":
                quote = None
        elif quote == '"':
            if c == "\\":
                i += 1
            elif c == '"':
                quote = None
        elif c == "\\":
            i += 1
        elif c in "'\"":
            quote = c
        elif c.isspace():
            break
        i += 1
    return min(i, n)


def _skip_space(s: str, i: int) -> int:
    while i < len(s) and s[i].isspace():
        i += 1
    return i


def _unquote(magic: Callable[..., Any], raw: str) -> str:
    try:
        words = shlex.split(raw)
    except ValueError as e:  # "No closing quotation", "No escaped character"
        raise InvalidArgument(f"{_name(magic)}: {e} in {raw!r}") from None
    return "".join(words)


def split_words(magic: Callable[..., Any], text: str) -> list[str]:
    """``text`` split and unquoted as a shell does (one-line error on an open quote)."""
    try:
        return shlex.split(text)
    except ValueError as e:
        raise InvalidArgument(f"{_name(magic)}: {e}") from None


def _unknown(magic: Callable[..., Any], word: str, table: dict[str, bool]) -> InvalidArgument:
    known = ", ".join(o for o in table if o.startswith("--") and o != "--help")
    shown = word if len(word) <= 40 else word[:40] + "…"
    return InvalidArgument(
        f"{_name(magic)}: unknown option {shown} (its options: {known or 'none'}; --help explains them)"
    )


def _check_option(magic: Callable[..., Any], word: str, table: dict[str, bool]) -> bool:
    """Is ``word`` a known option that needs the next word as its value?"""
    name, eq, _ = word.partition("=") if word.startswith("--") else (word, "", "")
    if name not in table and not name.startswith("--") and table.get(name[:2]) and not name[2:].isalpha():
        return False  # a short option with a value attached, -n5 (but -session is a typo, not -s ession)
    if name not in table:
        raise _unknown(magic, word, table)
    if name in HELP_OPTIONS:
        raise HelpShown(_help(magic))
    return table[name] and not eq


def _help(magic: Callable[..., Any]) -> str:
    parser = getattr(magic, "parser", None)
    return parser.format_help() if parser is not None else (magic.__doc__ or "")


def _parse_words(magic: Callable[..., Any], words: list[str]) -> Any:
    parser: argparse.ArgumentParser = magic.parser  # type: ignore[attr-defined]
    parser.allow_abbrev = False  # a prefix is never taken for an option
    try:
        return parser.parse_args(words)
    except UsageError as e:  # IPython's parser raises this instead of exiting
        raise InvalidArgument(f"{_name(magic)}: {e}") from None


def parse(magic: Callable[..., Any], line: str) -> Any:
    """The magic's arguments from its whole line (every word shell-split)."""
    table = option_table(magic)
    words = split_words(magic, line)
    value_next = False
    for w in words:
        if value_next:
            value_next = False
        elif w == "--":
            break
        elif w.startswith("-") and len(w) > 1 and not _NUMBER.fullmatch(w):
            value_next = _check_option(magic, w, table)
    return _parse_words(magic, words)


def parse_with_rest(magic: Callable[..., Any], line: str) -> tuple[Any, str]:
    """The options at the start of the line, and the rest exactly as typed.

    Options end at the first word not starting with ``-``, or at ``--``; an
    option's value (``--session 'my build'``) is the next shell word.
    """
    table = option_table(magic)
    words: list[str] = []
    i = _skip_space(line, 0)
    while i < len(line) and line[i] == "-":
        j = _word_end(line, i)
        word = _unquote(magic, line[i:j])
        i = _skip_space(line, j)
        if word == "--":
            break
        words.append(word)
        if _check_option(magic, word, table):
            if i >= len(line):
                raise InvalidArgument(f"{_name(magic)}: option {word} expects a value")
            j = _word_end(line, i)
            words.append(_unquote(magic, line[i:j]))
            i = _skip_space(line, j)
    return _parse_words(magic, words), line[i:]
