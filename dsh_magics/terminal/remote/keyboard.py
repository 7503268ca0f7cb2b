"""The remote terminal's input side: Ctrl-C with its launch hold, and text
typed to the running job."""

from __future__ import annotations

import time

from ... import jobs
from ...errors import SecretInput
from .. import interaction
from ..core.input_record import Typed
from ..core.jobcore import JobCore
from ..core.jobview import Running
from ..core.run_state import Phase
from .connection import Client
from .prompt_watch import PromptWatch

INTERRUPT_CHAR = b"\x03"
BEGIN_WAIT_S = 1.0


class RemoteKeyboard:
    """Keys and text for the running job of a remote terminal, typed
    through its client."""

    def __init__(self, core: JobCore, client: Client, watch: PromptWatch) -> None:
        self._core = core
        self._client = client
        self._watch = watch

    def interrupt(self) -> jobs.Job | None:
        """Ctrl-C: the interrupt character, typed. The remote terminal signals
        its foreground process group. One call, one character.

        A Ctrl-C that lands while bash is still forking the job's command (or
        a child has not ``exec``-ed yet) reaches only bash, or a copy of it
        that has not reset its handlers, and is lost while the command goes
        on. So a press waits for its condition: before the job's begin marker
        it waits for the marker (at most ``BEGIN_WAIT_S``: bash may still be
        reading a long command, and the character then aborts the line);
        after it, until the side channel sees the command launched
        (``PromptWatch.when_launched``, with its deadline), unless a probe
        since the job's last output saw that already. Without a side
        channel it goes with the begin marker (docs/remote.md)."""
        core = self._core
        with core.lock:
            run = core.running
            if run is None or core.dead:
                return None
            run.intr.press_held()
            self._watch.interrupted(run)
            if not run.saw_begin:
                run.intr.begin_awaited(time.monotonic() + BEGIN_WAIT_S)
                self._client.poke()
                return run.job
            if run.intr.phase is Phase.HOLD:  # a launch check is on its way: it sends this one too
                return run.job
            run.intr.launch_checked()
            known = self._watch.launched_known(run)
        if known:  # seen launched since the job last printed: no new look
            self._send_pending(run, at_once=True)
        else:
            self._release(run, at_once=True)
        return run.job

    def _release(self, run: Running, at_once: bool) -> None:
        """Type the held presses once the command is launched, or now when
        the side channel cannot look (``at_once``: from this thread; else
        from a helper, as the reader thread never waits behind typing)."""
        if self._watch.when_launched(run, lambda: self._send_pending(run, True)):
            return
        self._send_pending(run, at_once)

    def _send_pending(self, run: Running, at_once: bool) -> None:
        with self._core.lock:
            count = run.intr.presses_taken()
            if self._core.running is not run:
                return
        if count:
            keys = INTERRUPT_CHAR.decode() * count
            if at_once:
                self._client.type_quietly(keys)
            else:
                self._client.type_later(keys)

    def next_due(self) -> float | None:
        run = self._core.running
        return run.intr.due if run is not None else None

    def send_held_interrupts(self) -> None:
        """Reader thread: the Ctrl-Cs held for the begin marker go once it
        came (through the launch check), or when it did not come in time."""
        with self._core.lock:
            run = self._core.running
            if run is None:
                return
            deadline = run.intr.due
            if deadline is None or time.monotonic() < deadline:
                return
            run.intr.due_taken()
            if not run.intr.pending or run.intr.phase is Phase.HOLD:
                return
            run.intr.launch_checked()
            launch_check = run.saw_begin
        if launch_check:
            self._release(run, at_once=False)
        else:
            self._send_pending(run, at_once=False)

    def type_input(self, data: bytes | str) -> jobs.Job:
        """Type ``data`` on the terminal for the running job (a program that
        reads it: a ``tty`` job, or one that opened /dev/tty), as a person's
        keys (:meth:`send`, recorded). Refused with NOT_RUNNING when no job
        runs: the shell itself would take it as a command. Nothing here can
        tell whether the job reads it."""
        text = data.decode("utf-8", "surrogateescape") if isinstance(data, bytes) else data
        job, _, _ = self.send(interaction.Typing(text, None, False, interaction.PERSON, raw=True))
        return job

    def send(self, typing: interaction.Typing) -> tuple[jobs.Job, int, str]:
        """Type into the running job's terminal, as the local engine's
        ``send`` does: returns the job, the ring line where output after the
        input starts, and the unfinished line it was typed onto. NOT_RUNNING
        with no job running. With ``allow_secret`` false (an agent), text is
        refused with SECRET_INPUT when the side channel sees hidden entry
        (one probe, now), and also when it cannot look, unless
        ``allow_unknown_prompt``; ``secret`` keeps the text out of the record."""
        core = self._core
        data = typing.data()
        with core.lock:
            run = core.input_run()
        hidden = False
        if not typing.keyed and not typing.allow_secret:
            seen = self._watch.secret_now(run)
            if seen is None and not typing.allow_unknown_prompt:
                raise SecretInput(
                    f"job {run.job.id} runs on {core.session_id!r}, whose prompts cannot be seen "
                    f"({self._watch.why_unavailable or 'the side channel did not answer'}): it may be a "
                    "password prompt. Pass allow_unknown_prompt: true to type anyway, or let a person answer",
                    session_id=core.session_id,
                    job_id=run.job.id,
                    unknown_prompt=True,
                )
            if seen:
                raise interaction.hidden_entry_refused(core.session_id, run.job.id)
        with core.lock:
            run = core.input_run()
            hidden = bool(run.awaiting and run.awaiting.secret)
            if typing.raw and (run.awaiting is None or run.awaiting.secret):
                # A person's keys: the side channel has not shown a prompt that
                # echoes them, so they may be a password: recorded as [secret].
                hidden = True
            record = typing.record(hidden)
            if typing.keyed:  # as an xterm in the screen's current modes sends them
                data = typing.data(core.screen.modes())
            start_line, prompt, job = core.ring.next_line, core.ring.partial, run.job
            self._watch.job_output(run)  # what it waited for is answered; look again once quiet
        typed = Typed(core.session_id, job.id, record, run.inputs.append, core.emit)
        if typing.key == "ctrl-c":
            typed.writing()
            self.interrupt()  # with its hold early in a job (see interrupt): typed as the engine's
            typed.written()
        else:
            self._client.type(data.decode("utf-8", "surrogateescape"), typed=typed)  # recorded once written
        self._client.poke()
        return job, start_line, prompt
