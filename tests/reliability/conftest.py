"""Shared pieces of the reliability suite: measurement of process resources,
deadline-bound waits on a job's output, and a sandboxed registry.

Every wait here has a deadline, so a regression shows up as a failed
assertion naming what did not happen, never as a hung test run.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh_magics.terminal import Registry, Result
from tests.conftest import wait_until

#: Generous per-job deadline: a healthy job here takes milliseconds, so only a
#: hung or lost job ever gets near it.
JOB_DEADLINE_S = 20.0


def fd_count() -> int:
    """Open file descriptors of this process."""
    return len(os.listdir("/proc/self/fd"))


def rss_bytes() -> int:
    """Resident set size of this process, from /proc (no psutil needed)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def proc_state(pid: int) -> tuple[str, int] | None:
    """(state letter, ppid) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            rest = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return rest[0].decode(), int(rest[1])


def zombie_children(parent: int) -> list[int]:
    """Children of ``parent`` that exited but were never reaped."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = proc_state(int(name))
            if st is not None and st[1] == parent and st[0] == "Z":
                out.append(int(name))
    return out


def children(parent: int, comm: str | None = None) -> list[int]:
    """Live children of ``parent``, optionally only those running ``comm``."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        st = proc_state(int(name))
        if st is None or st[1] != parent or st[0] in ("Z", "X"):
            continue
        if comm is not None:
            try:
                with open(f"/proc/{name}/comm") as f:
                    if f.read().strip() != comm:
                        continue
            except OSError:
                continue
        out.append(int(name))
    return out


def run(reg: Registry, session: str, command: str, timeout_s: float = JOB_DEADLINE_S) -> Result:
    """Run ``command`` to completion within a deadline and return its Result."""
    res = reg.exec(session, command, wait_ms=int(timeout_s * 1000))
    assert isinstance(res, Result), f"job did not settle within {timeout_s}s: {command[:80]!r}"
    return res


def wait_for_output(reg: Registry, job_id: str, text: str, timeout_s: float = 10.0) -> Result:
    """Block (on the engine's output condition, not a poll) until the running
    job's output contains ``text``; returns the snapshot that did."""
    import time

    job = reg.job(job_id)
    deadline = time.monotonic() + timeout_s
    seq = -1
    while True:
        snap = reg.result(job_id)
        if text in snap.output:
            return snap
        assert not job.done, f"job settled before printing {text!r}: {snap.status} {snap.output[-200:]!r}"
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"{text!r} not printed within {timeout_s}s; output so far {snap.output[-200:]!r}"
        seq = reg.wait_output(job.owner, seq, min(remaining, 0.5))


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point every place the engine may put its per-terminal scratch
    directory (a per-user runtime dir, else Python's temp dir) at a private
    directory, so they can be counted exactly even while other test runs
    share /tmp and /dev/shm."""
    base = tmp_path / "engine-tmp"
    base.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(base))
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    return base


def engine_tmpdirs(base: Path) -> list[Path]:
    return sorted(p for p in base.iterdir() if p.name.startswith("dsh-magics-"))


@pytest.fixture
def reliability_reg(private_tmp: Path) -> Iterator[Registry]:
    reg = Registry(login=False)
    yield reg
    reg.close_all()


__all__ = [
    "JOB_DEADLINE_S",
    "children",
    "engine_tmpdirs",
    "fd_count",
    "proc_state",
    "rss_bytes",
    "run",
    "wait_for_output",
    "wait_until",
    "zombie_children",
]
