"""In-band markers in the PTY stream (``ESC ] 6973 ; kind ; nonce ... BEL``)
and the scanner that splits them from output (docs/internals.md: nonces)."""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass

PREFIX = b"\x1b]6973;"
_NONCE_LEN = 16
_MAX_PIPESTATUS_LEN = 40
MAX_MARKER_LEN = len(PREFIX) + 2 + _NONCE_LEN + 1 + 3 + 1 + _MAX_PIPESTATUS_LEN + 1
_VALID = re.compile(
    rb"\x1b\]6973;(?:(?P<kind>[BES]);(?P<nonce>[0-9a-f]{16})(?:;(?P<status>[0-9]{1,3})"
    rb"(?:;(?P<codes>[0-9 ]{1,%d}))?)?|(?P<prompt>P))\x07" % _MAX_PIPESTATUS_LEN
)
MARKER_FD = 212

BEGIN, END, SYNC = "B", "E", "S"
# A hint without a nonce, printed before a prompt that follows an aborted
# line. It proves nothing (anyone can print it); it only tells the reader
# to look at the shell now rather than wait for output that will not come.
PROMPT = "P"


def new_nonce() -> str:
    return secrets.token_hex(_NONCE_LEN // 2)


def printf_prompt_hint() -> str:
    """Shell code printing the ``P`` hint (for use inside single quotes)."""
    return f'\\builtin printf "\\033]6973;{PROMPT}\\007" >&{MARKER_FD}'


def printf_marker(kind: str, nonce: str, status: str | None = None, pipestatus: str | None = None) -> str:
    """The shell code that prints a marker; the ESC/BEL bytes only exist once
    printf runs, so the typed text itself can never match. ``status`` and
    ``pipestatus`` are shell words (the exit status, PIPESTATUS as words)."""
    redirect = f" >&{MARKER_FD}"
    if status is not None and pipestatus is not None:
        return (
            f"\\builtin printf '\\033]6973;{kind};{nonce};%d;%.{_MAX_PIPESTATUS_LEN}s\\007' "
            f"{status} {pipestatus}{redirect}"
        )
    if status is not None:
        return f"\\builtin printf '\\033]6973;{kind};{nonce};%d\\007' {status}{redirect}"
    return f"\\builtin printf '\\033]6973;{kind};{nonce}\\007'{redirect}"


@dataclass(frozen=True)
class Marker:
    kind: str
    nonce: str
    status: int | None = None
    cwd: str | None = None  # remote markers carry the shell's cwd
    pipestatus: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Grammar:
    """What a marker looks like on one transport: a pattern with the named
    groups ``kind nonce status codes prompt`` (and ``cwd``), its longest
    match, and how a cwd is decoded."""

    valid: re.Pattern[bytes]
    max_len: int
    decode_cwd: Callable[[str], str | None] | None = None


LOCAL = Grammar(_VALID, MAX_MARKER_LEN)


class MarkerScanner:
    """Split a byte stream into data and markers, holding back a possible
    marker that is cut off at the end of a read."""

    def __init__(self, grammar: Grammar = LOCAL) -> None:
        self._held = b""
        self._grammar = grammar

    def feed(self, data: bytes) -> list[bytes | Marker]:
        buf = self._held + data if self._held else data
        self._held = b""
        out: list[bytes | Marker] = []
        pos = 0
        n = len(buf)
        max_len = self._grammar.max_len
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
            end = buf.find(b"\x07", i, i + max_len)
            if end < 0 and n - i < max_len and buf.find(b"\x1b", i + 1) < 0:
                self._held = buf[i:]
                return out
            m = self._grammar.valid.match(buf, i, end + 1) if end >= 0 else None
            if m:
                out.append(self._marker(m))
                pos = m.end()
            else:
                # Looks like ours but is not well formed: ordinary data.
                out.append(buf[i : i + len(PREFIX)])
                pos = i + len(PREFIX)

    def _marker(self, m: re.Match[bytes]) -> Marker:
        if m.group("prompt"):
            return Marker(PROMPT, "")
        status, codes = m.group("status"), m.group("codes")
        raw_cwd = m.group("cwd") if "cwd" in m.re.groupindex else None
        decode = self._grammar.decode_cwd
        return Marker(
            m.group("kind").decode(),
            m.group("nonce").decode(),
            int(status) if status else None,
            decode(raw_cwd.decode("utf-8", "surrogateescape")) if raw_cwd and decode else None,
            tuple(int(c) for c in codes.split() if len(c) <= 3) if codes and codes.strip() else None,
        )

    @staticmethod
    def _partial_prefix_len(buf: bytes, pos: int) -> int:
        n = len(buf)
        for k in range(min(len(PREFIX) - 1, n - pos), 0, -1):
            if buf.endswith(PREFIX[:k]):
                return k
        return 0
