"""MCP clients built on the TypeScript SDK, for the tests: the MCP Inspector's
CLI, a small script on ``@modelcontextprotocol/sdk`` (tests/mcp/ts_client.mjs),
and one on the SDK's v2 client with the tasks extension's client
(tests/mcp/ts_tasks_client.mjs).

Pinned versions, installed from npm into the per-user cache (outside the
checkout), by ``.ci/run`` (``python3 tests/mcp/ts_clients.py install``) or on
first use. Standalone: no import from the package under test.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

#: Exact versions. The Inspector 2.x declares node >= 22.19 but its CLI runs on
#: the node 20 of Debian bookworm/trixie used here (npm only warns).
PINS = {
    "@modelcontextprotocol/inspector": "2.12.0",
    "@modelcontextprotocol/sdk": "1.32.2",
    # The SDK's v2 client (2026-07-28) and the tasks extension's own client,
    # for tests/mcp/ts_tasks_client.mjs (the Inspector uses the same versions).
    "@modelcontextprotocol/client": "2.3.1",
    "@modelcontextprotocol/ext-tasks": "0.2.2",
}
SCRIPT = Path(__file__).with_name("ts_client.mjs")
TASKS_SCRIPT = Path(__file__).with_name("ts_tasks_client.mjs")


def install_dir() -> Path:
    base = os.environ.get("DSH_MAGICS_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache"), "dsh-magics"
    )
    tag = hashlib.sha256(json.dumps(PINS, sort_keys=True).encode()).hexdigest()[:12]
    return Path(base) / "npm" / f"mcp-test-clients-{tag}"


def missing_tools() -> str | None:
    """Why the TypeScript clients cannot run here, or None."""
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (the TypeScript-SDK MCP clients need node and npm)"
    return None


def installed() -> bool:
    root = install_dir() / "node_modules"
    for name, version in PINS.items():
        try:
            got = json.loads((root / name / "package.json").read_text())["version"]
        except (OSError, ValueError, KeyError):
            return False
        if got != version:
            return False
    return True


def install() -> Path:
    """Install the pinned packages (no-op when present); the directory."""
    where = install_dir()
    if installed():
        return where
    where.mkdir(parents=True, exist_ok=True)
    (where / "package.json").write_text(
        json.dumps({"private": True, "dependencies": PINS}, indent=2) + "\n"
    )
    subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"],
        cwd=where,
        check=True,
        timeout=600,
    )
    if not installed():
        raise RuntimeError(f"npm install in {where} did not give {PINS}")
    return where


def inspector_argv() -> list[str]:
    """``npx @modelcontextprotocol/inspector`` from the pinned install, offline."""
    return ["node", str(install_dir() / "node_modules" / ".bin" / "mcp-inspector")]


def ts_client_argv() -> list[str]:
    return ["node", str(SCRIPT), str(install_dir())]


def ts_tasks_client_argv() -> list[str]:
    return ["node", str(TASKS_SCRIPT), str(install_dir())]


if __name__ == "__main__":
    if sys.argv[1:] != ["install"]:
        sys.exit("usage: ts_clients.py install")
    why = missing_tools()
    if why:
        sys.exit(why)
    print(install())
