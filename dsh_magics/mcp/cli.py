"""``dsh-magics mcp``: arguments and the run loop (no SDK import until run)."""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any

from ..errors import DshError

#: The terminal host MCP servers use unless ``--host`` names another.
DEFAULT_HOST = "mcp"

DESCRIPTION = """\
Serve the bash_* agent tools (persistent bash terminals with job handles) as a
Model Context Protocol server on stdin/stdout, for agent hosts such as desktop
assistants, coding agents and IDEs. Configure your client to run
`dsh-magics mcp` (see docs/mcp.md).

Terminals live in the per-user terminal host named 'mcp' (started on demand),
so they survive a restart of the client, and a notebook attached to the same
host (DSH_MAGICS_HOST_NAME=mcp) shows them live in %bash_panel. --in-process
keeps them inside this server: they end when it exits.

The caller's own terminal (the session used when a tool call names no
session_id) is mcp-<client name>, from the client's initialize request, or
--session. Stop the host and every terminal in it with
`dsh-magics host stop --name mcp`.
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.description = DESCRIPTION
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--host",
        metavar="NAME",
        default=DEFAULT_HOST,
        help="terminal host to keep the terminals in (default: %(default)s; a Jupyter "
        "server's host is jupyter-<pid>, see `dsh-magics host status`)",
    )
    where.add_argument(
        "--in-process",
        action="store_true",
        help="keep the terminals inside this server process; they end when it exits",
    )
    p.add_argument(
        "--host-dir",
        metavar="DIR",
        default=None,
        help="the hosts' runtime directory (default: $DSH_MAGICS_HOST_DIR, "
        "$XDG_RUNTIME_DIR/dsh-magics or /tmp/dsh-magics-<uid>)",
    )
    p.add_argument(
        "--session",
        metavar="NAME",
        default=None,
        help="the caller's own session id (default: mcp-<client name> from the client's "
        "initialize request, or mcp if it sends none)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        from .server import ToolServer
    except ImportError as e:
        raise DshError(
            f"the MCP SDK is not installed ({e}); install it with: pip install 'dsh-magics[mcp]'",
            code="MCP_UNAVAILABLE",
        ) from None
    import anyio

    backend: Any
    if args.in_process:
        from ..terminal import default_registry

        backend = default_registry()
    else:
        from ..host import HostClient, HostPaths

        backend = HostClient(HostPaths.for_name(args.host, args.host_dir))
        backend.connect()  # fail now, in one line, rather than at the first tool call
    server = ToolServer(backend, session=args.session)
    previous = signal.getsignal(signal.SIGTERM)
    # SIGTERM (a client that gave up waiting) ends the server like a closed
    # stdin: terminals are closed in-process, the host is left running.
    signal.signal(signal.SIGTERM, _raise_exit)
    try:
        anyio.run(server.serve_stdio)
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        if args.in_process:
            backend.close_all()
        else:
            backend.detach()
        sys.stdout.flush()
    return 0


def _raise_exit(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)
