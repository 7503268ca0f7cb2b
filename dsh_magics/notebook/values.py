"""The values magics return and how they show themselves: :class:`JobHandle`,
:class:`StreamedResult`, :class:`TerminalTable`, :class:`ScreenView`.

Live views that keep a job's output area up to date are :mod:`.following`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any

from .. import jobs
from ..errors import DshError
from ..terminal import Result, TerminalInfo
from ..terminal.api import Engine
from .render import (
    LITERAL,
    TAIL_LINES,
    code,
    result_header,
    result_html,
    result_text,
    shown_lines,
    tail_lines,
    terminals_html,
    terminals_text,
)
from .screen_html import screen_html, screen_text, styled_lines
from .styles_html import output_styles

# A display's "once" behaviour, consumed by the next IPython display of it.
SKIP = "skip"  # the live view already shows this value: show nothing
SUMMARY = "summary"  # the output was streamed to stdout: show only the header


class DisplayOnce:
    """Mixin: suppress (or shorten) the *next* IPython display of this value.

    A magic that already rendered its value in a live view still has to
    *return* the value (``r = %bash_wait``), and IPython would then display it
    a second time as the cell's result. IPython consults ``_ipython_display_``
    before any repr; as a property it exists only while a "once" is pending,
    so every later display (``r`` in another cell) uses the normal reprs.
    """

    _dsh_once: str | None = None

    def _set_display_once(self, mode: str | None) -> None:
        self.__dict__["_dsh_once"] = mode

    def _clear_display_once(self) -> None:
        self.__dict__.pop("_dsh_once", None)

    def _once_action(self) -> Callable[[], None] | None:
        mode = self.__dict__.get("_dsh_once")
        if mode is None:
            return None

        def once() -> None:
            self._clear_display_once()
            if mode == SUMMARY:
                print(self._summary_line())

        return once

    def _live_or_once(self, live: Callable[[Any], object] | None, done: bool) -> Callable[[], None] | None:
        """A handle's ``_ipython_display_``: the pending "once" if any, else
        its live view (``live(self)``) while its work runs."""
        once = self._once_action()
        if once is not None:
            return once
        if live is None or done:
            return None

        def show() -> None:
            live(self)

        return show

    def _summary_line(self) -> str:  # pragma: no cover - overridden
        return ""


def set_once(value: DisplayOnce, mode: str | None) -> None:
    """The next IPython display of ``value`` is skipped (:data:`SKIP`) or
    shortened (:data:`SUMMARY`); the methods stay private, off the values a
    user tab-completes."""
    value._set_display_once(mode)


def clear_once(value: DisplayOnce) -> None:
    """Drop a pending :func:`set_once` (later displays show ``value`` fully)."""
    value._clear_display_once()


class StreamedResult(DisplayOnce, Result):
    """A :class:`Result` whose output was already shown while it streamed.

    It is a Result in every other way (``isinstance`` holds, ``to_dict`` is the
    same); only its first display as the cell's value is suppressed (notebook:
    the live area already shows the final state) or shortened to the header
    line (plain IPython: the output itself went to stdout).
    """

    @classmethod
    def from_result(cls, r: Result, once: str | None) -> StreamedResult:
        out = cls(**{f.name: getattr(r, f.name) for f in fields(Result)})
        out._set_display_once(once)
        return out

    @property
    def _ipython_display_(self) -> Callable[[], None] | None:  # type: ignore[override]
        return self._once_action()

    def _summary_line(self) -> str:
        return result_header(self)


class JobHandle(DisplayOnce):
    """What ``j = %bash_exec cmd`` gives you: a live reference to one job.

    ``str(j)`` is the job id, so ``%bash_wait $j`` works. In a notebook,
    displaying the handle opens a live view that follows the job to its end.
    """

    def __init__(
        self,
        job: jobs.Job,
        registry: Engine,
        live: Callable[[JobHandle], object] | None = None,
        on_wait: Callable[[jobs.Job], None] | None = None,
    ) -> None:
        self._job = job
        self._registry = registry
        self._live = live
        self._on_wait = on_wait

    # -- identity and state -------------------------------------------------
    @property
    def id(self) -> str:
        return self._job.id

    job_id = id

    @property
    def session_id(self) -> str:
        return self._job.owner

    @property
    def job(self) -> jobs.Job:
        return self._job

    @property
    def status(self) -> str:
        return self._job.status

    @property
    def done(self) -> bool:
        return self._job.done

    @property
    def result(self) -> Result | None:
        """The final Result once the job has settled, else None."""
        return self._job.result if self._job.done else None

    def snapshot(self) -> Result:
        """The result so far (``timed_out=True`` while the job runs)."""
        return snapshot(self._registry, self._job)

    @property
    def output(self) -> str:
        return self.snapshot().output

    @property
    def lines(self) -> list[str]:
        return self.snapshot().lines

    @property
    def command(self) -> str:
        return self.snapshot().command

    # -- actions ------------------------------------------------------------
    def wait(self, timeout: float | None = None) -> Result:
        """Block until the job settles, or ``timeout`` seconds; the Result."""
        res = self._registry.wait(self._job.id, timeout=timeout)
        if self._on_wait is not None and self._job.done:
            self._on_wait(self._job)
        return res

    def interrupt(self) -> None:
        """Send Ctrl-C to the job (if it is still the session's running job)."""
        if not self._job.done:
            self._registry.interrupt(self._job.owner)

    def to_dict(self) -> dict[str, Any]:
        r = self.snapshot()
        return {
            "job_id": self.id,
            "session_id": self.session_id,
            "status": self.status,
            "done": self.done,
            "result": r.to_dict(),
        }

    # -- reprs --------------------------------------------------------------
    def __str__(self) -> str:
        return self._job.id

    def __repr__(self) -> str:
        return result_text(snapshot(self._registry, self._job, tail=TAIL_LINES))

    def _repr_html_(self) -> str:
        return result_html(snapshot(self._registry, self._job, tail=TAIL_LINES))

    @property
    def _ipython_display_(self) -> Callable[[], None] | None:
        return self._live_or_once(self._live, self._job.done)

    def _summary_line(self) -> str:
        return result_header(snapshot(self._registry, self._job, tail=0))


class TerminalTable(list):  # type: ignore[type-arg]
    """``%bash_list``: the open terminals, marking this notebook's default."""

    def __init__(
        self, infos: list[TerminalInfo], default_session: str, default_note: str = "",
        groups: list[str] | None = None,
    ) -> None:
        super().__init__(infos)
        self.default_session = default_session
        self.default_note = default_note
        #: One line per group command of this kernel (``%bash_list GROUP_ID`` shows its members).
        self.groups = list(groups or ())

    def __repr__(self) -> str:
        more = "".join(f"\n{g}" for g in self.groups)
        return terminals_text(self, self.default_session, self.default_note) + more

    def _repr_html_(self) -> str:
        table = terminals_html(self, self.default_session, self.default_note)
        if not self.groups:
            return table
        rows = "".join(f"<div>{code(g)}</div>" for g in self.groups)
        return f'<div class="{LITERAL}">{table}{rows}</div>'

    def to_dict(self) -> dict[str, Any]:
        return {
            "default_session": self.default_session,
            "terminals": [i.to_dict() for i in self],
            "groups": self.groups,
        }


class ScreenView:
    """``%bash_screen``: one terminal's screen at one moment, as the engine's
    ``screen()`` gave it (``.screen`` is that dict). Shows as literal HTML
    (:func:`~dsh_magics.notebook.screen_html.screen_html`) or as its rows in text."""

    def __init__(self, session_id: str, screen: dict[str, Any]) -> None:
        self.session_id = session_id
        self.screen = screen

    @property
    def lines(self) -> list[str]:
        return list(self.screen["lines"])

    @property
    def alt_screen(self) -> bool:
        return bool(self.screen.get("alt_screen"))

    @property
    def cursor(self) -> tuple[int, int]:
        """(row, column), both from 0."""
        return int(self.screen["cursor_row"]), int(self.screen["cursor_col"])

    @property
    def title(self) -> str:
        return str(self.screen.get("title") or "")

    def to_dict(self) -> dict[str, Any]:
        return {"session_id": self.session_id, **self.screen}

    def __repr__(self) -> str:
        return screen_text(self.screen, caption=f"session {self.session_id}")

    def _repr_html_(self) -> str:
        return screen_html(self.screen, caption=f"session {self.session_id}")


def screen_of(registry: Engine, session_id: str, *, styles: bool = True) -> ScreenView:
    """The session's screen now, from the engine (errors are the engine's)."""
    return ScreenView(session_id, registry.screen(session_id, styles=styles))


def output_colours(
    registry: Engine, r: Result, tail: int = TAIL_LINES, screen: dict[str, Any] | None = None
) -> dict[int, str]:
    """Colours for a result's shown lines, from the terminal's screen while it
    still shows them (the engine keeps a job's lines without ANSI; its screen
    keeps styles): only for the session's latest job, not a full-screen one.
    ``screen``: a styled screen already fetched. Never raises. A result with
    its own ``styles`` (the engine keeps them for the whole output) needs no screen."""
    if r.styles is not None:
        return output_styles(r.styles, *shown_lines(r.output, tail))
    if r.screen is not None:
        return {}
    shown = tail_lines(r.output, tail)
    if not any(line.rstrip() for line in shown):
        return {}  # nothing to colour: spare the screen's round trip (a quiet `true`)
    try:
        if screen is None:
            latest = registry.latest_job(r.session_id)
            if latest is None or latest.id != r.job_id:
                return {}
            screen = registry.screen(r.session_id, styles=True)
        return styled_lines(screen, shown)
    except Exception:  # noqa: BLE001 - colour is a nicety; the plain text is always shown
        return {}


def snapshot(registry: Engine, job: jobs.Job, tail: int | None = None) -> Result:
    """The job's Result so far (only its last ``tail`` lines if given: a view
    pulls what it draws, not the whole retained output, through the host);
    falls back to its final result if the terminal is already gone (a closed
    session settles its job first)."""
    if job.done and isinstance(job.result, Result):
        return job.result
    try:
        return registry.result(job.id, tail_lines=tail)
    except DshError:
        if isinstance(job.result, Result):
            return job.result
        raise
