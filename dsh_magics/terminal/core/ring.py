"""The bounded line ring of a terminal's retained output: numbered lines,
bounded by lines and characters; carriage return and backspace act as on a terminal.

Lines are plain text. Colours (SGR sequences the cleaner left in, ``Cleaner(keep_sgr=True)``)
are taken out and kept beside them: runs of one pen per line (:meth:`Ring.styles`),
bounded in number. Text without any, written with the default pen, takes the plain path
and pays one search for ESC."""

from __future__ import annotations

import re
from collections import deque
from itertools import groupby, islice
from typing import Any

from .sgr import Pen, apply

#: A line's styled runs: (start, end, pen), character offsets, default pen left out.
Runs = tuple[tuple[int, int, Pen], ...]

#: Styled runs kept at most over all lines (the oldest lines' go first).
MAX_STYLE_RUNS = 200_000
#: Characters of coloured lines kept as written, at most (the oldest go first).
MAX_STYLED_CHARS = 8_000_000
#: Lines at the end of a result whose styles it carries (a view shows 40):
#: bounds what a settled job keeps and what working out its runs costs.
STYLED_RESULT_LINES = 1000

_TOKEN = re.compile(r"\x1b\[([0-9;:]*)m|\x1b|[\r\b]")
_SGR = re.compile(r"\x1b\[([0-9;:]*)m")
_PENS: dict[tuple[Pen | None, str], Pen | None] = {}


