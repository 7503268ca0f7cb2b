"""The agent tools served over MCP (stdio), on the SDK's low-level server.

Schemas come from :mod:`dsh_magics.tools`; each call is ``tools.call``, placed
by :mod:`.calls`. The neighbours: :mod:`.person_rounds` and :mod:`.elicit` (a
person answers a password prompt; on 2026-07-28 through the call's multi
round-trip, its state signed by :mod:`.request_state`), :mod:`.render` (the
result), :mod:`.tasks`, :mod:`.task_board` and :mod:`.task_input` (the tasks
extension), :mod:`.progress`, :mod:`.workers` and :mod:`.wire` (the stdio pipes).
"""

from __future__ import annotations

import functools
import re
from typing import Any, cast

import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.lowlevel.server import OpenTelemetryMiddleware
from mcp.server.stdio import stdio_server

from .. import tools
from ..errors import InvalidArgument
from ..terminal import validate_session_id
from ..terminal.api import Engine
from .calls import INLINE_MS, CallRunner, exec_wait_ms
from .elicit import PageOpener, PersonAnswers, modern
from .person_rounds import PersonRounds
from .render import to_call_result
from .result_schema import output_schema
from .task_ids import TaskIds, load_key
from .tasks import TaskService
from .wire import wire_streams
from .workers import run_blocking

#: Any backend with the engine contract: the in-process registry or a host client.
Backend = Engine

SERVER_NAME = "dsh-magics"
#: The caller's session when the client sends no name and none is configured.
DEFAULT_SESSION = "mcp"
#: Tools whose result reports a job that may wait for a password.
_JOB_TOOLS = frozenset(("bash_exec", "bash_wait", "bash_send"))

_ANNOTATIONS = {
    "bash_read": types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
    "bash_list": types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
    "bash_wait": types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
    "bash_close": types.ToolAnnotations(destructive_hint=True, open_world_hint=False),
    "bash_interrupt": types.ToolAnnotations(destructive_hint=True, open_world_hint=False),
}

INSTRUCTIONS = (
    "Persistent bash terminals: the directory, variables and functions of a terminal persist "
    "between commands, and terminals survive a restart of this client. bash_exec runs a "
    "command and returns a job id at once (or the result, with wait_ms); bash_wait waits for "
    "it. Omit session_id to use your own terminal; name another session to share its terminal."
)


def session_for_client(name: str | None) -> str:
    """The caller's session for a client called ``name``: ``mcp-<name>``,
    reduced to letters, digits, ``.``, ``_`` and ``-``; ``mcp`` without a name."""
    text = re.sub(r"[^A-Za-z0-9._-]+", "-", (name or "").strip()).strip("-._")[:64]
    return f"{DEFAULT_SESSION}-{text}" if text else DEFAULT_SESSION


def check_session(session: str) -> str:
    """``--session``'s value, or INVALID_ARGUMENT saying what is wrong with it."""
    try:
        return validate_session_id(session)
    except InvalidArgument as e:
        raise InvalidArgument(f"--session: {e.message}") from None


def tool_list() -> list[types.Tool]:
    """Every tool ``dsh_magics.tools`` offers, with input and result schemas."""
    out = []
    for spec in tools.schemas("plain", bounds=True):
        name = spec["name"]
        out.append(
            types.Tool(
                name=name,
                description=spec["description"],
                input_schema=spec["parameters"],
                output_schema=output_schema(name),
                annotations=_ANNOTATIONS.get(name),
            )
        )
    return out


