"""Bounding text for a model's context: head + tail, with an honest count of what was left out.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Default character budget of one tool result's text (output or read text).
#: About 4k tokens: enough for a build log's head and tail, small enough that
#: a few results fit in a context window. The marker is counted inside it.
OUTPUT_BUDGET_CHARS = 16_000

#: Smallest budget we accept: below it the marker alone would not fit.
MIN_BUDGET_CHARS = 200

#: Share of the room given to the head; the tail gets the rest, because the
#: end of an output (the error, the summary) is usually what matters most.
HEAD_SHARE = 0.4


@dataclass(frozen=True)
class Bounded:
    """A text cut to a budget, with what was left out."""

    text: str
    total_chars: int
    total_lines: int
    omitted_chars: int = 0
    omitted_lines: int = 0

    @property
    def truncated(self) -> bool:
        return self.omitted_chars > 0


def count_lines(text: str) -> int:
    """Lines as a reader counts them: a final line without newline counts."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def marker(omitted_chars: int, omitted_lines: int, hint: str = "") -> str:
    """The line that replaces the middle (ours, stable, easy to spot)."""
    tail = f"; {hint}" if hint else ""
    return f"[... {omitted_chars} characters in {omitted_lines} lines left out{tail} ...]"


def bound(text: str, budget: int = OUTPUT_BUDGET_CHARS, *, hint: str = "") -> Bounded:
    """Keep ``text`` whole if it fits ``budget`` characters, else its head and
    tail around a marker; the result is never longer than ``budget``.

    ``omitted_lines`` counts every line not shown in full (a line cut in the
    middle counts), so "0 lines left out" never hides a damaged line. Cuts
    snap to line boundaries when one is near, so lines are rarely cut at all.
    """
    if budget < MIN_BUDGET_CHARS:
        raise ValueError(f"budget must be at least {MIN_BUDGET_CHARS} characters")
    n = len(text)
    total_lines = count_lines(text)
    if n <= budget:
        return Bounded(text, n, total_lines)

    # Reserve room for the longest marker these numbers can produce, plus the
    # two newlines that may surround it.
    widest = marker(n, max(total_lines, 1), hint)
    room = max(0, budget - len(widest) - 2)
    head_len = int(room * HEAD_SHARE)
    tail_len = room - head_len

    head_end = head_len
    nl = text.rfind("\n", 0, head_len)
    if nl != -1 and nl + 1 >= head_len - head_len // 4:
        head_end = nl + 1
    tail_start = n - tail_len
    nl = text.find("\n", tail_start - 1, n - 1)
    if (
        tail_start > 0
        and text[tail_start - 1] != "\n"
        and nl != -1
        and nl + 1 - tail_start <= tail_len // 4
    ):
        tail_start = nl + 1

    head, tail = text[:head_end], text[tail_start:]
    head_full = head.count("\n")
    tail_full = count_lines(tail) - (0 if not tail or text[tail_start - 1] == "\n" else 1)
    omitted_lines = total_lines - head_full - tail_full
    omitted_chars = tail_start - head_end
    note = marker(omitted_chars, omitted_lines, hint)
    body = head + ("" if not head or head.endswith("\n") else "\n") + note
    body += "\n" if tail and not note.endswith("\n") else ""
    out = body + tail
    return Bounded(out, n, total_lines, omitted_chars, omitted_lines)
