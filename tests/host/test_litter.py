"""A host that ends normally leaves no file behind; a crashed host's log
stays for diagnosis, and only the newest few such logs are kept."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from dsh_magics.errors import HostUnavailable
from dsh_magics.host import HostClient, HostPaths, stop_host
from dsh_magics.host.runtime import KEEP_CRASH_LOGS, FileLock, prune_logs
from dsh_magics.terminal.core.procs import alive
from tests.procinfo import ppid

from .conftest import host_pids, pids_with_env, wait_until


def _files(d: str) -> list[str]:
    return sorted(os.listdir(d))


def test_a_stopped_host_leaves_nothing(host_dir: str) -> None:
    c = HostClient(HostPaths.for_name("tidy", host_dir))
    c.connect()
    c.exec("litter-stop", "echo hi", wait_ms=10_000)
    assert {"tidy.sock", "tidy.json", "tidy.lock", "tidy.log"} <= set(_files(host_dir))
    c.detach()
    assert stop_host(c.paths) is not None
    wait_until(lambda: not host_pids(host_dir, with_reapers=True), timeout=20)
    assert _files(host_dir) == []


def test_a_host_whose_server_exits_leaves_nothing(host_dir: str) -> None:
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        c = HostClient(HostPaths.for_name(f"jupyter-{server.pid}", host_dir), watch_pid=server.pid)
        hello = c.connect()
        c.exec("litter-watch", "true", wait_ms=10_000)
        server.kill()
        server.wait()
        wait_until(lambda: not host_pids(host_dir, with_reapers=True), timeout=20, msg=str(hello["pid"]))
        wait_until(lambda: _files(host_dir) == [], timeout=5, msg=str(_files(host_dir)))
        c.detach()
    finally:
        server.kill()
        server.wait()


def test_a_crashed_hosts_log_stays_and_the_next_host_starts_a_fresh_one(host_dir: str) -> None:
    paths = HostPaths.for_name("boom", host_dir)
    c = HostClient(paths)
    first = c.connect()
    os.kill(first["pid"], signal.SIGKILL)
    wait_until(lambda: not host_pids(host_dir), timeout=20)
    with pytest.raises(HostUnavailable):
        c.exec("litter-crash", "true")  # says the host is gone
    assert f"serving {paths.socket}" in open(paths.log).read()
    c.exec("litter-crash", "true", wait_ms=10_000)  # a fresh host
    kept = [f for f in _files(host_dir) if f.startswith("boom.") and f.endswith(".log") and f != "boom.log"]
    assert len(kept) == 1, _files(host_dir)
    assert str(first["pid"]) in open(os.path.join(host_dir, kept[0])).read()
    assert str(first["pid"]) not in open(paths.log).read()
    c.detach()
    stop_host(paths)
    wait_until(lambda: not host_pids(host_dir, with_reapers=True), timeout=20)
    assert _files(host_dir) == kept  # the crash log stays; the clean host's files went


def test_only_the_newest_crash_logs_are_kept(host_dir: str) -> None:
    now = time.time()
    names = [f"jupyter-{1000 + i}.log" for i in range(KEEP_CRASH_LOGS + 4)]
    for age, name in enumerate(names):
        path = os.path.join(host_dir, name)
        with open(path, "w") as f:
            f.write("crashed\n")
        os.utime(path, (now - 1000 + age, now - 1000 + age))  # later names are newer
    # Starting a host prunes: the oldest go first.
    c = HostClient(HostPaths.for_name("alive", host_dir))
    c.connect()
    logs = sorted(f for f in _files(host_dir) if f.endswith(".log"))
    assert logs == sorted([*names[4:], "alive.log"])
    # A live host's own log is never pruned, however old.
    os.utime(c.paths.log, (now - 5000, now - 5000))
    assert prune_logs(host_dir) == []
    assert prune_logs(host_dir, keep=1) == [os.path.join(host_dir, n) for n in names[4:-1][::-1]]
    assert os.path.exists(c.paths.log)
    c.detach()
    stop_host(c.paths)


def test_a_starter_waiting_on_a_removed_lock_takes_the_new_one(host_dir: str) -> None:
    path = os.path.join(host_dir, "x.lock")
    held = FileLock(path).acquire()
    got: list[FileLock] = []
    waiter = threading.Thread(target=lambda: got.append(FileLock(path, timeout=20).acquire()))
    waiter.start()
    wait_until(lambda: _open_count(path) >= 2, timeout=10, msg="the waiter never opened the lock file")
    os.unlink(path)  # what a host ending normally does, holding the lock
    held.release()
    waiter.join(20)
    assert got, "the waiter never got a lock"
    assert os.path.samestat(os.fstat(got[0].fd), os.stat(path))
    with pytest.raises(HostUnavailable):
        FileLock(path, timeout=0.2).acquire()  # the waiter holds the real one
    got[0].release()


def _open_count(path: str) -> int:
    """How many of our descriptors are open on the file ``path`` names."""
    st = os.stat(path)
    return sum(_same(f"/proc/self/fd/{fd}", st) for fd in os.listdir("/proc/self/fd"))


def _same(p: str, st: os.stat_result) -> bool:
    try:
        return os.path.samestat(os.stat(p), st)
    except OSError:
        return False


def _args(pid: int) -> str:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().replace(b"\0", b" ").decode(errors="replace")


def test_a_killed_hosts_terminals_leave_no_directory_or_process(host_dir: str, sshd, tmp_path, monkeypatch) -> None:
    """A host SIGKILLed with a local, an ssh and a ``cmd:`` terminal open,
    the local and ``cmd:`` ones with a ``nohup`` child: no process of theirs is left, and no
    private directory (the local scratch, the ssh terminal's ``dsh-ssh-*``).
    Its sweeper ends what is below it; the directories are the watchdog's
    to remove, and the watchdog is below the sweeper too."""
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    mark = f"host-killed-{os.getpid()}-{time.monotonic_ns()}"
    for key in ("XDG_RUNTIME_DIR", "TMPDIR"):
        monkeypatch.setenv(key, str(runtime))
    monkeypatch.setenv("DSH_TEST_MARK", mark)
    c = HostClient(HostPaths.for_name("killed-terminals", host_dir))
    hello = c.connect()
    targets = {"local": None, "ssh": sshd.target, "cmd": "cmd:--probe=sh bash --noprofile --norc -i"}
    try:
        for name, target in targets.items():
            c.attach(f"{mark}-{name}", target=target)
            job = "echo up" if name == "ssh" else "nohup sleep 300 >/dev/null 2>&1 & echo up"  # (sshd's are not ours)
            out = c.exec(f"{mark}-{name}", job, wait_ms=20_000)
            assert out.output.endswith("up\n"), out
        made = sorted(p.name.split("-")[1] for p in runtime.iterdir())
        assert made == ["magics", "ssh"], made
        sweeper = ppid(hello["pid"])  # (host_pids no longer sees it once its host is dead)
        assert sweeper is not None and "dsh_magics.host reap" in _args(sweeper)
        os.kill(hello["pid"], signal.SIGKILL)
        wait_until(lambda: not alive(sweeper), timeout=60, msg="the host's sweeper ended")
        wait_until(lambda: pids_with_env("DSH_TEST_MARK", mark) == [], timeout=10, msg="no process of the terminals left")
        assert sorted(p.name for p in runtime.iterdir()) == []
    finally:
        c.detach()
        for left in pids_with_env("DSH_TEST_MARK", mark):  # (a failed run's)
            with contextlib.suppress(OSError):
                os.kill(left, signal.SIGKILL)
