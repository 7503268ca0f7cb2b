"""Raw PTY bytes to clean text: UTF-8 decoding that never raises, ANSI
escapes and stray control characters removed, state kept across reads; with
``keep_sgr`` the colour sequences (SGR) stay, for the ring to take out and keep
beside its plain lines (core/ring.py)."""

from __future__ import annotations

import codecs
import re

# CSI, OSC (BEL or ST terminated), DCS/SOS/PM/APC strings, charset
# designations and the remaining two-byte escapes.
_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"
    r"|\x1b[PX^_][^\x1b]*\x1b\\"
    r"|\x1b[()*+\-./][ -~]"
    # Other escapes; the final byte excludes the introducers of CSI, OSC and
    # string sequences, so an incomplete one of those is never half-stripped.
    r"|\x1b[ -/]*[0-9:;<=>?@A-OQ-WYZ\\`a-~]"
)
# The same, without SGR (``ESC [ params m``): a CSI is left when it is one.
_ANSI_BUT_SGR = re.compile(_ANSI.pattern.replace(r"\x1b\[", r"\x1b\[(?![0-9;:]*m)", 1))
# C0 controls other than \b \t \n \r, plus DEL and any ESC left unmatched.
_CTRL = re.compile(r"[\x00-\x07\x0b\x0c\x0e-\x1f\x7f]")
#: Every byte but those (ESC among them): a read whose bytes are all here
#: decodes to text with nothing to remove. In UTF-8 such a character is
#: always that one byte, so looking at the bytes (a C-speed ``translate``,
#: several times faster than searching the text) says the same.
_CTRL_BUT_SGR = re.compile(r"[\x00-\x07\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]|\x1b(?!\[[0-9;:]*m)")
_NOT_CTRL = bytes(b for b in range(256) if not _CTRL.match(chr(b)))
_MAX_HELD_ESCAPE = 512


class Cleaner:
    def __init__(self, *, keep_sgr: bool = False) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._held = ""
        self._ansi, self._ctrl = (_ANSI_BUT_SGR, _CTRL_BUT_SGR) if keep_sgr else (_ANSI, _CTRL)

    def feed(self, data: bytes) -> str:
        if not self._held and not data.translate(None, _NOT_CTRL):
            return self._decoder.decode(data)  # nothing to strip
        text = self._held + self._decoder.decode(data)
        self._held = ""
        if "\x1b" in text:
            j = text.rfind("\x1b")
            if len(text) - j < _MAX_HELD_ESCAPE and _ANSI.match(text, j) is None:
                # Possibly the start of a sequence whose end is in the next read.
                self._held = text[j:]
                text = text[:j]
            text = self._ansi.sub("", text)
        if self._ctrl.search(text):
            text = self._ctrl.sub("", text)
        return text

    def flush(self) -> str:
        """End of a stream segment: emit whatever is pending, replaced if invalid."""
        text = self._held + self._decoder.decode(b"", final=True)
        self._held = ""
        self._decoder.reset()
        if text:
            text = self._ctrl.sub("", self._ansi.sub("", text))
        return text


def clean(data: bytes) -> str:
    """One-shot cleaning, for tests and small inputs."""
    c = Cleaner()
    return c.feed(data) + c.flush()
