"""What a group's first command costs on each ssh target (issue 35 §5): the terminal opens
its connection and its session, and nothing else. The side channel's session (sshd runs
the user's shell and rc file for it) opens at the first probe, when a job goes quiet;
prompts and secret prompts are then seen as before."""

from __future__ import annotations

from dsh_magics.terminal.core.procs import alive
from tests.conftest import wait_until
from tests.remote.conftest import connection_processes, open_remote  # noqa: F401 - fixtures


def test_the_side_channel_opens_at_its_first_probe(open_remote) -> None:  # noqa: F811
    term = open_remote(session="lazy")
    assert term.side is not None and term.side.pid is None, "no side channel before a probe needs it"
    assert connection_processes(term) == [term.pid]  # the terminal's ssh, the connection's master
    job = term.exec("read -s -p 'Password: ' pw; echo \"len ${#pw}\"", tty=True)
    wait_until(lambda: term.info().awaiting_input is not None or job.done, timeout=60)
    seen = term.info().awaiting_input
    assert seen is not None and seen["secret"] is True, term.snapshot(job)
    assert term.side.pid is not None and alive(term.side.pid) and term.watch.probes >= 1
    assert sorted(connection_processes(term)) == sorted([term.pid, term.side.pid])  # ... and now the side channel's
    term.send("hunter2", secret=True)
    assert job.wait(30) and job.result.output.endswith("len 7\n")

