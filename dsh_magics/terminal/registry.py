"""The process-wide registry of terminals keyed by session id: the engine's public API.

The one place that decides "busy", "dead" and "closed"; its values are serialisable for the host.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from ..errors import (
    InvalidArgument,
    NoSuchJob,
    NoSuchSession,
    TooManySessions,
)
from ..jobs import Job, JobTable
from . import interaction, waits
from . import validation as V
from .api import Engine
from .config import TerminalConfig
from .core import ctrl_c
from .core.input_record import InputLog
from .deadline import settled_within
from .events import Listener, Listeners
from .local.terminal import Terminal
from .person import PersonPrompts, is_prompt
from .person_keys import PersonKeys
from .remote import RemoteTerminal, Target, parse_target
from .remote.inband import cd_command
from .requests import ExecRequest, SendRequest, WaitRequest
from .result import ReadResult, Result, TerminalInfo, tail_of

# What the registry holds: a local or a remote terminal (the same operations).
AnyTerminal = Terminal | RemoteTerminal

#: Kept for importers of the old name; the checks live in :mod:`.validation`.
validate_session_id = V.session_id


class Registry(Engine):
    """Terminals by session id, with the jobs they produced. The keyword
    methods ``exec``, ``wait`` and ``send`` are :class:`.api.Engine`'s."""

    def __init__(self, config: TerminalConfig | None = None, *, target: str | None = None, **overrides: Any) -> None:
        self._config = config if config is not None else TerminalConfig.from_env(**overrides)
        if config is not None and overrides:
            self._config = config.with_(**overrides)
        #: Where sessions opened without a target run (None: this machine).
        self.target: Target | None = parse_target(target)
        self._terms: dict[str, AnyTerminal] = {}
        self._lock = threading.RLock()
        self._starting: set[str] = set()
        self._started = threading.Condition(self._lock)
        self._jobs = JobTable()
        self._listeners = Listeners()
        self._inputs: dict[str, InputLog] = {}
        self._person = PersonPrompts(self._exec_person)

    @property
    def config(self) -> TerminalConfig:
        return self._config

    @property
    def jobs(self) -> JobTable:
        return self._jobs

    # -- terminals ---------------------------------------------------------
    def attach(
        self, session_id: str, cwd: str | None = None, recreate: bool = False, target: str | None = None
    ) -> TerminalInfo:
        """Open the session's terminal if it has none; optionally ``cd`` it.

        A missing directory is refused before anything changes. ``recreate``
        replaces the shell (killing the old one and its children). ``target``
        opens it elsewhere (``ssh://host``, ``docker://c``, ..., see
        docs/remote.md; ``"local"`` is this machine); an open terminal keeps
        its target unless ``recreate`` is given.
        """
        V.session_id(session_id)
        V.cwd(cwd)
        term = self._terms.get(session_id)
        current = _target(term) if term is not None else None
        want = parse_target(target) if target is not None else current if term is not None else self.target
        if term is not None and not term.dead and not recreate and want != current:
            raise InvalidArgument(
                f"session {session_id!r} runs on {_name(current)}, not {_name(want)}; "
                "close it first or pass recreate",
                field="target",
            )
        if want is not None:
            return self._attach_remote(session_id, term, want, cwd, recreate)
        # A relative cwd is relative to where the shell is, or would start
        # (the configured cwd), never to this process's own directory.
        if term is not None and not term.dead and current is None and term.cwd is not None:
            base = term.cwd  # a local terminal's live cwd (never None)
        else:
            base = self.config.cwd or os.getcwd()
        target = None
        if cwd is not None:
            target = os.path.normpath(os.path.join(base, os.path.expanduser(cwd)))
            if not os.path.isdir(target):
                raise InvalidArgument(f"cwd {cwd!r} is not a directory", field="cwd", cwd=cwd)
        if term is not None and (recreate or term.dead):
            start_cwd = target or (term.cwd if term.dead else None)
            self._replace(session_id, start_cwd, None)
        elif term is None:
            self._get_or_start(session_id, target, None)
        elif target is not None:
            result = self.exec(session_id, f"cd -- {_shq(target)}", wait_ms=10_000)
            if isinstance(result, Result) and result.exit_code not in (0, None):
                raise InvalidArgument(f"cannot cd to {cwd!r}: {result.output.strip()}")
        return self._terms[session_id].info()

    def _attach_remote(
        self, session_id: str, term: Any, want: Target, cwd: str | None, recreate: bool
    ) -> TerminalInfo:
        """attach() for a remote terminal: paths are the remote side's,
        checked there (a relative one from the remote shell's directory,
        ``~`` its home), never against this machine."""
        if term is not None and (recreate or term.dead or _target(term) != want):
            same = _target(term) == want
            self._replace(session_id, cwd or (term.cwd if term.dead and same else None), want)
        elif term is None:
            self._get_or_start(session_id, cwd, want)
        elif cwd is not None:
            result = self.exec(session_id, cd_command(cwd), wait_ms=10_000)
            if isinstance(result, Result) and result.exit_code not in (0, None):
                raise InvalidArgument(f"cwd {cwd!r} is not a directory on {want}", field="cwd", cwd=cwd)
        return self._terms[session_id].info()

    def run_exec(self, request: ExecRequest) -> Job | Result:
        """:meth:`exec` with a checked request. A dead shell is replaced by a
        fresh one first (the Result says ``fresh_shell=True``). SESSION_BUSY
        also while a person types at the session's prompt (:mod:`.person`)."""
        self._person.check(request.session_id)
        job = self._start_job(request.session_id, request.command, request.tty, request.source, request.caller)
        if settled_within(job, request.wait_ms):
            return job.result  # type: ignore[no-any-return]
        return job

    def _exec_person(self, session_id: str, command: str, caller: str | None) -> Job:
        """A person's prompt or line (:class:`.person.PersonPrompts`): past the reservation."""
        return self._start_job(session_id, command, True, interaction.PERSON, caller)

    def _start_job(
        self, session_id: str, command: str, tty: bool, source: str | None, caller: str | None
    ) -> Job:
        term = self._terms.get(session_id)
        fresh = False
        if term is None:
            term = self._get_or_start(session_id, None, self.target)
        elif term.dead:
            term = self._replace(session_id, term.cwd, _target(term))
            fresh = True
        job = term.exec(command, fresh_shell=fresh, tty=tty, source=source)
        if not is_prompt(command):
            self._log(session_id).add("command", source, command, caller=caller, job_id=job.id)
        return job

    def type_keys(self, session_id: str, data: str, caller: str | None = None) -> dict[str, Any]:
        """An attached person's keys (see :class:`.api.Engine`)."""
        return self.person_keys(session_id, caller).type(data)

    def person_keys(self, session_id: str, caller: str | None = None) -> PersonKeys:
        """A person's keyboard on the session (:mod:`.person_keys`), for the
        host to keep per attached connection; not part of the engine contract."""
        return PersonKeys(self._terms, self._person, session_id, caller)

    def inputs(self, session_id: str, last: int | None = None) -> list[dict[str, Any]]:
        """The session's input record (see :class:`.api.Engine`)."""
        V.count(last, "last")
        self._term(session_id)
        return [e.to_dict() for e in self._log(session_id).entries(last)]

    def _log(self, session_id: str) -> InputLog:
        with self._lock:
            log = self._inputs.get(session_id)
            if log is None:
                log = self._inputs[session_id] = InputLog()
            return log

    def run_wait(self, request: WaitRequest) -> Result:
        """:meth:`wait` with a checked request: the first of its conditions
        to come (see :mod:`.waits`)."""
        return waits.run(self, request)

    def run_send(self, request: SendRequest) -> Result:
        """:meth:`send` with a checked request: waits up to ``wait_ms`` for
        the job to settle or wait for input again; ``output`` holds only what
        the terminal showed after the input (``start_line`` is its first
        line). See :mod:`.interaction`."""
        r = request
        term = self._term(r.session_id)
        job, start_line, prompt = term.send(
            r.text, key=r.key, enter=r.enter, source=r.source, caller=r.caller, secret=r.secret,
            allow_secret=r.allow_secret, allow_unknown_prompt=r.allow_unknown_prompt, keys=r.keys,
        )  # fmt: skip
        if r.wait_ms:
            res = waits.run(self, WaitRequest(job.id, timeout_ms=r.wait_ms))
        else:
            res = self.result(job.id)
        rr = term.read(since=start_line)
        return interaction.since_input(res, rr, start_line, prompt)

    def result(self, job_id: str, tail_lines: int | None = None) -> Result:
        """Snapshot of a job without waiting; ``tail_lines=N`` keeps only the
        last N lines of its output (``omitted_lines`` counts the rest)."""
        V.count(tail_lines, "tail_lines")
        job = self.job(job_id)
        if job.done:
            return tail_of(job.result, tail_lines)
        term = self._terms.get(job.owner)
        if term is None:
            raise NoSuchJob(f"job {job_id!r} belongs to a closed session", job_id=job_id)
        return tail_of(term.snapshot(job), tail_lines)

    def job(self, job_id: str) -> Job:
        return self.jobs.get(V.job_id(job_id))

    def latest_job(self, session_id: str | None = None) -> Job | None:
        if session_id is not None:
            V.session_id(session_id)
        return self.jobs.latest(session_id)

    def read(self, session_id: str, since: int | None = None, last: int | None = None) -> ReadResult:
        V.count(since, "since")
        V.count(last, "last")
        return self._term(session_id).read(since=since, last=last)

    def interrupt(self, session_id: str, source: str | None = None, caller: str | None = None) -> Job | None:
        V.source(source)
        V.caller(caller)
        job = self._term(session_id).interrupt()
        if job is not None and not is_prompt(job.label):
            self._log(session_id).add("interrupt", source, "", caller=caller, key="ctrl-c", job_id=job.id)
        return job

    def close(self, session_id: str) -> bool:
        V.session_id(session_id)
        with self._lock:
            term = self._terms.pop(session_id, None)
            self._inputs.pop(session_id, None)
        self._person.forget(session_id)
        if term is None:
            raise NoSuchSession(f"no terminal for session {session_id!r}")
        term.close()
        self._emit({"type": "terminal", "session_id": session_id, "status": "closed"})
        return True

    def close_all(self) -> int:
        with self._lock:
            terms = list(self._terms.values())
            self._terms.clear()
            self._inputs.clear()
        self._person.close()
        for term in terms:
            self._person.forget(term.session_id)
            term.close()
            self._emit({"type": "terminal", "session_id": term.session_id, "status": "closed"})
        return len(terms)

    def list(self) -> list[TerminalInfo]:
        with self._lock:
            terms = list(self._terms.values())
        return [t.info() for t in terms]

    def info(self, session_id: str) -> TerminalInfo:
        return self._term(session_id).info()

    def exists(self, session_id: str) -> bool:
        return isinstance(session_id, str) and session_id in self._terms

    def wait_output(self, session_id: str, after_seq: int, timeout: float | None = None) -> int:
        """Block until the terminal has output newer than ``after_seq``."""
        V.count(after_seq, "after_seq")
        V.timeout(timeout)
        return self._term(session_id).wait_output(after_seq, timeout)

    def screen(self, session_id: str, styles: bool = False, vt: bool = False) -> dict[str, Any]:
        V.flag(styles, "styles")
        V.flag(vt, "vt")
        return self._term(session_id).screen(styles=bool(styles), vt=bool(vt))

    def resize(self, session_id: str, cols: int, rows: int) -> bool:
        for value, name in ((cols, "cols"), (rows, "rows")):
            if V.size(value, name) is None:
                raise InvalidArgument(f"{name} is required", field=name)
        self._term(session_id).resize(cols, rows)
        return True

    def watch_screen(
        self, session_id: str, listener: Callable[[bytes | None, Callable[[], dict[str, Any]]], None]
    ) -> Callable[[], None]:
        """The terminal's output as its screen gets it (``TerminalBase.watch_screen``),
        for the host's attached viewers; not part of the engine contract."""
        return self._term(session_id).watch_screen(listener)

    def output_seq(self, session_id: str) -> int:
        return self._term(session_id).output_seq

    # -- events ------------------------------------------------------------
    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(event)`` for every event; returns an unsubscribe
        (what the events are and on which threads: :class:`.events.Listeners`)."""
        return self._listeners.add(listener)

    def _emit(self, event: dict[str, Any]) -> None:
        if event.get("type") == "input" and isinstance(event.get("input"), dict):
            self._record_input(event)
        self._listeners.emit(event)

    def _record_input(self, event: dict[str, Any]) -> None:
        """Input typed into a job (its record, already redacted) goes into the
        terminal's record too; a person's keys at their own prompt do not
        (the line they make is recorded as the command)."""
        sid, job_id = event.get("session_id"), event.get("job_id")
        if not isinstance(sid, str):
            return
        try:
            if job_id is not None and is_prompt(self.jobs.get(job_id).label):
                return
        except NoSuchJob:
            pass  # a job already dropped from the table: its input is recorded as usual
        self._log(sid).add_input(event["input"], job_id)

    # -- internals ---------------------------------------------------------
    def _term(self, session_id: str) -> AnyTerminal:
        V.session_id(session_id)
        term = self._terms.get(session_id)
        if term is None:
            raise NoSuchSession(f"no terminal for session {session_id!r}; attach or exec first")
        return term

    def _get_or_start(self, session_id: str, cwd: str | None, target: Target | None = None) -> AnyTerminal:
        """Start the session's terminal unless it exists.

        The slot is reserved under the lock but the shell starts outside it:
        start-up emits events, and a listener that calls back into the
        registry (``list()``) must not wait on a lock held for seconds.
        Concurrent starts of the same session wait for the first one.
        """
        while True:
            with self._lock:
                term = self._terms.get(session_id)
                if term is not None:
                    return term
                if session_id not in self._starting:
                    if len(self._terms) + len(self._starting) >= self.config.max_sessions:
                        raise TooManySessions(
                            f"{len(self._terms)} terminals are open (max_sessions="
                            f"{self.config.max_sessions}); close one first",
                            max_sessions=self.config.max_sessions,
                        )
                    self._starting.add(session_id)
                    break
                self._started.wait(timeout=1.0)
        # A Ctrl-C from here until the terminal is registered either cuts
        # the start short (the terminal closes what it began) or waits until
        # the terminal is in the table, where close_all() finds it: never a
        # shell that nobody would close (core.ctrl_c).
        try:
            with ctrl_c.deferred():
                term = self._new_terminal(session_id, cwd, target)
                with self._lock:
                    self._starting.discard(session_id)
                    self._terms[session_id] = term
                    self._started.notify_all()
                self._emit({"type": "terminal", "session_id": session_id, "status": "idle"})
        except BaseException:
            with self._lock:
                self._starting.discard(session_id)
                self._started.notify_all()
            raise
        return term

    def _replace(self, session_id: str, cwd: str | None, target: Target | None = None) -> AnyTerminal:
        with self._lock:
            old = self._terms.pop(session_id, None)
        if old is not None:
            old.close()
        if target is None and cwd is not None and not os.path.isdir(cwd):
            cwd = None
        return self._get_or_start(session_id, cwd, target)

    def _new_terminal(self, session_id: str, cwd: str | None, target: Target | None = None) -> AnyTerminal:
        if target is not None:
            return RemoteTerminal(
                session_id, self.config, target, cwd=cwd, job_table=self.jobs, emit=self._emit
            )
        return Terminal(session_id, self.config, cwd=cwd, job_table=self.jobs, emit=self._emit)


def _target(term: Any) -> Target | None:
    return getattr(term, "target", None)


def _name(target: Target | None) -> str:
    return "local" if target is None else str(target)


def _shq(s: str) -> str:
    import shlex

    return shlex.quote(s)
