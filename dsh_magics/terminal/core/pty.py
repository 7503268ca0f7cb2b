"""The one owner of a terminal's PTY, whatever runs on it (the local shell,
or a remote target's client: ssh, podman, kubectl, ``cmd:``).

It spawns the child (on one long-lived thread, with the child's death signal
and default signals: :mod:`.child`; without forking this interpreter where
it can, :class:`.child.Launcher`), sets the window size, and is the one
write path: every byte typed into a terminal (the engine's own lines,
probes, a person's keys, an agent's text) goes through :meth:`Pty.write`,
which is also where input is recorded: each write says whether it is the
engine's own line or input typed on somebody's behalf
(:class:`.input_record.Typed`), and input is recorded by the write that
typed it (pinned by tests/attach/test_input_record.py).
Reading is the reader thread's (:mod:`.reader`); reaping, the process
layer's (:mod:`.procs`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import queue
import struct
import termios
import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Literal, TypeVar

from ptyprocess import PtyProcess, PtyProcessError  # type: ignore[import-untyped]
from ptyprocess.util import which  # type: ignore[import-untyped]

from ...errors import ShellExited
from . import child, reader
from .input_record import Typed

T = TypeVar("T")

class _Spawner:
    """One long-lived thread forks every child: PR_SET_PDEATHSIG fires when
    the *thread* that forked the child exits, so a child forked from a
    short-lived widget or request thread would be hung up with that thread.

    A daemon thread of its own, not a ``ThreadPoolExecutor``: at interpreter
    exit Python joins an executor's workers before ``atexit`` runs, so every
    shell and remote client got its death signal before the orderly close
    (:mod:`dsh_magics.shutdown`, step TERMINALS); a container's shell then
    outlived its killed ``podman exec`` client, idle or with its job
    (tests/reliability/test_orderly_exit.py). A daemon thread lives until
    the process ends: the close runs first, and the death signal stays the
    last resort when the process dies without it."""

    def __init__(self) -> None:
        self._work: queue.SimpleQueue[tuple[Future[Any], Callable[..., Any], tuple[Any, ...]]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._late: Future[Any] | None = None  # the last call a waiter gave up on (:meth:`settle`)

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        done: Future[T] = Future()
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="dsh-spawner", daemon=True)
                self._thread.start()
            self._work.put((done, fn, args))
        return done

    def settle(self, done: Future[Any], timeout: float) -> Literal["ran", "timed_out", "stuck"]:
        """Wait up to ``timeout`` for ``done`` (from :meth:`submit`): "ran"
        (a call that raised raises here), "timed_out" (it stays queued), or
        "stuck" at once while a call an earlier wait gave up on is still
        queued: ``done`` is behind it and cannot run first, so nobody waits
        twice on one stuck spawner (a host's close_all of N terminals took
        N x 5 s: tests/remote/test_failures.py::test_a_stuck_spawner_holds_up_one_close_only)."""
        with self._lock:
            late = self._late
        if late is not None and not late.done():
            return "stuck"
        try:
            done.result(timeout=timeout)
        except FutureTimeout:
            with self._lock:
                self._late = done
            return "timed_out"
        return "ran"

    def _loop(self) -> None:
        while True:
            done, fn, args = self._work.get()
            if not done.set_running_or_notify_cancel():
                continue
            try:
                result = fn(*args)
            except BaseException as e:  # handed to the caller, as an executor does
                done.set_exception(e)
            else:
                done.set_result(result)


_spawner = _Spawner()


def on_spawner(start: Callable[[], T]) -> T:
    """Run ``start`` (which forks a child with :func:`.child.setup`) on the
    spawner thread, and return what it returns."""
    return _spawner.submit(start).result()


def housekeeping(fn: Callable[..., Any], *args: Any) -> Future[Any]:
    """Run ``fn(*args)`` on the spawner thread without waiting, in order
    with the spawns (the owner watchdog's bookkeeping); the future says
    when it ran."""
    return _spawner.submit(fn, *args)


def settle_housekeeping(done: Future[Any], timeout: float) -> Literal["ran", "timed_out", "stuck"]:
    """Wait for a :func:`housekeeping` call, within ``timeout`` and never
    behind a stuck spawner (:meth:`_Spawner.settle`)."""
    return _spawner.settle(done, timeout)


def set_echo(fd: int, echo: bool) -> None:
    """The terminal on ``fd`` echoes (control characters as themselves:
    ``-echoctl``) or does not."""
    attrs = termios.tcgetattr(fd)
    if echo:
        attrs[3] = (attrs[3] | termios.ECHO) & ~termios.ECHOCTL
    else:
        attrs[3] &= ~termios.ECHO
    termios.tcsetattr(fd, termios.TCSANOW, attrs)


def _launch(argv: list[str], env: dict[str, str], rows: int, cols: int, echo: bool) -> Any:
    """``PtyProcess.spawn`` without a fork of this interpreter
    (:class:`.child.Launcher` says why and what the child gets): a new PTY
    with ``echo`` (:func:`set_echo`) and its size set, the child started on
    it, and the same ``PtyProcess`` around the master as ptyprocess makes."""
    command = which(argv[0])
    if command is None:  # as ptyprocess says it
        raise FileNotFoundError(f"The command was not found or was not executable: {argv[0]}.")
    master, slave = os.openpty()
    try:
        set_echo(slave, echo)
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        pid = child.launcher.spawn(command, argv, env, os.ttyname(slave))
    except BaseException:
        os.close(master)
        raise
    finally:
        os.close(slave)
    proc = PtyProcess(pid, master)
    proc.argv, proc.env = [command, *argv[1:]], env
    return proc


class Pty:
    """A child process on a PTY of ours. ``what`` names the other end in
    errors ("shell", "terminal"); ``is_dead`` says when nothing more may be
    written (the terminal is dead although the PTY may still be open)."""

    def __init__(self, session_id: str, what: str = "terminal", is_dead: Callable[[], bool] | None = None) -> None:
        self.session_id = session_id
        self.proc: Any = None  # the PtyProcess, once spawned
        self.pidfd: int | None = None  # reports the child's exit where the system has pidfds
        self._what = what
        self._is_dead = is_dead or (lambda: False)
        self._wlock = threading.Lock()

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def spawn(
        self, argv: list[str], *, env: dict[str, str], size: tuple[int, int], cwd: str | None = None,
        echo: bool = False,
    ) -> Any:
        """Start ``argv`` on a new PTY of ``size`` (cols, rows), echo off
        (with ``echo``: on, control characters echoed as themselves; for an
        ssh client, which hands these modes to the remote terminal),
        hung up when this process dies; errors of the spawn propagate.
        Without a ``cwd`` (a remote client) it is launched without a fork
        where it can be (:class:`.child.Launcher`), else forked."""
        cols, rows = size

        def in_child() -> None:
            set_echo(0, True)
            child.setup()

        def go() -> Any:
            if child.launcher.usable(cwd):
                return _launch(argv, env, rows, cols, echo)
            return PtyProcess.spawn(
                argv, cwd=cwd, env=env, echo=False, dimensions=(rows, cols),
                preexec_fn=in_child if echo else child.setup,
            )

        self.proc = proc = on_spawner(go)
        try:
            self.pidfd = os.pidfd_open(proc.pid)
        except (AttributeError, OSError):  # no pidfds here: the reader sees the end as EOF
            self.pidfd = None
        return proc

    def write(self, data: bytes, *, typed: Typed | None) -> None:
        """Write all of ``data`` to the terminal, one writer at a time (so two
        threads' bytes never interleave); SHELL_EXITED when it cannot.
        ``typed``: None for the engine's own lines, else the input's record
        (:class:`.input_record.Typed`: the job's inputs have it before the
        bytes go, the terminal's record once they went; in the order written)."""
        with self._wlock:
            if typed is not None:
                typed.writing()
            while data:
                proc = self.proc
                if proc is None or self._is_dead():
                    raise ShellExited(
                        f"the shell of session {self.session_id!r} has exited", session_id=self.session_id
                    )
                try:
                    n = os.write(proc.fd, data)
                except OSError as e:
                    raise ShellExited(f"cannot write to the {self._what}: {e}", session_id=self.session_id) from None
                data = data[n:]
            if typed is not None:
                typed.written()

    def set_size(self, cols: int, rows: int) -> None:
        """Set the PTY's size: the kernel signals SIGWINCH to its foreground
        process group (a remote client passes the new size on)."""
        if self.proc is None:
            raise ShellExited(f"the shell of session {self.session_id!r} has exited", session_id=self.session_id)
        try:
            self.proc.setwinsize(rows, cols)
        except OSError as e:
            raise ShellExited(f"cannot resize the terminal: {e}", session_id=self.session_id) from None

    def drain(self, on_data: Callable[[bytes], None]) -> None:
        """Every byte the child printed before it exited."""
        if self.proc is not None:
            reader.drain(self.proc.fd, on_data)

    def close_pidfd(self) -> None:
        if self.pidfd is not None:
            with contextlib.suppress(OSError):  # closed already: nothing to release
                os.close(self.pidfd)
        self.pidfd = None

    def close(self) -> None:
        """Close the PTY and end the child if it still runs. Call once it has
        been reaped (``procs.reap``): closing may fail (closed already) or its
        terminate give up; nothing of it is left to end then."""
        if self.proc is not None:
            # ptyprocess sleeps delayafterclose (0.1 s) after closing the fd,
            # for a child whose status the kernel has yet to update; ours is
            # reaped already, so the sleep was a tenth of a second of every
            # close (benchmarks/bench_sessions.py, benchmarks/README.md).
            self.proc.delayafterclose = 0
            with contextlib.suppress(OSError, PtyProcessError):
                self.proc.close(force=True)
