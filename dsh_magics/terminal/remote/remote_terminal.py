"""A terminal whose bash runs elsewhere (ssh, container, pod, any command), with a local terminal's API.

What differs without a ``/proc`` view of the remote shell: docs/remote.md ("What weakens remotely").
"""

from __future__ import annotations

import errno
import os
import secrets
import select
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ptyprocess import PtyProcess

from ... import jobs
from ...errors import InvalidArgument, NotRunning, SessionBusy, ShellExited, TargetUnreachable
from .. import interaction, procs
from ..cleaner import Cleaner, clean
from ..config import TerminalConfig
from ..result import (
    BUSY,
    COMPLETED,
    DEAD,
    IDLE,
    INTERRUPTED,
    SHELL_EXITED,
    ReadResult,
    Result,
    TerminalInfo,
)
from ..ring import Ring
from . import inband
from .inband import BEGIN, END, PROMPT, SYNC, TRAP_BEGIN, TRAP_END, Marker, new_nonce
from .targets import Target

Emit = Callable[[dict[str, Any]], None]

INTERRUPT_CHAR = b"\x03"
LAUNCH_HOLD_S = 0.05
"""A Ctrl-C this soon after a job's begin marker waits until then (see interrupt)."""
BEGIN_WAIT_S = 1.0
UNSENT_SIGINT_NOTE = (
    "the shell aborted the job's line after a SIGINT the engine did not send "
    "(a command in it died of SIGINT, or signalled the shell)"
)
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


@dataclass
class _Running:
    job: jobs.Job
    command: str
    nonce: str
    started_at: float
    start_line: int
    fresh_shell: bool
    saw_begin: bool = False
    end_line: int | None = None
    ended_partial: bool = False
    sync_nonce: str | None = None
    end_nonce: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


