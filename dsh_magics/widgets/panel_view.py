"""The terminal panel's view data: job rows, snapshots, notices and what one panel draws.

Frozen values computed by :mod:`.panel_model` and :mod:`.panel_state`, drawn by :mod:`.panel_html`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import DshError
from ..terminal import TerminalInfo
from ..terminal.result import BUSY, COMPLETED, INTERRUPTED, RUNNING

DEFAULT_TAIL = 200


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
