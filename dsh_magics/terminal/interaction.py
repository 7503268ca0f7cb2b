"""Typing into a running job, and knowing when a job waits to be typed to.

Three small things the engine and every adapter share:

* :data:`KEYS` and :func:`encode`: what bytes a named key or a line of text
  puts on the terminal, so ``send(..., key="ctrl-c")`` means the same from a
  magic, a tool, the panel and the host.
* :class:`InputRecord`: one entry of a job's record of who typed what, with
  secret text never stored.
* :func:`detect`: whether the job's foreground process is blocked waiting for
  the terminal, read from the terminal itself (its termios flags and what the
  processes of its foreground group are blocked in, from ``/proc``). No
  regular expression of prompts is involved: a quiet ``sleep``, ``cat``
  reading a pipe and a program waiting on a socket are not "awaiting input",
  however their last line looks.
"""

from __future__ import annotations

import os
import select
import shlex
import struct
import termios
import time
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgument

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

PERSON, AGENT = "person", "agent"
SOURCES = (PERSON, AGENT)
REDACTED = "[secret]"


def key_bytes(name: str) -> bytes:
    """The bytes of a named key; INVALID_ARGUMENT names the keys there are."""
    if not isinstance(name, str) or name.lower() not in KEYS:
        shown = repr(name)[:40]
        raise InvalidArgument(
            f"key {shown} is not a named key; use one of {', '.join(KEYS)}", field="key"
        )
    return KEYS[name.lower()]


def encode(text: str | None = None, *, enter: bool = True, key: str | None = None) -> bytes:
    """The bytes to type: ``text`` (then Enter, unless ``enter=False``), or
    one named ``key`` (never followed by Enter). Exactly one of the two."""
    if key is not None:
        if text not in (None, ""):
            raise InvalidArgument("send either text or a key, not both", field="key")
        return key_bytes(key)
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise InvalidArgument("text must be a string", field="text")
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
    """The options of ``send`` (one wording in every backend)."""
    if source not in SOURCES:
        raise InvalidArgument(f"source must be one of {', '.join(SOURCES)}", field="source")
    if caller is not None and (not isinstance(caller, str) or len(caller) > 200):
        raise InvalidArgument("caller must be a session id (a string)", field="caller")
    for name, value in (("secret", secret), ("allow_secret", allow_secret)):
        if not isinstance(value, bool):
            raise InvalidArgument(f"{name} must be true or false", field=name)


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
        if source not in SOURCES:
            raise InvalidArgument(f"source must be one of {', '.join(SOURCES)}", field="source")
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

_MACHINE = os.uname().machine
# (read-like, select-like, poll-like, epoll-like) syscall numbers
if _MACHINE == "x86_64":
    _READS = {0, 17, 19}  # read, pread64, readv
    _SELECTS = {23, 270}  # select, pselect6
    _POLLS = {7, 271}  # poll, ppoll
    _EPOLLS = {232, 281, 441}  # epoll_wait, epoll_pwait, epoll_pwait2
elif _MACHINE == "aarch64":
    _READS = {63, 65, 67}
    _SELECTS = {72}
    _POLLS = {73}
    _EPOLLS = {22, 441}
else:  # unknown machine: never claim a job waits for input
    _READS = _SELECTS = _POLLS = _EPOLLS = set()

_POLLIN = 0x001
_EPOLLIN = 0x001


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


