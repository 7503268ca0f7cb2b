"""One rule per request field on every backend: the table's (terminal/requests.py).

``wait_output(after_seq=-1)`` used to be accepted in-process and refused by the host;
the table says ``after_seq`` is an integer >= 0 (what ``output_seq`` gives), so every
backend refuses anything else with the same words, before anything is opened or waited for.
"""

from __future__ import annotations

from typing import Any

import pytest

from dsh_magics.errors import InvalidArgument
from dsh_magics.terminal import Engine
from dsh_magics.terminal.requests import FIELDS


@pytest.mark.parametrize("after_seq", [-1, 1.5, "0", True])
def test_wait_output_takes_after_seq_as_the_table_says(engine: Engine, after_seq: Any) -> None:
    row = FIELDS["after_seq"]
    assert row.type == "integer" and row.minimum == 0
    engine.attach("c-seq-rule")
    with pytest.raises(InvalidArgument) as e:
        engine.wait_output("c-seq-rule", after_seq, timeout=30)
    assert e.value.message == "after_seq must be an integer >= 0"
    assert e.value.details.get("field") == "after_seq"


def test_wait_output_takes_the_tables_lowest_after_seq(engine: Engine) -> None:
    engine.attach("c-seq-rule")
    seq = engine.output_seq("c-seq-rule")
    assert isinstance(seq, int) and seq >= FIELDS["after_seq"].minimum  # type: ignore[operator]
    assert engine.wait_output("c-seq-rule", seq, timeout=0) == seq


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda e: e.exec("c-rule", "true", wait_ms=-1), "wait_ms"),
        (lambda e: e.exec("c-rule", "true", wait_ms=float("nan")), "wait_ms"),
        (lambda e: e.send("c-rule", "x", wait_ms=-5), "wait_ms"),
        (lambda e: e.wait("bash-x", timeout=-1), "timeout"),
        (lambda e: e.wait("bash-x", idle_ms=0), "idle_ms"),
    ],
)
def test_durations_are_refused_alike_everywhere(engine: Engine, call: Any, field: str) -> None:
    with pytest.raises(InvalidArgument) as e:
        call(engine)
    assert e.value.details.get("field") == field
    assert engine.list() == []
