"""What a terminal leaves on disk when its Python process goes away.

Each case runs a real interpreter that opens a terminal and then ends: in
order (``atexit``), by ``os._exit`` (what ipykernel does when its server
vanishes), or killed. Afterwards no process may carry the terminal's marker
and no per-terminal scratch directory may remain. The scratch base is a
private directory, so other test runs on the machine cannot interfere.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dsh_magics.terminal.core import procs
from tests.conftest import pids_with_env

from .conftest import proc_state, wait_until

ENDINGS = {
    "default-registry-atexit": "pass",
    "own-registry-never-closed": "pass",
    "os._exit": "os._exit(0)",
    "SIGKILL": "os.kill(os.getpid(), signal.SIGKILL)",
}

SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, time
    from dsh_magics import terminal
    if sys.argv[2] == "slow-watchdog":
        # A watchdog slow to start (its Popen on a busy machine): the
        # terminal's note reaches it a second after the spawn.
        from dsh_magics.terminal.core import watchdog
        _ensure = watchdog._ensure
        def _late():
            time.sleep(1.0)
            return _ensure()
        watchdog._ensure = _late
    if sys.argv[1] == "own-registry-never-closed":
        reg = terminal.Registry(login=False)
    else:
        reg = terminal.default_registry()
    res = reg.exec("leftovers", "sleep 300 & echo up", wait_ms=20_000)
    assert res.output.endswith("up\\n"), res
    print(os.getpid(), os.listdir(os.environ["XDG_RUNTIME_DIR"]), flush=True)
    {ending}
    """
)

def _watchdogs_of(owner: int) -> list[int]:
    """The owner's watchdog processes (the watchdog names its owner in its argv)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if b"dsh_magics.terminal.core.watchdog" in argv and str(owner).encode() in argv:
                found.append(int(entry))
    return found


@pytest.mark.parametrize(
    "ending,watchdog",
    [
        ("default-registry-atexit", ""),
        ("own-registry-never-closed", ""),
        ("os._exit", ""),
        ("os._exit", "slow-watchdog"),
        ("SIGKILL", ""),
    ],
    ids=lambda v: v or None,
)
def test_nothing_left_when_the_owner_goes(tmp_path: Path, ending: str, watchdog: str) -> None:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    mark = f"leftovers-{os.getpid()}-{ending}"
    env = dict(os.environ, XDG_RUNTIME_DIR=str(runtime), TMPDIR=str(runtime), DSH_TEST_MARK=mark)
    code = SCRIPT.replace("{ending}", ENDINGS[ending])
    proc = subprocess.run(
        [sys.executable, "-c", code, ending, watchdog or "-"], env=env, capture_output=True, text=True, timeout=60
    )
    assert "dsh-magics-" in proc.stdout, (proc.stdout, proc.stderr)  # the terminal was there
    owner = int(proc.stdout.split()[0])
    wait_until(lambda: pids_with_env("DSH_TEST_MARK", mark) == [], 10, msg="every process of the terminal gone")
    # The watchdog removes the scratch directories last, then exits.
    wait_until(lambda: _watchdogs_of(owner) == [], 30, msg="the owner's watchdog finished")
    left = sorted(p.name for p in runtime.iterdir() if p.name.startswith("dsh-magics-"))
    assert left == [], f"scratch dirs left: {left}"


REMOTE_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    from dsh_magics import jobs
    from dsh_magics.terminal.config import TerminalConfig
    from dsh_magics.terminal.remote import RemoteTerminal, parse_target
    config = TerminalConfig(login=False, start_timeout=30.0)
    term = RemoteTerminal("gone", config, parse_target(sys.argv[1]), job_table=jobs.JobTable())
    if not sys.argv[1].startswith("ssh:"):
        # Children that outlive a hang-up, where the shell runs (on this
        # machine for cmd:, in the container): only their token says whose
        # they are. (Over ssh they are the remote host's, as in any session.)
        job = term.exec("nohup sleep 300 >/dev/null 2>&1 & setsid sleep 300 </dev/null >/dev/null 2>&1 & echo up")
        assert job.wait(30) and job.result.output.endswith("up\\n"), term.snapshot(job)
    if term.side is not None:
        # A job at a prompt, seen through the side channel: its session is open too.
        term.exec("read -p 'x? ' x", tty=True)
        while term.info().awaiting_input is None:  # (bounded by the test's timeout)
            term.wait_output(term.output_seq, 1.0)
    print(os.getpid(), term.transport.control_dir, flush=True)
    {ending}
    """
)


