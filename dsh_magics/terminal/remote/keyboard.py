"""The remote terminal's input side: Ctrl-C with its launch hold, and text
typed to the running job."""

from __future__ import annotations

import threading
import time

from ... import jobs
from ...errors import NotRunning, ShellExited
from .. import interaction
from .state import RemoteState

INTERRUPT_CHAR = b"\x03"
LAUNCH_HOLD_S = 0.05
"""A Ctrl-C this soon after a job's begin marker waits until then (see interrupt)."""
BEGIN_WAIT_S = 1.0


class Keyboard(RemoteState):
    """Input half of :class:`.remote_terminal.RemoteTerminal` (state lives there)."""

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
            run.intr.requested = True
            now = time.monotonic()
            begin_at = run.begin_at
            if begin_at is None or now < begin_at + LAUNCH_HOLD_S:
                run.intr.pending += 1
                run.intr.due = now + BEGIN_WAIT_S if begin_at is None else begin_at + LAUNCH_HOLD_S
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
            deadline = run.intr.due
            if deadline is None or time.monotonic() < deadline:
                return
            count, run.intr.pending, run.intr.due = run.intr.pending, 0, None
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
            run.inputs.append(record)
            start_line, prompt, job = self._ring.next_line, self._ring.partial, run.job
        if key == "ctrl-c":
            self.interrupt()  # with its hold early in a job (see interrupt)
        else:
            self._type(data.decode("utf-8", "surrogateescape"))
        self._emit({"type": "input", "session_id": self.session_id, "job_id": job.id, "input": record.to_dict()})
        return job, start_line, prompt

