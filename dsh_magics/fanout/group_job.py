"""A group job: one command started on every member of a target list, each as an ordinary job.

Members start in parallel on at most ``width`` worker threads (pdsh's fan-out:
a worker holds its slot while its member connects and runs). Each member's
outcome is its own: an unreachable target or a lost connection is that
member's result with a stable code, never an exception that loses the others.
Only the engine contract (terminal/api.py) is used. Durations are milliseconds, as
everywhere inside the package (``member_timeout_ms``, ``wait(timeout_ms=...)``); the
adapters convert what they take (the magics' seconds) at their edge.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import DshError, InvalidArgument, TooManySessions
from ..terminal.api import Engine
from ..terminal.deadline import Deadline
from ..terminal.requests import ExecRequest, WaitRequest
from ..terminal.result import COMPLETED, INTERRUPTED, SHELL_EXITED, Result
from .targets import DEFAULT_FANOUT, MAX_FANOUT, Member

log = logging.getLogger(__name__)

# Member statuses besides the job statuses (completed, interrupted, shell_exited).
QUEUED = "queued"  # waiting for a worker slot
STARTING = "starting"  # connecting (attach) or starting the job
RUNNING = "running"
FAILED = "failed"  # never ran, or its terminal died: see ``error``
CANCELLED = "cancelled"  # the group was interrupted before it started
TIMED_OUT = "timed_out"  # its per-target timeout passed and Ctrl-C did not end it: still runs, no longer waited for
FINAL = (COMPLETED, INTERRUPTED, SHELL_EXITED, FAILED, CANCELLED, TIMED_OUT)

#: After a per-target timeout the member gets Ctrl-C and this long (ms) to settle.
INTERRUPT_GRACE_MS = 10_000
#: Codes that mean "the target could not be reached" when opening its terminal.
_UNREACHABLE = ("TARGET_UNREACHABLE", "SHELL_EXITED")
#: Codes that mean "the terminal went away while the job ran".
_LOST = ("SHELL_EXITED", "HOST_UNAVAILABLE", "NO_SUCH_SESSION")


@dataclass
class MemberRun:
    """One member's progress and outcome."""

    member: Member
    status: str = QUEUED
    job_id: str | None = None
    result: Result | None = None  # the settled result (None until then)
    error: dict[str, str] | None = None  # {"code", "message"} when FAILED
    started_at: float | None = None
    ended_at: float | None = None
    timed_out: bool = False  # the per-target timeout ended it
    awaiting: dict[str, Any] | None = None  # what its job waits for, while it waits for typed input

    @property
    def done(self) -> bool:
        return self.status in FINAL


