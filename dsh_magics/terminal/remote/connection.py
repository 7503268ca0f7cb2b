"""The remote terminal's transport: the local client process (ssh, docker,
kubectl, cmd:) on a PTY of ours, from spawn to reap. A line reaches the remote
bash typed on that PTY; bash's answers come back on it, read by the reader
thread; its end shows as the client's exit."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from ...errors import ShellExited, TargetUnreachable
from ..config import TerminalConfig
from ..core import procs, reader
from ..core.cleaner import clean
from ..core.input_record import Typed
from ..core.pty import Pty
from .targets import Target


class Client:
    """One client process and its reader thread. ``is_dead`` tells when the
    terminal is dead (nothing more may be typed)."""

    def __init__(
        self, session_id: str, target: Target, config: TerminalConfig, token: str, is_dead: Callable[[], bool]
    ) -> None:
        self.session_id = session_id
        self.target = target
        self.config = config
        self.token = token  # marks local descendants (cmd: targets)
        self.control_dir: str | None = None  # ssh: the engine's own control socket lives here
        self.pty = Pty(session_id, "terminal", is_dead)  # spawns the client; every byte typed goes through it
        self._wake = reader.WakePipe()
        self._reader: threading.Thread | None = None
        self._reap_lock = threading.Lock()  # one waitpid at a time (reader vs close)

    @property
    def proc(self) -> Any:
        """The client's ``PtyProcess`` (None until spawned)."""
        return self.pty.proc

    @property
    def pidfd(self) -> int | None:
        return self.pty.pidfd

    @property
    def pid(self) -> int | None:
        return self.pty.pid

    def spawn(self, handlers: reader.Handlers) -> None:
        """Start the client and the reader thread (TARGET_UNREACHABLE when
        the client program cannot start)."""
        argv = self.target.argv(login=self.config.login, control_dir=self.control_dir, token=self.token)
        try:
            proc = self.pty.spawn(
                argv, env=self.environment(), size=(self.config.cols, self.config.rows), echo=self.target.hands_modes
            )
        except Exception as e:  # noqa: BLE001 - e.g. the client program is missing
            self.close_fds()
            raise TargetUnreachable(
                f"cannot start {argv[0]!r} for target {self.target}: {e}", session_id=self.session_id,
                target=str(self.target),
            ) from None
        wake = self._wake.r
        assert wake is not None

        def loop() -> None:
            reader.loop(proc, self.pidfd, wake, handlers)

        self._reader = threading.Thread(target=loop, name=f"dsh-remote-{self.session_id}", daemon=True)
        self._reader.start()

    def environment(self) -> dict[str, str]:
        """The environment of the terminal's local processes: its token marks them (cmd: targets'
        descendants, the ssh terminal's own ssh, which is its control master)."""
        env = dict(os.environ)
        env["TERM"] = "dumb"
        env[procs.TOKEN_VAR] = self.token
        env["DSH_MAGICS_SESSION"] = self.session_id
        return env

    def type(self, text: str, typed: Typed | None = None) -> None:
        """Type ``text``: the engine's own line, or input with its record (``typed``, see ``Pty.write``)."""
        self.pty.write(text.encode("utf-8", "surrogateescape"), typed=typed)

    def type_quietly(self, text: str) -> None:
        try:
            self.type(text)
        except ShellExited:
            pass  # the shell is already gone, which is what a quiet line was for

    def type_later(self, text: str) -> None:
        """Type from a helper thread (the reader never waits behind typing)."""
        threading.Thread(target=self.type_quietly, args=(text,), daemon=True).start()

    def set_size(self, cols: int, rows: int) -> None:
        """Set the PTY's size of the local client (ssh, podman, ...): it gets
        SIGWINCH and passes the new size on to the remote terminal."""
        self.pty.set_size(cols, rows)

    def poke(self) -> None:
        """Wake the reader so it picks up a new deadline."""
        self._wake.poke()

    def drain(self, on_data: Callable[[bytes], None]) -> None:
        """Every byte the client printed before it exited."""
        self.pty.drain(on_data)

    def reap(self, timeout: float) -> tuple[int, int | None] | None:
        """The client's (exit code, signal), killing its tree if it will not
        exit within ``timeout``; None when there is no client."""
        with self._reap_lock:
            if self.proc is None:
                return None
            return procs.reap(self.proc, self.token, timeout)

    def kill_tree(self, grace: float) -> None:
        procs.kill_tree(self.pid, self.token, grace=grace)

    def join_reader(self) -> None:
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(timeout=2.0)

    def close_fds(self) -> None:
        self.pty.close_pidfd()
        self._wake.close()

    def close_process(self) -> None:
        self.pty.close()  # (the reap, procs.reap, has collected it or killed its tree)


def last_words(raw: bytes, lines: int = 2, typed: frozenset[str] = frozenset()) -> str:
    """The client's own message: its last non-empty lines (ssh says why it
    gave up last), plus a WARNING line it printed earlier (a changed host
    key is explained in a box above the last lines). Lines that are the
    echo of a line in ``typed`` (the engine's own, maybe after a prompt) are
    not its words."""
    text = clean(raw).replace("\r", "\n")
    kept = [ln.strip() for ln in text.split("\n") if ln.strip() and ln.strip("@ ") and not _echoed(ln.strip(), typed)]
    words = kept[-lines:]
    warning = next((ln for ln in kept if "WARNING" in ln), None)
    if warning and warning not in words:
        words.insert(0, warning)
    return " / ".join(words)


def _echoed(line: str, typed: frozenset[str]) -> bool:
    """The echo of a typed line, maybe after a prompt, or a piece of one (a
    remote terminal closing while it echoes a set-up typed after a login
    start's check: tests/remote/test_login_start.py::test_no_bash_there_is_a_clear_error)."""
    return (
        line in typed
        or any(len(t) >= 8 and line.endswith(t) for t in typed)
        or (len(line) >= 12 and any(line in t for t in typed))
    )
