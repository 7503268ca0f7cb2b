"""Where one ``bash_exec true`` over MCP spends its time (benchmarks/README.md,
``bench_mcp.py`` section): timestamps on both sides of the stdio pipe, one clock.

``python benchmarks/trace_mcp.py [--in-process | --host NAME ...] [--calls N]``
starts ``dsh-magics mcp`` with the given options (a host named with ``--host``
is stopped at the end) under a wrapper that only
records when a request line is read, when this server's handler starts and
ends, around the engine call, and when the reply is written; the SDK's own
client sends the calls and pings and records when it sent and got each. The
medians of each stretch are printed for the calls and for the pings.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

EXEC = {"command": "true", "wait_ms": 10_000}


def serve_traced(out_path: str, argv: list[str]) -> int:
    """Run ``dsh-magics mcp ARGV`` with timestamps taken at each stretch's
    ends, written to ``out_path`` when the client closes the connection."""
    from dsh_magics.cli import main
    from dsh_magics.mcp import calls, wire
    from dsh_magics.mcp import server as srv

    marks: list[tuple[str, int]] = []
    now = time.perf_counter_ns
    read_line, write_text = wire.Lines.__anext__, wire.Wire.write
    call_tool, run, serve = (
        srv.ToolServer._call_tool,
        calls.CallRunner.run,
        srv.ToolServer.serve_stdio,
    )

    async def traced_read(self: Any) -> str:
        line = await read_line(self)
        if '"tools/call"' in line:
            marks.append(("recv", now()))
        elif '"ping"' in line:
            marks.append(("ping_recv", now()))
        return line

    async def traced_write(self: Any, text: str) -> None:
        call = '"structuredContent"' in text
        if call:
            marks.append(("write0", now()))
        elif '"result":{}' in text.replace(" ", ""):
            marks.append(("ping_write0", now()))
        await write_text(self, text)
        if call:
            marks.append(("write1", now()))

    async def traced_call(self: Any, ctx: Any, params: Any) -> Any:
        marks.append(("h0", now()))
        result = await call_tool(self, ctx, params)
        marks.append(("h1", now()))
        return result

    async def traced_run(self: Any, *args: Any, **kwargs: Any) -> Any:
        marks.append(("r0", now()))
        result = await run(self, *args, **kwargs)
        marks.append(("r1", now()))
        return result

    async def traced_serve(self: Any) -> None:
        try:
            await serve(self)
        finally:
            with open(out_path, "w") as f:
                json.dump(marks, f)

    wire.Lines.__anext__ = traced_read  # type: ignore[method-assign]
    wire.Wire.write = traced_write  # type: ignore[method-assign]
    srv.ToolServer._call_tool = traced_call  # type: ignore[method-assign]
    calls.CallRunner.run = traced_run  # type: ignore[method-assign]
    srv.ToolServer.serve_stdio = traced_serve  # type: ignore[method-assign]
    return main(["mcp", *argv])


async def _client(
    server_argv: list[str], marks_path: str, calls: int
) -> tuple[list[Any], list[Any]]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=[os.path.abspath(__file__), "--serve-traced", marks_path, *server_argv],
        env=dict(os.environ),
    )
    now = time.perf_counter_ns
    sent: list[tuple[int, int]] = []
    pings: list[tuple[int, int]] = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        await s.list_tools()  # the client checks results against the listed schemas
        for _ in range(100):  # warm: the terminal open, caches filled
            await s.call_tool("bash_exec", EXEC)
        for _ in range(max(1, calls // 3)):
            t = now()
            await s.send_ping()
            pings.append((t, now()))
        for _ in range(calls):
            t = now()
            r = await s.call_tool("bash_exec", EXEC)
            sent.append((t, now()))
            assert not r.is_error, r.content
        await s.call_tool("bash_close", {})
    return sent, pings


def _report(marks: list[tuple[str, int]], sent: list[Any], pings: list[Any]) -> None:
    ev: dict[str, list[int]] = {}
    for name, t in marks:
        ev.setdefault(name, []).append(t)
    n = len(sent)

    def after(key: str, starts: list[int]) -> list[int]:
        """For each start, the first ``key`` mark at or after it."""
        times = sorted(ev[key])
        return [times[bisect.bisect_left(times, t)] for t in starts]

    # each call's marks in order: its line read after its send, and so on
    ev["recv"] = after("recv", [t for t, _ in sent])
    for key, prev in (("h0", "recv"), ("r0", "h0"), ("r1", "r0"), ("h1", "r1"), ("write0", "h1")):
        ev[key] = after(key, ev[prev])
    ev["write1"] = after("write1", ev["write0"])
    stretches = [
        ("client's send to the server's line read", lambda i: ev["recv"][i] - sent[i][0]),
        ("line read to this server's handler", lambda i: ev["h0"][i] - ev["recv"][i]),
        (
            "handler, less the engine call",
            lambda i: (ev["r0"][i] - ev["h0"][i]) + (ev["h1"][i] - ev["r1"][i]),
        ),
        ("the engine call in the handler", lambda i: ev["r1"][i] - ev["r0"][i]),
        ("handler's end to the reply written", lambda i: ev["write1"][i] - ev["h1"][i]),
        ("reply written to the client's result", lambda i: sent[i][1] - ev["write1"][i]),
        ("total", lambda i: sent[i][1] - sent[i][0]),
    ]
    print(f"bash_exec true, medians of {n} calls (us):")
    for label, span in stretches:
        print(f"  {label:40s} {statistics.median(span(i) for i in range(n)) / 1000:8.1f}")
    k = len(pings)
    recv = after("ping_recv", [t for t, _ in pings])
    written = after("ping_write0", recv)
    print(f"ping, medians of {k} (us):")
    for label, values in (
        (
            "client's send to the server's line read",
            [r - p[0] for p, r in zip(pings, recv, strict=True)],
        ),
        ("line read to the reply written", [w - r for r, w in zip(recv, written, strict=True)]),
        (
            "reply written to the client's result",
            [p[1] - w for p, w in zip(pings, written, strict=True)],
        ),
        ("total", [p[1] - p[0] for p in pings]),
    ):
        print(f"  {label:40s} {statistics.median(values) / 1000:8.1f}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--serve-traced"]:
        return serve_traced(argv[1], argv[2:])
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--calls", type=int, default=1500)
    args, server_argv = ap.parse_known_args(argv)
    host = _host_named(server_argv)
    try:
        with tempfile.TemporaryDirectory(prefix="dsh-trace-") as tmp:
            marks_path = os.path.join(tmp, "marks.json")
            sent, pings = asyncio.run(_client(server_argv or ["--in-process"], marks_path, args.calls))
            with open(marks_path) as f:
                marks = [(name, t) for name, t in json.load(f)]
    finally:
        if host is not None:  # the server leaves its host running, as it should; a benchmark must not
            subprocess.run([sys.executable, "-m", "dsh_magics.cli", "host", "stop", *host], check=False)
    _report(marks, sent, pings)
    return 0


def _host_named(server_argv: list[str]) -> list[str] | None:
    """``host stop``'s arguments for the host the server is told to use, if any."""
    opts = argparse.ArgumentParser(add_help=False)
    opts.add_argument("--host")
    opts.add_argument("--host-dir")
    known, _ = opts.parse_known_args(server_argv)
    if known.host is None:
        return None
    return ["--name", known.host, *(["--dir", known.host_dir] if known.host_dir else [])]


if __name__ == "__main__":
    sys.exit(main())
