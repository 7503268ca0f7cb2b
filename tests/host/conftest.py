"""Fixtures for the host tests: private runtime directories (short paths, a
Unix socket path must fit in 108 bytes), hosts that are always stopped, and
process checks with ps."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from dsh_magics.host import HostClient, HostPaths, stop_host
from dsh_magics.host.runtime import list_names
from dsh_magics.host.server import HostServer
from dsh_magics.terminal import Registry

from ..conftest import live_pids, pids_with_env, wait_until  # noqa: F401


def new_dir() -> str:
    d = tempfile.mkdtemp(prefix="dshh-", dir="/tmp")
    os.chmod(d, 0o700)
    return d


def host_pids(directory: str, with_reapers: bool = False) -> list[int]:
    """Live host processes serving from ``directory`` (found by argv), and
    optionally their reapers (the parent of each host)."""
    out = subprocess.run(["ps", "-ww", "-eo", "pid,ppid,stat,args"], capture_output=True, text=True, check=True)
    pids: list[int] = []
    rows = [line.split(None, 3) for line in out.stdout.splitlines()[1:]]
    for pid, _ppid, stat, args in rows:
        if "dsh_magics.host serve" in args and f"--dir {directory}" in args and not stat.startswith("Z"):
            pids.append(int(pid))
    if with_reapers:
        parents = {int(ppid) for pid, ppid, stat, args in rows if int(pid) in pids}
        for pid, _ppid, stat, args in rows:
            if "dsh_magics.host reap" in args and int(pid) in parents and not stat.startswith("Z"):
                pids.append(int(pid))
    return pids


def stop_everything(directory: str) -> None:
    for name in list_names(directory):
        try:
            stop_host(HostPaths.for_name(name, directory), timeout=20)
        except Exception:  # noqa: BLE001 - fall through to the kill below
            pass
    for pid in host_pids(directory, with_reapers=True):
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    wait_until(lambda: not host_pids(directory), timeout=15, msg="host processes still alive")


@pytest.fixture(scope="module", autouse=True)
def _plain_shells() -> Iterator[None]:
    """Shells started by these tests, also in hosts (they inherit our
    environment), run without the login profile: a profile here takes ~1 s
    per shell, and the engine's own tests cover login shells. Module-scoped,
    so the setting never leaks into other test directories; the contract
    suite imports it too."""
    old = os.environ.get("DSH_MAGICS_LOGIN")
    os.environ["DSH_MAGICS_LOGIN"] = "0"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("DSH_MAGICS_LOGIN", None)
        else:
            os.environ["DSH_MAGICS_LOGIN"] = old


@contextmanager
def private_host_dir() -> Iterator[str]:
    """A private runtime directory for hosts; afterwards every host serving from
    it is stopped (killed if it must be) and the directory removed."""
    d = new_dir()
    try:
        yield d
    finally:
        stop_everything(d)
        shutil.rmtree(d, ignore_errors=True)


@contextmanager
def served_host(directory: str, name: str, registry: Registry | None = None) -> Iterator[tuple[HostServer, HostClient]]:
    """A host served from a thread of this process (its registry, hooks and
    descriptors are the test's to change and count; ``registry`` defaults to a
    plain one), and a client of it that never starts one. Afterwards its
    terminals are closed, the client detached and the server stopped: its
    thread must end."""
    paths = HostPaths.for_name(name, directory)
    server = HostServer(paths, registry=registry if registry is not None else Registry(login=False))
    server.bind()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    client = HostClient(paths, autostart=False)
    try:
        yield server, client
    finally:
        client.close_all()
        client.detach()
        server.stop("test over")
        thread.join(30)
        assert not thread.is_alive()


@pytest.fixture
def host_dir() -> Iterator[str]:
    with private_host_dir() as d:
        yield d


@pytest.fixture(scope="module")
def module_dir() -> Iterator[str]:
    with private_host_dir() as d:
        yield d


@pytest.fixture(scope="module")
def client(module_dir: str) -> Iterator[HostClient]:
    """One host for a whole module (starting one costs ~0.3 s)."""
    c = HostClient(HostPaths.for_name("api", module_dir))
    c.connect()
    try:
        yield c
    finally:
        c.detach()


def python_child(code: str, **kwargs: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,  # type: ignore[arg-type]
    )
