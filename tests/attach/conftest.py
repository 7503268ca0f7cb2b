"""tmux as the real terminal for ``dsh-magics attach``: each :class:`Tmux` is a
tmux server of its own (``-L`` socket name), typed into with ``send-keys`` and
read with ``capture-pane``, killed at teardown. The terminals live in a real
host started in a private directory."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dsh_magics.host import HostClient, HostPaths

from ..conftest import wait_until
from ..host.conftest import new_dir, stop_everything

ROOT = Path(__file__).resolve().parent.parent.parent

#: Generous deadlines: these tests must hold on a loaded 2-core machine.
T = 30.0

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Tmux:
    """One tmux server with one window running ``command``; after the
    command ends the pane prints ``EXITED <status>`` and whether the local
    terminal is back in cooked mode, then stays."""

    def __init__(self, command: str, cols: int = 100, rows: int = 30) -> None:
        self.sock = f"dsh-att-{uuid.uuid4().hex[:10]}"
        wrapped = (
            f"{command}; echo \"EXITED $?\"; "
            "stty -a | grep -qE '(^| )icanon' && stty -a | grep -qE '(^| )echo( |$)' && echo TTY-RESTORED; "
            "exec sleep 3600"
        )
        env = dict(os.environ, PYTHONPATH=str(ROOT), TERM="xterm-256color")
        env.pop("TMUX", None)
        subprocess.run(
            ["tmux", "-L", self.sock, "-f", "/dev/null", "new-session", "-d", "-x", str(cols), "-y", str(rows),
             "bash", "--norc", "--noprofile", "-c", wrapped],
            check=True, env=env, cwd=str(ROOT),
        )  # fmt: skip

    def tmux(self, *args: str) -> str:
        out = subprocess.run(["tmux", "-L", self.sock, *args], capture_output=True, text=True, check=True)
        return out.stdout

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "0", *keys)

    def text(self, literal: str) -> None:
        self.tmux("send-keys", "-t", "0", "-l", literal)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "0")

    def rows(self) -> list[str]:
        return [r.rstrip() for r in self.screen().split("\n")]

    def wait_for(self, text: str, timeout: float = T) -> str:
        return wait_until(lambda: text in self.screen() and self.screen(), timeout, msg=f"{text!r} on screen:\n{self.screen()}")  # type: ignore[no-any-return]

    def resize(self, cols: int, rows: int) -> None:
        self.tmux("resize-window", "-t", "0", "-x", str(cols), "-y", str(rows))

    def kill(self) -> None:
        """Stop the server and remove its socket file, which ``kill-server`` leaves, and
        which stays too when the test already ended the server."""
        subprocess.run(["tmux", "-L", self.sock, "kill-server"], capture_output=True)
        path = os.path.join(os.environ.get("TMUX_TMPDIR") or "/tmp", f"tmux-{os.getuid()}", self.sock)
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass  # never created, or already removed


def attach_command(session: str, host_dir: str, *extra: str) -> str:
    args = [sys.executable, "-m", "dsh_magics.cli", "attach", session, "--host-dir", host_dir, *extra]
    return " ".join(shlex.quote(a) for a in args)


@pytest.fixture(scope="module")
def attach_dir() -> Iterator[str]:
    d = new_dir()
    try:
        yield d
    finally:
        stop_everything(d)
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def engine(attach_dir: str) -> Iterator[HostClient]:
    old = os.environ.get("DSH_MAGICS_LOGIN")
    os.environ["DSH_MAGICS_LOGIN"] = "0"
    client = HostClient(HostPaths.for_name("att", attach_dir))
    try:
        client.connect()
        yield client
        client.close_all()
    finally:
        client.detach()
        if old is None:
            os.environ.pop("DSH_MAGICS_LOGIN", None)
        else:
            os.environ["DSH_MAGICS_LOGIN"] = old


@pytest.fixture
def fresh_session(engine: HostClient) -> Iterator[Callable[[str], str]]:
    """Session ids of the test's own, new each run (``name-<6 hex>``): the
    module's host outlives a test, and tests/rerun.py runs a test again in
    it, where a fixed id's record, jobs and screen would hold the last run's.
    Closed after the test."""
    made: list[str] = []

    def new(name: str) -> str:
        made.append(f"{name}-{uuid.uuid4().hex[:6]}")
        return made[-1]

    yield new
    for sid in made:
        if engine.exists(sid):
            engine.close(sid)


@pytest.fixture
def tmuxes() -> Iterator[list[Tmux]]:
    made: list[Tmux] = []
    try:
        yield made
    finally:
        for t in made:
            t.kill()
