"""Groups over MCP, with the real MCP Python SDK client: ``targets`` is in the
served schema (mcp/ serves the tools' schemas) and a group runs through the
terminal host."""

from __future__ import annotations

import pytest

from tests.mcp.conftest import ServerEnv, mcp_server

pytestmark = pytest.mark.anyio

BASH = "cmd:bash --noprofile --norc -i"


async def test_targets_over_mcp(server_env: ServerEnv) -> None:
    async with mcp_server(server_env, client="fan") as m:
        listed = {t.name: t for t in (await m.session.list_tools()).tools}
        assert listed["bash_exec"].input_schema["properties"]["targets"]["type"] == "array"
        assert "group_id" in listed["bash_read"].input_schema["properties"]
        started = await m.ok("bash_exec", {"command": "echo hello; export K=$((RANDOM))", "targets": ["fan[1-2]", BASH, "cmd:false"]})
        assert started["targets"] == 4 and started["status"] == "running"
        done = await m.ok("bash_wait", {"job_id": started["group_id"], "timeout_ms": 60_000, "detail": True})
        assert done["status"] == "done" and done["counts"] == {"completed": 3, "failed": 1}
        assert f"----------------\nfan[1-2],{BASH} (3)\n----------------\nhello\n" in done["merged"]
        rows = {r["target"]: r for r in done["detail"]}
        assert rows["cmd:false"]["code"] == "TARGET_UNREACHABLE"
        again = await m.ok("bash_exec", {"command": "echo ${K:?unset}", "targets": ["fan[1-2]", BASH]})
        kept = await m.ok("bash_wait", {"job_id": again["group_id"], "timeout_ms": 60_000})
        assert kept["counts"] == {"completed": 3} and kept["merged"].count(" (1)\n") == 3  # each kept its own K
        bad = await m.err("bash_exec", {"command": "true", "targets": ["n[1-"]}, "INVALID_ARGUMENT")
        assert bad["field"] == "targets"
        await m.ok("bash_close", {"all": True})
