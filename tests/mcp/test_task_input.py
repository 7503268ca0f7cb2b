"""A task whose job meets a password prompt: the tasks extension's
``input_required`` status and ``tasks/update`` (2026-07-28), driven by the
Python SDK's ``Client()``. The person is played as in test_secret_prompt.py:
the client hands the URL-mode request to a person who opens the link and
posts the answer; the secret never reaches the client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any, Literal

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    ElicitRequestURLParams,
    Request,
    RequestParams,
    Result,
    SubscriptionsListenResult,
)

from dsh_magics.mcp.elicit import ANSWERED_NOTE

from .conftest import MODERN, STEP, Mcp, ServerEnv, mcp_server
from .test_secret_prompt import PROMPT_CMD, SECRET, Person, answer_at, assert_secret_nowhere
from .test_tasks import DetailedTask, TaskHandle, Tasks, _listen_for, cancel_task, get_task
from .ts_clients import install, missing_tools, ts_tasks_client_argv

#: The prompt comes after the task exists (its wait_ms is long over).
LATE_PROMPT = f"sleep 0.5; {PROMPT_CMD}"


@pytest.fixture(params=["host", "in-process"])
def mode(request: pytest.FixtureRequest) -> tuple[str, ...]:
    return () if request.param == "host" else ("--in-process",)


class UpdateTaskParams(RequestParams):
    task_id: str
    input_responses: dict[str, Any]


class UpdateTaskRequest(Request[UpdateTaskParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: UpdateTaskParams


async def update_task(session: Any, task_id: str, responses: dict[str, Any]) -> Result:
    with anyio.fail_after(STEP):
        return await session.send_request(
            UpdateTaskRequest(params=UpdateTaskParams(task_id=task_id, input_responses=responses)), Result
        )


async def start_prompt_task(m: Mcp) -> TaskHandle:
    """A task whose job asks for a password once the task exists."""
    with anyio.fail_after(STEP):
        handle = await m.session.session.call_tool(
            "bash_exec", {"command": LATE_PROMPT, "tty": True, "wait_ms": 100}, allow_claimed=True
        )
    assert isinstance(handle, TaskHandle), handle
    return handle


async def poll_until(m: Mcp, task_id: str, *statuses: str) -> DetailedTask:
    """Poll ``tasks/get`` (as a client does, at a short interval) until the
    task has one of ``statuses``; fails after STEP seconds."""
    deadline = time.monotonic() + STEP
    while True:
        task = await get_task(m.session.session, task_id)
        if task.status in statuses:
            return task
        assert task.status in ("working", "input_required"), task
        assert time.monotonic() < deadline, f"task still {task.status}: {task}"
        await anyio.sleep(0.05)


def url_request(task: DetailedTask) -> tuple[str, ElicitRequestURLParams]:
    requests = (task.model_extra or {}).get("inputRequests")
    assert isinstance(requests, dict) and len(requests) == 1, task
    ((key, request),) = requests.items()
    assert request["method"] == "elicitation/create", request
    params = ElicitRequestURLParams.model_validate(request["params"])
    assert params.mode == "url" and params.url.startswith("http://127.0.0.1:"), params
    return key, params


@pytest.mark.anyio
async def test_a_task_at_a_password_prompt_asks_a_person_and_works_on(
    server_env: ServerEnv, mode: tuple[str, ...]
) -> None:
    """working -> input_required (a URL elicitation) -> tasks/update -> working
    -> the person answers at the link -> completed, with the job's result."""
    received: list[str] = []
    person = Person(answer_at)  # declares URL elicitation; the task's request never calls it
    async with mcp_server(
        server_env, *mode, elicitation_callback=person, received=received, version=MODERN, extensions=[Tasks()]
    ) as m:
        handle = await start_prompt_task(m)
        job_id = handle.task_id.partition("~")[0]
        asking = await poll_until(m, handle.task_id, "input_required")
        key, params = url_request(asking)
        assert job_id in params.message
        # the same request on the next poll (the client deduplicates by key)
        again = await get_task(m.session.session, handle.task_id)
        assert url_request(again) == (key, params)
        # keys that are not outstanding are ignored; the task still asks
        await update_task(m.session.session, handle.task_id, {"person-unknown": {"action": "accept"}})
        assert (await get_task(m.session.session, handle.task_id)).status == "input_required"
        # the client accepts (the person is sent to the link): working again
        ack = await update_task(m.session.session, handle.task_id, {key: {"action": "accept"}})
        assert ack.model_dump(by_alias=True, exclude_none=True).get("resultType", "complete") == "complete"
        working = await get_task(m.session.session, handle.task_id)
        assert working.status == "working" and "one-time link" in (working.status_message or ""), working
        assert "inputRequests" not in (working.model_extra or {})
        # a second update with the same key is ignored
        await update_task(m.session.session, handle.task_id, {key: {"action": "decline"}})
        # the person answers at the page: the job goes on and ends
        await anyio.to_thread.run_sync(answer_at, params)
        done = await poll_until(m, handle.task_id, "completed")
        assert done.result is not None and not done.result.get("isError"), done
        final = done.result["structuredContent"]
        assert final["output"].endswith("len 26\nmatch\n") and ANSWERED_NOTE in final["note"], final
        assert person.asked == []  # nothing went through a server-initiated request
        again_done = await m.run("echo next")
        assert again_done["output"] == "next\n"
    assert_secret_nowhere(server_env, received)


