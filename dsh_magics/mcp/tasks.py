"""Long jobs as tasks: the MCP tasks extension (``io.modelcontextprotocol/tasks``,
2026-07-28) over ordinary jobs (docs/mcp.md, "Long jobs as tasks").

A task is a view of one job, never a second copy of it: its id names the job
and its session, so ``tasks/get`` asks the job's terminal (bash_list, the
panel and the notebook see the same job), and a server started after a
client's restart finds a task that a terminal host still runs. What only
this process knows is small: when it first saw the task, and that a client
cancelled it.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY

#: The extension's identifier, in the client's and the server's capabilities.
TASKS = "io.modelcontextprotocol/tasks"
#: How often a client should poll (the extension's ``pollIntervalMs``).
POLL_INTERVAL_MS = 1000
#: Job states after which the task is done.
_DONE = frozenset(("completed", "interrupted", "shell_exited"))
_SEP = "~"


def declared(ctx: Any) -> bool:
    """Did this request's client declare the tasks extension?"""
    try:
        extensions = ctx.session.client_params.capabilities.extensions
    except AttributeError:
        return False
    return isinstance(extensions, dict) and TASKS in extensions


def require_declared(ctx: Any) -> None:
    """-32021 for a client that did not declare the extension (its MUST)."""
    if not declared(ctx):
        raise MCPError(
            code=MISSING_REQUIRED_CLIENT_CAPABILITY,
            message="Missing required client capability",
            data={"requiredCapabilities": {"extensions": {TASKS: {}}}},
        )


def task_id(job_id: str, session_id: str) -> str:
    return f"{job_id}{_SEP}{session_id}"


def parse_task_id(value: str) -> tuple[str, str]:
    """``(job_id, session_id)`` of a task id, or -32602."""
    job_id, sep, session_id = value.partition(_SEP)
    if not sep or not job_id or not session_id:
        raise unknown_task(value)
    return job_id, session_id


def unknown_task(value: str) -> MCPError:
    return MCPError(code=INVALID_PARAMS, message=f"Failed to retrieve task: no task {value[:200]!r}")


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class _Seen:
    """What this process knows of a task beyond its job."""

    created: float
    updated: float
    status: str = "working"
    result: dict[str, Any] | None = None  # the final CallToolResult, wire form


class TaskBoard:
    """The tasks this server handed out or was asked about."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str, _Seen] = {}

    def created(self, tid: str) -> dict[str, Any]:
        """A new task for a running job: the ``CreateTaskResult``."""
        now = time.time()
        with self._lock:
            seen = self._seen.setdefault(tid, _Seen(now, now))
        return {"resultType": "task", **self._wire(tid, seen)}

    def cancelled(self, tid: str) -> None:
        with self._lock:
            seen = self._seen.setdefault(tid, _Seen(time.time(), time.time()))
            if seen.status == "working":
                seen.status, seen.updated = "cancelled", time.time()

    def state(self, tid: str, job_status: str, final: dict[str, Any] | None) -> dict[str, Any]:
        """The task (``DetailedTask``) given its job's status now and, once
        the job ended, the final tool result."""
        now = time.time()
        with self._lock:
            seen = self._seen.setdefault(tid, _Seen(now, now))
            if seen.status == "working" and job_status in _DONE and final is not None:
                seen.status, seen.result, seen.updated = "completed", final, now
            return self._wire(tid, seen)

    def status(self, tid: str) -> str | None:
        with self._lock:
            seen = self._seen.get(tid)
            return seen.status if seen is not None else None

    @staticmethod
    def _wire(tid: str, seen: _Seen) -> dict[str, Any]:
        out: dict[str, Any] = {
            "taskId": tid,
            "status": seen.status,
            "createdAt": _iso(seen.created),
            "lastUpdatedAt": _iso(seen.updated),
            "ttlMs": None,
            "pollIntervalMs": POLL_INTERVAL_MS,
        }
        if seen.result is not None:
            out["result"] = seen.result
        return out


__all__ = [
    "POLL_INTERVAL_MS",
    "TASKS",
    "TaskBoard",
    "declared",
    "parse_task_id",
    "require_declared",
    "task_id",
    "unknown_task",
]
