"""Head + tail bounding: within budget, honest counts, nothing invented."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_magics.tools.truncate import MIN_BUDGET_CHARS, OUTPUT_BUDGET_CHARS, bound, count_lines

MARK = re.compile(r"\[\.\.\. (\d+) characters in (\d+) lines left out[^\]]*\.\.\.\]")


def split(out: str) -> tuple[str, str, int, int]:
    m = MARK.search(out)
    assert m, out
    return out[: m.start()], out[m.end() :], int(m.group(1)), int(m.group(2))


def test_short_text_is_untouched() -> None:
    b = bound("a\nb\n", 200)
    assert (b.text, b.truncated, b.total_chars, b.total_lines) == ("a\nb\n", False, 4, 2)


def test_long_output_keeps_head_and_tail_and_counts_exactly() -> None:
    text = "".join(f"line {i}\n" for i in range(10_000))
    b = bound(text, OUTPUT_BUDGET_CHARS, hint="see bash_read")
    assert len(b.text) <= OUTPUT_BUDGET_CHARS and b.truncated
    assert b.text.startswith("line 0\nline 1\n") and b.text.endswith("line 9999\n")
    head, tail, chars, lines = split(b.text)
    assert (chars, lines) == (b.omitted_chars, b.omitted_lines)
    # cuts fell on line boundaries, so the omitted lines are exactly the missing ones
    shown = [ln for ln in (head + tail).splitlines() if ln]
    assert len(shown) + lines == 10_000
    assert chars == len(text) - len(head) - len(tail.lstrip("\n"))
    assert "see bash_read" in b.text


def test_one_giant_line_counts_as_left_out() -> None:
    b = bound("x" * 100_000, 1000)
    assert len(b.text) <= 1000 and b.omitted_lines == 1 and b.total_lines == 1


def test_budget_floor() -> None:
    with pytest.raises(ValueError):
        bound("x", MIN_BUDGET_CHARS - 1)


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.sampled_from("ab\n"), max_size=3000),
    st.integers(min_value=MIN_BUDGET_CHARS, max_value=2000),
)
def test_bound_properties(text: str, budget: int) -> None:
    b = bound(text, budget)
    assert len(b.text) <= budget
    assert b.total_chars == len(text) and b.total_lines == count_lines(text)
    if len(text) <= budget:
        assert b.text == text and not b.truncated
        return
    _, after, chars, lines = split(b.text)
    assert (chars, lines) == (b.omitted_chars, b.omitted_lines) and chars > 0
    # the text is exactly: a prefix, the marker, a suffix (newline-separated)
    n = len(text)
    kept_tail = len(after.removeprefix("\n"))
    kept_head = n - kept_tail - chars
    assert kept_head >= 0
    head, tail = text[:kept_head], text[n - kept_tail :]
    sep = "" if not head or head.endswith("\n") else "\n"
    note = MARK.search(b.text).group(0)
    assert b.text == head + sep + note + ("\n" if tail else "") + tail
    # every line not shown whole is counted, and no more
    start, end = kept_head, n - kept_tail
    offsets, pos = [], 0
    for ln in text.splitlines(keepends=True):
        offsets.append((pos, pos + len(ln)))
        pos += len(ln)
    damaged = sum(1 for s, e in offsets if s < end and e > start)
    assert lines == damaged
