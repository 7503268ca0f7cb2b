"""``dsh-magics mcp``: arguments and the run loop (no SDK import until run)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Any

from .. import shutdown
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
        from .server import ToolServer, check_session
    except ImportError as e:
        raise DshError(
            f"the MCP SDK is not installed ({e}); install it with: pip install 'dsh-magics[mcp]'",
            code="MCP_UNAVAILABLE",
        ) from None
    import anyio

    from .task_ids import TaskIds, load_key

    if args.session is not None:
        check_session(args.session)  # before a host is started for nothing
    backend: Any
    if args.in_process:
        from ..terminal import default_registry

        backend = default_registry()
        where = "in-process"
        ids = TaskIds.ephemeral()
    else:
        from ..host import HostClient, HostPaths

        paths = HostPaths.for_name(args.host, args.host_dir)
        ids = TaskIds(load_key(paths.dir), paths.name)  # TASK_KEY_UNSAFE before a host starts
        backend = HostClient(paths)
        backend.connect()  # fail now, in one line, rather than at the first tool call
        where = f"host {paths.name} ({paths.socket})"
    server = ToolServer(backend, session=args.session, task_ids=ids)
    _say(f"serving the tools on stdio; terminals: {where}")
    # SIGTERM (a client that gave up waiting) ends the server like a closed
    # stdin: terminals are closed in-process, the host is left running.
    restore_signals = shutdown.raise_on_signals(signal.SIGTERM)
    why = "the client closed the connection"
    code = 0
    try:
        anyio.run(server.serve_stdio)
    except KeyboardInterrupt:
        why, code = "interrupted", 128 + signal.SIGINT
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
        why = f"terminated (exit status {code})"
    finally:
        restore_signals()
        if args.in_process:
            why += f"; closed {backend.close_all()} terminal(s)"
        else:
            backend.detach()
            why += f"; the terminals stay in host {args.host}"
    if code:
        # The SDK reads stdin in a non-daemon thread that only the client's
        # closing of stdin ends: leave without waiting for it, after the exit
        # steps (tests/mcp/test_mcp_server.py::test_in_process_sigterm_closes_the_terminals).
        _say(f"exited: {why}")
        shutdown.run()
        os._exit(code)
    # Said at interpreter exit, after every non-daemon thread ended: a line
    # that never appears means something held the exit up until a kill
    # (tests/mcp/test_mcp_server.py: test_a_client_gone_mid_wait_leaves_the_job_running,
    # test_in_process_exit_leaves_nothing).
    shutdown.register(shutdown.REPORT, lambda: _say(f"exited: {why}"))
    return 0


def _say(message: str) -> None:
    try:
        print(f"dsh-magics mcp: {message}", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        return  # stderr is closed (the host went away): there is no one left to tell
