"""Long jobs as tasks: the MCP tasks extension (``io.modelcontextprotocol/tasks``,
2026-07-28) over ordinary jobs (docs/mcp.md, "Long jobs as tasks").

A task is a view of one job, never a second copy of it: its id names the job
and its session, so ``tasks/get`` asks the job's terminal (bash_list, the
panel and the notebook see the same job), and a server started after a
client's restart finds a task that a terminal host still runs. What only
this process knows is small: when it first saw the task, and that a client
cancelled it.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, cast

import anyio
import mcp.types as types
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY
from mcp.types import INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY
from pydantic import BaseModel

from ..errors import DshError
from .elicit import PersonAnswers, modern
from .task_board import POLL_INTERVAL_MS, TaskBoard
from .task_ids import TaskIds
from .task_input import TaskFollower

#: The extension's identifier, in the client's and the server's capabilities.
TASKS = "io.modelcontextprotocol/tasks"
#: The fields of a ``bash_exec`` result for a job still running.
_STARTED = frozenset(("job_id", "session_id", "status"))
#: A task id whose job these say is not there names no task (-32602).
_NO_TASK = frozenset(("NO_SUCH_JOB", "NO_SUCH_SESSION", "INVALID_ARGUMENT"))
#: Longest a task whose job ended waits for its answer pages to report how
#: they ended (a host's page reports over its socket).
PAGE_END_MS = 5000
#: How long one look of a task's listener waits for a change of its task.
WATCH_SLICE_S = 30.0


def declared(ctx: Any) -> bool:
    """Did this request's client declare the tasks extension?"""
    try:
        extensions = ctx.session.client_params.capabilities.extensions
    except AttributeError:
        return False
    return isinstance(extensions, dict) and TASKS in extensions


def require_declared(ctx: Any) -> None:
    """-32021 for a client that did not declare the extension (its MUST)."""
    if not declared(ctx):
        raise MCPError(
            code=MISSING_REQUIRED_CLIENT_CAPABILITY,
            message="Missing required client capability",
            data={"requiredCapabilities": {"extensions": {TASKS: {}}}},
        )


def unknown_task(value: str) -> MCPError:
    """-32602: the same answer for an id this server's key did not make and
    for one whose job is gone, so a refused id says nothing of the job."""
    return MCPError(code=INVALID_PARAMS, message=f"Failed to retrieve task: no task {value[:200]!r}")


class UpdateTaskRequestParams(types.RequestParams):
    """``tasks/update`` (the extension's; not an SDK type): the client's
    responses to the task's outstanding ``inputRequests``."""

    task_id: str
    input_responses: dict[str, Any]


