"""Long jobs as tasks (the tasks extension, ``io.modelcontextprotocol/tasks``,
on 2026-07-28), driven by the Python SDK's ``Client()`` with a client
extension that declares it and claims the ``task`` result (docs/mcp.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import anyio
import pytest
from mcp.client.extension import ClaimContext, ClientExtension, NotificationBinding, ResultClaim
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    CallToolResult,
    CancelTaskRequest,
    CancelTaskRequestParams,
    GetTaskRequest,
    GetTaskRequestParams,
    NotificationParams,
    Result,
    SubscriptionFilter,
    SubscriptionsListenRequest,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
)
from pydantic import ConfigDict

from .conftest import HANDSHAKE, MODERN, STEP, Mcp, ServerEnv, mcp_server

pytestmark = pytest.mark.anyio

TASKS = "io.modelcontextprotocol/tasks"


class TaskHandle(Result):
    """``CreateTaskResult`` of the extension (2026-07-28): a flat task."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    created_at: str
    last_updated_at: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


class DetailedTask(Result):
    """A ``tasks/get`` result: the task, with the final result once completed."""

    model_config = ConfigDict(extra="allow")
    result_type: str | None = None
    task_id: str
    status: str
    created_at: str
    last_updated_at: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    status_message: str | None = None
    result: dict[str, Any] | None = None


class TaskNote(NotificationParams):
    """``notifications/tasks``: the whole task, as ``tasks/get`` shows it."""

    model_config = ConfigDict(extra="allow")
    task_id: str
    status: str
    result: dict[str, Any] | None = None


class Tasks(ClientExtension):
    """Declares the extension; a task result is polled to its end, and
    status notifications are kept."""

    identifier = TASKS

    def __init__(self) -> None:
        self.polls: list[str] = []
        self.notes: list[TaskNote] = []

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=TaskHandle, resolve=self._resolve)]

    def notifications(self) -> Sequence[NotificationBinding[Any]]:
        return [NotificationBinding(method="notifications/tasks", params_type=TaskNote, handler=self._note)]

    async def _note(self, note: TaskNote) -> None:
        self.notes.append(note)

    async def _resolve(self, handle: TaskHandle, ctx: ClaimContext) -> CallToolResult:
        while True:
            task = await get_task(ctx.session, handle.task_id)
            self.polls.append(task.status)
            if task.status == "completed":
                assert task.result is not None
                return CallToolResult.model_validate(task.result)
            assert task.status == "working", task
            await anyio.sleep((task.poll_interval_ms or 1000) / 1000 / 10)


async def get_task(session: Any, task_id: str) -> DetailedTask:
    with anyio.fail_after(STEP):
        return await session.send_request(
            GetTaskRequest(params=GetTaskRequestParams(task_id=task_id)), DetailedTask
        )


async def cancel_task(session: Any, task_id: str) -> None:
    with anyio.fail_after(STEP):
        await session.send_request(CancelTaskRequest(params=CancelTaskRequestParams(task_id=task_id)), Result)


def named(task_id: str) -> tuple[str, str]:
    """The job and session a task id names (``JOB~SESSION~TAG``, docs/mcp.md)."""
    job_id, _, rest = task_id.partition("~")
    session_id, _, tag = rest.rpartition("~")
    assert job_id and session_id and len(tag) >= 22, task_id
    return job_id, session_id


async def start_task(m: Mcp, command: str, wait_ms: int = 200) -> TaskHandle:
    with anyio.fail_after(STEP):
        handle = await m.session.session.call_tool(
            "bash_exec", {"command": command, "wait_ms": wait_ms}, allow_claimed=True
        )
    assert isinstance(handle, TaskHandle), handle
    return handle


# ---------------------------------------------------------------------------
async def test_a_long_exec_is_a_task_polled_to_its_result(server_env: ServerEnv) -> None:
    ext = Tasks()
    async with mcp_server(server_env, version=MODERN, extensions=[ext]) as m:
        assert TASKS in (m.session.server_capabilities.extensions or {})
        # quick: an ordinary result, no task
        quick = await m.run("echo quick")
        assert quick["output"] == "quick\n"
        # long: a task; the SDK's Client resolves it through the extension's claim
        res = await m.ok("bash_exec", {"command": "sleep 1.5; echo done; cd /tmp", "wait_ms": 100})
        assert res["status"] == "completed" and res["output"] == "done\n" and res["cwd"] == "/tmp"
        assert "reason" not in res
        assert ext.polls[0] == "working" and ext.polls[-1] == "completed"


async def test_tasks_get_working_then_completed_as_bash_wait_would(server_env: ServerEnv) -> None:
    async with mcp_server(server_env, version=MODERN, extensions=[Tasks()]) as m:
        handle = await start_task(m, "echo begin; sleep 1; echo end")
        assert handle.status == "working" and handle.poll_interval_ms
        job_id, session_id = named(handle.task_id)
        # the task's job is an ordinary job: bash_list sees it running
        rows = {r["session_id"]: r for r in (await m.ok("bash_list"))["terminals"]}
        assert rows[session_id]["job_id"] == job_id and rows[session_id]["running"]
        first = await get_task(m.session.session, handle.task_id)
        assert first.status == "working" and first.result is None
        waited = await m.ok("bash_wait", {"job_id": job_id, "timeout_ms": 30_000})
        done = await get_task(m.session.session, handle.task_id)
        assert done.status == "completed" and done.result is not None
        final = CallToolResult.model_validate(done.result)
        assert not final.is_error
        same = {k: v for k, v in waited.items() if k != "reason"}
        assert final.structured_content == same
        assert done.created_at == handle.created_at and done.last_updated_at >= first.last_updated_at