@pytest.mark.parametrize("ending", ["SIGKILL", "os._exit"])
@pytest.mark.parametrize("kind", ["ssh", "cmd", "cmd-probe"])
def test_nothing_left_when_a_remote_owner_goes(tmp_path: Path, sshd, kind: str, ending: str) -> None:
    """A remote terminal's owner dies with a job waiting at a prompt: no
    local process of the terminal is left (the ssh clients, the side
    channel's, a ``cmd:`` target's shell and the ``nohup``/``setsid``
    children of its job, which a hang-up does not end), and no private
    directory (an ssh terminal's ``dsh-ssh-*``, with its control socket and
    ssh's log: nothing but the watchdog is left to remove it)."""
    bash = shutil.which("bash")
    target = {
        "ssh": sshd.target,
        "cmd": f"cmd:{bash} --noprofile --norc -i",
        "cmd-probe": f"cmd:--probe=sh {bash} --noprofile --norc -i",
    }[kind]
    control = _remote_owner_dies(tmp_path, target, ending, f"{kind}-{ending}")
    assert (control != "None") == (kind == "ssh")


@pytest.mark.parametrize("ending", ["SIGKILL", "os._exit"])
@pytest.mark.parametrize("engine", ["podman", "docker"])
def test_nothing_left_in_the_container_when_the_owner_goes(tmp_path: Path, podman_box, engine: str, ending: str) -> None:
    """A container terminal's owner dies with a job waiting at a prompt (and
    ``nohup``/``setsid`` children): its exec session does not end with the
    killed client, so the container's bash, and what it started, ran on for
    good. Nothing of it is left, and the watchdog ran the end command
    (remote/dead_owner.py) after the owner was gone: the client is a shim
    first on the owner's PATH that logs each exec, then runs podman (as
    ``docker`` too: docker's argv, podman's engine). Here (rootful podman on
    this machine) the watchdog's own token scan reaches the container's
    processes through /proc first; that the end command ends them on its
    own: tests/remote/test_containers.py::
    test_the_dead_owner_command_ends_only_the_tokens_processes_in_the_container."""
    bin_dir, log = tmp_path / "bin", tmp_path / "execs"
    bin_dir.mkdir()
    shim = bin_dir / engine
    shim.write_text(
        f"#!/bin/sh\ncase \"$*\" in *DSH_MAGICS_END*) w=end;; *) w=client;; esac\n"
        f"{shutil.which('podman')} \"$@\"; s=$?\necho \"$w $s\" >> {log}\nexit $s\n"
    )
    shim.chmod(0o755)
    before = _in_box(podman_box)
    target = f"{engine}://{podman_box.name}"
    _remote_owner_dies(tmp_path, target, ending, f"{engine}-{ending}", path=str(bin_dir))

    def left() -> list[str]:
        return [p for p in _in_box(podman_box) if p not in before]

    wait_until(lambda: left() == [], 10, msg=f"left in the container: {left()}")
    # The terminal's client (and the side channel's probes), then the end
    # command, once, after the owner died and its watchdog had seen EOF.
    execs = log.read_text().splitlines()
    assert execs[-1] == "end 0" and execs.count("end 0") == 1, execs


ORDERLY_SCRIPT = textwrap.dedent(
    """
    import os, sys, time
    from dsh_magics import jobs
    from dsh_magics.terminal.config import TerminalConfig
    from dsh_magics.terminal.core import watchdog
    from dsh_magics.terminal.remote import RemoteTerminal, dead_owner, parse_target
    target, ran = sys.argv[1:3]
    # A stand-in end command per terminal (a cmd: target has none), which
    # records its terminal's name, and a spawner thread slow to run a
    # forget (a busy machine): a close that did not wait for it left it
    # queued when the process exited.
    starting = []
    dead_owner.end_argv = lambda t, token: ["sh", "-c", 'echo "$0" >> "$1"', starting[-1], ran]
    _forget = watchdog.forget
    def _slow(token):
        time.sleep(0.5)
        _forget(token)
    watchdog.forget = _slow
    config = TerminalConfig(login=False, start_timeout=30.0)
    terms = []
    for name in ("one", "two", "three", "open"):
        starting.append(name)
        terms.append(RemoteTerminal(name, config, parse_target(target), job_table=jobs.JobTable()))
    for term in terms[:3]:
        term.close()
    print(os.getpid(), flush=True)
    """
)


def test_an_orderly_close_runs_no_end_command(tmp_path: Path) -> None:
    """Three terminals closed, a fourth left open, then an orderly exit
    (right after the closes): the watchdog runs the open terminal's end
    command only. A close queued its forget on the spawner thread and
    returned; the process exited before the forget ran, and the watchdog
    ended a closed terminal as a dead owner's (for a container: its end
    command, killing what the close left there on purpose)."""
    ran = tmp_path / "ran"
    target = f"cmd:{shutil.which('bash')} --noprofile --norc -i"
    proc = subprocess.run(
        [sys.executable, "-c", ORDERLY_SCRIPT, target, str(ran)], capture_output=True, text=True, timeout=90
    )
    assert proc.stdout.strip().isdigit(), (proc.stdout, proc.stderr)
    owner = int(proc.stdout)
    wait_until(lambda: _watchdogs_of(owner) == [], 60, msg="the owner's watchdog finished")
    assert ran.read_text().split() == ["open"]


