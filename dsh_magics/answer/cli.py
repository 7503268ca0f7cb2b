"""``dsh-magics answer SESSION``: a person types the answer to a job's password prompt.

For a job in a terminal host (an MCP agent's, or a notebook's): hidden entry
with ``getpass`` on this terminal, sent through the host into the job's
terminal as ``[secret]`` with source ``person``. The agent never sees it.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import TYPE_CHECKING, cast

from ..errors import HostUnavailable, InvalidArgument, NoSuchSession, NotRunning

if TYPE_CHECKING:
    from ..host import HostClient
    from ..terminal.api import Engine

DEFAULT_HOST = "mcp"

DESCRIPTION = """\
Answer the password prompt a job waits at, in the terminal session SESSION of a
terminal host (for example an MCP agent's terminal mcp-<client name>, whose job
asks for a password the agent must not type). You type the answer here, hidden;
it goes straight into that terminal and is recorded only as [secret].

Without --host, the hosts of the runtime directory are searched for SESSION
(the 'mcp' host first). A terminal kept inside an in-process server cannot be
reached from here.
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.description = DESCRIPTION
    from ..host.cli import add_lookup_arguments

    add_lookup_arguments(p, "the terminal session whose job waits")


def find_host(session: str, host: str | None, host_dir: str | None) -> tuple[str, HostClient]:
    """The host that has ``session``, joined (never started)."""
    from ..host import HostClient, HostPaths
    from ..host.runtime import list_names

    names = [host] if host else sorted(list_names(host_dir), key=lambda n: n != DEFAULT_HOST)
    for name in names:
        client = HostClient(HostPaths.for_name(name, host_dir), autostart=False)
        try:
            client.connect()
            if client.exists(session):
                return name, client
        except HostUnavailable:
            if host:
                raise
        client.detach()
    where = f"host {host}" if host else "any running terminal host"
    raise NoSuchSession(f"no terminal session {session!r} in {where}")


def run(args: argparse.Namespace) -> int:
    if not sys.stdin.isatty():
        raise InvalidArgument("answer: needs a terminal for hidden entry (stdin is not a tty)")
    name, client = find_host(args.session, args.host, args.host_dir)
    engine = cast("Engine", client)  # HostClient serves the engine contract
    try:
        info = engine.info(args.session)
        waiting = info.awaiting_input
        if not info.job_id or not waiting or not waiting.get("secret"):
            raise NotRunning(
                f"session {args.session!r} in host {name} has no job waiting for a password now"
            )
        prompt = str(waiting.get("prompt") or "")
        print(
            f"job {info.job_id} in session {args.session} (host {name}) asks for hidden input:"
            f" {prompt!r}",
            file=sys.stderr,
        )
        try:
            secret = getpass.getpass("answer (hidden, Enter sends; Ctrl-C gives up): ")
        except (KeyboardInterrupt, EOFError):
            print("", file=sys.stderr)
            print("nothing sent", file=sys.stderr)
            return 130
        now = engine.info(args.session)
        if now.job_id != info.job_id or not now.awaiting_input or not now.awaiting_input.get("secret"):
            raise NotRunning("the job no longer waits for a password; nothing sent")
        res = engine.send(
            args.session, secret, wait_ms=2000, source="person", secret=True, allow_secret=True
        )
        del secret
        state = f"{res.status}, exit {res.exit_code}" if res.done else res.status
        print(f"sent to job {res.job_id} ([secret]); it is now {state}", file=sys.stderr)
        return 0
    finally:
        client.detach()
