"""Which sessions each client process asked about: the host sends a client
that only settles job stand-ins (it subscribed to ``job_done`` alone, having
no listeners of its own) the ``job_done`` events of those sessions' jobs
only, not every job of every client (docs/host.md, "Events").

A client process is known by its peer pid (its request connections and its
event connection share it). A session counts from the first request that
names it, noted before the request runs, so the ``job_done`` of a job that
request starts is never missed; a request that may hand out any session's
job (``jobs`` or ``latest_job`` without a session) makes the client want
every session's events from then on.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

#: Operations that may hand out jobs of any session when given none.
_ANY_SESSION = frozenset(("jobs", "latest_job"))


class Interest:
    """Sessions per client process; ``None`` for a client that wants all."""

    def __init__(self, owner_of: Callable[[str], str | None]) -> None:
        self._owner_of = owner_of
        self._lock = threading.Lock()
        self._sessions: dict[int, set[str] | None] = {}

    def note(self, pid: int, op: str, args: dict[str, Any]) -> None:
        sid = args.get("session_id") or args.get("owner")
        job_id = args.get("job_id")
        if not isinstance(sid, str) and isinstance(job_id, str):
            sid = self._owner_of(job_id)
        with self._lock:
            if pid in self._sessions and self._sessions[pid] is None:
                return
            if isinstance(sid, str):
                seen = self._sessions.setdefault(pid, set())
                assert seen is not None
                seen.add(sid)
            elif op in _ANY_SESSION:
                self._sessions[pid] = None

    def wants(self, pid: int, session_id: Any) -> bool:
        with self._lock:
            if pid not in self._sessions:
                return False
            seen = self._sessions[pid]
            return seen is None or session_id in seen

    def forget(self, pid: int) -> None:
        """The client process has no connection left."""
        with self._lock:
            self._sessions.pop(pid, None)


__all__ = ["Interest"]
