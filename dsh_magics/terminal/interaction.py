"""Typing into a running job, and knowing when a job waits to be typed to.

Three small things the engine and every adapter share:

* :data:`KEYS` and :func:`encode`: what bytes a named key or a line of text
  puts on the terminal, so ``send(..., key="ctrl-c")`` means the same from a
  magic, a tool, the panel and the host.
* :class:`InputRecord`: one entry of a job's record of who typed what, with
  secret text never stored.
* :func:`detect`: whether the job's foreground process is blocked waiting for
  the terminal, read from the terminal itself (its termios flags and what the
  processes of its foreground group are blocked in, asked of the process
  layer ``procs``). No
  regular expression of prompts is involved: a quiet ``sleep``, ``cat``
  reading a pipe and a program waiting on a socket are not "awaiting input",
  however their last line looks.
"""

from __future__ import annotations

import os
import select
import shlex
import termios
import time
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgument, SecretInput
from . import keys
from . import validation as V
from .keys import KeyModes
from .local import procs

if TYPE_CHECKING:
    from .result import ReadResult, Result

# ----------------------------------------------------------------------------
# named keys
#: Named keys and the bytes a terminal sends for them. ``enter`` is a carriage
#: return, as a keyboard sends it (the line discipline turns it into ``\n``
#: for programs in canonical mode, and raw-mode programs expect ``\r``).
KEYS: dict[str, bytes] = {
    "enter": b"\r",
    "tab": b"\t",
    "esc": b"\x1b",
    "up": b"\x1b[A",
    "down": b"\x1b[B",
    "right": b"\x1b[C",
    "left": b"\x1b[D",
    "backspace": b"\x7f",
    "ctrl-c": b"\x03",
    "ctrl-d": b"\x04",
    "ctrl-z": b"\x1a",
    "ctrl-l": b"\x0c",
    "ctrl-u": b"\x15",
}

#: Longest text one ``send`` accepts. The terminal's canonical line buffer
#: holds 4095 bytes; a longer line would be cut by the kernel, silently.
MAX_SEND_CHARS = 4000

#: How long ``send`` waits for the job to react when not told otherwise.
DEFAULT_SEND_WAIT_MS = 2_000

SOURCES = V.SOURCES
PERSON, AGENT = SOURCES[:2]
#: Stands in for a None the checks must refuse (they take None as "not given").
_NOT_NONE = object()
REDACTED = "[secret]"


def hidden_entry_refused(session_id: str, job_id: str) -> SecretInput:
    """SECRET_INPUT for an agent's text to a job that asks for hidden entry
    (one wording for the local and the remote terminal)."""
    return SecretInput(
        f"job {job_id} asks for hidden entry (a password or passphrase): a person "
        "must answer it (%bash_send --secret, or the panel's password box); an agent "
        "may only send keys such as ctrl-c",
        session_id=session_id,
        job_id=job_id,
    )


def key_bytes(name: str, modes: keys.KeyModes | None = None) -> bytes:
    """The bytes of a named key in the screen's ``modes`` (an xterm's, e.g.
    ``ESC O B`` for Down in application cursor mode; :mod:`.keys`);
    INVALID_ARGUMENT names the keys there are."""
    if not keys.is_key(name):
        shown = repr(name)[:40]
        raise InvalidArgument(f"key {shown} is not a named key; use one of {keys.describe_valid()}", field="key")
    return keys.encode(name, modes)


def keys_bytes(names: object, modes: keys.KeyModes | None = None) -> bytes:
    """Several named keys, in order, as one write; INVALID_ARGUMENT lists the
    bad names and the valid ones."""
    if not isinstance(names, (list, tuple)) or not names:
        raise InvalidArgument("keys must be a non-empty list of key names", field="keys")
    if len(names) > MAX_KEYS:
        raise InvalidArgument(f"keys holds {len(names)} names; one send takes at most {MAX_KEYS}", field="keys")
    bad = keys.invalid(names)
    if bad:
        shown = ", ".join(repr(b)[:40] for b in bad[:5])
        raise InvalidArgument(
            f"keys {shown} are not named keys; use any of {keys.describe_valid()}", field="keys", invalid=bad[:20]
        )
    return keys.encode_all(names, modes)


#: Most keys one ``send`` takes.
MAX_KEYS = 200


