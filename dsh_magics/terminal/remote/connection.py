"""The remote terminal's connection: the local client process (ssh, docker,
kubectl, cmd:) from spawn to reap, the reader thread, and how a drop is told."""

from __future__ import annotations

import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from ptyprocess import PtyProcess  # type: ignore[import-untyped]

from ...errors import InvalidArgument, ShellExited, TargetUnreachable
from .. import procs
from ..core import reader
from ..core.cleaner import clean
from ..result import (
    DEAD,
    SHELL_EXITED,
)
from . import inband
from .state import RemoteState

# One long-lived thread forks every client, so PR_SET_PDEATHSIG (set in the
# child) fires only when this process dies, not when a short-lived caller
# thread ends.
_spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dsh-remote-spawner")


def _child_setup() -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGHUP, 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - best effort, Linux only
        pass


class Connection(RemoteState):
    """Lifecycle half of :class:`.remote_terminal.RemoteTerminal` (state lives there)."""

    def _start(self) -> None:
        argv = self.target.argv(login=self.config.login)
        env = dict(os.environ)
        env["TERM"] = "dumb"
        env["DSH_MAGICS_TOKEN"] = self._token  # marks local descendants (cmd: targets)
        env["DSH_MAGICS_SESSION"] = self.session_id

        def go() -> PtyProcess:
            return PtyProcess.spawn(
                argv, env=env, echo=False, dimensions=(self.config.rows, self.config.cols), preexec_fn=_child_setup
            )

        try:
            self._proc = _spawner.submit(go).result()
        except Exception as e:  # noqa: BLE001 - e.g. the client program is missing
            self._close_fds()
            raise TargetUnreachable(
                f"cannot start {argv[0]!r} for target {self.target}: {e}", session_id=self.session_id,
                target=str(self.target),
            ) from None
        try:
            self._pidfd = os.pidfd_open(self._proc.pid)
        except (AttributeError, OSError):
            self._pidfd = None
        self._reader = threading.Thread(target=self._read_loop, name=f"dsh-remote-{self.session_id}", daemon=True)
        self._reader.start()
        try:
            assert self._ready_nonce is not None
            self._echo_nonce = None
            self._type(inband.setup_text(self._ready_nonce, self._cwd, self.session_id))
            ready = self._ready.wait(self.config.start_timeout)
        except BaseException:
            self.close()
            raise
        if ready and not self._dead and self._ready_status not in (0, None):
            cwd = self._cwd
            self.close()
            raise InvalidArgument(
                f"cwd {cwd!r} is not a directory on {self.target}", field="cwd", cwd=cwd, session_id=self.session_id
            )
        if not ready or self._dead:
            exited = self._dead
            self.close()
            said = _last_words(bytes(self._startup_raw))
            if exited:
                why = f"{self.target}: the connection ended before a shell was ready (exit code {self._exit_code})"
            else:
                why = f"{self.target}: no shell answered within {self.config.start_timeout:g}s"
            raise TargetUnreachable(
                why + (f": {said}" if said else ""), session_id=self.session_id, target=str(self.target),
                exit_code=self._exit_code, output=said,
            )
        self._startup_raw = bytearray()

    def close(self) -> None:
        """End the remote shell and what it started in its session, then the
        local client and anything it started here."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            idle = self._running is None and not self._dead and self._ready.is_set()
            pid = self._proc.pid if self._proc is not None else None
        if idle and pid is not None:
            # bash hangs up its jobs and exits; the client then exits alone.
            try:
                self._type(inband.close_line())
                self._wait_exit(1.0)
            except ShellExited:
                pass
        procs.kill_tree(pid, self._token, grace=0.5)
        self._reap(2.0)
        self._mark_dead(note="terminal closed")
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(timeout=2.0)
        self._close_fds()
        if self._proc is not None:
            try:
                self._proc.close(force=True)
            except Exception:  # noqa: BLE001
                pass

    def _close_fds(self) -> None:
        for fd in (self._pidfd, self._wake_r, self._wake_w):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._pidfd = self._wake_r = self._wake_w = None

    def _wait_exit(self, timeout: float) -> None:
        """Until the reader has seen the client exit (it alone reaps it)."""
        with self._out_cond:
            self._out_cond.wait_for(lambda: self._dead, timeout=timeout)

    # ------------------------------------------------------------------
    # reader thread
    def _read_loop(self) -> None:
        proc = self._proc
        assert proc is not None and self._wake_r is not None
        reader.loop(
            proc,
            self._pidfd,
            self._wake_r,
            closed=lambda: self._closed and self._dead,
            next_due=self._next_due,
            on_data=self._on_pty,
            on_due=self._send_held_interrupts,
            on_gone=lambda: self._on_client_gone(proc.fd),
        )

    def _next_due(self) -> float | None:
        run = self._running
        return run.intr.due if run is not None else None

    def _type_quietly(self, text: str) -> None:
        try:
            self._type(text)
        except ShellExited:
            pass

    def _on_client_gone(self, fd: int) -> None:
        """The local client exited: the connection dropped, the remote shell
        ended, or the client was killed. Keep every byte it printed (the job's
        output up to the drop, then the client's own message)."""
        reader.drain(fd, self._on_pty)
        self._reap(2.0)
        with self._lock:
            if self._echo_nonce is not None:
                self._release_held("")
            said = _last_words(bytes(self._tail), lines=1)
            run = self._running
            if run is not None:
                note = f"the connection to {self.target} ended (exit code {self._exit_code})"
                if said:
                    note += f": {said}"
                note += "; the next command opens a new connection"
                self._finish(run, SHELL_EXITED, self._exit_code, self._cwd, signal_no=self._exit_signal, note=note)
        self._deliver()
        self._mark_dead()

    def _reap(self, timeout: float) -> None:
        with self._reap_lock:
            self._reap_locked(timeout)

    def _reap_locked(self, timeout: float) -> None:
        if self._proc is None or self._exit_code is not None:
            return
        deadline = time.monotonic() + timeout
        while True:
            try:
                alive = self._proc.isalive()
            except Exception:  # noqa: BLE001
                alive = False
            if not alive:
                break
            if time.monotonic() >= deadline:
                procs.kill_tree(self._proc.pid, self._token, grace=0.2)
                deadline = time.monotonic() + 1.0
            time.sleep(0.005)
        sig = getattr(self._proc, "signalstatus", None)
        status = getattr(self._proc, "exitstatus", None)
        with self._lock:
            if sig is not None:
                self._exit_signal = sig
                self._exit_code = 128 + sig
            else:
                self._exit_code = status if status is not None else -1

    def _mark_dead(self, note: str | None = None) -> None:
        with self._lock:
            was_dead = self._dead
            self._dead = True
            run = self._running
            if run is not None:
                self._finish(run, SHELL_EXITED, self._exit_code, self._cwd, note=note or "the shell exited")
            self._out_cond.notify_all()
        self._deliver()
        self._ready.set()
        self._poke()
        if not was_dead:
            self._emit({"type": "terminal", "session_id": self.session_id, "status": DEAD})

    def _poke(self) -> None:
        if self._wake_w is not None:
            try:
                os.write(self._wake_w, b"x")
            except OSError:
                pass

    def _type(self, text: str) -> None:
        data = text.encode("utf-8", "surrogateescape")
        with self._wlock:
            while data:
                proc = self._proc
                if proc is None or self._dead:
                    raise ShellExited(f"the shell of session {self.session_id!r} has exited", session_id=self.session_id)
                try:
                    n = os.write(proc.fd, data)
                except OSError as e:
                    raise ShellExited(f"cannot write to the terminal: {e}", session_id=self.session_id) from None
                data = data[n:]


def _last_words(raw: bytes, lines: int = 2) -> str:
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
