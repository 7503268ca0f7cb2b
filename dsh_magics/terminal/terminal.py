"""One persistent shell in a PTY, running one job at a time.

A reader thread owns the PTY and blocks in ``select`` (no polling, so idle
terminals cost no CPU). A job completes when its end marker, carrying the
exit status and a per-job secret nonce, arrives in the PTY stream; since
output and marker share the channel, every byte the job printed has been read
by then. Because an interrupted command aborts the rest of its typed line,
the end marker never comes for it; the prompt that follows prints a hint,
the engine then types a fresh probe (once the shell provably reads its own
input, never into a program that reads the terminal) and settles the job as
``interrupted`` when the probe answers. If the shell process dies (``exit``,
``exec``, a kill from outside), a pidfd wakes the reader and the job settles
as ``shell_exited``.

Two ways a job can end that no marker reports are caught by a *quiet check*,
a deadline armed only by output of a running job (``QUIET_S`` after the last
byte; nothing is armed while idle or on a job's normal path). A command that
dies of a SIGINT we did not send (Python re-raising KeyboardInterrupt,
``kill -INT``) makes bash abort the job's line just like our interrupt does;
the prompt's hint arms the check at once, which finds the shell blocked
reading its top-level input and types a probe. The same check notices a job
whose command waits for someone to type on the terminal (a password prompt)
and says so in the job's snapshots. A command that
``exec``-s another interactive shell on the terminal keeps the pid, so the
check compares the process's executable and argv with the ones spawned.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .. import jobs
from ..errors import InvalidArgument, SessionBusy, ShellExited
from . import procs, reaper, shell
from .cleaner import Cleaner
from .config import TerminalConfig
from .markers import BEGIN, END, PROMPT, SYNC, Marker, MarkerScanner, new_nonce
from .result import (
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
from .ring import Ring

Emit = Callable[[dict[str, Any]], None]

QUIET_S = 0.05
"""Quiet spell after a running job's last output before the quiet check."""
QUIET_RETRIES = 4
"""Re-checks (doubling the delay) while the shell is busy but not reading."""
# How long an interrupt may be held back while bash forks a pipeline, and how
# often it looks (see ``Terminal._send_sigint_when_launched``).
LAUNCH_GRACE_S = 0.03
LAUNCH_POLL_S = 0.002
# After the prompt hint, re-checks this often, this many times, before the
# usual backoff (bash prints the hint just before it reads its input).
HINT_POLL_S = 0.002
HINT_POLLS = 25
UNSENT_SIGINT_NOTE = (
    "the shell aborted the job's line after a SIGINT the engine did not send "
    "(a command in it died of SIGINT, or signalled the shell)"
)
REPLACED_NOTE = (
    "the shell was replaced by `exec` of another program on the terminal; "
    "it was killed, and the next command starts a fresh shell"
)


