"""The operations every terminal offers on its job core, whatever its
transport. A terminal class adds its transport as composed objects and the
few operations that depend on it (``exec``, ``interrupt``, ``info``, ``close``,
``cwd``, and typing: ``_type_in``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ... import jobs
from ...errors import ShellExited
from .. import interaction
from ..config import TerminalConfig
from ..result import ReadResult, Result
from .jobcore import JobCore
from .transport import Transport


class TerminalBase:
    core: JobCore
    transport: Transport

    def __init__(self, session_id: str, config: TerminalConfig) -> None:
        self.session_id = session_id
        self.config = config
        self.created_at = time.time()

    @property
    def cwd(self) -> str | None:
        raise NotImplementedError

    def _type_in(self, typing: interaction.Typing) -> tuple[jobs.Job, int, str]:
        raise NotImplementedError

    @property
    def dead(self) -> bool:
        return self.core.dead

    @property
    def closed(self) -> bool:
        return self.core.closed

    @property
    def busy(self) -> bool:
        return self.core.running is not None

    @property
    def running_job(self) -> jobs.Job | None:
        run = self.core.running
        return run.job if run else None

    @property
    def output_seq(self) -> int:
        return self.core.output_seq

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
        allow_unknown_prompt: bool = False,
        keys: list[str] | None = None,
    ) -> tuple[jobs.Job, int, str]:
        """Type into the running job's terminal, as a person at its keyboard.

        Returns the job, the ring line number where output after the input
        starts, and the unfinished line the input was typed onto (the
        prompt). With no job running, typed text would become a command line
        of the shell itself: NOT_RUNNING. ``allow_secret=False`` (the agent
        tools) refuses text while the job asks for hidden entry, where the
        terminal can see that: SECRET_INPUT; where it cannot look (a remote
        terminal without a side channel), also unless ``allow_unknown_prompt``.
        """
        return self._type_in(
            interaction.Typing(
                text,
                key,
                enter,
                source,
                caller,
                secret,
                allow_secret,
                allow_unknown_prompt,
                tuple(keys) if keys is not None else None,
            )
        )

    def type_keys(self, data: str, caller: str | None = None) -> tuple[jobs.Job, int, str]:
        """An attached person's keys, as their terminal sent them, to the
        running job (NOT_RUNNING if none); recorded as the person's input."""
        return self._type_in(
            interaction.Typing(data, None, False, interaction.PERSON, caller, raw=True)
        )

    def screen(self, styles: bool = False, vt: bool = False) -> dict[str, Any]:
        """The screen now (``screen.Snapshot.to_dict``); ``vt`` adds ``vt``,
        each row as text with SGR sequences (:meth:`Screen.vt_rows`)."""
        with self.core.lock:
            out = self.core.screen.snapshot(styles=styles).to_dict()
            if vt:
                out["vt"] = list(self.core.screen.vt_rows())
            return out

    def watch_screen(self, listener: Callable[[bytes | None, Callable[[], dict[str, Any]]], None]) -> Callable[[], None]:
        """Hand ``listener`` the terminal's output as the screen gets it, for a
        viewer that writes it to a real terminal (host/stream.py): every piece
        fed to the screen, then ``None`` whenever the viewer must redraw from
        the screen instead (once now, and after each resize). Its second
        argument takes the screen (``screen(vt=True)``). Called under the
        terminal's lock, so a screen taken inside ``listener`` matches the
        stream exactly; the listener must only queue. Returns the function
        that stops it."""

        def take() -> dict[str, Any]:
            return self.screen(vt=True)

        def watcher(piece: bytes | None) -> None:
            listener(piece, take)

        with self.core.lock:
            self.core.watchers.append(watcher)
            watcher(None)

        def unwatch() -> None:
            with self.core.lock:
                if watcher in self.core.watchers:
                    self.core.watchers.remove(watcher)

        return unwatch

    def resize(self, cols: int, rows: int) -> None:
        """A new size for the PTY and the screen; the program gets SIGWINCH."""
        with self.core.lock:
            if self.core.dead:
                raise ShellExited(f"the shell of session {self.session_id!r} has exited", session_id=self.session_id)
            self.transport.set_size(cols, rows)
            self.core.screen.resize(cols, rows)
            self.core.touched()
            for watcher in self.core.watchers:
                watcher(None)  # the screen reflowed: a raw viewer redraws from it

    def snapshot(self, job: jobs.Job) -> Result:
        """The job's result so far (final once the job has settled)."""
        return self.core.snapshot(job, self.cwd)

    def read(self, since: int | None = None, last: int | None = None) -> ReadResult:
        return self.core.read(since, last)

    def wait_output(self, after_seq: int, timeout: float | None) -> int:
        """Block until output newer than ``after_seq`` arrives (or a job
        settles, or the timeout passes); returns the current sequence number."""
        return self.core.wait_output(after_seq, timeout)
