"""A bash_exec whose first INLINE_MS run on the event loop's thread
(dsh_magics/mcp/calls.py, CallRunner.run) returns what the whole call would."""

from __future__ import annotations

import pytest

from dsh_magics.mcp.calls import INLINE_MS
from dsh_magics.tools.output_schemas import JOB_RESULT

from .conftest import ServerEnv, mcp_server

pytestmark = pytest.mark.anyio


async def test_exec_on_a_warm_terminal_keeps_its_semantics(server_env: ServerEnv) -> None:
    async with mcp_server(server_env, "--in-process") as m:
        await m.run("true")  # the terminal is now known to run
        quick = await m.ok("bash_exec", {"command": "echo quick", "wait_ms": 30_000})
        assert (quick["status"], quick["output"]) == ("completed", "quick\n")
        # longer than INLINE_MS, shorter than wait_ms: the finished result, no bash_wait field
        slow = await m.ok("bash_exec", {"command": "sleep 0.3; echo slow", "wait_ms": 30_000})
        assert (slow["status"], slow["output"], slow["exit_code"]) == ("completed", "slow\n", 0)
        assert slow["duration_s"] >= 0.3 and "reason" not in slow
        assert set(slow) <= set(JOB_RESULT["properties"])
        # longer than wait_ms: the started job, as the engine's exec returns it
        started = await m.ok("bash_exec", {"command": "sleep 1; echo late", "wait_ms": INLINE_MS + 200})
        assert set(started) == {"job_id", "session_id", "status"} and started["status"] == "running"
        done = await m.ok("bash_wait", {"job_id": started["job_id"], "timeout_ms": 30_000})
        assert done["output"] == "late\n"
        # a refusal is the same refusal
        await m.ok("bash_exec", {"command": "sleep 1"})
        await m.err("bash_exec", {"command": "true", "wait_ms": 30_000}, "SESSION_BUSY")
        await m.err("bash_exec", {"command": "true", "wait_ms": -1}, "INVALID_ARGUMENT")
        # a closed terminal is not warm any more: the call opens a fresh one as before
        await m.ok("bash_interrupt", {})
        await m.ok("bash_close", {})
        fresh = await m.run("echo again")
        assert fresh["output"] == "again\n"