@dataclass
class _Running:
    """Engine-side state of the job currently in the shell."""

    job: jobs.Job
    command: str
    nonce: str
    end_nonce: str
    started_at: float
    start_line: int
    fresh_shell: bool
    saw_begin: bool = False
    end_line: int | None = None
    ended_partial: bool = False
    sync_nonce: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


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
        self._running: _Running | None = None
        self._cwd = os.path.abspath(cwd or config.cwd or os.getcwd())
        self._output_seq = 0
        self._dead = False
        self._closed = False
        self._exit_code: int | None = None
        self._exit_signal: int | None = None
        self._ready_nonce: str | None = None
        self._ready = threading.Event()
        self._tmpdir = tempfile.mkdtemp(prefix="dsh-magics-", dir=_scratch_base())
        self._token = new_nonce()
        self._proc: Any = None
        self._reader: threading.Thread | None = None
        self._pidfd: int | None = None
        self._settled: list[tuple[jobs.Job, str, Result]] = []
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        self._script_fd: int | None = None
        self._identity: tuple[str, bytes] | None = None
        self._quiet_checks = 0  # how many quiet checks ran (tests wait on it)
        # What the last job left (from its end marker), typed into the next
        # job's line; None when unknown (fresh shell, aborted line).
        self._last_status: int | None = None
        self._pipestatus: list[int] | None = None
        self._emit_later: list[dict[str, Any]] = []  # events decided under the lock
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
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            raise
        shell.run_on_spawner(reaper.watch, self._token, self._tmpdir)
        try:
            self._pidfd = os.pidfd_open(self._proc.pid)
        except (AttributeError, OSError):
            self._pidfd = None
        self._ready_nonce = new_nonce()
        setup = self._write_file("setup.sh", shell.setup_script(self._cwd, self._tmpdir))
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
            why = (
                f"the shell exited during start-up (exit code {self._exit_code})"
                if exited
                else f"the shell did not finish start-up within {self.config.start_timeout:g}s "
                "(is the login profile slow, or waiting for input? DSH_MAGICS_LOGIN=0 skips it)"
            )
            raise ShellExited(why, session_id=self.session_id)
        _unlink(setup)
        self._identity = shell.identity(self._proc.pid)

    def close(self) -> None:
        """Kill the shell and every process it started; remove temp files.

        A Ctrl-C arriving half-way is held back until the close is complete
        (a half-finished close is exactly how processes get orphaned)."""
        with _ctrl_c_deferred():
            self._close()

    def _close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            pid = self._proc.pid if self._proc is not None else None
        procs.kill_tree(pid, self._token)
        shell.run_on_spawner(reaper.forget, self._token)
        self._reap(timeout=2.0)
        self._mark_dead(note="terminal closed")
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(timeout=2.0)
        for fd in (self._pidfd, self._script_fd, self._wake_r, self._wake_w):
            _close_fd(fd)
        self._pidfd = self._script_fd = self._wake_r = self._wake_w = None
        if self._proc is not None:
            try:
                self._proc.close(force=True)
            except Exception:  # noqa: BLE001
                pass
        shutil.rmtree(self._tmpdir, ignore_errors=True)

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
    def exec(self, command: str, *, fresh_shell: bool = False) -> jobs.Job:
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
            job = jobs.Job("bash", self.session_id, label=command[:200], canceller=lambda j: self.interrupt())
            script = self._write_script(shell.normalize_newlines(command))
            self._running = _Running(
                job=job,
                command=command,
                nonce=nonce,
                end_nonce=end_nonce,
                started_at=time.time(),
                start_line=self._ring.next_line,
                fresh_shell=fresh_shell,
            )
            self._jobs.add(job)
            resync = shell.quiet_tty(self._proc.fd)
            self._type(
                shell.job_line(
                    nonce,
                    script,
                    resync_tty=resync,
                    end_nonce=end_nonce,
                    status=self._last_status,
                    pipestatus=self._pipestatus,
                )
            )
        self._emit({"type": "job_started", "session_id": self.session_id, "job_id": job.id})
        return job

    def interrupt(self) -> jobs.Job | None:
        """Ctrl-C for the running job: SIGINT to the PTY's foreground group.

        Returns the job that was interrupted, or None when the terminal is idle.
        The job settles later, when the shell is provably back at its input
        loop; a program that ignores SIGINT keeps the job running.
        """
        with self._lock:
            run = self._running
            if run is None or self._dead:
                return None
            run.extra["interrupted"] = True
            if run.saw_begin or self._foreground_is_command():
                self._send_sigint_when_launched()
            else:
                # The shell may still be reading the job's line. A SIGINT
                # then makes bash throw away the input it has queued (the
                # job's line and our probe), so the command would never run
                # or never be reported. Deliver it when the begin marker
                # proves the line is executing (or a command has taken the
                # foreground, if the begin marker cannot arrive).
                run.extra["sigint_at_begin"] = True
                run.extra["recheck_at"] = time.monotonic() + 0.1
                self._poke_reader()
            # No probe is typed here: the command may be reading the terminal
            # itself (a password prompt) and would take the probe as its input.
            # If the Ctrl-C aborts the line, the prompt's hint arms the quiet
            # check, which types a probe only once the shell provably reads
            # its own input. This deadline covers a shell that gives no hint
            # (replaced by a program that neither exits nor prompts).
            run.extra["quiet_at"] = time.monotonic() + 0.25
            self._poke_reader()
            return run.job

    def _launched(self) -> tuple[bool | None, int | None]:
        """(has the shell finished starting its command, the foreground
        group that was checked); the group is None unless it was a command's
        (not the shell's own), which a launched check can then vouch for."""
        try:
            pgrp = os.tcgetpgrp(self._proc.fd)
        except OSError:
            return None, None
        launched = shell.command_launched(self._proc.pid, pgrp)
        try:
            own = os.getpgid(self._proc.pid)
        except OSError:
            own = pgrp
        return launched, (pgrp if launched is True and pgrp != own else None)

    def _send_sigint_when_launched(self) -> None:
        """SIGINT now if the shell has finished starting its command, else soon.

        While bash is still forking the members of a pipeline (or a member
        has not ``exec``-ed yet), a Ctrl-C can miss one of them (see
        ``shell.command_launched``). So the signal is held back, re-checked
        every ``LAUNCH_POLL_S``, for at most ``LAUNCH_GRACE_S``: a shell
        busy with a builtin loop or reading a terminal never waits, and a
        subshell never ``exec``-s; they get the signal then.
        """
        launched, checked = self._launched()
        run = self._running
        if launched is not False or run is None:
            self._send_sigint(checked)
            return
        now = time.monotonic()
        run.extra["sigint_hold_until"] = now + LAUNCH_GRACE_S
        run.extra["recheck_at"] = now + LAUNCH_POLL_S
        self._poke_reader()

    def _send_sigint(self, checked: int | None) -> None:
        """SIGINT to the foreground process group, once.

        ``checked``: the group of a fully launched command that had the
        terminal while the shell waited for it. If that group still has it,
        the signal reached every member and nothing is re-sent (a program that
        counts its Ctrl-Cs sees exactly one; pinned by
        tests/terminal/test_interrupt.py::test_one_interrupt_is_one_sigint).
        Otherwise the signal may have fallen between bash forking a command
        and handing it the terminal (it then reaches only bash, which lets
        the child run) or between fork and exec (the child still has bash's
        handlers): if the job still runs a moment later, the group of that
        moment gets one more SIGINT (tests/reliability/test_interrupt_race.py).
        """
        try:
            pgrp = os.tcgetpgrp(self._proc.fd)
        except OSError:
            pgrp = self._proc.pid
        try:
            os.killpg(pgrp, signal.SIGINT)
        except (ProcessLookupError, PermissionError):
            pass
        run = self._running
        if run is not None and pgrp != checked:
            now = time.monotonic()
            run.extra["sigint_pgrp"] = pgrp
            run.extra["sigint_early"] = not run.saw_begin or now - run.extra.get("begin_at", now) < 0.05
            run.extra["recheck_at"] = now + 0.1
            self._poke_reader()

    def _foreground_is_command(self) -> bool:
        try:
            return os.tcgetpgrp(self._proc.fd) != os.getpgid(self._proc.pid)
        except OSError:
            return False

    def _recheck_interrupt(self) -> None:
        with self._lock:
            run = self._running
            if run is None or self._dead:
                return
            if run.extra.pop("recheck_at", None) is None:
                return
            hold_until = run.extra.get("sigint_hold_until")
            if hold_until is not None:
                launched, checked = self._launched()
                if time.monotonic() >= hold_until or launched is not False:
                    run.extra.pop("sigint_hold_until", None)
                    self._send_sigint(checked)
                else:
                    run.extra["recheck_at"] = time.monotonic() + LAUNCH_POLL_S
                return
            if run.extra.get("sigint_at_begin"):
                if self._foreground_is_command():
                    run.extra.pop("sigint_at_begin", None)
                    self._send_sigint_when_launched()
                else:
                    run.extra["recheck_at"] = time.monotonic() + 0.1
                return
            try:
                pgrp = os.tcgetpgrp(self._proc.fd)
            except OSError:
                return
            if pgrp != run.extra.get("sigint_pgrp") or run.extra.get("sigint_early"):
                try:
                    os.killpg(pgrp, signal.SIGINT)
                except (ProcessLookupError, PermissionError):
                    pass

    def _poke_reader(self) -> None:
        # Wake the reader so it picks up a new deadline.
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
                cwd=self.cwd,
                dropped_lines=dropped,
                fresh_shell=run.fresh_shell,
                start_line=run.start_line,
                note=_terminal_read_note(run),
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
            )

    @property
    def cwd(self) -> str:
        """The shell's current directory, read live from /proc (also while busy)."""
        if not self._dead and self._proc is not None:
            try:
                path = os.readlink(f"/proc/{self._proc.pid}/cwd")
                if path.endswith(" (deleted)"):
                    path = path[: -len(" (deleted)")]
                return path
            except OSError:
                pass
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
        fd = self._proc.fd
        pidfd = self._pidfd
        wake = self._wake_r
        watch = [fd, wake] if pidfd is None else [fd, wake, pidfd]
        while not self._closed:
            try:
                readable, _, _ = select.select(watch, [], [], self._select_timeout(pidfd))
            except (OSError, ValueError):
                break
            if wake in readable:
                try:
                    os.read(wake, 4096)
                except OSError:
                    pass
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
                    self._on_shell_gone(fd)
                    break
                else:
                    watch.remove(fd)
            if pidfd is not None and pidfd in readable:
                self._on_shell_gone(fd)
                break
            if pidfd is None and not readable and not self._proc.isalive():
                self._on_shell_gone(fd)
                break
            run = self._running
            if run is not None:
                extra = run.extra
                now = time.monotonic()
                if extra.get("recheck_at", float("inf")) <= now:
                    self._recheck_interrupt()
                if extra.get("quiet_at", float("inf")) <= now:
                    self._quiet_check()

    def _select_timeout(self, pidfd: int | None) -> float | None:
        run = self._running
        if run is not None:
            extra = run.extra
            due = min(extra.get("recheck_at", float("inf")), extra.get("quiet_at", float("inf")))
            if due != float("inf"):
                return max(0.0, due - time.monotonic())
        return None if pidfd is not None else 0.5

    def _check_again_later(self, extra: dict[str, Any]) -> None:
        fast = extra.get("quiet_fast", 0)
        if fast:
            # After a prompt hint bash is a few instructions away from
            # reading its input: look again almost at once.
            extra["quiet_fast"] = fast - 1
            extra["quiet_at"] = time.monotonic() + HINT_POLL_S
            return
        tries = extra.get("quiet_tries", 0)
        if tries < QUIET_RETRIES:
            extra["quiet_tries"] = tries + 1
            extra["quiet_at"] = time.monotonic() + QUIET_S * 2 ** (tries + 1)

    def _note_terminal_read(self, run: _Running, reader: int) -> bool:
        """Remember that the job waits for typed input (shown in its
        snapshots); True the first time, so views are woken once."""
        first = "terminal_reader" not in run.extra
        run.extra["terminal_reader"] = (reader, shell.command_name(reader))
        return first

    def _quiet_check(self) -> None:
        try:
            self._quiet_check_locked()
        finally:
            while self._emit_later:
                self._emit(self._emit_later.pop(0))

    def _quiet_check_locked(self) -> None:
        """A running job has been quiet for a moment: has its line ended
        without a marker, or has the shell been replaced?

        Costs a few /proc reads, and only runs after output (or an
        interrupt), so an idle terminal and a quick job pay nothing.
        """
        with self._lock:
            run = self._running
            if run is None or self._dead or self._closed:
                return
            extra = run.extra
            extra.pop("quiet_at", None)
            self._quiet_checks += 1
            pid = self._proc.pid
            if self._identity is not None:
                now_is = shell.identity(pid)
                if now_is is not None and now_is != self._identity:
                    self._finish(run, SHELL_EXITED, None, self._cwd, note=REPLACED_NOTE)
                    self._dead = True
                    self._out_cond.notify_all()
                    replaced = True
                else:
                    replaced = False
            else:
                replaced = False
            if not replaced:
                if run.sync_nonce is not None:
                    return  # a probe is already on its way
                try:
                    fg = os.tcgetpgrp(self._proc.fd)
                except OSError:
                    return
                if fg != pid:
                    # A command has the terminal; its end prints. Unless it
                    # waits for someone to type (a password prompt): say so.
                    reader = shell.terminal_reader(pid, fg)
                    if reader is None:
                        self._check_again_later(extra)
                        return
                    waiting = self._note_terminal_read(run, reader)
                else:
                    state = shell.input_state(pid)
                    extra["quiet_verdict"] = state
                    if state == shell.BUSY_OR_UNKNOWN:
                        self._check_again_later(extra)
                        return
                    if state != shell.TOP_LEVEL:
                        # e.g. ``read x </dev/tty``: never feed it a probe
                        waiting = self._note_terminal_read(run, pid)
                    else:
                        waiting = None
                if waiting is not None:
                    if waiting:
                        self._emit_later.append({"type": "output", "session_id": self.session_id})
                    return
                # The shell waits for a line although the job never reported:
                # its line was aborted. A probe (no signal) confirms it.
                extra["unsent_sigint"] = True
                run.sync_nonce = new_nonce()
                shell.quiet_tty(self._proc.fd)
                self._type(shell.sync_line(run.sync_nonce))
                return
        # Replaced: kill it and whatever it started, then report; the pidfd
        # (or the read loop's EOF) collects the exit status afterwards.
        procs.kill_tree(pid, self._token)
        self._deliver()
        self._ready.set()
        self._emit({"type": "terminal", "session_id": self.session_id, "status": DEAD})

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
                run.extra["quiet_at"] = time.monotonic() + (0.0 if hint else QUIET_S)
                if hint:
                    run.extra["quiet_fast"] = HINT_POLLS
                run.extra.pop("quiet_tries", None)
                run.extra.pop("terminal_reader", None)
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
            run.extra["begin_at"] = time.monotonic()
            if run.extra.pop("sigint_at_begin", False):
                self._send_sigint_when_launched()
        elif m.kind == END and m.nonce == run.end_nonce and run.end_line is None:
            self._last_status = m.status
            self._pipestatus = list(m.pipestatus) if m.pipestatus else None
            self._flush_cleaner()
            run.ended_partial = self._ring.finish_partial()
            run.end_line = self._ring.next_line
            code = m.status if m.status is not None else -1
            status = COMPLETED
            if run.extra.get("interrupted") and code == 128 + signal.SIGINT:
                status = INTERRUPTED
            self._finish(run, status, code, self.cwd)
        elif m.kind == SYNC and m.nonce == run.sync_nonce:
            # The shell is reading input again and the job's end marker never
            # came: the interrupt aborted the job's line.
            self._settle_interrupted(run)

    def _settle_interrupted(self, run: _Running) -> None:
        self._last_status = self._pipestatus = None  # bash aborted the line
        note = None
        if run.extra.get("unsent_sigint") and not run.extra.get("interrupted"):
            note = UNSENT_SIGINT_NOTE
        self._finish(run, INTERRUPTED, 128 + signal.SIGINT, self.cwd, signal_no=signal.SIGINT, note=note)

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
            cwd=cwd,
            dropped_lines=dropped,
            fresh_shell=run.fresh_shell,
            signal=signal_no,
            note=note,
            start_line=run.start_line,
        )
        self._running = None
        self._output_seq += 1  # wake wait_output() even if the job printed nothing
        self._out_cond.notify_all()
        self._blank_script()
        self._settled.append((run.job, status, result))

    def _on_shell_gone(self, fd: int) -> None:
        # Drain what the shell wrote before dying, without blocking forever:
        # background children may keep the PTY open.
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
        self._reap(timeout=2.0)
        with self._lock:
            code = self._exit_code
            sig = self._exit_signal
            run = self._running
            if run is not None:
                note = "the shell exited; the next command starts a fresh shell"
                if sig is not None:
                    note = f"the shell was killed by signal {sig}; the next command starts a fresh shell"
                self._finish(run, SHELL_EXITED, code, self._cwd, signal_no=sig, note=note)
        self._deliver()
        self._mark_dead()

    def _reap(self, timeout: float) -> None:
        """Collect the shell's exit status (so no zombie is left)."""
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
        if not was_dead:
            self._emit({"type": "terminal", "session_id": self.session_id, "status": DEAD})

    # ------------------------------------------------------------------
    # helpers
    def _type(self, text: str) -> None:
        data = text.encode("utf-8", "surrogateescape")
        while data:
            try:
                n = os.write(self._proc.fd, data)
            except OSError as e:
                raise ShellExited(f"cannot write to the shell: {e}", session_id=self.session_id) from None
            data = data[n:]

    def _write_script(self, text: str) -> str:
        """Put the command into the terminal's private command file (as an
        assignment the job line evaluates; see ``shell.command_file``).

        One file per terminal, kept open and rewritten in place: creating and
        unlinking a file per command cost ~0.4 ms here (most of a round trip),
        rewriting costs ~0.02 ms. The file is blanked as soon as the job
        settles, so no command text lingers, and removed when the terminal
        closes. If someone deleted the directory under us, start it afresh.
        """
        path = os.path.join(self._tmpdir, "command.sh")
        if self._script_fd is None or not os.path.exists(path):
            _close_fd(self._script_fd)
            os.makedirs(self._tmpdir, mode=0o700, exist_ok=True)
            self._script_fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        data = shell.command_file(text.encode("utf-8", "surrogateescape"), keep=shell.can_keep(text))
        os.pwrite(self._script_fd, data, 0)
        os.ftruncate(self._script_fd, len(data))
        return path

    def _blank_script(self) -> None:
        if self._script_fd is not None:
            try:
                os.ftruncate(self._script_fd, 0)
            except OSError:
                pass

    def _write_file(self, name: str, text: str) -> str:
        # The temp dir may have been deleted under us; recreate it privately.
        os.makedirs(self._tmpdir, mode=0o700, exist_ok=True)
        path = os.path.join(self._tmpdir, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8", "surrogateescape"))
        return path

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
            cwd=self.cwd,
        )


