"""The one PTY owner (``terminal/core/pty.py``): a real child on a real PTY,
spawned on the one spawner thread, written to through the one write path,
resized; what it refuses once there is nothing to write to."""

from __future__ import annotations

import os
import select
import threading
from collections.abc import Iterator

import pytest

from dsh_magics.errors import ShellExited
from dsh_magics.terminal.core import procs, pty
from tests.conftest import wait_until

ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TERM": "dumb", "LC_ALL": "C"}


class _Output:
    """What the child printed so far, read without blocking."""

    def __init__(self, fd: int) -> None:
        self.fd, self.text = fd, ""

    def has(self, needle: str) -> bool:
        while select.select([self.fd], [], [], 0)[0]:
            try:
                data = os.read(self.fd, 4096)
            except OSError:  # the child is gone and its output read
                break
            if not data:
                break
            self.text += data.decode("utf-8", "replace")
        return needle in self.text


@pytest.fixture
def child() -> Iterator[pty.Pty]:
    """A bash that prints its terminal's size, reads a line, prints the
    size again and what it read."""
    p = pty.Pty("pty-test", "shell")
    script = "stty size; IFS= read -r line; stty size; echo \"got:$line\""
    p.spawn(["bash", "--norc", "--noprofile", "-c", script], env=ENV, size=(100, 33))
    try:
        yield p
    finally:
        procs.kill_tree(p.pid, grace=0.2)
        procs.reap(p.proc, None, 2.0)
        p.close_pidfd()
        p.close()


def test_the_child_sees_its_size_and_what_is_written(child: pty.Pty) -> None:
    out = _Output(child.proc.fd)
    wait_until(lambda: out.has("33 100"), 10, msg=f"the size it was spawned with: {out.text!r}")
    child.set_size(90, 20)
    child.write("hellö there\r".encode(), typed=None)
    wait_until(lambda: out.has("got:hellö there"), 10, msg=f"the line written: {out.text!r}")
    assert "20 90" in out.text, out.text
    assert child.pidfd is None or child.pidfd >= 0


def test_nothing_is_written_to_a_dead_terminal() -> None:
    never = pty.Pty("pty-none")
    with pytest.raises(ShellExited) as e:
        never.write(b"x", typed=None)
    assert e.value.code == "SHELL_EXITED"
    with pytest.raises(ShellExited):
        never.set_size(80, 24)
    dead = pty.Pty("pty-dead", is_dead=lambda: True)
    with pytest.raises(ShellExited):
        dead.write(b"x", typed=None)


def test_every_child_is_forked_on_one_long_lived_thread() -> None:
    seen: list[threading.Thread] = []
    callers = [threading.Thread(target=lambda: seen.append(pty.on_spawner(threading.current_thread))) for _ in range(2)]
    for t in callers:
        t.start()
    for t in callers:
        t.join(10)
    assert len(seen) == 2 and seen[0] is seen[1], seen
    assert seen[0].name.startswith("dsh-spawner") and seen[0].is_alive()
