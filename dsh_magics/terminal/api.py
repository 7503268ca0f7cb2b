"""The engine contract: what every backend offers and every adapter may use.

Adapters are typed against :class:`Engine`; ``Registry`` and ``HostClient`` subclass it,
so the keyword methods ``exec``, ``wait`` and ``send`` are written once, here: each
builds its request and hands it to the backend's ``run_exec``, ``run_wait`` or
``run_send`` (tests/test_request_fields.py checks them against the table).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from ..jobs import Job
from .config import TerminalConfig
from .interaction import DEFAULT_SEND_WAIT_MS, PERSON
from .requests import ExecRequest, SendRequest, WaitRequest
from .result import ReadResult, Result, TerminalInfo

#: An event listener: called with dicts ``{"type": "output" | "job_started" |
#: "job_done" | "terminal" (| "host"), "session_id": ..., ...}``.
Listener = Callable[[dict[str, Any]], None]


@runtime_checkable
class JobLookup(Protocol):
    """``engine.jobs``: the jobs an engine knows, newest last."""

    def all(self) -> builtins.list[Job]: ...

    def running(self, owner: str | None = None) -> builtins.list[Job]: ...

    def get(self, job_id: str) -> Job: ...

    def latest(self, owner: str | None = None) -> Job | None: ...

    def __len__(self) -> int: ...


@runtime_checkable
class Engine(Protocol):
    """Persistent bash terminals keyed by session id, and the jobs they run.

    Every method raises :class:`~dsh_magics.errors.DshError` subclasses with
    stable codes (``INVALID_ARGUMENT``, ``NO_SUCH_SESSION``, ``NO_SUCH_JOB``,
    ``SESSION_BUSY``, ``TOO_MANY_SESSIONS``, ``HOST_UNAVAILABLE``); arguments
    are checked by :mod:`dsh_magics.terminal.validation`, the same way in
    every backend. Each keyword, its type, default and bounds are a row of
    :data:`dsh_magics.terminal.requests.FIELDS` (tests/test_request_fields.py).

    ``exec``, ``wait`` and ``send`` build a typed request (checked once, there)
    and hand it to ``run_exec``, ``run_wait`` and ``run_send``; an adapter that
    built the request itself (a tool call) calls those, and nothing is checked twice.
    A backend subclasses this class and writes the ``run_`` methods: the keyword
    methods, their signatures and defaults exist once, here.
    """

    @property
    def config(self) -> TerminalConfig:
        """The configuration new terminals get."""
        ...

    @property
    def jobs(self) -> JobLookup:
        """Every job this engine knows (running and recently finished)."""
        ...

    # -- terminals ---------------------------------------------------------
    def attach(
        self, session_id: str, cwd: str | None = None, recreate: bool = False, target: str | None = None
    ) -> TerminalInfo:
        """Open the session's terminal if it has none; ``cd`` it to ``cwd``;
        ``recreate`` replaces the shell. A missing ``cwd`` changes nothing.
        ``target`` opens it elsewhere (``ssh://host``, docs/remote.md)."""
        ...

    def close(self, session_id: str) -> bool:
        """Close one terminal (killing what runs in it); NO_SUCH_SESSION if none."""
        ...

    def close_all(self) -> int:
        """Close every terminal of this engine; returns how many."""
        ...

    def list(self) -> builtins.list[TerminalInfo]:
        """One row per open terminal."""
        ...

    def info(self, session_id: str) -> TerminalInfo:
        """The session's row of :meth:`list` (NO_SUCH_SESSION if none)."""
        ...

    def exists(self, session_id: str) -> bool:
        """Whether the session has a terminal (never raises for a bad id)."""
        ...

    # -- jobs --------------------------------------------------------------
    def exec(
        self,
        session_id: str,
        command: str,
        wait_ms: int | None = None,
        tty: bool = False,
        source: str | None = None,
        caller: str | None = None,
    ) -> Job | Result:
        """Start ``command`` (SESSION_BUSY if a job runs, or while a person
        types at the session's prompt); its Job at once,
        or its Result if it settled within ``wait_ms`` milliseconds. A dead
        shell is replaced by a fresh one first (the Result says
        ``fresh_shell=True``). Its
        stdin is /dev/null, or the terminal with ``tty=True`` (REPLs, y/N).
        ``source`` (``notebook``, ``agent``, ...) and ``caller`` go into the
        job's ``source`` and the terminal's input record."""
        return self.run_exec(ExecRequest.of(locals()))

    def run_exec(self, request: ExecRequest) -> Job | Result:
        """:meth:`exec` with its request built (and checked) by the caller."""
        ...

    def wait(
        self,
        job_id: str,
        timeout: float | None = None,
        until: str | None = None,
        idle_ms: int | None = None,
        on_input: bool = True,
        until_screen: str | None = None,
    ) -> Result:
        """The settled Result, or a snapshot while the command keeps running
        once the job's output matches ``until`` (``match_line``; the first
        wait on a job searches all of it, a later one only what came after
        the previous wait's match or end), no output came for ``idle_ms``,
        the job waits for typed input (``on_input``), or ``timeout`` seconds passed (``timed_out=True``);
        ``reason`` names which. ``until_screen`` is a regex over the screen's
        rows (``matched``, the row in ``match_text``). A bad regex is
        INVALID_ARGUMENT (see :mod:`.waits`)."""
        return self.run_wait(WaitRequest.of(locals()))

    def run_wait(self, request: WaitRequest) -> Result:
        """:meth:`wait` with its request built (and checked) by the caller."""
        ...

    def send(
        self,
        session_id: str,
        text: str | None = None,
        key: str | None = None,
        enter: bool = True,
        wait_ms: int | None = DEFAULT_SEND_WAIT_MS,
        source: str = PERSON,
        caller: str | None = None,
        secret: bool = False,
        allow_secret: bool = True,
        allow_unknown_prompt: bool = False,
        keys: builtins.list[str] | None = None,
    ) -> Result:
        """Type a line (Enter after it unless ``enter=False``), a named key or
        several ``keys`` in order (encoded for the screen's current modes, e.g.
        application cursor keys)
        into the running job (NOT_RUNNING if none); recorded in the job's
        ``inputs`` with ``source`` and ``caller``, secret text redacted.
        Waits up to ``wait_ms`` for the job to settle or await input again;
        ``output`` is what the terminal showed after the input. Text while
        the job asks for hidden entry is SECRET_INPUT unless ``allow_secret``;
        without ``allow_secret``, text to a remote job whose prompt cannot be
        seen (no side channel) is SECRET_INPUT too unless ``allow_unknown_prompt``.
        ``secret=True`` keeps the text out of the job's input record (as does
        a terminal with echo off)."""
        return self.run_send(SendRequest.of(locals()))

    def run_send(self, request: SendRequest) -> Result:
        """:meth:`send` with its request built (and checked) by the caller."""
        ...

    def type_keys(self, session_id: str, data: str, caller: str | None = None) -> dict[str, Any]:
        """An attached person's keys, as their terminal encoded them: input
        of the running job; at an idle terminal they open a person's prompt
        (bash's ``read -e``) whose line, on Enter, runs as a job with
        ``source: person`` (docs/attach.md). Returns ``{"job_id", "prompt"}``
        (``prompt``: the keys went to a person's prompt). A remote idle
        terminal is NOT_RUNNING (no person's prompt there yet)."""
        ...

    def inputs(self, session_id: str, last: int | None = None) -> builtins.list[dict[str, Any]]:
        """The terminal's input record, oldest first (the ``last`` N): each
        command and input with ``kind``, ``source``, ``caller``, ``text``
        (``[secret]`` for secret input), ``job_id`` and ``at``."""
        ...

    def result(self, job_id: str, tail_lines: int | None = None) -> Result:
        """A snapshot of the job without waiting. ``tail_lines=N`` keeps only
        the last N lines of ``output`` (``omitted_lines`` counts the rest):
        a live view asks for what it draws, not the whole retained output."""
        ...

    def job(self, job_id: str) -> Job:
        """The job with this id (NO_SUCH_JOB if unknown or long finished)."""
        ...

    def latest_job(self, session_id: str | None = None) -> Job | None:
        """The newest job (of one session, or of any)."""
        ...

    def interrupt(self, session_id: str, source: str | None = None, caller: str | None = None) -> Job | None:
        """Ctrl-C to the running job's process group; the job, or None if idle.
        ``source`` and ``caller`` go into the input record."""
        ...

    # -- output ------------------------------------------------------------
    def read(self, session_id: str, since: int | None = None, last: int | None = None) -> ReadResult:
        """The terminal's retained output: lines from ``since``, or the ``last`` N."""
        ...

    def screen(self, session_id: str, styles: bool = False, vt: bool = False) -> dict[str, Any]:
        """What an xterm of the terminal's size shows now, JSON-ready:
        ``lines`` (each row's text, trailing blanks cut), ``cursor_row``,
        ``cursor_col``, ``cursor_visible``, ``alt_screen``, ``used_alt_screen``,
        ``title``, ``cols``, ``rows``, ``modes``; with ``styles`` each row's
        runs of one style (``styles``); with ``vt`` each row as text with SGR
        sequences, for a terminal to draw (``vt``)."""
        ...

    def resize(self, session_id: str, cols: int, rows: int) -> bool:
        """Give the terminal a new size: the PTY's (the program gets
        SIGWINCH; a remote client passes it on) and the screen's."""
        ...

    def output_seq(self, session_id: str) -> int:
        """A counter that changes whenever the terminal has new output."""
        ...

    def wait_output(self, session_id: str, after_seq: int, timeout: float | None = None) -> int:
        """Block until :meth:`output_seq` differs from ``after_seq`` (or ``timeout``
        seconds); ``after_seq`` is an integer >= 0 (a value :meth:`output_seq` gave),
        anything else INVALID_ARGUMENT on every backend."""
        ...

    # -- events ------------------------------------------------------------
    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(event)`` for every event, on an engine thread (be
        quick); returns the function that unsubscribes."""
        ...


__all__ = ["Engine", "JobLookup", "Listener"]
