"""Waits that end on events (matched, settled, awaiting_input, idle, timeout), not only on a deadline.

Written against the engine contract only; reasons and rules: docs/interactive.md, docs/internals.md.
"""

from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict
from dataclasses import replace
from typing import Any

from ..errors import DshError, NoSuchSession
from .deadline import Deadline
from .requests import WaitRequest
from .result import Result

SETTLED, MATCHED, IDLE, AWAITING_INPUT, TIMEOUT = (
    "settled",
    "matched",
    "idle",
    "awaiting_input",
    "timeout",
)
REASONS = (SETTLED, MATCHED, IDLE, AWAITING_INPUT, TIMEOUT)
MAX_MATCH_TEXT = 1000

# Where the last wait on each job ended (a ring line number), in this
# process: what its caller has already been given. Bounded, oldest first out.
_SEEN: OrderedDict[str, int] = OrderedDict()
_SEEN_LOCK = threading.Lock()
_SEEN_MAX = 4096


def _seen(job_id: str) -> int | None:
    with _SEEN_LOCK:
        return _SEEN.get(job_id)


def _mark_seen(job_id: str, line: int) -> None:
    with _SEEN_LOCK:
        _SEEN[job_id] = max(line, _SEEN.get(job_id, 0))
        _SEEN.move_to_end(job_id)
        while len(_SEEN) > _SEEN_MAX:
            _SEEN.popitem(last=False)


def run(engine: Any, request: WaitRequest) -> Result:
    """The job's result when the first of the events above happens; its
    ``reason`` names the event. A result that is not ``settled`` is a
    snapshot of a job that keeps running. ``until_screen`` is searched in
    the screen's rows joined by newlines (``^``/``$`` match at each row):
    ``matched``, with the row in ``match_text`` and no ``match_line``.
    The request was checked when it was built."""
    rx = None if request.until is None else re.compile(request.until)
    srx = None if request.until_screen is None else re.compile(request.until_screen, re.MULTILINE)
    job_id, idle_ms = request.job_id, request.idle_ms
    job = engine.job(job_id)
    sid = job.owner
    start = time.monotonic()
    deadline = Deadline.after_ms(request.timeout_ms, start)
    try:
        seq = engine.output_seq(sid)
        cursor = _start_cursor(engine, job_id) if rx is not None else 0
    except NoSuchSession:
        # The terminal is gone: its job has settled (closing settles it).
        return _gone(engine, job, deadline.left_s())
    last_output = start
    while True:
        if rx is not None:
            found, cursor = _scan(engine, sid, rx, cursor)
            if found is not None:
                return _finish(engine, job_id, MATCHED, match=found)
        if srx is not None:
            try:
                row = _screen_match(engine, sid, srx)
            except NoSuchSession:
                return _gone(engine, job, 0)
            if row is not None:
                return replace(_finish(engine, job_id, MATCHED), match_text=row[:MAX_MATCH_TEXT])
        if job.done:
            return _finish(engine, job_id, SETTLED)
        info = _info(engine, sid)
        if info is None or info.job_id != job.id:
            # The terminal is past this job: it settles in a moment (the
            # engine hands out the result right after it frees the terminal).
            job.wait(deadline.left_s())
            if job.done:
                continue  # one more look for a match in its last output
            return _finish(engine, job_id, TIMEOUT)
        if request.on_input and getattr(info, "awaiting_input", None) is not None:
            return _finish(engine, job_id, AWAITING_INPUT)
        now = time.monotonic()
        due = deadline
        if idle_ms is not None:
            idle_at = Deadline.after_ms(idle_ms, last_output)
            if idle_at.passed(now):
                return _finish(engine, job_id, IDLE)
            due = deadline.earlier(idle_at)
        if deadline.passed(now):
            return _finish(engine, job_id, TIMEOUT)
        try:
            new_seq = engine.wait_output(sid, seq, due.left_s(now))
        except NoSuchSession:
            return _gone(engine, job, 0)
        if new_seq != seq:
            seq = new_seq
            last_output = time.monotonic()


def _screen_match(engine: Any, sid: str, srx: re.Pattern[str]) -> str | None:
    """The screen row where ``srx``'s first match begins (past line feeds it
    starts with), or None."""
    text = "\n".join(engine.screen(sid)["lines"])
    m = srx.search(text)
    if m is None:
        return None
    pos = m.start()
    while pos < m.end() - 1 and text[pos] == "\n":  # e.g. ``\s*`` across blank rows
        pos += 1
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return text[start : end if end >= 0 else len(text)]


def _start_cursor(engine: Any, job_id: str) -> int:
    """Where an ``until`` wait starts looking: past the previous wait on the
    job, else at the job's first line."""
    seen = _seen(job_id)
    if seen is not None:
        return seen
    start = engine.result(job_id, tail_lines=0).start_line
    return start if start is not None else engine.read(engine.job(job_id).owner, last=0).next_line


def _gone(engine: Any, job: Any, timeout: float | None) -> Result:
    """The job's terminal is closed: its result, without the terminal (never
    through ``engine.wait``, which may be this very function)."""
    job.wait(timeout)
    res = engine.result(job.id)
    reason = SETTLED if res.done else TIMEOUT
    return replace(res, reason=reason, timed_out=reason == TIMEOUT)


def _info(engine: Any, sid: str) -> Any:
    """The terminal's row: which job it runs and whether that job waits for
    typed input (no copy of the job's output involved)."""
    try:
        return engine.info(sid)
    except DshError:
        return None


def _scan(
    engine: Any, sid: str, rx: re.Pattern[str], cursor: int
) -> tuple[tuple[int, str] | None, int]:
    """Look for ``rx`` in the lines from ``cursor`` on and in the unfinished
    last line; returns (line number and text of the first match, new cursor)."""
    try:
        rr = engine.read(sid, since=cursor)
    except DshError:
        return None, cursor
    for i, line in enumerate(rr.lines):
        if rx.search(line):
            return (rr.first_line + i, line[:MAX_MATCH_TEXT]), rr.first_line + i + 1
    if rr.partial and rx.search(rr.partial):
        return (rr.next_line, rr.partial[:MAX_MATCH_TEXT]), rr.next_line
    return None, rr.next_line


def _finish(engine: Any, job_id: str, reason: str, match: tuple[int, str] | None = None) -> Result:
    res = engine.result(job_id)
    if match is not None:
        _mark_seen(job_id, match[0] + 1)
    else:
        try:
            _mark_seen(job_id, engine.read(res.session_id, last=0).next_line)
        except DshError:
            pass  # its terminal is gone (closed meanwhile): no later wait will read its output
    if res.done and reason in (TIMEOUT, IDLE, AWAITING_INPUT):
        reason = SETTLED  # it ended while we were deciding: say so
    return replace(
        res,
        reason=reason,
        timed_out=reason == TIMEOUT,
        match_line=match[0] if match else None,
        match_text=match[1] if match else None,
    )


__all__ = [
    "AWAITING_INPUT",
    "IDLE",
    "MATCHED",
    "REASONS",
    "SETTLED",
    "TIMEOUT",
    "run",
]