@dataclass
class GroupJob:
    """The handle of one group command (id ``g1``, ``g2``...)."""

    id: str
    request: ExecRequest  # the command, checked once for the group; each member runs it in its own session
    engine: Engine
    runs: list[MemberRun]
    width: int
    member_timeout_ms: int | None
    source: str | None = None
    caller: str | None = None
    created_at: float = field(default_factory=time.time)
    _cond: threading.Condition = field(default_factory=threading.Condition, repr=False)
    _cancelled: bool = field(default=False, repr=False)
    #: Counts changes of any member's status or marks (a live view waits on it).
    changes: int = field(default=0, repr=False)
    _listeners: list[Callable[[], None]] = field(default_factory=list, repr=False)

    # -- life --------------------------------------------------------------
    def start(self) -> None:
        """Start the workers; returns at once."""
        work: queue.SimpleQueue[MemberRun] = queue.SimpleQueue()
        for run in self.runs:
            work.put(run)
        for n in range(min(self.width, len(self.runs))):
            threading.Thread(target=self._worker, args=(work,), name=f"fanout-{self.id}-{n}", daemon=True).start()

    def _worker(self, work: queue.SimpleQueue[MemberRun]) -> None:
        while True:
            try:
                run = work.get_nowait()
            except queue.Empty:
                return
            try:
                self._run(run)
            except Exception as e:  # noqa: BLE001 - one member's bug must not lose the others
                log.exception("group %s: member %s failed unexpectedly", self.id, run.member.label)
                self._finish(run, FAILED, error={"code": "ERROR", "message": f"internal error ({type(e).__name__}): {e}"})

    def _run(self, run: MemberRun) -> None:
        m = run.member
        with self._cond:
            if self._cancelled:
                self._finish_locked(run, CANCELLED)
                return
            run.status, run.started_at = STARTING, time.time()
            self._changed()
        if m.target is not None:
            try:
                self.engine.attach(m.session_id, target=m.target)
            except DshError as e:
                code = "TARGET_UNREACHABLE" if e.code in _UNREACHABLE else e.code
                self._finish(run, FAILED, error={"code": code, "message": e.message})
                return
        with self._cond:
            if self._cancelled:
                self._finish_locked(run, CANCELLED)
                return
        try:
            started = self.engine.run_exec(replace(self.request, session_id=m.session_id))
        except DshError as e:
            self._finish(run, FAILED, error={"code": e.code, "message": e.message})
            return
        job_id = started.job_id if isinstance(started, Result) else started.id
        with self._cond:
            run.job_id, run.status = job_id, RUNNING
            late_cancel = self._cancelled
            self._changed()
        if late_cancel:
            self._interrupt_member(run)
        try:
            res = self._until_settled(run, job_id)
            if res.timed_out:
                run.timed_out = True
                self._interrupt_member(run)
                res = self.engine.run_wait(WaitRequest(job_id, timeout_ms=INTERRUPT_GRACE_MS, on_input=False))
        except DshError as e:
            lost = m.target is not None and e.code in _LOST
            self._finish(run, FAILED, error={"code": "TARGET_LOST" if lost else e.code, "message": e.message})
            return
        if not res.done:  # ignored Ctrl-C: its terminal keeps it; snapshots show it live
            self._finish(run, TIMED_OUT)
        elif res.status == SHELL_EXITED and m.target is not None:
            note = res.note or "the remote shell or its connection ended while the job ran"
            self._finish(run, FAILED, result=res, error={"code": "TARGET_LOST", "message": note})
        else:
            self._finish(run, res.status, result=res)

    def _until_settled(self, run: MemberRun, job_id: str) -> Result:
        """Wait for the member's job to settle (or its per-target timeout),
        marking it ``awaiting`` while it waits for typed input, so that a
        group wait can return then (as a job's wait does). The requests are built
        here from an id the engine gave and a deadline: nothing to check again."""
        deadline = Deadline.after_ms(self.member_timeout_ms)
        while True:
            seq = self.engine.output_seq(run.member.session_id)
            res = self.engine.run_wait(WaitRequest(job_id, timeout_ms=deadline.left_ms(), on_input=True))
            if res.done or res.timed_out or res.awaiting_input is None:
                return res
            with self._cond:
                run.awaiting = res.awaiting_input
                self._changed()
            # until something changes there: output, the prompt answered, the job's end
            self.engine.wait_output(run.member.session_id, seq, deadline.left_s())
            with self._cond:
                run.awaiting = None

    def _finish(self, run: MemberRun, status: str, **kw: Any) -> None:
        with self._cond:
            self._finish_locked(run, status, **kw)

    def _finish_locked(
        self, run: MemberRun, status: str, result: Result | None = None, error: dict[str, str] | None = None
    ) -> None:
        run.status, run.result, run.error = status, result, error
        run.ended_at = result.ended_at if result is not None and result.ended_at else time.time()
        self._changed()

    def _changed(self) -> None:
        """Under ``_cond``: a member's status or mark changed."""
        self.changes += 1
        self._cond.notify_all()
        for listener in self._listeners:
            listener()

    def add_listener(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` at each change (under the group's lock: it must only
        set an event or the like)."""
        with self._cond:
            self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[], None]) -> None:
        with self._cond:
            if listener in self._listeners:
                self._listeners.remove(listener)

    # -- handle ------------------------------------------------------------
    @property
    def command(self) -> str:
        return self.request.command

    @property
    def done(self) -> bool:
        with self._cond:
            return all(r.done for r in self.runs)

    def wait(self, *, timeout_ms: int | None = None, on_input: bool = False) -> bool:
        """Block until every member ended (True) or ``timeout_ms`` passed
        (False); with ``on_input``, also return (False) while a member's job
        waits for typed input (:meth:`awaiting`, checked with the engine, as
        a member's mark can lag behind its terminal). Keyword only: the unit is in
        the name (an old ``wait(60)`` meaning seconds fails loudly)."""
        deadline = Deadline.after_ms(timeout_ms)
        checked: set[int] = set()  # marks found stale; looked at again after a change
        while True:
            with self._cond:
                if all(r.done for r in self.runs):
                    return True
                marked = [r for r in self.runs if on_input and r.awaiting is not None and not r.done]
                fresh = [r for r in marked if id(r) not in checked]
                if not fresh:
                    if deadline.passed():
                        return False
                    self._cond.wait(timeout=deadline.left_s())
                    checked.clear()
                    continue
            if any(self._awaits_now(r) for r in fresh):
                return False
            checked.update(id(r) for r in fresh)

    def _awaits_now(self, run: MemberRun) -> bool:
        if run.job_id is None:
            return False
        try:
            return self.engine.result(run.job_id, tail_lines=0).awaiting_input is not None
        except DshError as e:
            log.info("group %s: no snapshot of %s: %s", self.id, run.member.label, e)
            return False

    def awaiting(self) -> list[MemberRun]:
        """The members whose job waits for typed input now."""
        with self._cond:
            return [r for r in self.runs if r.awaiting is not None and not r.done]

    def interrupt(self, source: str | None = None, caller: str | None = None) -> list[str]:
        """Ctrl-C to every running member; members not started yet are
        cancelled. Returns the labels of the members signalled."""
        with self._cond:
            self._cancelled = True
            running = [r for r in self.runs if r.status == RUNNING]
        hit = []
        for run in running:
            if self._interrupt_member(run, source, caller):
                hit.append(run.member.label)
        return hit

    def _interrupt_member(self, run: MemberRun, source: str | None = None, caller: str | None = None) -> bool:
        try:
            return self.engine.interrupt(run.member.session_id, source=source or self.source, caller=caller or self.caller) is not None
        except DshError as e:
            log.info("group %s: Ctrl-C to %s: %s", self.id, run.member.label, e)
            return False

    def snapshot(self, run: MemberRun, tail_lines: int | None = None) -> Result | None:
        """The member's result: settled, or the running job's output so far."""
        if run.result is not None or run.job_id is None:
            return run.result
        try:
            return self.engine.result(run.job_id, tail_lines=tail_lines)
        except DshError as e:
            log.info("group %s: no snapshot of %s: %s", self.id, run.member.label, e)
            return None


class GroupTable:
    """The groups of one engine, by id (``g1``, ``g2``...); old finished ones are forgotten."""

    KEEP = 64

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._lock = threading.Lock()
        self._groups: dict[str, GroupJob] = {}
        self._next = 1

    def start(
        self,
        members: list[Member],
        command: str,
        *,
        width: int = DEFAULT_FANOUT,
        member_timeout_ms: int | None = None,
        source: str | None = None,
        caller: str | None = None,
    ) -> GroupJob:
        """Start ``command`` on every member; the group at once. Bad input
        (width, timeout, more new terminals than the engine allows) is refused
        before anything starts."""
        if isinstance(width, bool) or not isinstance(width, int) or not 1 <= width <= MAX_FANOUT:
            raise InvalidArgument(f"fanout: must be an integer from 1 to {MAX_FANOUT}", field="fanout")
        if member_timeout_ms is not None and (
            isinstance(member_timeout_ms, bool) or not isinstance(member_timeout_ms, int) or member_timeout_ms <= 0
        ):
            raise InvalidArgument("target_timeout: must be a positive duration", field="target_timeout")
        if not members:
            raise InvalidArgument("targets: the target list is empty", field="targets")
        try:  # the one check of the command for every member (their session ids are checked targets)
            request = ExecRequest.build(session_id=members[0].session_id, command=command, source=source, caller=caller)
        except InvalidArgument as e:
            name = e.details.get("field") or "command"
            raise InvalidArgument(f"{name}: {e.message}", field=name) from None
        sids = [m.session_id for m in members]
        if len(set(sids)) != len(sids):
            dup = next(s for s in sids if sids.count(s) > 1)
            raise InvalidArgument(f"targets: two members use session {dup!r}", field="targets")
        new = [s for s in sids if not self.engine.exists(s)]
        limit = self.engine.config.max_sessions
        open_now = len(self.engine.list())
        if open_now + len(new) > limit:
            raise TooManySessions(
                f"the group needs {len(new)} new terminals and {open_now} are open (max_sessions={limit}); "
                "raise max_sessions (DSH_MAGICS_MAX_SESSIONS) or use fewer targets",
                max_sessions=limit,
            )
        with self._lock:
            gid = f"g{self._next}"
            self._next += 1
            group = GroupJob(gid, request, self.engine, [MemberRun(m) for m in members], width, member_timeout_ms, source, caller)
            self._groups[gid] = group
            self._prune()
        group.start()
        return group

    def get(self, group_id: str) -> GroupJob | None:
        with self._lock:
            return self._groups.get(group_id)

    def all(self) -> list[GroupJob]:
        with self._lock:
            return list(self._groups.values())

    def _prune(self) -> None:
        finished = [g for g in self._groups.values() if g.done]
        for g in finished[: max(0, len(self._groups) - self.KEEP)]:
            del self._groups[g.id]
