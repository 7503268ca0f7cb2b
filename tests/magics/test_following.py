"""The live view's follow loop (notebook/following.py) with a real job on a real bash:
it redraws on new output and on a heartbeat, never more often than ``min_interval``,
whatever kind of deadline it is given."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from dsh_magics.notebook import following as fol
from dsh_magics.terminal import Registry
from dsh_magics.terminal.deadline import Deadline


class Counting:
    """A sink that only counts its redraws."""

    def __init__(self) -> None:
        self.refreshes = 0

    def refresh(self) -> bool:
        self.refreshes += 1
        return False


@pytest.fixture
def reg() -> Iterator[Registry]:
    r = Registry(login=False)
    yield r
    r.close_all()


@pytest.mark.parametrize(
    "make_deadline",
    [lambda: None, lambda: Deadline(None), lambda: Deadline.after_ms(60_000)],
    ids=["none", "never", "a-minute"],
)
def test_redraws_are_paced_by_min_interval(reg: Registry, make_deadline: Callable[[], Deadline | None]) -> None:
    """A job printing a line every 20 ms for about a second, followed with
    ``min_interval`` 0.2 s: a handful of redraws. A never-deadline once read as
    zero seconds left, and the loop redrew without pause (thousands of display
    updates for a cell; tests/magics/test_kernel.py::test_a_quick_wait_is_drawn_once_final
    hung in CI on the flood)."""
    deadline = make_deadline()  # made now: one made at collection may have passed when the test runs
    signals = fol.OutputSignals(reg)
    try:
        job = reg.exec("f", "for i in $(seq 50); do echo $i; sleep 0.02; done")
        sink = Counting()
        assert fol.follow(job, sink, signals, deadline=deadline, min_interval=0.2, heartbeat=1.0)
        # about one redraw per min_interval of the job's life, plus the final one;
        # the job's own life under load may stretch, so count against its length
        life = job.result.duration
        assert sink.refreshes <= life / 0.2 + 3, (sink.refreshes, life)
    finally:
        signals.close()