def _apply(pen: Pen | None, params: str) -> Pen | None:
    """:func:`sgr.apply`, remembered (a coloured output repeats a few pens)."""
    key = (pen, params)
    out = _PENS.get(key, _PENS)
    if out is _PENS:
        if len(_PENS) > 4096:
            _PENS.clear()
        out = _PENS[key] = apply(pen, params)
    return out  # type: ignore[return-value]


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
        # Styles: the pen, the partial line's pen per character (None: all
        # default), finished lines' runs by line number, oldest first.
        self._pen: Pen | None = None
        self._pstyles: list[Pen | None] | None = None
        self._styles: dict[int, Runs] = {}
        self._styled_order: deque[int] = deque()
        self._style_runs = 0
        # Whole coloured lines as written, parsed when asked for: [first line,
        # count, pen at start, raw text (None once parsed), runs by line, size].
        self._blocks: deque[list[Any]] = deque()
        self._block_chars = 0

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
        """Append cleaned text (which may contain ``\\n``, ``\\r``, ``\\b`` and SGR sequences)."""
        if self._pen is not None or self._pstyles is not None or "\x1b" in text:
            self._feed_styled(text)
            return
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
            self._push_styled(self.partial, self._pstyles)
            self.partial, self._cursor, self._pstyles = "", 0, None
            return True
        self.partial, self._cursor, self._pstyles = "", 0, None
        return False

    def clear(self) -> None:
        """Forget everything retained (numbering keeps counting)."""
        self._lines.clear()
        self.partial, self._cursor, self._pending_cr = "", 0, False
        self._approx_chars = 0
        self._pen, self._pstyles = None, None
        self._styles.clear()
        self._styled_order.clear()
        self._style_runs = 0
        self._blocks.clear()
        self._block_chars = 0

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

    def styles(self, start: int, end: int | None = None) -> dict[int, Runs]:
        """The styled runs of retained lines ``start`` .. ``end - 1`` that have any."""
        begin = max(start, self.first_line)
        stop = self.next_line if end is None else min(end, self.next_line)
        if begin >= stop or not (self._styles or self._blocks):
            return {}
        if len(self._styles) < stop - begin:
            out = {n: r for n, r in self._styles.items() if begin <= n < stop}
        else:
            out = {n: self._styles[n] for n in range(begin, stop) if n in self._styles}
        self._prune_blocks()
        for block in self._blocks:
            if block[0] >= stop:
                break
            if block[0] + block[1] > begin:
                out.update((n, r) for n, r in self._parse(block).items() if begin <= n < stop)
        return out

    def style_rows(
        self, start: int, end: int | None = None, *, partial: bool = False, last: int = STYLED_RESULT_LINES
    ) -> list[list[Any]]:
        """The styles of lines ``start`` .. ``end - 1`` (their ``last`` lines
        only: views show a result's tail) as ``Result.styles`` rows ``[line,
        start, end, fg, bg, bold, underline, inverse]``, ``line`` counted from
        the first of them still retained; with ``partial`` the line being
        written too, as the line after them."""
        first = max(start, self.first_line)
        stop = self.next_line if end is None else min(end, self.next_line)
        styles = self.styles(max(first, stop - last), stop)
        rows = [[n - first, a, b, *pen] for n, runs in sorted(styles.items()) for a, b, pen in runs]
        if partial and self._pstyles is not None:
            after = max(0, self.next_line - first)
            rows += [[after, a, b, *pen] for a, b, pen in self.partial_styles()]
        return rows

    def partial_styles(self) -> Runs:
        """The styled runs of the line being written."""
        return _runs(self._pstyles) if self._pstyles is not None else ()

    # -- internals -------------------------------------------------------
    def _feed_styled(self, text: str) -> None:
        """:meth:`feed` with a pen: the same lines, their styles kept beside them.
        As a terminal does: ``\\r`` moves to the line's start, ``\\b`` one back,
        text overwrites from there (``\\r\\n`` is therefore one line end,
        however the reads split it). The whole lines of a read that has neither
        (usual coloured output) take a shorter way: their plain text in one
        pass, their raw text kept as a block whose runs are worked out when
        somebody asks for them (:meth:`styles`), if its lines are still here."""
        if self._pending_cr:  # held by the plain path: it only moves to the start
            self._pending_cr = False
            self._cursor = 0
        pieces = text.split("\n")
        last = pieces.pop()
        if pieces:
            self._write(pieces[0])
            self._end_line()
            if len(pieces) > 1:
                region = text[text.index("\n") + 1 : text.rindex("\n")]
                if "\r" in region:
                    region = region.replace("\r\n", "\n")
                    if region.endswith("\r"):
                        region = region[:-1]
                plain = None
                if "\r" not in region and "\b" not in region:
                    plain = _SGR.sub("", region) if "\x1b" in region else region
                if plain is not None and "\x1b" not in plain:
                    self._push_region(region, plain)
                else:
                    for piece in pieces[1:]:
                        self._write(piece[:-1] if piece.endswith("\r") else piece)
                        self._end_line()
        self._write(last)
        if self._pen is None and self._pstyles is not None and not any(self._pstyles):
            self._pstyles = None  # all default again: the plain path may take over
        if len(self.partial) > self.max_line_chars:
            self._wrap_partial()
        if self._approx_chars > self.max_chars:
            self._enforce_char_budget()

    def _push_region(self, region: str, plain: str) -> None:
        """Whole lines, ``region`` as written (SGR only) and ``plain`` without it."""
        lines = plain.split("\n")
        number = self._total
        self._approx_chars += len(plain) + 1
        self._push([], lines)
        if self._pen is None and "\x1b" not in region:
            return
        self._blocks.append([number, len(lines), self._pen, region, None, len(region)])
        self._block_chars += len(region)
        self._pen = _end_pen(self._pen, region)
        self._prune_blocks()

    def _prune_blocks(self) -> None:
        first, blocks = self.first_line, self._blocks
        while blocks and (
            blocks[0][0] + blocks[0][1] <= first or (self._block_chars > MAX_STYLED_CHARS and len(blocks) > 1)
        ):
            self._block_chars -= blocks.popleft()[5]

    @staticmethod
    def _parse(block: list[Any]) -> dict[int, Runs]:
        """A block's runs by line number (worked out once)."""
        if block[4] is None:
            number, pen, parsed = block[0], block[2], {}
            for k, piece in enumerate(block[3].split("\n")):
                runs, pen = _line_runs(piece, pen)
                if runs:
                    parsed[number + k] = runs
            block[3], block[4] = None, parsed
        return block[4]  # type: ignore[no-any-return]

    def _write(self, piece: str) -> None:
        """Text without ``\\n`` onto the line being written, at the cursor."""
        if not piece:
            return
        line, cur, styles, pen = self.partial, self._cursor, self._pstyles, self._pen
        pos = 0
        for m in _TOKEN.finditer(piece + "\x1b"):  # the sentinel ends the last text
            at = m.start()
            if at > pos:  # text: overwrite from the cursor
                chunk = piece[pos:at]
                n = len(chunk)
                if styles is None and pen is not None:
                    styles = [None] * len(line)
                if cur >= len(line):
                    line += chunk
                    if styles is not None:
                        styles.extend([pen] * n)
                else:
                    line = line[:cur] + chunk + line[cur + n :]
                    if styles is not None:
                        styles[cur : cur + n] = [pen] * n
                cur += n
            pos = m.end()
            token = m.group()
            if token[0] == "\x1b":
                params = m.group(1)
                if params is not None:
                    pen = _apply(pen, params)
            elif token == "\r":
                cur = 0
            else:  # backspace
                cur = max(0, cur - 1)
        self._approx_chars += len(piece)
        self.partial, self._cursor, self._pstyles, self._pen = line, cur, styles, pen

    def _end_line(self) -> None:
        self._approx_chars += 1
        self._push_styled(self.partial, self._pstyles)
        self.partial, self._cursor, self._pstyles = "", 0, None

    def _push_styled(self, line: str, styles: list[Pen | None] | None) -> None:
        number = self._total
        self._push([line], [])
        if styles is None:
            return
        runs = _runs(styles)
        if runs:
            self._keep_styles(number, runs)

    def _keep_styles(self, number: int, runs: Runs) -> None:
        self._styles[number] = runs
        self._styled_order.append(number)
        self._style_runs += len(runs)
        self._prune_styles()

    def _prune_styles(self) -> None:
        first = self.first_line
        order = self._styled_order
        while order and (order[0] < first or (self._style_runs > MAX_STYLE_RUNS and len(order) > 1)):
            self._style_runs -= len(self._styles.pop(order.popleft()))

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
        if self._pstyles is None:
            self._push(chunks, [])
            return
        styles = self._pstyles
        self._pstyles = styles[len(styles) - len(self.partial) :]
        for k, chunk in enumerate(chunks):
            self._push_styled(chunk, styles[k * size : (k + 1) * size])

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


