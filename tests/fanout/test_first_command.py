"""What a group's first command costs on each ssh target (issue 35 §5): the terminal opens
its connection and its session, and nothing else. The side channel's session (sshd runs
the user's shell and rc file for it) opens at the first probe, when a job goes quiet;
prompts and secret prompts are then seen as before."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from dsh_magics.terminal.core.procs import alive
from tests.conftest import wait_until
from tests.remote.conftest import connection_processes, open_remote  # noqa: F401 - fixtures

ROOT = Path(__file__).resolve().parents[2]


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



# A new process runs a group's first command on two terminals whose output is
# plain, then looks at one terminal's screen.
FIRST_IN_A_NEW_PROCESS = """
import sys
from dsh_magics import fanout
from dsh_magics.terminal import Registry, TerminalConfig
reg = Registry(TerminalConfig(login=False, max_sessions=4))
try:
    targets = ["cmd:bash --noprofile --norc -i", "cmd:bash --noprofile --norc -i -c 'exec bash -i'"]
    group = fanout.start(reg, targets, "echo plain", book=fanout.GroupBook({}, []))
    assert group.wait(timeout_ms=60_000)
    assert fanout.report(group).counts() == {"completed": 2}, fanout.report(group).table()
    print("after the group:", "pyghostty" in sys.modules)
    screen = reg.screen(group.runs[0].member.session_id)
    print("after a look:", "pyghostty" in sys.modules, "plain" in "\\n".join(screen["lines"]))
finally:
    reg.close_all()
"""


def test_a_first_command_with_plain_output_loads_no_screen_emulator() -> None:
    """The emulator's binding parses its C declarations on first import
    (about 0.16 s of CPU, on the first terminal of every new process): a
    group whose output nobody looks at never needs it; a look loads it and
    shows the output."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", FIRST_IN_A_NEW_PROCESS], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["after the group: False", "after a look: True True"], done.stdout
