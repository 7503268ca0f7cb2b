"""Waiting up to a deadline, written once: the one place a request's milliseconds meet the clock.

A request holds its durations in milliseconds (terminal/requests.py); the clock
(``time.monotonic``) and the blocking calls (``Event.wait``, ``Condition.wait``,
``Job.wait``) count seconds. :class:`Deadline` turns the one into the other, so no
other module divides by 1000: ``Deadline.after_ms(req.wait_ms).left_s()`` is what a
blocking call gets, and :func:`settled_within` is "wait up to ``wait_ms`` for the
job to settle" for every entry that has a ``wait_ms`` (the registry's exec, the host
client's, the host's reply to an exec).
"""

from __future__ import annotations

import time
from typing import Protocol


class _Settles(Protocol):
    def wait(self, timeout: float | None = None) -> bool: ...


class Deadline:
    """A moment on the monotonic clock a wait ends at (``at``), or never (None)."""

    __slots__ = ("at",)

    def __init__(self, at: float | None) -> None:
        self.at = at

    @classmethod
    def after_ms(cls, ms: float | None, start: float | None = None) -> Deadline:
        """``ms`` milliseconds after ``start`` (default: now); None: never."""
        if ms is None:
            return cls(None)
        return cls((time.monotonic() if start is None else start) + ms / 1000)

    @property
    def never(self) -> bool:
        return self.at is None

    def left_s(self, now: float | None = None) -> float | None:
        """Seconds left (>= 0) for a blocking call; None: no limit."""
        if self.at is None:
            return None
        return max(0.0, self.at - (time.monotonic() if now is None else now))

    def left_ms(self, now: float | None = None) -> int | None:
        """Whole milliseconds left (>= 0), for a request that takes ``*_ms``."""
        left = self.left_s(now)
        return None if left is None else int(left * 1000)

    def passed(self, now: float | None = None) -> bool:
        return self.at is not None and (time.monotonic() if now is None else now) >= self.at

    def earlier(self, other: Deadline) -> Deadline:
        """Whichever of the two comes first."""
        if self.at is None:
            return other
        if other.at is None:
            return self
        return self if self.at <= other.at else other


def settled_within(job: _Settles, wait_ms: float | None, start: float | None = None) -> bool:
    """Wait up to ``wait_ms`` (from ``start``, default now) for ``job`` to settle;
    whether it did. ``wait_ms`` None does not look; 0 only looks."""
    if wait_ms is None:
        return False
    return job.wait(Deadline.after_ms(wait_ms, start).left_s())


__all__ = ["Deadline", "settled_within"]
