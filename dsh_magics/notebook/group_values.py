"""The values the group magics return: :class:`GroupHandle` (``g = %bash_exec --on ...``),
:class:`GroupView` (a group's table and merged output at one moment) and
:class:`GroupFailed` (the one line that stops *Run All* after a group that ended badly).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import fanout
from ..fanout import GroupJob, GroupReport, Row
from .group_render import final_text, group_html, live_text
from .magic_args import to_ms
from .values import DisplayOnce


def started_at(group: GroupJob) -> dict[str, float | None]:
    """When each member started (its label -> time), for the elapsed column."""
    return {run.member.label: run.started_at for run in group.runs}


class GroupView(DisplayOnce):
    """A group at one moment: ``.rows`` (target, status, exit code, duration, last line, code),
    ``.blocks`` (identical outputs folded), ``.text()``, ``.table()``, ``.to_dict()``.
    ``.reason`` says why a wait returned: ``settled``, ``timeout``, ``awaiting_input``,
    ``interrupted`` (or None for a plain read)."""

    def __init__(self, group: GroupJob, rep: GroupReport, reason: str | None = None, diff: bool = False,
                 note: str | None = None) -> None:
        self.group = group
        self.report = rep
        self.reason = reason
        self.diff = diff
        self.note = note

    @property
    def id(self) -> str:
        return self.report.group_id

    @property
    def rows(self) -> list[Row]:
        return self.report.rows

    @property
    def blocks(self) -> list[fanout.Block]:
        return self.report.blocks

    @property
    def done(self) -> bool:
        return self.report.done

    @property
    def timed_out(self) -> bool:
        return self.reason == "timeout"

    @property
    def ok(self) -> bool:
        """Every member completed with exit code 0."""
        return self.done and all(r.status == "completed" and r.exit_code == 0 for r in self.rows)

    @property
    def failed(self) -> list[Row]:
        """The members that ended badly (a code, a non-zero exit, interrupted, ...)."""
        return [r for r in self.rows if not (r.status == "completed" and r.exit_code == 0)
                and r.status not in ("queued", "starting", "running")]

    def counts(self) -> dict[str, int]:
        return self.report.counts()

    def text(self, diff: bool | None = None) -> str:
        """The summary and the merged output (the diff view with ``diff=True``)."""
        return self.report.text(self.diff if diff is None else diff)

    def table(self) -> str:
        return self.report.table()

    def to_dict(self) -> dict[str, Any]:
        return {
            "group_id": self.id,
            "command": self.report.command,
            "done": self.done,
            "reason": self.reason,
            "counts": self.counts(),
            "merged": self.text(),
            "rows": [r.to_dict() for r in self.rows],
        }

    @property
    def _ipython_display_(self) -> Callable[[], None] | None:
        return self._once_action()

    def _summary_line(self) -> str:
        return self.report.summary().splitlines()[0]

    def __repr__(self) -> str:
        body = final_text(self.report, self.diff)
        return body + (f"({self.note})\n" if self.note else "")

    def _repr_html_(self) -> str:
        return group_html(self.report, started_at(self.group), self.diff, note=self.note)


class GroupHandle(DisplayOnce):
    """What ``g = %bash_exec --on TARGETS cmd`` gives you: the group, at once.

    ``str(g)`` is the group id (``g1``), so ``%bash_wait $g`` works. In a
    notebook, displaying it opens a live view (one row per target, a progress bar).
    """

    def __init__(self, group: GroupJob, live: Callable[[GroupHandle], object] | None = None) -> None:
        self.group = group
        self._live = live

    @property
    def id(self) -> str:
        return self.group.id

    @property
    def done(self) -> bool:
        return self.group.done

    @property
    def rows(self) -> list[Row]:
        return self.snapshot().rows

    def snapshot(self, diff: bool = False) -> GroupView:
        """The group now (running members' output so far)."""
        return GroupView(self.group, fanout.report(self.group), None, diff)

    def wait(self, timeout: float | None = None) -> GroupView:
        """Block until every member ended, or ``timeout`` seconds (a notebook's
        unit, as the magics'); the group then."""
        ended = self.group.wait(timeout_ms=to_ms(timeout))
        return GroupView(self.group, fanout.report(self.group), "settled" if ended else "timeout")

    def interrupt(self) -> list[str]:
        """Ctrl-C to every running member (members not started yet are cancelled)."""
        return self.group.interrupt(source="notebook")

    def to_dict(self) -> dict[str, Any]:
        return self.snapshot().to_dict()

    def __str__(self) -> str:
        return self.group.id

    def __repr__(self) -> str:
        rep = fanout.report(self.group, tail_lines=3)
        return live_text(rep, started_at(self.group)) if not rep.done else final_text(rep)

    def _repr_html_(self) -> str:
        return group_html(fanout.report(self.group, tail_lines=3), started_at(self.group))

    @property
    def _ipython_display_(self) -> Callable[[], None] | None:
        return self._live_or_once(self._live, self.group.done)

    def _summary_line(self) -> str:
        return fanout.report(self.group, tail_lines=0).summary().splitlines()[0]


class GroupFailed(Exception):
    """A group the magic waited for ended with members that failed. Shown as one line (no
    traceback), after the group's table and merged output were shown, so *Run All*
    stops there; ``.view`` is the :class:`GroupView`. ``--no-raise-error`` returns it instead."""

    def __init__(self, view: GroupView) -> None:
        super().__init__(view.id)
        self.view = view

    def __str__(self) -> str:
        bad = self.view.failed
        head = self.view.report.summary().splitlines()
        outcomes = [ln for ln in head[1:] if not ln.startswith(("exit 0:", "awaiting input", "secret prompt"))]
        shown = "; ".join(ln if len(ln) <= 160 else ln[:160] + "…" for ln in outcomes[:4])
        return f"group {self.view.id}: {len(bad)} of {len(self.view.rows)} targets failed" + (
            f": {shown}" if shown else ""
        )

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


def raise_if_group_failed(view: GroupView, raise_error: bool) -> GroupView:
    if raise_error and view.done and not view.ok and view.reason != "awaiting_input":
        raise GroupFailed(view)
    return view