def encode(text: str | None = None, *, enter: bool = True, key: str | None = None) -> bytes:
    """The bytes to type: ``text`` (then Enter, unless ``enter=False``), or
    one named ``key`` (never followed by Enter). Exactly one of the two."""
    if key is not None:
        if text not in (None, ""):
            raise InvalidArgument("send either text or a key, not both", field="key")
        return key_bytes(key)
    if text is None:
        text = ""
    if len(text) > MAX_SEND_CHARS:
        raise InvalidArgument(
            f"text is {len(text)} characters long; one send takes at most {MAX_SEND_CHARS}",
            field="text",
        )
    if "\n" in text.rstrip("\n") or "\r" in text.rstrip("\r\n"):
        # Several lines in one send would be several answers, given to
        # whatever reads next; a record of one input must be one line.
        raise InvalidArgument("text must be one line; send each line separately", field="text")
    text = text.rstrip("\r\n")
    if not text and not enter:
        raise InvalidArgument("nothing to send: empty text without Enter", field="text")
    return text.encode("utf-8", "surrogateescape") + (KEYS["enter"] if enter else b"")


def check_send(*, source: object, caller: object, secret: object, allow_secret: object) -> None:
    """The options of ``send``, with the contract's checks. ``source``,
    ``secret`` and ``allow_secret`` have defaults in every signature, so
    None is refused for them rather than taken as "not given"."""
    V.source(_NOT_NONE if source is None else source)
    V.caller(caller)
    V.flag(_NOT_NONE if secret is None else secret, "secret")
    V.flag(_NOT_NONE if allow_secret is None else allow_secret, "allow_secret")


def since_input(res: Result, rr: ReadResult, start_line: int, prompt: str) -> Result:
    """``res`` with ``output`` cut to what the terminal showed after an
    input: the ring from ``start_line``, without the prompt the input was
    typed onto (it was already shown)."""
    text = "".join(line + "\n" for line in rr.lines) + rr.partial
    if prompt and text.startswith(prompt):
        text = text[len(prompt) :]
    if res.done and not res.output.endswith("\n") and text.endswith("\n"):
        text = text[:-1]  # the job's last line, numbered when it ended, had no newline
    return replace(res, output=text, start_line=start_line, dropped_lines=rr.dropped, omitted_lines=0)


# ----------------------------------------------------------------------------
# the record of who typed
@dataclass(frozen=True)
class Typing:
    """What ``send`` was asked to type, as one value (text or a named key;
    who typed it; whether it is secret)."""

    text: str | None = None
    key: str | None = None
    enter: bool = True
    source: str = "person"
    caller: str | None = None
    secret: bool = False
    allow_secret: bool = True
    allow_unknown_prompt: bool = False  # with allow_secret false: type where prompts cannot be seen (remote)
    keys: tuple[str, ...] | None = None  # several named keys, in order
    raw: bool = False  # ``text`` is bytes a terminal sent (an attached person's keys), typed as they are

    @property
    def keyed(self) -> bool:
        """Named keys (whose bytes depend on the screen's modes), not text."""
        return self.key is not None or self.keys is not None

    def data(self, modes: KeyModes | None = None) -> bytes:
        """The bytes to type; keys as an xterm in ``modes`` sends them."""
        if self.keys is not None:
            if self.text not in (None, "") or self.key is not None:
                raise InvalidArgument("send text, one key or keys, not two of them", field="keys")
            return keys_bytes(list(self.keys), modes)
        if self.key is not None:
            if self.text not in (None, ""):
                raise InvalidArgument("send either text or a key, not both", field="key")
            return key_bytes(self.key, modes)
        if self.raw:
            # A terminal emulator already encoded these for the screen's modes.
            return (self.text or "").encode("utf-8", "surrogateescape")
        return encode(self.text, enter=self.enter)

    def record(self, hidden: bool = False) -> InputRecord:
        """Its record (``hidden``: the job asks for hidden entry right now)."""
        return InputRecord.make(
            self.source, self.text, secret=not self.keyed and (self.secret or hidden),
            key=" ".join(self.keys) if self.keys is not None else self.key,
            caller=self.caller, enter=self.enter,
        )


@dataclass
class InputRecord:
    """One input sent to a job: who (``person`` through a magic or the panel,
    ``agent`` through a tool, with its caller session), when, and what. Secret
    text is never kept: ``text`` is ``"[secret]"`` then."""

    source: str
    at: float
    text: str
    secret: bool = False
    key: str | None = None
    caller: str | None = None
    enter: bool = True

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def make(
        cls,
        source: str,
        text: str | None,
        *,
        secret: bool,
        key: str | None = None,
        caller: str | None = None,
        enter: bool = True,
    ) -> InputRecord:
        """The record of a checked input (:func:`check_send`)."""
        shown = "" if key is not None else (REDACTED if secret else (text or ""))
        return cls(
            source=source,
            at=time.time(),
            text=shown,
            secret=bool(secret) and key is None,
            key=key.lower() if key else None,
            caller=caller,
            enter=enter if key is None else False,
        )


