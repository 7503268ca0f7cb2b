"""How a host starts, ends and is replaced: following the server's life,
crash recovery, stale sockets, one host for racing starters, stop."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time

import pytest

from dsh_magics.errors import HostUnavailable
from dsh_magics.host import HOST_GONE_NOTE, HostClient, HostPaths, probe, stop_host
from dsh_magics.host.runtime import secure_dir
from dsh_magics.terminal import Result
from dsh_magics.terminal.core.boot import booted
from dsh_magics.terminal.core.procs import alive as _alive
from tests.decoys import imported, plant
from tests.procinfo import ppid

from .conftest import host_pids, pids_with_env, wait_until


def test_host_follows_the_server_it_watches(host_dir: str) -> None:
    """The stand-in server dies: the host closes every terminal (also a
    background child and a running job) and exits."""
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        c = HostClient(HostPaths.for_name(f"jupyter-{server.pid}", host_dir), watch_pid=server.pid)
        hello = c.connect()
        assert hello["watch_pid"] == server.pid
        c.exec("life-watch", "sleep 300 & echo bg", wait_ms=10_000)
        job = c.exec("life-watch", "sleep 200")
        wait_until(lambda: len(pids_with_env("DSH_MAGICS_SESSION", "life-watch")) >= 3, timeout=10)
        server.kill()
        server.wait()
        wait_until(lambda: not _alive(hello["pid"]), timeout=20, msg="host outlived its server")
        wait_until(lambda: not pids_with_env("DSH_MAGICS_SESSION", "life-watch"), timeout=10)
        assert job.wait(10) and job.status == "shell_exited"
        assert not os.path.exists(c.paths.socket)
        c.detach()
    finally:
        server.kill()
        server.wait()


def test_host_exits_at_once_when_its_server_is_already_gone(host_dir: str) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    c = HostClient(HostPaths.for_name("ghost", host_dir), watch_pid=gone.pid)
    with pytest.raises(HostUnavailable, match="did not start"):
        c.connect()
    assert "already gone" in open(c.paths.log).read()
    wait_until(lambda: not host_pids(host_dir, with_reapers=True), timeout=10)


def test_crash_recovery(host_dir: str) -> None:
    paths = HostPaths.for_name("crash", host_dir)
    c = HostClient(paths)
    first = c.connect()
    c.exec("life-crash", "export STATE=old", wait_ms=10_000)
    job = c.exec("life-crash", "sleep 300")
    os.kill(first["pid"], signal.SIGKILL)
    # A job that was waited on settles instead of hanging.
    assert job.wait(10) and job.status == "shell_exited"
    assert "host exited" in (job.result.note or "")
    # The next call says, clearly, that the host and its terminals are gone ...
    with pytest.raises(HostUnavailable) as e:
        c.exec("life-crash", "echo $STATE")
    assert e.value.code == "HOST_UNAVAILABLE" and "lost" in e.value.message
    # ... the one after starts a fresh host and says the shell is fresh.
    r = c.exec("life-crash", 'echo "[$STATE]"', wait_ms=10_000)
    assert isinstance(r, Result) and r.output == "[]\n"
    assert r.fresh_shell and HOST_GONE_NOTE in (r.note or "")
    assert c.host_info()["pid"] != first["pid"] and c.restarts == 1
    r2 = c.exec("life-crash", "true", wait_ms=10_000)
    assert isinstance(r2, Result) and not r2.fresh_shell
    # The old job id is known to be gone, with a message that says why.
    from dsh_magics.errors import NoSuchJob

    with pytest.raises(NoSuchJob, match="exited"):
        c.wait(job.id, timeout=0)
    # Nothing of the killed host's terminal survives it (parent-death signal).
    wait_until(lambda: not [p for p in pids_with_env("DSH_MAGICS_SESSION", "life-crash") if p not in _shells(c)], timeout=10)
    c.detach()


def _shells(c: HostClient) -> set[int]:
    """Processes of the new host's terminal (allowed to live)."""
    out = set()
    for info in c.list():
        if info.pid:
            out.add(info.pid)
    return out


def test_stale_socket_is_replaced(host_dir: str) -> None:
    paths = HostPaths.for_name("stale", host_dir)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(paths.socket)  # bound, never listening, then abandoned
    dead.close()
    with open(paths.info, "w") as f:
        json.dump({"pid": 999999, "instance": "old"}, f)
    assert probe(paths) is None
    c = HostClient(paths)
    hello = c.connect()
    assert hello["instance"] != "old" and paths.read_info()["instance"] == hello["instance"]
    r = c.exec("life-stale", "echo fine", wait_ms=10_000)
    assert isinstance(r, Result) and r.output == "fine\n"
    c.detach()


