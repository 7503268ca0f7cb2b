"""The remote terminal's job stream: what the reader does with output and
the in-band markers, and how a job's result is made from the ring."""

from __future__ import annotations

import signal
import threading
import time

from ..core.jobview import Running, final_result
from ..result import COMPLETED, INTERRUPTED
from . import inband
from .inband import BEGIN, END, PROMPT, SYNC, TRAP_BEGIN, TRAP_END, Marker, new_nonce
from .keyboard import LAUNCH_HOLD_S
from .state import RemoteState

UNSENT_SIGINT_NOTE = (
    "the shell aborted the job's line after a SIGINT the engine did not send "
    "(a command in it died of SIGINT, or signalled the shell)"
)


class JobStream(RemoteState):
    """Marker half of :class:`.remote_terminal.RemoteTerminal` (state lives there)."""

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
        if not run.intr.requested:
            run.quiet.unsent_sigint = True
        run.sync_nonce = new_nonce()
        text = inband.sync_line(run.sync_nonce)
        threading.Thread(target=self._type_quietly, args=(text,), daemon=True).start()

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
                run.debug_trap = text or None
            self._trap_text = None
        elif m.kind == BEGIN and m.nonce == run.nonce and not run.saw_begin:
            self._flush_cleaner()
            self._ring.finish_partial()
            run.start_line = self._ring.next_line
            run.saw_begin = True
            run.begin_at = now = time.monotonic()
            if run.intr.pending:
                run.intr.due = now + LAUNCH_HOLD_S
        elif m.kind == END and m.nonce == run.end_nonce and run.end_line is None:
            self._flush_cleaner()
            run.ended_partial = self._ring.finish_partial()
            run.end_line = self._ring.next_line
            code = m.status if m.status is not None else -1
            status = COMPLETED
            if run.intr.requested and code == 128 + signal.SIGINT:
                status = INTERRUPTED
            self._pipestatus = m.pipestatus
            self._debug_trap = run.debug_trap
            self._finish(run, status, code, m.cwd)
        elif m.kind == SYNC and m.nonce == run.sync_nonce:
            note = UNSENT_SIGINT_NOTE if run.quiet.unsent_sigint else None
            self._aborted = True
            self._finish(run, INTERRUPTED, 128 + signal.SIGINT, m.cwd, signal_no=signal.SIGINT, note=note)

    def _flush_cleaner(self) -> None:
        text = self._cleaner.flush()
        if text:
            self._ring.feed(text)

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
        result = final_result(self.session_id, run, self._ring, status, code, self._cwd, signal_no, note)
        self._running = None
        self._output_seq += 1
        self._out_cond.notify_all()
        self._settled.append((run.job, status, result))

    def _deliver(self) -> None:
        while self._settled:
            job, status, result = self._settled.pop(0)
            job.settle(status, result)
            self._emit({"type": "job_done", "session_id": self.session_id, "job_id": job.id, "result": result})
