"""The bounded line ring of a terminal's retained output: numbered lines,
bounded by lines and characters; carriage return and backspace act as on a terminal."""

from __future__ import annotations

from collections import deque
from itertools import islice


class Ring:
    def __init__(
        self,
        max_lines: int = 4000,
        *,
        max_chars: int = 4_000_000,
        max_line_chars: int = 65_536,
    ) -> None:
        self.max_lines = max_lines
        self.max_chars = max_chars
        self.max_line_chars = max_line_chars
        self._lines: deque[str] = deque(maxlen=max_lines)
        self._total = 0  # number of lines ever completed == next line number
        self._approx_chars = 0
        self.partial = ""  # the line being written, not yet ended by "\n"
        self._cursor = 0
        self._pending_cr = False

    # -- numbering -------------------------------------------------------
    @property
    def next_line(self) -> int:
        """Number the next completed line will get."""
        return self._total

    @property
    def first_line(self) -> int:
        """Number of the oldest retained line."""
        return self._total - len(self._lines)

    def __len__(self) -> int:
        return len(self._lines)

    # -- writing ---------------------------------------------------------
    def feed(self, text: str) -> None:
        """Append cleaned text (which may contain ``\\n``, ``\\r`` and ``\\b``)."""
        if self._pending_cr:
            self._pending_cr = False
            text = "\r" + text
        if not text:
            return
        crs = 0  # CRs of CR LF pairs still in ``text``
        if "\r" in text:
            if text.endswith("\r"):
                # It may be the first half of a "\r\n" split across reads.
                self._pending_cr = True
                text = text[:-1]
            crlf = text.count("\r\n")
            if crlf == text.count("\r") == text.count("\n"):
                # Every line ends with CR LF (a PTY's usual output): one split.
                pieces = text.split("\r\n")
                slow = "\b" in text
                crs = crlf
            else:
                text = text.replace("\r\n", "\n")
                pieces = text.split("\n")
                slow = "\r" in text or "\b" in text
        else:
            pieces = text.split("\n")
            slow = "\b" in text
        last = pieces.pop()
        if pieces:
            first = self._overwrite(self.partial, self._cursor, pieces[0])[0]
            rest = pieces[1:]
            if slow:
                rest = [_collapse(p) if ("\r" in p or "\b" in p) else p for p in rest]
            self._push([first], rest)
            self.partial, self._cursor = self._overwrite("", 0, last)
        else:
            self.partial, self._cursor = self._overwrite(self.partial, self._cursor, last)
        self._approx_chars += len(text) - crs
        if len(self.partial) > self.max_line_chars:
            self._wrap_partial()
        if self._approx_chars > self.max_chars:
            self._enforce_char_budget()

    def finish_partial(self) -> bool:
        """End the current line if it has content (used at job boundaries).

        Returns True if a line was pushed, so a job's output can remember that
        it did not end with a newline and reproduce its bytes exactly.
        """
        self._pending_cr = False
        if self.partial:
            self._push([self.partial], [])
            self.partial, self._cursor = "", 0
            return True
        self.partial, self._cursor = "", 0
        return False

    def clear(self) -> None:
        """Forget everything retained (numbering keeps counting)."""
        self._lines.clear()
        self.partial, self._cursor, self._pending_cr = "", 0, False
        self._approx_chars = 0

    # -- reading ---------------------------------------------------------
    def get(self, start: int, end: int | None = None) -> tuple[list[str], int]:
        """Lines numbered ``start`` .. ``end - 1`` that are still retained,
        and how many of the requested lines were already dropped."""
        first = self.first_line
        stop = self.next_line if end is None else min(end, self.next_line)
        begin = max(start, first)
        dropped = max(0, min(first, stop) - start)
        if begin >= stop:
            return [], dropped
        return list(islice(self._lines, begin - first, stop - first)), dropped

    # -- internals -------------------------------------------------------
    def _push(self, head: list[str], rest: list[str]) -> None:
        n = len(head) + len(rest)
        self._total += n
        if len(rest) >= self.max_lines:
            self._lines.clear()
            self._lines.extend(rest[-self.max_lines :])
        else:
            self._lines.extend(head)
            self._lines.extend(rest)

    def _wrap_partial(self) -> None:
        # Like a terminal wrapping a very long line: the text is kept, split
        # into max_line_chars pieces, so memory stays bounded.
        size = self.max_line_chars
        chunks = [self.partial[i : i + size] for i in range(0, len(self.partial), size)]
        self.partial = chunks.pop()
        self._cursor = min(self._cursor, len(self.partial))
        self._push(chunks, [])

    def _enforce_char_budget(self) -> None:
        exact = sum(map(len, self._lines))
        while exact > self.max_chars and len(self._lines) > 1:
            exact -= len(self._lines.popleft())
        self._approx_chars = exact

    @staticmethod
    def _overwrite(base: str, cursor: int, piece: str) -> tuple[str, int]:
        """Write ``piece`` into ``base`` at ``cursor`` with terminal semantics."""
        if "\r" not in piece and "\b" not in piece:
            if cursor >= len(base):
                return base + piece, len(base) + len(piece)
            return base[:cursor] + piece + base[cursor + len(piece) :], cursor + len(piece)
        segments = piece.split("\r")
        for i, seg in enumerate(segments):
            if i:
                cursor = 0
            if "\b" in seg:
                parts = seg.split("\b")
                for j, part in enumerate(parts):
                    if j:
                        cursor = max(0, cursor - 1)
                    if part:
                        base = base[:cursor] + part + base[cursor + len(part) :]
                        cursor += len(part)
            elif seg:
                base = base[:cursor] + seg + base[cursor + len(seg) :]
                cursor += len(seg)
        return base, cursor


def _collapse(line: str) -> str:
    return Ring._overwrite("", 0, line)[0]