def _syscall(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/syscall") as f:
            return f.read().split()
    except OSError:
        return None


def _fd_target(pid: int, fd: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/fd/{fd}")
    except OSError:
        return None


def _is_tty(target: str | None, tty: str | None) -> bool:
    """The job's terminal: its device path, or ``/dev/tty`` (the controlling
    terminal, which for everything in this shell's session is ours)."""
    if target is None:
        return False
    return target == "/dev/tty" or (tty is not None and target == tty)


def _is_other_input(target: str | None) -> bool:
    """A descriptor through which input can arrive from elsewhere: a pipe, a
    socket, another terminal or a file. Event and signal descriptors
    (``anon_inode:``) are an event loop's own machinery, not input."""
    if target is None:
        return True
    return not target.startswith("anon_inode:")


def _read_mem(pid: int, addr: int, size: int) -> bytes | None:
    if addr == 0 or size <= 0 or size > 65536:
        return None
    try:
        fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
    except OSError:
        return None
    try:
        data = os.pread(fd, size, addr)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data if len(data) == size else None


def _waits_on_tty(pid: int, tty: str | None) -> bool:
    """Is ``pid`` blocked waiting for the terminal and nothing else?

    ``read`` on a descriptor that is the terminal, or a ``select``/``poll``/
    ``epoll`` whose only input sources include the terminal (REPLs such as
    ``python3 -i`` wait in ``pselect6`` on fd 0, ``node`` in ``epoll``). A
    wait that includes a pipe, a socket or a file is not counted: the
    program may as well be waiting for the network.
    """
    fields = _syscall(pid)
    if not fields or len(fields) < 3 or not fields[0].isdigit():
        return False
    nr = int(fields[0])
    try:
        args = [int(a, 16) for a in fields[1:7]]
    except ValueError:
        return False
    if nr in _READS:
        return _is_tty(_fd_target(pid, args[0]), tty)
    if nr in _SELECTS:
        nfds, readfds = args[0], args[1]
        if nfds <= 0 or nfds > 1024:
            return False
        data = _read_mem(pid, readfds, (nfds + 7) // 8)
        if data is None:
            # Memory not readable (another user's or a non-dumpable process):
            # only the unambiguous case, a select on fd 0 alone.
            return nfds == 1 and _is_tty(_fd_target(pid, 0), tty)
        fds = [i for i in range(nfds) if data[i // 8] >> (i % 8) & 1]
        return _only_tty(pid, fds, tty)
    if nr in _POLLS:
        ptr, nfds = args[0], args[1]
        if nfds <= 0 or nfds > 1024:
            return False
        data = _read_mem(pid, ptr, 8 * nfds)
        if data is None:
            return False
        fds = []
        for i in range(nfds):
            fd, events, _ = struct.unpack_from("iHH", data, 8 * i)
            if fd >= 0 and events & _POLLIN:
                fds.append(fd)
        return _only_tty(pid, fds, tty)
    if nr in _EPOLLS:
        return _only_tty(pid, _epoll_fds(pid, args[0]), tty)
    return False


def _epoll_fds(pid: int, epfd: int) -> list[int]:
    """Descriptors registered for input in an epoll instance (from fdinfo)."""
    out: list[int] = []
    try:
        with open(f"/proc/{pid}/fdinfo/{epfd}") as f:
            for line in f:
                if line.startswith("tfd:"):
                    parts = line.split()
                    fd = int(parts[1])
                    events = int(parts[3], 16) if len(parts) > 3 and parts[2] == "events:" else _EPOLLIN
                    if events & _EPOLLIN:
                        out.append(fd)
    except (OSError, ValueError, IndexError):
        return []
    return out


def _only_tty(pid: int, fds: list[int], tty: str | None) -> bool:
    targets = [_fd_target(pid, fd) for fd in fds]
    if not any(_is_tty(t, tty) for t in targets):
        return False
    others = [t for t in targets if not _is_tty(t, tty)]
    if any(t is not None and t.startswith("pipe:") for t in others):
        own = _self_pipes(pid)
        others = [t for t in others if t not in own]
    return not any(_is_other_input(t) for t in others)


def _self_pipes(pid: int) -> set[str]:
    """Pipes the process holds both ends of: an event loop's wake-up pipe
    (libuv's signal pipe in ``node``), which brings no input from outside."""
    seen: dict[str, int] = {}
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return set()
    for name in names:
        target = _fd_target(pid, int(name))
        if target and target.startswith("pipe:"):
            seen[target] = seen.get(target, 0) + 1
    return {t for t, n in seen.items() if n > 1}


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            continue
    return out


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip() or "?"
    except OSError:
        return "?"


def tty_path(shell_pid: int) -> str | None:
    """The terminal device of a shell (its controlling terminal), e.g.
    ``/dev/pts/3``: what a process reading our terminal has open."""
    for fd in (0, 1, 2):
        target = _fd_target(shell_pid, fd)
        if target and target.startswith("/dev/pts/"):
            return target
    return None


def foreground_reader(shell_pid: int, master_fd: int, tty: str | None = None) -> int | None:
    """The process of the terminal's foreground group that waits for it, or
    None. The shell itself counts only when the foreground group is the
    shell's and ``shell_reads_job_input(shell_pid)`` says its read is a job's
    (a builtin ``read``), which the caller decides (see :func:`detect`)."""
    if not (_READS or _SELECTS or _POLLS or _EPOLLS):
        return None
    try:
        fg = os.tcgetpgrp(master_fd)
    except OSError:
        return None
    if tty is None:
        tty = tty_path(shell_pid)
    queue, seen = _children(shell_pid), 0
    while queue and seen < 256:
        pid = queue.pop(0)
        seen += 1
        try:
            in_group = os.getpgid(pid) == fg
        except OSError:
            continue
        if in_group and _waits_on_tty(pid, tty):
            return pid
        queue.extend(_children(pid))
    return None


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
        pid=reader, name=_comm(reader), prompt=prompt, secret=hidden_entry(master_fd)
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
    "set_echo",
    "since_input",
    "tty_path",
]
