"""The agent tools served over MCP (stdio), on the SDK's low-level server.

Schemas come from :mod:`dsh_magics.tools`; each call is ``tools.call``, placed
by :mod:`.calls`. The neighbours: :mod:`.elicit` (a person answers a password
prompt), :mod:`.request_state` (the 2026-07-28 multi round-trip's signed
state), :mod:`.tasks` and :mod:`.task_input` (the tasks extension),
:mod:`.progress`, :mod:`.workers` and :mod:`.wire` (the stdio pipes).
"""

from __future__ import annotations

import functools
import re
from typing import Any, cast

import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.lowlevel.server import OpenTelemetryMiddleware
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

from .. import tools
from ..errors import InvalidArgument
from ..terminal import validate_session_id
from ..terminal.api import Engine
from ..tools.schemas import DEFAULT_SEND_WAIT_MS
from .calls import INLINE_MS, CallRunner, exec_wait_ms, wait_seconds
from .elicit import ANSWERED_NOTE, PageOpener, PersonAnswers, UrlRequest, modern
from .progress import PROGRESS_AFTER_S, wants_progress, with_progress
from .render import render
from .request_state import InvalidState, Issued, StateSigner
from .result_schema import output_schema
from .tasks import TaskService
from .wire import wire_streams
from .workers import run_blocking

#: Any backend with the engine contract: the in-process registry or a host client.
Backend = Engine

SERVER_NAME = "dsh-magics"
#: The caller's session when the client sends no name and none is configured.
DEFAULT_SESSION = "mcp"
#: The one message for a retried call's state that is not good (forged,
#: another client's or call's, used, expired); the reason stays here.
_BAD_STATE = "invalid, expired or already used requestState"

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


def to_call_result(name: str, result: dict[str, Any]) -> dict[str, Any]:
    """A ``tools.call`` result as an MCP ``CallToolResult`` (wire form):
    structured content plus a short text.

    ``{"error": ...}`` becomes ``isError`` with ``CODE: message`` as its only
    content and no structured content: clients built on the TypeScript SDK
    check structured content against the tool's output schema even on an
    error, and an error is not a result (tests/mcp/test_ts_clients.py pins it).
    Built as a dict, not the SDK's model: the SDK checks the result's shape
    as it sends it either way, and a model built only to be dumped again
    cost about 20 us a call (benchmarks/README.md).
    """
    text = [{"type": "text", "text": render(name, result)}]
    # (resultType: 2026-07-28 requires it; the SDK drops it on older revisions)
    if "error" in result:
        return {"resultType": "complete", "content": text, "isError": True}
    return {"resultType": "complete", "content": text, "structuredContent": result, "isError": False}


