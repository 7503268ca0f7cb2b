"""The agent tools served over MCP (stdio), on the SDK's low-level server.

Schemas come from :mod:`dsh_magics.tools`; each call is ``tools.call`` in a daemon thread.
"""

from __future__ import annotations

import asyncio
import functools
import queue
import re
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar, cast

import anyio
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
from .elicit import ANSWERED_NOTE, PageOpener, PersonAnswers, UrlRequest, modern
from .render import render
from .request_state import InvalidState, Issued, StateSigner
from .result_schema import output_schema
from .tasks import TaskService
from .wire import wire_streams

T = TypeVar("T")

#: Any backend with the engine contract: the in-process registry or a host client.
Backend = Engine

SERVER_NAME = "dsh-magics"
#: The caller's session when the client sends no name and none is configured.
DEFAULT_SESSION = "mcp"
#: A waiting call longer than this sends progress notifications, this often.
PROGRESS_AFTER_S = 1.0
PROGRESS_EVERY_S = 1.0

#: Calls that only look, run on the event loop's thread (see ToolServer._run).
_INLINE_TOOLS = frozenset(("bash_list", "bash_read"))
#: How long a bash_exec may hold the event loop's thread before its wait moves to a worker.
INLINE_MS = 5
_STARTED_FIELDS = frozenset(("job_id", "session_id", "status"))
#: A job status after which the terminal's shell is gone.
_GONE = frozenset(("shell_exited",))

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
        self.answers = PersonAnswers(backend, _host_name(backend), _page_opener(backend))
        self.states = StateSigner()
        self.tasks = TaskService(
            backend,
            lambda ctx, name, args: tools.call(
                name, args, caller_session=self.caller_session(ctx), registry=self.backend
            ),
            self._task_result,
            run_blocking,
        )
        self._running_terminals: set[str] = set()
        self.server: Server[Any] = Server(
            SERVER_NAME,
            version=_version(),
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
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
    ) -> types.CallToolResult | types.InputRequiredResult:
        name = params.name
        arguments = params.arguments
        caller = self.caller_session(ctx)
        if params.request_state is not None and modern(ctx):
            return await self._after_person(ctx, params, caller)
        try:
            result = await self._run(ctx, name, arguments, caller)
        except Exception as e:  # noqa: BLE001 - tools.call never raises; a tool error, not a protocol one
            result = {
                "error": {
                    "code": tools.INTERNAL_ERROR_CODE,
                    "message": f"internal error ({type(e).__name__}): {e}"[:1000],
                }
            }
        self._note_terminal(name, result)
        if name in _JOB_TOOLS:
            result, request = await self._person_notes(ctx, result)
            if request is not None:
                return self._input_required(ctx, params, request)
        if name == "bash_exec":
            task = self.tasks.created(ctx, _exec_wait_ms(name, arguments), result)
            if task is not None:
                # (a task is not a core result: the SDK passes it through on 2026-07-28)
                return cast(Any, task)
        return to_call_result(name, result)

    async def _task_result(self, ctx: Any, result: dict[str, Any]) -> dict[str, Any]:
        """A task's final result, as the wire ``CallToolResult`` of its bash_exec."""
        result, _ = await self._person_notes(ctx, result)
        return to_call_result("bash_exec", result).model_dump(by_alias=True, mode="json", exclude_none=True)

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
    ) -> types.CallToolResult | types.InputRequiredResult:
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
        waits_s = _wait_seconds(params.name, params.arguments)
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
        if waits_s > PROGRESS_AFTER_S and action == "accept" and _wants_progress(ctx):
            result = await self._with_progress(ctx, work, waits_s, None)
        else:
            result = await run_blocking(work)
        self._note_terminal(params.name, result)
        result, request = await self._person_notes(ctx, result)
        if request is not None:
            return self._input_required(ctx, params, request)
        if "error" not in result and ANSWERED_NOTE not in result.get("note", ""):
            result["note"] = "; ".join(filter(None, [note, result.get("note")]))
        return to_call_result(params.name, result)

    def _client_id(self, ctx: Any) -> str:
        """Who calls, as a signed state binds it: the client's name and its session."""
        return f"{_client_name(ctx) or ''}\n{self.caller_session(ctx)}"

    async def _run(
        self, ctx: Any, name: str, arguments: Any, caller: str
    ) -> dict[str, Any]:
        """``tools.call``, on a worker thread unless it cannot block for long.

        A hop to a worker thread and back costs more than a quick call
        (benchmarks/README.md, bench_mcp.py), so calls that only look
        (bash_list, bash_read) run on the event loop's thread, and a bash_exec
        on a terminal this server saw running gets its first INLINE_MS there;
        only the rest of a longer wait moves to a worker thread.
        """
        call = functools.partial(tools.call, caller_session=caller, registry=self.backend)
        if name in _INLINE_TOOLS:
            return call(name, arguments)
        work: Callable[[], dict[str, Any]] = functools.partial(call, name, arguments)
        wait_ms = _exec_wait_ms(name, arguments)
        if wait_ms is not None and self._warm(arguments, caller):
            started = time.monotonic()
            first = call(name, {**arguments, "wait_ms": min(wait_ms, INLINE_MS)})
            if wait_ms <= INLINE_MS or set(first) != _STARTED_FIELDS:
                return first  # finished (or refused) within INLINE_MS: as the whole call would
            left = max(0, wait_ms - int((time.monotonic() - started) * 1000))
            work = functools.partial(self._rest_of_exec, first, left, caller)
        elif wait_ms is not None and wait_ms > INLINE_MS:
            # A terminal that may first start a shell: all of it on a worker.
            work = functools.partial(self._exec_in_two, arguments, wait_ms, caller)
        waits_s = _wait_seconds(name, arguments)
        if waits_s is not None and waits_s > PROGRESS_AFTER_S and _wants_progress(ctx):
            return await self._with_progress(ctx, work, waits_s, self._lines_probe(name, arguments))
        return await run_blocking(work)

    def _exec_in_two(self, arguments: dict[str, Any], wait_ms: int, caller: str) -> dict[str, Any]:
        """A bash_exec with a wait: its start (and first INLINE_MS), then
        :meth:`_rest_of_exec`, so a password prompt ends the wait as it does
        on a warm terminal."""
        started = time.monotonic()
        first = tools.call(
            "bash_exec", {**arguments, "wait_ms": INLINE_MS}, caller_session=caller, registry=self.backend
        )
        if set(first) != _STARTED_FIELDS:
            return first
        left = max(0, wait_ms - int((time.monotonic() - started) * 1000))
        return self._rest_of_exec(first, left, caller)

    def _rest_of_exec(self, started: dict[str, Any], left_ms: int, caller: str) -> dict[str, Any]:
        """The rest of a bash_exec's wait_ms: its result if the job finishes
        within ``left_ms``, else the started job, or the wait's error (what
        the engine's exec does). A job that waits for a password ends the
        wait early, with ``awaiting_input``: a person is asked for it
        (docs/mcp.md), where the engine's exec would wait on to no end."""
        deadline = time.monotonic() + left_ms / 1000
        on_input = True
        while True:
            res = tools.call(
                "bash_wait",
                {
                    "job_id": started["job_id"],
                    "session_id": started["session_id"],
                    "timeout_ms": max(0, int((deadline - time.monotonic()) * 1000)),
                    "on_input": on_input,
                },
                caller_session=caller,
                registry=self.backend,
            )
            waiting = res.get("awaiting_input")
            if on_input and res.get("reason") == "awaiting_input" and not (waiting or {}).get("secret"):
                on_input = False  # input the agent may give: as the engine's exec, wait on
                continue
            break
        if res.get("reason") == "awaiting_input" and "error" not in res:
            return res  # a password prompt: the job's state, for a person to answer
        if "error" in res:
            # HOST_UNAVAILABLE when the host died under the wait: the engine
            # reports it to this call (HostClient.wait), as its exec would.
            return res
        if res.get("timed_out") or res.get("status") == "running":
            return started
        res.pop("reason", None)  # a bash_wait field; bash_exec results have none
        return res

    def _warm(self, arguments: dict[str, Any], caller: str) -> bool:
        """Is the addressed terminal one this server saw running? (Else an
        exec may first start a shell, which takes long.) A session id that is
        not a string is the tool's to refuse (a list here raised TypeError:
        tests/reliability/test_mcp_fuzz.py)."""
        sid = arguments.get("session_id", caller)
        return isinstance(sid, str) and sid in self._running_terminals

    def _note_terminal(self, name: str, result: dict[str, Any]) -> None:
        sid = result.get("session_id")
        if name == "bash_close" or (isinstance(sid, str) and result.get("status") in _GONE):
            self._running_terminals.clear()  # cheap to learn again
        elif isinstance(sid, str) and "error" not in result:
            self._running_terminals.add(sid)

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
            # (The SDK types these as anyio files; it only iterates the one and
            # writes to and flushes the other, which is what wire.py gives.)
            async with wire_streams() as (stdin, stdout), stdio_server(
                cast(Any, stdin), cast(Any, stdout)
            ) as (read, write):
                await self.server.run(read, write, self.server.create_initialization_options())
        finally:
            self.answers.close()  # nothing listens once the server stops


def _exec_wait_ms(name: str, arguments: Any) -> int | None:
    """A bash_exec's valid wait_ms (anything else goes to tools.call as given)."""
    if name != "bash_exec" or not isinstance(arguments, dict):
        return None
    value = arguments.get("wait_ms")
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 600_000:
        return None
    return value


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
