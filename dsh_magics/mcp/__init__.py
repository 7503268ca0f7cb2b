"""The agent tools as a Model Context Protocol server: ``dsh-magics mcp`` (docs/mcp.md).

The command line (:mod:`.cli`) imports no SDK module until it serves, so it works
without the SDK and says what to install.

May import: tools/ (the tools it serves), host/ (where the terminals live), terminal/,
answer.page (the page for password prompts), errors, shutdown. Must not import:
notebook/, widgets/, attach/, harness/, lab/, answer.cli.
"""

from __future__ import annotations

from typing import Any

from .cli import DEFAULT_HOST, add_arguments, run

__all__ = ["DEFAULT_HOST", "ToolServer", "add_arguments", "run", "session_for_client", "tool_list"]


def __getattr__(name: str) -> Any:
    if name in ("ToolServer", "session_for_client", "tool_list", "DEFAULT_SESSION"):
        from . import server

        return getattr(server, name)
    raise AttributeError(name)
