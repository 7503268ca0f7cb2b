"""A scripted agent loop over MCP: a stand-in for the model reads only the
text of each tool result (what many MCP hosts hand a model) and decides the
next call, the way a real model would."""

from __future__ import annotations

import re
from collections.abc import Callable, Generator
from typing import Any

import anyio
import pytest

from ..conftest import Gate
from .conftest import STEP, ServerEnv, mcp_server

pytestmark = pytest.mark.anyio

Call = tuple[str, dict[str, Any]]
# The model yields a tool call, or a final answer (a str), and receives each
# tool result's text.
Model = Generator[Call | str, str, None]


def stand_in_model(workdir: str, gate: Gate) -> Model:
    """Count the lines of a file it writes, with a background job, a busy
    terminal it has to deal with, and a failing command."""
    seen = yield (
        "bash_exec",
        {
            "command": f"cd {workdir} && printf 'a\\nb\\nc\\n' > notes.txt && wc -l < notes.txt",
            "wait_ms": 30_000,
        },
    )
    assert "completed, exit 0" in seen, seen
    count = int(seen.rsplit("\n", 1)[-1])
    seen = yield (
        "bash_exec",
        {"command": f"for i in 1 2 3; do echo step $i; done; {gate.shell}; echo all done"},
    )
    job = re.search(r"^job (\S+) in session (\S+): running", seen, re.M)
    assert job, seen
    seen = yield ("bash_exec", {"command": "echo impatient"})
    assert seen.startswith("SESSION_BUSY: ") and job.group(1) in seen, seen
    gate.open()  # the test lets the job finish
    seen = yield ("bash_wait", {"job_id": job.group(1), "timeout_ms": 30_000})
    assert "completed, exit 0" in seen and seen.endswith("step 3\nall done"), seen
    seen = yield ("bash_exec", {"command": "cat missing.txt", "wait_ms": 30_000})
    assert "exit 1" in seen and "No such file or directory" in seen, seen
    seen = yield ("bash_read", {"last": 3})
    assert "all done" in seen and "missing.txt" in seen, seen
    seen = yield ("bash_list", {})
    assert f"{job.group(2)} (yours): idle, cwd {workdir}" in seen, seen
    yield f"notes.txt has {count} lines"


async def _agent_loop(
    call: Callable[[str, dict[str, Any]], Any], model: Model
) -> tuple[str, list[str]]:
    """The host side of the loop: run each call the model asks for and feed
    it the result text, until the model answers."""
    transcript: list[str] = []
    step = next(model)
    while not isinstance(step, str):
        name, arguments = step
        result = await call(name, arguments)
        text = "\n".join(c.text for c in result.content if c.type == "text")
        transcript.append(f"{name} -> {'error' if result.is_error else 'ok'}")
        step = model.send(text)
    return step, transcript


async def test_scripted_agent_loop_over_mcp(server_env: ServerEnv, tmp_path) -> None:
    workdir = tmp_path / "agent-work"
    workdir.mkdir()
    async with mcp_server(server_env, client="scripted model") as m:
        offered = {t.name for t in (await m.session.list_tools()).tools}

        async def call(name: str, arguments: dict[str, Any]) -> Any:
            assert name in offered
            with anyio.fail_after(STEP):
                return await m.session.call_tool(name, arguments)

        answer, transcript = await _agent_loop(call, stand_in_model(str(workdir), Gate(tmp_path / "gate")))
        assert answer == "notes.txt has 3 lines"
        assert transcript == [
            "bash_exec -> ok",
            "bash_exec -> ok",
            "bash_exec -> error",
            "bash_wait -> ok",
            "bash_exec -> ok",
            "bash_read -> ok",
            "bash_list -> ok",
        ]
        closed = await m.ok("bash_close", {"all": True})
        assert closed == {"closed": ["mcp-scripted-model"], "count": 1}
