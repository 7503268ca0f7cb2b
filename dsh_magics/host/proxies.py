"""Job proxies: the client's stand-ins for jobs that run in the host.

A proxy is settled by the host's ``job_done`` event (or fetched lazily when
listed without its result); after a host restart the first job of each
session the notebook knew carries :data:`HOST_GONE_NOTE`.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from .. import jobs
from ..errors import DshError
from ..terminal.result import SHELL_EXITED, Result
from . import protocol as P

_MAX_PROXIES = 4096
_MAX_EARLY = 512

HOST_GONE_NOTE = (
    "the terminal host was restarted: the previous host's terminals, their state "
    "and their jobs are gone; this command ran in a fresh shell"
)


class RemoteJob(jobs.Job):
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
                pass  # gone from the host (or the host is): the job keeps no result
        return self._result

    @result.setter
    def result(self, value: Any) -> None:
        self._result = value

    def settle_lazily(self, status: str, fetch: Callable[[str], Any]) -> None:
        """Finished, its result fetched by ``fetch(job_id)`` on first read."""
        self._fetch = fetch
        self.settle(status, None)


class JobProxies:
    """The proxies of one client, keyed by job id. ``interrupt(session_id)``
    cancels a job; ``fetch_result(job_id)`` gets a listed job's result."""

    def __init__(self, interrupt: Callable[[str], object], fetch_result: Callable[[str], Result]) -> None:
        self._interrupt = interrupt
        self._fetch_result = fetch_result
        self._lock = threading.Lock()
        self._proxies: OrderedDict[str, jobs.Job] = OrderedDict()
        self._early: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._known_sessions: set[str] = set()
        self._notice_sessions: set[str] = set()
        self._noted_jobs: set[str] = set()
        self._lost_jobs: set[str] = set()

    def get(self, job_id: str) -> jobs.Job | None:
        with self._lock:
            return self._proxies.get(job_id)

    def was_lost(self, job_id: str) -> bool:
        """Whether the job ran in a host that has since gone."""
        return job_id in self._lost_jobs

    # -- sessions and host restarts ------------------------------------
    def know_session(self, session_id: str) -> None:
        with self._lock:
            self._known_sessions.add(session_id)

    def host_restarted(self) -> None:
        """Every session known so far gets the restart note on its next job."""
        with self._lock:
            self._notice_sessions = set(self._known_sessions)
            self._known_sessions = set()

    def first_after_restart(self, session_id: str) -> bool:
        """Remember the session; True if this is its first job after a host restart."""
        with self._lock:
            self._known_sessions.add(session_id)
            if session_id in self._notice_sessions:
                self._notice_sessions.discard(session_id)
                return True
            return False

    def adopt(self, wire: dict[str, Any], *, noted: bool = False) -> Result:
        """A result from the wire, with the restart note if its job has one."""
        result = P.result_from_wire(wire)
        with self._lock:
            if noted:
                self._noted_jobs.add(result.job_id)
            return self._noted(result)

    def _noted(self, result: Result) -> Result:
        if result.job_id in self._noted_jobs:
            note = HOST_GONE_NOTE if not result.note else f"{HOST_GONE_NOTE}; {result.note}"
            return dataclasses.replace(result, fresh_shell=True, note=note)
        return result

    # -- proxies --------------------------------------------------------
    def proxy(self, wire: dict[str, Any], *, noted: bool = False) -> jobs.Job:
        """The proxy for a job on the wire (made, or updated, here)."""
        jid = str(wire["id"])
        settle_with: Result | None = None
        with self._lock:
            if noted:
                self._noted_jobs.add(jid)
            job = self._proxies.get(jid)
            if job is None:
                owner = str(wire.get("owner") or "")
                job = RemoteJob(
                    str(wire.get("kind") or "bash"),
                    owner,
                    label=str(wire.get("label") or ""),
                    job_id=jid,
                    canceller=lambda j: self._interrupt(j.owner),
                    source=wire.get("source") if isinstance(wire.get("source"), str) else None,
                    created_at=float(wire["created_at"]) if isinstance(wire.get("created_at"), (int, float)) else None,
                )
                self._proxies[jid] = job
                self._trim()
            finished = str(wire.get("status") or jobs.RUNNING) != jobs.RUNNING
            lazy = False
            if not job.done:
                raw = wire.get("result") if finished else None
                if raw is None:
                    raw = self._early.pop(jid, None)
                if isinstance(raw, dict):
                    settle_with = self._noted(P.result_from_wire(raw))
                elif finished:
                    lazy = True  # listed without its result: fetch on first read
        if settle_with is not None:
            job.settle(settle_with.status, settle_with)
        elif lazy and isinstance(job, RemoteJob):
            job.settle_lazily(str(wire["status"]), self._fetch_result)
        return job

    def job_done(self, job_id: object, wire: dict[str, Any]) -> Result:
        """A ``job_done`` event: settle the proxy (or keep the result for a
        proxy made later, the event having overtaken the reply)."""
        with self._lock:
            result = self._noted(P.result_from_wire(wire))
            job = self._proxies.get(job_id) if isinstance(job_id, str) else None
            if job is None or job.done:
                self._early[str(job_id)] = wire
                while len(self._early) > _MAX_EARLY:
                    self._early.popitem(last=False)
        if job is not None and not job.done:
            job.settle(result.status, result)
        return result

    def settle_orphans(self, why: str) -> list[dict[str, Any]]:
        """Jobs that were still running on a lost host will never report:
        settle them, so nobody waits forever. Returns their ``job_done`` events."""
        now = time.time()
        with self._lock:
            pending = [j for j in self._proxies.values() if not j.done]
            self._lost_jobs.update(self._proxies)
            self._proxies.clear()
            self._early.clear()
        events = []
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
            events.append({"type": "job_done", "session_id": job.owner, "job_id": job.id, "result": result})
        return events

    def _trim(self) -> None:
        if len(self._proxies) <= _MAX_PROXIES:
            return
        for jid in list(self._proxies):
            if len(self._proxies) <= _MAX_PROXIES // 2:
                break
            if self._proxies[jid].done:
                del self._proxies[jid]
                self._noted_jobs.discard(jid)
