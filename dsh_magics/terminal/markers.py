"""In-band markers in the PTY stream.

The shell prints an OSC sequence ``ESC ] 6973 ; <kind> ; <nonce> BEL`` at the
start and end of each job and for resync probes. The nonce is random per job
and is only ever typed on the PTY (never stored in a variable, never echoed),
so a command cannot print the marker of its own job: not by printing its
environment, not by printing its script, not by replaying an earlier job's
marker. Markers only say *where* in the stream a job's output ends; the
exit status travels on a private pipe.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

PREFIX = b"\x1b]6973;"
_NONCE_LEN = 16
MARKER_LEN = len(PREFIX) + 2 + _NONCE_LEN + 1
_VALID = re.compile(rb"\x1b\]6973;([BES]);([0-9a-f]{16})\x07")

BEGIN, END, SYNC = "B", "E", "S"


def new_nonce() -> str:
    return secrets.token_hex(_NONCE_LEN // 2)


def printf_marker(kind: str, nonce: str) -> str:
    """The shell code that prints a marker; the ESC/BEL bytes only exist once
    printf runs, so the typed text itself can never match."""
    return f"\\builtin printf '\\033]6973;{kind};{nonce}\\007'"


@dataclass(frozen=True)
class Marker:
    kind: str
    nonce: str


class MarkerScanner:
    """Split a byte stream into data and markers, holding back a possible
    marker that is cut off at the end of a read."""

    def __init__(self) -> None:
        self._held = b""

    def feed(self, data: bytes) -> list[bytes | Marker]:
        buf = self._held + data if self._held else data
        self._held = b""
        out: list[bytes | Marker] = []
        pos = 0
        n = len(buf)
        while True:
            i = buf.find(PREFIX, pos)
            if i < 0:
                tail = self._partial_prefix_len(buf, pos)
                if tail:
                    if n - tail > pos:
                        out.append(buf[pos : n - tail])
                    self._held = buf[n - tail :]
                elif pos < n:
                    out.append(buf[pos:] if pos else buf)
                return out
            if i > pos:
                out.append(buf[pos:i])
            if n - i < MARKER_LEN:
                self._held = buf[i:]
                return out
            m = _VALID.match(buf, i)
            if m:
                out.append(Marker(m.group(1).decode(), m.group(2).decode()))
                pos = i + MARKER_LEN
            else:
                # Looks like ours but is not well formed: ordinary data.
                out.append(buf[i : i + len(PREFIX)])
                pos = i + len(PREFIX)

    @staticmethod
    def _partial_prefix_len(buf: bytes, pos: int) -> int:
        n = len(buf)
        for k in range(min(len(PREFIX) - 1, n - pos), 0, -1):
            if buf.endswith(PREFIX[:k]):
                return k
        return 0