# ----------------------------------------------------------------------------
# echo during a job: the gate
GATE_FD = 213  # the begin gate: the command waits here for echo on
GATE_END_FD = 214  # a tty job's end gate: the shell waits here for unread input to go
GATE_VAR = "__dsh_g"


class Gate:
    """Holds a job's command back until the engine has switched the
    terminal's echo on (and, for a tty job, holds the shell back after the
    job until the engine has thrown away input nobody read).

    Why: the engine types its own lines with echo off, so they never show;
    a job must run with echo on, as a person's terminal has it, or an
    echo-off terminal could not tell a password prompt from a ``y/N``. The
    switch has to fall after the kernel took the job's line (else the line
    is echoed) and before the command runs (else a ``read -s`` that turned
    echo off first would be overruled, and a password would show). The
    shell cannot change terminal modes without running ``stty`` (~3 ms a
    time here). So the job line reads one byte from a private FIFO right
    after its begin marker, and the engine writes that byte only after it
    has made the kernel process the typed line (:func:`line_taken`) and
    switched echo on. All of that happens while the shell is still waking
    up, so the byte is usually there before the shell asks: no extra
    wake-up on a job's path. The FIFOs are opened read-write on both ends,
    so neither open nor read ever sees end-of-file.

    The end gate has a FIFO of its own: a byte for it may still be on its
    way to the shell when the next job starts, and emptying the begin gate
    then (see :meth:`drain`) must not take it (a shell left waiting at an
    end gate runs no job again)."""

    def __init__(self, directory: str) -> None:
        self._paths = (os.path.join(directory, "gate"), os.path.join(directory, "gate-end"))
        self._fds: list[int | None] = []
        for path in self._paths:
            if not os.path.exists(path):
                os.mkfifo(path, 0o600)
            self._fds.append(os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC))

    def shell_open(self) -> str:
        """Shell code (for the setup script) that opens both gates."""
        begin, end = (shlex.quote(p) for p in self._paths)
        return f"exec {GATE_FD}<>{begin} {GATE_END_FD}<>{end}"

    @staticmethod
    def shell_wait(end: bool = False) -> str:
        """Shell code on the job line: wait for the engine's byte."""
        return f"\\builtin read -r -N1 -u {GATE_END_FD if end else GATE_FD} {GATE_VAR}"

    def release(self, end: bool = False) -> None:
        fd = self._fds[1 if end else 0]
        if fd is not None:
            try:
                os.write(fd, b"g")
            except OSError:
                pass

    def drain(self) -> None:
        """Drop a begin-gate byte no job took (its line was aborted before
        the read), so the next job waits for its own. Only while the shell
        is between jobs."""
        fd = self._fds[0]
        if fd is None:
            return
        while True:
            try:
                if not os.read(fd, 4096):
                    return
            except OSError:
                return

    def unlink(self) -> None:
        """Remove the FIFOs' names once the shell has opened them (both ends
        keep their descriptors): nothing is left in the scratch directory."""
        for path in self._paths:
            try:
                os.unlink(path)
            except OSError:
                pass

    def close(self) -> None:
        for i, fd in enumerate(self._fds):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
                self._fds[i] = None


def line_taken(tty_fd: int | None) -> None:
    """Make the kernel process what was just typed on the master side now.

    Input written to a PTY master is handed to the line discipline by a
    kernel worker a moment later, and echo is decided then, with the flags
    of that moment. ``poll`` on the slave side runs that hand-over first
    (measured here: without it, 31 of 2000 lines typed with echo off were
    echoed when echo was switched on right after the write; with it, none;
    ``tests/interactive/test_gate.py`` pins it)."""
    if tty_fd is None:
        return
    p = select.poll()
    p.register(tty_fd, select.POLLIN)
    try:
        p.poll(0)
    except OSError:
        pass