def _line_runs(piece: str, pen: Pen | None) -> tuple[Runs, Pen | None]:
    """A whole line as written (text and SGR only): its runs, and the pen after it."""
    parts = _SGR.split(piece)
    runs: list[tuple[int, int, Pen]] = []
    at = len(parts[0])
    if pen is not None and at:
        runs.append((0, at, pen))
    for k in range(1, len(parts), 2):
        pen = _apply(pen, parts[k])
        n = len(parts[k + 1])
        if n and pen is not None:
            if runs and runs[-1][1] == at and runs[-1][2] == pen:
                runs[-1] = (runs[-1][0], at + n, pen)
            else:
                runs.append((at, at + n, pen))
        at += n
    return tuple(runs), pen


def _end_pen(pen: Pen | None, region: str) -> Pen | None:
    """The pen after ``region``: from its last plain reset on, if it has one."""
    last = max(region.rfind("\x1b[0m"), region.rfind("\x1b[m"))
    if last >= 0:
        pen, region = None, region[last:]
    for params in _SGR.findall(region):
        pen = _apply(pen, params)
    return pen


def _runs(styles: list[Pen | None]) -> Runs:
    out = []
    at = 0
    for pen, same in groupby(styles):
        n = sum(1 for _ in same)
        if pen is not None:
            out.append((at, at + n, pen))
        at += n
    return tuple(out)


def _collapse(line: str) -> str:
    return Ring._overwrite("", 0, line)[0]
