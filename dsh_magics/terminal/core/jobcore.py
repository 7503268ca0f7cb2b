"""The job core of one terminal: the job table entry of the running job, the
output it has printed (scanner, cleaner, ring), settling it, snapshots and
reads, waits for output, and the terminal's death. Local and remote terminals
each hold one and add a transport (how a line reaches bash, how its answers
and its end are seen); see docs/internals.md."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ... import jobs
from ...errors import NotRunning, SessionBusy, ShellExited
from ..result import COMPLETED, DEAD, INTERRUPTED, SHELL_EXITED, ReadResult, Result
from .altscreen import AltScreenGate
from .cleaner import Cleaner
from .jobview import Running, final_result, orphan_result, read_result, running_result
from .markers import BEGIN, END, SYNC, Marker, MarkerScanner, new_nonce
from .ring import Ring

if TYPE_CHECKING:
    from ..screen import Screen

Emit = Callable[[dict[str, Any]], None]

#: The note of a job whose program drew on the alternate screen.
FULL_SCREEN_NOTE = "the program used the full screen; its last screen is in `screen`"


class JobCore:
    """State and rules shared by every terminal. Its fields are the
    transport's to read under ``lock``, and changed only by its methods,
    which keep the invariants (one running job, every settle delivered once,
    every waiter woken). The marker protocol is here once: which marker
    belongs to the running job (:meth:`marked_job`), and what its begin, its
    end and the answer to a resync probe do (:meth:`job_began`,
    :meth:`job_ended`, :meth:`job_aborted`); a transport says only how its
    markers reach it and what it keeps of them (``tests/test_structure.py``
    checks that no transport assigns a field of the core or of the marker
    protocol)."""

    def __init__(
        self,
        session_id: str,
        max_lines: int,
        *,
        job_table: jobs.JobTable,
        emit: Emit | None,
        scanner: MarkerScanner,
        cwd: str | None,
        on_settle: Callable[[Running], None] | None = None,
        size: tuple[int, int] = (80, 24),
    ) -> None:
        self.session_id = session_id
        self.jobs = job_table
        self.emit: Emit = emit or (lambda event: None)
        self.lock = threading.RLock()
        self.out_cond = threading.Condition(self.lock)
        self.ring = Ring(max_lines)
        self.cleaner = Cleaner(keep_sgr=True)  # the ring keeps colours beside its lines
        self.scanner = scanner
        # Imported here, when the first terminal starts: the emulator's binding
        # parses its C declarations on import (0.15-0.35 s), and a process that
        # only drives terminals in a host never needs it (bench_startup.py;
        # tests/tools/test_argcheck.py::test_the_tools_and_the_mcp_server_start_without_jsonschema_or_the_emulator).
        from ..screen import Screen

        self.screen: Screen = Screen(*size)  # what an xterm of the terminal's size shows
        self.alt = AltScreenGate()  # output drawn on the alternate screen skips the ring
        self.used_full_screen = False  # the running job entered the alternate screen
        self.full_screen: tuple[str, ...] | None = None  # what it showed last, settled
        self._look_due = False  # an idle found the lock taken (idle, feed)
        self.running: Running | None = None
        self.output_seq = 0
        #: Raw viewers (TerminalBase.watch_screen): called with every piece fed
        #: to the screen, in order, under ``lock``.
        self.watchers: list[Callable[[bytes | None], None]] = []
        self.dead = False
        #: Why the terminal died, when the engine ended it itself (a failed
        #: reader): start-up reports it rather than an exit code.
        self.failure: str | None = None
        self.closed = False
        self.exit_code: int | None = None
        self.exit_signal: int | None = None
        self.ready = threading.Event()  # the shell answered its setup
        self.last_cwd = cwd  # the shell's cwd as last reported
        self._on_settle = on_settle
        self._settled: list[tuple[jobs.Job, str, Result]] = []

    # ------------------------------------------------------------------
    # output
    def feed(self, data: bytes) -> None:
        """Output bytes of the shell (markers already taken out): to the
        screen (queued; parsed when looked at or when the reader goes idle)
        and, cleaned, to the line ring."""
        if self._look_due:  # the reader's last idle found the lock taken: look now, before new output
            self._look_due = False
            self._keep_full_screen()
        for piece, on_alt, switch in self.alt.split(data):
            if switch is False and self.full_screen is None:  # leaving, never seen idle
                self.full_screen = tuple(self.screen.text())
            self.screen.feed(piece)
            for watcher in self.watchers:
                watcher(piece)
            if switch:
                self.used_full_screen = True
            if not on_alt:
                text = self.cleaner.feed(piece)
                if text:
                    self.ring.feed(text)

    def idle(self) -> None:
        """The reader has nothing more to read for now: parse the screen's
        queued output if it holds escape codes, so a look at it need not
        (plain text is left queued: a look parses only its last screenful,
        and parsing it here after every pause cost the reader about a tenth
        of its time on ``seq``, benchmarks/README.md). Skipped when somebody
        holds the lock (they may wait for this very reader); a look parses
        anyway; what a person saw then is kept by the next :meth:`feed`, before
        the new output (tests/terminal/test_altscreen.py::
        test_the_last_screen_is_kept_when_the_readers_idle_found_the_lock_taken)."""
        if self.lock.acquire(blocking=False):
            try:
                if self.screen.escapes_queued:
                    self.screen.settle()
                self._keep_full_screen()
            finally:
                self.lock.release()
        else:
            self._look_due = True

    def _keep_full_screen(self) -> None:
        if self.alt.active and self.running is not None:
            # What a person saw last (a program may scroll on its way out).
            self.full_screen = tuple(self.screen.text())

    def flush_cleaner(self) -> None:
        text = self.cleaner.flush()
        if text:
            self.ring.feed(text)

    def touched(self) -> None:
        """New output or a new state: wake every ``wait_output``."""
        self.output_seq += 1
        self.out_cond.notify_all()

    # ------------------------------------------------------------------
    # jobs
    def new_job(
        self, command: str, canceller: Callable[[jobs.Job], None], source: str | None = None
    ) -> jobs.Job:
        """A job for ``command``, refused while the shell is dead or busy
        (call with ``lock`` held, then :meth:`begin` it)."""
        if self.dead:
            raise ShellExited(f"the shell of session {self.session_id!r} has exited", session_id=self.session_id)
        if self.running is not None:
            raise SessionBusy(
                f"session {self.session_id!r} is running job {self.running.job.id}; "
                "wait for it, interrupt it, or use another session",
                session_id=self.session_id,
                job_id=self.running.job.id,
            )
        return jobs.Job("bash", self.session_id, label=command[: jobs.MAX_LABEL_CHARS], canceller=canceller, source=source)

    def input_run(self) -> Running:
        """The running job, to type into (call with ``lock`` held); with none,
        typed text would become a command of the shell itself: NOT_RUNNING."""
        run = self.running
        if run is None or self.dead:
            raise NotRunning(
                f"session {self.session_id!r} runs no job: typed text would be a command "
                "of the shell itself; start the program with exec first",
                session_id=self.session_id,
            )
        return run

    def begin(self, run: Running) -> None:
        self.running = run
        self.used_full_screen = self.alt.active
        self.full_screen = None
        self.jobs.add(run.job)

    def finish(
        self,
        run: Running,
        status: str,
        code: int | None,
        cwd: str | None,
        *,
        signal_no: int | None = None,
        note: str | None = None,
    ) -> None:
        """Settle ``run`` (if it is still the running job); delivered by :meth:`deliver`."""
        if self.running is not run:
            return
        if cwd:
            self.last_cwd = cwd
        self.flush_cleaner()
        result = final_result(self.session_id, run, self.ring, status, code, self.last_cwd, signal_no, note)
        if self.used_full_screen:
            # Its drawing skipped the ring: the result keeps the last full screen instead.
            result.screen = list(self.screen.text() if self.alt.active else self.full_screen or ())
            # A program killed on the alternate screen leaves it on: the next
            # jobs' output still goes to the ring.
            self.alt.reset()
            result.note = FULL_SCREEN_NOTE if not result.note else f"{result.note}; {FULL_SCREEN_NOTE}"
        self.running = None
        self.touched()  # wake wait_output() even if the job printed nothing
        if self._on_settle is not None:
            self._on_settle(run)
        self._settled.append((run.job, status, result))

    def deliver(self) -> None:
        """Settle finished jobs outside the terminal lock, last thing before
        the reader blocks again, so a woken waiter does not have to queue
        behind the reader for the lock (a measurable part of a round trip)."""
        while self._settled:
            job, status, result = self._settled.pop(0)
            job.settle(status, result)
            self.emit({"type": "job_done", "session_id": self.session_id, "job_id": job.id, "result": result})

    def mark_dead(self, note: str | None = None) -> None:
        """The terminal is dead: settle its job, wake every waiter, say so once."""
        with self.lock:
            was_dead = self.dead
            self.dead = True
            run = self.running
            if run is not None:
                self.finish(run, SHELL_EXITED, self.exit_code, self.last_cwd, note=note or "the shell exited")
            self.out_cond.notify_all()
        self.deliver()
        self.ready.set()
        if not was_dead:
            self.emit({"type": "terminal", "session_id": self.session_id, "status": DEAD})

    # ------------------------------------------------------------------
    # the marker protocol (call with ``lock`` held)
    def shell_ready(self, cwd: str | None = None) -> None:
        """The answer to the set-up line: what the shell printed before (its
        profile's greeting, the set-up's echo) is nobody's output."""
        self.cleaner.flush()  # (dropped with the rest)
        self.ring.clear()
        self.screen.reset()
        self.alt.reset()
        if cwd:
            self.last_cwd = cwd
        self.ready.set()

    def marked_job(self, m: Marker) -> Running | None:
        """The running job when ``m`` is one of its markers that counts: its
        first begin marker, its end marker (once), or the answer to its
        resync probe; else None (a repeated begin, an old job's marker, a
        forgery without the nonce)."""
        run = self.running
        if run is None or not m.nonce:
            return None
        if m.kind == BEGIN:
            return run if m.nonce == run.nonce and not run.saw_begin else None
        if m.kind == END:
            return run if m.nonce == run.end_nonce and run.end_line is None else None
        if m.kind == SYNC:
            return run if m.nonce == run.sync_nonce else None
        return None

    def job_began(self, run: Running) -> float:
        """Its begin marker: the job's output starts on the next line. Returns when."""
        self.flush_cleaner()
        self.ring.finish_partial()
        run.start_line = self.ring.next_line
        run.saw_begin = True
        run.begin_at = now = time.monotonic()
        return now

    def job_ended(self, run: Running, status: int | None, cwd: str | None) -> None:
        """Its end marker, with the command's exit ``status``: settle it, as
        INTERRUPTED when a requested Ctrl-C ended it (130), else COMPLETED."""
        self.flush_cleaner()
        run.ended_partial = self.ring.finish_partial()
        run.end_line = self.ring.next_line
        code = status if status is not None else -1
        how = INTERRUPTED if run.intr.requested and code == 128 + signal.SIGINT else COMPLETED
        self.finish(run, how, code, cwd)

    def resync(self, run: Running) -> str:
        """A new resync probe for ``run`` (its end marker may never come: an
        aborted line); returns the nonce its answer carries."""
        run.sync_nonce = new_nonce()
        return run.sync_nonce

    def job_aborted(self, run: Running, cwd: str | None, note: str | None = None) -> None:
        """The answer to its resync probe came, not its end marker: bash
        aborted the job's line (a Ctrl-C), so the job ends INTERRUPTED."""
        self.finish(run, INTERRUPTED, 128 + signal.SIGINT, cwd, signal_no=signal.SIGINT, note=note)

    # ------------------------------------------------------------------
    # the terminal's end
    def mark_closed(self) -> bool:
        """Closing starts: True the first time only (call with ``lock`` held)."""
        if self.closed:
            return False
        self.closed = True
        return True

    def exited(self, code: int, signal_no: int | None) -> None:
        """The shell's (or the client's) exit status, once collected."""
        with self.lock:
            self.exit_code, self.exit_signal = code, signal_no

    def failed(self, why: str) -> None:
        """The engine ends the terminal itself (its reader failed): start-up
        and the settled job report ``why``."""
        self.failure = why

    def shell_replaced(self, run: Running, note: str) -> None:
        """Another program took the shell's place: the job ends SHELL_EXITED
        and the terminal is dead (call with ``lock`` held; :meth:`deliver`
        and the DEAD event follow once its tree is killed)."""
        self.finish(run, SHELL_EXITED, None, self.last_cwd, note=note)
        self.dead = True
        self.out_cond.notify_all()

    # ------------------------------------------------------------------
    # views
    def snapshot(self, job: jobs.Job, cwd: str | None) -> Result:
        """The job's result so far (final once the job has settled)."""
        if job.done:
            return job.result
        with self.lock:
            run = self.running
            if run is None or run.job is not job:
                return job.result if job.done else orphan_result(self.session_id, job, cwd)
            return running_result(self.session_id, run, self.ring, cwd)

    def read(self, since: int | None = None, last: int | None = None) -> ReadResult:
        with self.lock:
            job_id = self.running.job.id if self.running else None
            return read_result(self.session_id, self.ring, since, last, job_id)

    def wait_output(self, after_seq: int, timeout: float | None) -> int:
        """Block until output newer than ``after_seq`` arrives (or a job
        settles, or the timeout passes); returns the current sequence number."""
        with self.out_cond:
            self.out_cond.wait_for(lambda: self.output_seq != after_seq or self.dead, timeout=timeout)
            return self.output_seq