class TaskService:
    """The extension's requests over one engine: a task for a long
    ``bash_exec``, ``tasks/get``, ``tasks/update``, ``tasks/cancel`` and
    ``subscriptions/listen``.

    ``call(ctx, name, arguments)`` is ``tools.call`` as the requesting client's
    session; ``final(ctx, result)`` turns a job's result into the wire
    ``CallToolResult`` the task carries; ``run_blocking`` runs a blocking call
    off the event loop's thread; ``answers`` routes a password prompt to a
    person; ``client_id(ctx)`` names the requesting client (an input request
    is shown to that client alone); ``ids`` makes and checks the task ids
    (:mod:`.task_ids`).
    """

    def __init__(
        self,
        backend: Any,
        call: Callable[[Any, str, dict[str, Any]], dict[str, Any]],
        final: Callable[[Any, dict[str, Any]], Awaitable[dict[str, Any]]],
        run_blocking: Callable[[Callable[[], Any]], Awaitable[Any]],
        answers: PersonAnswers,
        client_id: Callable[[Any], str],
        ids: TaskIds,
    ) -> None:
        self.backend = backend
        self.ids = ids
        self.board = TaskBoard()
        self._call = call
        self._final = final
        self._run_blocking = run_blocking
        self._answers = answers
        self._client_id = client_id
        self.follower = TaskFollower(self.board, backend, call, run_blocking, answers, client_id, self.state)

    def parse(self, tid: str) -> tuple[str, str]:
        """``(job_id, session_id)`` of a task id this server's key made, or -32602."""
        named = self.ids.check(tid)
        if named is None:
            raise unknown_task(tid)
        return named

    def serve(self, server: Any) -> None:
        """Advertise the extension (``server/discover``) and answer its requests."""
        server.extensions[TASKS] = {}
        server.add_request_handler("tasks/get", types.GetTaskRequestParams, self.get)
        server.add_request_handler("tasks/update", UpdateTaskRequestParams, self.update)
        server.add_request_handler("tasks/cancel", types.CancelTaskRequestParams, self.cancel)
        server.add_request_handler("subscriptions/listen", types.SubscriptionsListenRequestParams, self.listen)

    def created(self, ctx: Any, wait_ms: int | None, started: dict[str, Any]) -> dict[str, Any] | None:
        """A task for a ``bash_exec`` that outlived its ``wait_ms`` (its result
        ``started``), for a request that declared the extension; else None."""
        if not wait_ms or set(started) != _STARTED or started.get("status") != "running":
            return None
        if not (modern(ctx) and declared(ctx)):
            return None
        tid = self.ids.make(started["job_id"], started["session_id"])
        task = self.board.created(tid)
        self.follower.follow(ctx, tid, started["job_id"], started["session_id"])
        return task

    async def get(self, ctx: Any, params: types.GetTaskRequestParams) -> dict[str, Any]:
        require_declared(ctx)
        return {"resultType": "complete", **await self.state(ctx, params.task_id)}

    async def state(self, ctx: Any, tid: str) -> dict[str, Any]:
        """The task as ``tasks/get`` and ``notifications/tasks`` show it."""
        job_id, session_id = self.parse(tid)  # before anything is looked up
        viewer = self._client_id(ctx)
        if self.board.status(tid) in ("working", "input_required", None) and not self._running(job_id, session_id):
            res = self._job_now(ctx, tid, job_id, session_id)  # on the loop's thread: it waits for nothing
            final = None
            if "error" in res or res.get("status") != "running":
                res.pop("reason", None)  # a bash_wait field; bash_exec results have none
                # so the result can say a person answered (the page may report it last)
                await self._run_blocking(functools.partial(self._answers.wait_pages_of, job_id, PAGE_END_MS))
                final = await self._final(ctx, res)
            return self.board.state(tid, "completed" if final is not None else "running", final, viewer)
        if self.board.status(tid) in ("working", "input_required") and modern(ctx):
            # e.g. a task this server found after a restart (a person is asked
            # through a task on 2026-07-28 only, where tasks exist)
            self.follower.follow(ctx, tid, job_id, session_id)
        return self.board.state(tid, "running", None, viewer)

    async def update(self, ctx: Any, params: UpdateTaskRequestParams) -> dict[str, Any]:
        """The client's responses to the task's input requests: each one
        outstanding for this client is taken (once) and acted on, the task
        works on; others are ignored, as the extension says."""
        require_declared(ctx)
        tid = params.task_id
        await self.state(ctx, tid)  # -32602 for a task that does not exist
        job_id, _ = self.parse(tid)
        for key, reply in params.input_responses.items():
            nonce = self.board.take_input(tid, key, self._client_id(ctx))
            prompt = self._answers.take_request(nonce, job_id) if nonce is not None else None
            if prompt is None:
                continue
            action = reply.get("action") if isinstance(reply, dict) else None
            note = await self._answers.replied(
                prompt, str(action or "cancel"), self._run_blocking, keep_answered=True
            )  # the task's result says it too
            self.board.say(tid, note)
        return {"resultType": "complete"}

    async def cancel(self, ctx: Any, params: types.CancelTaskRequestParams) -> dict[str, Any]:
        """Ctrl-C to the task's job (the shell stays); acknowledged at once."""
        require_declared(ctx)
        tid = params.task_id
        job_id, session_id = self.parse(tid)
        if self.board.status(tid) in ("working", "input_required", None):
            res = self._job_now(ctx, tid, job_id, session_id)
            if res.get("status") == "running":
                done = await self._run_blocking(
                    lambda: self._call(ctx, "bash_interrupt", {"session_id": session_id})
                )
                if done.get("job_id") == job_id:
                    self.board.cancelled(tid)
        return {"resultType": "complete"}

    async def listen(self, ctx: Any, params: types.SubscriptionsListenRequestParams) -> Any:
        """``subscriptions/listen``: the extension's ``taskIds`` get
        ``notifications/tasks`` (the whole task, as ``tasks/get`` shows it)
        at each change of status; the stream ends once every task it
        honoured is done, unless it also asked for list changes (this
        server's lists never change: such a stream stays open, silent)."""
        sub_id = ctx.request_id
        if sub_id is None:
            raise MCPError(code=INVALID_PARAMS, message="subscriptions/listen requires a request id")
        asked = params.notifications
        wanted = (asked.model_extra or {}).get("taskIds")
        if wanted is not None:
            require_declared(ctx)
            if not isinstance(wanted, list) or not all(isinstance(t, str) for t in wanted):
                raise MCPError(code=INVALID_PARAMS, message="taskIds: a list of task ids")
        known = []
        for tid in wanted or []:
            try:
                await self.state(ctx, tid)
            except MCPError:
                continue  # no such task: not honoured
            known.append(tid)
        lists = {
            k: True
            for k in ("tools_list_changed", "prompts_list_changed", "resources_list_changed")
            if getattr(asked, k, None)
        }
        honoured = types.SubscriptionFilter.model_validate(
            {**lists, "taskIds": known or None}, by_name=True, by_alias=True
        )
        meta = {SUBSCRIPTION_ID_META_KEY: sub_id}
        await ctx.session.send_notification(
            types.SubscriptionsAcknowledgedNotification(
                params=types.SubscriptionsAcknowledgedNotificationParams(notifications=honoured, _meta=meta)
            ),
            related_request_id=sub_id,
        )
        async with anyio.create_task_group() as tg:
            for tid in known:
                tg.start_soon(self._watch, ctx, tid, meta)
        if lists:
            await anyio.sleep_forever()  # until the client ends the stream
        return types.SubscriptionsListenResult(_meta=meta)

    async def _watch(self, ctx: Any, tid: str, meta: dict[str, Any]) -> None:
        """Tell the listener the task as it is, and again at each change, to its end."""
        said: tuple[Any, ...] | None = None
        while True:
            try:
                task = await self.state(ctx, tid)
            except MCPError:
                return  # its job is forgotten (a new host): nothing more to say
            now = (task["status"], task.get("statusMessage"), tuple(task.get("inputRequests") or ()))
            if now != said:
                said = now
                note = _TaskNotification(method="notifications/tasks", params={**task, "_meta": meta})
                await ctx.session.send_notification(cast(Any, note), related_request_id=ctx.request_id)
            if task["status"] not in ("working", "input_required"):
                return
            # the task's follower changes the board when its job moves on
            await self.board.next_change(tid, WATCH_SLICE_S)

    async def close(self) -> None:
        """Stop following tasks (the server stops)."""
        await self.follower.close()

    def _running(self, job_id: str, session_id: str) -> bool:
        """Is the task's job running? From the engine's job object alone (a
        host's job stands in locally, settled by the host's events): a poll
        of a working task costs no request to the host."""
        try:
            job = self.backend.job(job_id)
        except DshError:
            return False  # let the full look say what is wrong
        return bool(job.owner == session_id and not job.done)

    def _job_now(self, ctx: Any, tid: str, job_id: str, session_id: str) -> dict[str, Any]:
        """The task's job as a bash_wait that waits not at all; -32602 for a
        task id that names no job."""
        res = self._call(
            ctx, "bash_wait", {"job_id": job_id, "session_id": session_id, "timeout_ms": 0, "on_input": False}
        )
        if res.get("error", {}).get("code") in _NO_TASK:
            raise unknown_task(tid)
        return res


class _TaskNotification(BaseModel):
    """``notifications/tasks`` (the tasks extension; not an SDK type)."""

    method: str
    params: dict[str, Any]


__all__ = [
    "POLL_INTERVAL_MS",
    "TASKS",
    "TaskBoard",
    "TaskService",
    "UpdateTaskRequestParams",
    "declared",
    "require_declared",
    "unknown_task",
]
