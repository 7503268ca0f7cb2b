"""The engine's own ssh connection of one ``ssh://`` terminal: a control
master (``ssh -N``) holding a socket in a private directory. The terminal's
ssh and the side channel's ``sh`` are both sessions over it (mux clients),
so the terminal's ssh ends when its remote shell does, whatever the side
channel's session does, and a probe is one round trip on a session that is
already open (docs/remote.md, "Prompts and passwords").

The terminal's own ssh used to be the master; while any other session was
open it outlived the remote shell, so each probe had to be a session of its
own (tests/remote/test_remote_prompts.py::
test_ssh_exit_ends_the_terminal_with_the_side_channel_open)."""

from __future__ import annotations

import os
import subprocess
import threading
import time

from ...errors import TargetUnreachable
from ..core import child, fdwait
from ..core.pty import on_spawner
from .connection import last_words
from .targets import MASTER_READY, Target

LOG = "log"
"""The master's stderr, in the private directory (what ssh says about the connection)."""
STOP_WAIT_S = 2.0


class ControlMaster:
    """One ``ssh -N`` child of this process (hung up if it dies, as the
    terminal's ssh is). ``connect`` starts it and waits until its socket
    listens; ``stop`` ends it, and with it every session over it."""

    def __init__(self, session_id: str, target: Target, control_dir: str, env: dict[str, str]) -> None:
        self._session_id = session_id
        self._target = target
        self._env = env
        self.argv = target.master_argv(control_dir, env)
        self._log = os.path.join(control_dir, LOG)
        self._logged_at_ready = 0  # what the log held once the socket listened
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def connect(self, timeout: float) -> None:
        """Start the master and wait until its socket listens: ssh runs its
        ``LocalCommand`` (printing ``MASTER_READY``) once it has. Raises
        ``TARGET_UNREACHABLE`` with ssh's own words when it exits first or
        does not get there within ``timeout`` (it is then stopped)."""
        fd = os.open(self._log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:

            def go() -> subprocess.Popen[bytes]:
                return subprocess.Popen(
                    self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=fd, env=self._env,
                    start_new_session=True, preexec_fn=child.setup,
                )

            try:
                proc = on_spawner(go)
            except OSError as e:
                raise TargetUnreachable(
                    f"cannot start {self.argv[0]!r} for target {self._target}: {e}", session_id=self._session_id,
                    target=str(self._target),
                ) from None
        finally:
            os.close(fd)
        with self._lock:
            self._proc = proc
        assert proc.stdout is not None
        ready = _read_line(proc.stdout.fileno(), MASTER_READY.encode(), time.monotonic() + timeout)
        proc.stdout.close()  # with -N, nothing else is written there
        if ready:
            self._logged_at_ready = self._log_size()
            return
        if ready is None:
            self.stop()
            why = f"{self._target}: no shell answered within {timeout:g}s"
        else:
            try:
                proc.wait(STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                pass
            self.stop()
            why = f"{self._target}: the connection ended before a shell was ready (exit code {proc.returncode})"
        said = self.said()
        raise TargetUnreachable(
            why + (f": {said}" if said else ""), session_id=self._session_id, target=str(self._target),
            exit_code=proc.returncode, output=said,
        )

    def said(self, since_ready: bool = False) -> str:
        """ssh's last words in the log (with ``since_ready``, only what it
        said about the connection after it was up: a timeout, a reset)."""
        start = self._logged_at_ready if since_ready else 0
        try:
            with open(self._log, "rb") as f:
                f.seek(max(start, self._log_size() - 4096))
                raw = f.read(4096)
        except OSError:
            return ""
        return last_words(raw)

    def _log_size(self) -> int:
        try:
            return os.path.getsize(self._log)
        except OSError:
            return 0

    def alive(self) -> bool:
        proc = self._proc
        return proc is not None and proc.poll() is None

    def stop(self) -> None:
        """End the connection (the server hangs up every session over it)
        and reap the master; again, nothing."""
        with self._lock:
            proc = self._proc
            if proc is not None and proc.poll() is None:  # (a master that ended alone is reaped by poll)
                proc.terminate()
                try:
                    proc.wait(STOP_WAIT_S)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def _read_line(fd: int, line: bytes, deadline: float) -> bool | None:
    """True once ``line`` came as a line of its own on ``fd``; False at its
    end; None at the deadline."""
    buf = b""
    while (b"\n" + line + b"\n") not in b"\n" + buf:
        left = deadline - time.monotonic()
        if left <= 0 or not fdwait.readable([fd], left):
            return None
        chunk = os.read(fd, 4096)
        if not chunk:
            return False
        buf = (buf + chunk)[-4096:]
    return True
