"""The PTY engine: persistent bash terminals keyed by session id, with jobs.

Usage and the :class:`Engine` contract: docs/engine.md; the functions below use the default registry.

May import: errors, jobs, shutdown. Must not import anything above it: host/,
notebook/, tools/, mcp/, widgets/, attach/, answer/, harness/, lab/, cli. Inside,
core/ is below the transports (local/, remote/); the registry builds terminals from both.
"""

from __future__ import annotations

import builtins

from .. import jobs
from .api import Engine, JobLookup
from .config import TerminalConfig
from .default_engine import default_registry, set_default_registry
from .local.terminal import Terminal
from .registry import Registry, validate_session_id
from .result import (
    BUSY,
    COMPLETED,
    DEAD,
    IDLE,
    INTERRUPTED,
    RUNNING,
    SHELL_EXITED,
    ReadResult,
    Result,
    TerminalInfo,
)

__all__ = [
    "BUSY",
    "COMPLETED",
    "DEAD",
    "Engine",
    "IDLE",
    "INTERRUPTED",
    "JobLookup",
    "RUNNING",
    "SHELL_EXITED",
    "ReadResult",
    "Registry",
    "Result",
    "Terminal",
    "TerminalConfig",
    "TerminalInfo",
    "attach",
    "close",
    "close_all",
    "default_registry",
    "exec",
    "interrupt",
    "list",
    "read",
    "set_default_registry",
    "validate_session_id",
    "wait",
]


def attach(session_id: str, cwd: str | None = None, recreate: bool = False) -> TerminalInfo:
    return default_registry().attach(session_id, cwd=cwd, recreate=recreate)


def exec(session_id: str, command: str, wait_ms: int | None = None) -> jobs.Job | Result:  # noqa: A001
    return default_registry().exec(session_id, command, wait_ms=wait_ms)


def wait(job_id: str, timeout: float | None = None) -> Result:
    return default_registry().wait(job_id, timeout=timeout)


def read(session_id: str, since: int | None = None, last: int | None = None) -> ReadResult:
    return default_registry().read(session_id, since=since, last=last)


def interrupt(session_id: str) -> jobs.Job | None:
    return default_registry().interrupt(session_id)


def close(session_id: str) -> bool:
    return default_registry().close(session_id)


def close_all() -> int:
    return default_registry().close_all()


def list() -> builtins.list[TerminalInfo]:  # noqa: A001
    return default_registry().list()


