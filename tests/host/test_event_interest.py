"""The host sends a client without listeners (it subscribed to ``job_done``
alone, for its job stand-ins) only the ``job_done`` events of sessions it
asked about; a client with listeners still gets every event (issue 33, §4;
dsh_magics/host/interest.py). The other client is a separate process: the
host tells clients apart by their peer pid."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from dsh_magics.host import HostClient, HostPaths
from dsh_magics.terminal import Result

from .conftest import wait_until

#: A client process: an event connection subscribed to ``types``, a request
#: connection that asks about session ``filt-a`` only; prints each job_done's
#: session, one per line, until its stdin closes.
CHILD = textwrap.dedent(
    """
    import json, sys, threading
    from dsh_magics.host import protocol as P
    from dsh_magics.host.transport import Link
    sock, types = sys.argv[1], json.loads(sys.argv[2])
    events = Link(sock, 0)
    assert events.call("subscribe", {"types": types})["ok"]
    requests = Link(sock, 0)
    assert requests.call("info", {"session_id": "filt-a"})["ok"]
    def read():
        for line in events.reader:
            if isinstance(line, P.Oversized):
                continue
            msg = json.loads(line)
            event = msg.get("event") if isinstance(msg, dict) else None
            if isinstance(event, dict) and event.get("type") == "job_done":
                print(event["session_id"], flush=True)
    threading.Thread(target=read, daemon=True).start()
    print("ready", flush=True)
    sys.stdin.read()
    """
)


@pytest.mark.parametrize("types, wants_b", [(["job_done"], False), (["job_done", "output"], True)])
def test_a_client_gets_the_job_done_events_of_sessions_it_asked_about(
    host_dir: str, types: list[str], wants_b: bool
) -> None:
    c = HostClient(HostPaths.for_name("interest", host_dir))
    c.connect()
    for sid in ("filt-a", "filt-b"):
        c.attach(sid)
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, c.paths.socket, json.dumps(types)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        # the host has both subscriptions' filters before these jobs start
        first = c.exec("filt-b", "true", wait_ms=10_000)
        second = c.exec("filt-a", "true", wait_ms=10_000)
        assert isinstance(first, Result) and isinstance(second, Result)
        seen: list[str] = []

        def got_a() -> bool:
            assert child.stdout is not None
            seen.append(child.stdout.readline().strip())
            return seen[-1] == "filt-a"

        wait_until(got_a, 20, msg=f"no job_done for filt-a: {seen}")
        # events reach a subscriber in the order they happened: filt-b's came first
        assert seen == (["filt-b", "filt-a"] if wants_b else ["filt-a"])
    finally:
        if child.stdin is not None:
            child.stdin.close()
        child.wait(20)
        c.detach()
