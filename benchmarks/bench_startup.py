"""Start-up: how long an MCP host waits for ``dsh-magics mcp``, and an agent for ``dsh_magics.tools``.

Each figure is a median over fresh processes, the contenders alternating:

- ``mcp``: spawn ``dsh-magics mcp --in-process`` until its ``initialize`` reply,
  against a bare low-level server of the same SDK (no tools) started the same way;
- ``first call``: from ``initialize`` to the first ``bash_exec true`` result (a
  terminal starts);
- ``tools``: ``import dsh_magics.tools`` in a fresh interpreter, against
  ``import dsh_magics.terminal`` (the engine the tools drive).

``python benchmarks/bench_startup.py [--rounds N] [--json]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

_BARE_SERVER = """
import anyio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

server = Server("bare")

async def serve():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())

anyio.run(serve)
"""

_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench-startup", "version": "1"},
    },
}


def _spawn_to_initialize(argv: list[str], first_call: bool) -> tuple[float, float | None]:
    """Seconds from spawn to the initialize reply; then to a first bash_exec's result."""
    started = time.perf_counter()
    p = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert p.stdin is not None and p.stdout is not None

    def send(message: dict[str, Any]) -> None:
        assert p.stdin is not None
        p.stdin.write(json.dumps(message) + "\n")
        p.stdin.flush()

    try:
        send(_INITIALIZE)
        p.stdout.readline()
        initialized = time.perf_counter()
        call_s = None
        if first_call:
            send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            send(
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tools/call",
                    "params": {"name": "bash_exec", "arguments": {"command": "true", "wait_ms": 10000}},
                }
            )
            p.stdout.readline()
            call_s = time.perf_counter() - initialized
            send(
                {
                    "jsonrpc": "2.0",
                    "id": 3,
                    "method": "tools/call",
                    "params": {"name": "bash_close", "arguments": {}},
                }
            )
            p.stdout.readline()
        return initialized - started, call_s
    finally:
        p.stdin.close()
        p.wait(timeout=60)


def _import_s(module: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", f"import {module}"], check=True)
    return time.perf_counter() - started


def measure(rounds: int) -> dict[str, Any]:
    ours = [sys.executable, "-m", "dsh_magics.cli", "mcp", "--in-process", "--session", "bench-startup"]
    bare = [sys.executable, "-c", _BARE_SERVER]
    samples: dict[str, list[float]] = {k: [] for k in ("mcp", "bare", "first_call", "tools", "engine")}
    for _ in range(rounds):
        init_s, call_s = _spawn_to_initialize(ours, first_call=True)
        samples["mcp"].append(init_s)
        assert call_s is not None
        samples["first_call"].append(call_s)
        samples["bare"].append(_spawn_to_initialize(bare, first_call=False)[0])
        samples["tools"].append(_import_s("dsh_magics.tools"))
        samples["engine"].append(_import_s("dsh_magics.terminal"))
    med = {k: statistics.median(v) for k, v in samples.items()}
    out: dict[str, Any] = {"rounds": rounds, "median_s": med}
    out["mcp_over_bare"] = med["mcp"] / med["bare"]
    out["tools_over_engine"] = med["tools"] / med["engine"]
    try:
        out["loadavg"] = os.getloadavg()
    except OSError:
        pass
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    m = measure(args.rounds)
    if args.json:
        print(json.dumps(m, indent=2))
        return 0
    med = m["median_s"]
    print(f"medians of {m['rounds']} fresh processes each:")
    print(
        f"  dsh-magics mcp to its initialize reply: {med['mcp']:.2f} s; a bare SDK server:"
        f" {med['bare']:.2f} s ({m['mcp_over_bare']:.2f}x)"
    )
    print(f"  then the first bash_exec true (a terminal starts): {med['first_call']:.2f} s")
    print(
        f"  import dsh_magics.tools: {med['tools']:.2f} s; import dsh_magics.terminal:"
        f" {med['engine']:.2f} s ({m['tools_over_engine']:.2f}x)"
    )
    if "loadavg" in m:
        print("  load average after: " + " ".join(f"{x:.2f}" for x in m["loadavg"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
