"""The terminal's echo of a job's typed lines, told apart from the job's output.

The remote terminal echoes (docs/remote.md, "Echo"). Linux's line discipline
echoes a typed byte when it receives it, but writes the echo out only as far
as the terminal has room: what does not fit waits in its echo buffer (4 KB;
when it runs full the oldest bytes are dropped) and goes out at the start of
the next write to the terminal, whoever makes it. When the reader falls
behind (a long command typed under load), the begin marker's own write can
overtake that tail: part of the echo then arrives after the begin marker, at
the start of the command's first write (or of the end marker's).

What the reader knows: the exact bytes typed (their echo is the same text
with each newline as CR LF: the typed pieces are plain ASCII and control
characters echo as themselves), what arrived before the begin marker, and
that the echo still owed is a run of the typed text's tail that ends with the
typed text (its last line carries the job's nonces). :class:`EchoTail` takes
that run off the start of what follows the begin marker, and nothing else.
Pinned by tests/remote/test_echo_tail.py.

Not covered: a run split over several writes (the terminal had room for only
part of it when the command first wrote, so the rest waits for its next
write); its pieces are then output, as before. That needs the reader still
about 60 KB behind after the begin marker went out.
"""

from __future__ import annotations

ECHO_BUFFER = 4096
"""The most echo the line discipline keeps back (n_tty's echo buffer)."""
_ANCHOR = 64  # bytes of an echo's end looked up in the typed text


def echo_of(typed: str) -> bytes:
    """What the terminal echoes for ``typed`` (the engine's own lines)."""
    return typed.encode("utf-8", "surrogateescape").replace(b"\n", b"\r\n")


def is_echo(held: bytes, echo: bytes) -> bool:
    """Does ``held`` (what arrived between typing and the begin marker) end
    with a piece of ``echo``? (A line discipline that fell behind dropped or
    still holds other pieces.)"""
    return bool(held) and echo.find(held[-_ANCHOR:]) >= 0


class EchoTail:
    """The rest of a job's echo, still owed after its begin marker.

    ``feed`` takes what follows the begin marker and returns what is output:
    while the bytes so far could still be the start of the owed run, they are
    held (at most :data:`ECHO_BUFFER` bytes); once the run is complete it is
    dropped and the rest released; bytes that cannot be the run are released
    whole. ``done`` says the tail no longer holds anything back."""

    def __init__(self, echo: bytes, start: int) -> None:
        self._echo = echo
        self._lo = start  # the owed run begins at or after this offset of ``echo``
        self._held = b""
        self.done = False

    @classmethod
    def after(cls, held: bytes, echo: bytes) -> EchoTail | None:
        """What is owed once ``held`` arrived before the begin marker: None
        when ``held`` already ends with the whole echo (or is not echo)."""
        if not held or not echo or held.endswith(echo[-_ANCHOR:]):
            return None
        anchor = held[-_ANCHOR:]
        at = echo.find(anchor)
        if at < 0:
            return None
        start = max(at + len(anchor), len(echo) - ECHO_BUFFER)
        return cls(echo, start) if start < len(echo) else None

    def feed(self, data: bytes) -> bytes:
        if self.done:
            return data
        buf = self._held + data
        # Most often the run is exactly the rest of the echo after what arrived
        # (nothing dropped): whole, or its start with the rest to come.
        exact = self._echo[self._lo :]
        if buf.startswith(exact):
            return self._finish(buf[len(exact) :])
        if exact.startswith(buf):
            self._held = buf
            return b""
        j = self._run_end(buf)
        if j is not None:
            return self._finish(buf[j:])
        echo = self._echo
        if len(buf) < len(echo) - self._lo and echo.find(buf, self._lo) >= 0:
            self._held = buf  # maybe the run's start: the rest of it comes next
            return b""
        return self._finish(buf)

    def release(self) -> bytes:
        """Give up (a marker came first): what was held is output."""
        return self._finish(self._held)

    def _run_end(self, buf: bytes) -> int | None:
        """The length of the owed run at the start of ``buf``, if all of it
        is there: the longest start of ``buf`` that ends the echo and begins
        at or after the run's earliest start. The longest, because the run
        begins where the echo that arrived stopped unless the line
        discipline dropped bytes between: an echo cut between CR and LF owes
        ``\n...\r\n``, whose first byte alone also ends the echo
        (tests/remote/test_echo_tail.py::test_an_echo_cut_between_cr_and_lf)."""
        echo, n = self._echo, len(self._echo)
        longest = min(len(buf), n - self._lo)
        best = None
        end = echo[-min(16, n) :]
        for j in range(1, min(len(end), longest) + 1):  # a short run: compared whole
            if echo.endswith(buf[:j]):
                best = j
        i = buf.find(end)
        while 0 <= i and i + len(end) <= longest:
            j = i + len(end)
            if echo.endswith(buf[:j]):
                best = j
            i = buf.find(end, i + 1)
        return best

    def _finish(self, out: bytes) -> bytes:
        self._held = b""
        self.done = True
        return out
