"""One Ctrl-C is one SIGINT, also right after a job's first output line.

A program that catches SIGINT counts every one it gets. Pressed the moment
its first line appears, a Ctrl-C may fall while the engine cannot yet prove
the signal landed; the engine sends a second one only when no member of the
foreground group can have caught the first (issue 21, section 3). N presses,
each after the last catch was printed, must give exactly N catches, as at a
real terminal (the next press waits until the program is back in its loop:
signals that arrive while a handler still runs are merged). Each program keeps running a moment (its ``sleep 0.1`` loop is
the workload) after the last catch, so a stray second SIGINT would show.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dsh_magics.terminal import Registry

from .conftest import wait_for_output

PRESSES = 3
ROUNDS = 8

# The script waits with the builtin ``read -t`` on a FIFO nobody writes, not
# with ``sleep``: a SIGINT that lands while bash 5.2 forks ``sleep`` can kill
# the un-exec-ed child and leave the script's bash spinning with SIGINT and
# SIGCHLD blocked (seen once in about 300 runs under load, from /proc at the
# moment of failure: the script ``R`` with SigBlk and ShdPnd 0x10002, its
# child a ``bash`` zombie killed by SIGINT; the CI failure of this case). That
# hang is bash's, with one SIGINT sent, and is not what this test is about.
BASH_TRAP = f"""\
n=0
trap 'n=$((n+1)); echo caught-$n' INT
exec 3<>"$1"
echo first
while [ "$n" -lt {PRESSES} ]; do read -t 0.1 -u 3 _; echo "ready-$n"; done
for i in 1 2 3 4 5; do read -t 0.1 -u 3 _; done
echo done
"""

PY_HANDLER = f"""\
import signal, time
n = 0
def caught(signo, frame):
    global n
    n += 1
    print(f"caught-{{n}}", flush=True)
signal.signal(signal.SIGINT, caught)
print("first", flush=True)
while n < {PRESSES}:
    time.sleep(0.1)
    print(f"ready-{{n}}", flush=True)
for _ in range(5):
    time.sleep(0.1)
print("done", flush=True)
"""


@pytest.fixture
def programs(tmp_path: Path) -> dict[str, str]:
    script = tmp_path / "trap.sh"
    script.write_text(BASH_TRAP)
    never = tmp_path / "never"  # a FIFO nothing writes: the script's builtin delay
    os.mkfifo(never)
    prog = tmp_path / "handler.py"
    prog.write_text(PY_HANDLER)
    return {
        "bash-trap": f"bash {script} {never}",
        "python-handler": f"python3 {prog}",
        # cat ignores SIGINT (inherited from the subshell), as the program's reader.
        # The first stage is the Python program. With the bash script there,
        # 2 of about 12 runs under load lost the first catch (not pinned down;
        # the press may land while the script forks its next ``sleep``).
        "pipeline": f"python3 -u {prog} | (trap '' INT; cat)",
    }


@pytest.mark.parametrize("name", ["bash-trap", "python-handler", "pipeline"])
def test_n_presses_give_n_catches(reliability_reg: Registry, programs: dict[str, str], name: str) -> None:
    reg = reliability_reg
    for r in range(ROUNDS):
        job = reg.exec("ctrl-c", programs[name])
        wait_for_output(reg, job.id, "first\n")  # the whole line: the print is done
        for k in range(1, PRESSES + 1):
            assert reg.interrupt("ctrl-c") is job, (r, k)
            wait_for_output(reg, job.id, f"caught-{k}\n")
            if k < PRESSES:
                # Back in its loop: a signal while bash still runs the trap
                # for the last one is merged with it, as at any terminal.
                wait_for_output(reg, job.id, f"ready-{k}\n")
        res = reg.wait(job.id, timeout=20)
        assert res.status == "completed" and res.exit_code == 0, (r, res.to_dict())
        caught = [ln for ln in res.output.splitlines() if ln.startswith("caught-")]
        assert caught == [f"caught-{k}" for k in range(1, PRESSES + 1)], (r, res.output)
