"""Plain, serialisable values the engine hands out (job results, terminal
listings, ring reads), with ``to_dict()`` for the host, tools and notebooks."""

from __future__ import annotations

import datetime as _dt
from dataclasses import asdict, dataclass, field, replace
from typing import Any

# Job statuses produced by terminals.
RUNNING = "running"
COMPLETED = "completed"
INTERRUPTED = "interrupted"
SHELL_EXITED = "shell_exited"
JOB_STATUSES = (RUNNING, COMPLETED, INTERRUPTED, SHELL_EXITED)

# Terminal statuses.
IDLE = "idle"
BUSY = "busy"
DEAD = "dead"


def tail_of(result: Result, tail_lines: int | None) -> Result:
    """``result`` with only the last ``tail_lines`` lines of its output."""
    if tail_lines is None:
        return result
    lines = output_lines(result.output, keepends=True)
    if len(lines) <= tail_lines:
        return result
    kept = lines[len(lines) - tail_lines :] if tail_lines else []
    cut = len(lines) - len(kept)
    styles = result.styles
    if styles:
        styles = [[row[0] - cut, *row[1:]] for row in styles if row[0] >= cut]
    return replace(result, output="".join(kept), omitted_lines=result.omitted_lines + cut, styles=styles)


def output_lines(output: str, keepends: bool = False) -> list[str]:
    """``output``'s lines as the ring numbered them: split at ``\\n`` only
    (``str.splitlines`` also splits at ``\\x85``, ``\\u2028``, ...)."""
    lines = output.split("\n")
    last = lines.pop()
    if keepends:
        lines = [line + "\n" for line in lines]
    if last:
        lines.append(last)
    return lines


def iso_time(ts: float | None) -> str | None:
    """A timestamp as ISO 8601 text in UTC, to the millisecond (None stays None)."""
    return _iso(ts)


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).isoformat(timespec="milliseconds")


@dataclass
class Result:
    """What a job produced, or has produced so far (``timed_out=True``).

    ``output`` is the job's own cleaned output: ANSI stripped, carriage returns
    applied, exactly the bytes between this job's start and end, with the
    trailing newline kept when the command printed one. When the job printed
    more than the terminal's ring retains, ``output`` holds the retained tail
    and ``dropped_lines`` says how many lines were lost from the front. A
    snapshot asked for with ``tail_lines`` holds only that many last lines and
    says in ``omitted_lines`` how many retained ones it left out.

    ``styles`` keeps the output's colours for HTML views (the terminal printed
    them; ``output`` has none): rows ``[line, start, end, fg, bg, bold,
    underline, inverse]``, ``line`` an index into ``output``'s lines (split at
    ``\\n``), ``start``/``end`` character offsets in it, a colour a palette
    index 0-255, ``"#rrggbb"`` or None. Lines without a row are plain. None
    when the engine kept none (a host from before them). It is not in
    :meth:`to_dict`: text surfaces and a model get plain text only.
    """

    job_id: str
    session_id: str
    command: str
    status: str
    exit_code: int | None
    output: str
    timed_out: bool
    started_at: float
    ended_at: float | None
    cwd: str | None
    dropped_lines: int = 0
    fresh_shell: bool = False
    signal: int | None = None
    note: str | None = None
    start_line: int | None = None  # ring line number where this job's output starts
    omitted_lines: int = 0  # retained lines left out of this snapshot by ``tail_lines``
    # Interaction (all optional, so results from older hosts still load):
    # what the job waits for now (``interaction.AwaitingInput.to_dict()``),
    # why a wait returned (``waits.REASONS``), the line that matched a wait's
    # ``until``, and the record of input sent to the job (secret text redacted).
    awaiting_input: dict[str, Any] | None = None
    reason: str | None = None
    match_line: int | None = None
    match_text: str | None = None
    inputs: list[dict[str, Any]] = field(default_factory=list)
    # A program that used the full (alternate) screen: its drawing is not in
    # ``output``; these are the rows it showed last.
    screen: list[str] | None = None
    # Who started the job: ``person`` (typed at an attached terminal's prompt),
    # ``agent``, ``notebook``; None when the caller did not say.
    source: str | None = None
    styles: list[list[Any]] | None = None  # colours for HTML views; see above

    @property
    def duration(self) -> float:
        """Seconds from start to end (or to now, for a job still running)."""
        import time

        end = self.ended_at if self.ended_at is not None else time.time()
        return max(0.0, end - self.started_at)

    @property
    def lines(self) -> list[str]:
        return self.output.splitlines()

    @property
    def ok(self) -> bool:
        return self.status == COMPLETED and self.exit_code == 0

    @property
    def done(self) -> bool:
        return self.status != RUNNING

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        del d["styles"]
        d["duration"] = round(self.duration, 6)
        d["started_at"] = _iso(self.started_at)
        d["ended_at"] = _iso(self.ended_at)
        return d


@dataclass
class TerminalInfo:
    """One row of ``list()``: enough to decide where to send the next command."""

    session_id: str
    status: str
    cwd: str | None
    job_id: str | None
    pid: int | None
    created_at: float
    job_started_at: float | None = None
    exit_code: int | None = None
    lines: int = 0
    awaiting_input: dict[str, Any] | None = None  # the running job waits for typed input
    target: str = "local"  # where the shell runs: "local", or a remote target (ssh://host, ...)
    # why awaiting input cannot be seen (a remote terminal without a side
    # channel); None where it can
    awaiting_input_unavailable: str | None = None
    # who started the running job (``Result.source``: notebook, agent, person, panel)
    job_source: str | None = None

    @property
    def running(self) -> bool:
        return self.job_id is not None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["created_at"] = _iso(self.created_at)
        d["job_started_at"] = _iso(self.job_started_at)
        d["running"] = self.running
        return d


@dataclass
class ReadResult:
    """A window on a terminal's retained output ring.

    Line numbers are monotonic for the life of the terminal, so a reader can
    pass ``next_line`` back as ``since`` to get only what is new, and
    ``dropped`` tells it how many of the lines it asked for are gone.
    """

    session_id: str
    lines: list[str] = field(default_factory=list)
    first_line: int = 0
    next_line: int = 0
    dropped: int = 0
    partial: str = ""
    job_id: str | None = None
    # colours of ``text``'s lines for HTML views, as ``Result.styles`` (not in to_dict)
    styles: list[list[Any]] | None = None

    @property
    def text(self) -> str:
        body = "\n".join(self.lines)
        if self.partial:
            return body + ("\n" if self.lines else "") + self.partial
        return body

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        del d["styles"]
        d["text"] = self.text
        return d
