"""One persistent shell in a PTY, running one job at a time: lifecycle, the
reader thread, and settling jobs (docs/internals.md draws how)."""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable
from typing import Any

from ... import jobs
from ...errors import InvalidArgument, ShellExited
from .. import interaction
from ..config import TerminalConfig
from ..core import ctrl_c, procs, pty, reader, tty_state, watchdog
from ..core.jobcore import JobCore
from ..core.jobview import Running
from ..core.markers import BEGIN, END, PROMPT, SYNC, Marker, MarkerScanner, new_nonce
from ..core.terminal_base import TerminalBase
from ..result import (
    BUSY,
    DEAD,
    IDLE,
    TerminalInfo,
)
from . import keyboard, quiet, shell, shell_end
from .gate import Gate
from .interrupts import Interrupter
from .local_shell import LocalShell
from .scratch import Scratch, unlink

Emit = Callable[[dict[str, Any]], None]


class Terminal(TerminalBase):
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
        super().__init__(session_id, config)
        self._start_cwd = os.path.abspath(cwd or config.cwd or os.getcwd())
        self._scratch = Scratch()
        self.transport: LocalShell = LocalShell(session_id)
        self.core = JobCore(
            session_id,
            config.max_lines,
            job_table=job_table,
            emit=emit,
            scanner=MarkerScanner(),
            cwd=self._start_cwd,
            on_settle=lambda run: self._scratch.blank_command(),
            size=(config.cols, config.rows),
        )
        self._ready_nonce: str | None = None
        self._tmpdir = self._scratch.dir
        self._reader: threading.Thread | None = None
        # What the last job left (from its end marker), typed into the next
        # job's line; None when unknown (fresh shell, aborted line).
        self._last_status: int | None = None
        self._pipestatus: list[int] | None = None
        self._interrupter: Interrupter | None = None
        self._start()

    # ------------------------------------------------------------------
    # lifecycle
    def _start(self) -> None:
        if not os.path.isdir(self._start_cwd):
            raise InvalidArgument(f"cwd {self._start_cwd!r} is not a directory")
        # A Ctrl-C is held back from the spawn on, but for the wait for the
        # shell; whatever ends the start early (that Ctrl-C, a full disk:
        # NO_SPACE, a shell that never answers) closes what was started.
        # Raised elsewhere half-way, it orphaned the shell (core.ctrl_c;
        # tests/magics/test_engine_gaps.py::test_ctrl_c_during_terminal_start_leaves_no_shell).
        with ctrl_c.deferred():
            try:
                env = shell.shell_env(self.session_id, self.transport.token)
                size = (self.config.cols, self.config.rows)
                self.transport.pty.spawn(shell.argv(self.config), env=env, size=size, cwd=self._start_cwd)
            except Exception:
                self._scratch.remove()
                raise
            try:
                self._boot()
            except BaseException:
                self.close()
                raise

    def _boot(self) -> None:
        """The start after the spawn: the reader, the set-up, the wait for
        the shell's ready marker (the only part a Ctrl-C cuts short)."""
        watched = pty.housekeeping(watchdog.watch, self.transport.token, self._tmpdir)
        self._interrupter = Interrupter(self.transport.proc.pid, self.transport.proc.fd, self.transport.poke)
        self._ready_nonce = new_nonce()
        self.transport.gate = Gate(self._tmpdir)
        setup = self._scratch.write_file(
            "setup.sh", shell.setup_script(self._start_cwd, self._tmpdir, self.transport.gate.shell_open())
        )
        self._reader = threading.Thread(target=self._read_loop, name=f"dsh-terminal-{self.session_id}", daemon=True)
        self._reader.start()
        self.transport.type(shell.setup_line(setup, self._ready_nonce))
        with ctrl_c.allowed():
            ready, replaced = self._wait_ready()
        if not ready or self.core.dead:
            exited = self.core.dead  # before close(), which kills a shell that hangs
            skip = " DSH_MAGICS_LOGIN=0 skips it" if self.config.login else ""
            if replaced:
                why = (
                    f"the shell was replaced by `{replaced}` during start-up (an `exec` in the login profile?"
                    f"{skip})"
                )
            elif exited:
                why = self.core.failure or (
                    f"the shell exited during start-up (exit code {self.core.exit_code}"
                    + (f": an `exit` in the login profile?{skip})" if self.config.login else ")")
                )
            else:
                why = (
                    f"the shell did not finish start-up within {self.config.start_timeout:g}s "
                    f"(is the login profile slow, or waiting for input?{skip})"
                )
            raise ShellExited(why, session_id=self.session_id)  # (_start closes the terminal)
        unlink(setup)
        # The watchdog knows of the terminal before its first job: an owner
        # that died right after a job, the note still queued behind a slow
        # spawner thread, left its scratch directory (tests/reliability/
        # test_exit_leftovers.py::test_nothing_left_when_the_owner_goes[os._exit-slow-watchdog]).
        watched.result()
        self.transport.identity = procs.LAYER.identity(self.transport.proc.pid)
        self.transport.gate.unlink()  # the shell has both gates open by now
        self.transport.tty = tty_state.tty_path(self.transport.proc.pid)
        if self.transport.pidfd is not None:
            # Held open only where the pidfd reports the shell's exit: an
            # open slave keeps the master from reading EOF.
            self.transport.tty_fd = tty_state.open_tty(self.transport.tty)

    def close(self) -> None:
        """Kill the shell and every process it started; remove temp files
        (a Ctrl-C half-way is held back until the close is complete)."""
        with ctrl_c.deferred():
            self._close()

    def _close(self) -> None:
        with self.core.lock:
            if not self.core.mark_closed():
                return
            pid = self.transport.proc.pid if self.transport.proc is not None else None
        procs.kill_tree(pid, self.transport.token)
        pty.housekeeping(watchdog.forget, self.transport.token)
        shell_end.reap(self.core, self.transport, timeout=2.0)
        self.core.mark_dead(note="terminal closed")
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(timeout=2.0)
        self.transport.close_fds()
        if self.transport.gate is not None:
            self.transport.gate.close()
        self.transport.pty.close()  # (reaped above)
        self._scratch.remove()

    def _wait_ready(self) -> tuple[bool, str | None]:
        """Wait for the ready marker. Each output meanwhile is a moment to
        check that the shell is still bash: a profile that ``exec``-s
        another program (``exec cat`` echoes the set-up back) fails the
        start at once, naming that program, not after ``start_timeout``.
        Returns (ready, the program that replaced the shell). Another bash
        (a profile's ``exec /opt/homebrew/bin/bash -l``) is not a
        replacement. The shell's executable is the configured one: by the
        time this looks, the profile may have ``exec``-ed already."""
        core, pid = self.core, self.transport.proc.pid
        allowed = _shell_programs(shutil.which(self.config.shell) or self.config.shell)

        def replaced_by() -> str | None:
            # ``executable``, not ``identity``: the portable layer takes its
            # first identity of a shell at the prompt (descriptor count;
            # tests/portable/test_portable_layer.py::test_the_prompt_count_is_taken_at_the_prompt).
            now = procs.LAYER.executable(pid)
            if now is None or now in allowed:
                return None
            name = os.path.basename(now)
            return None if name.startswith("bash") else name

        deadline = time.monotonic() + self.config.start_timeout
        seq = -1
        while not core.ready.is_set():
            left = deadline - time.monotonic()
            if core.dead:
                return False, None
            if left <= 0:  # (a program that prints nothing: `exec sleep 100`)
                return False, replaced_by()
            seq = core.wait_output(seq, left)
            name = replaced_by()
            if name is not None:
                return False, name
        return True, None

    @property
    def pid(self) -> int | None:
        return self.transport.proc.pid if self.transport.proc is not None else None

    # ------------------------------------------------------------------
    # public operations
    def exec(
        self, command: str, *, fresh_shell: bool = False, tty: bool = False, source: str | None = None
    ) -> jobs.Job:
        with self.core.lock:
            job = self.core.new_job(command, self._cancel, source)
            nonce, end_nonce = new_nonce(), new_nonce()
            script = self._write_script(shell.normalize_newlines(command))
            run = Running(
                job=job,
                command=command,
                nonce=nonce,
                end_nonce=end_nonce,
                started_at=time.time(),
                start_line=self.core.ring.next_line,
                fresh_shell=fresh_shell,
                tty=bool(tty),
            )
            self.core.begin(run)
            keyboard.before_typing(self.transport)
            resync = shell.quiet_tty(self.transport.proc.fd)
            if self.transport.gate is not None:
                self.transport.gate.drain()
            self.transport.type(
                shell.job_line(
                    nonce,
                    script,
                    resync_tty=resync,
                    end_nonce=end_nonce,
                    status=self._last_status,
                    pipestatus=self._pipestatus,
                    gate=self.transport.gate.shell_wait() if self.transport.gate else "",
                    gate_end=self.transport.gate.shell_wait(end=True) if self.transport.gate else "",
                    tty=bool(tty),
                )
            )
            keyboard.echo_for_job(self.transport, run)
        self.core.emit({"type": "job_started", "session_id": self.session_id, "job_id": job.id})
        return job

    def interrupt(self) -> jobs.Job | None:
        """Ctrl-C for the running job (``interrupts``); None when idle. The job
        settles once the shell is provably back at its input loop."""
        with self.core.lock:
            run = self.core.running
            if run is None or self.core.dead:
                return None
            assert self._interrupter is not None
            run.prompt_left()  # what it waited for is being interrupted
            if run.tty or run.inputs:
                # Type-ahead nobody read would reach the shell once the line is aborted.
                tty_state.discard_typed_input(self.transport.tty)
            self._interrupter.request(run)
            # No probe is typed here (a program reading the terminal would take
            # it as input): the quiet check types one once the shell reads.
            run.quiet.look_in(quiet.AFTER_INTERRUPT_S)
            self.transport.poke()
            return run.job

    def type_keys(self, data: str, caller: str | None = None) -> tuple[jobs.Job, int, str]:
        """``TerminalBase.type_keys`` in one call: ``keyboard.type_person``."""
        return keyboard.type_person(self.core, self.transport, data, caller)

    def _type_in(self, typing: interaction.Typing) -> tuple[jobs.Job, int, str]:
        return keyboard.send(self.core, self.transport, typing)

    def _cancel(self, job: jobs.Job) -> None:
        self.interrupt()

    def info(self) -> TerminalInfo:
        with self.core.lock:
            run = self.core.running
            status = DEAD if self.core.dead else (BUSY if run else IDLE)
            return TerminalInfo(
                session_id=self.session_id,
                status=status,
                cwd=self.cwd,
                job_id=run.job.id if run else None,
                job_source=run.job.source if run else None,
                pid=self.pid,
                created_at=self.created_at,
                job_started_at=run.started_at if run else None,
                exit_code=self.core.exit_code if self.core.dead else None,
                lines=self.core.ring.next_line,
                awaiting_input=run.awaiting.to_dict() if run and run.awaiting else None,
            )

    @property
    def cwd(self) -> str:
        """The shell's current directory, read live from /proc (also while busy)."""
        if not self.core.dead and self.transport.proc is not None:
            path = procs.LAYER.cwd(self.transport.proc.pid)
            if path is not None:
                return path
        return self.core.last_cwd or self._start_cwd

    # ------------------------------------------------------------------
    # reader thread
    def _read_loop(self) -> None:
        handlers = reader.Handlers(
            closed=lambda: self.core.closed,
            next_due=self._next_due,
            on_data=lambda data: self._on_pty(data),  # tests wrap _on_pty
            on_due=self._on_due,
            on_gone=lambda: shell_end.on_shell_gone(self.core, self.transport, self._on_pty),
            on_idle=self.core.idle,
            on_failed=lambda e: shell_end.on_reader_failed(self.core, self.transport, e),
        )
        reader.loop(self.transport.proc, self.transport.pidfd, self.transport.wake, handlers)

    def _next_due(self) -> float | None:
        run = self.core.running
        if run is None:
            return None
        due = [t for t in (run.intr.due, run.quiet.at) if t is not None]
        return min(due) if due else None

    def _on_due(self) -> None:
        with self.core.lock:
            run, now = self.core.running, time.monotonic()
            if run is None or self.core.dead:
                return
            if run.intr.due is not None and run.intr.due <= now and self._interrupter:
                self._interrupter.step(run)
        if run.quiet.at is not None and run.quiet.at <= now:
            keyboard.quiet_check(self.core, self.transport)

    def _on_pty(self, data: bytes) -> None:
        with self.core.lock:
            hint = False
            for piece in self.core.scanner.feed(data):
                if isinstance(piece, Marker):
                    hint = hint or piece.kind == PROMPT
                    self._on_marker(piece)
                else:
                    self.core.feed(piece)
            self.core.touched()
            run = self.core.running
            if run is not None:
                run.output_seen(hint)
        self.core.emit({"type": "output", "session_id": self.session_id})
        self.core.deliver()

    def _on_marker(self, m: Marker) -> None:
        if m.kind == SYNC and m.nonce == self._ready_nonce:
            self._ready_nonce = None
            self.core.shell_ready()
            return
        run = self.core.marked_job(m)
        if run is None:
            return
        if m.kind == BEGIN:
            self.core.job_began(run)
            if self._interrupter is not None:
                self._interrupter.on_begin(run)
        elif m.kind == END:
            keyboard.after_job(self.transport, run)
            self._last_status = m.status
            self._pipestatus = list(m.pipestatus) if m.pipestatus else None
            self.core.job_ended(run, m.status, self.cwd)
        else:
            # The shell is reading input again and the job's end marker never
            # came: the interrupt aborted the job's line.
            self._settle_interrupted(run)

    def _settle_interrupted(self, run: Running) -> None:
        self._last_status = self._pipestatus = None  # bash aborted the line
        note = None
        if run.quiet.unsent_sigint and not run.intr.requested:
            note = quiet.UNSENT_SIGINT_NOTE
        self.core.job_aborted(run, self.cwd, note)

    # ------------------------------------------------------------------
    # helpers
    def _write_script(self, text: str) -> str:
        """The job's command file (an assignment the job line evaluates; see
        ``shell.command_file``); tests replace this to lose the file."""
        data = shell.command_file(text.encode("utf-8", "surrogateescape"), keep=shell.can_keep(text))
        return self._scratch.write_command(data)


def _shell_programs(shell: str) -> frozenset[str]:
    """What the configured shell's pid may run during start-up without
    having been replaced: the shell itself and, for a wrapper script, its
    ``#!`` interpreter until it ``exec``-s bash (a ``#!/bin/sh`` stand-in:
    tests/portable/test_bash_version.py::test_a_new_enough_bash_starts_and_is_asked_once)."""
    programs = {os.path.realpath(shell)}
    try:
        with open(shell, "rb") as f:
            first = f.readline(256)
    except OSError:
        return frozenset(programs)
    if first.startswith(b"#!") and first[2:].split():
        programs.add(os.path.realpath(os.fsdecode(first[2:].split()[0])))
    return frozenset(programs)
