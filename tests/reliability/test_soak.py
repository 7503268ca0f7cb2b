"""Soak: 5,000 sequential jobs on one terminal, then count what leaked.

The mix is what an agent produces over a long session: many quick commands,
failures with assorted exit codes, stderr, output without a final newline,
bursts of a few thousand lines, and Ctrl-C on running commands (a child
process and a builtin loop). Every job's status, exit code and output are
checked exactly; afterwards file descriptors, temp files, zombies and RSS are
compared with a baseline taken after a warm-up.
"""

from __future__ import annotations

import gc
import os
from collections import Counter
from pathlib import Path

import pytest

from dsh_magics.terminal import Registry

from .conftest import (
    JOB_DEADLINE_S,
    engine_tmpdirs,
    fd_count,
    rss_bytes,
    run,
    wait_for_output,
    wait_until,
    zombie_children,
)

JOBS = 5000
WARMUP = 200
RSS_LIMIT = 20 * 1024 * 1024
SESSION = "soak"


def _expect_interrupted(reg: Registry, command: str, shown: str) -> None:
    """Start ``command``, wait until it printed ``shown``, press Ctrl-C.

    The commands are chosen so that the output proves the program that must
    receive SIGINT is already in the foreground: ``sh -c '...; exec sleep'``
    prints from the very process that becomes ``sleep``, and a builtin loop
    runs in the shell itself. (Interrupting ``echo x; sleep 30`` right after
    ``x`` races bash's fork; that race has its own test.)
    """
    job = reg.exec(SESSION, command)
    wait_for_output(reg, job.id, shown)
    assert reg.interrupt(SESSION) is job
    res = reg.wait(job.id, timeout=JOB_DEADLINE_S)
    assert res.status == "interrupted" and res.exit_code == 130, res.to_dict()
    # bash ends the line of a job killed by SIGINT with its own newline (the
    # "^C" line a terminal shows); nothing else may appear.
    assert res.output in (shown + "\n", shown + "\n\n"), res.output


def _one_job(reg: Registry, i: int, kinds: Counter[str]) -> None:
    k = i % 20
    if k in (0, 2, 4, 6, 8, 10, 12, 14, 15):
        kinds["quick"] += 1
        res = run(reg, SESSION, f"echo q{i}")
        assert (res.status, res.exit_code, res.output) == ("completed", 0, f"q{i}\n"), res.to_dict()
    elif k in (1, 9):
        kinds["fail"] += 1
        code = i % 254 + 1
        res = run(reg, SESSION, f"echo f{i} >&2; (exit {code})")
        assert (res.status, res.exit_code, res.output) == ("completed", code, f"f{i}\n"), res.to_dict()
    elif k == 3:
        kinds["return"] += 1
        code = (i * 7) % 256
        res = run(reg, SESSION, f"soak_ret() {{ printf 'r{i}'; return {code}; }}; soak_ret")
        assert (res.status, res.exit_code, res.output) == ("completed", code, f"r{i}"), res.to_dict()
    elif k == 5:
        kinds["burst"] += 1
        n = 1500 + i % 1000
        res = run(reg, SESSION, f"seq {i} {i + n - 1}")
        assert res.status == "completed" and res.exit_code == 0, res.to_dict()
        assert res.output == "".join(f"{v}\n" for v in range(i, i + n)), (i, res.output[:80])
    elif k == 7:
        kinds["wide-burst"] += 1
        pad = "z" * 100
        res = run(reg, SESSION, f"seq -f 'w{i}-%g-{pad}' 1 300; false")
        assert res.status == "completed" and res.exit_code == 1, res.to_dict()
        assert res.output == "".join(f"w{i}-{n}-{pad}\n" for n in range(1, 301))
    elif k in (11, 17):
        kinds["interrupt-child"] += 1
        _expect_interrupted(reg, f"sh -c 'echo s{i}; exec sleep 60'", f"s{i}")
    elif k == 13:
        kinds["interrupt-builtin"] += 1
        _expect_interrupted(reg, f"echo b{i}; while :; do :; done", f"b{i}")
    elif k == 16:
        kinds["mixed-streams"] += 1
        res = run(reg, SESSION, f"echo o{i}; echo e{i} >&2; printf 'tail{i}'")
        assert (res.status, res.exit_code, res.output) == ("completed", 0, f"o{i}\ne{i}\ntail{i}"), res.to_dict()
    elif k == 18:
        kinds["state"] += 1
        res = run(reg, SESSION, "SOAK_N=$((SOAK_N + 1)); echo $SOAK_N")
        assert res.output == f"{kinds['state']}\n", res.to_dict()
    else:
        kinds["multi-line"] += 1
        res = run(reg, SESSION, f"x={i}\nif [ $x -gt 0 ]; then\n  echo m$x\nfi\n")
        assert (res.status, res.exit_code, res.output) == ("completed", 0, f"m{i}\n"), res.to_dict()


