"""Every state a job can be in × every transport × interrupt, close and
wait (issue 32 §1): each case settles to the state docs/remote.md
("Job states × transports") names, within a deadline, and then the next
command runs, or, after close, nothing of the terminal is left running.

States: a running command; a prompt (``read -p``); a secret prompt
(``read -s``); a screen program in the alternate screen reading keys in
cbreak mode; a command stopped by SIGTSTP (bash reports it ``Stopped`` and
goes on: the job settles with 148 and the stopped process stays in the
shell's job table, as at a prompt). Transports: the local engine,
``cmd:`` (a local bash through the in-band transport, no side channel),
ssh to the real test sshd and a real podman container. Everything goes
through the tools dispatcher, as an agent's calls do."""

from __future__ import annotations

import shlex
import shutil
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from dsh_magics.terminal import Registry
from dsh_magics.tools import dispatch
from tests.conftest import pids_with_env, wait_until

DEADLINE_S = 20.0  # a healthy case settles in milliseconds; only a stuck one nears it

# A full-screen program: the alternate screen, cbreak mode (keys one by one,
# no echo, Ctrl-C still a signal), one key read; on SIGINT it restores the
# terminal, leaves the alternate screen and ends by the signal, as well-kept
# screen programs do.
SCREEN = r"""
import os, signal, sys, termios, tty
fd = sys.stdin.fileno()
old = termios.tcgetattr(fd)
def leave(signo, frame):
    termios.tcsetattr(fd, termios.TCSAFLUSH, old)
    os.write(1, b"\x1b[?1049l")
    signal.signal(signo, signal.SIG_DFL)
    os.kill(os.getpid(), signo)
signal.signal(signal.SIGINT, leave)
tty.setcbreak(fd)
os.write(1, b"\x1b[?1049h\x1b[HSCREEN-UP")
os.read(fd, 1)
"""
STOP = "python3 -c 'import os, signal; print(\"stopping\", flush=True); os.kill(os.getpid(), signal.SIGTSTP)'"

STATES = ["running", "awaiting", "secret", "screen", "stopped"]
TRANSPORTS = ["local", "cmd", "ssh", "podman"]
OPS = ["interrupt", "close", "wait"]


@dataclass
class Agent:
    """One agent's session on one transport, through the tools dispatcher."""

    reg: Registry
    session: str
    transport: str

    def __call__(self, name: str, args: dict | None = None) -> dict:
        return dispatch.call(name, args or {}, caller_session=self.session, registry=self.reg)

    @property
    def sees_prompts(self) -> bool:
        """A side channel looks at the terminal (not ``cmd:`` without ``--probe=``)."""
        return self.transport != "cmd"

    def output(self, job: str) -> str:
        return self("bash_wait", {"job_id": job, "timeout_ms": 0, "on_input": False})["output"]


@pytest.fixture(params=TRANSPORTS)
def agent(request: pytest.FixtureRequest, sshd) -> Iterator[Agent]:
    kind = request.param
    target = {
        "local": lambda: None,
        "cmd": lambda: f"cmd:{shutil.which('bash')} --noprofile --norc -i",
        "ssh": lambda: sshd.target,
        "podman": lambda: request.getfixturevalue("podman_box").target,
    }[kind]()
    reg = Registry(login=False)
    a = Agent(reg, f"mx-{kind}-{uuid.uuid4().hex[:8]}", kind)
    opened = a("bash_attach", {"target": target} if target else {})
    assert "error" not in opened, opened
    yield a
    reg.close_all()
    wait_until(lambda: not pids_with_env("DSH_MAGICS_SESSION", a.session), timeout=DEADLINE_S,
               msg="processes of the terminal outlived close_all")