@pytest.mark.parametrize("action", ["decline", "cancel"])
@pytest.mark.anyio
async def test_a_declined_request_leaves_the_task_working_until_cancelled(
    server_env: ServerEnv, action: str
) -> None:
    async with mcp_server(
        server_env, elicitation_callback=Person(answer_at), version=MODERN, extensions=[Tasks()]
    ) as m:
        handle = await start_prompt_task(m)
        key, params = url_request(await poll_until(m, handle.task_id, "input_required"))
        await update_task(m.session.session, handle.task_id, {key: {"action": action}})
        task = await get_task(m.session.session, handle.task_id)
        word = "declined" if action == "decline" else "dismissed"
        assert task.status == "working" and f"the person {word}" in (task.status_message or ""), task
        # the page is closed, and the job still waits: no new request for the same prompt
        job_id = handle.task_id.partition("~")[0]
        still = await m.ok("bash_wait", {"job_id": job_id, "timeout_ms": 0})
        assert still["status"] == "running" and still["awaiting_input"]["secret"] is True
        assert (await get_task(m.session.session, handle.task_id)).status == "working"
        await cancel_task(m.session.session, handle.task_id)
        ended = await m.ok("bash_wait", {"job_id": job_id, "timeout_ms": 30_000})
        assert ended["status"] == "interrupted"
        assert (await get_task(m.session.session, handle.task_id)).status == "cancelled"


@pytest.mark.anyio
async def test_without_url_elicitation_the_task_says_how_a_person_answers(server_env: ServerEnv) -> None:
    async with mcp_server(server_env, version=MODERN, extensions=[Tasks()]) as m:
        handle = await start_prompt_task(m)
        deadline = time.monotonic() + STEP
        while True:
            task = await get_task(m.session.session, handle.task_id)
            assert task.status == "working", task  # never input_required: nothing to ask with
            if task.status_message:
                break
            assert time.monotonic() < deadline, "no statusMessage"
            await anyio.sleep(0.05)
        assert "`dsh-magics answer mcp-pytest-agent`" in task.status_message
        assert task.status_message.count(". ") == 0  # one sentence
        await cancel_task(m.session.session, handle.task_id)


@pytest.mark.anyio
async def test_a_listener_hears_input_required_and_the_end(server_env: ServerEnv) -> None:
    ext = Tasks()
    received: list[str] = []
    async with mcp_server(
        server_env, elicitation_callback=Person(answer_at), received=received, version=MODERN, extensions=[ext]
    ) as m:
        handle = await start_prompt_task(m)

        async def play_the_client() -> None:
            key, params = url_request(await poll_until(m, handle.task_id, "input_required"))
            await update_task(m.session.session, handle.task_id, {key: {"action": "accept"}})
            await anyio.to_thread.run_sync(answer_at, params)

        async with anyio.create_task_group() as tg:
            tg.start_soon(play_the_client)
            with anyio.fail_after(STEP):
                await m.session.session.send_request(_listen_for(handle.task_id), SubscriptionsListenResult)
        statuses = [n.status for n in ext.notes]
        assert statuses[0] == "working" and statuses[-1] == "completed", statuses
        assert "input_required" in statuses
        at = statuses.index("input_required")
        assert "inputRequests" in (ext.notes[at].model_extra or {})
        assert "working" in statuses[at:], statuses
    assert_secret_nowhere(server_env, received)


@pytest.mark.anyio
async def test_tasks_update_errors(server_env: ServerEnv) -> None:
    async with mcp_server(server_env, "--in-process", version=MODERN, extensions=[Tasks()]) as m:
        for bogus in ("nope", "bash-0123~mcp-pytest-agent"):
            with pytest.raises(MCPError) as err:
                await update_task(m.session.session, bogus, {"k": {"action": "accept"}})
            assert err.value.error.code == INVALID_PARAMS, bogus
    async with mcp_server(server_env, "--in-process", version=MODERN) as m:
        with pytest.raises(MCPError) as err:
            await update_task(m.session.session, "bash-1~mcp-pytest-agent", {})
        assert err.value.error.code == MISSING_REQUIRED_CLIENT_CAPABILITY


def test_the_typescript_tasks_client_answers_through_tasks_update(
    server_env: ServerEnv, mode: tuple[str, ...]
) -> None:
    """The tasks extension's own client (``@modelcontextprotocol/ext-tasks``)
    on the TypeScript SDK's v2 client, 2026-07-28: it polls the task, hands
    the input request to its elicitation handler (the person, who answers at
    the link) and sends ``tasks/update``; the task completes with the job's result."""
    why = missing_tools()
    if why:
        pytest.skip(why)
    install()  # normally done by .ci/run; a no-op when present
    command = json.dumps({"command": LATE_PROMPT, "tty": True})
    server = [sys.executable, "-m", "dsh_magics.cli", "mcp", *mode]
    proc = subprocess.run(
        [*ts_tasks_client_argv(), command, SECRET, "--", *server],
        capture_output=True,
        text=True,
        timeout=STEP * 2,
        cwd=server_env.cwd,
        env={**os.environ, "MCP_TEST_SERVER_ENV": json.dumps(server_env.vars)},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.splitlines()[-1])
    assert seen["kind"] == "task" and seen["outcome"] == "completed", seen
    statuses = [s["status"] for s in seen["states"]]
    assert statuses[0] == "working" and "input_required" in statuses and statuses[-1] == "completed", statuses
    (asked,) = seen["asked"]
    assert (asked["mode"], asked["delivery"], asked["scope"]) == ("url", "task-update", "task"), asked
    final = seen["result"]["structuredContent"]
    assert final["output"].endswith("len 26\nmatch\n") and ANSWERED_NOTE in final["note"], final
    assert seen["after"]["structuredContent"]["output"] == "next\n"
    assert SECRET not in proc.stdout and SECRET not in server_env.log_text()
    assert SECRET not in proc.stderr  # the server's stderr went there
