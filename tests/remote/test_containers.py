"""``podman://`` and ``docker://`` terminals in a real container: podman with
runc and an image built from this machine's binaries (tests/containers.py).
No Docker daemon runs on the test machines, so ``docker://`` runs through a
``docker`` name for podman put first on PATH for the test (the client argv is
docker's; the engine is the same)."""

from __future__ import annotations

import os
import subprocess

import pytest

from dsh_magics.terminal import INTERRUPTED, Registry
from dsh_magics.terminal.core.procs import alive
from dsh_magics.terminal.remote import dead_owner, parse_target
from tests.conftest import done, wait_until
from tests.containers import PREFIX, RUN_OPTIONS, Box, leftovers, podman, sweep_dead_runs


@pytest.fixture
def reg():
    r = Registry(login=False)
    yield r
    r.close_all()


def _in_box(box: Box) -> list[str]:
    """The container's processes but pid 1 (its ``sleep``) and the ps asking."""
    out = box.exec("ps", "-eo", "pid=,args=").stdout
    return [line.strip() for line in out.splitlines() if line.split()[0] != "1" and "ps -eo" not in line]


def _closes_cleanly(reg: Registry, session: str, box: Box, before: list[str]) -> None:
    """Closing leaves nothing of this terminal in the container. ``before``:
    what ran there before it was attached (the container is shared with the
    contract suite's podman backend, whose terminals may still be open)."""
    pid = reg.info(session).pid
    assert reg.close(session)
    assert pid is not None and not alive(pid), "the local client outlived close()"

    def left() -> list[str]:
        return [p for p in _in_box(box) if p not in before]

    wait_until(lambda: left() == [], timeout=10, msg=f"left in the container: {left()}")


def test_a_podman_terminal_runs_in_the_container(reg, podman_box, tmp_path):
    info = reg.attach("p1", target=podman_box.target, cwd=str(tmp_path))
    assert info.target == podman_box.target and info.cwd == str(tmp_path)
    assert done(reg, "p1", "pwd").output == f"{tmp_path}\n"
    # its own pid namespace: pid 1 is the container's sleep
    assert done(reg, "p1", "tr '\\0' ' ' </proc/1/cmdline").output == "sleep infinity "
    done(reg, "p1", "cd /tmp; X=42")
    res = done(reg, "p1", "echo $PWD $X; (exit 7)")
    assert (res.output, res.exit_code) == ("/tmp 42\n", 7)
    assert reg.info("p1").cwd == "/tmp"


def test_a_podman_job_streams_and_is_interrupted(reg, podman_box):
    before = _in_box(podman_box)
    reg.attach("p2", target=podman_box.target)
    job = reg.exec("p2", "seq 1 3; sleep 30")
    wait_until(lambda: reg.result(job.id).output == "1\n2\n3\n", timeout=20, msg="seq output")
    reg.interrupt("p2")
    res = reg.wait(job.id, timeout=20)
    assert res.status == INTERRUPTED and res.exit_code == 130, res
    assert done(reg, "p2", "echo alive").output == "alive\n"
    _closes_cleanly(reg, "p2", podman_box, before)


def test_a_docker_terminal_through_a_docker_name_for_podman(reg, podman_box, docker_name_for_podman, monkeypatch):
    monkeypatch.setenv("PATH", docker_name_for_podman + os.pathsep + os.environ["PATH"])
    target = f"docker://{podman_box.name}"
    before = _in_box(podman_box)
    info = reg.attach("d1", target=target)
    assert info.target == target
    with open(f"/proc/{info.pid}/cmdline", "rb") as f:
        argv = f.read().split(b"\0")
    # docker's argv, found on PATH, with podman behind the name
    assert argv[0] == os.path.join(docker_name_for_podman, "docker").encode() and argv[1:3] == [b"exec", b"-it"]
    done(reg, "d1", "cd /tmp; Y=docker")
    assert done(reg, "d1", "echo $PWD $Y; tr '\\0' ' ' </proc/1/cmdline").output == "/tmp docker\nsleep infinity "
    job = reg.exec("d1", "sleep 30")
    reg.interrupt("d1")
    assert reg.wait(job.id, timeout=20).status == INTERRUPTED
    _closes_cleanly(reg, "d1", podman_box, before)


