""":class:`HostClient`: the engine contract served by the terminal host.

Calls come from :data:`protocol.OPERATIONS`; connections and events: docs/host.md, "Internals".
"""

from __future__ import annotations

import builtins
import dataclasses
import inspect
import json
import logging
import os
import socket
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from .. import jobs, shutdown
from ..errors import DshError, HostUnavailable, NoSuchJob
from ..terminal import interaction, waits
from ..terminal import validation as V
from ..terminal.api import Engine
from ..terminal.config import TerminalConfig
from ..terminal.result import SHELL_EXITED, Result, TerminalInfo, tail_of
from . import protocol as P
from .lifecycle import ensure_host, probe
from .runtime import HostPaths

log = logging.getLogger(__name__)

Listener = Callable[[dict[str, Any]], None]

#: Longest a single blocking request is allowed to take (the host caps it too).
_BLOCK = 25.0

_MAX_PROXIES = 4096
_MAX_EARLY = 512

HOST_GONE_NOTE = (
    "the terminal host was restarted: the previous host's terminals, their state "
    "and their jobs are gone; this command ran in a fresh shell"
)

_NEW, _CONNECTED, _LOST, _LOST_REPORTED, _DETACHED = "new", "connected", "lost", "lost-reported", "detached"


class _Closed(ConnectionError):
    """The host closed a connection while we waited for a reply."""


