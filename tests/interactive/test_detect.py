"""Awaiting-input detection from the terminal's own state (no prompt regexes).

Each case runs a real program under a real interactive bash on a real PTY and
looks at the terminal from outside, as the engine does."""

from __future__ import annotations

import os

import pytest
from ptyprocess import PtyProcess

from dsh_magics.terminal import interaction
from dsh_magics.terminal.core import tty_state as I
from dsh_magics.terminal.core.proclayer import use_procfs
from dsh_magics.terminal.core.proclayer.procfs import children
from tests.conftest import wait_until

#: The portable process layer (DSH_MAGICS_PROCFS=0, macOS) sees a blocked
#: ``read`` on the terminal only; a REPL's select/poll/epoll wait is not seen.
needs_select_detection = pytest.mark.skipif(
    not use_procfs(), reason="portable layer: select/poll waits on the terminal are not detected"
)

PY = "python3 -c"


def _type(p: PtyProcess, line: str) -> None:
    os.write(p.fd, line.encode() + b"\n")


def _drain(p: PtyProcess) -> str:
    out = b""
    while True:
        import select

        r, _, _ = select.select([p.fd], [], [], 0)
        if not r:
            return out.decode(errors="replace")
        try:
            out += os.read(p.fd, 65536)
        except OSError:
            return out.decode(errors="replace")


def _blocked_child(p: PtyProcess, name: str) -> int:
    """Wait until a process ``name`` under the shell sleeps in a syscall."""

    def find() -> int | None:
        queue = children(p.pid)
        while queue:
            pid = queue.pop(0)
            queue.extend(children(pid))
            try:
                with open(f"/proc/{pid}/stat") as f:
                    stat = f.read()
                with open(f"/proc/{pid}/comm") as f:
                    comm = f.read().strip()
            except OSError:
                continue
            if comm == name and stat.rsplit(")", 1)[1].split()[0] == "S":
                return pid
        return None

    return wait_until(find, 15, msg=f"{name} blocked")  # type: ignore[return-value]


def _detect(p: PtyProcess, **kw) -> interaction.AwaitingInput | None:
    return I.detect(p.pid, p.fd, "prompt> ", **kw)


@pytest.mark.parametrize(
    "command,name",
    [
        ("sleep 30", "sleep"),
        ("sleep 30 | cat", "cat"),
        (
            f"{PY} 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\",0)); s.listen(); s.accept()'",
            "python3",
        ),
        (
            # select on the terminal *and* a socket: it may be waiting for the network
            f"{PY} 'import socket,select,sys; a,b=socket.socketpair(); select.select([sys.stdin,a],[],[])'",
            "python3",
        ),
        (f"{PY} 'import time; time.sleep(30)' </dev/null", "python3"),
    ],
    ids=["sleep", "cat-pipe", "network", "tty-and-socket", "python-sleep"],
)
def test_quiet_programs_are_not_awaiting_input(bare_bash: PtyProcess, command: str, name: str) -> None:
    _type(bare_bash, command)
    pid = _blocked_child(bare_bash, name)
    # The program is blocked where it will stay; ask several times.
    for _ in range(5):
        assert _detect(bare_bash) is None
        assert os.path.exists(f"/proc/{pid}")


@pytest.mark.parametrize(
    "command,name,secret",
    [
        (f"{PY} 'input(\"name? \")'", "python3", False),
        (f"{PY} 'import getpass; getpass.getpass(\"pw: \")'", "python3", True),
        pytest.param(
            f"{PY} 'import select,sys; select.select([sys.stdin],[],[])'", "python3", False,
            marks=needs_select_detection,
        ),
        pytest.param("python3 -i -q", "python3", False, marks=needs_select_detection),
        pytest.param("node", "node", False, marks=needs_select_detection),
        ("cat", "cat", False),
    ],
    ids=["input", "getpass", "select-stdin", "python-repl", "node-repl", "cat-tty"],
)
def test_programs_reading_the_terminal_are_awaiting_input(
    bare_bash: PtyProcess, command: str, name: str, secret: bool
) -> None:
    I.set_echo(bare_bash.fd, True)  # as a person's terminal has it
    _type(bare_bash, command)
    found = wait_until(lambda: _detect(bare_bash), 20, msg=command)
    assert found.name == name
    assert found.prompt == "prompt> "
    assert found.secret is secret
    assert os.getpgid(found.pid) == os.tcgetpgrp(bare_bash.fd)


def test_builtin_read_counts_only_when_the_caller_says_the_shell_reads_for_a_job(
    bare_bash: PtyProcess,
) -> None:
    I.set_echo(bare_bash.fd, True)
    _type(bare_bash, "read -s -p 'pw: ' x")
    # bash itself reads: nothing below it does
    wait_until(lambda: I.hidden_entry(bare_bash.fd), 10, msg="read -s turns echo off")
    assert _detect(bare_bash) is None
    found = _detect(bare_bash, shell_reading_job_input=True)
    assert found is not None and found.pid == bare_bash.pid and found.secret is True


@needs_select_detection
def test_echo_switch_and_hidden_entry(bare_bash: PtyProcess) -> None:
    I.set_echo(bare_bash.fd, True)
    assert I.echo_on(bare_bash.fd) is True
    assert I.hidden_entry(bare_bash.fd) is False
    assert I.set_echo(bare_bash.fd, True) is False  # no change
    assert I.set_echo(bare_bash.fd, False) is True
    assert I.echo_on(bare_bash.fd) is False
    assert I.hidden_entry(bare_bash.fd) is True  # canonical mode, echo off
    # A line editor turns canonical mode off as well: not a secret.
    _type(bare_bash, "python3 -i -q")
    wait_until(lambda: _detect(bare_bash), 20, msg="repl waits")
    assert I.hidden_entry(bare_bash.fd) is False
