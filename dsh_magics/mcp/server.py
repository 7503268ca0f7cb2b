"""The agent tools served over MCP (stdio), on the SDK's low-level server.

Schemas come from :mod:`dsh_magics.tools`; each call is ``tools.call`` in a daemon thread.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import queue
import re
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from .. import tools
from ..errors import InvalidArgument
from ..terminal import validate_session_id
from ..terminal.api import Engine
from .elicit import PersonAnswers
from .render import render

T = TypeVar("T")

#: Any backend with the engine contract: the in-process registry or a host client.
Backend = Engine

SERVER_NAME = "dsh-magics"
#: The caller's session when the client sends no name and none is configured.
DEFAULT_SESSION = "mcp"
#: A waiting call longer than this sends progress notifications, this often.
PROGRESS_AFTER_S = 1.0
PROGRESS_EVERY_S = 1.0

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


def output_schema(name: str) -> dict[str, Any] | None:
    """The tool's result schema as MCP wants it (an object at the root)."""
    schema = tools.OUTPUT_SCHEMAS.get(name)
    if schema is None:
        return None
    schema = copy.deepcopy(schema)
    if schema.get("type") != "object":
        # bash_exec returns one of two objects: say so at the root too, as MCP requires
        # (pinned by tests/mcp/test_mcp_server.py::test_initialize_lists_every_tool_with_valid_schemas).
        schema = {"type": "object", **schema}
    return schema


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


def to_call_result(name: str, result: dict[str, Any]) -> types.CallToolResult:
    """A ``tools.call`` result as MCP: structured content plus a short text.

    ``{"error": ...}`` becomes ``isError`` with ``CODE: message`` as its only
    content and no structured content: clients built on the TypeScript SDK
    check structured content against the tool's output schema even on an
    error, and an error is not a result (tests/mcp/test_ts_clients.py pins it).
    """
    text = types.TextContent(type="text", text=render(name, result))
    if "error" in result:
        return types.CallToolResult(content=[text], is_error=True)
    return types.CallToolResult(content=[text], structured_content=result, is_error=False)


class _Workers:
    """Daemon threads that run blocking calls, reused while they are idle.

    Daemon, not ``anyio.to_thread``'s non-daemon workers: an abandoned wait
    (a cancelled request, a client gone mid-wait) must not hold the
    process's exit for up to the wait's timeout while the job runs on in the
    host (tests/mcp/test_mcp_server.py::test_a_client_gone_mid_wait_leaves_the_job_running
    pins a prompt exit). Reused, because a new thread per call costs more
    than the rest of the server's share of a round trip.
    """

    IDLE_EXIT_S = 60.0

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0  # workers waiting for a job that no submit has claimed

    def submit(
        self, fn: Callable[[], Any], done: Callable[[Any, BaseException | None], None]
    ) -> None:
        """Run ``fn()``; then ``done(value, error)``, once the thread is idle
        again (so a call made in response reuses it)."""
        with self._lock:
            claimed = self._idle > 0
            if claimed:
                self._idle -= 1
        if claimed:
            self._queue.put((fn, done))
        else:
            threading.Thread(
                target=self._work, args=((fn, done),), name="dsh-mcp-call", daemon=True
            ).start()

    def _work(
        self, item: tuple[Callable[[], Any], Callable[[Any, BaseException | None], None]]
    ) -> None:
        while True:
            fn, done = item
            value: Any = None
            error: BaseException | None = None
            try:
                value = fn()
            except BaseException as e:  # noqa: BLE001 - handed to the caller
                error = e
            with self._lock:
                self._idle += 1
            done(value, error)
            del fn, done, value, error
            while True:
                try:
                    item = self._queue.get(timeout=self.IDLE_EXIT_S)
                    break
                except queue.Empty:
                    with self._lock:
                        if self._idle > 0:  # nobody claimed us: leave
                            self._idle -= 1
                            return
                    # a submit claimed us just now: its job is on the way


_WORKERS = _Workers()


