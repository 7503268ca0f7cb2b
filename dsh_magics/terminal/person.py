"""A person's command line at an idle terminal (``dsh-magics attach``).

The engine's shell reads no prompt of its own: every line it reads is a job
line the engine typed. So when an attached person presses a key at an idle
terminal, the registry starts a *prompt job* (``tty``, source ``person``)
whose command is bash's own ``read -e``: readline with the shell's line
editing, history and Tab completion, drawing the prompt ``\\u@\\h:\\w\\$``.
The person's keys go to it as input. When they press Enter, the line goes
into a private file; the prompt job ends and the registry starts the line as
a job of its own (``tty``, source ``person``). From the first key until that
job has started the session is *reserved*: another caller's ``exec`` gets
SESSION_BUSY, so nothing mixes into the half-typed line (docs/internals.md,
"A person at the prompt").
"""

from __future__ import annotations

import hashlib
import logging
import os
import shlex
import shutil
import tempfile
import threading
from collections.abc import Callable

from .. import jobs
from ..errors import DshError, SessionBusy

_log = logging.getLogger(__name__)

#: The first line of a prompt job's command (how listings recognise it).
PROMPT_LABEL = "# dsh-magics attach: a person's prompt"

#: What the prompt shows (expanded with bash's ``${var@P}``).
PROMPT = r"\u@\h:\w\$ "


def prompt_command(path: str) -> str:
    """The prompt job: read one line with readline into ``path``; the job
    ends with the previous command's status, so ``$?`` is kept for the line."""
    return (
        f"{PROMPT_LABEL}\n"
        f"__dsh_ps=$? __dsh_pp={shlex.quote(PROMPT)} __dsh_pl=\n"
        # The engine put this job in the history list; Up must find the person's lines only.
        "[[ $(history 1) == *'dsh-magics attach: a person'* ]] && history -d -1\n"
        'IFS= read -e -r -p "${__dsh_pp@P}" __dsh_pl'
        f' && printf %s "$__dsh_pl" > {shlex.quote(path)}\n'
        'unset __dsh_pp __dsh_pl; (exit "$__dsh_ps")'
    )


def is_prompt(command: str | None) -> bool:
    return bool(command) and str(command).startswith(PROMPT_LABEL)


_PASTE_START, _PASTE_END = "\x1b[200~", "\x1b[201~"


def line_end(keys: str) -> int:
    """Where the first Enter (CR or LF) outside a bracketed paste is in
    ``keys``, or -1: what a prompt takes as its line ends there."""
    i, pasting = 0, False
    while i < len(keys):
        if keys.startswith(_PASTE_START, i):
            pasting, i = True, i + len(_PASTE_START)
        elif keys.startswith(_PASTE_END, i):
            pasting, i = False, i + len(_PASTE_END)
        elif keys[i] in "\r\n" and not pasting:
            return i
        else:
            i += 1
    return -1


class PersonPrompts:
    """The prompt jobs and reservations of one registry.

    ``start(session_id, command, source, caller)`` starts a job (the
    registry's exec without the reservation check)."""

    def __init__(self, start: Callable[[str, str, str | None], jobs.Job]) -> None:
        self._start = start
        self._lock = threading.Lock()
        self._released = threading.Condition(self._lock)
        self._reserved: dict[str, tuple[jobs.Job, str]] = {}  # session -> (prompt job, line file)
        self._submitted: set[str] = set()  # sessions whose prompt got its Enter
        self._dir: str | None = None

    def check(self, session_id: str) -> None:
        """SESSION_BUSY while a person's line is being typed or handed over."""
        with self._lock:
            held = self._reserved.get(session_id)
            if held is None:
                return
            job, path = held
            if job.done and not os.path.exists(path):
                # The prompt ended without a line (Ctrl-C, Ctrl-D, an empty
                # line) or the line's job has started: nothing to wait for.
                del self._reserved[session_id]
                self._submitted.discard(session_id)
                return
        raise SessionBusy(
            f"session {session_id!r}: a person is typing a command at its prompt "
            "(dsh-magics attach); try again when their command has run",
            session_id=session_id,
            job_id=job.id,
        )

    def reserved(self, session_id: str) -> bool:
        try:
            self.check(session_id)
        except SessionBusy:
            return True
        return False

    def open(self, session_id: str, caller: str | None) -> jobs.Job:
        """Start the prompt job at the idle terminal (SESSION_BUSY if busy)."""
        path = self._line_path(session_id)
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        job = self._start(session_id, prompt_command(path), caller)
        with self._lock:
            self._reserved[session_id] = (job, path)
        job.add_done_listener(lambda j: self._prompt_done(session_id, j, path, caller))
        return job

    def _prompt_done(self, session_id: str, job: jobs.Job, path: str, caller: str | None) -> None:
        if not os.path.exists(path):
            self._release(session_id, job)
            return
        # On the terminal's reader thread: start the line from another one.
        threading.Thread(
            target=self._run_line, args=(session_id, job, path, caller), name="dsh-person-line", daemon=True
        ).start()

    def _run_line(self, session_id: str, job: jobs.Job, path: str, caller: str | None) -> None:
        try:
            try:
                with open(path, encoding="utf-8", errors="surrogateescape") as f:
                    line = f.read()
            except OSError:
                line = ""
            if line.strip():
                try:
                    self._start(session_id, line, caller)
                except DshError:  # the terminal closed, died or got busy meanwhile: the line is dropped, as a closed window's
                    pass
                except Exception:  # noqa: BLE001 - on a thread of its own: say what broke, do not kill the process
                    _log.exception("dsh-magics: the line a person typed at %s could not be started", session_id)
        finally:
            try:
                os.unlink(path)
            except OSError:
                pass
            self._release(session_id, job)

    def _release(self, session_id: str, job: jobs.Job) -> None:
        with self._lock:
            held = self._reserved.get(session_id)
            if held is not None and held[0] is job:
                del self._reserved[session_id]
                self._submitted.discard(session_id)
            self._released.notify_all()

    def submitted(self, session_id: str) -> None:
        """The person's Enter went to the prompt: its line is on its way."""
        with self._lock:
            if session_id in self._reserved:
                self._submitted.add(session_id)

    def await_handover(self, session_id: str, timeout: float = 5.0) -> None:
        """Until a submitted prompt's line has been started as a job (or there
        is none): keys typed right after Enter belong to that job, not to the
        prompt that is ending nor to a second one that would take its place."""
        def settled() -> bool:
            held = self._reserved.get(session_id)
            return held is None or (not held[0].done and session_id not in self._submitted)

        with self._lock:
            self._released.wait_for(settled, timeout)

    def forget(self, session_id: str) -> None:
        with self._lock:
            self._reserved.pop(session_id, None)
            self._submitted.discard(session_id)
            self._released.notify_all()

    def _line_path(self, session_id: str) -> str:
        with self._lock:
            if self._dir is None:
                self._dir = tempfile.mkdtemp(prefix="dsh-person-")
            d = self._dir
        return os.path.join(d, hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:24] + ".line")

    def close(self) -> None:
        with self._lock:
            d, self._dir = self._dir, None
        if d is not None:
            shutil.rmtree(d, ignore_errors=True)


__all__ = ["PROMPT", "PROMPT_LABEL", "PersonPrompts", "is_prompt", "line_end", "prompt_command"]
