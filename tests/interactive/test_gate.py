"""The gate that holds a job's command until echo is on, and discarding
typed input nobody read (so it never becomes a shell command)."""

from __future__ import annotations

import os
import select
import signal

from ptyprocess import PtyProcess

from dsh_magics.terminal.core import tty_state as I
from dsh_magics.terminal.core.proclayer.procfs import children
from dsh_magics.terminal.local.gate import Gate
from tests.conftest import wait_until


class _Out:
    def __init__(self, p: PtyProcess) -> None:
        self.p, self.buf = p, b""

    def until(self, needle: bytes, timeout: float = 10) -> bytes:
        def got() -> bool:
            r, _, _ = select.select([self.p.fd], [], [], 0.05)
            if r:
                self.buf += os.read(self.p.fd, 65536)
            return needle in self.buf

        wait_until(got, timeout, msg=repr(needle))
        return self.buf


def test_gate_holds_the_line_until_released(bare_bash: PtyProcess, tmp_path) -> None:
    gate = Gate(str(tmp_path))
    try:
        os.write(bare_bash.fd, (gate.shell_open() + "; echo opened\n").encode())
        _Out(bare_bash).until(b"opened")
        gate.unlink()  # the names go; both ends keep working
        assert os.listdir(tmp_path) == []
        os.write(bare_bash.fd, f"printf A; {gate.shell_wait()}; printf B\n".encode())
        out = _Out(bare_bash)
        out.until(b"A")
        # bash sits in its read of the gate: nothing after it has run
        wait_until(lambda: open(f"/proc/{bare_bash.pid}/wchan").read() not in ("0", ""), 5)
        assert b"B" not in out.buf
        gate.release()
        out.until(b"B")
        # a byte nobody took is dropped before the next job, but never one
        # of the end gate (the shell may be on its way to read it)
        gate.release()
        gate.release(end=True)
        gate.drain()
        os.write(bare_bash.fd, f"{gate.shell_wait(end=True)}; printf E\n".encode())
        out.until(b"E")
        os.write(bare_bash.fd, f"printf C; {gate.shell_wait()}; printf D\n".encode())
        out.until(b"C")
        assert b"D" not in out.buf.split(b"C", 1)[1]
        gate.release()
        out.until(b"D")
    finally:
        gate.close()


def test_typed_input_nobody_read_never_reaches_the_shell(bare_bash: PtyProcess, tmp_path) -> None:
    out = _Out(bare_bash)
    tty = I.tty_path(bare_bash.pid)
    assert tty and tty.startswith("/dev/pts/")
    os.write(bare_bash.fd, b"sleep 30 </dev/null; echo after-$((6*7))\n")
    sleeper = wait_until(lambda: children(bare_bash.pid), 10)[0]
    # typed while nothing reads the terminal: would run once sleep ends
    os.write(bare_bash.fd, f"touch {tmp_path}/leaked\n".encode())
    assert I.discard_typed_input(tty)
    os.kill(sleeper, signal.SIGTERM)
    out.until(b"after-42")
    os.write(bare_bash.fd, b"echo done-$((2*3))\n")
    out.until(b"done-6")
    assert not (tmp_path / "leaked").exists()


def test_a_line_taken_before_echo_is_switched_on_is_never_echoed() -> None:
    """``line_taken`` makes the kernel process typed input at once, so echo
    switched on right after typing never echoes the engine's line (without
    it, some lines in a few thousand were echoed on this machine)."""
    import pty
    import termios

    master, slave = pty.openpty()
    try:
        attrs = termios.tcgetattr(slave)
        attrs[3] &= ~termios.ECHO
        termios.tcsetattr(slave, termios.TCSANOW, attrs)
        echoed = 0
        for i in range(500):
            os.write(master, b"engine line %d\n" % i)
            I.line_taken(slave)
            assert I.set_echo(master, True)
            assert I.set_echo(master, False)
            while select.select([slave], [], [], 0)[0]:
                os.read(slave, 4096)
            while select.select([master], [], [], 0)[0]:
                echoed += len(os.read(master, 4096))
        assert echoed == 0
    finally:
        os.close(master)
        os.close(slave)
