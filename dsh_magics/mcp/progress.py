"""MCP progress notifications for a waiting call (docs/mcp.md, "Long waits").

Durations are milliseconds here as everywhere inside; the notification itself counts
seconds (``progress``: elapsed, ``total``: the wait's timeout), converted where it is sent."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anyio

from ..terminal.deadline import Deadline
from .workers import run_blocking

#: A waiting call longer than this (ms) sends progress notifications, this often (ms).
PROGRESS_AFTER_MS = 1000
PROGRESS_EVERY_MS = 1000


async def with_progress(
    ctx: Any,
    work: Callable[[], dict[str, Any]],
    total_ms: int,
    lines: Callable[[], int | None] | None,
) -> dict[str, Any]:
    """``work()`` on a worker thread, telling the client its progress once a
    second after the first (``total_ms``: the wait's timeout; ``lines``: a
    probe of the output so far)."""
    started = time.monotonic()
    result: dict[str, Any] = {}

    async def ticker() -> None:
        tick = 0
        while True:
            tick += 1
            due = Deadline.after_ms(PROGRESS_AFTER_MS + (tick - 1) * PROGRESS_EVERY_MS, started)
            await anyio.sleep(due.left_s() or 0.0)
            count = None
            if lines is not None:
                try:
                    count = await run_blocking(lines)
                except Exception:  # noqa: BLE001 - best effort: a message without a count
                    count = None
            elapsed = time.monotonic() - started
            message = f"waiting {elapsed:.0f}s"
            if count is not None:
                message += f", {count} line{'s' if count != 1 else ''} of output so far"
            try:
                await ctx.session.report_progress(round(elapsed, 3), total_ms / 1000, message)  # the wire's seconds
            except Exception:  # noqa: BLE001 - a client gone or refusing progress
                return  # never turns the call's result into an error

    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        result = await run_blocking(work)
        tg.cancel_scope.cancel()
    return result


def lines_probe(backend: Any, name: str, arguments: Any) -> Callable[[], int | None] | None:
    """How many lines the awaited job has printed so far (bash_wait only):
    a snapshot that carries no output, only its counts."""
    if name != "bash_wait" or not isinstance(arguments, dict):
        return None
    job_id = arguments.get("job_id")
    if not isinstance(job_id, str) or not job_id:
        return None

    def probe() -> int:
        snapshot = backend.result(job_id, tail_lines=0)
        return snapshot.omitted_lines + snapshot.dropped_lines

    return probe


def wants_progress(ctx: Any) -> bool:
    """Did the request ask for progress (a progress token)?"""
    meta = getattr(ctx, "meta", None)
    if isinstance(meta, dict):
        return meta.get("progress_token", meta.get("progressToken")) is not None
    return getattr(meta, "progress_token", None) is not None


__all__ = ["PROGRESS_AFTER_MS", "PROGRESS_EVERY_MS", "lines_probe", "wants_progress", "with_progress"]