def test_a_dead_runs_leftovers_are_swept_and_a_live_runs_kept(podman_box):
    """What an interrupted run leaves (named after its pytest pid, now gone)
    is removed at the next session start; the running session's box stays."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    stale = f"{PREFIX}{gone.pid}-stale"
    podman("tag", podman_box.image, f"localhost/{stale}:1")
    podman("create", "--name", stale, *RUN_OPTIONS, f"localhost/{stale}:1", "sleep", "1")
    assert {stale, f"localhost/{stale}:1"} <= set(leftovers())
    sweep_dead_runs()
    assert not [n for n in leftovers() if stale in n]
    assert podman_box.name in leftovers() and podman_box.image in leftovers()


def _sleeps_in(box: Box) -> list[str]:
    """The container's live (not zombie) ``sleep`` processes but pid 1's."""
    out = box.exec("ps", "-eo", "pid=,stat=,args=").stdout
    return sorted(
        " ".join(p[2:]) for line in out.splitlines() if (p := line.split()) and p[0] != "1" and not p[1].startswith("Z")
        and p[2] == "sleep"
    )  # fmt: skip


def test_the_dead_owner_command_ends_only_the_tokens_processes_in_the_container(podman_box):
    """The command a dead owner's watchdog runs for a container terminal
    (remote/dead_owner.py), on its own: a watchdog that cannot see the
    container's processes (a Docker daemon's, another user's) has only it.
    It ends every process there carrying the token, one that ignores SIGHUP
    too, and nothing else; the token is in its environment, not its argv,
    and without it the command ends nothing."""
    token = f"deadowner{os.getpid()}"
    marked = ["-e", f"DSH_MAGICS_TOKEN={token}"]
    podman("exec", "-d", *marked, podman_box.name, "sleep", "301")
    podman("exec", "-d", *marked, podman_box.name, "sh", "-c", "trap '' HUP; exec sleep 302")
    podman("exec", "-d", podman_box.name, "sleep", "303")  # not the terminal's
    try:
        wait_until(lambda: _sleeps_in(podman_box) == ["sleep 301", "sleep 302", "sleep 303"], 10, msg="sleeps started")
        argv = dead_owner.end_argv(parse_target(podman_box.target), token)
        assert argv is not None and not any(token in a for a in argv)
        assert subprocess.run(argv, capture_output=True, timeout=30).returncode == 0  # (no token: nothing to end)
        assert _sleeps_in(podman_box) == ["sleep 301", "sleep 302", "sleep 303"]
        env = dict(os.environ, **dead_owner.end_env(token))
        assert subprocess.run(argv, env=env, capture_output=True, timeout=30).returncode == 0
        assert _sleeps_in(podman_box) == ["sleep 303"]
    finally:
        script = "ps -eo pid=,args= | while read -r p a; do case $a in 'sleep 30'[123]) kill -9 $p;; esac; done"
        podman_box.exec("sh", "-c", script)
    assert dead_owner.end_argv(parse_target("ssh://h"), token) is None
    assert dead_owner.end_argv(parse_target("kubectl://ns/pod"), token) is None


def test_a_container_terminals_token_is_on_no_argv(reg, podman_box):
    """The container's bash carries the terminal's token (``exec -e
    DSH_MAGICS_TOKEN``), whose value reaches it from the client's
    environment: no process here shows the token in its argv (world-readable
    in ``ps``); it was ``-e DSH_MAGICS_TOKEN=<token>``."""
    reg.attach("tok", target=podman_box.target)
    token = done(reg, "tok", "echo $DSH_MAGICS_TOKEN").output.strip()
    assert len(token) >= 16
    shown = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if token.encode() in f.read():
                    shown.append(entry)
        except OSError:
            continue  # (gone, or not a process)
    assert shown == []