def _remote_owner_dies(tmp_path: Path, target: str, ending: str, name: str, path: str | None = None) -> str:
    """Run REMOTE_SCRIPT on ``target`` until its owner ends by ``ending``
    (``path``: a directory first on its PATH);
    wait until no local process of it is left and its watchdog has
    finished, and check that nothing is left in its temp directory. Returns
    the terminal's private directory (``None`` but for ssh)."""
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    mark = f"remote-leftovers-{os.getpid()}-{name}"
    env = dict(os.environ, XDG_RUNTIME_DIR=str(runtime), TMPDIR=str(runtime), DSH_TEST_MARK=mark)
    if path is not None:
        env["PATH"] = path + os.pathsep + env["PATH"]
    code = REMOTE_SCRIPT.replace("{ending}", ENDINGS[ending])
    proc = subprocess.run([sys.executable, "-c", code, target], env=env, capture_output=True, text=True, timeout=90)
    assert len(proc.stdout.split()) == 2, (proc.stdout, proc.stderr)
    owner, control = proc.stdout.split()
    wait_until(lambda: pids_with_env("DSH_TEST_MARK", mark) == [], 10, msg="every local process of the terminal gone")
    wait_until(lambda: _watchdogs_of(int(owner)) == [], 60, msg="the owner's watchdog finished")
    left = sorted(p.name for p in runtime.iterdir())
    assert left == [], f"left in the temp directory: {left}"
    return control


def _in_box(box) -> list[str]:
    """Live processes in the container, as ``pid args``, but its pid 1 and
    the ``ps`` asking (a killed process may stay a zombie there: pid 1 is a
    ``sleep``). Not their state: one that was there before and changed it
    is no leftover."""
    out = box.exec("ps", "-eo", "pid=,stat=,args=").stdout
    return [
        " ".join([pid, *args])
        for pid, stat, *args in (line.split() for line in out.splitlines() if line.strip())
        if pid != "1" and not stat.startswith("Z") and args[:2] != ["ps", "-eo"]
    ]


class _OneLookLate:
    """The process layer, except that its first answer about ``shell``
    being alive is the one of an instant before: the shell exits between
    that look and the next. Everything else is the real layer."""

    def __init__(self, layer: object, shell: int) -> None:
        self._layer, self._shell, self._late = layer, shell, True

    def alive(self, pid: int) -> bool:
        if pid == self._shell and self._late:
            self._late = False
            return True
        return self._layer.alive(pid)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self._layer, name)


def test_a_shell_exiting_during_the_kill_leaves_no_nohup_child(monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel's shells are hung up as its interpreter exits (their
    spawner thread ends) just before its exit step closes them: a close
    that looked while a shell was still alive, then found it gone, took
    nothing and said the tree was empty, and the job's ``nohup`` child
    lived on under init, token and all (1 run in 30 of
    tests/magics/test_kernel_cleanup.py's restart case under two hogs).
    Here the shell really has exited, its child really ignores SIGHUP and
    was really left to init; only the order of the two looks is fixed."""
    token = secrets.token_hex(8)
    env = dict(os.environ, DSH_MAGICS_TOKEN=token)
    shell = subprocess.Popen(
        ["bash", "--norc", "--noprofile", "-c", "nohup sleep 300 >/dev/null 2>&1 & echo $!"],
        env=env, stdout=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    assert shell.stdout is not None
    child = int(shell.stdout.readline())
    try:
        wait_until(lambda: (proc_state(shell.pid) or ("?",))[0] == "Z", 10, msg="the shell exited (unreaped)")
        wait_until(lambda: _comm(child) == "sleep", 10, msg="nohup exec-ed sleep (SIGHUP ignored)")
        assert (proc_state(child) or ("?", 0))[1] != shell.pid  # left to init: no longer in the shell's tree
        monkeypatch.setattr(procs, "LAYER", _OneLookLate(procs.LAYER, shell.pid))
        procs.kill_tree(shell.pid, token)  # ends with SIGKILL, not waiting for it to land
        wait_until(lambda: (proc_state(child) or ("Z",))[0] == "Z", 5, msg=f"the nohup child {child} outlived kill_tree")
    finally:
        if proc_state(child) is not None:
            os.kill(child, signal.SIGKILL)
        shell.wait(10)


def _comm(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return None