async def run_blocking(fn: Callable[[], T]) -> T:
    """Run ``fn`` on a worker thread and await its result. Cancelling the
    awaiting task returns at once; the call finishes on its own."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def deliver(value: Any, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def done(value: Any, error: BaseException | None) -> None:
        try:
            loop.call_soon_threadsafe(deliver, value, error)
        except RuntimeError:
            pass  # the loop is gone: nobody waits any more

    _WORKERS.submit(fn, done)
    return await future


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
        self.answers = PersonAnswers(backend, _host_name(backend))
        self.server: Server[Any] = Server(
            SERVER_NAME,
            version=_version(),
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    # -- handlers ------------------------------------------------------------
    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tool_list())

    async def _call_tool(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        name = params.name
        arguments = params.arguments
        caller = self.caller_session(ctx)
        work = functools.partial(
            tools.call, name, arguments, caller_session=caller, registry=self.backend
        )
        waits_s = _wait_seconds(name, arguments)
        try:
            if waits_s is not None and waits_s > PROGRESS_AFTER_S and _wants_progress(ctx):
                result = await self._with_progress(
                    ctx, work, waits_s, self._lines_probe(name, arguments)
                )
            else:
                result = await run_blocking(work)
        except Exception as e:  # noqa: BLE001 - tools.call never raises; a tool error, not a protocol one
            result = {
                "error": {
                    "code": tools.INTERNAL_ERROR_CODE,
                    "message": f"internal error ({type(e).__name__}): {e}"[:1000],
                }
            }
        if name in _JOB_TOOLS:
            result = await self._person_notes(ctx, result)
        return to_call_result(name, result)

    async def _person_notes(self, ctx: Any, result: dict[str, Any]) -> dict[str, Any]:
        """A job waiting for a password is routed to a person (never to the
        agent); the result says so, and later that a person answered."""
        err = result.get("error")
        if err is None:
            if "job_id" not in result:
                return result
            notes = await self.answers.notes_for(ctx, result, run_blocking)
            if not notes:
                return result
            return {**result, "note": "; ".join([*filter(None, [result.get("note")]), *notes])}
        details = err.get("details") or {}
        if err.get("code") != "SECRET_INPUT" or not isinstance(details.get("session_id"), str):
            return result
        waiting = {
            "job_id": details.get("job_id"),
            "session_id": details["session_id"],
            "awaiting_input": {"secret": True},
        }
        notes = await self.answers.notes_for(ctx, waiting, run_blocking)
        if not notes:
            return result
        return {"error": {**err, "message": f"{err['message']}. Over MCP: {'; '.join(notes)}"}}

    def caller_session(self, ctx: Any) -> str:
        """The caller's own session: configured, else from the client's name."""
        if self.session is not None:
            return self.session
        info = None
        try:
            params = ctx.session.client_params
            info = params.client_info if params is not None else None
        except AttributeError:
            pass
        return session_for_client(getattr(info, "name", None))

    # -- progress --------------------------------------------------------------
    async def _with_progress(
        self,
        ctx: Any,
        work: Callable[[], dict[str, Any]],
        total_s: float,
        lines: Callable[[], int | None] | None,
    ) -> dict[str, Any]:
        started = time.monotonic()
        result: dict[str, Any] = {}

        async def ticker() -> None:
            tick = 0
            while True:
                tick += 1
                due = started + PROGRESS_AFTER_S + (tick - 1) * PROGRESS_EVERY_S
                await anyio.sleep(max(0.0, due - time.monotonic()))
                count = None
                if lines is not None:
                    try:
                        count = await run_blocking(lines)
                    except Exception:  # noqa: BLE001 - progress is best effort
                        count = None
                elapsed = time.monotonic() - started
                message = f"waiting {elapsed:.0f}s"
                if count is not None:
                    message += f", {count} line{'s' if count != 1 else ''} of output so far"
                try:
                    await ctx.session.report_progress(round(elapsed, 3), total_s, message)
                except Exception:  # noqa: BLE001 - a client gone or refusing progress
                    return  # never turns the call's result into an error

        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker)
            result = await run_blocking(work)
            tg.cancel_scope.cancel()
        return result

    def _lines_probe(self, name: str, arguments: Any) -> Callable[[], int | None] | None:
        """How many lines the awaited job has printed so far (bash_wait only):
        a snapshot that carries no output, only its counts."""
        if name != "bash_wait" or not isinstance(arguments, dict):
            return None
        job_id = arguments.get("job_id")
        if not isinstance(job_id, str) or not job_id:
            return None
        backend = self.backend

        def probe() -> int:
            snapshot = backend.result(job_id, tail_lines=0)
            return snapshot.omitted_lines + snapshot.dropped_lines

        return probe

    # -- running -----------------------------------------------------------------
    async def serve_stdio(self) -> None:
        """Serve one client on this process's stdin and stdout until it closes them."""
        try:
            async with stdio_server() as (read, write):
                await self.server.run(read, write, self.server.create_initialization_options())
        finally:
            self.answers.close()  # nothing listens once the server stops


def _wait_seconds(name: str, arguments: Any) -> float | None:
    """How long this call may block waiting, if it is a waiting call."""
    if not isinstance(arguments, dict):
        return None
    for key in ("timeout_ms", "wait_ms"):
        value = arguments.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return max(0.0, float(value) / 1000.0)
    if name == "bash_wait":
        return tools.DEFAULT_WAIT_TIMEOUT_MS / 1000.0
    return None


def _host_name(backend: Backend) -> str | None:
    """The terminal host's name, or None for terminals in this process."""
    from ..host import HostClient

    return backend.paths.name if isinstance(backend, HostClient) else None


def _wants_progress(ctx: Any) -> bool:
    meta = getattr(ctx, "meta", None)
    if isinstance(meta, dict):
        return meta.get("progress_token", meta.get("progressToken")) is not None
    return getattr(meta, "progress_token", None) is not None


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("dsh-magics")
    except Exception:  # noqa: BLE001 - a source checkout without metadata
        return "0"
