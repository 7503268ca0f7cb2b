"""The terminal panel's state without any widget: what is shown and what the buttons do.

A :class:`PanelModel` shared per engine, a :class:`PanelState` per panel (docs/magics.md).
"""

from __future__ import annotations

import builtins
import dataclasses
import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from .. import shutdown
from ..errors import DshError, InvalidArgument, NoSuchSession
from ..notebook.render import short_path
from ..terminal import TerminalInfo
from ..terminal.api import Engine
from ..terminal.result import BUSY, COMPLETED, INTERRUPTED, RUNNING

log = logging.getLogger(__name__)

DEFAULT_TAIL = 200
DEFAULT_JOBS = 10


# ---------------------------------------------------------------------------
# values


@dataclass(frozen=True)
class JobRow:
    """A job as the panel lists it: enough to see it start and settle."""

    job_id: str
    session_id: str
    command: str
    status: str
    exit_code: int | None
    started_at: float
    ended_at: float | None
    inputs: tuple[tuple[str, str], ...] = ()
    """Who typed what into the job: (source, text or key), secret text redacted."""

    @property
    def running(self) -> bool:
        return self.status == RUNNING

    def age(self, now: float) -> float:
        end = self.ended_at if self.ended_at is not None else now
        return max(0.0, end - self.started_at)

    @property
    def outcome(self) -> str:
        """``running``, ``ok``, ``exit N``, ``interrupted`` or ``shell exited``."""
        if self.status == RUNNING:
            return "running"
        if self.status == COMPLETED:
            return "ok" if self.exit_code == 0 else f"exit {self.exit_code}"
        if self.status == INTERRUPTED:
            return "interrupted"
        return "shell exited"

    @classmethod
    def from_job(cls, job: Any) -> JobRow:
        result = job.result
        return cls(
            job_id=job.id,
            session_id=job.owner,
            command=job.label,
            status=job.status,
            exit_code=getattr(result, "exit_code", None) if job.done else None,
            started_at=getattr(result, "started_at", None) or job.created_at,
            ended_at=(getattr(result, "ended_at", None) or job.settled_at) if job.done else None,
            inputs=input_rows(getattr(result, "inputs", None) or ()) if job.done else (),
        )


def input_rows(records: Any) -> tuple[tuple[str, str], ...]:
    """A job's input record as the panel lists it: (source, what was typed)."""
    out = []
    for r in records:
        what = f"[{r.get('key')}]" if r.get("key") else str(r.get("text", ""))
        out.append((str(r.get("source", "?")), what))
    return tuple(out)


@dataclass(frozen=True)
class Snapshot:
    """Every terminal of the registry and its most recent jobs, at one moment."""

    version: int
    taken_at: float
    terminals: tuple[TerminalInfo, ...] = ()
    jobs: tuple[JobRow, ...] = ()
    closed: frozenset[str] = frozenset()
    """Sessions explicitly closed (not merely between shells during a recreate)."""

    @property
    def busy(self) -> bool:
        return any(t.status == BUSY for t in self.terminals)

    def find(self, session_id: str | None) -> TerminalInfo | None:
        for t in self.terminals:
            if t.session_id == session_id:
                return t
        return None

    def job(self, job_id: str | None) -> JobRow | None:
        for j in self.jobs:
            if j.job_id == job_id:
                return j
        return None

    @property
    def session_ids(self) -> list[str]:
        return [t.session_id for t in self.terminals]


@dataclass(frozen=True)
class Notice:
    """The inline line under the controls: the outcome of the last action."""

    kind: str  # "ok", "info" or "error"
    text: str
    code: str | None = None

    @classmethod
    def error(cls, exc: DshError) -> Notice:
        return cls("error", exc.message, exc.code)

    @property
    def line(self) -> str:
        return f"{self.code}: {self.text}" if self.code else self.text


@dataclass(frozen=True)
class OutputView:
    """The retained output of one terminal, as the output pane shows it.

    ``total`` lines were ever written, ``dropped`` of them have left the
    terminal's ring, ``retained`` are still there, and the pane shows the last
    ``len(lines)`` of those (plus the unfinished ``partial`` line).
    """

    session_id: str
    open: bool
    lines: tuple[str, ...] = ()
    partial: str = ""
    total: int = 0
    dropped: int = 0
    job: JobRow | None = None
    paused: bool = False
    #: The terminal's screen (the engine's ``screen()`` dict, with styles),
    #: drawn instead of the lines: while a full-screen program is on the
    #: alternate screen, or always when the panel's screen box is ticked.
    screen: dict[str, Any] | None = None

    @property
    def retained(self) -> int:
        return self.total - self.dropped

    @property
    def hidden(self) -> int:
        """Retained lines the pane leaves out (it shows only the tail)."""
        return max(0, self.retained - len(self.lines))

    @property
    def text(self) -> str:
        body = "\n".join(self.lines)
        if self.partial:
            body = body + ("\n" if self.lines else "") + self.partial
        return body