def open_tty(tty: str | None) -> int | None:
    """A descriptor of the terminal's slave side for :func:`line_taken`
    (never our controlling terminal)."""
    if not tty:
        return None
    try:
        return os.open(tty, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None


def discard_typed_input(tty: str | None) -> bool:
    """Throw away input typed on the terminal that no program read, so that
    it never reaches the shell as a command line once the job is over."""
    if not tty:
        return False
    try:
        fd = os.open(tty, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        termios.tcflush(fd, termios.TCIFLUSH)
        return True
    except (termios.error, OSError):
        return False
    finally:
        os.close(fd)


# ----------------------------------------------------------------------------
# awaiting input
@dataclass
class AwaitingInput:
    """The job's foreground process waits for the terminal.

    ``prompt`` is the unfinished last line of the job's output (what a person
    would see next to the cursor; empty when the output ends with a newline).
    ``secret`` is true when the terminal's echo is off: the program asked
    for hidden entry (``read -s``, ``getpass``, ``sudo``, ``ssh``)."""

    pid: int
    name: str
    prompt: str
    secret: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


MAX_PROMPT_CHARS = 200

def echo_on(fd: int) -> bool | None:
    """Is the terminal's echo on? (termios of the PTY, read via the master:
    Linux answers for the slave side.) None if it cannot be read."""
    try:
        return bool(termios.tcgetattr(fd)[3] & termios.ECHO)
    except (termios.error, OSError):
        return None


def hidden_entry(fd: int) -> bool:
    """The program asked for hidden entry: echo off in canonical (line)
    mode, which is what ``read -s``, ``getpass``, ``sudo`` and ``ssh`` set.
    A line editor (readline in ``python3 -i``, ``psql``, ``node``) also
    turns the kernel's echo off, but together with canonical mode, because
    it echoes by itself; that is not a secret."""
    try:
        lflag = termios.tcgetattr(fd)[3]
    except (termios.error, OSError):
        return False
    return not lflag & termios.ECHO and bool(lflag & termios.ICANON)


def set_echo(fd: int, on: bool) -> bool:
    """Switch the terminal's echo; True if it changed."""
    try:
        attrs = termios.tcgetattr(fd)
    except (termios.error, OSError):
        return False
    want = attrs[3] | termios.ECHO if on else attrs[3] & ~termios.ECHO
    if want == attrs[3]:
        return False
    attrs[3] = want
    try:
        termios.tcsetattr(fd, termios.TCSANOW, attrs)
    except (termios.error, OSError):
        return False
    return True


def tty_path(shell_pid: int) -> str | None:
    """The terminal device of a shell (its controlling terminal), e.g.
    ``/dev/pts/3``: what a process reading our terminal has open."""
    return procs.LAYER.tty_path(shell_pid)


def foreground_reader(shell_pid: int, master_fd: int, tty: str | None = None) -> int | None:
    """The process of the terminal's foreground group that waits for it, or
    None (asked of the process layer: ``procs.LAYER.tty_waiter``). The shell itself
    counts only when the foreground group is the shell's and
    ``shell_reads_job_input(shell_pid)`` says its read is a job's (a builtin
    ``read``), which the caller decides (see :func:`detect`)."""
    try:
        fg = os.tcgetpgrp(master_fd)
    except OSError:
        return None
    if tty is None:
        tty = tty_path(shell_pid)
    return procs.LAYER.tty_waiter(shell_pid, fg, tty)


def detect(
    shell_pid: int,
    master_fd: int,
    partial: str,
    *,
    shell_reading_job_input: bool = False,
    tty: str | None = None,
) -> AwaitingInput | None:
    """Is the running job waiting for someone to type? From the terminal's
    own state only: a process of its foreground group (or, when
    ``shell_reading_job_input``, the shell running a builtin ``read``) is
    blocked waiting for the terminal. ``partial`` is the unfinished last line
    of the output; ``secret`` is hidden entry (see :func:`hidden_entry`).

    The caller must only pass ``shell_reading_job_input=True`` when it has
    proved that the shell's read is not its top-level read of the engine's
    next line (``shell.input_state``): a probe typed then would be the
    job's input, and an answer typed then would be a command.
    """
    reader = foreground_reader(shell_pid, master_fd, tty)
    if reader is None and shell_reading_job_input:
        reader = shell_pid
    if reader is None:
        return None
    prompt = partial[-MAX_PROMPT_CHARS:] if partial else ""
    return AwaitingInput(
        pid=reader, name=procs.LAYER.command_name(reader), prompt=prompt, secret=hidden_entry(master_fd)
    )


__all__ = [
    "AGENT",
    "DEFAULT_SEND_WAIT_MS",
    "GATE_END_FD",
    "GATE_FD",
    "Gate",
    "discard_typed_input",
    "line_taken",
    "open_tty",
    "KEYS",
    "MAX_SEND_CHARS",
    "PERSON",
    "REDACTED",
    "SOURCES",
    "AwaitingInput",
    "InputRecord",
    "check_send",
    "detect",
    "echo_on",
    "encode",
    "hidden_entry",
    "foreground_reader",
    "key_bytes",
    "keys_bytes",
    "set_echo",
    "since_input",
    "tty_path",
]