class ToolServer:
    """The tools of one backend, served to MCP clients.

    ``session`` fixes the caller's own session; None derives it from the
    client's name (see :func:`session_for_client`).
    """

    def __init__(self, backend: Backend, *, session: str | None = None) -> None:
        if session is not None:
            check_session(session)
        self.backend = backend
        self.session = session
        self.answers = PersonAnswers(backend, _host_name(backend), _page_opener(backend))
        self.states = StateSigner()
        self.tasks = TaskService(
            backend,
            lambda ctx, name, args: tools.call(
                name, args, caller_session=self.caller_session(ctx), registry=self.backend
            ),
            self._task_result,
            run_blocking,
            self.answers,
            self._client_id,
        )
        self.calls = CallRunner(backend)
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
            return await self._after_person(ctx, params, caller)
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
            result, request = await self._person_notes(ctx, result)
            if request is not None:
                return self._input_required(ctx, params, request)
        if name == "bash_exec":
            task = self.tasks.created(ctx, exec_wait_ms(name, arguments), result)
            if task is not None:
                # (a task is not a core result: the SDK passes it through on 2026-07-28)
                return cast(Any, task)
        return to_call_result(name, result)

    async def _task_result(self, ctx: Any, result: dict[str, Any]) -> dict[str, Any]:
        """A task's final result, as the wire ``CallToolResult`` of its bash_exec."""
        result, _ = await self._person_notes(ctx, result)
        return to_call_result("bash_exec", result)

    # -- a person, on 2026-07-28 (multi round-trip) -----------------------------
    def _input_required(
        self, ctx: Any, params: types.CallToolRequestParams, request: UrlRequest
    ) -> types.InputRequiredResult:
        """The call's result when a person must answer a password prompt on
        2026-07-28: a URL-mode elicitation to the one-time page, and a signed
        state that lets only this client's retry of this call continue the job."""
        key = f"person-{request.nonce[:12]}"
        issued = Issued(request.prompt.job_id, request.prompt.session_id, request.nonce, key)
        state = self.states.issue(
            tool=params.name, arguments=params.arguments, client=self._client_id(ctx), issued=issued
        )
        ask = types.ElicitRequest(
            params=types.ElicitRequestURLParams(mode="url", message=request.message, url=request.url)
        )
        return types.InputRequiredResult(input_requests={key: ask}, request_state=state)

    async def _after_person(
        self, ctx: Any, params: types.CallToolRequestParams, caller: str
    ) -> dict[str, Any] | types.InputRequiredResult:
        """A retried call with the client's reply: the job goes on (no command
        runs again); a state this server did not issue to this client for
        this call, or one already used, is -32602."""
        try:
            issued = self.states.check(
                str(params.request_state),
                tool=params.name,
                arguments=params.arguments,
                client=self._client_id(ctx),
            )
        except InvalidState:
            raise MCPError(code=INVALID_PARAMS, message=_BAD_STATE) from None
        prompt = self.answers.take_request(issued.nonce, issued.job_id)
        if prompt is None:  # used once already
            raise MCPError(code=INVALID_PARAMS, message=_BAD_STATE)
        reply = (params.input_responses or {}).get(issued.key)
        action = str(getattr(reply, "action", None) or "cancel")  # no reply: as dismissed
        note = await self.answers.replied(prompt, action, run_blocking)
        waits_s = wait_seconds(params.name, params.arguments)
        if waits_s is None:  # a bash_send without wait_ms waits its default
            waits_s = DEFAULT_SEND_WAIT_MS / 1000 if params.name == "bash_send" else 0.0
        wait_ms = int(waits_s * 1000) if action == "accept" else 0
        work = functools.partial(
            tools.call,
            "bash_wait",
            {"job_id": issued.job_id, "session_id": issued.session_id, "timeout_ms": wait_ms, "on_input": False},
            caller_session=caller,
            registry=self.backend,
        )
        if waits_s > PROGRESS_AFTER_S and action == "accept" and wants_progress(ctx):
            result = await with_progress(ctx, work, waits_s, None)
        else:
            result = await run_blocking(work)
        self.calls.note_terminal(params.name, result)
        result, request = await self._person_notes(ctx, result)
        if request is not None:
            return self._input_required(ctx, params, request)
        if "error" not in result and ANSWERED_NOTE not in result.get("note", ""):
            result["note"] = "; ".join(filter(None, [note, result.get("note")]))
        return to_call_result(params.name, result)

    def _client_id(self, ctx: Any) -> str:
        """Who calls, as a signed state binds it: the client's name and its session."""
        return f"{_client_name(ctx) or ''}\n{self.caller_session(ctx)}"

    async def _person_notes(
        self, ctx: Any, result: dict[str, Any]
    ) -> tuple[dict[str, Any], UrlRequest | None]:
        """A job waiting for a password is routed to a person (never to the
        agent); the result says so, and later that a person answered. On
        2026-07-28 the routing is a request for the call's result instead."""
        err = result.get("error")
        if err is None:
            if "job_id" not in result:
                return result, None
            notes, request = await self.answers.notes_for(ctx, result, run_blocking)
            if request is not None or not notes:
                return result, request
            return {**result, "note": "; ".join([*filter(None, [result.get("note")]), *notes])}, None
        details = err.get("details") or {}
        if err.get("code") != "SECRET_INPUT" or not isinstance(details.get("session_id"), str):
            return result, None
        waiting = {
            "job_id": details.get("job_id"),
            "session_id": details["session_id"],
            "awaiting_input": {"secret": True},
        }
        notes, request = await self.answers.notes_for(ctx, waiting, run_blocking)
        if request is not None or not notes:
            return result, request
        return {"error": {**err, "message": f"{err['message']}. Over MCP: {'; '.join(notes)}"}}, None

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