@dataclass(frozen=True)
class PanelView:
    """Everything one panel draws, computed from a snapshot and the panel's state."""

    snapshot: Snapshot
    now: float
    selected: str
    default_session: str
    output: OutputView
    notice: Notice | None = None
    confirm_close_all: bool = False
    tail: int = DEFAULT_TAIL

    @property
    def terminals(self) -> tuple[TerminalInfo, ...]:
        return self.snapshot.terminals

    @property
    def jobs(self) -> tuple[JobRow, ...]:
        return self.snapshot.jobs

    @property
    def selected_info(self) -> TerminalInfo | None:
        return self.snapshot.find(self.selected)

    def session_options(self) -> list[tuple[str, str]]:
        """(label, session id) for the session picker: open terminals, plus the
        notebook's default terminal even before it has been started."""
        opts: list[tuple[str, str]] = []
        ids = self.snapshot.session_ids
        for sid in ids:
            mark = " (this notebook)" if sid == self.default_session else ""
            opts.append((sid + mark, sid))
        if self.default_session not in ids:
            opts.insert(
                0, (f"{self.default_session} (this notebook, not started)", self.default_session)
            )
        if self.selected not in ids and self.selected != self.default_session:
            opts.append((f"{self.selected} (not started)", self.selected))
        return opts


# ---------------------------------------------------------------------------
# the shared model

Listener = Callable[[Snapshot], None]


