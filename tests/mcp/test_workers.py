"""The server's worker threads: daemon, reused, and never lose a job."""

from __future__ import annotations

import threading

import anyio
import pytest

from dsh_magics.mcp.workers import _Workers, run_blocking

pytestmark = pytest.mark.anyio


def _workers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "dsh-mcp-call"]


async def test_sequential_calls_reuse_one_daemon_thread() -> None:
    before = len(_workers())
    for i in range(20):
        assert await run_blocking(lambda i=i: i * 2) == i * 2
    workers = _workers()
    assert len(workers) <= before + 1 and all(t.daemon for t in workers)
    with pytest.raises(ZeroDivisionError):
        await run_blocking(lambda: 1 / 0)


async def test_concurrent_calls_each_get_a_thread_and_all_finish() -> None:
    gate = threading.Barrier(8, timeout=30)
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            results: list[int] = []

            async def one(i: int) -> None:
                results.append(await run_blocking(lambda: (gate.wait(), i)[1]))

            for i in range(8):
                tg.start_soon(one, i)
    assert sorted(results) == list(range(8))


def test_an_idle_worker_leaves_and_jobs_still_run() -> None:
    from ..conftest import wait_until

    pool = _Workers()
    pool.IDLE_EXIT_S = 0.05
    ran = [threading.Event() for _ in range(3)]
    idle = threading.Event()
    pool.submit(ran[0].set, lambda v, e: idle.set())  # done() runs once the worker is idle
    assert idle.wait(10) and ran[0].is_set()
    wait_until(lambda: pool._idle == 0, 10, msg="the idle worker leaves")
    pool.submit(ran[1].set, lambda v, e: None)
    pool.submit(ran[2].set, lambda v, e: None)
    assert ran[1].wait(10) and ran[2].wait(10)
