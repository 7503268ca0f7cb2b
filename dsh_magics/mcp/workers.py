"""The worker threads that run the server's blocking calls (engine waits),
so the event loop stays free for progress, cancellation and other requests."""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class _Workers:
    """Daemon threads that run blocking calls, reused while they are idle.

    Daemon, not ``anyio.to_thread``'s non-daemon workers: an abandoned wait
    (a cancelled request, a client gone mid-wait) must not hold the
    process's exit for up to the wait's timeout while the job runs on in the
    host (tests/mcp/test_mcp_server.py::test_a_client_gone_mid_wait_leaves_the_job_running
    pins a prompt exit). Reused, because a new thread per call costs more
    than the rest of the server's share of a round trip.
    """

    IDLE_EXIT_S = 60.0

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0  # workers waiting for a job that no submit has claimed

    def submit(
        self, fn: Callable[[], Any], done: Callable[[Any, BaseException | None], None]
    ) -> None:
        """Run ``fn()``; then ``done(value, error)``, once the thread is idle
        again (so a call made in response reuses it)."""
        with self._lock:
            claimed = self._idle > 0
            if claimed:
                self._idle -= 1
        if claimed:
            self._queue.put((fn, done))
        else:
            threading.Thread(
                target=self._work, args=((fn, done),), name="dsh-mcp-call", daemon=True
            ).start()

    def _work(
        self, item: tuple[Callable[[], Any], Callable[[Any, BaseException | None], None]]
    ) -> None:
        while True:
            fn, done = item
            value: Any = None
            error: BaseException | None = None
            try:
                value = fn()
            except BaseException as e:  # noqa: BLE001 - handed to the caller
                error = e
            with self._lock:
                self._idle += 1
            done(value, error)
            del fn, done, value, error
            while True:
                try:
                    item = self._queue.get(timeout=self.IDLE_EXIT_S)
                    break
                except queue.Empty:
                    with self._lock:
                        if self._idle > 0:  # nobody claimed us: leave
                            self._idle -= 1
                            return
                    # a submit claimed us just now: its job is on the way


_WORKERS = _Workers()


async def run_blocking(fn: Callable[[], T]) -> T:
    """Run ``fn`` on a worker thread and await its result. Cancelling the
    awaiting task returns at once; the call finishes on its own."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def deliver(value: Any, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def done(value: Any, error: BaseException | None) -> None:
        if loop.is_closed():
            return  # the server stopped: nobody waits for this call any more
        try:
            loop.call_soon_threadsafe(deliver, value, error)
        except RuntimeError:
            # closed between the check and the call (the same case)
            return

    _WORKERS.submit(fn, done)
    return await future


__all__ = ["run_blocking"]
