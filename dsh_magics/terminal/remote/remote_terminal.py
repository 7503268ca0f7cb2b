"""A terminal whose bash runs elsewhere (ssh, container, pod, any command), with a local terminal's API.

It is the shared job core plus the in-band transport: a client process
(:class:`.connection.Client`), the answers seen in its output
(:class:`.job_stream.InbandStream`) and the keys typed to it
(:class:`.keyboard.RemoteKeyboard`). What differs without a ``/proc`` view
of the remote shell: docs/remote.md ("What weakens remotely").
"""

from __future__ import annotations

import logging
import re
import secrets
import threading
import time

from ... import jobs
from ...errors import InvalidArgument, ShellExited, ShellUnsupported, TargetUnreachable
from .. import interaction
from ..config import TerminalConfig
from ..core import bash_version, ctrl_c, pty, reader, watchdog
from ..core.jobcore import Emit, JobCore
from ..core.jobview import Running
from ..core.terminal_base import TerminalBase
from ..result import BUSY, DEAD, IDLE, SHELL_EXITED, TerminalInfo
from . import dead_owner, inband, side_channel
from .connection import Client
from .control_master import ControlMaster
from .job_stream import InbandStream
from .keyboard import RemoteKeyboard
from .prompt_watch import PromptWatch
from .targets import Target

log = logging.getLogger(__name__)

FORGET_TIMEOUT_S = 5.0
"""How long a close waits for the spawner thread to tell the watchdog (it
may be starting another terminal)."""


def too_old(version: str | None) -> str | None:
    """The required version when ``version`` (``5.2.15``, as the remote
    shell said) is older than ``bash_version.MIN_VERSION``, else None (also
    when the shell did not say)."""
    m = re.match(r"(\d+)\.(\d+)", version or "")
    if m is None or (int(m.group(1)), int(m.group(2))) >= bash_version.MIN_VERSION:
        return None
    return ".".join(map(str, bash_version.MIN_VERSION))


