"""Shared test helpers: deadlines instead of sleeps, process checks with ps."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable

import pytest

from tests.containers import docker_name_for_podman, podman_box  # noqa: F401  (session fixtures)

# Shells in tests start without the machine's login profile unless a test asks
# for one (the engine's own profile tests use a private HOME). A real profile
# makes every shell slower and, worse, can hang: pyenv's rehash in a profile
# waits up to 60 s on a lock file that a shell killed mid-start-up leaves
# behind. Kernels and subprocesses started by tests inherit this.
os.environ.setdefault("DSH_MAGICS_LOGIN", "0")
# Shells that do read a profile (tests of `exec bash -l`, `bash -i`) must not
# wait a minute on such a lock either.
os.environ.setdefault("PYENV_REHASH_TIMEOUT", "1")


def wait_until(pred: Callable[[], object], timeout: float = 10.0, interval: float = 0.01, msg: str = "") -> object:
    """Poll ``pred`` until it returns something truthy or the deadline passes."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"condition not met within {timeout}s {msg}".strip())
        time.sleep(interval)


def ps_lines() -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid,ppid,pgid,stat,args"], capture_output=True, text=True, check=True)
    return out.stdout.splitlines()[1:]


def live_pids() -> set[int]:
    pids = set()
    for line in ps_lines():
        parts = line.split(None, 4)
        if len(parts) >= 4 and not parts[3].startswith("Z"):
            pids.add(int(parts[0]))
    return pids


def pids_with_env(key: str, value: str, *, prefix: bool = False) -> list[int]:
    """Live processes whose environment has key=value (or, with ``prefix``,
    a value starting with it). Ours only: same uid."""
    needle = f"{key}={value}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{name}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        hit = any(v.startswith(needle) for v in env) if prefix else needle in env
        if hit and state not in (b"Z", b"X"):
            found.append(int(name))
    return found


@pytest.fixture
def unique_session(request) -> str:
    return f"t-{request.node.name[:40]}-{os.getpid()}"