class ToolServer:
    """The tools of one backend, served to MCP clients.

    ``session`` fixes the caller's own session; None derives it from the
    client's name (see :func:`session_for_client`). ``task_ids`` makes the
    task ids (default: see :func:`task_ids_for`).
    """

    def __init__(
        self, backend: Backend, *, session: str | None = None, task_ids: TaskIds | None = None
    ) -> None:
        if session is not None:
            check_session(session)
        self.backend = backend
        self.session = session
        self.answers = PersonAnswers(backend, _host_name(backend), _page_opener(backend))
        self.tasks = TaskService(
            backend,
            lambda ctx, name, args: tools.call(
                name, args, caller_session=self.caller_session(ctx), registry=self.backend
            ),
            self._task_result,
            run_blocking,
            self.answers,
            self._client_id,
            task_ids or task_ids_for(backend),
        )
        self.calls = CallRunner(backend)
        self.rounds = PersonRounds(backend, self.answers, self._client_id, self.calls)
        self.server: Server[Any] = Server(
            SERVER_NAME,
            version=_version(),
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            # (typed for the model; a dict in wire form is sent as it is, checked the same)
            on_call_tool=cast(Any, self._call_tool),
        )
        # The SDK wraps every request in an OpenTelemetry span by default; no
        # exporter is ever installed here, and the span costs about 0.1 ms a
        # request under load (benchmarks/README.md, bench_mcp.py).
        self.server.middleware = [
            m for m in self.server.middleware if not isinstance(m, OpenTelemetryMiddleware)
        ]
        self.tasks.serve(self.server)  # the tasks extension (2026-07-28)

    # -- handlers ------------------------------------------------------------
    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=_tools())

    async def _call_tool(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> dict[str, Any] | types.InputRequiredResult:
        name = params.name
        arguments = params.arguments
        caller = self.caller_session(ctx)
        if params.request_state is not None and modern(ctx):
            return await self.rounds.after_person(ctx, params, caller)
        try:
            result = await self.calls.run(ctx, name, arguments, caller)
        except Exception as e:  # noqa: BLE001 - tools.call never raises; a tool error, not a protocol one
            result = {
                "error": {
                    "code": tools.INTERNAL_ERROR_CODE,
                    "message": f"internal error ({type(e).__name__}): {e}"[:1000],
                }
            }
        self.calls.note_terminal(name, result)
        if name in _JOB_TOOLS:
            result, request = await self.rounds.notes(ctx, result)
            if request is not None:
                return self.rounds.input_required(ctx, params, request)
        if name == "bash_exec":
            task = self.tasks.created(ctx, exec_wait_ms(name, arguments), result)
            if task is not None:
                # (a task is not a core result: the SDK passes it through on 2026-07-28)
                return cast(Any, task)
        return to_call_result(name, result)

    async def _task_result(self, ctx: Any, result: dict[str, Any]) -> dict[str, Any]:
        """A task's final result, as the wire ``CallToolResult`` of its bash_exec."""
        result, _ = await self.rounds.notes(ctx, result)
        return to_call_result("bash_exec", result)

    def _client_id(self, ctx: Any) -> str:
        """Who calls, as a signed state binds it: the client's name and its session."""
        return f"{_client_name(ctx) or ''}\n{self.caller_session(ctx)}"

    def caller_session(self, ctx: Any) -> str:
        """The caller's own session: configured, else from the client's name."""
        if self.session is not None:
            return self.session
        return session_for_client(_client_name(ctx))

    # -- running -----------------------------------------------------------------
    async def serve_stdio(self) -> None:
        """Serve one client on this process's stdin and stdout until it closes them."""
        try:
            # (The SDK types these as anyio files; it only iterates the one and
            # writes to and flushes the other, which is what wire.py gives.)
            async with wire_streams() as (stdin, stdout), stdio_server(
                cast(Any, stdin), cast(Any, stdout)
            ) as (read, write):
                await self.server.run(read, write, self.server.create_initialization_options())
        finally:
            await self.tasks.close()
            self.answers.close()  # nothing listens once the server stops


@functools.lru_cache(maxsize=1)
def _tools() -> list[types.Tool]:
    """:func:`tool_list`, built once (about 1 ms): the tools never change while serving."""
    return tool_list()


def _host_name(backend: Backend) -> str | None:
    """The terminal host's name, or None for terminals in this process."""
    from ..host import HostClient

    return backend.paths.name if isinstance(backend, HostClient) else None


def task_ids_for(backend: Backend) -> TaskIds:
    """Task ids under this user's key in the hosts' runtime directory, so a
    server started later finds the host's tasks; in-process, a key of this
    process alone (its tasks end with it). TASK_KEY_UNSAFE for a key file
    others could read or replace (:mod:`.task_ids`)."""
    from ..host import HostClient

    if isinstance(backend, HostClient):
        return TaskIds(load_key(backend.paths.dir), backend.paths.name)
    return TaskIds.ephemeral()


def _page_opener(backend: Backend) -> PageOpener | None:
    """With a terminal host, the host serves the answer page (it owns the
    terminal); in-process, None: this process serves it."""
    from ..host import HostClient

    return backend.open_answer_page if isinstance(backend, HostClient) else None


def _client_name(ctx: Any) -> str | None:
    """The name the client gave (``initialize``, or each request's ``_meta``)."""
    try:
        params = ctx.session.client_params
        info = params.client_info if params is not None else None
    except AttributeError:
        return None
    name = getattr(info, "name", None)
    return name if isinstance(name, str) else None


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("dsh-magics")
    except PackageNotFoundError:  # a source checkout without metadata
        return "0"


__all__ = ["DEFAULT_SESSION", "INLINE_MS", "ToolServer", "session_for_client", "tool_list", "to_call_result"]
