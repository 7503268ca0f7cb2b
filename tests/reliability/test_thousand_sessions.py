"""1,000 sessions opened and closed, one after another, in one process
(issue 32, §4): each runs a command whose output is checked, while a
bystander terminal keeps its shell and state throughout. Afterwards nothing
has accumulated: no descriptor, thread, child process, zombie or scratch
directory more than before, memory within a bound, and the session limit
(16) never hit, since a closed session frees its place. Time per session
(the last hundred against the first) is a benchmark figure, not asserted
here: benchmarks/README.md.
"""

from __future__ import annotations

import gc
import os
import threading
from pathlib import Path

from dsh_magics.terminal import Registry
from tests.conftest import pids_with_env

from .conftest import (
    children,
    engine_tmpdirs,
    fd_count,
    rss_bytes,
    run,
    wait_until,
    zombie_children,
)

SESSIONS = 1000
RSS_LIMIT = 20 * 1024 * 1024


def _tasks() -> int:
    """Threads of this process, as the kernel counts them."""
    return len(os.listdir("/proc/self/task"))


def test_a_thousand_sessions_opened_and_closed_leave_nothing(private_tmp: Path) -> None:
    # The first terminal of a process starts its watchdog (a child with a
    # pipe, for the life of the process) and the spawner thread: count after.
    warm = Registry(login=False)
    run(warm, "warm", "true")
    warm.close_all()
    prefix = f"k{os.getpid()}-"
    reg = Registry(login=False)
    try:
        run(reg, prefix + "bystander", "BYSTANDER=kept")
        bystander = reg.info(prefix + "bystander").pid
        gc.collect()
        fds, threads, rss = fd_count(), _tasks(), rss_bytes()
        kids, zombies = set(children(os.getpid())), set(zombie_children(os.getpid()))
        for i in range(SESSIONS):
            session = f"{prefix}{i}"
            res = run(reg, session, f"echo s{i}")
            assert (res.status, res.exit_code, res.output) == ("completed", 0, f"s{i}\n"), res.to_dict()
            assert reg.close(session)
        assert [t.session_id for t in reg.list()] == [prefix + "bystander"]
        info = reg.info(prefix + "bystander")
        assert info.pid == bystander and info.status == "idle"
        assert run(reg, prefix + "bystander", 'echo "$BYSTANDER"').output == "kept\n"

        gc.collect()
        wait_until(lambda: _tasks() <= threads, 10, msg=f"threads: {threads} before, {_tasks()} after")
        wait_until(lambda: fd_count() <= fds, 10, msg=f"descriptors: {fds} before, {fd_count()} after")
        assert set(children(os.getpid())) <= kids, "a closed session's shell is still our child"
        assert set(zombie_children(os.getpid())) <= zombies, "a closed session's shell was never reaped"
        assert len(engine_tmpdirs(private_tmp)) == 1  # the bystander's
        growth = rss_bytes() - rss
        assert growth < RSS_LIMIT, f"RSS grew by {growth / 2**20:.1f} MB over {SESSIONS} sessions"
        assert threading.active_count() <= threads
    finally:
        reg.close_all()
    wait_until(lambda: pids_with_env("DSH_MAGICS_SESSION", prefix, prefix=True) == [], 10, msg="processes left")
    assert engine_tmpdirs(private_tmp) == []
