"""A real program in a real PTY (TERM=xterm-256color, 80x24) whose output
feeds a Screen, for the screen and key tests."""

from __future__ import annotations

import os
import select

from ptyprocess import PtyProcess

from dsh_magics.terminal import keys
from dsh_magics.terminal.screen import Screen
from tests.conftest import wait_until

COLS, ROWS = 80, 24


class Prog:
    """A program in a PTY of COLS x ROWS whose output feeds a Screen."""

    def __init__(self, argv: list[str], cwd: str | None = None) -> None:
        env = dict(os.environ, TERM="xterm-256color", PS1="$ ", PROMPT_COMMAND="", LC_ALL="C.UTF-8")
        env.pop("COLUMNS", None)
        env.pop("LINES", None)
        self.p = PtyProcess.spawn(argv, env=env, cwd=cwd, dimensions=(ROWS, COLS))
        self.screen = Screen(COLS, ROWS)
        self.raw = bytearray()

    def pump(self) -> None:
        while select.select([self.p.fd], [], [], 0)[0]:
            try:
                data = os.read(self.p.fd, 65536)
            except OSError:
                return
            if not data:
                return
            self.raw += data
            self.screen.feed(data)

    def wait(self, pred, timeout: float = 15.0, msg: str = ""):
        def look():
            self.pump()
            return pred(self.screen)

        try:
            return wait_until(look, timeout=timeout, msg=msg)
        except AssertionError:
            raise AssertionError(f"{msg}; screen was:\n" + "\n".join(self.screen.text())) from None

    def wait_text(self, needle: str, **kw):
        return self.wait(lambda s: any(needle in line for line in s.text()), msg=repr(needle), **kw)

    def send(self, data: bytes | str) -> None:
        self.p.write(data.encode() if isinstance(data, str) else data)

    def key(self, *names: str) -> None:
        self.send(keys.encode_all(names, self.screen.modes()))

    def close(self) -> None:
        self.p.close(force=True)