@contextlib.contextmanager
def _ctrl_c_deferred() -> Iterator[None]:
    """Postpone KeyboardInterrupt in the main thread for the duration."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    try:
        previous = signal.getsignal(signal.SIGINT)
        if previous is not signal.default_int_handler:
            yield
            return
        caught: list[int] = []
        signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    except (ValueError, OSError):
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught:
            raise KeyboardInterrupt


def _terminal_read_note(run: _Running) -> str | None:
    """For a running job's snapshot: it waits for typed input (cleared by
    the job's next output, so it describes the job now)."""
    reader = run.extra.get("terminal_reader")
    if reader is None:
        return None
    pid, name = reader
    return (
        f"waiting for input on the terminal: {name} (pid {pid}) is reading it, likely a password "
        "or confirmation prompt. Nothing types into it here: interrupt the job, or run the "
        "command so that it does not ask (sudo -n, ssh -o BatchMode=yes, apt-get -y)"
    )


def _scratch_base() -> str | None:
    """Where the private script directories go: a memory-backed, per-user
    place when there is one. On overlay file systems, truncating a file that
    the shell has just read cost 0.1-0.7 ms per command; on tmpfs, ~0.01 ms."""
    candidates = [os.environ.get("XDG_RUNTIME_DIR"), "/dev/shm"]
    for base in candidates:
        if base and os.path.isdir(base) and os.access(base, os.W_OK | os.X_OK):
            return base
    return None


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _close_fd(fd: int | None) -> None:
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass
