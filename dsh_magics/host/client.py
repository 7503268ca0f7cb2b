""":class:`HostClient`: the engine contract served by the terminal host.

Composed of a :class:`~.transport.Transport` (connections, requests, the
host's loss), an :class:`~.events.EventStream` (events, listeners) and
:class:`~.proxies.JobProxies` (local stand-ins for the host's jobs). Each
contract method is one row of :data:`protocol.OPERATIONS`; docs/host.md.
"""

from __future__ import annotations

import builtins
import logging
import os
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import shutdown
from ..errors import DshError, HostUnavailable, NoSuchJob
from ..jobs import Job
from ..terminal import validation as V
from ..terminal import waits
from ..terminal.api import Engine, Listener
from ..terminal.config import TerminalConfig
from ..terminal.deadline import Deadline, settled_within
from ..terminal.requests import ExecRequest, SendRequest, WaitRequest
from ..terminal.result import SHELL_EXITED, ReadResult, Result, TerminalInfo, tail_of
from . import protocol as P
from .events import EventStream
from .pages import HostPage
from .proxies import HOST_GONE_NOTE, JobProxies
from .runtime import HostPaths
from .transport import CONNECTED, DETACHED, Link, Transport

if TYPE_CHECKING:
    from ..answer.page import SecretPrompt
    from ..terminal.registry import Registry

log = logging.getLogger(__name__)

#: Longest one ``wait_output`` request asks the host to block (it caps at
#: :data:`protocol.MAX_BLOCK_SECONDS` anyway); the client loops.
_BLOCK = 25.0

__all__ = ["HOST_GONE_NOTE", "HostClient"]


class _JobsView:
    """``registry.jobs`` for code that lists jobs (the panel, job-id prefixes)."""

    def __init__(self, client: HostClient) -> None:
        self._client = client

    def all(self) -> builtins.list[Job]:
        return self._client._jobs()

    def running(self, owner: str | None = None) -> builtins.list[Job]:
        return self._client._jobs(owner=owner, running=True)

    def get(self, job_id: str) -> Job:
        return self._client.job(job_id)

    def latest(self, owner: str | None = None) -> Job | None:
        return self._client.latest_job(owner)

    def __len__(self) -> int:
        return len(self._client._call("jobs", {"results": False}))  # no proxies needed to count


