"""Sixteen terminals (the default ``max_sessions``) busy at once.

Four worker threads each drive four terminals with output-heavy jobs, while a
fifth thread keeps listing and reading every terminal, as a panel widget
would. Every job must come back with exactly its own output: each line names
its session and round, so a byte routed to the wrong terminal or job shows.
Then the seventeenth terminal is refused, and closing everything must leave
no process of any of the sixteen behind.
"""

from __future__ import annotations

import os
import threading

import pytest

from dsh_magics.errors import TooManySessions
from dsh_magics.terminal import Registry, Result
from tests.conftest import live_pids, pids_with_env

from .conftest import engine_tmpdirs, wait_until

TERMINALS = 16
THREADS = 4
ROUNDS = 3
LINES = 2500  # within the ring (4000 lines), so every line is checkable
PAD = "." * 40


def _expected(session: str, rnd: int) -> str:
    return "".join(f"{session}:{rnd}:{n}:{PAD}\n" for n in range(1, LINES + 1))


def test_sixteen_busy_terminals_then_refusal_then_nothing_left(private_tmp) -> None:
    reg = Registry(login=False)
    prefix = f"cc{os.getpid()}-"
    sessions = [f"{prefix}{k:02d}" for k in range(TERMINALS)]
    errors: list[BaseException] = []
    stop = threading.Event()
    try:
        for s in sessions:
            reg.attach(s)
        shell_pids = [reg.info(s).pid for s in sessions]
        assert len(set(shell_pids)) == TERMINALS

        def worker(mine: list[str]) -> None:
            try:
                for rnd in range(ROUNDS):
                    # Start all of this thread's jobs first, so they overlap.
                    started = {
                        s: reg.exec(s, f"seq -f '{s}:{rnd}:%g:{PAD}' 1 {LINES}; echo done-{rnd} >&2")
                        for s in mine
                    }
                    for s, job in started.items():
                        res = reg.wait(job.id, timeout=60)
                        assert isinstance(res, Result) and res.status == "completed", res.to_dict()
                        assert res.exit_code == 0 and res.dropped_lines == 0, res.to_dict()
                        assert res.output == _expected(s, rnd) + f"done-{rnd}\n", f"{s} round {rnd} mixed"
            except BaseException as e:  # noqa: BLE001 - reported by the main thread
                errors.append(e)

        def watcher() -> None:
            try:
                while not stop.is_set():
                    rows = reg.list()
                    assert len(rows) == TERMINALS
                    for row in rows:
                        lines = reg.read(row.session_id, last=5).lines  # complete lines only
                        assert all(line.startswith((row.session_id + ":", "done-", "still", "bg")) for line in lines), lines
            except BaseException as e:  # noqa: BLE001
                errors.append(e)

        per_thread = TERMINALS // THREADS
        workers = [
            threading.Thread(target=worker, args=(sessions[t * per_thread : (t + 1) * per_thread],))
            for t in range(THREADS)
        ]
        w = threading.Thread(target=watcher)
        w.start()
        for t in workers:
            t.start()
        for t in workers:
            t.join(120)
        stop.set()
        w.join(10)
        assert not any(t.is_alive() for t in workers + [w]), "a thread hung"
        assert not errors, errors[0]

        # The seventeenth terminal is refused, with its stable code, and the
        # refusal changes nothing for the sixteen.
        with pytest.raises(TooManySessions) as refused:
            reg.attach(prefix + "17")
        assert refused.value.code == "TOO_MANY_SESSIONS"
        with pytest.raises(TooManySessions):
            reg.exec(prefix + "17", "echo nope")
        assert len(reg.list()) == TERMINALS
        assert all(reg.exec(s, "echo still", wait_ms=20_000).output == "still\n" for s in sessions)
        # Background children too, so "nothing left" means something.
        for s in sessions:
            reg.exec(s, "sleep 300 & echo bg", wait_ms=20_000)
        assert len(pids_with_env("DSH_MAGICS_SESSION", sessions[0])) >= 2
    finally:
        stop.set()
        closed = reg.close_all()
    assert closed == TERMINALS
    wait_until(
        lambda: not any(pids_with_env("DSH_MAGICS_SESSION", s) for s in sessions),
        10,
        msg="every process of the sixteen terminals gone",
    )
    assert not set(shell_pids) & live_pids()
    assert engine_tmpdirs(private_tmp) == []
    assert reg.list() == []