def test_soak_5000_jobs_leave_nothing_behind(private_tmp: Path) -> None:
    # The first terminal of a process starts its watchdog, which lives (with
    # its pipe) as long as the process; count fds after that.
    warm = Registry(login=False)
    run(warm, "warm", "true")
    warm.close_all()
    fds_before_terminal = fd_count()
    # Zombies some other test left in this process are not the soak's doing.
    zombies_before = set(zombie_children(os.getpid()))
    reg = Registry(login=False)
    closed = False
    try:
        run(reg, SESSION, "SOAK_N=0")
        kinds: Counter[str] = Counter()
        i = 0
        for i in range(WARMUP):
            _one_job(reg, i, kinds)
        gc.collect()
        fds_open = fd_count()
        rss_open = rss_bytes()
        shell_pid = reg.info(SESSION).pid
        for i in range(WARMUP, JOBS):
            _one_job(reg, i, kinds)
        assert sum(kinds.values()) == JOBS and len(kinds) == 10, kinds

        # Still the same shell, with nothing accumulated around it.
        info = reg.info(SESSION)
        assert info.pid == shell_pid and info.status == "idle"
        assert zombie_children(shell_pid) == []
        assert set(zombie_children(os.getpid())) <= zombies_before
        gc.collect()
        assert fd_count() == fds_open, "file descriptors leaked while jobs ran"
        growth = rss_bytes() - rss_open
        assert growth < RSS_LIMIT, f"RSS grew by {growth / 2**20:.1f} MB over {JOBS - WARMUP} jobs"
        dirs = engine_tmpdirs(private_tmp)
        assert len(dirs) == 1, dirs
        assert set(os.listdir(dirs[0])) <= {"command.sh", "stdout", "traps"}, os.listdir(dirs[0])

        reg.close_all()
        closed = True
        assert engine_tmpdirs(private_tmp) == [], "temp files left after close"
        wait_until(lambda: fd_count() <= fds_before_terminal, 5, msg="fds released after close")
        assert set(zombie_children(os.getpid())) <= zombies_before
        wait_until(lambda: not os.path.exists(f"/proc/{shell_pid}"), 5, msg="shell reaped")
    finally:
        if not closed:
            reg.close_all()


@pytest.mark.parametrize("mode", [["--cmd"], ["--cmd", "--ssh", "--host"]], ids=["in-process", "host-ssh"])
def test_soak_script_smoke_run_leaves_nothing_behind(mode: list[str]) -> None:
    """benchmarks/soak.py (random operations on three terminals, one of them a
    ``cmd:`` remote terminal, every result checked against the model) for a
    few dozen operations, in a process of its own: no violation, nothing left
    running, descriptors and threads flat. Then the same with the terminals
    in a terminal host and one of them over ssh (a private sshd), the host's
    own descriptors and threads flat too. The long runs' figures are in
    benchmarks/README.md."""
    import json
    import random
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    seed = random.randrange(2**32)
    env = dict(os.environ, PYTHONPATH=str(root))
    out = subprocess.run(
        [sys.executable, str(root / "benchmarks" / "soak.py"), "--iterations", "60", *mode, "--json", f"--seed={seed}"],
        capture_output=True, text=True, timeout=600, env=env, cwd=root,
    )  # fmt: skip
    assert out.returncode in (0, 1), f"seed {seed}: {out.stderr[-2000:]}"
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["violations"] == [], f"seed {seed}: {report}"
    assert report["operations"] == 60 and report["processes_left"] == []
    assert report["end"]["fds"] <= report["start"]["fds"] and report["end"]["threads"] <= report["start"]["threads"]
    if "--host" in mode:
        start, end = report["host_start"], report["host_end"]
        assert end["fds"] <= start["fds"] and end["threads"] <= start["threads"], report
