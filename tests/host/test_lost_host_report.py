"""A host lost under a waiting call: HostClient reports it once, as
HOST_UNAVAILABLE, to the call that was waiting (however the loss reached
it), and NO_SUCH_JOB to later lookups of the job (issue 33, §4)."""

from __future__ import annotations

import os
import signal
import threading
from typing import Any

import pytest

from dsh_magics import tools
from dsh_magics.errors import DshError, NoSuchJob
from dsh_magics.host import HostClient, HostPaths
from dsh_magics.mcp.calls import lost_under_exec

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


def test_a_host_lost_between_an_exec_start_and_its_wait_is_host_unavailable(host_dir: str) -> None:
    """The MCP server runs a long bash_exec as a start and a bash_wait
    (dsh_magics/mcp/calls.py). A host lost in between, its loss seen before
    the wait begins, is still lost under that one call: HOST_UNAVAILABLE,
    not the NO_SUCH_JOB a later lookup gets (failed CI once: the host was
    killed within the first INLINE_MS)."""
    c = HostClient(HostPaths.for_name("lost-gap", host_dir))
    hello = c.connect()
    started = tools.call("bash_exec", {"command": "sleep 300"}, caller_session="lost-gap", registry=c)
    assert started["status"] == "running", started
    lost = threading.Event()
    unsubscribe = c.subscribe(lambda event: lost.set() if event.get("type") == "host" else None)
    os.kill(hello["pid"], signal.SIGKILL)
    wait_until(lost.is_set, 30, msg="the client never saw the host go")
    unsubscribe()
    # another caller takes the loss's one report (as in the MCP server, whose
    # other work may look first); the lookups after it meet a fresh host
    with pytest.raises(DshError, match="gone|unavailable"):
        c.exists("lost-gap")
    args = {"job_id": started["job_id"], "session_id": "lost-gap", "timeout_ms": 10_000}
    waited = tools.call("bash_wait", args, caller_session="lost-gap", registry=c)
    assert waited["error"]["code"] == "NO_SUCH_JOB" and waited["error"]["details"]["host_lost"] is True
    reported = lost_under_exec(waited)["error"]
    assert reported["code"] == "HOST_UNAVAILABLE" and "is gone" in reported["message"], reported
    # anything else passes through unchanged
    other = tools.call("bash_wait", {"job_id": "bash-" + "0" * 32}, caller_session="lost-gap", registry=c)
    assert lost_under_exec(other) is other and other["error"]["code"] == "NO_SUCH_JOB"
    c.detach()
