"""A request's fields, once: the table every edge is built from or checked against,
and the typed requests (``ExecRequest``, ``WaitRequest``, ``SendRequest``) built from it.

Each row of :data:`FIELDS` says, for one option of a request, its JSON type, its unit
inside the package, its default, its bounds, what it means, the check of
:mod:`.validation` that refuses a bad value, and how the edges spell it: the
:class:`~.api.Engine` keyword (durations in seconds there for ``timeout``), the agent
tools' argument (with their tighter bounds: a tool call may not block for long) and
whether the magics take it in seconds. ``tests/test_request_fields.py`` fails when the
Engine's signatures, the tool schemas, the host protocol or the magics drift from it.

Durations are milliseconds (``int``) inside: a request holds ``wait_ms``,
``timeout_ms`` and ``idle_ms``. Seconds exist only at the edges that take them (the
Engine's ``timeout=`` keyword, the magics), converted by :func:`ms_from_seconds`,
and at the clock (:mod:`.deadline`). A request is checked once, when it is built
(:meth:`ExecRequest.build` and friends); whoever receives one trusts it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from ..errors import InvalidArgument
from . import validation as V
from .interaction import DEFAULT_SEND_WAIT_MS, KEYS, MAX_KEYS, MAX_SEND_CHARS, PERSON

Check = Callable[[Any, str], Any]

#: Longest wait one agent tool call may block for (``wait_ms``, ``timeout_ms``, ``idle_ms``): ten minutes.
MAX_TOOL_WAIT_MS = 600_000
#: ``bash_wait`` waits this long when ``timeout_ms`` is omitted.
DEFAULT_TOOL_WAIT_TIMEOUT_MS = 30_000
#: Longest command a tool call carries (the engine takes any length: it goes through a file).
MAX_TOOL_COMMAND_CHARS = 100_000
#: Line numbers travel as JSON numbers: stay within JavaScript's safe integers.
MAX_LINE_NUMBER = 2**53 - 1
MAX_TOOL_READ_LINES = 100_000
MAX_PATH_CHARS = 4096
MAX_TARGET_CHARS = 1000


@dataclass(frozen=True)
class ToolArg:
    """How the ``bash_*`` tools spell a field, where they differ from the engine."""

    name: str
    minimum: int | None = None
    maximum: int | None = None
    max_length: int | None = None


@dataclass(frozen=True)
class Field:
    """One option of a request (see the module docstring)."""

    name: str  # inside the package (a request's attribute)
    type: str  # JSON type: string, integer, boolean, array
    meaning: str
    check: Check
    unit: str | None = None  # ms, lines, cells, chars
    default: Any = None  # what "not given" means
    minimum: int | None = None
    maximum: int | None = None
    max_length: int | None = None  # characters, or items of an array
    engine: str | None = ""  # the Engine keyword ("" = name; None = not one)
    engine_seconds: bool = False  # the Engine keyword takes seconds
    tool: ToolArg | None = None  # the tools' spelling and bounds (None: as here)
    tools_take_it: bool = True

    @property
    def engine_name(self) -> str | None:
        return self.name if self.engine == "" else self.engine

    @property
    def tool_arg(self) -> ToolArg | None:
        """The tools' argument (name and bounds), or None if no tool takes it."""
        if not self.tools_take_it:
            return None
        t = self.tool or ToolArg(self.name)
        return ToolArg(
            t.name,
            self.minimum if t.minimum is None else t.minimum,
            self.maximum if t.maximum is None else t.maximum,
            self.max_length if t.max_length is None else t.max_length,
        )


def _f(name: str, type_: str, meaning: str, check: Check, **kw: Any) -> Field:
    return Field(name, type_, meaning, check, **kw)


_WAIT = ToolArg("wait_ms", maximum=MAX_TOOL_WAIT_MS)