class PanelModel:
    """The facts every panel over one registry shares, refreshed by events."""

    def __init__(
        self,
        registry: Engine,
        *,
        coalesce: float = 0.05,
        tick: float = 1.0,
        max_jobs: int = DEFAULT_JOBS,
    ) -> None:
        self._registry_ref = weakref.ref(registry)
        self.coalesce = coalesce
        self.tick = tick
        self.max_jobs = max_jobs
        self._lock = threading.RLock()
        self._views: builtins.list[Listener] = []
        self._snapshot = Snapshot(version=0, taken_at=time.time())
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._closed: set[str] = set()
        self._closing: dict[str, int] = {}  # sessions a panel is closing right now
        self._jobs_dirty = True
        self.refresh_count = 0
        self.event_count = 0
        self.waits_without_timeout = 0
        self.tick_refreshes = 0  # refreshes no event asked for (the busy-only ticker)

    @property
    def registry(self) -> Engine:
        reg = self._registry_ref()
        if reg is None:  # pragma: no cover - panels hold the registry alive
            raise RuntimeError("the panel's registry is gone")
        return reg

    @property
    def snapshot(self) -> Snapshot:
        return self._snapshot

    @property
    def running(self) -> bool:
        """True while the refresher thread and the event subscription are live."""
        return self._thread is not None

    # -- views ---------------------------------------------------------------
    def add_view(self, listener: Listener) -> Callable[[], None]:
        """Deliver every new snapshot to ``listener``; returns the detach function.

        The first view starts the subscription and the refresher; the last one
        to leave stops them, so a kernel without panels pays nothing.
        """
        with self._lock:
            self._views.append(listener)
            if self._thread is None:
                self._start()
        self.refresh()

        def detach() -> None:
            with self._lock:
                if listener in self._views:
                    self._views.remove(listener)
                if not self._views:
                    self._stop_thread()

        return detach

    # -- refreshing ----------------------------------------------------------
    def refresh(self, jobs: bool = True) -> Snapshot:
        """Take a new snapshot now and push it to every view (returns it).

        ``jobs=False`` keeps the previous job rows: output and the ticker do
        not change them, and under the terminal host listing jobs is a round
        trip over its socket.
        """
        with self._lock:
            reg = self.registry
            # Close marks noted while list() is in flight may postdate it: only
            # a listing taken after the mark proves the session reopened (pinned by
            # tests/widgets/test_panel_state.py::test_a_close_mark_is_kept_when_the_listing_predates_it).
            marked_before = set(self._closed)
            terminals = tuple(reg.list())
            if jobs:
                self._jobs_dirty = False
                recent = reg.jobs.all()[-self.max_jobs :]
                rows = tuple(self._row(reg, j) for j in reversed(recent))
            else:
                rows = self._snapshot.jobs
            self._closed -= marked_before & {t.session_id for t in terminals}
            closed = frozenset(self._closed | self._closing.keys())
            snap = Snapshot(self._snapshot.version + 1, time.time(), terminals, rows, closed)
            self._snapshot = snap
            self.refresh_count += 1
            for view in list(self._views):
                try:
                    view(snap)
                except Exception:  # noqa: BLE001 - one broken view must not stop the others
                    log.exception("panel view failed to refresh")
            return snap

    @staticmethod
    def _row(reg: Engine, job: Any) -> JobRow:
        row = JobRow.from_job(job)
        if job.done:
            return row
        try:  # a running job's inputs so far (one per terminal at most)
            inputs = input_rows(reg.result(job.id, tail_lines=0).inputs)
        except DshError:
            return row
        return dataclasses.replace(row, inputs=inputs)

    @contextmanager
    def closing(self, session_ids: builtins.list[str]) -> Iterator[None]:
        """Mark ``session_ids`` as closed for as long as a panel is closing them.

        The engine drops a terminal from its listing before its ``closed``
        event arrives (under the terminal host, events come over another
        socket, later still). A snapshot taken in between would show a
        selected terminal as merely "not started"; with this mark every panel
        sees it closed and falls back at once.
        """
        with self._lock:
            for sid in session_ids:
                self._closing[sid] = self._closing.get(sid, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                for sid in session_ids:
                    n = self._closing.pop(sid, 1) - 1
                    if n > 0:
                        self._closing[sid] = n

    def wait_timeout(self) -> float | None:
        """How long the refresher may sleep: forever when no terminal is busy."""
        return self.tick if self._snapshot.busy else None

    def _on_event(self, event: dict[str, Any]) -> None:
        # Runs on engine threads (sometimes under the registry's lock): only
        # note what changed, never call back into the registry from here.
        self.event_count += 1
        kind = event.get("type")
        if kind != "output":
            self._jobs_dirty = True
        if kind == "terminal" and event.get("status") == "closed":
            self._closed.add(str(event.get("session_id")))
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            timeout = self.wait_timeout()
            if timeout is None:
                self.waits_without_timeout += 1
            woke = self._wake.wait(timeout)
            if self._stop.is_set():
                break
            if not woke:
                self.tick_refreshes += 1
            if woke:
                # Let a burst of output events gather into one refresh.
                self._stop.wait(self.coalesce)
                if self._stop.is_set():
                    break
            self._wake.clear()
            try:
                self.refresh(jobs=self._jobs_dirty)
            except Exception:  # noqa: BLE001 - keep the refresher alive
                log.exception("panel refresh failed")

    def _start(self) -> None:
        self._stop.clear()
        self._unsubscribe = self.registry.subscribe(self._on_event)
        self._thread = threading.Thread(target=self._run, name="dsh-panel-refresher", daemon=True)
        self._thread.start()

    def _stop_thread(self) -> None:
        thread, self._thread = self._thread, None
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self._stop.set()
        self._wake.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=2.0)


_models: weakref.WeakKeyDictionary[Engine, PanelModel] = weakref.WeakKeyDictionary()
_models_lock = threading.Lock()


def _register_exit() -> None:
    """Stop the panels at exit, registered with the first model rather than
    at import (caller holds ``_models_lock``)."""
    global _exit_registered
    if not _exit_registered:
        shutdown.register(shutdown.VIEWS, _stop_models)
        _exit_registered = True


def _stop_models() -> None:
    """At exit, panels stop refreshing before the terminals go (VIEWS step)."""
    with _models_lock:
        models = list(_models.values())
    for model in models:
        model._stop_thread()


_exit_registered = False


def shared_model(registry: Engine, **options: Any) -> PanelModel:
    """The one model for ``registry`` (created on first use).

    Every panel over the same registry gets the same model, which is what keeps
    two panels (or two views of one kernel) telling the same story.
    ``options`` apply only when the model is created.
    """
    with _models_lock:
        model = _models.get(registry)
        if model is None:
            model = PanelModel(registry, **options)
            _models[registry] = model
            _register_exit()
        return model


# ---------------------------------------------------------------------------
# one panel


@dataclass
class _Selection:
    session: str
    follow: bool = True
    frozen: OutputView | None = None