async def test_tasks_cancel_is_ctrl_c_and_the_shell_runs_on(server_env: ServerEnv) -> None:
    async with mcp_server(server_env, version=MODERN, extensions=[Tasks()]) as m:
        await m.run("CARRY=kept")
        handle = await start_task(m, "echo go; sleep 60; echo never")
        await cancel_task(m.session.session, handle.task_id)
        job_id, _ = named(handle.task_id)
        ended = await m.ok("bash_wait", {"job_id": job_id, "timeout_ms": 30_000})
        assert ended["status"] == "interrupted" and ended["exit_code"] == 130
        assert "never" not in ended["output"]
        task = await get_task(m.session.session, handle.task_id)
        assert task.status == "cancelled" and task.result is None
        # the same shell: its variable is still there
        after = await m.run("echo $CARRY")
        assert after["output"] == "kept\n"


async def test_an_unknown_task_is_invalid_params(server_env: ServerEnv) -> None:
    async with mcp_server(server_env, "--in-process", version=MODERN, extensions=[Tasks()]) as m:
        for bogus in ("nope", "bash-0123~mcp-pytest-agent", "~", "bash-1~"):
            with pytest.raises(MCPError) as err:
                await get_task(m.session.session, bogus)
            assert err.value.error.code == INVALID_PARAMS, bogus
            with pytest.raises(MCPError) as err:
                await cancel_task(m.session.session, bogus)
            assert err.value.error.code == INVALID_PARAMS, bogus


@pytest.mark.parametrize("version", [MODERN, HANDSHAKE])
async def test_a_client_without_the_extension_never_gets_a_task(server_env: ServerEnv, version: str) -> None:
    async with mcp_server(server_env, "--in-process", version=version) as m:
        res = await m.ok("bash_exec", {"command": "sleep 0.5; echo late", "wait_ms": 50})
        assert set(res) == {"job_id", "session_id", "status"} and res["status"] == "running"
        if version == MODERN:
            with pytest.raises(MCPError) as err:
                await get_task(m.session.session, f"{res['job_id']}~{res['session_id']}")
            assert err.value.error.code == MISSING_REQUIRED_CLIENT_CAPABILITY
        await m.ok("bash_wait", {"job_id": res["job_id"], "timeout_ms": 30_000})


async def test_a_task_survives_the_clients_restart(server_env: ServerEnv) -> None:
    """Terminals in the host: a new server (a restarted client) finds the task."""
    async with mcp_server(server_env, client="restarting", version=MODERN, extensions=[Tasks()]) as m:
        handle = await start_task(m, "sleep 1; echo survived")
    job_id, session_id = named(handle.task_id)
    async with mcp_server(server_env, client="restarting", version=MODERN, extensions=[Tasks()]) as m:
        await m.ok("bash_wait", {"job_id": job_id, "session_id": session_id, "timeout_ms": 30_000})
        task = await get_task(m.session.session, handle.task_id)
        assert task.status == "completed" and task.result is not None
        assert task.result["structuredContent"]["output"] == "survived\n"


def _listen_for(*task_ids: str) -> SubscriptionsListenRequest:
    return SubscriptionsListenRequest(
        params=SubscriptionsListenRequestParams(
            notifications=SubscriptionFilter.model_validate({"taskIds": list(task_ids)})
        )
    )


async def test_a_listener_hears_each_status_of_its_tasks(server_env: ServerEnv) -> None:
    """``subscriptions/listen`` with ``taskIds``: ``notifications/tasks`` with
    the whole task at each change; the stream ends once its tasks are done."""
    ext = Tasks()
    async with mcp_server(server_env, version=MODERN, extensions=[ext]) as m:
        handle = await start_task(m, "sleep 1; echo heard")
        with anyio.fail_after(STEP):
            end = await m.session.session.send_request(
                _listen_for(handle.task_id, "bash-0~nobody"), SubscriptionsListenResult
            )
        assert isinstance(end, SubscriptionsListenResult)
        assert [n.status for n in ext.notes] == ["working", "completed"], ext.notes
        assert {n.task_id for n in ext.notes} == {handle.task_id}
        final = ext.notes[-1].result
        assert final is not None and final["structuredContent"]["output"] == "heard\n"
        # the same task as a poll shows it
        polled = await get_task(m.session.session, handle.task_id)
        assert polled.result == final


async def test_listening_for_tasks_without_the_extension_is_refused(server_env: ServerEnv) -> None:
    async with mcp_server(server_env, "--in-process", version=MODERN) as m:
        with pytest.raises(MCPError) as err, anyio.fail_after(STEP):
            await m.session.session.send_request(_listen_for("bash-1~x"), SubscriptionsListenResult)
        assert err.value.error.code == MISSING_REQUIRED_CLIENT_CAPABILITY