def _in_state(a: Agent, state: str) -> str:
    """Start a job and wait until it is in ``state``; returns its id."""
    command, tty = {
        "running": ("echo started; sleep 60", False),
        "awaiting": ("read -p 'Name: ' n; echo \"got $n\"", True),
        "secret": ("read -s -p 'Password: ' pw; echo; echo got", True),
        "screen": (f"python3 -c {shlex.quote(SCREEN)}", True),
        "stopped": (STOP, True),
    }[state]
    job = a("bash_exec", {"command": command, "tty": tty})["job_id"]
    shown: dict[str, Callable[[], bool]] = {
        # (its sleep seen exec-ed, on this machine's /proc, which shows the
        # container's processes too: over cmd:, with no side channel, a press
        # that lands before that can be lost, as docs/remote.md says)
        "running": lambda: "started" in a.output(job) and _launched(a.session, "sleep"),
        "awaiting": lambda: "Name: " in a.output(job),
        "secret": lambda: "Password: " in a.output(job),
        "screen": lambda: a("bash_screen")["alt_screen"] and "SCREEN-UP" in a("bash_screen")["lines"][0],
        "stopped": lambda: a("bash_wait", {"job_id": job, "timeout_ms": 0})["status"] != "running",
    }
    wait_until(shown[state], timeout=DEADLINE_S, msg=f"the job did not reach {state}")
    if state in ("awaiting", "secret", "screen") and a.sees_prompts:
        wait_until(lambda: a("bash_list")["terminals"][0].get("awaiting_input") is not None,
                   timeout=DEADLINE_S, msg="not seen awaiting input")
    return job


def _launched(session: str, comm: str) -> bool:
    for pid in pids_with_env("DSH_MAGICS_SESSION", session):
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() == comm:
                    return True
        except OSError:
            pass
    return False


def _next_command_runs(a: Agent) -> None:
    res = a("bash_exec", {"command": "echo next", "wait_ms": int(DEADLINE_S * 1000)})
    assert res.get("status") == "completed" and res["output"] == "next\n", res


def _settled(a: Agent, job: str) -> dict:
    res = a("bash_wait", {"job_id": job, "timeout_ms": int(DEADLINE_S * 1000)})
    assert res["status"] != "running", f"not settled within {DEADLINE_S}s: {res}"
    return res


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("state", STATES)
def test_job_state_settles(agent: Agent, state: str, op: str) -> None:
    a = agent
    job = _in_state(a, state)
    if state == "stopped":
        res = _settled(a, job)
        assert res["status"] == "completed" and res["exit_code"] == 148 and "Stopped" in res["output"], res
    if op == "interrupt":
        got = a("bash_interrupt")
        if state == "stopped":  # nothing runs: the stopped process is a job of the shell's, not ours
            assert got["interrupted"] is False, got
        else:
            assert got == {"session_id": a.session, "interrupted": True, "job_id": job}, got
            res = _settled(a, job)
            assert res["status"] == "interrupted" and res["exit_code"] == 130, res
            assert "awaiting_input" not in res and "got" not in res["output"], res
        if state == "screen":
            assert a("bash_screen")["alt_screen"] is False
        _next_command_runs(a)
    elif op == "close":
        closed = a("bash_close")
        assert "error" not in closed, closed
        if state != "stopped":
            res = _settled(a, job)
            assert res["status"] == "shell_exited" and res["note"].startswith("terminal closed"), res
        wait_until(lambda: not pids_with_env("DSH_MAGICS_SESSION", a.session), timeout=DEADLINE_S,
                   msg=f"processes of the terminal outlived close ({state})")
    else:
        res = a("bash_wait", {"job_id": job, "timeout_ms": 300})
        if state == "stopped":
            assert res["status"] == "completed" and res["exit_code"] == 148, res
        elif state == "running" or not a.sees_prompts:
            # nothing to see (or, over cmd:, nothing can be seen): the wait times out
            assert res["status"] == "running" and res["reason"] == "timeout" and res["timed_out"], res
            assert "awaiting_input" not in res
        else:
            assert res["status"] == "running" and res["reason"] == "awaiting_input", res
            assert res["awaiting_input"]["secret"] is (state == "secret"), res
        if state != "stopped":  # the wait left the job as it was: it still ends on a Ctrl-C
            assert a("bash_interrupt")["interrupted"] is True
            assert _settled(a, job)["status"] == "interrupted"
        _next_command_runs(a)