class RemoteTerminal:
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
        self._running: _Running | None = None
        self._cwd: str | None = cwd
        self._output_seq = 0
        self._dead = False
        self._closed = False
        self._exit_code: int | None = None
        self._exit_signal: int | None = None
        self._ready_nonce: str | None = new_nonce()
        self._ready_status: int | None = None
        self._ready = threading.Event()
        self._token = secrets.token_hex(16)
        self._startup_raw = bytearray()  # what the client printed before the shell was ready
        self._echo_nonce: str | None = None  # typed with this nonce; held data may be its echo
        self._held: list[bytes] = []
        self._resync_echo = False
        self._pipestatus: tuple[int, ...] | None = None  # the last job's, restored at the next
        self._debug_trap: str | None = None  # the user's DEBUG trap, lifted at the last job's end
        self._trap_text: bytearray | None = None  # collecting `trap -p DEBUG` between T and U
        self._aborted = False  # the last job's line was cut short (next job's $? is 130)
        self._tail = bytearray()  # the last bytes after the last marker: the client's last words
        self._proc: PtyProcess | None = None
        self._pidfd: int | None = None
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        self._settled: list[tuple[jobs.Job, str, Result]] = []
        self._reader: threading.Thread | None = None
        self._start()

    # ------------------------------------------------------------------
    # lifecycle
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
            job = jobs.Job("bash", self.session_id, label=command[:200], canceller=lambda j: self.interrupt())
            self._running = _Running(
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

    def interrupt(self) -> jobs.Job | None:
        """Ctrl-C: the interrupt character, typed. The remote terminal signals
        its foreground process group. One call, one character.

        Without a view of the remote processes there is no telling when
        bash has launched the job's first command; a Ctrl-C that lands while
        it is still forking reaches only bash (or a child that has not reset
        its handlers yet) and is lost while the command goes on. So a press
        in the first ``LAUNCH_HOLD_S`` of a job (counted from its begin
        marker) is held until then; later presses go at once. If the begin
        marker does not come within ``BEGIN_WAIT_S`` (bash is still reading
        a long command), the character goes anyway and aborts the line.
        """
        with self._lock:
            run = self._running
            if run is None or self._dead:
                return None
            run.extra["interrupted"] = True
            now = time.monotonic()
            begin_at = run.extra.get("begin_at")
            if begin_at is None:
                run.extra["intr_pending"] = run.extra.get("intr_pending", 0) + 1
                run.extra["intr_deadline"] = now + BEGIN_WAIT_S
                self._poke()
                return run.job
            if now < begin_at + LAUNCH_HOLD_S:
                run.extra["intr_pending"] = run.extra.get("intr_pending", 0) + 1
                run.extra["intr_deadline"] = begin_at + LAUNCH_HOLD_S
                self._poke()
                return run.job
        try:
            self._type(INTERRUPT_CHAR.decode())
        except ShellExited:
            pass
        return run.job

    def _send_held_interrupts(self) -> None:
        """Reader thread: type the Ctrl-Cs held for the launch (in a helper
        thread, so the reader never waits behind a long command's typing)."""
        with self._lock:
            run = self._running
            if run is None:
                return
            deadline = run.extra.get("intr_deadline")
            if deadline is None or time.monotonic() < deadline:
                return
            count = run.extra.pop("intr_pending", 0)
            run.extra.pop("intr_deadline", None)
        if count:
            threading.Thread(target=self._type_quietly, args=(INTERRUPT_CHAR.decode() * count,), daemon=True).start()

    def type_input(self, data: bytes | str) -> jobs.Job:
        """Type ``data`` on the terminal for the running job (a program that
        reads it: a ``tty`` job, or one that opened /dev/tty). Refused with
        NOT_RUNNING when no job runs: the shell itself would take it as a
        command. Nothing here can tell whether the job reads it."""
        with self._lock:
            run = self._running
            if run is None or self._dead:
                raise NotRunning(
                    f"session {self.session_id!r} runs no job: typed text would become a command",
                    session_id=self.session_id,
                )
        text = data.decode("utf-8", "surrogateescape") if isinstance(data, bytes) else data
        self._type(text)
        return run.job

    def send(
        self,
        text: str | None = None,
        *,
        key: str | None = None,
        enter: bool = True,
        source: str = interaction.PERSON,
        caller: str | None = None,
        secret: bool = False,
        allow_secret: bool = True,
    ) -> tuple[jobs.Job, int, str]:
        """Type into the running job's terminal, as the local engine's
        ``send`` does: returns the job, the ring line where output after the
        input starts, and the unfinished line it was typed onto. NOT_RUNNING
        with no job running. A remote terminal cannot see whether the job
        asks for hidden entry (its echo flag is on the other side), so
        ``allow_secret`` refuses nothing here; ``secret`` keeps the text out
        of the record."""
        data = interaction.encode(text, enter=enter, key=key)
        record = interaction.InputRecord.make(
            source, text, secret=key is None and secret, key=key, caller=caller, enter=enter
        )
        with self._lock:
            run = self._running
            if run is None or self._dead:
                raise NotRunning(
                    f"session {self.session_id!r} runs no job: typed text would be a command "
                    "of the shell itself; start the program with exec first",
                    session_id=self.session_id,
                )
            run.extra.setdefault("inputs", []).append(record)
            start_line, prompt, job = self._ring.next_line, self._ring.partial, run.job
        if key == "ctrl-c":
            self.interrupt()  # with its hold early in a job (see interrupt)
        else:
            self._type(data.decode("utf-8", "surrogateescape"))
        self._emit({"type": "input", "session_id": self.session_id, "job_id": job.id, "input": record.to_dict()})
        return job, start_line, prompt

    def snapshot(self, job: jobs.Job) -> Result:
        if job.done:
            return job.result
        with self._lock:
            run = self._running
            if run is None or run.job is not job:
                return job.result if job.done else self._orphan_result(job)
            lines, dropped = self._ring.get(run.start_line)
            text = "\n".join(lines)
            if self._ring.partial:
                text = text + ("\n" if lines else "") + self._ring.partial
            elif lines:
                text += "\n"
            return Result(
                job_id=job.id,
                session_id=self.session_id,
                command=run.command,
                status=job.status,
                exit_code=None,
                output=text,
                timed_out=True,
                started_at=run.started_at,
                ended_at=None,
                cwd=self._cwd,
                dropped_lines=dropped,
                fresh_shell=run.fresh_shell,
                start_line=run.start_line,
                inputs=[r.to_dict() for r in run.extra.get("inputs", ())],
            )

    def read(self, since: int | None = None, last: int | None = None) -> ReadResult:
        with self._lock:
            ring = self._ring
            if since is None:
                start = ring.first_line
            else:
                if isinstance(since, bool) or not isinstance(since, int) or since < 0:
                    raise InvalidArgument("since must be a line number >= 0")
                start = since
            lines, dropped = ring.get(start)
            if last is not None:
                if isinstance(last, bool) or not isinstance(last, int) or last < 0:
                    raise InvalidArgument("last must be an integer >= 0")
                if last < len(lines):
                    lines = lines[len(lines) - last :] if last else []
                    start = ring.next_line - len(lines)
                    dropped = 0 if since is None else dropped
            first = max(start, ring.first_line) if lines else ring.next_line
            return ReadResult(
                session_id=self.session_id,
                lines=lines,
                first_line=first,
                next_line=ring.next_line,
                dropped=dropped,
                partial=ring.partial,
                job_id=self._running.job.id if self._running else None,
            )

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

    # ------------------------------------------------------------------
    # reader thread
    def _read_loop(self) -> None:
        assert self._proc is not None
        fd = self._proc.fd
        pidfd = self._pidfd
        wake = self._wake_r
        watch = [fd, wake] if pidfd is None else [fd, wake, pidfd]
        while not self._closed or not self._dead:
            try:
                readable, _, _ = select.select(watch, [], [], self._select_timeout(pidfd))
            except (OSError, ValueError):
                break
            if wake in readable:
                try:
                    os.read(wake, 4096)
                except OSError:
                    pass
                if self._closed and self._dead:
                    break
            if fd in readable:
                try:
                    data = os.read(fd, 65536)
                except OSError as e:
                    data = b""
                    if e.errno not in (errno.EIO, errno.EBADF):
                        raise
                if data:
                    self._on_pty(data)
                elif pidfd is None:
                    self._on_client_gone(fd)
                    break
                else:
                    watch.remove(fd)
            if pidfd is not None and pidfd in readable:
                self._on_client_gone(fd)
                break
            if pidfd is None and not readable and self._proc is not None and not self._proc.isalive():
                self._on_client_gone(fd)
                break
            self._send_held_interrupts()

    def _select_timeout(self, pidfd: int | None) -> float | None:
        run = self._running
        due = run.extra.get("intr_deadline") if run is not None else None
        if due is not None:
            return max(0.0, due - time.monotonic())
        return None if pidfd is not None else 0.5

    def _on_pty(self, data: bytes) -> None:
        with self._lock:
            if not self._ready.is_set() and len(self._startup_raw) < 65536:
                self._startup_raw += data
            probe = False
            for piece in self._scanner.feed(data):
                if self._trap_text is not None and not (isinstance(piece, Marker) and piece.kind == TRAP_END):
                    if isinstance(piece, bytes) and len(self._trap_text) < 1 << 20:
                        self._trap_text += piece
                    continue
                if isinstance(piece, Marker):
                    self._tail.clear()
                    if piece.kind == PROMPT:
                        probe = True
                    else:
                        self._on_marker(piece)
                elif self._echo_nonce is not None:
                    self._held.append(piece)
                else:
                    self._tail += piece
                    del self._tail[:-4096]
                    self._feed(piece)
            self._output_seq += 1
            self._out_cond.notify_all()
            if probe:
                self._on_prompt_hint()
        self._emit({"type": "output", "session_id": self.session_id})
        self._deliver()

    def _feed(self, data: bytes) -> None:
        text = self._cleaner.feed(data)
        if text:
            self._ring.feed(text)

    def _release_held(self, nonce: str) -> None:
        """Data that arrived between typing a line and its first marker: the
        echo of that line if the remote terminal echoes (then dropped, and
        echo turned off again with the next job), else real output (kept)."""
        held = b"".join(self._held)
        self._held.clear()
        self._echo_nonce = None
        if nonce.encode() in held:
            self._resync_echo = True
            return
        if held:
            self._tail += held
            del self._tail[:-4096]
            self._feed(held)

    def _on_prompt_hint(self) -> None:
        """The shell printed the hint it prints before reading a line after an
        aborted one: the running job's line was cut short (a Ctrl-C). Type a
        probe; its answer settles the job."""
        run = self._running
        if run is None or run.sync_nonce is not None or self._dead:
            return
        if not run.extra.get("interrupted"):
            run.extra["unsent_sigint"] = True
        run.sync_nonce = new_nonce()
        text = inband.sync_line(run.sync_nonce)
        threading.Thread(target=self._type_quietly, args=(text,), daemon=True).start()

    def _type_quietly(self, text: str) -> None:
        try:
            self._type(text)
        except ShellExited:
            pass

    def _on_marker(self, m: Marker) -> None:
        run = self._running
        if self._echo_nonce is not None and m.nonce and (
            m.nonce == self._echo_nonce or (run is not None and m.nonce == run.sync_nonce)
        ):
            self._release_held(self._echo_nonce)
        if m.kind == SYNC and m.nonce == self._ready_nonce:
            self._cleaner.flush()
            self._ring.clear()
            self._ready_nonce = None
            self._ready_status = m.status
            if m.cwd and m.status == 0:
                self._cwd = m.cwd
            self._ready.set()
            return
        if run is None:
            return
        if m.kind == TRAP_BEGIN and m.nonce == run.nonce and run.end_line is None:
            self._trap_text = bytearray()
        elif m.kind == TRAP_END:
            if m.nonce == run.nonce and self._trap_text is not None:
                text = bytes(self._trap_text).decode("utf-8", "surrogateescape").replace("\r\n", "\n").strip()
                run.extra["debug_trap"] = text or None
            self._trap_text = None
        elif m.kind == BEGIN and m.nonce == run.nonce and not run.saw_begin:
            self._flush_cleaner()
            self._ring.finish_partial()
            run.start_line = self._ring.next_line
            run.saw_begin = True
            run.extra["begin_at"] = now = time.monotonic()
            if run.extra.get("intr_pending"):
                run.extra["intr_deadline"] = now + LAUNCH_HOLD_S
        elif m.kind == END and m.nonce == run.end_nonce and run.end_line is None:
            self._flush_cleaner()
            run.ended_partial = self._ring.finish_partial()
            run.end_line = self._ring.next_line
            code = m.status if m.status is not None else -1
            status = COMPLETED
            if run.extra.get("interrupted") and code == 128 + signal.SIGINT:
                status = INTERRUPTED
            self._pipestatus = m.pipestatus
            self._debug_trap = run.extra.get("debug_trap")
            self._finish(run, status, code, m.cwd)
        elif m.kind == SYNC and m.nonce == run.sync_nonce:
            note = UNSENT_SIGINT_NOTE if run.extra.get("unsent_sigint") else None
            self._aborted = True
            self._finish(run, INTERRUPTED, 128 + signal.SIGINT, m.cwd, signal_no=signal.SIGINT, note=note)

    def _flush_cleaner(self) -> None:
        text = self._cleaner.flush()
        if text:
            self._ring.feed(text)

    def _finish(
        self,
        run: _Running,
        status: str,
        code: int | None,
        cwd: str | None,
        *,
        signal_no: int | None = None,
        note: str | None = None,
    ) -> None:
        if self._running is not run:
            return
        if cwd:
            self._cwd = cwd
        self._flush_cleaner()
        if run.end_line is None:
            run.ended_partial = self._ring.finish_partial()
            run.end_line = self._ring.next_line
        lines, dropped = self._ring.get(run.start_line, run.end_line)
        output = "\n".join(lines)
        if lines and not run.ended_partial:
            output += "\n"
        result = Result(
            job_id=run.job.id,
            session_id=self.session_id,
            command=run.command,
            status=status,
            exit_code=code,
            output=output,
            timed_out=False,
            started_at=run.started_at,
            ended_at=time.time(),
            cwd=self._cwd,
            dropped_lines=dropped,
            fresh_shell=run.fresh_shell,
            signal=signal_no,
            note=note,
            start_line=run.start_line,
            inputs=[r.to_dict() for r in run.extra.get("inputs", ())],
        )
        self._running = None
        self._output_seq += 1
        self._out_cond.notify_all()
        self._settled.append((run.job, status, result))

    def _deliver(self) -> None:
        while self._settled:
            job, status, result = self._settled.pop(0)
            job.settle(status, result)
            self._emit({"type": "job_done", "session_id": self.session_id, "job_id": job.id, "result": result})

    def _on_client_gone(self, fd: int) -> None:
        """The local client exited: the connection dropped, the remote shell
        ended, or the client was killed. Keep every byte it printed (the job's
        output up to the drop, then the client's own message)."""
        deadline = time.monotonic() + 0.2
        while time.monotonic() < deadline:
            try:
                r, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
                if not r:
                    break
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            self._on_pty(data)
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

    def _orphan_result(self, job: jobs.Job) -> Result:
        return Result(
            job_id=job.id,
            session_id=self.session_id,
            command=job.label,
            status=job.status,
            exit_code=None,
            output="",
            timed_out=True,
            started_at=job.created_at,
            ended_at=None,
            cwd=self._cwd,
        )


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
