"""One server, both protocol eras: a 2026-07-28 client (the SDK's ``Client()``
in its default mode: ``server/discover``, then stateless requests) and
handshake clients pinned to 2025-11-25 and 2025-06-18 get the same tools and
the same results (docs/mcp.md, "Protocol versions")."""

from __future__ import annotations

from typing import Any

import pytest

from dsh_magics import tools

from .conftest import MODERN, VERSIONS, Mcp, ServerEnv, mcp_server

pytestmark = pytest.mark.anyio


def _stable(result: dict[str, Any]) -> dict[str, Any]:
    """A job result without what differs between two runs of one command."""
    return {k: v for k, v in result.items() if k not in ("job_id", "duration_s")}


def _stable_row(row: dict[str, Any]) -> dict[str, Any]:
    """A bash_list row without what differs between two runs: the shell's pid,
    and the times and job ids of its input record (``typed``)."""
    stable = {k: v for k, v in row.items() if k not in ("pid", "typed")}
    stable["typed"] = [(e["kind"], e["source"], e["caller"], e["text"]) for e in row.get("typed") or []]
    return stable


async def _session_of_calls(m: Mcp) -> dict[str, Any]:
    """What a client sees of one short session: tools, results, an error."""
    listed = (await m.session.list_tools()).tools
    done = await m.run("cd /tmp && X=7 && echo hello $X")
    again = await m.run("echo $X; pwd")
    started = await m.ok("bash_exec", {"command": "sleep 0.3; echo late"})
    waited = await m.ok("bash_wait", {"job_id": started["job_id"], "timeout_ms": 30_000})
    text = (await m.call("bash_wait", {"job_id": started["job_id"]})).content[0].text
    missing = await m.err("bash_wait", {"job_id": "bash-nope"}, "NO_SUCH_JOB")
    listing = await m.ok("bash_list")
    return {
        "tools": [(t.name, t.input_schema, t.output_schema, t.annotations) for t in listed],
        "done": _stable(done),
        "again": _stable(again),
        "started": sorted(started),
        "waited": _stable(waited),
        "text": text.replace(started["job_id"], "JOB").split(" in ", 2)[:2],
        "missing": missing,
        "listing": [_stable_row(row) for row in listing["terminals"]],
        "own": listing["own_session"],
    }


async def _era_session(env: ServerEnv, version: str) -> dict[str, Any]:
    async with mcp_server(env, "--in-process", client="era agent", version=version) as m:
        if version == MODERN:
            assert m.session.protocol_version == MODERN
            assert m.session.server_info is not None and m.session.server_info.name == "dsh-magics"
        else:
            assert m.init.protocol_version == version and m.init.server_info.name == "dsh-magics"
        return await _session_of_calls(m)


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_client_pinned_to_each_version_is_served(server_env: ServerEnv, version: str) -> None:
    seen = await _era_session(server_env, version)
    assert [name for name, *_ in seen["tools"]] == list(tools.TOOL_NAMES)
    assert seen["done"]["output"] == "hello 7\n" and seen["done"]["cwd"] == "/tmp"
    assert seen["again"]["output"] == "7\n/tmp\n"
    assert seen["started"] == ["job_id", "session_id", "status"]
    assert seen["waited"]["output"] == "late\n"
    assert seen["own"] == "mcp-era-agent"


async def test_every_version_sees_the_same_tools_and_results(server_env: ServerEnv) -> None:
    first, *rest = [await _era_session(server_env, v) for v in VERSIONS]
    for other in rest:
        assert other == first


async def test_a_modern_client_and_a_handshake_client_share_one_terminal(server_env: ServerEnv) -> None:
    """Two eras, one host: the terminal a 2025-11-25 client left is the one a
    2026-07-28 client of the same name finds (cwd, variables)."""
    async with mcp_server(server_env, client="era agent") as old:
        await old.run("cd /tmp && Y=old-era")
    async with mcp_server(server_env, client="era agent", version=MODERN) as new:
        res = await new.run("echo $Y; pwd")
        assert res["output"] == "old-era\n/tmp\n" and res["session_id"] == "mcp-era-agent"
