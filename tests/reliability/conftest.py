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
    job's output contains ``text``; returns the snapshot that did. A wait
    that runs out says what the job's processes and the terminal's reader
    were doing at that moment (:func:`terminal_state`)."""
    import time

    job = reg.job(job_id)
    deadline = time.monotonic() + timeout_s
    seq = reg.output_seq(job.owner)  # read before the first look: output after it wakes the wait
    while True:
        snap = reg.result(job_id)
        if text in snap.output:
            return snap
        assert not job.done, f"job settled before printing {text!r}: {snap.status} {snap.output[-200:]!r}"
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            state = terminal_state(reg, job.owner)
            later = reg.result(job_id).output  # caught up meanwhile: the process stalled, not the job
            raise AssertionError(
                f"{text!r} not printed within {timeout_s}s; output so far {snap.output[-200:]!r}; "
                f"a moment later {later[-200:]!r}\n{state}"
            )
        seq = reg.wait_output(job.owner, seq, min(remaining, 0.5))


def _proc_line(pid: int) -> str:
    """One process as /proc tells it: state, group, wait channel, syscall
    and signal masks (what a stuck job is doing)."""

    def read(name: str) -> str:
        try:
            with open(f"/proc/{pid}/{name}", "rb") as f:
                return f.read().decode(errors="replace")
        except OSError:
            return "?"

    status = {k: v.strip() for k, _, v in (ln.partition(":") for ln in read("status").splitlines())}
    masks = " ".join(f"{k}={status.get(k, '?')}" for k in ("SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt"))
    try:
        pgid: int | str = os.getpgid(pid)
    except OSError:
        pgid = "?"
    return (
        f"  {pid} {status.get('Name', '?')} state={status.get('State', '?')} pgid={pgid} "
        f"wchan={read('wchan')} syscall={read('syscall').split(' ', 1)[0].strip()} {masks}"
    )


def terminal_state(reg: Registry, session_id: str) -> str:
    """What a terminal looks like from outside when a wait on it ran out:
    its shell and every process below it (/proc), the terminal's foreground
    group and unread output, and the reader thread's stack."""
    import fcntl
    import struct
    import sys
    import termios
    import threading
    import traceback

    lines = []
    try:
        shell = reg.info(session_id).pid
    except Exception as e:  # noqa: BLE001 - a diagnostic: say what failed
        return f"(no terminal state: {e!r})"
    if shell is not None:
        from dsh_magics.terminal.core.procs import descendants

        for pid in [shell, *descendants(shell)]:
            lines.append(_proc_line(pid))
    transport = getattr(reg._term(session_id), "transport", None)  # diagnostics only
    proc = getattr(transport, "proc", None)
    if proc is not None:
        try:
            unread = struct.unpack("i", fcntl.ioctl(proc.fd, termios.FIONREAD, b"\0\0\0\0"))[0]
            lines.append(f"  terminal: foreground group {os.tcgetpgrp(proc.fd)}, {unread} bytes unread")
        except OSError as e:
            lines.append(f"  terminal: {e!r}")
    frames = sys._current_frames()
    for t in threading.enumerate():
        if t.name == f"dsh-terminal-{session_id}":
            frame = frames.get(t.ident or -1)
            stack = "".join(traceback.format_stack(frame, limit=6)) if frame else "(no frame)\n"
            lines.append(f"  reader thread alive={t.is_alive()}:\n{stack}")
    return "\n".join(lines)


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
    "terminal_state",
    "wait_for_output",
    "wait_until",
    "zombie_children",
]
