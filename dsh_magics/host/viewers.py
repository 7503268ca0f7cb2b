"""People attached to the host's terminals (``dsh-magics attach``), as the host sees them.

An attach client says so in its ``hello`` (``purpose: "attach"``, the
``session``, ``read_only``). The host lists them in ``status``, counts them
as clients (the idle policy, host/idle.py), and refuses every operation but
reading on a connection that said ``read_only``: the viewer's keys are dropped
by the client and, should one be sent, refused by the host.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import InvalidArgument

#: What a read-only viewer's connection may do: look, never change.
READS = frozenset(
    {
        "hello", "status", "subscribe", "detach", "jobs", "result", "job", "latest_job",
        "read", "list", "info", "exists", "wait_output", "output_seq", "screen", "inputs", "wait", "watch",
        "tty_go", "tty_bell", "tty_release",
    }
)  # fmt: skip


def is_attach(client: Mapping[str, Any]) -> bool:
    return client.get("purpose") == "attach"


def read_only(client: Mapping[str, Any]) -> bool:
    return client.get("read_only") is True


def check(client: Mapping[str, Any], op: str) -> None:
    """Refuse ``op`` on a read-only viewer's connection."""
    if client.get("read_only") is True and op not in READS:
        raise InvalidArgument(
            f"{op!r} refused: this connection is a read-only viewer (dsh-magics attach --read-only)",
            read_only=True,
        )


def attached(clients: Iterable[tuple[int, Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """One row per attached person (``clients``: peer pid and hello's client)."""
    seen: dict[tuple[int, str], dict[str, Any]] = {}
    for pid, client in clients:
        if is_attach(client):
            key = (pid, str(client.get("session")))
            seen[key] = {"pid": pid, "session_id": client.get("session"), "read_only": bool(client.get("read_only"))}
    return sorted(seen.values(), key=lambda r: (str(r["session_id"]), r["pid"]))


__all__ = ["READS", "attached", "check", "is_attach", "read_only"]
