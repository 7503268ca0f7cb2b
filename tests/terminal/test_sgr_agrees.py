"""Our SGR reader (``core/sgr.py``, the ring's colours) reads every well-formed
``ESC [ ... m`` as the terminal emulator we depend on does (libghostty-vt's own
SGR parser, ``tests/terminal/ghostty_sgr.py``), so a job's coloured output and
its screen agree. Ours stays for its cost (``benchmarks/bench_sgr.py``); this
holds it to the emulator's reading. Malformed sequences (an unknown colour kind
after 38, a 256-colour index past 255) are read differently on purpose: ours
drops them, the emulator wraps or re-reads them (the module docstring)."""

from __future__ import annotations

import random

import pytest

from dsh_magics.terminal.core import sgr

from .ghostty_sgr import apply as ghostty_apply

SIMPLE = [0, 1, 4, 7, 21, 22, 24, 27, 39, 49, *range(30, 38), *range(40, 48), *range(90, 98), *range(100, 108)]


def _well_formed(rnd: random.Random) -> str:
    """One parameter of a well-formed SGR sequence, its sub-parameters included."""
    kind = rnd.random()
    if kind < 0.55:
        return str(rnd.choice(SIMPLE))
    which = rnd.choice((38, 48))
    c = [rnd.randint(0, 255) for _ in range(3)]
    if kind < 0.7:
        return f"{which};5;{rnd.randint(0, 255)}"
    if kind < 0.8:
        return f"{which};2;{c[0]};{c[1]};{c[2]}"
    if kind < 0.87:
        return f"{which}:5:{rnd.randint(0, 255)}"
    if kind < 0.94:
        return f"{which}:2::{c[0]}:{c[1]}:{c[2]}"
    return f"4:{rnd.randint(0, 5)}"


@pytest.mark.parametrize(
    "params",
    ["", "0", "1;31", "38;5;208", "48;2;1;2;3", "38:2::10:20:30", "4:0", "4:3", "97;41", "1;4;7;32;44", "22;24;27;39;49"],
)
def test_each_form_reads_as_the_emulator_reads_it(params: str) -> None:
    assert sgr.apply(None, params) == ghostty_apply(None, params)
    pen = (3, "#0a0b0c", True, True, True)
    assert sgr.apply(pen, params) == ghostty_apply(pen, params)


def test_random_well_formed_sequences_read_alike() -> None:
    rnd = random.Random(34)
    pen_ours = pen_theirs = None
    for _ in range(5_000):
        params = ";".join(_well_formed(rnd) for _ in range(rnd.randint(1, 5)))
        pen_ours, pen_theirs = sgr.apply(pen_ours, params), ghostty_apply(pen_theirs, params)
        assert pen_ours == pen_theirs, params


def test_the_comparison_sees_a_difference() -> None:
    """The reference is not ours in disguise: a malformed sequence both read their own way."""
    assert sgr.apply(None, "38;5;300") is None
    assert ghostty_apply(None, "38;5;300") == (44, None, False, False, False)