class _Link:
    """One strictly request/reply connection to the host."""

    def __init__(self, path: str, generation: int, connect_timeout: float = 5.0) -> None:
        self.generation = generation
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.sock.settimeout(connect_timeout)
            self.sock.connect(path)
            self.sock.settimeout(None)
        except BaseException:
            self.sock.close()
            raise
        self.reader = P.LineReader(self.sock, P.MAX_REPLY)
        self._next = 0

    def call(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        self._next += 1
        msg_id = self._next
        try:
            self.sock.sendall(P.request(msg_id, op, args))
        except (BrokenPipeError, ConnectionResetError):
            # Refused and closed at once: read the reason, if the host left one.
            line = self.reader.next_item()
            if isinstance(line, bytes):
                msg = json.loads(line)
                if isinstance(msg, dict) and msg.get("ok") is False:
                    return msg
            raise
        while True:
            line = self.reader.next_item()
            if line is None:
                raise _Closed(f"the host closed the connection during {op!r}")
            if isinstance(line, P.Oversized):
                raise _Closed("the host sent an oversized reply")
            msg = json.loads(line)
            if not isinstance(msg, dict) or "event" in msg:
                continue
            if msg.get("id") == msg_id or (msg.get("id") is None and msg.get("ok") is False):
                return msg

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


class _RemoteJob(jobs.Job):
    """A :class:`jobs.Job` standing for a job in the host. A finished job
    listed without its result fetches it the first time ``result`` is read."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._result: Any = None
        self._fetch: Callable[[str], Any] | None = None
        super().__init__(*args, **kwargs)

    @property  # type: ignore[override]
    def result(self) -> Any:
        fetch = self._fetch
        if fetch is not None and self._result is None and self.done:
            self._fetch = None
            try:
                self._result = fetch(self.id)
            except DshError:
                pass
        return self._result

    @result.setter
    def result(self, value: Any) -> None:
        self._result = value


class _JobsView:
    """``registry.jobs`` for code that lists jobs (the panel, job-id prefixes)."""

    def __init__(self, client: HostClient) -> None:
        self._client = client

    def all(self) -> builtins.list[jobs.Job]:
        return self._client._op("jobs", results=False)  # type: ignore[no-any-return]

    def running(self, owner: str | None = None) -> builtins.list[jobs.Job]:
        return self._client._op("jobs", owner=owner, running=True, results=False)  # type: ignore[no-any-return]

    def get(self, job_id: str) -> jobs.Job:
        return self._client.job(job_id)

    def latest(self, owner: str | None = None) -> jobs.Job | None:
        return self._client.latest_job(owner)

    def __len__(self) -> int:
        return len(self._client._call("jobs", {"results": False}))  # no proxies needed to count


class HostClient:
    """The engine API, served by the terminal host named by ``paths``.

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
        self.watch_pid = watch_pid
        self.autostart = autostart
        self.start_timeout = start_timeout
        self._lock = threading.RLock()
        self._state = _NEW
        self._generation = 0
        self._hello: dict[str, Any] = {}
        self._instance: str | None = None
        self._lost_message = ""
        self._pool: builtins.list[_Link] = []
        self._pool_lock = threading.Lock()
        self._events: _Link | None = None
        self._listeners: builtins.list[Listener] = []
        self._plock = threading.Lock()
        self._proxies: OrderedDict[str, jobs.Job] = OrderedDict()
        self._early: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._known_sessions: set[str] = set()
        self._notice_sessions: set[str] = set()
        self._noted_jobs: set[str] = set()
        self._lost_jobs: set[str] = set()
        self._config: TerminalConfig | None = None
        self.restarts = 0
        # A kernel's exit must never close the notebook's terminals: the
        # DETACH step runs before TERMINALS (see dsh_magics.shutdown; pinned by
        # tests/host/test_shutdown.py::test_a_host_clients_exit_detaches_and_never_closes).
        ref = weakref.ref(self)
        self._unregister_exit = shutdown.register(shutdown.DETACH, lambda: _detach_at_exit(ref))

    # ------------------------------------------------------------------
    # connection state
    def connect(self) -> dict[str, Any]:
        """Join (or start) the host now; returns its hello."""
        with self._lock:
            if self._state != _CONNECTED:
                if self._state == _DETACHED:
                    raise HostUnavailable("this client has detached from the terminal host")
                self._connect_locked()
            return dict(self._hello)

    @property
    def connected(self) -> bool:
        return self._state == _CONNECTED

    @property
    def detached(self) -> bool:
        return self._state == _DETACHED

    def host_info(self) -> dict[str, Any]:
        """The host's hello: pid, name, instance, socket, watched pid."""
        return dict(self._hello)

    def _connect_locked(self) -> None:
        if self.autostart:
            ensure_host(self.paths, watch_pid=self.watch_pid, timeout=self.start_timeout)
        elif probe(self.paths) is None:
            raise HostUnavailable(f"no terminal host is running at {self.paths.socket}")
        generation = self._generation + 1
        try:
            link = _Link(self.paths.socket, generation)
        except OSError as e:
            raise HostUnavailable(f"cannot connect to the terminal host: {e}") from None
        try:
            hello = self._expect(link.call("hello", {"client": {"pid": os.getpid(), "purpose": "events"}}))
            self._expect(link.call("subscribe", {"types": self._event_types()}))
        except (OSError, ValueError) as e:
            link.close()
            raise HostUnavailable(f"the terminal host did not answer: {e}") from None
        except BaseException:
            link.close()
            raise
        if self._instance is not None and hello.get("instance") != self._instance:
            self.restarts += 1
            self._notice_sessions = set(self._known_sessions)
            self._known_sessions = set()
        self._instance = hello.get("instance")
        self._hello = hello
        self._config = None
        self._generation = generation
        self._drop_pool()
        self._events = link
        self._state = _CONNECTED
        threading.Thread(
            target=self._event_loop, args=(link,), name="dsh-host-client-events", daemon=True
        ).start()

    def _ready(self) -> int:
        """Make sure we are connected; returns the connection generation."""
        if self._state == _CONNECTED:
            return self._generation
        with self._lock:
            if self._state == _DETACHED:
                raise HostUnavailable("this client has detached from the terminal host")
            if self._state == _LOST:
                # The event stream saw the host go: say so once, clearly.
                self._state = _LOST_REPORTED
                raise HostUnavailable(self._lost_message)
            if self._state != _CONNECTED:
                self._connect_locked()
            return self._generation

    def _mark_lost(self, generation: int, why: str, reported: bool) -> None:
        with self._lock:
            if generation != self._generation or self._state != _CONNECTED:
                return
            pid = self._hello.get("pid")
            self._lost_message = (
                f"the terminal host (pid {pid}) is gone ({why}): its terminals and their jobs are lost. "
                "The next call starts a fresh host."
            )
            self._state = _LOST_REPORTED if reported else _LOST
            events, self._events = self._events, None
            self._drop_pool()
        if events is not None:
            events.close()
        log.info("%s", self._lost_message)
        self._settle_orphans(why)

    def _settle_orphans(self, why: str) -> None:
        """Jobs that were still running on the lost host will never report:
        settle them, so nobody waits forever."""
        now = time.time()
        with self._plock:
            pending = [j for j in self._proxies.values() if not j.done]
            self._lost_jobs.update(self._proxies)
            self._proxies.clear()
            self._early.clear()
        for job in pending:
            result = Result(
                job_id=job.id,
                session_id=job.owner,
                command=job.label,
                status=SHELL_EXITED,
                exit_code=None,
                output="",
                timed_out=False,
                started_at=job.created_at,
                ended_at=now,
                cwd=None,
                note=f"the terminal host exited ({why}); this job's terminal is gone",
            )
            job.settle(SHELL_EXITED, result)
            self._dispatch({"type": "job_done", "session_id": job.owner, "job_id": job.id, "result": result})
        self._dispatch({"type": "host", "status": "lost", "reason": why})

    def _drop_pool(self) -> None:
        with self._pool_lock:
            pool, self._pool = self._pool, []
        for link in pool:
            link.close()

    def detach(self) -> None:
        """Leave the host without closing anything: the notebook's terminals
        and running jobs keep going (kernel shutdown and restart use this)."""
        with self._lock:
            state, self._state = self._state, _DETACHED
            events, self._events = self._events, None
        self._unregister_exit()
        if state == _CONNECTED:
            try:
                link = _Link(self.paths.socket, -1, connect_timeout=2.0)
                try:
                    link.sock.settimeout(2.0)
                    link.call("detach", {})
                finally:
                    link.close()
            except (OSError, ValueError):
                pass
        if events is not None:
            events.close()
        self._drop_pool()

    def _detach_quietly(self) -> None:
        try:
            self.detach()
        except Exception:  # noqa: BLE001 - at exit
            pass

    # ------------------------------------------------------------------
    # requests
    def _call(self, op: str, args: dict[str, Any]) -> Any:
        generation = self._ready()
        link = self._checkout(generation)
        try:
            reply = link.call(op, args)
        except (OSError, ValueError) as e:
            link.close()
            why = "it closed the connection" if isinstance(e, _Closed) else f"{type(e).__name__}: {e}"
            self._mark_lost(generation, why, reported=True)
            raise HostUnavailable(self._lost_message or f"the terminal host is unavailable: {why}") from None
        except BaseException:
            # Interrupted mid-request (Ctrl-C): the reply would arrive on
            # this connection later and confuse the next caller; drop it.
            link.close()
            raise
        self._checkin(link)
        return self._expect(reply)

    @staticmethod
    def _expect(reply: dict[str, Any]) -> Any:
        if reply.get("ok"):
            return reply.get("value")
        raise P.error_from_wire(reply.get("error"))

    def _checkout(self, generation: int) -> _Link:
        with self._pool_lock:
            while self._pool:
                link = self._pool.pop()
                if link.generation == generation:
                    return link
                link.close()
        try:
            return _Link(self.paths.socket, generation)
        except OSError as e:
            self._mark_lost(generation, f"cannot connect: {e.strerror or e}", reported=True)
            raise HostUnavailable(self._lost_message or f"the terminal host is unavailable: {e}") from None

    def _checkin(self, link: _Link) -> None:
        with self._pool_lock:
            if link.generation == self._generation and len(self._pool) < 8:
                self._pool.append(link)
                return
        link.close()

    # ------------------------------------------------------------------
    # events
    def _event_loop(self, link: _Link) -> None:
        generation = link.generation
        try:
            for line in link.reader:
                if isinstance(line, P.Oversized):
                    continue
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                event = msg.get("event") if isinstance(msg, dict) else None
                if isinstance(event, dict):
                    self._on_event(event)
        except OSError:
            pass
        except Exception:  # noqa: BLE001 - never die silently with jobs pending
            log.exception("host event stream failed")
        if self._state == _CONNECTED and generation == self._generation:
            self._mark_lost(generation, "its event stream ended", reported=False)

    def _on_event(self, event: dict[str, Any]) -> None:
        if event.get("type") == "job_done" and isinstance(event.get("result"), dict):
            jid = event.get("job_id")
            with self._plock:
                result = self._adopt(P.result_from_wire(event["result"]))
                job = self._proxies.get(jid) if isinstance(jid, str) else None
                if job is None or job.done:
                    self._early[str(jid)] = event["result"]
                    while len(self._early) > _MAX_EARLY:
                        self._early.popitem(last=False)
            if job is not None and not job.done:
                job.settle(result.status, result)
            event = dict(event, result=result)
        self._dispatch(event)

    def _dispatch(self, event: dict[str, Any]) -> None:
        for fn in builtins.list(self._listeners):
            try:
                fn(event)
            except Exception:  # noqa: BLE001
                log.exception("registry listener failed")

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Same events as the engine's registry, delivered on the client's
        event thread (``output``, ``job_started``, ``job_done``, ``terminal``;
        plus ``host`` when the host is lost)."""
        with self._lock:
            self._listeners.append(listener)
            if len(self._listeners) == 1:
                self._refilter()

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)
                    if not self._listeners:
                        self._refilter()

        return unsubscribe

    def _event_types(self) -> builtins.list[str]:
        # Job proxies need only job_done; listeners want everything.
        return ["job_done", "job_started", "output", "terminal"] if self._listeners else ["job_done"]

    def _refilter(self) -> None:
        """Tell the host which events to stream (caller holds ``_lock``).
        Written on the event connection; its reply is skipped by the event
        loop, and events are filtered from the moment the host reads it."""
        link = self._events
        if link is None or self._state != _CONNECTED:
            return
        try:
            link.sock.sendall(P.request("filter", "subscribe", {"types": self._event_types()}))
        except OSError:
            pass  # the event loop notices a dead host on its own

    # ------------------------------------------------------------------
    # job proxies
    def _adopt(self, result: Result) -> Result:
        """Mark a result of the first job after a host restart (caller holds
        ``_plock`` or owns the result exclusively)."""
        if result.job_id in self._noted_jobs:
            note = HOST_GONE_NOTE if not result.note else f"{HOST_GONE_NOTE}; {result.note}"
            return dataclasses.replace(result, fresh_shell=True, note=note)
        return result

    def _proxy(self, wire: dict[str, Any], *, noted: bool = False) -> jobs.Job:
        jid = str(wire["id"])
        settle_with: Result | None = None
        with self._plock:
            if noted:
                self._noted_jobs.add(jid)
            job = self._proxies.get(jid)
            if job is None:
                owner = str(wire.get("owner") or "")
                job = _RemoteJob(
                    str(wire.get("kind") or "bash"),
                    owner,
                    label=str(wire.get("label") or ""),
                    job_id=jid,
                    canceller=lambda j: self.interrupt(j.owner),
                )
                if isinstance(wire.get("created_at"), (int, float)):
                    job.created_at = float(wire["created_at"])
                self._proxies[jid] = job
                self._trim_proxies()
            finished = str(wire.get("status") or jobs.RUNNING) != jobs.RUNNING
            lazy = False
            if not job.done:
                raw = wire.get("result") if finished else None
                if raw is None:
                    raw = self._early.pop(jid, None)
                if isinstance(raw, dict):
                    settle_with = self._adopt(P.result_from_wire(raw))
                elif finished:
                    lazy = True  # listed without its result: fetch on first read
        if settle_with is not None:
            job.settle(settle_with.status, settle_with)
        elif lazy and isinstance(job, _RemoteJob):
            job._fetch = self._fetch_result
            job.settle(str(wire["status"]), None)
        return job

    def _fetch_result(self, job_id: str) -> Result:
        return self._op("result", job_id=job_id)  # type: ignore[no-any-return]

    def _trim_proxies(self) -> None:
        if len(self._proxies) <= _MAX_PROXIES:
            return
        for jid in builtins.list(self._proxies):
            if len(self._proxies) <= _MAX_PROXIES // 2:
                break
            if self._proxies[jid].done:
                del self._proxies[jid]
                self._noted_jobs.discard(jid)

    def _note_session(self, session_id: str) -> bool:
        """Remember the session; True if this is its first job after a host restart."""
        with self._plock:
            self._known_sessions.add(session_id)
            if session_id in self._notice_sessions:
                self._notice_sessions.discard(session_id)
                return True
            return False

    # ------------------------------------------------------------------
    # the engine API: one generic call over protocol.OPERATIONS
    def _op(self, name: str, **kwargs: Any) -> Any:
        """Call operation ``name``: the arguments are checked here with the
        row's checks (the same the engine runs, so a bad argument costs no
        round trip and reads the same), the value converted back by kind."""
        op = P.OPERATIONS[name]
        value = self._call(name, op.check(kwargs))
        if op.returns == "job":
            return None if value is None else self._proxy(value)
        if op.returns == "jobs":
            return [self._proxy(w) for w in value]
        if op.returns == "result":
            with self._plock:
                return self._adopt(P.result_from_wire(value))
        return P.FROM_WIRE.get(op.returns, P.FROM_WIRE["raw"])(value)

    @property
    def config(self) -> TerminalConfig:
        """The host's terminal configuration."""
        if self._config is None:
            self._ready()
            try:
                self._config = TerminalConfig(**self._hello.get("config", {}))
            except (DshError, TypeError):
                self._config = TerminalConfig.from_env()
        return self._config

    @property
    def jobs(self) -> _JobsView:
        return _JobsView(self)

    def attach(
        self, session_id: str, cwd: str | None = None, recreate: bool = False, target: str | None = None
    ) -> TerminalInfo:
        info = self._op(
            "attach", session_id=session_id, cwd=cwd, recreate=recreate, base_cwd=_cwd(), target=target
        )
        with self._plock:
            self._known_sessions.add(session_id)
        return info  # type: ignore[no-any-return]

    def exec(  # noqa: A003
        self, session_id: str, command: str, wait_ms: int | None = None, tty: bool = False
    ) -> jobs.Job | Result:
        V.session_id(session_id)
        V.command(command)
        V.wait_ms(wait_ms)  # in the engine's order, before capping it
        V.flag(tty, "tty")
        started = time.monotonic()
        value = self._op(
            "exec",
            session_id=session_id,
            command=command,
            wait_ms=None if wait_ms is None else min(wait_ms, _BLOCK * 1000),
            base_cwd=_cwd(),
            tty=tty or None,
        )
        noted = self._note_session(session_id)
        if "result" in value:
            result = P.result_from_wire(value["result"])
            if noted:
                with self._plock:
                    self._noted_jobs.add(result.job_id)
                    result = self._adopt(result)
            return result
        job = self._proxy(value["job"], noted=noted)
        if wait_ms is not None:
            remaining = wait_ms / 1000.0 - (time.monotonic() - started)
            if job.wait(max(0.0, remaining)):
                return job.result
        return job

    def wait(
        self,
        job_id: str,
        timeout: float | None = None,
        until: str | None = None,
        idle_ms: int | None = None,
        on_input: bool = True,
    ) -> Result:
        """Runs here, over ``job``/``info``/``read``/``wait_output`` (see
        :mod:`dsh_magics.terminal.waits`): the local job proxy is settled by
        the host's ``job_done`` event, so no request blocks a host thread for
        longer than a ``wait_output`` slice."""
        return waits.wait(self, job_id, timeout, until=until, idle_ms=idle_ms, on_input=on_input)

    def send(
        self,
        session_id: str,
        text: str | None = None,
        key: str | None = None,
        enter: bool = True,
        wait_ms: int | None = interaction.DEFAULT_SEND_WAIT_MS,
        source: str = interaction.PERSON,
        caller: str | None = None,
        secret: bool = False,
        allow_secret: bool = True,
    ) -> Result:
        """As in-process; the host waits at most one slice (25 s) for the job to react."""
        V.session_id(session_id)
        V.wait_ms(wait_ms)
        interaction.check_send(source=source, caller=caller, secret=secret, allow_secret=allow_secret)
        return self._op(  # type: ignore[no-any-return]
            "send",
            session_id=session_id,
            text=text,
            key=key,
            enter=enter,
            wait_ms=0 if wait_ms is None else min(wait_ms, _BLOCK * 1000),
            source=source,
            caller=caller,
            secret=secret,
            allow_secret=allow_secret,
        )

    def result(self, job_id: str, tail_lines: int | None = None) -> Result:
        V.count(tail_lines, "tail_lines")
        job = self.job(job_id)
        if job.done and isinstance(job.result, Result):
            return tail_of(job.result, tail_lines)
        if "operations" not in self._hello:
            # A host from before tail_lines (its hello lists no operations):
            # fetch the whole snapshot and cut it here (pinned by
            # tests/host/test_table.py::test_a_host_from_before_tail_lines_gets_the_whole_snapshot_cut_here).
            return tail_of(self._op("result", job_id=job_id), tail_lines)
        return self._op("result", job_id=job_id, tail_lines=tail_lines)  # type: ignore[no-any-return]

    def job(self, job_id: str) -> jobs.Job:
        V.job_id(job_id)
        with self._plock:
            job = self._proxies.get(job_id)
        if job is not None:
            return job
        try:
            return self._op("job", job_id=job_id)  # type: ignore[no-any-return]
        except NoSuchJob:
            if job_id in self._lost_jobs:
                raise NoSuchJob(
                    f"job {job_id!r} ran in a terminal host that has exited; the job and its terminal are gone",
                    job_id=job_id,
                ) from None
            raise

    def exists(self, session_id: str) -> bool:
        if not isinstance(session_id, str) or not session_id:
            return False
        return bool(self._op("exists", session_id=session_id))

    def wait_output(self, session_id: str, after_seq: int, timeout: float | None = None) -> int:
        """Block until the terminal has output newer than ``after_seq``
        (served in slices, so no request holds a host thread for long)."""
        V.session_id(session_id)
        V.timeout(timeout)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            slice_ = _BLOCK if deadline is None else max(0.0, min(_BLOCK, deadline - time.monotonic()))
            asked = time.monotonic()
            seq = int(self._op("wait_output", session_id=session_id, after_seq=after_seq, timeout=slice_))
            if seq != after_seq or (deadline is not None and time.monotonic() >= deadline):
                return seq
            if time.monotonic() - asked < slice_ * 0.9:
                return seq  # returned early without news: the shell is dead

    def __repr__(self) -> str:
        return f"<HostClient {self.paths.name} {self._state} socket={self.paths.socket}>"


def _remote(op: P.Operation) -> Callable[..., Any]:
    """A HostClient method for a table row with no client-side logic: bind
    the call by the contract's signature, send it, convert the value."""
    contract = getattr(Engine, op.name)
    signature = inspect.signature(contract)

    def method(self: HostClient, *args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        call = dict(bound.arguments)
        del call["self"]
        return self._op(op.name, **call)

    method.__name__ = method.__qualname__ = op.name
    method.__doc__ = contract.__doc__
    method.__signature__ = signature  # type: ignore[attr-defined]
    return method


# read, interrupt, close, close_all, list, info, latest_job, output_seq, ...:
# every contract operation HostClient does not define itself is generated.
for _op in P.OPERATIONS.values():
    if not _op.host and hasattr(Engine, _op.name) and _op.name not in vars(HostClient):
        setattr(HostClient, _op.name, _remote(_op))
del _op


def _detach_at_exit(ref: weakref.ref[HostClient]) -> None:
    client = ref()
    if client is not None:
        client._detach_quietly()


def _cwd() -> str | None:
    try:
        return os.getcwd()
    except OSError:
        return None
