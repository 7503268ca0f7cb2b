"""The remote terminal's transport: the local client process (ssh, docker,
kubectl, cmd:) on a PTY of ours, from spawn to reap. A line reaches the remote
bash typed on that PTY; bash's answers come back on it, read by the reader
thread; its end shows as the client's exit."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from ptyprocess import PtyProcess, PtyProcessError  # type: ignore[import-untyped]

from ...errors import ShellExited, TargetUnreachable
from ..config import TerminalConfig
from ..core import child, procs, reader
from ..core.cleaner import clean
from ..core.transport import set_pty_size
from .targets import Target

# One long-lived thread forks every client, so PR_SET_PDEATHSIG (set in the
# child) fires only when this process dies, not when a short-lived caller
# thread ends.
_spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dsh-remote-spawner")

T = TypeVar("T")


def in_spawner(start: Callable[[], T]) -> T:
    """Run ``start`` (which forks a client with :func:`child_setup`) on the spawner thread."""
    return _spawner.submit(start).result()


def child_setup() -> None:
    """In a client's child: hung up when this process dies, signals as a
    terminal emulator leaves them (:func:`core.child.setup`)."""
    child.setup()


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
        self._is_dead = is_dead
        self.proc: PtyProcess | None = None
        self.pidfd: int | None = None
        self._wake = reader.WakePipe()
        self._reader: threading.Thread | None = None
        self._wlock = threading.Lock()
        self._reap_lock = threading.Lock()  # one waitpid at a time (reader vs close)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def spawn(self, handlers: reader.Handlers) -> None:
        """Start the client and the reader thread (TARGET_UNREACHABLE when
        the client program cannot start)."""
        argv = self.target.argv(login=self.config.login, control_dir=self.control_dir)
        env = self.environment()

        def go() -> PtyProcess:
            return PtyProcess.spawn(
                argv, env=env, echo=False, dimensions=(self.config.rows, self.config.cols), preexec_fn=child_setup
            )

        try:
            self.proc = proc = in_spawner(go)
        except Exception as e:  # noqa: BLE001 - e.g. the client program is missing
            self.close_fds()
            raise TargetUnreachable(
                f"cannot start {argv[0]!r} for target {self.target}: {e}", session_id=self.session_id,
                target=str(self.target),
            ) from None
        try:
            self.pidfd = os.pidfd_open(proc.pid)
        except (AttributeError, OSError):
            self.pidfd = None
        wake = self._wake.r
        assert wake is not None

        def loop() -> None:
            reader.loop(proc, self.pidfd, wake, handlers)

        self._reader = threading.Thread(target=loop, name=f"dsh-remote-{self.session_id}", daemon=True)
        self._reader.start()

    def environment(self) -> dict[str, str]:
        """The environment of the terminal's local processes: its token marks them (cmd: targets'
        descendants, the ssh control master)."""
        env = dict(os.environ)
        env["TERM"] = "dumb"
        env["DSH_MAGICS_TOKEN"] = self.token
        env["DSH_MAGICS_SESSION"] = self.session_id
        return env

    def type(self, text: str) -> None:
        data = text.encode("utf-8", "surrogateescape")
        with self._wlock:
            while data:
                proc = self.proc
                if proc is None or self._is_dead():
                    raise ShellExited(f"the shell of session {self.session_id!r} has exited", session_id=self.session_id)
                try:
                    n = os.write(proc.fd, data)
                except OSError as e:
                    raise ShellExited(f"cannot write to the terminal: {e}", session_id=self.session_id) from None
                data = data[n:]

    def type_quietly(self, text: str) -> None:
        try:
            self.type(text)
        except ShellExited:
            pass

    def type_later(self, text: str) -> None:
        """Type from a helper thread (the reader never waits behind typing)."""
        threading.Thread(target=self.type_quietly, args=(text,), daemon=True).start()

    def set_size(self, cols: int, rows: int) -> None:
        """Set the PTY's size of the local client (ssh, podman, ...): it gets
        SIGWINCH and passes the new size on to the remote terminal."""
        set_pty_size(self.proc, self.session_id, cols, rows)

    def poke(self) -> None:
        """Wake the reader so it picks up a new deadline."""
        self._wake.poke()

    def drain(self, on_data: Callable[[bytes], None]) -> None:
        """Every byte the client printed before it exited."""
        if self.proc is not None:
            reader.drain(self.proc.fd, on_data)

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
        if self.pidfd is not None:
            try:
                os.close(self.pidfd)
            except OSError:
                pass
        self.pidfd = None
        self._wake.close()

    def close_process(self) -> None:
        if self.proc is not None:
            try:
                self.proc.close(force=True)
            except (OSError, PtyProcessError):
                # Closing the descriptor failed, or the client outlived
                # SIGKILL's grace: the reap (procs.reap) has collected it or
                # kills its tree; nothing more can be done here.
                pass


def last_words(raw: bytes, lines: int = 2) -> str:
    """The client's own message: its last non-empty lines (ssh says why it
    gave up last), plus a WARNING line it printed earlier (a changed host
    key is explained in a box above the last lines)."""
    text = clean(raw).replace("\r", "\n")
    kept = [ln.strip() for ln in text.split("\n") if ln.strip() and ln.strip("@ ")]
    words = kept[-lines:]
    warning = next((ln for ln in kept if "WARNING" in ln), None)
    if warning and warning not in words:
        words.insert(0, warning)
    return " / ".join(words)
