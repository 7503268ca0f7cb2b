"""Which output a full-screen program drew: bytes written while the
alternate screen (xterm modes 1049, 1047, 47) is on are screen drawing, not
lines, and must not reach the line ring, where they would read as escape
fragments and runs of ``~``. A cheap byte scan, so the ring needs no parse of
the screen; a sequence split across two reads is found with a short tail."""

from __future__ import annotations

import re
from collections.abc import Iterator

#: Set or reset of an alternate-screen mode, also among other modes in one sequence.
_ALT = re.compile(rb"\x1b\[\?(?:[0-9;]*;)?(?:1049|1047|47)(?:;[0-9;]*)?([hl])")
_TAIL = 24  # longest split sequence we look for across two reads


class AltScreenGate:
    """Splits output into (bytes, on_alt_screen) pieces, in order."""

    def __init__(self) -> None:
        self.active = False
        self._tail = b""

    def reset(self) -> None:
        self.active = False
        self._tail = b""

    def split(self, data: bytes) -> Iterator[tuple[bytes, bool, bool | None]]:
        """Pieces of ``data`` as ``(piece, drawn_on_alt_screen, switch)``:
        ``switch`` is True/False when the piece is the sequence entering/leaving
        the alternate screen (or its last part, split across reads), None
        otherwise."""
        joined = self._tail + data
        self._tail = joined[-_TAIL:]
        if b"\x1b[?" not in joined:
            yield data, self.active, None
            return
        offset = len(joined) - len(data)  # where ``data`` starts in ``joined``
        pos = 0
        for m in _ALT.finditer(joined):
            end = m.end() - offset
            if end <= 0:
                continue  # wholly in the tail, handled with the last read
            on = m.group(1) == b"h"
            if on == self.active:
                continue
            start = max(pos, m.start() - offset)
            if start > pos:
                yield data[pos:start], self.active, None
            yield data[start:end], self.active, on
            self.active = on
            pos = end
        if pos < len(data):
            yield data[pos:], self.active, None