class HostClient(Engine):
    """The engine API, served by the terminal host named by ``paths``. The
    keyword methods ``exec``, ``wait`` and ``send`` are :class:`Engine`'s.

    ``watch_pid`` is handed to a host this client has to start (the Jupyter
    server whose life the host follows); ``autostart=False`` only joins.
    """

    def __init__(
        self,
        paths: HostPaths,
        *,
        watch_pid: int | None = None,
        autostart: bool = True,
        start_timeout: float = 30.0,
    ) -> None:
        self.paths = paths
        self.restarts = 0
        self._config: TerminalConfig | None = None
        self._proxies = JobProxies(self.interrupt, self._fetch_result)
        self._transport = Transport(
            paths,
            watch_pid=watch_pid,
            autostart=autostart,
            start_timeout=start_timeout,
            event_types=lambda: self._stream.types(),
            on_connect=self._on_connect,
            on_stream=lambda link: self._stream.start(link),
            on_lost=self._on_lost,
        )
        self._stream = EventStream(self._proxies, self._transport.stream_ended)
        # A kernel's exit must never close the notebook's terminals: the
        # DETACH step runs before TERMINALS (see dsh_magics.shutdown; pinned by
        # tests/host/test_shutdown.py::test_a_host_clients_exit_detaches_and_never_closes).
        ref = weakref.ref(self)
        self._unregister_exit = shutdown.register(shutdown.DETACH, lambda: _detach_at_exit(ref))

    # ------------------------------------------------------------------
    # connection state
    def connect(self) -> dict[str, Any]:
        """Join (or start) the host now; returns its hello."""
        return self._transport.connect()

    @property
    def connected(self) -> bool:
        return self._transport.state == CONNECTED

    @property
    def detached(self) -> bool:
        return self._transport.state == DETACHED

    @property
    def watch_pid(self) -> int | None:
        return self._transport.watch_pid

    @property
    def _hello(self) -> dict[str, Any]:
        return self._transport.hello

    @property
    def _events(self) -> Link | None:
        return self._transport.events

    def host_info(self) -> dict[str, Any]:
        """The host's hello: pid, name, instance, socket, watched pid."""
        return dict(self._transport.hello)

    def status(self) -> dict[str, Any]:
        """What ``dsh-magics host status`` shows of this host, asked now: its
        hello, its terminals, the pids of subscribed clients, the number of
        connections, and each person attached (``attached``: session id,
        pid and client)."""
        return self._call("status", {})  # type: ignore[no-any-return]

    def _on_connect(self, hello: dict[str, Any], restarted: bool) -> None:
        if restarted:
            self.restarts += 1
            self._proxies.host_restarted()
        self._config = None

    def _on_lost(self, why: str) -> None:
        for event in self._proxies.settle_orphans(why):
            self._stream.dispatch(event)
        self._stream.dispatch({"type": "host", "status": "lost", "reason": why})

    def detach(self) -> None:
        """Leave the host without closing anything: the notebook's terminals
        and running jobs keep going (kernel shutdown and restart use this)."""
        self._unregister_exit()
        self._transport.detach()

    def _detach_quietly(self) -> None:
        try:
            self.detach()
        except Exception:  # noqa: BLE001 - at exit, never raise
            log.debug("detaching at exit failed", exc_info=True)

    # ------------------------------------------------------------------
    # requests: one generic call over protocol.OPERATIONS
    def _call(self, op: str, args: dict[str, Any]) -> Any:
        return self._transport.call(op, args)

    def _op(self, name: str, **kwargs: Any) -> Any:
        """Call operation ``name``: the arguments are checked here with the
        row's checks (the same the engine runs, so a bad argument costs no
        round trip and reads the same), the value converted back by kind."""
        op = P.OPERATIONS[name]
        for required in op.required:
            if kwargs.get(required) is None:
                op.args[required](None, required)  # the engine's words for a missing id
        value = self._call(name, op.check(kwargs))
        if op.returns == "job":
            return None if value is None else self._proxies.proxy(value)
        if op.returns == "jobs":
            return [self._proxies.proxy(w) for w in value]
        if op.returns == "result":
            return self._proxies.adopt(value)
        return P.FROM_WIRE.get(op.returns, P.FROM_WIRE["raw"])(value)

    def _send_checked(self, name: str, **checked: Any) -> Any:
        """Call operation ``name`` with arguments a request already checked
        (left off the wire when None): the host checks them, this process does not again."""
        return self._call(name, {k: v for k, v in checked.items() if v is not None})

    def _jobs(self, owner: str | None = None, running: bool = False) -> builtins.list[Job]:
        return self._op("jobs", owner=owner, running=running or None, results=False)  # type: ignore[no-any-return]

    def _fetch_result(self, job_id: str) -> Result:
        return self._op("result", job_id=job_id)  # type: ignore[no-any-return]

    # ------------------------------------------------------------------
    # the engine contract (terminal/api.py), one method per table row
    @property
    def config(self) -> TerminalConfig:
        """The host's terminal configuration."""
        if self._config is None:
            self._transport.ready()
            try:
                self._config = TerminalConfig(**self._transport.hello.get("config", {}))
            except (DshError, TypeError):
                self._config = TerminalConfig.from_env()
        return self._config

    @property
    def jobs(self) -> _JobsView:
        return _JobsView(self)

    def attach(
        self, session_id: str, cwd: str | None = None, recreate: bool = False, target: str | None = None
    ) -> TerminalInfo:
        info: TerminalInfo = self._op(
            "attach", session_id=session_id, cwd=cwd, recreate=recreate, base_cwd=_cwd(), target=target
        )
        self._proxies.know_session(session_id)
        return info

    def close(self, session_id: str) -> bool:
        return bool(self._op("close", session_id=session_id))

    def close_all(self) -> int:
        return int(self._op("close_all"))

    def list(self) -> builtins.list[TerminalInfo]:  # noqa: A003
        return self._op("list")  # type: ignore[no-any-return]

    def info(self, session_id: str) -> TerminalInfo:
        return self._op("info", session_id=session_id)  # type: ignore[no-any-return]

    def exists(self, session_id: str) -> bool:
        if not isinstance(session_id, str) or not session_id:
            return False
        return bool(self._op("exists", session_id=session_id))

    def run_exec(self, request: ExecRequest) -> Job | Result:
        """``wait_ms`` is handled here alone: the deadline is taken once, the
        host waits up to its cap (the table row's ``block``) and a job it
        returns unsettled is waited on locally until the same deadline (its
        proxy is settled by the host's ``job_done`` event). The request is
        checked already: it goes on the wire as it is."""
        started = time.monotonic()
        r = request
        # tty=False (the default) is left off the wire.
        value = self._send_checked(
            "exec",
            session_id=r.session_id,
            command=r.command,
            wait_ms=r.wait_ms,
            base_cwd=_cwd(),
            tty=r.tty or None,
            source=r.source,
            caller=r.caller,
        )
        noted = self._proxies.first_after_restart(r.session_id)
        if "result" in value:
            return self._proxies.adopt(value["result"], noted=noted)
        job = self._proxies.proxy(value["job"], noted=noted)
        if settled_within(job, r.wait_ms, started):
            if job.status == SHELL_EXITED and self._proxies.was_lost(job.id):
                raise self._lost_under_call()  # settled by the loss, not by the job
            return job.result  # type: ignore[no-any-return]
        return job

    def run_wait(self, request: WaitRequest) -> Result:
        """:meth:`wait` with a checked request. Runs here, over
        ``job``/``info``/``read``/``wait_output`` (see
        :mod:`dsh_magics.terminal.waits`): the local job proxy is settled by
        the host's ``job_done`` event, so no request blocks a host thread for
        longer than a ``wait_output`` slice.

        A host lost while this call waits is HOST_UNAVAILABLE to this call,
        however the loss reached it (its own request failed; the event stream
        saw it first and settled the job; another caller took the loss's
        report and a lookup here met the fresh host); a later lookup of the
        job is NO_SUCH_JOB."""
        job_id = request.job_id
        lost_before = self._proxies.was_lost(job_id)
        try:
            res = waits.run(self, request)
        except NoSuchJob:
            if not lost_before and self._proxies.was_lost(job_id):
                raise self._lost_under_call() from None
            raise
        if not lost_before and res.status == SHELL_EXITED and self._proxies.was_lost(job_id):
            raise self._lost_under_call()  # settled by the loss, not by the job
        return res

    def _lost_under_call(self) -> HostUnavailable:
        """The report, to a call whose job's host was lost while it waited."""
        return HostUnavailable(
            self._transport.lost_message
            or "the terminal host is gone: its terminals and their jobs are lost. The next call starts a fresh host."
        )

    def run_send(self, request: SendRequest) -> Result:
        """:meth:`send` with a checked request: on the wire as it is; the
        host waits at most its cap (:data:`protocol.MAX_BLOCK_SECONDS`) for
        the job to react."""
        r = request
        value = self._send_checked(
            "send",
            session_id=r.session_id,
            text=r.text,
            key=r.key,
            enter=r.enter,
            wait_ms=0 if r.wait_ms is None else r.wait_ms,
            source=r.source,
            caller=r.caller,
            secret=r.secret,
            allow_secret=r.allow_secret,
            allow_unknown_prompt=r.allow_unknown_prompt,
            keys=r.keys,
        )
        return self._proxies.adopt(value)

    def type_keys(self, session_id: str, data: str, caller: str | None = None) -> dict[str, Any]:
        return self._op("type_keys", session_id=session_id, data=data, caller=caller)  # type: ignore[no-any-return]

    def inputs(self, session_id: str, last: int | None = None) -> builtins.list[dict[str, Any]]:
        return self._op("inputs", session_id=session_id, last=last)  # type: ignore[no-any-return]

    def result(self, job_id: str, tail_lines: int | None = None) -> Result:
        V.count(tail_lines, "tail_lines")
        job = self.job(job_id)
        if job.done and isinstance(job.result, Result):
            return tail_of(job.result, tail_lines)
        if "operations" not in self._transport.hello:
            # A host from before tail_lines (its hello lists no operations):
            # fetch the whole snapshot and cut it here (pinned by
            # tests/host/test_table.py::test_a_host_from_before_tail_lines_gets_the_whole_snapshot_cut_here).
            return tail_of(self._op("result", job_id=job_id), tail_lines)
        return self._op("result", job_id=job_id, tail_lines=tail_lines)  # type: ignore[no-any-return]

    def job(self, job_id: str) -> Job:
        V.job_id(job_id)
        job = self._proxies.get(job_id)
        if job is not None:
            return job
        try:
            return self._op("job", job_id=job_id)  # type: ignore[no-any-return]
        except NoSuchJob:
            if self._proxies.was_lost(job_id):
                raise NoSuchJob(
                    f"job {job_id!r} ran in a terminal host that has exited; the job and its terminal are gone",
                    job_id=job_id,
                    host_lost=True,
                ) from None
            raise

    def latest_job(self, session_id: str | None = None) -> Job | None:
        return self._op("latest_job", session_id=session_id)  # type: ignore[no-any-return]

    def interrupt(self, session_id: str, source: str | None = None, caller: str | None = None) -> Job | None:
        return self._op("interrupt", session_id=session_id, source=source, caller=caller)  # type: ignore[no-any-return]

    def read(self, session_id: str, since: int | None = None, last: int | None = None) -> ReadResult:
        return self._op("read", session_id=session_id, since=since, last=last)  # type: ignore[no-any-return]

    def screen(self, session_id: str, styles: bool = False, vt: bool = False) -> dict[str, Any]:
        return self._op("screen", session_id=session_id, styles=styles, vt=vt or None)  # type: ignore[no-any-return]

    def resize(self, session_id: str, cols: int, rows: int) -> bool:
        return bool(self._op("resize", session_id=session_id, cols=cols, rows=rows))

    def output_seq(self, session_id: str) -> int:
        return int(self._op("output_seq", session_id=session_id))

    def wait_output(self, session_id: str, after_seq: int, timeout: float | None = None) -> int:
        """Block until the terminal has output newer than ``after_seq``
        (served in slices, so no request holds a host thread for long)."""
        V.session_id(session_id)
        V.count(after_seq, "after_seq")
        V.timeout(timeout)
        deadline = Deadline(None if timeout is None else time.monotonic() + timeout)
        while True:
            left = deadline.left_s()
            slice_ = _BLOCK if left is None else min(_BLOCK, left)
            asked = time.monotonic()
            seq = int(self._send_checked("wait_output", session_id=session_id, after_seq=after_seq, timeout=slice_))
            if seq != after_seq or deadline.passed():
                return seq
            if time.monotonic() - asked < slice_ * 0.9:
                return seq  # returned early without news: the shell is dead

    def open_answer_page(
        self, prompt: SecretPrompt, on_end: Callable[[str], None] | None = None
    ) -> HostPage:
        """A one-time page for a person to answer ``prompt``, served by the
        host (which owns the terminal); ``on_end(outcome)`` once it ends.
        Not part of the engine contract: in-process, the caller serves
        :class:`dsh_magics.answer.page.AnswerPage` itself."""
        return HostPage(lambda op, **args: self._op(op, **args), prompt, on_end=on_end)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Same events as the engine's registry, delivered on the client's
        event thread (``output``, ``job_started``, ``job_done``, ``terminal``;
        plus ``host`` when the host is lost)."""
        lock, listeners = self._transport.lock, self._stream.listeners
        with lock:
            listeners.append(listener)
            if len(listeners) == 1:
                self._transport.refilter()

        def unsubscribe() -> None:
            with lock:
                if listener in listeners:
                    listeners.remove(listener)
                    if not listeners:
                        self._transport.refilter()

        return unsubscribe

    def __repr__(self) -> str:
        return f"<HostClient {self.paths.name} {self._transport.state} socket={self.paths.socket}>"


def _detach_at_exit(ref: weakref.ref[HostClient]) -> None:
    client = ref()
    if client is not None:
        client._detach_quietly()


def _cwd() -> str | None:
    try:
        return os.getcwd()
    except OSError:
        return None


if TYPE_CHECKING:

    def _both_are_engines(client: HostClient, registry: Registry) -> None:
        """Checked by mypy in CI (.ci/run): both backends satisfy the contract."""
        engine: Engine = client
        engine = registry
        del engine
