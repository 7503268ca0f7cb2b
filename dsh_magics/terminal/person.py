"""A person's command line at an idle terminal (``dsh-magics attach``).

The engine's shell reads no prompt of its own: every line it reads is a job
line the engine typed. So when an attached person presses a key at an idle
terminal, the registry starts a *prompt job* (``tty``, source ``person``)
whose command is bash's own ``read -e``: readline with the shell's line
editing and history, drawing the prompt ``\\u@\\h:\\w\\$``, and Tab bound
(``bind -x``, for this ``read`` only) to :data:`TAB_FN`, which completes as
bash's own prompt does: command names in command position, variables, ``~user``
and file names, from the shell itself (``compgen``).
The person's keys go to it as input. When they press Enter, the line is
handed back (:class:`LineFile`: a private file of this machine, for a local
terminal; :class:`LineMarker`: an in-band marker the reader takes out of the
stream, for a remote one); the prompt job ends and the registry starts the
line as a job of its own (``tty``, source ``person``). From the first key until that
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
from typing import Protocol

from .. import jobs
from ..errors import DshError, SessionBusy
from .core.markers import new_nonce
from .remote import inband

_log = logging.getLogger(__name__)

#: The first line of a prompt job's command (how listings recognise it).
PROMPT_LABEL = "# dsh-magics attach: a person's prompt"

#: What the prompt shows (expanded with bash's ``${var@P}``).
PROMPT = r"\u@\h:\w\$ "

#: Tab at the person's prompt. ``read -e`` completes file names only, and
#: offers no completion hook; but a ``bind -x`` function runs inside it with
#: the line in ``READLINE_LINE``/``READLINE_POINT``. This one asks the shell
#: (``compgen``) for what the word before the cursor may be: a command name in
#: command position (the line's start, after ``; | & ( `` ` or a keyword such as
#: ``then``), a variable after ``$``, a user after ``~``, a file name elsewhere.
#: As readline: one match is completed (``/`` after a directory, else a space),
#: several are completed to what they share and the bell rings; a second Tab
#: there lists them under the line. The engine's own names (``__dsh``) are left out.
TAB_FN = r"""__dsh_tab() {
  local head=${READLINE_LINE:0:READLINE_POINT} tail=${READLINE_LINE:READLINE_POINT} word= pre= kind=f m x lcp add=
  [[ $head =~ (\\.|[^[:space:]\;\|\&\(\)\<\>\`\\])*$ ]] && word=${BASH_REMATCH[0]}
  local before=${head:0:${#head}-${#word}} raw=${word//\\/}
  if [[ $raw == \$* && $raw != ?*[^[:alnum:]_]* ]]; then kind=v pre=\$ raw=${raw:1}
  elif [[ $raw == \~* && $raw != */* ]]; then kind=u pre=\~ raw=${raw:1}
  elif [[ $raw != */* && $before =~ (^|[\;\|\&\(\`]|(^|[[:space:]])(then|do|else|elif|if|while|until|time|!))[[:space:]]*$ ]]; then kind=c
  fi
  case $kind in
    v) mapfile -t m < <(compgen -v -- "$raw" | grep -v '^__dsh' | sort -u) ;;
    u) mapfile -t m < <(compgen -u -- "$raw" | sort -u) ;;
    c) mapfile -t m < <(compgen -c -- "$raw" | grep -v '^__dsh' | sort -u) ;;
    f) mapfile -t m < <(compgen -f -- "$raw" | sort -u) ;;
  esac
  if (( ${#m[@]} == 0 )); then printf '\a'; return; fi
  lcp=${m[0]}
  for x in "${m[@]}"; do while [[ ${x:0:${#lcp}} != "$lcp" ]]; do lcp=${lcp:0:${#lcp}-1}; done; done
  if (( ${#m[@]} == 1 )); then
    if [[ $kind == u || ( $kind == f && -d ${lcp/#\~/$HOME} ) ]]; then add=/; else add=' '; fi
  elif [[ $lcp == "$raw" ]]; then
    if [[ $__dsh_tab_at == "$READLINE_LINE:$READLINE_POINT" ]]; then
      printf '%s%s\n' "${__dsh_pp@P}" "$READLINE_LINE"
      for x in "${m[@]}"; do [[ $kind == f && -d $x ]] && x+=/; printf '%s%s  ' "$pre" "${x##*/}"; done
      printf '\n'
    else printf '\a'; fi
    __dsh_tab_at=$READLINE_LINE:$READLINE_POINT
    return
  fi
  [[ $kind == [fc] ]] && printf -v lcp %q "$lcp" && lcp=${lcp/#\\~/\~}
  READLINE_LINE=$before$pre$lcp$add$tail
  READLINE_POINT=$(( ${#before} + ${#pre} + ${#lcp} + ${#add} ))
  __dsh_tab_at=$READLINE_LINE:$READLINE_POINT
}"""


def prompt_command(hand_over: str) -> str:
    """The prompt job: read one line with readline and hand it over
    (``hand_over``: shell code that passes on ``$__dsh_pl``, see
    :class:`LineChannel`); the job ends with the previous command's status,
    so ``$?`` is kept for the line."""
    return (
        f"{PROMPT_LABEL}\n"
        # History off while the prompt runs. The engine keeps it off inside jobs, but a job
        # may have turned it on, and then bash adds each further line of a job's command to
        # it (and expands `!` in them). The engine put this job (and maybe this line) in the
        # history list; Up must find the person's lines only.
        "__dsh_ps=$? __dsh_ho=; [[ ! -o history ]] || { __dsh_ho=1; set +o history; }; "
        "while [[ $(history 1) == *'dsh-magics attach: a person'* ]]; do history -d -1 || break; done\n"
        f"__dsh_pp={shlex.quote(PROMPT)} __dsh_pl= __dsh_tab_at=\n"
        f"{TAB_FN}\n"
        # Tab is ours for this read only: the shell's own binding comes back after it.
        "__dsh_tk=$(bind -m emacs -p 2>/dev/null | grep -F '\"\\C-i\"')\n"
        "bind -m emacs -x '\"\\C-i\": __dsh_tab' 2>/dev/null; bind -m vi-insert -x '\"\\C-i\": __dsh_tab' 2>/dev/null\n"
        'IFS= read -e -r -p "${__dsh_pp@P}" __dsh_pl'
        f" && {{ {hand_over}; }}\n"
        "{ bind -m vi-insert '\"\\C-i\": complete'; bind -m emacs \"${__dsh_tk:-\\\"\\\\C-i\\\": complete}\"; } 2>/dev/null\n"
        'unset -f __dsh_tab; unset __dsh_pp __dsh_pl __dsh_tk __dsh_tab_at; [[ -z $__dsh_ho ]] || set -o history; '
        'unset __dsh_ho; (exit "$__dsh_ps")'
    )


class LineChannel(Protocol):
    """How a prompt job's line comes back to the registry. ``pending`` is
    true from the moment the line has come until it is discarded; it must
    be true before the prompt job counts as done (the reservation ends on
    a done prompt with nothing pending)."""

    def shell(self) -> str: ...  # shell code handing over $__dsh_pl
    def pending(self) -> bool: ...
    def read(self) -> str: ...
    def discard(self) -> None: ...


class LineFile:
    """A local terminal: the line in a private file of this machine (a 0700
    directory of the registry), written before the job's end marker."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.discard()

    def shell(self) -> str:
        return f'printf %s "$__dsh_pl" > {shlex.quote(self.path)}'

    def pending(self) -> bool:
        return os.path.exists(self.path)

    def read(self) -> str:
        try:
            with open(self.path, encoding="utf-8", errors="surrogateescape") as f:
                return f.read()
        except OSError:
            return ""

    def discard(self) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass  # never written (the prompt ended before a line): nothing to remove


class LineMarker:
    """A remote terminal: the line comes back in a ``LINE`` marker with a
    nonce of its own (``inband.line_text``), which the reader takes out of
    the stream before the job's end marker and keeps in ``lines`` (the
    stream's ``person_lines``, guarded by ``lock``, the terminal's lock).
    Nothing is written on either side; no output, screen or viewer has it."""

    def __init__(self, lock: threading.Lock | threading.RLock, lines: dict[str, str | None]) -> None:
        self.nonce = new_nonce()
        self._lock = lock
        self._lines = lines
        with lock:
            lines[self.nonce] = None

    def shell(self) -> str:
        return inband.line_text(self.nonce, "__dsh_pl")

    def pending(self) -> bool:
        with self._lock:
            return self._lines.get(self.nonce) is not None

    def read(self) -> str:
        with self._lock:
            return self._lines.get(self.nonce) or ""

    def discard(self) -> None:
        with self._lock:
            self._lines.pop(self.nonce, None)


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
        self._reserved: dict[str, tuple[jobs.Job, LineChannel]] = {}  # session -> (prompt job, its line's way back)
        self._submitted: set[str] = set()  # sessions whose prompt got its Enter
        self._dir: str | None = None

    def check(self, session_id: str, handover_timeout: float = 5.0) -> None:
        """SESSION_BUSY while a person's line is being typed. A prompt that
        has ended with its line still on the way (to a job of its own, or to
        nothing for an empty line) is waited for first, up to
        ``handover_timeout``: the terminal already reads as idle then, and a
        caller who saw it idle is told of the person's job, not of typing
        (tests/attach/test_person_prompt.py::test_tab_completes_commands_variables_and_file_names
        met that window about once in 25 runs under load)."""
        with self._lock:
            self._released.wait_for(lambda: not self._handing_over(session_id), handover_timeout)
            held = self._reserved.get(session_id)
            if held is None:
                return
            job, channel = held
            if job.done and not channel.pending():
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

    def _handing_over(self, session_id: str) -> bool:
        """(Under the lock.) The prompt job has ended and its line is still
        to be read, started or dropped (:meth:`_prompt_done`, :meth:`_run_line`)."""
        held = self._reserved.get(session_id)
        return held is not None and held[0].done and held[1].pending()

    def reserved(self, session_id: str) -> bool:
        try:
            self.check(session_id)
        except SessionBusy:
            return True
        return False

    def open(self, session_id: str, caller: str | None, channel: LineChannel | None = None) -> jobs.Job:
        """Start the prompt job at the idle terminal (SESSION_BUSY if busy);
        its line comes back through ``channel`` (default: a :class:`LineFile`)."""
        if channel is None:
            channel = LineFile(self._line_path(session_id))
        try:
            job = self._start(session_id, prompt_command(channel.shell()), caller)
        except BaseException:
            channel.discard()
            raise
        with self._lock:
            self._reserved[session_id] = (job, channel)
        job.add_done_listener(lambda j: self._prompt_done(session_id, j, channel, caller))
        return job

    def _prompt_done(self, session_id: str, job: jobs.Job, channel: LineChannel, caller: str | None) -> None:
        if not channel.pending():
            channel.discard()
            self._release(session_id, job)
            return
        # On the terminal's reader thread: start the line from another one.
        threading.Thread(
            target=self._run_line, args=(session_id, job, channel, caller), name="dsh-person-line", daemon=True
        ).start()

    def _run_line(self, session_id: str, job: jobs.Job, channel: LineChannel, caller: str | None) -> None:
        try:
            line = channel.read()
            if line.strip():
                try:
                    self._start(session_id, line, caller)
                except DshError:  # the terminal closed, died or got busy meanwhile: the line is dropped, as a closed window's
                    pass
                except Exception:  # noqa: BLE001 - on a thread of its own: say what broke, do not kill the process
                    _log.exception("dsh-magics: the line a person typed at %s could not be started", session_id)
        finally:
            channel.discard()
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

    def settled(self, session_id: str) -> bool:
        """No line of the session's person is being handed over (so
        :meth:`await_handover` would not wait). Read without the lock, for a
        key on its way (terminal/person_keys.py): a hand-over starts only with
        an Enter, which takes :meth:`await_handover`."""
        held = self._reserved.get(session_id)
        return held is None or (not held[0].done and session_id not in self._submitted)

    def await_handover(self, session_id: str, timeout: float = 5.0) -> None:
        """Until a submitted prompt's line has been started as a job (or there
        is none): keys typed right after Enter belong to that job, not to the
        prompt that is ending nor to a second one that would take its place."""
        with self._lock:
            self._released.wait_for(lambda: self.settled(session_id), timeout)

    def forget(self, session_id: str) -> None:
        with self._lock:
            held = self._reserved.pop(session_id, None)
            if held is not None:
                held[1].discard()
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


__all__ = ["PROMPT", "PROMPT_LABEL", "LineChannel", "LineFile", "LineMarker", "PersonPrompts", "is_prompt", "line_end", "prompt_command"]
