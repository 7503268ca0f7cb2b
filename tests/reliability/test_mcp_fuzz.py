"""Bad input to the agent tools through MCP (hypothesis): the real
``dsh-magics mcp`` server over stdio, driven by the MCP Python SDK's own
client, one server for the whole run.

Whatever a client sends as a tool call (the calls of test_tool_fuzz.py:
real tools with well-typed and ill-typed arguments, unknown keys, unknown
tool names; and here also megabyte strings, NUL bytes and non-ASCII names),
the server must answer each call within a deadline with either the tool's
result (matching its output schema) or a tool error ``CODE: message`` with
a stable code (never the internal-error code), or a JSON-RPC error for a
request the protocol itself refuses; no traceback reaches the client; and
the server keeps serving: afterwards every terminal it has runs a command.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from mcp.shared.exceptions import MCPError

from dsh_magics import tools
from tests.mcp.conftest import Mcp, ServerEnv, mcp_server, parse_error_text, server_env  # noqa: F401 - fixture

from .test_tool_fuzz import tool_call

CALL_DEADLINE_S = 60.0  # a loaded machine; a healthy call takes well under a second
HUGE = st.sampled_from(["x" * 1_000_000, "\x00" * 1000, "é\u202e\U0001f600" * 10_000, "a\x00b"])


@st.composite
def mcp_call(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A call as an MCP client can send it: a name and an object."""
    name, arguments, _caller = draw(tool_call())
    if not isinstance(name, str):
        name = str(name)
    if draw(st.integers(0, 9)) == 0:
        name = draw(st.sampled_from(["", "bash_exec\x00", "bäsh_exec", "x" * 10_000, "tools/call"]))
    if not isinstance(arguments, dict):
        # MCP carries an object; the non-object cases are the dispatcher's (test_tool_fuzz.py).
        arguments = {"value": arguments}
    if draw(st.integers(0, 4)) == 0:
        key = draw(st.sampled_from(["command", "session_id", "text", "cwd", "job_id"]))
        arguments = {**arguments, key: draw(HUGE)}
    return name, arguments


class Driver:
    """One MCP client session on an event loop of its own thread, so that a
    synchronous hypothesis test can send calls to one long-lived server."""

    def __init__(self, env: ServerEnv) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="mcp-fuzz-loop", daemon=True)
        self.thread.start()
        self.ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self.queue: asyncio.Queue[Any] | None = None
        self.main = asyncio.run_coroutine_threadsafe(self._main(env), self.loop)
        self.ready.result(timeout=CALL_DEADLINE_S)

    async def _main(self, env: ServerEnv) -> None:
        self.queue = asyncio.Queue()
        home = os.path.join(env.cwd, "home")
        os.makedirs(os.path.join(home, "sub"), exist_ok=True)
        os.makedirs(os.path.join(env.cwd, "sub"), exist_ok=True)
        try:
            async with mcp_server(env, extra_env={"HOME": home}) as mcp:
                self.ready.set_result(None)
                while True:
                    item = await self.queue.get()
                    if item is None:
                        return
                    fut, name, arguments = item
                    try:
                        with anyio.fail_after(CALL_DEADLINE_S):
                            fut.set_result(await mcp.session.call_tool(name, arguments))
                    except BaseException as e:  # noqa: BLE001 - handed to the test thread
                        fut.set_exception(e)
        except BaseException as e:
            if not self.ready.done():
                self.ready.set_exception(e)
            raise

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        fut: concurrent.futures.Future[Any] = concurrent.futures.Future()
        assert self.queue is not None
        self.loop.call_soon_threadsafe(self.queue.put_nowait, (fut, name, arguments))
        return fut.result(timeout=CALL_DEADLINE_S + 10)

    def close(self) -> None:
        if self.queue is not None:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, None)
        try:
            self.main.result(timeout=CALL_DEADLINE_S)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
            self.loop.close()


@pytest.fixture
def driver(server_env: ServerEnv) -> Iterator[Driver]:  # noqa: F811 - the imported fixture
    d = Driver(server_env)
    try:
        yield d
    finally:
        d.close()


_RESULTS = {n: Draft202012Validator(tools.OUTPUT_SCHEMAS[n]) for n in tools.TOOL_NAMES}


def _check(name: str, result: Any) -> dict[str, Any] | None:
    """A tool result of ``name`` or a stable tool error; the result's data."""
    assert result.content and result.content[0].type == "text", result
    text = result.content[0].text
    assert "Traceback" not in text, text[:2000]
    if result.is_error:
        error = parse_error_text(text)  # a stable code (checked against the tools' error schema)
        assert error["code"] != tools.INTERNAL_ERROR_CODE, f"the dispatcher broke: {text[:500]}"
        return None
    assert name in _RESULTS, f"unknown tool {name!r} gave a result: {text[:500]}"
    data = result.structured_content
    assert isinstance(data, dict), text[:500]
    errors = list(_RESULTS[name].iter_errors(data))
    assert not errors, f"{name} result does not match its schema: {errors[0].message}"
    return data


def _settle_and_check_usable(d: Driver) -> None:
    """Every terminal the server has stops its job on Ctrl-C and runs a command."""
    listing = _check("bash_list", d.call("bash_list", {}))
    assert listing is not None
    for row in listing["terminals"]:
        sid = row["session_id"]
        if row.get("status") == "busy":
            _check("bash_interrupt", d.call("bash_interrupt", {"session_id": sid}))
            if row.get("job_id"):
                # A job of another session than the caller's own is waited for
                # with its session (NO_SUCH_JOB says so otherwise; 2000 examples
                # found a job of the pool's other session still busy here).
                args = {"job_id": row["job_id"], "session_id": sid, "timeout_ms": 10_000}
                waited = _check("bash_wait", d.call("bash_wait", args))
                assert waited is not None and waited["status"] != "running", waited
        res = _check("bash_exec", d.call("bash_exec", {"command": "echo ok-$((1 + 1))", "wait_ms": 10_000, "session_id": sid}))
        assert res is not None and (res["status"], res["output"]) == ("completed", "ok-2\n"), res


@settings(
    max_examples=int(os.environ.get("DSH_MCP_FUZZ_EXAMPLES", "40")),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(calls=st.lists(mcp_call(), min_size=1, max_size=4))
def test_arbitrary_mcp_tool_calls_give_results_or_structured_errors(
    driver: Driver, calls: list[tuple[str, dict[str, Any]]]
) -> None:
    for name, arguments in calls:
        if arguments.get("job_id") == "<known job>":
            arguments = {**arguments, "job_id": "bash-" + "0" * 32}
        if isinstance(arguments.get("cwd"), str) and arguments["cwd"] not in ("sub", ".", "~", "~/sub", "missing"):
            arguments = {**arguments, "cwd": "missing"}  # never a directory outside the sandbox
        try:
            result = driver.call(name, arguments)
        except MCPError as e:  # a request the protocol refuses: a JSON-RPC error with a code
            assert isinstance(e.error.code, int) and "Traceback" not in e.error.message, e
            continue
        _check(name, result)
    _settle_and_check_usable(driver)
