"""A host lost under a waiting call: HostClient reports it once, as
HOST_UNAVAILABLE, to the call that was waiting (however the loss reached
it), and NO_SUCH_JOB to later lookups of the job (issue 33, §4)."""

from __future__ import annotations

import os
import signal
import threading
from typing import Any

import pytest

from dsh_magics.errors import DshError, NoSuchJob
from dsh_magics.host import HostClient, HostPaths

from .conftest import wait_until


@pytest.mark.parametrize("prober", [False, True])
def test_a_wait_under_a_lost_host_is_host_unavailable_then_no_such_job(host_dir: str, prober: bool) -> None:
    """``prober``: another thread keeps looking at the job while the call
    waits (as the MCP server's progress ticker does), so that the loss's
    one report may go to it, and the waiting call meet the fresh host."""
    c = HostClient(HostPaths.for_name("lost-wait", host_dir))
    hello = c.connect()
    job = c.exec("lost-wait", "sleep 300")
    outcome: dict[str, Any] = {}
    stop = threading.Event()

    def waiter() -> None:
        try:
            outcome["result"] = c.wait(job.id, timeout=60, on_input=False)
        except DshError as e:
            outcome["error"] = e

    def probe() -> None:
        while not stop.is_set():
            try:
                c.result(job.id, tail_lines=0)
            except DshError as e:
                outcome.setdefault("probe", e.code)

    threads = [threading.Thread(target=waiter, daemon=True)]
    if prober:
        threads.append(threading.Thread(target=probe, daemon=True))
    for t in threads:
        t.start()
    try:
        wait_until(lambda: c.info("lost-wait").job_id == job.id, 10)
        os.kill(hello["pid"], signal.SIGKILL)
        threads[0].join(30)
        assert not threads[0].is_alive()
    finally:
        stop.set()
    for t in threads[1:]:
        t.join(30)
    assert "result" not in outcome, outcome
    assert outcome["error"].code == "HOST_UNAVAILABLE", outcome["error"]
    assert "gone" in outcome["error"].message
    # later lookups: the job is gone, and says why
    with pytest.raises(NoSuchJob, match="exited"):
        c.wait(job.id, timeout=0)
    c.detach()
