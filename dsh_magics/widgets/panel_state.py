"""One terminal panel without any widget: its selection, its notice and what its buttons do.

Panels over one engine share a :class:`~.panel_model.PanelModel` (docs/magics.md);
what they draw is a :class:`~.panel_view.PanelView`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import DshError, InvalidArgument, NoSuchSession
from ..notebook.render import short_path
from ..terminal.api import Engine
from ..terminal.result import RUNNING
from .panel_model import PanelModel
from .panel_view import DEFAULT_TAIL, JobRow, Notice, OutputView, PanelView, Snapshot


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
            # Closed since the read, or no screen to give: the pane shows the lines.
            return None
        return scr if self.screen or scr.get("alt_screen") else None
