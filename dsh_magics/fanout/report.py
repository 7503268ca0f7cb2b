"""What a group looks like now: a per-target table and the merged view, as data and as compact text for people and models."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..terminal.result import COMPLETED, Result
from .group_job import FAILED, GroupJob, MemberRun
from .merge import Block, blocks, render, render_diff
from .targets import fold


@dataclass(frozen=True)
class Row:
    """One member's line of the table."""

    target: str
    session_id: str
    status: str
    job_id: str | None
    exit_code: int | None
    duration_s: float | None
    last_line: str
    output: str | None  # None: it never ran
    code: str | None = None  # the member's error code (TARGET_UNREACHABLE, TARGET_LOST, ...)
    message: str | None = None
    timed_out: bool = False
    awaiting_input: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "target": self.target,
            "session_id": self.session_id,
            "status": self.status,
            "job_id": self.job_id,
            "exit_code": self.exit_code,
            "duration_s": self.duration_s,
            "last_line": self.last_line,
        }
        for key in ("code", "message", "awaiting_input"):
            if getattr(self, key) is not None:
                d[key] = getattr(self, key)
        if self.timed_out:
            d["timed_out"] = True
        return d


@dataclass(frozen=True)
class GroupReport:
    """A group's state at one moment."""

    group_id: str
    command: str
    done: bool
    rows: list[Row]

    @property
    def blocks(self) -> list[Block]:
        return blocks({r.target: r.output for r in self.rows if r.output is not None})

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.rows:
            out[r.status] = out.get(r.status, 0) + 1
        return out

    def summary(self) -> str:
        """The head of the text view: counts, exit codes folded, failures by code, who waits for input."""
        counts = ", ".join(f"{n} {s}" for s, n in self.counts().items())
        lines = [f"group {self.group_id}: {len(self.rows)} targets: {counts}" + ("" if self.done else " (still running)")]
        by_exit: dict[str, list[str]] = {}
        for r in self.rows:
            if r.status == COMPLETED:
                by_exit.setdefault(f"exit {r.exit_code}", []).append(r.target)
            elif r.status == FAILED and r.code:
                by_exit.setdefault(f"{r.code}", []).append(r.target)
            elif r.status != "running":
                by_exit.setdefault(r.status + (" (target timeout)" if r.timed_out else ""), []).append(r.target)
        for key, labels in by_exit.items():
            first = next((r.message for r in self.rows if r.target == labels[0] and r.message), None)
            lines.append(f"{key}: {fold(labels)}" + (f" ({first})" if first and key.isupper() else ""))
        waiting = [r for r in self.rows if r.awaiting_input]
        if waiting:
            secret = [r.target for r in waiting if r.awaiting_input and r.awaiting_input.get("secret")]
            lines.append(f"awaiting input: {fold(r.target for r in waiting)}")
            if secret:
                lines.append(f"secret prompt (only a person may answer): {fold(secret)}")
        return "\n".join(lines) + "\n"

    def text(self, diff: bool = False) -> str:
        """The summary, then the merged outputs (or the diff view)."""
        found = self.blocks
        return self.summary() + (render_diff(found) if diff else render(found))

    def table(self) -> str:
        """The per-target table: target, status, exit code, duration, last line."""
        head = ("target", "status", "exit", "time", "last line")
        body = [
            (
                r.target,
                r.code or r.status,
                "" if r.exit_code is None else str(r.exit_code),
                "" if r.duration_s is None else f"{r.duration_s:.2f}s",
                r.last_line[:80],
            )
            for r in self.rows
        ]
        widths = [max(len(row[i]) for row in (head, *body)) for i in range(4)]
        return "\n".join(
            "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:4])) + "  " + row[4] for row in (head, *body)
        ) + "\n"


def report(group: GroupJob, tail_lines: int | None = None) -> GroupReport:
    """The group now (running members' output so far; ``tail_lines`` keeps their last lines only)."""
    done = group.done
    return GroupReport(group.id, group.command, done, [_row(group, run, tail_lines) for run in group.runs])


def _row(group: GroupJob, run: MemberRun, tail_lines: int | None) -> Row:
    res: Result | None = group.snapshot(run, tail_lines)
    output = None if res is None else res.output
    last = next((ln for ln in reversed(output.splitlines()) if ln.strip()), "") if output else ""
    err = run.error or {}
    return Row(
        target=run.member.label,
        session_id=run.member.session_id,
        status=run.status,
        job_id=run.job_id,
        exit_code=None if res is None or res.exit_code is None else int(res.exit_code),
        duration_s=None if res is None else round(res.duration, 3),
        last_line=last,
        output=output,
        code=err.get("code"),
        message=err.get("message"),
        timed_out=run.timed_out,
        awaiting_input=None if res is None or res.done else res.awaiting_input,
    )
