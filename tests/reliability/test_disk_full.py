"""The disk that holds the terminals' scratch files and the host's directory
is full (issue 32, §4): a real size-limited tmpfs, filled to the last page.

Where the engine puts them by default, ``$XDG_RUNTIME_DIR`` (a small tmpfs
on most systems: ``/run/user/<uid>``), is pointed at that mount. Each case
checks a clear, stable error (``NO_SPACE`` for a command or a terminal,
``HOST_UNAVAILABLE`` naming the cause for a host), that the other terminals
and a running job carry on with their state and output, that everything
works again once there is room, and that nothing is left running or on the
disk (the mount must come off at the end). Mounting needs root: elsewhere
the cases are skipped, saying so.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh_magics import tools
from dsh_magics.errors import HostUnavailable, NoSpace
from dsh_magics.host import HostClient, HostPaths, stop_host
from dsh_magics.terminal import Registry
from tests.conftest import pids_with_env
from tests.host.conftest import host_pids

from .conftest import engine_tmpdirs, run, wait_for_output, wait_until

SIZE = "2m"  # room for a few terminals' scratch files, and quick to fill


class Disk:
    """A tmpfs of :data:`SIZE` at a short path (a host's socket lives there)."""

    def __init__(self) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="dshfull-", dir="/tmp"))
        self.filler = self.path / "filler"
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={SIZE},mode=0700", "tmpfs", str(self.path)],
            capture_output=True, text=True,
        )  # fmt: skip
        if done.returncode != 0:
            self.path.rmdir()
            pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")

    def fill(self) -> None:
        """Write until not one more page fits."""
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            for size in (1 << 16, 1 << 12, 1):
                try:
                    while True:
                        os.write(fd, b"\0" * size)
                except OSError as e:
                    assert e.errno == errno.ENOSPC, e
        finally:
            os.close(fd)

    def free(self) -> None:
        self.filler.unlink()

    def unmount(self) -> None:
        """Unmount; a process still holding a file there (a shell's cwd, a
        host's log) keeps the mount busy: waited for, then a failure."""
        def off() -> bool:
            return subprocess.run(["umount", str(self.path)], capture_output=True).returncode == 0

        try:
            wait_until(off, 10, msg=f"something still holds {self.path}")
        finally:
            if os.path.ismount(self.path):
                subprocess.run(["umount", "-l", str(self.path)], check=False)
            self.path.rmdir()


@pytest.fixture
def disk(monkeypatch: pytest.MonkeyPatch) -> Iterator[Disk]:
    if os.geteuid() != 0:
        pytest.skip("mounting a size-limited tmpfs needs root")
    d = Disk()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(d.path))
    try:
        yield d
    finally:
        d.unmount()


def _session_pids(prefix: str) -> list[int]:
    return pids_with_env("DSH_MAGICS_SESSION", prefix, prefix=True)


def test_a_full_disk_refuses_commands_and_new_terminals_and_the_rest_carries_on(disk: Disk) -> None:
    mark = f"full-{os.getpid()}-"
    reg = Registry(login=False)
    try:
        run(reg, mark + "a", "cd /tmp && KEPT=yes")
        job = reg.exec(mark + "b", "echo early; read -r line < /dev/tty; echo late $line", wait_ms=0, tty=True)
        wait_for_output(reg, job.id, "early\n", 20)
        before = engine_tmpdirs(disk.path)
        assert len(before) == 2

        disk.fill()
        for session in (mark + "a", mark + "c"):  # an open terminal's next command; a new terminal
            with pytest.raises(NoSpace) as err:
                reg.exec(session, "echo never", wait_ms=5000)
            assert err.value.code == "NO_SPACE" and str(disk.path) in err.value.message
        # The agent tool says the same, as its stable code (not an internal ERROR).
        error = tools.call("bash_exec", {"session_id": mark + "a", "command": "echo never"}, registry=reg)["error"]
        assert error["code"] == "NO_SPACE" and str(disk.path) in error["message"]
        assert not reg.exists(mark + "c") and _session_pids(mark + "c") == []  # no shell left of it
        assert engine_tmpdirs(disk.path) == before  # nor its scratch directory
        # The running job carries on: it takes input and ends, nothing it printed lost.
        reg.send(mark + "b", text="typed", enter=True)
        res = reg.wait(job.id, timeout=20)
        assert (res.status, res.exit_code, res.output) == ("completed", 0, "early\ntyped\nlate typed\n")  # the tty echoes
        assert reg.info(mark + "a").status == "idle"

        disk.free()
        assert run(reg, mark + "a", 'echo "$PWD $KEPT"').output == "/tmp yes\n"
        assert run(reg, mark + "c", "echo fresh").output == "fresh\n"
    finally:
        reg.close_all()
    wait_until(lambda: _session_pids(mark) == [], 10, msg="processes of the terminals survived close_all")
    assert engine_tmpdirs(disk.path) == []


def test_a_host_cannot_start_on_a_full_disk_says_why_and_leaves_nothing(disk: Disk) -> None:
    directory = str(disk.path / "host")
    paths = HostPaths.for_name("full", directory)
    disk.fill()
    with pytest.raises(HostUnavailable) as err:
        HostClient(paths).connect()
    assert "No space left on device" in err.value.message and directory in err.value.message
    wait_until(lambda: host_pids(directory) == [], 10, msg="a host that could not start is still running")
    assert sorted(os.listdir(directory)) == []  # no socket, lock, log or half-written info file

    disk.free()
    client = HostClient(paths)
    try:
        client.connect()
        assert run(client, "after", "echo served").output == "served\n"  # type: ignore[arg-type]
    finally:
        client.close_all()
        client.detach()
        stop_host(paths)
    assert sorted(os.listdir(directory)) == []


def test_a_running_host_whose_disk_fills_keeps_its_terminals(disk: Disk) -> None:
    directory = str(disk.path / "host")
    paths = HostPaths.for_name("fills", directory)
    client = HostClient(paths)
    mark = f"hostfull-{os.getpid()}-"
    try:
        client.connect()
        run(client, mark + "a", "cd /tmp && KEPT=yes")  # type: ignore[arg-type]
        disk.fill()
        with pytest.raises(NoSpace) as err:  # the code travels through the host
            client.exec(mark + "a", "echo never", wait_ms=5000)
        assert str(disk.path) in err.value.message
        with pytest.raises(NoSpace):
            client.exec(mark + "new", "echo never", wait_ms=5000)
        assert _session_pids(mark + "new") == []
        assert client.info(mark + "a").status == "idle"
        disk.free()
        assert run(client, mark + "a", 'echo "$PWD $KEPT"').output == "/tmp yes\n"  # type: ignore[arg-type]
    finally:
        client.close_all()
        client.detach()
        stop_host(paths)
    wait_until(lambda: host_pids(directory) == [] and _session_pids(mark) == [], 10, msg="left running")
    shutil.rmtree(directory)
