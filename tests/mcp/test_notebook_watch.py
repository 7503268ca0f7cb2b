"""A person watches an agent's terminal from a notebook: a real kernel joins
the MCP server's host (DSH_MAGICS_HOST_NAME=mcp) and sees, reads and stops
the job the agent started over MCP."""

from __future__ import annotations

import anyio
import pytest

from ..magics.kernel_support import Kernel
from .conftest import ServerEnv, mcp_server

pytestmark = [pytest.mark.anyio, pytest.mark.kernel]


async def test_a_notebook_on_the_mcp_host_sees_and_stops_the_agents_job(
    server_env: ServerEnv,
) -> None:
    async with mcp_server(server_env, client="watched agent") as m:
        job = (await m.ok("bash_exec", {"command": "echo visible-from-notebook; sleep 120"}))[
            "job_id"
        ]
        kernel = await anyio.to_thread.run_sync(
            lambda: Kernel(
                env={**server_env.vars, "DSH_MAGICS_HOST_NAME": "mcp"}, cwd=server_env.cwd
            )
        )
        try:

            def notebook() -> tuple[str, str, str]:
                kernel.run("%load_ext dsh_magics")
                listed = kernel.run("%bash_list").text()
                read = kernel.run("%bash_read --session mcp-watched-agent").text()
                stopped = kernel.run("%bash_interrupt --session mcp-watched-agent").text()
                return listed, read, stopped

            listed, read, stopped = await anyio.to_thread.run_sync(notebook)
        finally:
            await anyio.to_thread.run_sync(kernel.shutdown)
        assert "mcp-watched-agent" in listed and job in listed
        assert "visible-from-notebook" in read
        assert f"[{job} @ mcp-watched-agent] interrupted" in stopped
        # the agent sees the person's Ctrl-C, and its terminal lives on
        done = await m.ok("bash_wait", {"job_id": job, "timeout_ms": 30_000})
        assert done["status"] == "interrupted"
        assert (await m.run("echo still here"))["output"] == "still here\n"