_RACER = r"""
import sys
from dsh_magics.host import HostClient, HostPaths
paths = HostPaths.for_name("race", sys.argv[1])
sys.stdin.readline()  # start line: all racers go together
c = HostClient(paths)
print(c.connect()["pid"], flush=True)
c.detach()
"""


def test_racing_starters_get_one_host(host_dir: str) -> None:
    racers = [
        subprocess.Popen([sys.executable, "-c", _RACER, host_dir], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    # Every racer is up and blocked on its start line before any is released.
    wait_until(lambda: all(_imported(r.pid) for r in racers), timeout=30)
    for r in racers:
        r.stdin.write("go\n")
        r.stdin.flush()
    pids = {r.communicate(timeout=60)[0].strip() for r in racers}
    assert len(pids) == 1 and pids != {""}, pids
    log = open(os.path.join(host_dir, "race.log")).read()
    assert log.count(" serving ") == 1, log
    assert len(host_pids(host_dir)) == 1


def _imported(pid: int) -> bool:
    # Blocked in read(0) on its start line: the racer is ready.
    try:
        with open(f"/proc/{pid}/wchan") as f:
            wchan = f.read()
        with open(f"/proc/{pid}/syscall") as f:
            syscall = f.read().split()[0]
    except OSError:
        return False
    return syscall == "0" or "pipe" in wchan


def test_stop_closes_terminals_and_removes_files(host_dir: str) -> None:
    paths = HostPaths.for_name("stopme", host_dir)
    c = HostClient(paths)
    hello = c.connect()
    c.exec("life-stop", "sleep 300 &", wait_ms=10_000)
    out = subprocess.run(
        [sys.executable, "-m", "dsh_magics.host", "stop", "--dir", host_dir],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0 and "stopped" in out.stdout, out
    assert not _alive(hello["pid"])
    assert not pids_with_env("DSH_MAGICS_SESSION", "life-stop")
    assert not os.path.exists(paths.socket) and not os.path.exists(paths.info)
    assert stop_host(paths) is None
    c.detach()


def test_cli_start_and_status(host_dir: str) -> None:
    run = [sys.executable, "-m", "dsh_magics.host"]
    out = subprocess.run(run + ["start", "--dir", host_dir, "--name", "cli"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "running" in out.stdout, out
    c = HostClient(HostPaths.for_name("cli", host_dir), autostart=False)
    c.exec("life-cli", "cd /", wait_ms=10_000)
    out = subprocess.run(run + ["status", "--dir", host_dir, "--json"], capture_output=True, text=True, timeout=60)
    status = json.loads(out.stdout)
    assert status[0]["name"] == "cli" and status[0]["running"]
    assert [t["session_id"] for t in status[0]["terminals"]] == ["life-cli"]
    assert status[0]["terminals"][0]["cwd"] == "/"
    out = subprocess.run(run + ["status", "--dir", host_dir], capture_output=True, text=True, timeout=60)
    assert "host cli:" in out.stdout and "life-cli: idle, cwd /" in out.stdout
    c.detach()


def test_join_only_client_reports_a_missing_host(host_dir: str) -> None:
    c = HostClient(HostPaths.for_name("absent", host_dir), autostart=False)
    with pytest.raises(HostUnavailable, match="no terminal host"):
        c.connect()


def test_runtime_dir_must_be_private(tmp_path) -> None:
    d = tmp_path / "open"
    d.mkdir(mode=0o755)
    os.chmod(d, 0o755)
    with pytest.raises(HostUnavailable, match="0700"):
        secure_dir(str(d))
    link = tmp_path / "link"
    link.symlink_to(d)
    with pytest.raises(HostUnavailable, match="symbolic link"):
        secure_dir(str(link))
    fresh = tmp_path / "fresh"
    secure_dir(str(fresh))
    assert stat.S_IMODE(os.stat(fresh).st_mode) == 0o700




def test_dsh_magics_host_subcommand(host_dir: str, capsys) -> None:
    from dsh_magics.cli import main

    assert main(["host", "start", "--dir", host_dir, "--name", "sub"]) == 0
    assert "host sub: running" in capsys.readouterr().out
    assert main(["host", "status", "--dir", host_dir]) == 0
    assert "host sub: pid" in capsys.readouterr().out
    assert main(["host", "stop", "--dir", host_dir, "--name", "sub"]) == 0
    assert "host sub: stopped" in capsys.readouterr().out
    assert main(["host", "status", "--dir", host_dir]) == 0
    assert "no terminal host" in capsys.readouterr().out


def test_host_whose_socket_is_deleted_ends(host_dir: str, monkeypatch) -> None:
    """Deleting the socket makes the host unreachable for good; it notices
    and ends (closing its terminals) instead of lingering forever."""
    monkeypatch.setenv("DSH_MAGICS_HOST_SOCKET_CHECK", "0.2")
    c = HostClient(HostPaths.for_name("unlinked", host_dir))
    hello = c.connect()
    c.exec("life-unlinked", "sleep 300 &", wait_ms=10_000)
    os.unlink(c.paths.socket)
    wait_until(lambda: not _alive(hello["pid"]), timeout=20, msg="host lingered without its socket")
    wait_until(lambda: not pids_with_env("DSH_MAGICS_SESSION", "life-unlinked"), timeout=10)
    assert "removed or replaced" in open(c.paths.log).read()
    c.detach()


def test_a_host_started_among_modules_named_like_standard_ones_runs_ours(host_dir: str, tmp_path, monkeypatch) -> None:
    """A host starts in the user's home; there a ``json.py``, ``signal.py``,
    ``random.py``, ... and a ``dsh_magics/`` of the user's, and on PYTHONPATH
    another ``dsh_magics/``: the host and its orphan sweeper import the
    standard library and this package (no decoy), the host runs a command,
    its terminal sees PYTHONPATH as the user set it, and once the host is
    SIGKILLed its sweeper ends what the terminal left. Started with ``-m``,
    which puts the cwd first, the host died at import: "did not start"."""
    home, pp, used = tmp_path / "home", tmp_path / "pp", tmp_path / "used"
    plant(home, used)
    plant(pp, used, ("dsh_magics/",))
    user_path = os.pathsep.join([str(pp), *filter(None, [os.environ.get("PYTHONPATH")])])
    mark = f"boot-decoys-{os.getpid()}-{time.monotonic_ns()}"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PYTHONPATH", user_path)
    monkeypatch.setenv("DSH_TEST_MARK", mark)
    c = HostClient(HostPaths.for_name("decoys", host_dir))
    try:
        hello = c.connect()
        r = c.exec("life-decoys", 'echo "$PYTHONPATH"; nohup sleep 300 >/dev/null 2>&1 & echo up', wait_ms=20_000)
        assert isinstance(r, Result) and r.output.startswith(f"{user_path}\n") and r.output.endswith("up\n"), r
        host = hello["pid"]
        sweeper = ppid(host)
        assert sweeper is not None
        with open(f"/proc/{sweeper}/cmdline", "rb") as f:
            assert booted(f.read()) == [b"dsh_magics.host", b"reap", b"--pid", str(host).encode()]
        assert os.readlink(f"/proc/{host}/cwd") == os.readlink(f"/proc/{sweeper}/cwd") == str(home)
        os.kill(host, signal.SIGKILL)
        wait_until(lambda: not _alive(sweeper), timeout=60, msg="the host's sweeper ended")
        wait_until(lambda: pids_with_env("DSH_TEST_MARK", mark) == [], timeout=10, msg="the sweeper ended the terminal's sleep")
        assert imported(used) == []
    finally:
        c.detach()
        for left in pids_with_env("DSH_TEST_MARK", mark):  # (a failed run's)
            with contextlib.suppress(OSError):
                os.kill(left, signal.SIGKILL)


def test_an_installed_copy_runs_the_standard_library_in_its_host(host_dir: str, tmp_path) -> None:
    """A copy installed in a site directory (here the user's, under
    PYTHONUSERBASE) starts a host that runs that copy and the standard
    library, though a module beside the package is named like a standard one
    (enum34's ``enum``; here a ``json``, which the host imports). The host's
    environment put the package's directory first on PYTHONPATH, where that
    module shadowed the standard library and the host died at import."""
    import shutil
    import site
    import textwrap

    if not site.ENABLE_USER_SITE:  # (a venv without the system's site-packages, python -s, PYTHONNOUSERSITE)
        pytest.skip("this interpreter has no user site directory to install the copy in")
    base = tmp_path / "userbase"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONUSERBASE"] = str(base)
    where = subprocess.run(
        [sys.executable, "-c", "import site; print(site.getusersitepackages())"], env=env, capture_output=True, text=True
    ).stdout.strip()
    assert where.startswith(str(base))
    user_site = os.path.realpath(where)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__import__("dsh_magics").__file__)))
    shutil.copytree(os.path.join(root, "dsh_magics"), os.path.join(user_site, "dsh_magics"),
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    with open(os.path.join(user_site, "json.py"), "w") as f:
        f.write("raise SystemExit(7)  # (not the standard library's)\n")
    code = textwrap.dedent(
        """
        import sys
        from dsh_magics.host import HostClient, HostPaths
        c = HostClient(HostPaths.for_name("installed", sys.argv[1]))
        pid = c.connect()["pid"]
        print(c.exec("life-installed", "echo up", wait_ms=20_000).output.strip(), pid, flush=True)
        c.detach()
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code, host_dir], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, (out.stdout, out.stderr)
    up, pid = out.stdout.split()
    assert up == "up"
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        argv = f.read().split(b"\0")
    assert os.path.realpath(os.fsdecode(argv[4])) == user_site  # (the installed copy runs: its boot's root)