@dataclass
class PanelState:
    """One panel: a selection, a notice, and the actions.

    ``default_session`` is this notebook's terminal; it is selected at first
    and is where the selection falls back when the selected terminal closes.
    """

    model: PanelModel
    default_session: str
    selected: str | None = None
    tail: int = DEFAULT_TAIL
    notice: Notice | None = None
    confirm_close_all: bool = False
    #: Always show the selected terminal's screen (else only while its
    #: program is on the alternate screen).
    screen: bool = False
    _sel: _Selection = field(init=False)
    _seen_version: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        if isinstance(self.tail, bool) or not isinstance(self.tail, int) or self.tail < 1:
            raise InvalidArgument("lines must be a positive integer")
        self._sel = _Selection(self.selected or self.default_session)
        self.selected = self._sel.session

    @property
    def registry(self) -> Engine:
        return self.model.registry

    @property
    def follow(self) -> bool:
        return self._sel.follow

    # -- snapshots -------------------------------------------------------------
    def accept(self, snap: Snapshot) -> bool:
        """Take a snapshot from the model; False if it is older than one seen.

        If the selected terminal has gone (closed here, by another panel, or
        by a magic), fall back to this notebook's terminal and say so.
        """
        if snap.version < self._seen_version:
            return False
        self._seen_version = snap.version
        sel = self._sel.session
        # Only an explicit close moves the selection: a terminal between two
        # shells (recreate) or not started yet stays selected (pinned by
        # tests/widgets/test_panel_state.py::test_selection_falls_back_when_the_terminal_is_closed_elsewhere).
        if sel != self.default_session and sel in snap.closed and snap.find(sel) is None:
            self._select(self.default_session)
            self.notice = Notice(
                "info", f"terminal {sel!r} was closed; showing {self.default_session!r}"
            )
        return True

    # -- selection -------------------------------------------------------------
    def select(self, session_id: str) -> None:
        from ..terminal import validate_session_id

        validate_session_id(session_id)
        self._select(session_id)

    def _select(self, session_id: str) -> None:
        if session_id != self._sel.session:
            self._sel = _Selection(session_id, follow=self._sel.follow)
        self.selected = session_id
        self.confirm_close_all = False

    def set_follow(self, follow: bool) -> None:
        """Follow live output (auto-scrolling), or hold the pane still to read it."""
        self._sel.follow = bool(follow)
        self._sel.frozen = None if follow else self._read_output(paused=True)

    def set_screen(self, on: bool) -> None:
        """Show the terminal's screen always (True), or only while a
        full-screen program is on the alternate screen (False)."""
        self.screen = bool(on)
        if not self._sel.follow:
            self._sel.frozen = self._read_output(paused=True)

    # -- actions ------------------------------------------------------------------
    def _act(self, action: Callable[[], Notice]) -> Notice:
        self.confirm_close_all = False
        try:
            notice = action()
        except DshError as exc:
            notice = Notice.error(exc)
        self.model.refresh()
        self.notice = notice
        return notice

    def send(self, command: str) -> Notice:
        """Start ``command`` as a job in the selected terminal (starting it if needed)."""

        def run() -> Notice:
            if not isinstance(command, str) or not command.strip():
                raise InvalidArgument("type a command to send")
            job = self.registry.exec(self._sel.session, command, source="panel")
            job_id = getattr(job, "id", None) or getattr(job, "job_id", "")
            self._sel.follow = True
            self._sel.frozen = None
            return Notice("ok", f"started job {job_id} in {self._sel.session!r}")

        return self._act(run)

    def answer(self, text: str, secret: bool = False) -> Notice:
        """Type ``text`` (and Enter) into the selected terminal's running job:
        a person's answer to its prompt. ``secret`` (the password box) keeps
        the text out of the job's input record and out of the notice."""

        def run() -> Notice:
            if not isinstance(text, str):
                raise InvalidArgument("type an answer")
            res = self.registry.send(self._sel.session, text, wait_ms=0, source="panel", secret=secret)
            self._sel.follow = True
            self._sel.frozen = None
            what = "hidden input" if secret else repr(text)
            return Notice("ok", f"typed {what} into job {res.job_id}")

        return self._act(run)

    def press(self, key: str) -> Notice:
        """Press a named key (``ctrl-d``, ``tab``, ...) in the running job's terminal."""

        def run() -> Notice:
            res = self.registry.send(self._sel.session, key=key, wait_ms=0, source="person")
            return Notice("ok", f"pressed {key} in job {res.job_id}")

        return self._act(run)

    def interrupt(self) -> Notice:
        """Ctrl-C for the selected terminal's running job."""

        def run() -> Notice:
            job = self.registry.interrupt(self._sel.session, source="panel")
            if job is None:
                return Notice("info", f"{self._sel.session!r} is idle: nothing to interrupt")
            return Notice("ok", f"sent Ctrl-C to job {job.id}")

        return self._act(run)

    def attach(self, session_id: str, cwd: str | None = None) -> Notice:
        """Open (or ``cd``) the terminal ``session_id`` and select it."""

        def run() -> Notice:
            sid = (session_id or "").strip() if isinstance(session_id, str) else session_id
            if not sid:
                raise InvalidArgument("type a session id to attach")
            where = (cwd or "").strip() or None
            info = self.registry.attach(sid, cwd=where)
            self._select(sid)
            return Notice("ok", f"attached {sid!r} in {short_path(info.cwd)}")

        return self._act(run)

    def recreate(self) -> Notice:
        """Replace the selected terminal's shell (its running job ends)."""

        def run() -> Notice:
            sid = self._sel.session
            if not self.registry.exists(sid):
                raise NoSuchSession(
                    f"no terminal for session {sid!r}; send a command or attach first"
                )
            info = self.registry.attach(sid, recreate=True)
            return Notice("ok", f"recreated {sid!r} (new shell, pid {info.pid})")

        return self._act(run)

    def close(self) -> Notice:
        """Close the selected terminal; the selection returns to this notebook's."""

        def run() -> Notice:
            sid = self._sel.session
            # Move off the terminal before it goes, so no snapshot taken while
            # it closes shows it selected (restored if the close fails). Pinned by
            # tests/widgets/test_panel_state.py::test_a_snapshot_taken_while_closing_never_shows_the_terminal_as_not_started.
            with self.model.closing([sid]):
                self._select(self.default_session)
                try:
                    self.registry.close(sid)
                except BaseException:
                    self._select(sid)
                    raise
            return Notice("ok", f"closed {sid!r}")

        return self._act(run)

    def close_all(self, confirm: bool = False) -> Notice:
        """Close every terminal of the kernel. Without ``confirm`` this only
        arms the action (the button asks again), because it also closes the
        terminals that magics and other notebooks' views are using."""
        if not confirm:
            n = len(self.model.snapshot.terminals)
            self.confirm_close_all = n > 0
            self.notice = Notice(
                "info",
                f"press again to close all {n} terminal(s)" if n else "no terminals are open",
            )
            return self.notice

        def run() -> Notice:
            sids = [t.session_id for t in self.model.snapshot.terminals]
            with self.model.closing(sids):
                self._select(self.default_session)
                n = self.registry.close_all()
            return Notice("ok", f"closed {n} terminal(s)")

        return self._act(run)

    # -- the view -------------------------------------------------------------------
    def view(self, now: float | None = None) -> PanelView:
        snap = self.model.snapshot
        if self._sel.follow or self._sel.frozen is None:
            output = self._read_output()
        else:
            output = self._sel.frozen
        return PanelView(
            snapshot=snap,
            now=time.time() if now is None else now,
            selected=self._sel.session,
            default_session=self.default_session,
            output=output,
            notice=self.notice,
            confirm_close_all=self.confirm_close_all,
            tail=self.tail,
        )

    def _read_output(self, paused: bool = False) -> OutputView:
        sid = self._sel.session
        snap = self.model.snapshot
        try:
            rr = self.registry.read(sid, since=0, last=self.tail)
        except NoSuchSession:
            return OutputView(session_id=sid, open=False, paused=paused)
        job = snap.job(rr.job_id) if rr.job_id else None
        if rr.job_id and job is None:
            info = snap.find(sid)
            job = JobRow(
                rr.job_id,
                sid,
                "",
                RUNNING,
                None,
                (info and info.job_started_at) or time.time(),
                None,
            )
        return OutputView(
            session_id=sid,
            open=True,
            lines=tuple(rr.lines),
            partial=rr.partial,
            total=rr.next_line,
            dropped=rr.dropped,
            job=job,
            paused=paused,
            screen=self._read_screen(sid, busy=rr.job_id is not None),
        )

    def _read_screen(self, sid: str, busy: bool) -> dict[str, Any] | None:
        """The screen to draw, or None for the lines. Unticked, a busy
        terminal's screen is probed (rows only) and fetched with styles only
        when its program is on the alternate screen; an idle one costs nothing."""
        if not self.screen and not busy:
            return None
        try:
            if not self.screen and not self.registry.screen(sid, styles=False).get("alt_screen"):
                return None
            scr = self.registry.screen(sid, styles=True)
        except DshError:
            return None
        return scr if self.screen or scr.get("alt_screen") else None