#: The table: one row per option a request of the engine contract takes.
FIELDS: dict[str, Field] = {
    f.name: f
    for f in (
        _f("session_id", "string", "the terminal, by session id", V.session_id, max_length=V.MAX_SESSION_ID),
        _f("command", "string", "the bash command or script to run", V.command,
           tool=ToolArg("command", max_length=MAX_TOOL_COMMAND_CHARS)),
        _f("job_id", "string", "a job, by the id exec gave", V.job_id, max_length=200),
        _f("cwd", "string", "directory to change into", V.cwd, tool=ToolArg("cwd", max_length=MAX_PATH_CHARS)),
        _f("target", "string", "where a new terminal's shell runs (ssh://, podman://, cmd:, ...)", V.text,
           tool=ToolArg("target", max_length=MAX_TARGET_CHARS)),
        _f("recreate", "boolean", "replace the shell with a fresh one", V.flag, default=False),
        _f("tty", "boolean", "the command reads the terminal (REPLs, y/N prompts)", V.flag, default=False),
        _f("wait_ms", "integer", "how long to wait for the job to settle (exec) or react (send)", V.wait_ms,
           unit="ms", minimum=0, tool=_WAIT),
        _f("timeout_ms", "integer", "longest wait; the job keeps running after it", V.timeout,
           unit="ms", minimum=0, engine="timeout", engine_seconds=True,
           tool=ToolArg("timeout_ms", maximum=MAX_TOOL_WAIT_MS)),
        _f("until", "string", "return when a line of the job's output matches this regex", V.until,
           max_length=V.MAX_PATTERN_CHARS),
        _f("until_screen", "string", "return when the screen's rows match this regex", V.until_screen,
           max_length=V.MAX_PATTERN_CHARS),
        _f("idle_ms", "integer", "return once no output came for this long", V.idle_ms, unit="ms", minimum=1,
           tool=ToolArg("idle_ms", maximum=MAX_TOOL_WAIT_MS)),
        _f("on_input", "boolean", "return when the job waits for typed input", V.flag, default=True),
        _f("text", "string", "a line to type into the running job", V.text,
           tool=ToolArg("text", max_length=MAX_SEND_CHARS)),
        _f("key", "string", "a named key to press", V.text,
           tool=ToolArg("key", max_length=max(len(k) for k in KEYS))),
        _f("keys", "array", "named keys to press in order", V.strings, tool=ToolArg("keys", max_length=MAX_KEYS)),
        _f("enter", "boolean", "press Enter after the text", V.flag, default=True),
        _f("source", "string", "who typed: person, agent, notebook, panel", V.source, tools_take_it=False),
        _f("caller", "string", "the calling session (the input record's caller)", V.caller, tools_take_it=False),
        _f("secret", "boolean", "keep the text out of the input record", V.flag, default=False,
           tools_take_it=False),
        _f("allow_secret", "boolean", "text may go to a hidden-entry prompt", V.flag, default=True,
           tools_take_it=False),
        _f("allow_unknown_prompt", "boolean", "text may go to a remote prompt that cannot be seen", V.flag,
           default=False),
        _f("tail_lines", "integer", "keep only the last N lines of the output", V.count, unit="lines", minimum=0,
           tools_take_it=False),
        _f("since", "integer", "first line number to return", V.count, unit="lines", minimum=0,
           tool=ToolArg("since", maximum=MAX_LINE_NUMBER)),
        _f("last", "integer", "at most this many of the newest lines", V.count, unit="lines", minimum=0,
           tool=ToolArg("last", minimum=1, maximum=MAX_TOOL_READ_LINES)),
        _f("after_seq", "integer", "the output counter last seen (output_seq)", V.count, minimum=0,
           tools_take_it=False),
        _f("styles", "boolean", "each row's runs of one style", V.flag, default=False, tools_take_it=False),
        _f("vt", "boolean", "each row with SGR sequences", V.flag, default=False, tools_take_it=False),
        _f("cols", "integer", "terminal width", V.size, unit="cells", minimum=2, maximum=V.MAX_SIZE),
        _f("rows", "integer", "terminal height", V.size, unit="cells", minimum=2, maximum=V.MAX_SIZE),
        _f("data", "string", "an attached terminal's keys, as it encoded them", V.keys_data,
           max_length=V.MAX_KEYS_CHARS, tools_take_it=False),
    )
}  # fmt: skip

#: The row behind each Engine keyword (``timeout`` is ``timeout_ms`` in seconds).
BY_ENGINE_NAME: dict[str, Field] = {f.engine_name: f for f in FIELDS.values() if f.engine_name}
#: The check of each Engine keyword: the host protocol's rows are built from it.
CHECKS: dict[str, Check] = {name: f.check for name, f in BY_ENGINE_NAME.items()}


def ms_from_seconds(value: float | None) -> int | None:
    """Seconds from an edge that takes them, as the package's milliseconds
    (rounded up: a positive wait never becomes "do not wait")."""
    if value is None or math.isinf(value):
        return None  # no limit
    return int(math.ceil(value * 1000 - 1e-9))


def _ms(value: float | None) -> int | None:
    """A millisecond value as an int (the engine keyword takes any number)."""
    return None if value is None else int(math.ceil(value - 1e-9))


# ---------------------------------------------------------------------------
# the typed requests: built and checked once, at the edge


class _Built:
    """What the typed requests share: :meth:`of` an Engine method's ``locals()``."""

    @classmethod
    def build(cls, **given: Any) -> Any:
        raise NotImplementedError

    @classmethod
    def of(cls: type[_R], arguments: Mapping[str, Any]) -> _R:
        """The request from an Engine keyword method's arguments (its ``locals()``
        on entry, ``self`` left out): checked once, by :meth:`build`."""
        return cls.build(**{k: v for k, v in arguments.items() if k != "self"})  # type: ignore[attr-defined, no-any-return]


