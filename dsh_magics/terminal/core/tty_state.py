"""The terminal's own state, read from the PTY and the process layer: its
echo and line mode, making the kernel take typed input, throwing away input
nobody read, and :func:`detect`: whether the job's foreground process is
blocked waiting for the terminal (its termios flags and what the processes of
its foreground group are blocked in, asked of the process layer ``procs``).
No regular expression of prompts is involved: a quiet ``sleep``, ``cat``
reading a pipe and a program waiting on a socket are not "awaiting input",
however their last line looks."""

from __future__ import annotations

import os
import select
import termios

from ..interaction import MAX_PROMPT_CHARS, AwaitingInput
from . import procs


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
        pass  # the terminal is gone: nothing is left to hand over


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
