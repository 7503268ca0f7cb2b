"""Does a remote job wait for typed input, and is it hidden entry? Asked of
the side channel (:mod:`.side_channel`) when the running job's output goes
quiet, and before an agent's text is typed; never while idle."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from .. import interaction
from ..core.jobcore import JobCore
from ..core.jobview import Running
from .side_channel import Seen, SideChannel

QUIET_S = 0.1
"""Quiet spell after a running job's output (or its start, or an input) before the first probe."""
RETRY_S = (1.0, 4.0, 16.0)
"""Later probes while the job stays quiet and nothing reads the terminal (a
spell of output resets them: at most one probe per quiet spell under 1 s)."""
LAUNCH_WAIT_S = 0.25
"""How long a Ctrl-C may be held while the shell is still starting its
command (probes back to back until it has; a builtin loop never does)..."""
LAUNCH_TRIES = 5
"""... and in at most this many probes (a probe into a container is quick)."""
PROMPT_WAIT_S = 1.0
"""How long, after the prompt hint, the shell may take to be seen reading
its own next line (probes back to back; it is there within microseconds)."""
PROMPT_TRIES = (3, 20)
"""... and at least, and at most, this many probes."""


class PromptWatch:
    """The quiet check of one remote terminal. ``available`` is False when
    no side channel can run (``cmd:``, or the probe failed): then prompts
    are unknown (docs/remote.md)."""

    def __init__(self, core: JobCore, channel: SideChannel | None, wake: Callable[[], None]) -> None:
        self._core = core
        self._channel = channel
        self._wake = wake  # the reader picks up a new deadline
        self._pid: int | None = None  # the remote shell's, as it said at start-up
        self._tty: str | None = None  # its terminal, named by the side channel at its first use
        self._busy = False
        self._outputs = 0  # job output spells seen, to drop a probe overtaken by output
        # (job, output spells then): a probe saw its command launched, and it printed nothing since
        self._launched: tuple[Running, int] | None = None
        self.why_unavailable: str | None = (
            None if channel else "no side channel (a cmd: target without --probe=, or DSH_MAGICS_SIDE_CHANNEL=0)"
        )

    @property
    def available(self) -> bool:
        return self._channel is not None and self._pid is not None and self.why_unavailable is None

    def hang_up(self) -> bool:
        """SIGHUP to the remote shell through the side channel (a close
        while a job runs); False when it cannot be sent."""
        where = self._where() if self.available else None
        if where is None:
            return False
        assert self._channel is not None
        return self._channel.hang_up(where[1], where[0])

    @property
    def terminal(self) -> str | None:
        """The remote shell's terminal, once the side channel has named it (at its first use)."""
        return self._tty

    @property
    def probes(self) -> int:
        return self._channel.probes if self._channel is not None else 0

    def located(self, pid: int | None) -> None:
        """The shell said its pid (at start-up)."""
        if pid:
            self._pid = pid
        elif self.why_unavailable is None:
            self.why_unavailable = "the remote shell did not say its pid"

    def _where(self) -> tuple[int, str] | None:
        """(the shell's pid, its terminal): the terminal is asked of the
        side channel once, at its first use (``SideChannel.locate``)."""
        assert self._channel is not None and self._pid is not None
        if self._tty is None:
            self._tty = self._channel.locate(self._pid)
            if self._tty is None:
                if self._channel.broken:
                    self.why_unavailable = f"the side channel failed: {self._channel.broken}"
                else:
                    self.why_unavailable = "the side channel could not name the remote shell's terminal"
                return None
        return self._pid, self._tty

    def job_output(self, run: Running) -> None:
        """Output of the running job (or its start, call under the core's
        lock): what it waited for is answered; look again once it is quiet."""
        self._outputs += 1
        run.answered(QUIET_S if self.available else None)

    def interrupted(self, run: Running) -> None:
        """A Ctrl-C is on its way to the running job (call under the core's
        lock): the prompt it waited at is being left, so it no longer counts
        as awaiting input (a wait would return at once, before the job
        settles: issue 32); a program that survives the Ctrl-C and reads again
        (a REPL) is seen by the next look, once it is quiet. Its output
        spells are not counted: a launch seen before still holds."""
        run.answered(QUIET_S if self.available else None)

    def next_due(self) -> float | None:
        run = self._core.running
        return run.quiet.at if run is not None and self.available else None

    def on_due(self) -> None:
        """Reader thread: the quiet spell is over; probe in a helper thread."""
        core = self._core
        with core.lock:
            run = core.running
            if run is None or run.quiet.at is None or time.monotonic() < run.quiet.at or core.dead:
                return
            if self._busy:  # a probe is on its way: look again after it
                run.quiet.look_in(QUIET_S)
                return
            run.quiet.looking()
            self._busy = True
        threading.Thread(target=self._check, args=(run,), name="dsh-remote-probe", daemon=True).start()

    def _probe(self) -> Seen | None:
        assert self._channel is not None
        where = self._where()
        if where is None:
            return None
        pid, tty = where
        seen = self._channel.probe(tty, pid)
        if seen is None:
            self.why_unavailable = f"the side channel failed: {self._channel.broken}"
        return seen

    def _check(self, run: Running) -> None:
        core = self._core
        try:
            before = self._outputs
            seen = self._probe()
            first = False
            with core.lock:
                if core.running is not run or seen is None or self._outputs != before:
                    return
                self._saw_launch(run, seen, before)
                reader = seen.reader()
                if reader is None:
                    run.quiet.retried(RETRY_S)
                    return
                first = run.awaiting is None
                self._note(run, seen, reader)
        finally:
            with core.lock:
                self._busy = False
            self._wake_reader()
        if first:
            core.emit({"type": "output", "session_id": core.session_id})

    def _note(self, run: Running, seen: Seen, reader: tuple[int, str]) -> None:
        core = self._core
        run.prompt_seen(
            pid=reader[0],
            name=reader[1],
            prompt=core.ring.partial[-interaction.MAX_PROMPT_CHARS :],
            secret=hidden(seen),
        )
        core.touched()

    def secret_now(self, run: Running) -> bool | None:
        """Before an agent's text is typed: does the job ask for hidden entry
        right now? One probe; None when it cannot be told."""
        if not self.available:
            return None
        seen = self._probe()
        if seen is None:
            return None
        reader = seen.reader()
        if reader is None:
            return False
        with self._core.lock:
            if self._core.running is run:
                self._note(run, seen, reader)
        return hidden(seen)

    def _saw_launch(self, run: Running, seen: Seen, outputs: int) -> None:
        if seen.launched():
            self._launched = (run, outputs)

    def launched_known(self, run: Running) -> bool:
        """A probe made since the job's last output (or start, or input)
        saw its command launched: a Ctrl-C needs no new look."""
        return self._launched == (run, self._outputs)

    def when_launched(self, run: Running, then: Callable[[], None]) -> bool:
        """Call ``then`` (from a helper thread) once the side channel sees that
        the shell has finished starting the job's command, or after
        ``LAUNCH_WAIT_S`` or ``LAUNCH_TRIES`` probes. False, and nothing
        happens, when it cannot look."""
        if not self.available:
            return False

        def wait() -> None:
            deadline = time.monotonic() + LAUNCH_WAIT_S
            for _ in range(LAUNCH_TRIES):
                if self._core.running is not run or self._core.dead:
                    break
                before = self._outputs
                seen = self._probe()
                if seen is not None:
                    with self._core.lock:
                        if self._outputs == before:
                            self._saw_launch(run, seen, before)
                if seen is None or seen.launched() or time.monotonic() >= deadline:
                    break
            then()

        threading.Thread(target=wait, name="dsh-remote-launch", daemon=True).start()
        return True

    def confirm_prompt(self, run: Running, yes: Callable[[], None], no: Callable[[], None]) -> bool:
        """After the prompt hint (which any command can print): call ``yes``
        (from a helper thread) once the side channel sees the shell reading
        its own next line, or when it cannot tell; ``no`` when the job's
        command still runs (a forged hint), or the shell is not seen there
        within ``PROMPT_WAIT_S``. False, and nothing happens, when it cannot
        look at all (the caller then has only the hint)."""
        if not self.available:
            return False

        def confirm() -> None:
            deadline = time.monotonic() + PROMPT_WAIT_S
            tries = 0
            while self._core.running is run and not self._core.dead:
                seen = self._probe()
                verdict = None if seen is None else seen.prompt_verdict()
                if verdict is None or verdict:
                    yes()
                    return
                assert seen is not None
                tries += 1
                # not there yet (on a loaded machine a round trip can outlast the deadline)
                late = time.monotonic() >= deadline and tries >= PROMPT_TRIES[0]
                if seen.in_job() or late or tries >= PROMPT_TRIES[1]:
                    break
            no()

        threading.Thread(target=confirm, name="dsh-remote-hint", daemon=True).start()
        return True

    def _wake_reader(self) -> None:
        self._wake()


def hidden(seen: Seen) -> bool:
    """Hidden entry: echo off in canonical mode (``read -s``, getpass, sudo);
    the remote terminal echoes, so echo off is the program's wish. Unknown
    echo counts as hidden too (the safe side)."""
    if not seen.icanon:
        return False
    if seen.echo is None:
        return True
    return not seen.echo