_R = TypeVar("_R", bound=_Built)


#: Per request class: each field's check and the name its messages use.
_PLANS: dict[type, dict[str, tuple[Check, str]]] = {}


def _checked(cls: type, given: Mapping[str, Any]) -> dict[str, Any]:
    """Each of ``given``'s values run through its row's check (one call each)."""
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = {
            f.name: (FIELDS[f.name].check, FIELDS[f.name].engine_name or f.name) for f in fields(cls)
        }
    out = {}
    for name, value in given.items():
        step = plan.get(name)
        if step is None:
            raise InvalidArgument(f"unknown option {name!r} for {cls.__name__}")
        out[name] = step[0](value, step[1])
    return out


@dataclass(frozen=True)
class ExecRequest(_Built):
    """Start ``command`` in ``session_id``'s terminal; wait up to ``wait_ms`` for its end."""

    session_id: str
    command: str
    wait_ms: int | None = None
    tty: bool = False
    source: str | None = None
    caller: str | None = None

    @classmethod
    def build(cls, **given: Any) -> ExecRequest:
        """The checked request (INVALID_ARGUMENT on a bad value): the one check of each option."""
        for required in ("session_id", "command"):
            if given.get(required) is None:
                FIELDS[required].check(None, required)  # the check's words for a missing one
        v = _checked(cls, given)
        if "wait_ms" in v:
            v["wait_ms"] = _ms(v["wait_ms"])
        return cls(**v)


@dataclass(frozen=True)
class WaitRequest(_Built):
    """Wait for ``job_id`` until it settles, ``until``/``until_screen`` match, it is
    idle for ``idle_ms``, it waits for input (``on_input``), or ``timeout_ms`` passed."""

    job_id: str
    timeout_ms: int | None = None
    until: str | None = None
    idle_ms: int | None = None
    on_input: bool = True
    until_screen: str | None = None

    @classmethod
    def build(cls, *, timeout: float | None = None, **given: Any) -> WaitRequest:
        """The checked request. ``timeout`` is the Engine keyword's seconds (or
        give ``timeout_ms``); ``on_input=None`` counts as not given."""
        if given.get("job_id") is None:
            V.job_id(None)
        if timeout is not None:
            V.timeout(timeout)
            given["timeout_ms"] = ms_from_seconds(timeout)
        if given.get("on_input", True) is None:
            given.pop("on_input")
        v = _checked(cls, {k: val for k, val in given.items() if k != "timeout_ms"})
        if "timeout_ms" in given:
            v["timeout_ms"] = _ms(V.wait_ms(given["timeout_ms"], "timeout_ms"))
        return cls(**v)


@dataclass(frozen=True)
class SendRequest(_Built):
    """Type ``text``, one ``key`` or ``keys`` into ``session_id``'s running job; wait
    up to ``wait_ms`` for it to react."""

    session_id: str
    text: str | None = None
    key: str | None = None
    enter: bool = True
    wait_ms: int | None = DEFAULT_SEND_WAIT_MS
    source: str = PERSON
    caller: str | None = None
    secret: bool = False
    allow_secret: bool = True
    allow_unknown_prompt: bool = False
    keys: list[str] | None = None

    @classmethod
    def build(cls, **given: Any) -> SendRequest:
        """The checked request. ``source``, ``secret`` and ``allow_secret`` have
        defaults, so None is refused for them rather than taken as "not given"."""
        if given.get("session_id") is None:
            V.session_id(None)
        for name in ("source", "secret", "allow_secret"):
            if name in given and given[name] is None:
                FIELDS[name].check(_NOT_NONE, name)
        v = _checked(cls, given)
        if "wait_ms" in v:
            v["wait_ms"] = _ms(v["wait_ms"])
        return cls(**v)


class _NotNone:
    """A value no check accepts: None given for an option whose default is not None."""

    def __repr__(self) -> str:
        return "None"


_NOT_NONE = _NotNone()

#: The typed request of each Engine method that has one.
REQUESTS: dict[str, type] = {"exec": ExecRequest, "wait": WaitRequest, "send": SendRequest}


__all__ = [
    "BY_ENGINE_NAME",
    "CHECKS",
    "DEFAULT_SEND_WAIT_MS",
    "DEFAULT_TOOL_WAIT_TIMEOUT_MS",
    "FIELDS",
    "MAX_LINE_NUMBER",
    "MAX_TOOL_COMMAND_CHARS",
    "MAX_TOOL_READ_LINES",
    "MAX_TOOL_WAIT_MS",
    "REQUESTS",
    "ExecRequest",
    "Field",
    "SendRequest",
    "ToolArg",
    "WaitRequest",
    "ms_from_seconds",
]
