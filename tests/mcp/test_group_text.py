"""What a host that shows a model only the text content sees of a group
(docs/mcp.md): the merged view, then the per-target table on request; never
the JSON of the structured content, which stays the tools' result. A real
server and terminal host, the SDK's Python client, local and ``cmd:`` targets
(tests/fanout/ drives ssh and podman members)."""

from __future__ import annotations

import json
import re

import anyio
import pytest

from dsh_magics.mcp.group_text import table

from .conftest import HANDSHAKE, MODERN, STEP, Mcp, ServerEnv, mcp_server

pytestmark = pytest.mark.anyio

BASH = "cmd:bash --noprofile --norc -i"
RULE = "-" * 16


async def call_text(m: Mcp, name: str, arguments: dict[str, object]) -> tuple[str, dict[str, object]]:
    """One call: its only text block and its structured content."""
    result = await m.call(name, arguments)
    assert not result.is_error, result.content[0].text
    assert len(result.content) == 1
    data = result.structured_content
    assert isinstance(data, dict)
    return result.content[0].text, data


async def _until_each_printed(m: Mcp, gid: str, line: str) -> None:
    """Poll bash_read on the group (it only looks) until every member's last line is ``line``."""
    with anyio.fail_after(STEP):
        while True:
            rows = (await m.ok("bash_read", {"group_id": gid, "detail": True}))["detail"]
            if all(r["status"] == "running" and r["last_line"] == line for r in rows):
                return
            await anyio.sleep(0.05)  # the poll's interval, under the deadline above


def _not_json(text: str) -> None:
    assert not text.lstrip().startswith("{"), text
    with pytest.raises(ValueError):
        json.loads(text)


@pytest.mark.parametrize("version", [HANDSHAKE, MODERN])
async def test_a_group_reads_as_its_merged_view_then_its_table(server_env: ServerEnv, version: str) -> None:
    async with mcp_server(server_env, client="fan text", version=version) as m:
        text, started = await call_text(
            m, "bash_exec", {"command": "echo hello", "targets": ["fan[1-2]", BASH, "cmd:false"]}
        )
        gid = started["group_id"]
        _not_json(text)
        assert text == (
            f"group {gid}: running on 4 target(s): {started['nodes']}; "
            f"bash_wait with job_id {gid} returns the merged output once all end"
        )
        # the merged view, as the tools made it, is the text: no JSON, no escaped newlines
        text, done = await call_text(m, "bash_wait", {"job_id": gid, "timeout_ms": 60_000})
        _not_json(text)
        assert done["status"] == "done" and "detail" not in done
        assert text == done["merged"].rstrip("\n")
        assert text.startswith(f"group {gid}: 4 targets: 3 completed, 1 failed\n")
        assert f"{RULE}\nfan[1-2],{BASH} (3)\n{RULE}\nhello" in text
        assert re.search(r"^TARGET_UNREACHABLE: cmd:false \(", text, re.M), text
        assert "\\n" not in text and "target  status" not in text  # the table only on request
        # with detail: the same view, then one row per target
        text, read = await call_text(m, "bash_read", {"group_id": gid, "detail": True})
        rows = read["detail"]
        assert isinstance(rows, list) and len(rows) == 4
        view, _, tab = text.partition("\n\nper target:\n")
        assert view == read["merged"].rstrip("\n")
        lines = tab.splitlines()
        assert lines[0].split() == ["target", "status", "exit", "time", "last", "line"]
        by_target = {ln.split("  ")[0].strip(): ln for ln in lines[1:]}
        assert set(by_target) == {"fan1", "fan2", BASH, "cmd:false"}, lines
        for target in ("fan1", "fan2", BASH):
            cells = by_target[target].split()
            assert cells[-4:-1] == ["completed", "0", cells[-2]] and cells[-1] == "hello", cells
            assert re.fullmatch(r"\d+\.\d\ds", cells[-2])
        assert by_target["cmd:false"].split()[1] == "TARGET_UNREACHABLE"
        assert "\n".join(lines) + "\n" == table(rows)  # made from the structured rows, nothing else
        await m.ok("bash_close", {"all": True})


async def test_a_running_group_says_how_to_wait_on_and_its_interrupt_reads_as_text(server_env: ServerEnv) -> None:
    async with mcp_server(server_env, client="fan text") as m:
        _, started = await call_text(m, "bash_exec", {"command": "echo begun; sleep 60", "targets": ["slow[1-3]"]})
        gid = started["group_id"]
        text, waited = await call_text(m, "bash_wait", {"job_id": gid, "timeout_ms": 200})
        assert waited["timed_out"] and waited["status"] == "running"
        assert text.startswith(f"group {gid}: 3 targets: ")
        assert text.endswith(f"(timed out with targets still running; bash_wait with job_id {gid} to keep waiting)")
        await _until_each_printed(m, gid, "begun")  # every member runs its job
        text, hit = await call_text(m, "bash_interrupt", {"group_id": gid})
        assert hit["count"] == 3
        assert text == (
            f"group {gid}: Ctrl-C sent to 3 target(s): slow[1-3]; bash_wait with job_id {gid} shows how they ended"
        )
        text, ended = await call_text(m, "bash_wait", {"job_id": gid, "timeout_ms": 60_000, "detail": True})
        assert ended["counts"] == {"interrupted": 3}, ended
        assert text.startswith(f"group {gid}: 3 targets: 3 interrupted\n")
        assert [ln.split()[:3] for ln in text.splitlines()[-3:]] == [
            [f"slow{i}", "interrupted", "130"] for i in (1, 2, 3)
        ], text
        text, _ = await call_text(m, "bash_interrupt", {"group_id": gid})
        assert text == f"group {gid}: no target was running"
        await m.ok("bash_close", {"all": True})
