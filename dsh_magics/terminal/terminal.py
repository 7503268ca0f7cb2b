"""One persistent shell in a PTY, running one job at a time: lifecycle, the
reader thread, and settling jobs (docs/internals.md draws how)."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from .. import jobs
from ..errors import InvalidArgument, SessionBusy, ShellExited
from . import interaction, keyboard, procs, quiet, shell, shell_end, watchdog
from .config import TerminalConfig
from .core import reader
from .core.cleaner import Cleaner
from .core.jobview import Running, final_result, orphan_result, read_result, running_result
from .core.markers import BEGIN, END, PROMPT, SYNC, Marker, MarkerScanner, new_nonce
from .core.ring import Ring
from .interrupts import Interrupter
from .result import (
    BUSY,
    COMPLETED,
    DEAD,
    IDLE,
    INTERRUPTED,
    ReadResult,
    Result,
    TerminalInfo,
)
from .scratch import Scratch, close_fd, unlink

Emit = Callable[[dict[str, Any]], None]


class Terminal:
    """A shell for one session id. Use through :class:`Registry`."""

    def __init__(
        self,
        session_id: str,
        config: TerminalConfig,
        *,
        cwd: str | None = None,
        job_table: jobs.JobTable,
        emit: Emit | None = None,
    ) -> None:
        self.session_id = session_id
        self.config = config
        self.created_at = time.time()
        self._jobs = job_table
        self._emit = emit or (lambda event: None)
        self._lock = threading.RLock()
        self._out_cond = threading.Condition(self._lock)
        self._ring = Ring(config.max_lines)
        self._cleaner = Cleaner()
        self._scanner = MarkerScanner()
        self._running: Running | None = None
        self._cwd = os.path.abspath(cwd or config.cwd or os.getcwd())
        self._output_seq = 0
        self._dead = False
        self._closed = False
        self._exit_code: int | None = None
        self._exit_signal: int | None = None
        self._ready_nonce: str | None = None
        self._ready = threading.Event()
        self._scratch = Scratch()
        self._tmpdir = self._scratch.dir
        self._token = new_nonce()
        self._proc: Any = None
        self._reader: threading.Thread | None = None
        self._pidfd: int | None = None
        self._settled: list[tuple[jobs.Job, str, Result]] = []
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        self._wake_r: int | None = wake_r
        self._wake_w: int | None = wake_w
        self._identity: tuple[str, bytes] | None = None
        self._quiet_checks = 0  # how many quiet checks ran (tests wait on it)
        # What the last job left (from its end marker), typed into the next
        # job's line; None when unknown (fresh shell, aborted line).
        self._last_status: int | None = None
        self._pipestatus: list[int] | None = None
        self._interrupter: Interrupter | None = None
        self._gate: interaction.Gate | None = None
        self._tty: str | None = None  # the terminal's device path (/dev/pts/N)
        self._tty_fd: int | None = None  # its slave side, for interaction.line_taken
        self._typed = False  # input was sent since the engine last typed a line
        self._send_lock = threading.Lock()
        self._start()

    # ------------------------------------------------------------------
    # lifecycle
    def _start(self) -> None:
        if not os.path.isdir(self._cwd):
            raise InvalidArgument(f"cwd {self._cwd!r} is not a directory")
        try:
            env = shell.shell_env(self.session_id, self._token)
            self._proc = shell.spawn(self.config, self._cwd, env)
        except Exception:
            self._scratch.remove()
            raise
        shell.run_on_spawner(watchdog.watch, self._token, self._tmpdir)
        self._interrupter = Interrupter(self._proc.pid, self._proc.fd, self._poke_reader)
        try:
            self._pidfd = os.pidfd_open(self._proc.pid)
        except (AttributeError, OSError):
            self._pidfd = None
        self._ready_nonce = new_nonce()
        self._gate = interaction.Gate(self._tmpdir)
        setup = self._scratch.write_file(
            "setup.sh", shell.setup_script(self._cwd, self._tmpdir, self._gate.shell_open())
        )
        self._reader = threading.Thread(
            target=self._read_loop, name=f"dsh-terminal-{self.session_id}", daemon=True
        )
        self._reader.start()
        try:
            self._type(shell.setup_line(setup, self._ready_nonce))
            ready = self._ready.wait(self.config.start_timeout)
        except BaseException:
            # Ctrl-C (KeyboardInterrupt) half-way through start-up: the
            # terminal was never registered, so nobody else would close it.
            self.close()
            raise
        if not ready or self._dead:
            exited = self._dead  # before close(), which kills a shell that hangs
            self.close()
            why = f"the shell exited during start-up (exit code {self._exit_code})" if exited else (
                f"the shell did not finish start-up within {self.config.start_timeout:g}s "
                "(is the login profile slow, or waiting for input? DSH_MAGICS_LOGIN=0 skips it)"
            )
            raise ShellExited(why, session_id=self.session_id)
        unlink(setup)
        self._identity = procs.LAYER.identity(self._proc.pid)
        self._gate.unlink()  # the shell has both gates open by now
        self._tty = interaction.tty_path(self._proc.pid)
        if self._pidfd is not None:
            # Held open only where the pidfd reports the shell's exit: an
            # open slave keeps the master from reading EOF.
            self._tty_fd = interaction.open_tty(self._tty)

    def close(self) -> None:
        """Kill the shell and every process it started; remove temp files
        (a Ctrl-C half-way is held back until the close is complete)."""
        with watchdog.ctrl_c_deferred():
            self._close()

    def _close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            pid = self._proc.pid if self._proc is not None else None
        procs.kill_tree(pid, self._token)
        shell.run_on_spawner(watchdog.forget, self._token)
        shell_end.reap(self, timeout=2.0)
        shell_end.mark_dead(self, note="terminal closed")
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(timeout=2.0)
        for fd in (self._pidfd, self._wake_r, self._wake_w, self._tty_fd):
            close_fd(fd)
        self._pidfd = self._wake_r = self._wake_w = self._tty_fd = None
        if self._gate is not None:
            self._gate.close()
        with contextlib.suppress(Exception):
            if self._proc is not None:
                self._proc.close(force=True)
        self._scratch.remove()

    @property
    def dead(self) -> bool:
        return self._dead

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    # ------------------------------------------------------------------
    # public operations
    def exec(self, command: str, *, fresh_shell: bool = False, tty: bool = False) -> jobs.Job:
        if not isinstance(command, str):
            raise InvalidArgument("command must be a string")
        if not command.strip():
            raise InvalidArgument("command is empty")
        with self._lock:
            if self._dead:
                raise ShellExited(
                    f"the shell of session {self.session_id!r} has exited", session_id=self.session_id
                )
            if self._running is not None:
                raise SessionBusy(
                    f"session {self.session_id!r} is running job {self._running.job.id}; "
                    "wait for it, interrupt it, or use another session",
                    session_id=self.session_id,
                    job_id=self._running.job.id,
                )
            nonce, end_nonce = new_nonce(), new_nonce()
            job = jobs.Job("bash", self.session_id, label=command[:200], canceller=lambda j: self._cancel())
            script = self._write_script(shell.normalize_newlines(command))
            self._running = Running(
                job=job,
                command=command,
                nonce=nonce,
                end_nonce=end_nonce,
                started_at=time.time(),
                start_line=self._ring.next_line,
                fresh_shell=fresh_shell,
                tty=bool(tty),
            )
            self._jobs.add(job)
            keyboard.before_typing(self)
            resync = shell.quiet_tty(self._proc.fd)
            if self._gate is not None:
                self._gate.drain()
            self._type(
                shell.job_line(
                    nonce,
                    script,
                    resync_tty=resync,
                    end_nonce=end_nonce,
                    status=self._last_status,
                    pipestatus=self._pipestatus,
                    gate=self._gate.shell_wait() if self._gate else "",
                    gate_end=self._gate.shell_wait(end=True) if self._gate else "",
                    tty=bool(tty),
                )
            )
            keyboard.echo_for_job(self, self._running)
        self._emit({"type": "job_started", "session_id": self.session_id, "job_id": job.id})
        return job

    def interrupt(self) -> jobs.Job | None:
        """Ctrl-C for the running job (``interrupts``); None when idle. The job
        settles once the shell is provably back at its input loop."""
        with self._lock:
            run = self._running
            if run is None or self._dead:
                return None
            assert self._interrupter is not None
            run.awaiting = None  # what it waited for is being interrupted
            run.quiet.reader = None
            if run.tty or run.inputs:
                # Type-ahead nobody read would reach the shell once the line is aborted.
                interaction.discard_typed_input(self._tty)
            self._interrupter.request(run)
            # No probe is typed here (a program reading the terminal would take
            # it as input): the quiet check types one once the shell reads.
            run.quiet.at = time.monotonic() + quiet.AFTER_INTERRUPT_S
            self._poke_reader()
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
        """Type into the running job's terminal, as a person at its keyboard.

        Returns the job, the ring line number where output after the input
        starts, and the unfinished line the input was typed onto (the prompt).
        With no job running, typed text would become a command line of the
        shell itself: NOT_RUNNING. ``allow_secret=False`` (the agent tools)
        refuses text while the job asks for hidden entry, read from the
        terminal at this very moment: SECRET_INPUT.
        """
        return keyboard.send(
            self, text, key=key, enter=enter, source=source, caller=caller, secret=secret,
            allow_secret=allow_secret,
        )

    def _cancel(self) -> None:
        self.interrupt()

    def _poke_reader(self) -> None:
        """Wake the reader so it picks up a new deadline."""
        if self._wake_w is not None:
            try:
                os.write(self._wake_w, b"x")
            except OSError:
                pass

    def snapshot(self, job: jobs.Job) -> Result:
        """The job's result so far (final once the job has settled)."""
        if job.done:
            return job.result
        with self._lock:
            run = self._running
            if run is None or run.job is not job:
                return job.result if job.done else orphan_result(self.session_id, job, self.cwd)
            return running_result(self.session_id, run, self._ring, self.cwd)

    def read(self, since: int | None = None, last: int | None = None) -> ReadResult:
        with self._lock:
            job_id = self._running.job.id if self._running else None
            return read_result(self.session_id, self._ring, since, last, job_id)

    def info(self) -> TerminalInfo:
        with self._lock:
            run = self._running
            status = DEAD if self._dead else (BUSY if run else IDLE)
            return TerminalInfo(
                session_id=self.session_id,
                status=status,
                cwd=self.cwd,
                job_id=run.job.id if run else None,
                pid=self.pid,
                created_at=self.created_at,
                job_started_at=run.started_at if run else None,
                exit_code=self._exit_code if self._dead else None,
                lines=self._ring.next_line,
                awaiting_input=run.awaiting.to_dict() if run and run.awaiting else None,
            )

    @property
    def cwd(self) -> str:
        """The shell's current directory, read live from /proc (also while busy)."""
        if not self._dead and self._proc is not None:
            path = procs.LAYER.cwd(self._proc.pid)
            if path is not None:
                return path
        return self._cwd

    @property
    def busy(self) -> bool:
        return self._running is not None

    @property
    def output_seq(self) -> int:
        return self._output_seq

    def wait_output(self, after_seq: int, timeout: float | None) -> int:
        """Block until output newer than ``after_seq`` arrives (or a job
        settles, or the timeout passes); returns the current sequence number."""
        with self._out_cond:
            self._out_cond.wait_for(
                lambda: self._output_seq != after_seq or self._dead, timeout=timeout
            )
            return self._output_seq

    # ------------------------------------------------------------------
    # reader thread
    def _read_loop(self) -> None:
        wake = self._wake_r
        assert wake is not None
        reader.loop(
            self._proc,
            self._pidfd,
            wake,
            closed=lambda: self._closed,
            next_due=self._next_due,
            on_data=lambda data: self._on_pty(data),  # tests wrap _on_pty
            on_due=self._on_due,
            on_gone=lambda: shell_end.on_shell_gone(self, self._proc.fd),
        )

    def _next_due(self) -> float | None:
        run = self._running
        if run is None:
            return None
        due = [t for t in (run.intr.due, run.quiet.at) if t is not None]
        return min(due) if due else None

    def _on_due(self) -> None:
        with self._lock:
            run, now = self._running, time.monotonic()
            if run is None or self._dead:
                return
            if run.intr.due is not None and run.intr.due <= now and self._interrupter:
                self._interrupter.step(run)
        if run.quiet.at is not None and run.quiet.at <= now:
            keyboard.quiet_check(self)

    def _on_pty(self, data: bytes) -> None:
        with self._lock:
            hint = False
            for piece in self._scanner.feed(data):
                if isinstance(piece, Marker):
                    hint = hint or piece.kind == PROMPT
                    self._on_marker(piece)
                else:
                    text = self._cleaner.feed(piece)
                    if text:
                        self._ring.feed(text)
            self._output_seq += 1
            self._out_cond.notify_all()
            run = self._running
            if run is not None:
                run.quiet.after_output(hint)
                run.awaiting = None
        self._emit({"type": "output", "session_id": self.session_id})
        self._deliver()

    def _deliver(self) -> None:
        """Settle finished jobs outside the terminal lock, last thing before
        the reader blocks again, so a woken waiter does not have to queue
        behind the reader for the lock (a measurable part of a round trip)."""
        while self._settled:
            job, status, result = self._settled.pop(0)
            job.settle(status, result)
            self._emit({"type": "job_done", "session_id": self.session_id, "job_id": job.id, "result": result})

    def _flush_cleaner(self) -> None:
        text = self._cleaner.flush()
        if text:
            self._ring.feed(text)

    def _on_marker(self, m: Marker) -> None:
        run = self._running
        if m.kind == SYNC and m.nonce == self._ready_nonce:
            self._flush_cleaner()
            self._ring.clear()
            self._ready_nonce = None
            self._ready.set()
            return
        if run is None:
            return
        if m.kind == BEGIN and m.nonce == run.nonce and not run.saw_begin:
            self._flush_cleaner()
            self._ring.finish_partial()
            run.start_line = self._ring.next_line
            run.saw_begin = True
            run.begin_at = time.monotonic()
            if self._interrupter is not None:
                self._interrupter.on_begin(run)
        elif m.kind == END and m.nonce == run.end_nonce and run.end_line is None:
            keyboard.after_job(self, run)
            self._last_status = m.status
            self._pipestatus = list(m.pipestatus) if m.pipestatus else None
            self._flush_cleaner()
            run.ended_partial = self._ring.finish_partial()
            run.end_line = self._ring.next_line
            code = m.status if m.status is not None else -1
            status = COMPLETED
            if run.intr.requested and code == 128 + signal.SIGINT:
                status = INTERRUPTED
            self._finish(run, status, code, self.cwd)
        elif m.kind == SYNC and m.nonce == run.sync_nonce:
            # The shell is reading input again and the job's end marker never
            # came: the interrupt aborted the job's line.
            self._settle_interrupted(run)

    def _settle_interrupted(self, run: Running) -> None:
        self._last_status = self._pipestatus = None  # bash aborted the line
        note = None
        if run.quiet.unsent_sigint and not run.intr.requested:
            note = quiet.UNSENT_SIGINT_NOTE
        self._finish(run, INTERRUPTED, 128 + signal.SIGINT, self.cwd, signal_no=signal.SIGINT, note=note)

    def _finish(
        self,
        run: Running,
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
        result = final_result(self.session_id, run, self._ring, status, code, cwd, signal_no, note)
        self._running = None
        self._output_seq += 1  # wake wait_output() even if the job printed nothing
        self._out_cond.notify_all()
        self._scratch.blank_command()
        self._settled.append((run.job, status, result))

    # ------------------------------------------------------------------
    # helpers
    def _type(self, text: str) -> None:
        self._write_bytes(text.encode("utf-8", "surrogateescape"))

    def _write_bytes(self, data: bytes) -> None:
        while data:
            try:
                n = os.write(self._proc.fd, data)
            except OSError as e:
                raise ShellExited(f"cannot write to the shell: {e}", session_id=self.session_id) from None
            data = data[n:]

    def _write_script(self, text: str) -> str:
        """The job's command file (an assignment the job line evaluates; see
        ``shell.command_file``); tests replace this to lose the file."""
        data = shell.command_file(text.encode("utf-8", "surrogateescape"), keep=shell.can_keep(text))
        return self._scratch.write_command(data)
