"""A terminal whose bash runs elsewhere (ssh, container, pod, any command), with a local terminal's API.

What differs without a ``/proc`` view of the remote shell: docs/remote.md ("What weakens remotely").
"""

from __future__ import annotations

import os
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

from ... import jobs
from ...errors import InvalidArgument, SessionBusy, ShellExited
from ..config import TerminalConfig
from ..core.cleaner import Cleaner
from ..core.jobview import Running, orphan_result, read_result, running_result
from ..core.ring import Ring
from ..result import (
    BUSY,
    DEAD,
    IDLE,
    ReadResult,
    Result,
    TerminalInfo,
)
from . import inband
from .connection import Connection, _child_setup, _last_words, _spawner  # noqa: F401 - re-exported
from .inband import new_nonce
from .job_stream import UNSENT_SIGINT_NOTE, JobStream  # noqa: F401 - re-exported
from .keyboard import BEGIN_WAIT_S, INTERRUPT_CHAR, LAUNCH_HOLD_S, Keyboard  # noqa: F401 - re-exported
from .targets import Target

Emit = Callable[[dict[str, Any]], None]


class RemoteTerminal(Connection, JobStream, Keyboard):
    """A shell for one session id on a :class:`Target`. Use through the registry."""

    def __init__(
        self,
        session_id: str,
        config: TerminalConfig,
        target: Target,
        *,
        cwd: str | None = None,
        job_table: jobs.JobTable,
        emit: Emit | None = None,
    ) -> None:
        self.session_id = session_id
        self.config = config
        self.target = target
        self.created_at = time.time()
        self._jobs = job_table
        self._emit = emit or (lambda event: None)
        self._lock = threading.RLock()
        self._wlock = threading.Lock()
        self._reap_lock = threading.Lock()  # one waitpid at a time (reader vs close)
        self._out_cond = threading.Condition(self._lock)
        self._ring = Ring(config.max_lines)
        self._cleaner = Cleaner()
        self._scanner = inband.Scanner()
        self._running = None
        self._cwd = cwd
        self._output_seq = 0
        self._dead = False
        self._closed = False
        self._exit_code = None
        self._exit_signal = None
        self._ready_nonce = new_nonce()
        self._ready_status = None
        self._ready = threading.Event()
        self._token = secrets.token_hex(16)
        self._startup_raw = bytearray()  # what the client printed before the shell was ready
        self._echo_nonce = None  # typed with this nonce; held data may be its echo
        self._held = []
        self._resync_echo = False
        self._pipestatus = None  # the last job's, restored at the next
        self._debug_trap = None  # the user's DEBUG trap, lifted at the last job's end
        self._trap_text = None  # collecting `trap -p DEBUG` between T and U
        self._aborted = False  # the last job's line was cut short (next job's $? is 130)
        self._tail = bytearray()  # the last bytes after the last marker: the client's last words
        self._proc = None
        self._pidfd = None
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        self._wake_r, self._wake_w = wake_r, wake_w
        self._settled = []
        self._reader = None
        self._start()

    @property
    def dead(self) -> bool:
        return self._dead

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def pid(self) -> int | None:
        """The local client's pid (ssh, docker, kubectl, or the cmd: program)."""
        return self._proc.pid if self._proc is not None else None

    @property
    def cwd(self) -> str | None:
        """The remote shell's cwd as of the last job's end (not live while busy)."""
        return self._cwd

    @property
    def busy(self) -> bool:
        return self._running is not None

    @property
    def running_job(self) -> jobs.Job | None:
        run = self._running
        return run.job if run else None

    @property
    def output_seq(self) -> int:
        return self._output_seq

    # ------------------------------------------------------------------
    # public operations
    def exec(self, command: str, *, fresh_shell: bool = False, tty: bool = False) -> jobs.Job:
        """Start ``command``. With ``tty`` its stdin is the terminal (type to
        it with :meth:`type_input`) and the terminal echoes while it runs;
        otherwise stdin is /dev/null."""
        if not isinstance(command, str):
            raise InvalidArgument("command must be a string")
        if not command.strip():
            raise InvalidArgument("command is empty")
        # Enter on a terminal sends CR, which the terminal turns into a newline
        # (ICRNL), also inside quotes: as typed, every CR is a newline.
        command = command.replace("\r\n", "\n").replace("\r", "\n")
        with self._lock:
            if self._dead:
                raise ShellExited(f"the shell of session {self.session_id!r} has exited", session_id=self.session_id)
            if self._running is not None:
                raise SessionBusy(
                    f"session {self.session_id!r} is running job {self._running.job.id}; "
                    "wait for it, interrupt it, or use another session",
                    session_id=self.session_id,
                    job_id=self._running.job.id,
                )
            nonce, end_nonce = new_nonce(), new_nonce()
            job = jobs.Job("bash", self.session_id, label=command[:200], canceller=self._cancel)
            self._running = Running(
                job=job,
                command=command,
                nonce=nonce,
                started_at=time.time(),
                start_line=self._ring.next_line,
                fresh_shell=fresh_shell,
                end_nonce=end_nonce,
            )
            self._jobs.add(job)
            text = inband.job_text(
                nonce,
                command,
                end_nonce=end_nonce,
                resync_echo=self._resync_echo,
                tty=tty,
                pipestatus=self._pipestatus,
                debug_trap=self._debug_trap,
                aborted=self._aborted,
            )
            self._resync_echo = self._aborted = False
            self._pipestatus = self._debug_trap = None
            self._echo_nonce = nonce
        # Typed outside the terminal lock: a long command takes a while to go
        # through the client, and the reader must keep draining output.
        self._emit({"type": "job_started", "session_id": self.session_id, "job_id": job.id})
        try:
            self._type(text)
        except ShellExited:
            pass  # the reader notices the client's exit and settles the job
        return job

    def _cancel(self, job: jobs.Job) -> None:
        self.interrupt()

    def snapshot(self, job: jobs.Job) -> Result:
        if job.done:
            return job.result
        with self._lock:
            run = self._running
            if run is None or run.job is not job:
                return job.result if job.done else orphan_result(self.session_id, job, self._cwd)
            return running_result(self.session_id, run, self._ring, self._cwd)

    def read(self, since: int | None = None, last: int | None = None) -> ReadResult:
        with self._lock:
            job_id = self._running.job.id if self._running else None
            return read_result(self.session_id, self._ring, since, last, job_id)

    def info(self) -> TerminalInfo:
        with self._lock:
            run = self._running
            status = DEAD if self._dead else (BUSY if run else IDLE)
            info = TerminalInfo(
                session_id=self.session_id,
                status=status,
                cwd=self._cwd,
                job_id=run.job.id if run else None,
                pid=self.pid,
                created_at=self.created_at,
                job_started_at=run.started_at if run else None,
                exit_code=self._exit_code if self._dead else None,
                lines=self._ring.next_line,
            )
        if hasattr(info, "target"):
            info.target = str(self.target)  # type: ignore[attr-defined]
        return info

    def wait_output(self, after_seq: int, timeout: float | None) -> int:
        with self._out_cond:
            self._out_cond.wait_for(lambda: self._output_seq != after_seq or self._dead, timeout=timeout)
            return self._output_seq
