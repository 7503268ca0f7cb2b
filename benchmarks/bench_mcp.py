"""MCP benchmark: a tool call's round trip through ``dsh-magics mcp`` over
stdio (the SDK's own client) against the same call made directly with
``tools.call`` in this process, measured in the same run (ratios, not
absolute times).

    python benchmarks/bench_mcp.py [--quick] [--json]
    python benchmarks/bench_mcp.py --eras [--quick] [--json]

``--eras`` (issue 33): ``bash_exec true`` through this server against a bare
server of the same SDK whose tool returns at once, same transport, same run,
on 2026-07-28 (the SDK's ``Client()``) and 2025-11-25 (``ClientSession``);
and a ``tasks/get`` poll of a running task against the bare server's call.

- ``bash_exec {"command": "true", "wait_ms": 10000}`` on a warm terminal,
  median: the call an agent makes most. Target: MCP <= 2x direct.
- ``bash_list``: a call that does almost no work, so its difference is the
  protocol's own cost per call (JSON-RPC over two pipes, validation of the
  result against the output schema by the client, a worker thread).
- the SDK's ``ping`` on the same connection: the floor of any MCP request
  over stdio with this SDK, which no server can go below. What remains of a
  call's overhead above it is this server's share (tool dispatch, result
  text, pydantic models, the client's output validation, timed on its own).
  Target: ``bash_exec`` over MCP <= ping + direct + 0.3 ms.
- a bare server of the same SDK on the same stdio transport (one no-op tool,
  no output schema), pinged and called on its own connection in the same
  rounds: what any ``tools/call`` costs with this SDK beyond a ping, before a
  server does anything; the same server returning a canned ``bash_exec``
  result under its output schema; and that result after its handler blocks as
  long as the direct call takes (a call of the same length with no terminal
  behind it: on a virtual machine a process that sleeps longer wakes slower,
  and the client sleeps through the whole call).
- the direct call again, each one after an idle pause as long as the engine
  sits idle between two MCP calls (the call over MCP less the direct call, at
  least a ping's round trip, measured before the rounds): a call after a pause
  costs more than one right after the last (wake-ups).

Both backends: in-process (``--in-process`` against a ``Registry`` here) and
the terminal host (the server in host mode against a ``HostClient`` here, on
the same private host, which is stopped at the end). Each figure is measured in
short runs of calls in a row (50 per run), the runs of all figures in
alternation, so load that comes and goes hits all alike.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any, cast

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import Implementation

from dsh_magics import tools
from dsh_magics.host import HostClient, HostPaths, stop_host
from dsh_magics.terminal import Registry

EXEC = ("bash_exec", {"command": "true", "wait_ms": 10_000})
LIST: tuple[str, dict[str, Any]] = ("bash_list", {})


async def _samples_ms(
    fn: Callable[[], Awaitable[Any]], n: int, idle_s: float = 0.0
) -> list[float]:
    """``n`` timed calls of ``fn``; with ``idle_s``, each after that long idle
    (not timed): the pause an MCP round trip leaves between two engine calls."""
    out = []
    for _ in range(n):
        if idle_s:
            time.sleep(idle_s)  # a pause to measure after, not a synchronisation
        t = time.perf_counter()
        await fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


#: A finished ``bash_exec true`` result, as the server sends it.
CANNED = {
    "job_id": "bash-00000000000000000000000000000000",
    "session_id": "mcp-bench",
    "status": "completed",
    "exit_code": 0,
    "timed_out": False,
    "output": "",
    "output_chars": 0,
    "output_lines": 0,
    "omitted_chars": 0,
    "omitted_lines": 0,
    "dropped_lines": 0,
    "cwd": "/tmp",
    "duration_s": 0.001,
}


def bare_server() -> None:
    """The same SDK's low-level server with two tools that do nothing:
    ``noop`` (a text, no output schema: the floor of any ``tools/call`` with
    this SDK) and ``canned`` (a fixed ``bash_exec`` result with its text,
    under ``bash_exec``'s output schema as served: what carrying and checking
    such a result costs, with no terminal behind it)."""
    import mcp.types as types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    from dsh_magics.mcp.render import render
    from dsh_magics.mcp.result_schema import output_schema
    from dsh_magics.mcp.wire import wire_streams

    empty = {"type": "object", "properties": {}}
    pause = {"type": "object", "properties": {"pause_ms": {"type": "number"}}}
    listed = [
        types.Tool(name="noop", input_schema=empty),
        types.Tool(name="canned", input_schema=empty, output_schema=output_schema("bash_exec")),
        types.Tool(name="canned_after", input_schema=pause, output_schema=output_schema("bash_exec")),
    ]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        if params.name == "canned_after":
            # blocks the event loop's thread, as this server's engine call does
            # on a warm terminal (the work a benchmark stands in for, not a wait)
            time.sleep(float((params.arguments or {}).get("pause_ms", 0)) / 1000)
        if params.name in ("canned", "canned_after"):
            text = types.TextContent(type="text", text=render("bash_exec", CANNED))
            return types.CallToolResult(content=[text], structured_content=dict(CANNED))
        return types.CallToolResult(content=[types.TextContent(type="text", text="ok")])

    server: Server[Any] = Server("bare", on_list_tools=list_tools, on_call_tool=call_tool)
    server.middleware = []  # no OpenTelemetry span either, as in dsh-magics mcp

    async def serve() -> None:
        # the same transport as dsh-magics mcp (mcp/wire.py), so the two floors compare
        async with wire_streams() as (stdin, stdout), stdio_server(
            cast(Any, stdin), cast(Any, stdout)
        ) as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve)


async def _one_backend(server_args: list[str], direct: Any, rounds: int, n: int) -> dict[str, Any]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "dsh_magics.cli", "mcp", *server_args],
        env=dict(os.environ),
    )
    bare_params = StdioServerParameters(
        command=sys.executable, args=[os.path.abspath(__file__), "--bare-server"], env=dict(os.environ)
    )
    samples: dict[str, list[float]] = {
        k: []
        for k in (
            "exec_direct",
            "exec_direct_idle",
            "exec_mcp",
            "list_direct",
            "list_mcp",
            "ping_mcp",
            "validate_exec",
            "noop_bare",
            "canned_bare",
            "canned_after_bare",
            "ping_bare",
        )
    }
    async with stdio_client(params) as (read, write), stdio_client(bare_params) as (bread, bwrite):
        async with ClientSession(
            read, write, client_info=Implementation(name="bench", version="0")
        ) as s, ClientSession(bread, bwrite) as bare:
            await bare.initialize()
            await bare.list_tools()
            await s.initialize()
            await s.list_tools()  # the client validates results against the listed schemas
            validating: list[float] = []
            check = s.validate_tool_result

            async def timed_check(name: str, result: Any) -> None:
                t = time.perf_counter()
                await check(name, result)
                validating.append((time.perf_counter() - t) * 1000)

            s.validate_tool_result = timed_check  # type: ignore[method-assign]

            def direct_call(call: tuple[str, dict[str, Any]]) -> Callable[[], Awaitable[Any]]:
                async def run() -> None:
                    r = tools.call(call[0], call[1], caller_session="bench-direct", registry=direct)
                    assert "error" not in r, r

                return run

            def mcp_call(call: tuple[str, dict[str, Any]]) -> Callable[[], Awaitable[Any]]:
                async def run() -> None:
                    r = await s.call_tool(call[0], call[1])
                    assert not r.is_error, r.content

                return run

            for fn in (direct_call(EXEC), mcp_call(EXEC)):
                await _samples_ms(fn, 30)  # warm: terminals open, caches filled
            # Over MCP the engine is idle between two calls for about a ping's
            # round trip (the result going back, the next request coming):
            # the direct call is also measured after that long idle.
            # a canned result after as long a pause as the direct call takes
            pause_ms = statistics.median(await _samples_ms(direct_call(EXEC), 50))
            canned_after = {"pause_ms": pause_ms}
            # Between two MCP calls the engine sits idle for the rest of the
            # round trip: the call over MCP less the engine call, at least a ping.
            over_mcp_ms = statistics.median(await _samples_ms(mcp_call(EXEC), 50))
            ping_ms = statistics.median(await _samples_ms(s.send_ping, 50))
            idle_s = max(ping_ms, over_mcp_ms - pause_ms) / 1000
            # Each figure in a short tight run, the runs in alternation: load that
            # comes and goes hits all alike, and each call is measured warm, as an
            # agent's calls in a row are (call-by-call interleaving measured every
            # figure slower, the direct call about twice as slow).
            order: list[tuple[str, Callable[[], Awaitable[Any]], float]] = [
                ("exec_direct", direct_call(EXEC), 0.0),
                ("exec_direct_idle", direct_call(EXEC), idle_s),
                ("exec_mcp", mcp_call(EXEC), 0.0),
                ("list_direct", direct_call(LIST), 0.0),
                ("list_mcp", mcp_call(LIST), 0.0),
                ("ping_mcp", s.send_ping, 0.0),
                ("noop_bare", lambda: bare.call_tool("noop", {}), 0.0),
                ("canned_bare", lambda: bare.call_tool("canned", {}), 0.0),
                ("canned_after_bare", lambda: bare.call_tool("canned_after", canned_after), 0.0),
                ("ping_bare", bare.send_ping, 0.0),
            ]
            for _ in range(rounds):
                for key, fn, idle in order:
                    validating.clear()
                    samples[key] += await _samples_ms(fn, n // rounds, idle)
                    if key == "exec_mcp":
                        samples["validate_exec"] += validating
            await s.call_tool("bash_close", {})
    med = {k: statistics.median(v) for k, v in samples.items()}
    p90 = {k: statistics.quantiles(v, n=10)[-1] for k, v in samples.items()}
    return {
        "idle_s": idle_s,
        "median_ms": med,
        "p90_ms": p90,
        "exec_ratio": med["exec_mcp"] / med["exec_direct"],
        "exec_overhead_ms": med["exec_mcp"] - med["exec_direct"],
        "list_overhead_ms": med["list_mcp"] - med["list_direct"],
        "floor_ratio": (med["exec_direct"] + med["ping_mcp"]) / med["exec_direct"],
        "server_share_ms": med["exec_mcp"] - med["exec_direct"] - med["ping_mcp"],
        # the call against its floor: the SDK's ping plus the direct call
        "ratio_to_floor": med["exec_mcp"] / (med["exec_direct"] + med["ping_mcp"]),
        "above_floor_ms": med["exec_mcp"] - med["exec_direct"] - med["ping_mcp"],
        # ... with the direct call made after the idle an MCP round trip leaves
        "ratio_to_idle_floor": med["exec_mcp"] / (med["exec_direct_idle"] + med["ping_mcp"]),
        "above_idle_floor_ms": med["exec_mcp"] - med["exec_direct_idle"] - med["ping_mcp"],
        # what the idle before it adds to the same direct call
        "idle_cost_ms": med["exec_direct_idle"] - med["exec_direct"],
        # what any tools/call costs with this SDK beyond a ping (a bare server's no-op tool)
        "sdk_tool_call_ms": med["noop_bare"] - med["ping_bare"],
        # ... and with a bash_exec result under its output schema, but no terminal
        "sdk_result_ms": med["canned_bare"] - med["ping_bare"],
        # what this server adds beyond that and the direct call
        "own_share_ms": med["exec_mcp"] - med["exec_direct_idle"] - med["ping_mcp"]
        - (med["canned_bare"] - med["ping_bare"]),
        "pause_ms": pause_ms,
        # ... and with the result coming after as long a pause as the direct call
        "sdk_result_after_pause_ms": med["canned_after_bare"] - med["ping_bare"] - pause_ms,
        # what this server adds beyond a bare server's call of the same length
        # (the direct call after the idle an MCP round trip leaves the engine)
        "own_share_same_length_ms": med["exec_mcp"] - med["ping_mcp"] - med["exec_direct_idle"]
        - (med["canned_after_bare"] - med["ping_bare"] - pause_ms),
    }


def _on_both_backends(
    one: Callable[[list[str], Any, int, int], Awaitable[dict[str, Any]]], quick: bool
) -> dict[str, Any]:
    """``one(server_args, direct_engine, rounds, n)`` against an in-process
    registry, then against a private terminal host (started here, stopped and
    removed afterwards); the load average after both."""
    rounds = 5 if quick else 20
    n = 150 if quick else 1000
    out: dict[str, Any] = {"calls_per_figure": n, "rounds": rounds}
    tmp = tempfile.mkdtemp(prefix="dsh-bench-", dir="/tmp")
    os.chmod(tmp, 0o700)
    local = Registry()
    client = HostClient(HostPaths.for_name("bench-mcp", tmp))
    try:
        out["in_process"] = anyio.run(one, ["--in-process"], local, rounds, n)
        client.connect()
        out["host"] = anyio.run(one, ["--host", "bench-mcp", "--host-dir", tmp], client, rounds, n)
    finally:
        local.close_all()
        try:
            stop_host(client.paths)
        finally:
            client.detach()
            shutil.rmtree(tmp, ignore_errors=True)
    load = _loadavg()
    if load is not None:
        out["loadavg"] = load
    return out


def _loadavg() -> tuple[float, float, float] | None:
    try:
        return os.getloadavg()
    except OSError:
        return None


def measure(quick: bool = False) -> dict[str, Any]:
    return _on_both_backends(_one_backend, quick)


# -- both eras against a bare server (issue 33) ---------------------------------
TASKS = "io.modelcontextprotocol/tasks"


def _task_models() -> tuple[Any, Any, Any]:
    """The client side of the tasks extension, as much as a poll needs."""
    from typing import Literal

    from mcp.client.extension import ClientExtension, ResultClaim
    from mcp.types import CallToolResult, Result
    from pydantic import ConfigDict

    class TaskHandle(Result):
        model_config = ConfigDict(extra="allow")
        result_type: Literal["task"] = "task"
        task_id: str
        status: str

    class TaskState(Result):
        model_config = ConfigDict(extra="allow")
        result_type: str | None = None
        task_id: str
        status: str

    async def unresolved(handle: Any, ctx: Any) -> CallToolResult:
        raise AssertionError("the bench polls by hand")

    class Tasks(ClientExtension):
        identifier = TASKS

        def claims(self) -> list[ResultClaim[Any]]:
            return [ResultClaim(result_type="task", model=TaskHandle, resolve=unresolved)]

    return TaskHandle, TaskState, Tasks


async def _eras_backend(server_args: list[str], direct: Any, rounds: int, n: int) -> dict[str, Any]:
    """``bash_exec true`` through this server and a bare server's tool that
    returns at once (``noop``; ``canned``: a ``bash_exec`` result under its
    schema), on one connection per server and era, same transport, same
    rounds; plus a ``tasks/get`` poll of a running task (2026-07-28)."""
    from mcp import Client
    from mcp.types import GetTaskRequest, GetTaskRequestParams

    task_handle, task_state, tasks_ext = _task_models()
    ours = StdioServerParameters(
        command=sys.executable, args=["-m", "dsh_magics.cli", "mcp", *server_args], env=dict(os.environ)
    )
    bare = StdioServerParameters(
        command=sys.executable, args=[os.path.abspath(__file__), "--bare-server"], env=dict(os.environ)
    )
    info = Implementation(name="bench", version="0")
    samples: dict[str, list[float]] = {}
    async with (
        Client(ours, client_info=info, extensions=[tasks_ext()], cache=None) as mo,
        Client(bare, client_info=info, cache=None) as bo,
        stdio_client(ours) as (r1, w1),
        stdio_client(bare) as (r2, w2),
        ClientSession(r1, w1, client_info=info) as lo,
        ClientSession(r2, w2, client_info=info) as lb,
    ):
        await lo.initialize()
        await lb.initialize()
        for c in (mo, bo, lo, lb):
            await c.list_tools()
        assert mo.protocol_version == "2026-07-28" and bo.protocol_version == "2026-07-28"
        handle = await mo.session.call_tool(
            "bash_exec", {"command": "sleep 3600", "wait_ms": 1, "session_id": "bench-task"}, allow_claimed=True
        )
        assert isinstance(handle, task_handle), handle
        get = GetTaskRequest(params=GetTaskRequestParams(task_id=handle.task_id))

        async def poll() -> None:
            state = await mo.session.send_request(get, task_state)
            assert state.status == "working", state

        def call(client: Any, name: str, args: dict[str, Any]) -> Callable[[], Awaitable[Any]]:
            async def run() -> None:
                r = await client.call_tool(name, args)
                assert not r.is_error, r.content

            return run

        async def direct_exec() -> None:
            r = tools.call(EXEC[0], EXEC[1], caller_session="bench-direct", registry=direct)
            assert "error" not in r, r

        order: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
            ("exec_direct", direct_exec),
            ("exec_ours_modern", call(mo, *EXEC)),
            ("noop_bare_modern", call(bo, "noop", {})),
            ("canned_bare_modern", call(bo, "canned", {})),
            ("task_get_modern", poll),
            ("exec_ours_legacy", call(lo, *EXEC)),
            ("noop_bare_legacy", call(lb, "noop", {})),
            ("canned_bare_legacy", call(lb, "canned", {})),
        ]
        for _key, fn in order:
            await _samples_ms(fn, 30)  # warm
        for key, _ in order:
            samples[key] = []
        for _ in range(rounds):
            for key, fn in order:
                samples[key] += await _samples_ms(fn, n // rounds)
        await mo.call_tool("bash_interrupt", {"session_id": "bench-task"})
        await mo.call_tool("bash_close", {"session_id": "bench-task"})
        await mo.call_tool("bash_close", {})
    med = {k: statistics.median(v) for k, v in samples.items()}
    p90 = {k: statistics.quantiles(v, n=10)[-1] for k, v in samples.items()}
    out: dict[str, Any] = {"median_ms": med, "p90_ms": p90}
    for era in ("modern", "legacy"):
        out[f"{era}_above_bare_noop_ms"] = med[f"exec_ours_{era}"] - med[f"noop_bare_{era}"]
        out[f"{era}_above_bare_canned_ms"] = med[f"exec_ours_{era}"] - med[f"canned_bare_{era}"]
        out[f"{era}_above_bare_canned_and_direct_ms"] = (
            med[f"exec_ours_{era}"] - med[f"canned_bare_{era}"] - med["exec_direct"]
        )
    out["task_get_above_bare_noop_ms"] = med["task_get_modern"] - med["noop_bare_modern"]
    return out


def measure_eras(quick: bool = False) -> dict[str, Any]:
    before = _loadavg()
    out = _on_both_backends(_eras_backend, quick)
    if before is not None:
        out["loadavg_before"] = before
    return out


def print_eras(res: dict[str, Any]) -> None:
    for backend in ("in_process", "host"):
        r = res[backend]
        m = r["median_ms"]
        print(f"{backend.replace('_', '-')} (median ms; direct bash_exec true {m['exec_direct']:.3f}):")
        for era, label in (("modern", "2026-07-28"), ("legacy", "2025-11-25")):
            print(
                f"  {label}: bash_exec true {m[f'exec_ours_{era}']:.3f}; bare no-op {m[f'noop_bare_{era}']:.3f}"
                f" ({r[f'{era}_above_bare_noop_ms']:+.3f}, target <= +0.3); bare canned result"
                f" {m[f'canned_bare_{era}']:.3f} ({r[f'{era}_above_bare_canned_ms']:+.3f});"
                f" less the direct call too: {r[f'{era}_above_bare_canned_and_direct_ms']:+.3f}"
            )
        print(
            f"  tasks/get poll {m['task_get_modern']:.3f} against the bare no-op call"
            f" {m['noop_bare_modern']:.3f} ({r['task_get_above_bare_noop_ms']:+.3f}, target <= 0)"
        )
    if "loadavg" in res:
        print(
            "load average before: " + " ".join(f"{x:.2f}" for x in res.get("loadavg_before", ()))
            + "; after: " + " ".join(f"{x:.2f}" for x in res["loadavg"])
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument(
        "--eras",
        action="store_true",
        help="bash_exec true and a tasks/get poll against a bare SDK server, on 2026-07-28 and 2025-11-25",
    )
    ap.add_argument("--bare-server", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.bare_server:
        bare_server()
        return 0
    if args.eras:
        eras = measure_eras(args.quick)
        if args.json:
            print(json.dumps(eras, indent=2))
        else:
            print_eras(eras)
        return 0
    res = measure(args.quick)
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    for backend in ("in_process", "host"):
        r = res[backend]
        m, p = r["median_ms"], r["p90_ms"]
        print(f"{backend.replace('_', '-')}:")
        print(
            f"  bash_exec true (median ms): direct {m['exec_direct']:.3f}  MCP {m['exec_mcp']:.3f}"
            f"  (p90 {p['exec_direct']:.3f} / {p['exec_mcp']:.3f})"
        )
        print(
            f"    MCP / direct = {r['exec_ratio']:.2f}x (target <= 2x); +{r['exec_overhead_ms']:.3f} ms per call"
        )
        print(
            f"  bash_list (median ms): direct {m['list_direct']:.3f}  MCP {m['list_mcp']:.3f}"
            f"  -> protocol cost +{r['list_overhead_ms']:.3f} ms per call"
        )
        print(
            f"  SDK ping on the same connection (the floor of any request): {m['ping_mcp']:.3f} ms,"
            f" so the best possible ratio is {r['floor_ratio']:.2f}x; this server's share of a"
            f" bash_exec call: {r['server_share_ms']:+.3f} ms (target <= +0.3 ms), of which the"
            f" client's output-schema check {m['validate_exec']:.3f} ms"
        )
        print(
            f"  bash_exec over MCP / (ping + direct) = {r['ratio_to_floor']:.2f}x,"
            f" {r['above_floor_ms']:+.3f} ms (target <= +0.3 ms)"
        )
        print(
            f"  the direct call after {r['idle_s'] * 1000:.2f} ms idle (as long as the engine is idle"
            f" between two MCP calls): {m['exec_direct_idle']:.3f} ms ({r['idle_cost_ms']:+.3f} ms);"
            f" over MCP / (ping + that) = {r['ratio_to_idle_floor']:.2f}x,"
            f" {r['above_idle_floor_ms']:+.3f} ms"
        )
        print(
            f"  a bare SDK server's no-op tool: {m['noop_bare']:.3f} ms against its ping"
            f" {m['ping_bare']:.3f} ms: any tools/call costs {r['sdk_tool_call_ms']:+.3f} ms"
            " over a ping with this SDK"
        )
        print(
            f"  the same bare server returning a bash_exec result under its output schema:"
            f" {m['canned_bare']:.3f} ms ({r['sdk_result_ms']:+.3f} ms over its ping); what"
            f" remains for this server beyond that and the direct call after idle:"
            f" {r['own_share_ms']:+.3f} ms"
        )
        print(
            f"  ... that result after its handler blocks {r['pause_ms']:.3f} ms (as long as the"
            f" direct call): {m['canned_after_bare']:.3f} ms, {r['sdk_result_after_pause_ms']:+.3f} ms"
            f" over its ping and the pause; what remains for this server beyond a bare call of"
            f" the same length and the direct call after idle: {r['own_share_same_length_ms']:+.3f} ms"
        )
    if "loadavg" in res:
        print("load average after: " + " ".join(f"{x:.2f}" for x in res["loadavg"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