class RemoteTerminal(TerminalBase):
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
        self.target = target
        super().__init__(session_id, config)
        self.scanner = inband.Scanner()
        self.core = JobCore(
            session_id,
            config.max_lines,
            job_table=job_table,
            emit=emit,
            scanner=self.scanner,
            cwd=cwd,
            size=(config.cols, config.rows),
        )
        self.transport: Client = Client(session_id, target, config, secrets.token_hex(16), lambda: self.core.dead)
        # ssh with a side channel: without a login shell the terminal's ssh
        # is the engine's own connection (``master``), and the side channel's
        # session goes over it; a login start's ssh runs the user's login
        # shell and no master, and the side channel connects on its own
        # (Target.starts_login_shell). Both log to the private directory.
        self.login_start = target.starts_login_shell(config.login)
        self.ssh_log: ControlMaster | None = None
        self.master: ControlMaster | None = None
        if target.kind == "ssh" and side_channel.enabled():
            self.transport.control_dir = side_channel.new_control_dir()
            self.ssh_log = ControlMaster(self.transport.control_dir)
            self.master = None if self.login_start else self.ssh_log
        argv = side_channel.probe_argv(target, self.transport.control_dir, config.login)
        self.side = side_channel.SideChannel(argv) if argv else None
        if self.master is not None:
            self.scanner.on_end = self._on_shell_end
        self.watch = PromptWatch(self.core, self.side, self.transport.poke)
        self.stream = InbandStream(
            self.core, self.transport.type_later, self.watch.job_output, self.watch.confirm_prompt
        )
        self.keyboard = RemoteKeyboard(self.core, self.transport, self.watch)
        self._start(cwd)

    # ------------------------------------------------------------------
    # lifecycle
    def _start(self, cwd: str | None) -> None:
        started = time.monotonic()
        # The owner watchdog knows the terminal before its client starts (the
        # note goes from the spawner thread, ahead of the spawn): if the
        # owner dies, it removes the private directory and ends what carries
        # the token (a ``cmd:`` target's nohup children, the ssh clients,
        # a container's shell: ``dead_owner``); else a SIGKILLed owner left
        # its ``dsh-ssh-*`` directory, or its container shell, for good
        # (tests/reliability/test_exit_leftovers.py::test_nothing_left_when_a_remote_owner_goes).
        token = self.transport.token
        end = dead_owner.end_argv(self.target, token)
        pty.housekeeping(watchdog.watch, token, self.transport.control_dir, end, dead_owner.end_env(token) if end else None)
        try:
            self.transport.spawn(
                reader.Handlers(
                    closed=lambda: self.core.closed and self.core.dead,
                    next_due=self._next_due,
                    on_data=self.stream.on_pty,
                    on_due=self._on_due,
                    on_gone=self._on_client_gone,
                    on_idle=self.core.idle,
                    on_failed=self._on_reader_failed,
                )
            )
        except BaseException:
            # No client: nothing of the terminal runs, and its directory goes
            # now (it was left behind: tests/remote/test_failures.py::
            # test_a_missing_ssh_client_leaves_no_private_directory).
            side_channel.remove_control_dir(self.transport.control_dir)
            self._forget()
            raise
        core = self.core
        try:
            with ctrl_c.allowed():  # (the registry holds a Ctrl-C back around the rest: core.ctrl_c)
                try:
                    # (no bash answering a login start: reported below, as any start that found no shell)
                    if not self.login_start or self._bash_reads(started):
                        text = self.stream.setup_text(cwd, self.session_id, stty=not self.target.hands_modes, key=self.scanner.key)
                        self.transport.type(text)
                except ShellExited:
                    # The client ended before the set-up was typed (`cmd:false`):
                    # the reader sees it end (and sets `ready`); reported below as
                    # any start that found no shell, with the client's exit code
                    # (tests/remote/test_failures.py::test_a_client_that_ends_at_once_is_unreachable).
                    pass
                ready = core.ready.wait(max(0.0, self.config.start_timeout - (time.monotonic() - started)))
        except BaseException:
            self.close()
            raise
        if ready and not core.dead and self.stream.ready_status not in (0, None):
            self.close()
            raise InvalidArgument(
                f"cwd {cwd!r} is not a directory on {self.target}", field="cwd", cwd=cwd, session_id=self.session_id
            )
        if not ready or core.dead:
            exited = core.dead
            logged = self.ssh_log.said() if self.ssh_log is not None else ""  # (its file goes with close)
            self.close()
            said = " / ".join(w for w in (self.stream.startup_words(), logged) if w)
            if exited and core.failure:
                why = f"{self.target}: {core.failure}"
            elif exited and core.exit_code == 127 and self.target.kind == "ssh":
                why = f"{self.target}: no bash there to run (exit code 127, a command not found)"
            elif exited:
                why = f"{self.target}: the connection ended before a shell was ready (exit code {core.exit_code})"
            else:
                why = f"{self.target}: no shell answered within {self.config.start_timeout:g}s"
            raise TargetUnreachable(
                why + (f": {said}" if said else ""), session_id=self.session_id, target=str(self.target),
                exit_code=core.exit_code, output=said,
            )
        self.stream.started()
        self.scanner.seal()
        if self.ssh_log is not None:
            self.ssh_log.ready()
        if self.master is not None:
            if self.scanner.key is None and self.side is not None:
                # The wrapper drew no nonce (no uuid file, no od there): its
                # end would go unseen, and the side channel's session would
                # keep the connection up after the shell. No side channel, then.
                why = "the remote wrapper drew no nonce (no /proc/sys/kernel/random/uuid, no od there), so no side channel"
                log.warning("session %s: %s: %s", self.session_id, self.target, why)
                self.side.close(grace=0.0)
                self.watch.why_unavailable = why
        self._check_version()
        self.watch.located(self.stream.where[0])
        # The side channel opens at its first probe, not here: a terminal
        # whose jobs never go quiet (a fleet's `hostname`) never pays for its
        # session (sshd runs the user's shell and rc file for it; issue 35 §5).

    def _bash_reads(self, started: float) -> bool:
        """ssh's login start: type the check (``ssh_start.login_check``) and
        wait for a ``KEY`` marker, from the check under a bash login shell
        or from the wrapper another shell execs. False when none came
        before the start's deadline or the client ended."""
        core = self.core
        text, nonce = self.stream.login_text()
        self.scanner.expect_check(nonce)
        self.transport.type(text)
        left = max(0.0, self.config.start_timeout - (time.monotonic() - started))
        with core.out_cond:
            return core.out_cond.wait_for(lambda: self.scanner.key is not None or core.dead, timeout=left) and (
                self.scanner.key is not None
            )

    def _check_version(self) -> None:
        """SHELL_UNSUPPORTED for a remote bash older than the local engine needs."""
        required = too_old(self.stream.bash_version)
        if required:
            self.close()
            raise ShellUnsupported(
                f"{self.target}: the remote bash is {self.stream.bash_version}; dsh-magics needs bash "
                f"{required} or newer there",
                session_id=self.session_id, target=str(self.target), found=self.stream.bash_version,
                required=required,
            )

    def _next_due(self) -> float | None:
        dues = [d for d in (self.keyboard.next_due(), self.watch.next_due()) if d is not None]
        return min(dues) if dues else None

    def _on_due(self) -> None:
        self.keyboard.send_held_interrupts()
        self.watch.on_due()

    def close(self) -> None:
        """End the remote shell and what it started in its session, then the
        local client and anything it started here (a Ctrl-C half-way is held
        back until the close is complete: core.ctrl_c)."""
        with ctrl_c.deferred():
            self._close()

    def _close(self) -> None:
        core = self.core
        with core.lock:
            if not core.mark_closed():
                return
            idle = core.running is None and not core.dead and core.ready.is_set()
            busy = core.running is not None and not core.dead
        if busy and self.target.kind != "ssh" and self.watch.hang_up():
            # A container's exec session outlives its ended client: hang up
            # the remote shell as a closing terminal would (over ssh, sshd
            # does that when the connection ends). Its jobs end with it.
            with core.out_cond:
                core.out_cond.wait_for(lambda: core.dead, timeout=1.0)
        if self.side is not None and self.master is None:
            self.side.close()
        if idle and self.transport.pid is not None:
            # bash hangs up its jobs and exits; the client then exits alone.
            try:
                self.transport.type(inband.close_line())
                with core.out_cond:  # until the reader has seen the client exit (it alone reaps it)
                    core.out_cond.wait_for(lambda: core.dead, timeout=1.0)
            except ShellExited:
                pass  # the shell exited first: kill_tree below ends what is left
        self.transport.kill_tree(grace=0.5)
        self._reap(2.0)
        self._mark_dead(note="terminal closed")
        self.transport.join_reader()
        self.transport.close_fds()
        self.transport.close_process()
        if self.ssh_log is not None:
            self._end_connection()
        side_channel.remove_control_dir(self.transport.control_dir)
        # Last: an owner that dies before this still has its watchdog end the rest.
        self._forget()

    def _forget(self) -> None:
        """The watchdog forgets the terminal before the close returns: a
        process that exits right after a close left the note queued on the
        spawner (a daemon thread), and its watchdog ended a closed
        terminal as a dead owner's, running a container's end command
        (tests/reliability/test_exit_leftovers.py::
        test_an_orderly_close_runs_no_end_command). While a forget that
        timed out is still queued, the spawner is stuck and no close waits
        for it (``pty.settle_housekeeping``, under a held-back Ctrl-C).
        A forget that failed is logged, never raised: the terminal is closed."""
        done = pty.housekeeping(watchdog.forget, self.transport.token)
        try:
            settled = pty.settle_housekeeping(done, FORGET_TIMEOUT_S)
        except Exception:
            log.warning("the owner watchdog could not be told that %s closed", self.session_id, exc_info=True)
            return
        if settled == "stuck":
            log.warning("the owner watchdog is not told yet that %s closed (the spawner is stuck)", self.session_id)
        elif settled == "timed_out":
            log.warning("the owner watchdog was not told within %gs that %s closed", FORGET_TIMEOUT_S, self.session_id)

    def _reap(self, timeout: float) -> None:
        if self.core.exit_code is not None:
            return
        status = self.transport.reap(timeout)
        if status is not None:
            self.core.exited(*status)

    def _mark_dead(self, note: str | None = None) -> None:
        self.core.mark_dead(note)
        self.transport.poke()

    def _on_client_gone(self) -> None:
        """The local client exited: the connection dropped, the remote shell
        ended, or the client was killed. Keep every byte it printed (the job's
        output up to the drop, then the client's own message)."""
        core = self.core
        self.transport.drain(self.stream.on_pty)
        self._reap(2.0)
        words = ""
        if self.ssh_log is not None:
            # what the connection's ssh said after start-up (a timeout, a
            # reset); then the side channel's client, whose session went with
            # the connection, is reaped before the job settles and the
            # terminal counts as dead (tests/remote/test_control_master.py,
            # tests/remote/test_remote_prompts.py::test_ssh_exit_ends_the_terminal_with_the_side_channel_open)
            words = self.ssh_log.said(since_ready=True)
            self._end_connection()
        with core.lock:
            said = " / ".join(w for w in (self.stream.client_gone(), words) if w)
            run = core.running
            if run is not None and not core.closed:  # (closing: settled as "terminal closed")
                note = f"the connection to {self.target} ended (exit code {core.exit_code})"
                if said:
                    note += f": {said}"
                note += "; the next command opens a new connection"
                core.finish(run, SHELL_EXITED, core.exit_code, core.last_cwd, signal_no=core.exit_signal, note=note)
        # Dead before the job settles (mark_dead delivers it): a caller woken by
        # it may exec at once, and must get a new connection, not this one
        # (tests/remote/test_failures.py::test_the_terminal_is_dead_when_its_job_settles_shell_exited).
        self._mark_dead(note="terminal closed" if core.closed else None)

    def _on_reader_failed(self, error: BaseException) -> None:
        """Nothing reads the client's PTY any more, so no job could settle:
        end the client and everything it started, and settle the running job
        saying why, as when the connection ends (pinned by
        tests/terminal/test_reader_failure.py)."""
        log.error("session %s: the terminal's reader failed", self.session_id, exc_info=error)
        core = self.core
        core.failed(reader.failure(error))
        self.transport.kill_tree(grace=0.5)
        self._reap(2.0)
        with core.lock:
            run = core.running
            if run is not None:
                note = f"{core.failure}; its connection was ended; the next command opens a new connection"
                core.finish(run, SHELL_EXITED, core.exit_code, core.last_cwd, signal_no=core.exit_signal, note=note)
        self._mark_dead()  # (dead before the job settles, as above)
        if self.ssh_log is not None:
            self._end_connection()

    def _on_shell_end(self) -> None:
        """ssh: the wrapper says the remote bash has ended (on the reader's
        thread, under the terminal's lock). The side channel's session is
        all that keeps the connection (the terminal's ssh) up now: it is
        closed from a helper thread, and the terminal then ends as at any
        client's end (``_on_client_gone``). A side channel not started yet
        never starts."""
        if self.side is not None:
            threading.Thread(target=self.side.close, name=f"dsh-side-end-{self.session_id}", daemon=True).start()

    def _end_connection(self) -> None:
        """ssh: the terminal's ssh has ended. As the connection's master,
        the server hung up every session over it: end the side channel's
        client, whose session went with it (ended, not waited for: a client
        that had not reached the control socket yet would open a connection
        of its own). After a login start the side channel is a connection
        of its own, and nothing of the terminal may outlive it: the same."""
        if self.side is not None:
            self.side.close(grace=0.0)

    # ------------------------------------------------------------------
    # state
    @property
    def pid(self) -> int | None:
        """The local client's pid (ssh, docker, kubectl, or the cmd: program)."""
        return self.transport.pid

    @property
    def cwd(self) -> str | None:
        """The remote shell's cwd as of the last job's end (not live while busy)."""
        return self.core.last_cwd

    # ------------------------------------------------------------------
    # public operations
    def exec(
        self, command: str, *, fresh_shell: bool = False, tty: bool = False, source: str | None = None
    ) -> jobs.Job:
        """Start ``command``. With ``tty`` its stdin is the terminal (type to
        it with :meth:`type_input`) and the terminal echoes while it runs;
        otherwise stdin is /dev/null."""
        # Enter on a terminal sends CR, which the terminal turns into a newline
        # (ICRNL), also inside quotes: as typed, every CR is a newline.
        command = command.replace("\r\n", "\n").replace("\r", "\n")
        core = self.core
        with core.lock:
            job = core.new_job(command, self._cancel, source)
            run = Running(
                job=job,
                command=command,
                nonce=inband.new_nonce(),
                started_at=time.time(),
                start_line=core.ring.next_line,
                fresh_shell=fresh_shell,
                end_nonce=inband.new_nonce(),
            )
            core.begin(run)
            text = self.stream.job_text(run, command, tty)
        # Typed outside the terminal lock: a long command takes a while to go
        # through the client, and the reader must keep draining output.
        core.emit({"type": "job_started", "session_id": self.session_id, "job_id": job.id})
        self.transport.type_quietly(text)  # on a dead client the reader settles the job
        return job

    def _cancel(self, job: jobs.Job) -> None:
        self.keyboard.interrupt()

    def interrupt(self) -> jobs.Job | None:
        return self.keyboard.interrupt()

    def type_input(self, data: bytes | str) -> jobs.Job:
        return self.keyboard.type_input(data)

    def _type_in(self, typing: interaction.Typing) -> tuple[jobs.Job, int, str]:
        return self.keyboard.send(typing)

    def info(self) -> TerminalInfo:
        core = self.core
        with core.lock:
            run = core.running
            return TerminalInfo(
                session_id=self.session_id,
                status=DEAD if core.dead else (BUSY if run else IDLE),
                cwd=core.last_cwd,
                job_id=run.job.id if run else None,
                job_source=run.job.source if run else None,
                pid=self.pid,
                created_at=self.created_at,
                job_started_at=run.started_at if run else None,
                exit_code=core.exit_code if core.dead else None,
                lines=core.ring.next_line,
                awaiting_input=run.awaiting.to_dict() if run and run.awaiting else None,
                target=str(self.target),
                awaiting_input_unavailable=None if self.watch.available else self.watch.why_unavailable,
            )
